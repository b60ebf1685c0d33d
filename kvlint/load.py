"""The `load` stage: text to plain data, a JSON Pointer -> source span map, and suppressions.

Safe by construction: the parser only composes a node graph (no constructors run), and kvlint
builds plain dicts, lists and scalars from it itself, so custom tags never execute, alias
expansion is metered, and duplicate keys are seen before they are collapsed. Every problem is a
finding, never an exception.
"""

from __future__ import annotations

import re
from dataclasses import field
from typing import Any, Dict, Iterator, List, Optional, Set, Tuple

import yaml

from kvlint.pointer import escape as pointer_escape
from kvlint.errors import UsageError  # noqa: F401 - read_input's callers catch it
from kvlint.inputs import MAX_FILE_BYTES, InputError, files_read, read_bounded, read_stdin, special_kind  # noqa: F401 - re-exported
from kvlint.findings import Finding, Related, Span
from kvlint.records import dataclass

try:  # libyaml is much faster; fall back to the pure-Python parser when it is absent
    _Loader: Any = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - depends on how PyYAML was built
    _Loader = yaml.SafeLoader

# Limits (KV004). Manifests are a few kilobytes; these leave generous room while keeping a
# hostile input from hanging the linter or exhausting memory.
MAX_DOCUMENTS = 1000
# The native deployment formats kvlint.adapters reads besides kvlint/v1 manifests (the
# `native-formats` configuration key names them).
NATIVE_FORMATS = (
    "kubernetes",
    "helm-production-stack",
    "compose",
    "vllm-config",
    "sglang-config",
    "trtllm-options",
    "shell",
    "dockerfile",
    "systemd",
    "modelfile",
    "helm-ollama",
)
# The native formats that are not YAML, told apart by file name (a shell script may also be
# recognised by its `#!` line, which the adapters check).
SHELL_SUFFIXES = (".sh", ".bash")


def is_dockerfile_name(name: str) -> bool:
    lowered = name.lower()
    return (lowered in ("dockerfile", "containerfile") or lowered.startswith("dockerfile.")
            or lowered.endswith(".dockerfile"))


def text_native_format(name: str) -> Optional[str]:
    """The non-YAML native format a file name can have ("dockerfile", "shell", "systemd" for a
    unit or a `.conf` drop-in, "modelfile"), else None; the adapters' sniff decides from the
    content (a `.conf` file counts only inside a `<unit>.service.d` directory)."""
    if is_dockerfile_name(name):
        return "dockerfile"
    if name == "Modelfile" or name.startswith("Modelfile.") or name.lower().endswith(".modelfile"):
        return "modelfile"
    if name.endswith((".service", ".conf")):
        return "systemd"
    return "shell" if name.lower().endswith(SHELL_SUFFIXES) else None
MAX_DEPTH = 64
MAX_NODES_PER_DOCUMENT = 20_000  # counted through aliases: the alias-expansion budget

_STD = "tag:yaml.org,2002:"
_SCALAR_TAGS = {
    _STD + "str",
    _STD + "int",
    _STD + "float",
    _STD + "bool",
    _STD + "null",
    _STD + "timestamp",
}
_SEQ_TAGS = {_STD + "seq"}
_MAP_TAGS = {_STD + "map"}

_constructor = yaml.constructor.SafeConstructor()

# YAML 1.2 floats that PyYAML's YAML 1.1 resolver leaves as strings: an exponent without a sign
# or without a dot (`70.6e9`, `1e9`, as docs/manifest.md writes weights.params).
_YAML12_FLOAT = re.compile(r"^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)[eE][-+]?[0-9]+$")


def _yaml11_only(tag: str, value: str) -> bool:
    """A plain scalar that only YAML 1.1 reads as a number or boolean: sexagesimal `1:30` (90),
    `yes`/`no`/`on`/`off`/`y`/`n`. kvlint reads them as the strings they are (YAML 1.2); a
    field that needs a number or boolean then says so (KV103)."""
    if tag in (_STD + "int", _STD + "float"):
        return ":" in value
    if tag == _STD + "bool":
        return value.lower() not in ("true", "false")
    return False


@dataclass(frozen=True)
class Suppression:
    """One `# kvlint: ignore[...]` comment: the line it covers, the codes and the reason; or one
    `# kvlint: ignore-file` / `# kvlint: ignore-file[...]` comment (`whole_file`), which covers
    every line (a bare `ignore-file` is `ignore-file[ALL]`)."""

    line: int  # line of the comment
    column: int
    target_line: int  # the line whose findings it suppresses (0 for a whole-file suppression)
    codes: Tuple[str, ...]  # as written: codes, prefixes (ignore-file only) or names
    reason: str
    whole_file: bool = False


@dataclass
class Document:
    """One YAML document of a file, with the span of each value and key by JSON pointer."""

    file: str
    index: int  # 0-based position in the file
    data: Any
    value_spans: Dict[str, Span]  # pointer -> span of the value
    key_spans: Dict[str, Span]  # pointer -> span of the mapping key that holds it
    start_line: int

    def span(self, pointer: str, prefer_key: bool = False) -> Span:
        """The span for a pointer, falling back to its nearest ancestor that exists."""
        probe = pointer
        while True:
            if prefer_key and probe in self.key_spans:
                return self.key_spans[probe]
            if probe in self.value_spans:
                if probe != pointer and probe in self.key_spans:
                    return self.key_spans[probe]
                return self.value_spans[probe]
            if probe == "":
                return Span(self.start_line, 1, self.start_line, 1)
            probe = probe.rsplit("/", 1)[0]


@dataclass
class LoadedFile:
    """One file read: its text, its documents, its suppressions and the findings of loading it."""

    path: str
    text: str
    documents: List[Document] = field(default_factory=list)
    findings: List[Finding] = field(default_factory=list)
    suppressions: List[Suppression] = field(default_factory=list)

    @property
    def lines(self) -> List[str]:
        return self.text.splitlines()


class _Budget(Exception):
    def __init__(self, message: str, node: yaml.Node):
        super().__init__(message)
        self.node = node


def _span(node: yaml.Node) -> Span:
    start, end = node.start_mark, node.end_mark
    return Span(start.line + 1, start.column + 1, end.line + 1, end.column + 1)


class _Builder:
    """Turns one composed YAML node graph into plain data plus span maps."""

    def __init__(self, file: str, index: int):
        self.file = file
        self.index = index
        self.value_spans: Dict[str, Span] = {}
        self.key_spans: Dict[str, Span] = {}
        self.findings: List[Finding] = []
        self.nodes = 0

    def build(self, node: yaml.Node, pointer: str = "", depth: int = 0) -> Any:
        self.nodes += 1
        if self.nodes > MAX_NODES_PER_DOCUMENT:
            raise _Budget(
                f"document expands to more than {MAX_NODES_PER_DOCUMENT:,} nodes "
                "(alias expansion or size limit); kvlint stops reading it",
                node,
            )
        if depth > MAX_DEPTH:
            raise _Budget(f"nesting deeper than {MAX_DEPTH} levels", node)
        if pointer not in self.value_spans:
            self.value_spans[pointer] = _span(node)
        if isinstance(node, yaml.MappingNode):
            return self._mapping(node, pointer, depth)
        if isinstance(node, yaml.SequenceNode):
            if node.tag not in _SEQ_TAGS:
                return self._custom_tag(node, pointer)
            return [
                self.build(item, f"{pointer}/{i}", depth + 1) for i, item in enumerate(node.value)
            ]
        return self._scalar(node, pointer)

    def _custom_tag(self, node: yaml.Node, pointer: str) -> None:
        self.findings.append(
            _finding(
                "KV004",
                f"custom YAML tag {node.tag!r} is not allowed; kvlint loads plain data only "
                "(remove the tag)",
                self.file,
                self.index,
                pointer,
                _span(node),
            )
        )
        return None

    def _scalar(self, node: yaml.Node, pointer: str) -> Any:
        tag = node.tag
        if tag not in _SCALAR_TAGS:
            return self._custom_tag(node, pointer)
        if tag == _STD + "str" and not node.style and _YAML12_FLOAT.match(node.value):
            return float(node.value)
        if tag == _STD + "str" or tag == _STD + "timestamp":
            return str(node.value)
        if not node.style and _yaml11_only(tag, node.value):
            return str(node.value)
        try:
            if tag == _STD + "int":
                return _constructor.construct_yaml_int(node)
            if tag == _STD + "float":
                return _constructor.construct_yaml_float(node)
            if tag == _STD + "bool":
                return _constructor.construct_yaml_bool(node)
            return None
        except (ValueError, yaml.YAMLError):
            return str(node.value)

    def _mapping(self, node: yaml.MappingNode, pointer: str, depth: int) -> Any:
        if node.tag not in _MAP_TAGS:
            return self._custom_tag(node, pointer)
        result: Dict[str, Any] = {}
        first_seen: Dict[str, yaml.Node] = {}
        for key_node, value_node in node.value:
            if key_node.tag == _STD + "merge":
                # `<<: *base` merges are legal YAML 1.1; apply them with the same metering.
                merged = self.build(value_node, pointer + "/<<", depth + 1)
                for part in merged if isinstance(merged, list) else [merged]:
                    if isinstance(part, dict):
                        for k, v in part.items():
                            result.setdefault(k, v)
                continue
            if not isinstance(key_node, yaml.ScalarNode):
                self.findings.append(
                    _finding(
                        "KV004",
                        "mapping keys must be plain scalars, not collections",
                        self.file,
                        self.index,
                        pointer,
                        _span(key_node),
                    )
                )
                continue
            key = str(self._scalar(key_node, pointer))
            child = f"{pointer}/{pointer_escape(key)}"
            if key in first_seen:
                first = first_seen[key]
                self.findings.append(
                    _finding(
                        "KV002",
                        f"duplicate key {key!r} (first defined at line "
                        f"{first.start_mark.line + 1}, column {first.start_mark.column + 1}); "
                        "YAML keeps only the last value",
                        self.file,
                        self.index,
                        child,
                        _span(key_node),
                        related=(
                            Related(
                                "first definition",
                                first.start_mark.line + 1,
                                first.start_mark.column + 1,
                            ),
                        ),
                    )
                )
                # Later value wins, as every YAML loader does, but positions follow it too.
                self.value_spans.pop(child, None)
            first_seen[key] = key_node
            self.key_spans[child] = _span(key_node)
            result[key] = self.build(value_node, child, depth + 1)
        return result


def _finding(
    code: str,
    message: str,
    file: str,
    document: int,
    pointer: str,
    span: Optional[Span],
    related: Tuple[Related, ...] = (),
) -> Finding:
    finding = Finding(
        code=code,
        name="",
        severity="error",
        message=message,
        file=file,
        pointer=pointer,
        document=document,
        related=related,
    )
    return finding.with_location(span)


def _decode(raw: bytes, path: str) -> Tuple[Optional[str], Optional[Finding]]:
    if len(raw) > MAX_FILE_BYTES:
        return None, _finding(
            "KV004",
            f"file is larger than the {MAX_FILE_BYTES:,}-byte limit for manifests",
            path,
            0,
            "",
            Span(1, 1, 1, 1),
        )
    nul = raw.find(b"\x00", 0, 8192)
    if nul >= 0:
        line = raw.count(b"\n", 0, nul) + 1
        return None, _finding(
            "KV004", "binary content (NUL byte); not a YAML or JSON manifest", path, 0, "",
            Span(line, 1, line, 1),
        )
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        return None, _finding(
            "KV004",
            f"not valid UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start}); "
            "save the manifest as UTF-8",
            path,
            0,
            "",
            Span(line, column, line, column),
        )
    return text, None


def _syntax_finding(exc: yaml.YAMLError, path: str, document: int) -> Finding:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    context = getattr(exc, "context", None)
    message = f"{context}, {problem}" if context else str(problem)
    span = Span(mark.line + 1, mark.column + 1, mark.line + 1, mark.column + 1) if mark else None
    if "maximum nesting depth" in str(problem):
        # libyaml's own depth guard (1,000 levels): a resource limit, not a syntax mistake.
        return _finding("KV004", f"nesting deeper than {MAX_DEPTH} levels", path, document, "", span)
    return _finding("KV001", f"invalid YAML: {message}", path, document, "", span)


def _compose(text: str) -> Iterator[Optional[yaml.Node]]:
    loader = _Loader(text)
    try:
        while loader.check_node():
            yield loader.get_node()
    finally:
        loader.dispose()


def load_text(text: str, path: str) -> LoadedFile:
    loaded = LoadedFile(path=path, text=text)
    index = -1
    try:
        for index, node in enumerate(_compose(text)):
            if index >= MAX_DOCUMENTS:
                loaded.findings.append(
                    _finding(
                        "KV004",
                        f"more than {MAX_DOCUMENTS:,} documents in one file; "
                        "the rest are not checked",
                        path,
                        index,
                        "",
                        _span(node) if node is not None else None,
                    )
                )
                break
            _add_document(loaded, node, index)
    except yaml.YAMLError as exc:
        # the error comes from composing the document after the last one read
        loaded.findings.append(_syntax_finding(exc, path, index + 1))
    except RecursionError:
        loaded.findings.append(
            _finding("KV004", f"nesting deeper than {MAX_DEPTH} levels", path, 0, "", None)
        )
    if index == -1 and not loaded.findings:
        loaded.findings.append(
            _finding("KV003", "the file holds no YAML document", path, 0, "", Span(1, 1, 1, 1))
        )
    if "kvlint:" in text:
        loaded.suppressions.extend(find_suppressions(text))
    return loaded


def _add_document(loaded: LoadedFile, node: Optional[yaml.Node], index: int) -> None:
    if node is None or (
        isinstance(node, yaml.ScalarNode) and node.tag == _STD + "null" and node.value in ("", "~", "null")
    ):
        line = node.start_mark.line + 1 if node is not None else 1
        loaded.findings.append(
            _finding(
                "KV003", f"document {index + 1} is empty", loaded.path, index, "",
                Span(line, 1, line, 1),
            )
        )
        return
    builder = _Builder(loaded.path, index)
    try:
        data = builder.build(node)
    except _Budget as exc:
        loaded.findings.extend(builder.findings)
        loaded.findings.append(
            _finding("KV004", str(exc), loaded.path, index, "", _span(exc.node))
        )
        return
    loaded.findings.extend(builder.findings)
    loaded.documents.append(
        Document(
            file=loaded.path,
            index=index,
            data=data,
            value_spans=builder.value_spans,
            key_spans=builder.key_spans,
            start_line=node.start_mark.line + 1,
        )
    )


def load_bytes(raw: bytes, path: str) -> LoadedFile:
    text, problem = _decode(raw, path)
    if text is None:
        loaded = LoadedFile(path=path, text="")
        assert problem is not None
        loaded.findings.append(problem)
        return loaded
    return load_text(text, path)


# --- suppressions -------------------------------------------------------------------------

# Compiled on first use (re caches it): most files hold no suppression (start-up time).
_SUPPRESSION = r"#\s*kvlint:\s*ignore\[(?P<codes>[^\]]*)\](?:\s*--\s*(?P<reason>.*))?\s*$"
# Anywhere in the file's comments, for the whole file: `ignore-file` (every code) or
# `ignore-file[KV301,KV5]` (codes, prefixes, names), as ruff's file-level noqa comment does.
_FILE_SUPPRESSION = r"#\s*kvlint:\s*ignore-file(?:\[(?P<codes>[^\]]*)\])?(?:\s*--\s*(?P<reason>.*))?\s*$"


def _scalar_regions(text: str) -> List[Tuple[int, int, int, int]]:
    """(start_line, start_col, end_line, end_col), 0-based, of every scalar token.

    A `#` inside one of these is part of a value, not a comment (yamllint's approach: comments
    are what lies between tokens).
    """
    regions = []
    scanner = _Loader(text)
    try:
        while True:
            token = scanner.get_token()
            if token is None or isinstance(token, yaml.StreamEndToken):
                break
            if isinstance(token, yaml.ScalarToken):
                s, e = token.start_mark, token.end_mark
                regions.append((s.line, s.column, e.line, e.column))
    except yaml.YAMLError:
        pass  # a syntax error is reported elsewhere; suppressions before it still count
    finally:
        scanner.dispose()
    return regions


def yaml_comment_columns(text: str, lines: Set[int]) -> Dict[int, List[int]]:
    """0-based line -> 0-based columns of each `#` that starts a YAML comment, on `lines` only:
    a `#` after a blank (or at the line start) outside every scalar (YAML 1.2 §6.6)."""
    all_lines = text.splitlines()
    regions = _regions_by_line(_scalar_regions(text), set(lines))
    found: Dict[int, List[int]] = {}
    for number in sorted(lines):
        if number >= len(all_lines):
            continue
        line = all_lines[number]
        for match in re.finditer(r"#", line):
            col = match.start()
            if col > 0 and not line[col - 1].isspace():
                continue
            if any(_inside(region, number, col) for region in regions.get(number, ())):
                continue
            found.setdefault(number, []).append(col)
    return found


def find_suppressions(text: str, yaml_text: bool = True) -> List[Suppression]:
    """`# kvlint: ignore[...]` and `# kvlint: ignore-file[...]` comments. In YAML a `#` inside a scalar is not a comment; other
    text (a shell script, a Dockerfile) has no scalars to skip."""
    lines = text.splitlines()
    candidates = [
        (number, line) for number, line in enumerate(lines) if "kvlint:" in line and "#" in line
    ]
    if not candidates:
        return []
    regions = _regions_by_line(_scalar_regions(text) if yaml_text else [], {number for number, _ in candidates})
    next_content = _next_content_lines(lines)
    found: List[Suppression] = []
    for number, line in candidates:
        for match in re.finditer(r"#", line):
            col = match.start()
            if col > 0 and not line[col - 1].isspace():
                continue
            if any(_inside(region, number, col) for region in regions.get(number, ())):
                continue
            parsed = re.compile(_SUPPRESSION).match(line, col)
            whole = None if parsed else re.compile(_FILE_SUPPRESSION).match(line, col)
            if whole:
                found.append(Suppression(
                    line=number + 1, column=col + 1, target_line=0,
                    codes=("ALL",) if whole.group("codes") is None else
                    tuple(c.strip() for c in whole.group("codes").split(",") if c.strip()),
                    reason=(whole.group("reason") or "").strip(), whole_file=True,
                ))
                break
            if not parsed:
                continue
            codes = tuple(c.strip() for c in parsed.group("codes").split(",") if c.strip())
            standalone = line[:col].strip() == ""
            target = number + 1
            if standalone:
                target = next_content[number] or number + 1
            found.append(
                Suppression(
                    line=number + 1,
                    column=col + 1,
                    target_line=target,
                    codes=codes,
                    reason=(parsed.group("reason") or "").strip(),
                )
            )
            break
    return found


def _inside(region: Tuple[int, int, int, int], line: int, col: int) -> bool:
    start_line, start_col, end_line, end_col = region
    if line < start_line or line > end_line:
        return False
    if line == start_line and col < start_col:
        return False
    if line == end_line and col >= end_col:
        return False
    return True


def _regions_by_line(regions: List[Tuple[int, int, int, int]], wanted: Set[int]) -> Dict[int, List[Tuple[int, int, int, int]]]:
    """The scalar regions that touch each wanted line: one pass, so that thousands of comment
    lines against thousands of scalars cost their sum, not their product (scalars do not
    overlap, so the lines they span add up to at most the file's)."""
    by_line: Dict[int, List[Tuple[int, int, int, int]]] = {}
    for region in regions:
        for line in range(region[0], region[2] + 1):
            if line in wanted:
                by_line.setdefault(line, []).append(region)
    return by_line


def _next_content_lines(lines: List[str]) -> List[Optional[int]]:
    """For each line index, the 1-based number of the next line after it that holds neither
    blanks nor only a comment (None at the end): one backward pass for all suppressions."""
    following: List[Optional[int]] = [None] * len(lines)
    upcoming: Optional[int] = None
    for index in range(len(lines) - 1, -1, -1):
        following[index] = upcoming
        stripped = lines[index].strip()
        if stripped and not stripped.startswith("#"):
            upcoming = index + 1
    return following


def unreadable(display: str, reason: str, skipped: bool = False) -> LoadedFile:
    """A file the run could not read, as a LoadedFile with one KV006 finding on it; or, skipped,
    one a walk did not read on purpose (a link out of the tree), with a KV208 info."""
    if skipped:
        finding = Finding(code="KV208", name="", severity="info", message=f"not checked: {reason}", file=display)
    else:
        finding = Finding(code="KV006", name="", severity="error", message=f"cannot read this file: {reason}", file=display)
    return LoadedFile(path=display, text="", findings=[finding])


def read_input(path: str) -> Tuple[str, bytes]:
    """(display name, bytes) of a file, or of stdin for "-"; a file that cannot be read (missing,
    unreadable, a FIFO or device) raises InputError. At most MAX_FILE_BYTES + 1 bytes are read:
    the loader reports a larger file (KV004) without kvlint holding it in memory."""
    reason = getattr(path, "reason", None)
    if reason:  # discovery already knows this path cannot be read (kvlint.pipeline.discovery)
        raise InputError(reason, file=path)
    if path == "-":
        return "<stdin>", read_stdin(MAX_FILE_BYTES)
    return path, read_bounded(path)
