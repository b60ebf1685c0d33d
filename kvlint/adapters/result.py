"""What an adapter hands back: a kvlint/v1 manifest, its native spans, provenance and problems."""

from __future__ import annotations

from dataclasses import field
from typing import Tuple, Any, Dict, List, Optional

from kvlint.findings import Span
from kvlint.load import Document
from kvlint.pointer import escape as escape_pointer_token
from kvlint.records import dataclass

__all__ = [
    "Adaptation",
    "Adapted",
    "FlagUse",
    "ManifestBuilder",
    "Problem",
    "Reference",
    "pointer",
    "problem_code",
    "PROBLEM_CODES",
]

MISSING = "missing"

# kvlint's code per problem kind: the one table (rules/KV005, KV206-KV208, KV319-KV322 document
# them), so every adapter emits the same code for the same kind of problem.
PROBLEM_CODES: Dict[str, str] = {
    "shell-syntax": "KV005",
    "yaml-shape": "KV005",
    "internal-error": "KV005",
    "unpinned-image": "KV206",
    "missing-fact": "KV207",
    "unresolved-value": "KV208",
    "not-checked": "KV208",
    "unknown-flag": "KV319",
    "flag-not-in-release": "KV319",
    "ambiguous-flag": "KV319",
    "invalid-flag-value": "KV320",
    "unexpected-argument": "KV320",
    "abbreviated-flag": "KV321",
    "repeated-flag": "KV321",
    "deprecated-spelling": "KV321",
    "ignored-config": "KV321",
    "conflicting-facts": "KV322",
}


def problem_code(kind: str) -> str:
    return PROBLEM_CODES.get(kind, "KV005")


@dataclass(frozen=True)
class Problem:
    """Something wrong or unreadable in the native file, for the caller to turn into a finding.

    `code` is the kvlint code suggested for it (see the package docstring); `kind` is a stable
    machine name (`unknown-flag`, `shell-syntax`, ...) so the integration can re-map codes.
    """

    code: str
    kind: str
    message: str
    span: Span
    severity: str = "warning"
    pointer: str = ""  # the manifest field it concerns, when there is one
    # For conflicting-facts: the two values (stated, inferred), so the caller can tell two
    # spellings of one thing (a GPU label and a catalog id) from a real conflict.
    values: Tuple[Any, ...] = ()


@dataclass(frozen=True)
class Reference:
    """Another file the workload reads (an engine `--config` YAML), with where it is named."""

    kind: str  # "vllm-config", "sglang-config", "trtllm-options"
    path: str  # as written (relative to the process's working directory, not to this file)
    span: Span
    engine: str


@dataclass(frozen=True)
class FlagUse:
    """One engine flag as written, with the spelling it resolved to (or None when unknown)."""

    written: str
    canonical: Optional[str]
    span: Span
    origin: str


@dataclass
class Adapted:
    """One engine workload read from a native file."""

    file: str
    format: str  # "kubernetes", "helm-production-stack", "compose", "shell", "dockerfile", ...
    name: str  # stable address: "<Kind>/<name>/<container>", "compose/<service>", "script:<line>"
    index: int  # YAML document index in the file (0 for non-YAML formats)
    manifest: Dict[str, Any]
    value_spans: Dict[str, Span]
    key_spans: Dict[str, Span]
    provenance: Dict[str, str]  # pointer -> "container 'engine' args[3]", "image tag", "missing"
    missing: Dict[str, str]  # pointer -> what is missing and how to supply it
    problems: List[Problem] = field(default_factory=list)
    references: List[Reference] = field(default_factory=list)
    flags: List[FlagUse] = field(default_factory=list)
    start_line: int = 1

    def document(self) -> Document:
        """The manifest as a `load.Document`, spans pointing into the native file."""
        return Document(
            file=self.file,
            index=self.index,
            data=self.manifest,
            value_spans=dict(self.value_spans),
            key_spans=dict(self.key_spans),
            start_line=self.start_line,
        )


@dataclass
class Adaptation:
    """Everything read from one native file."""

    file: str
    format: Optional[str]  # None: not a format any adapter reads
    workloads: List[Adapted] = field(default_factory=list)
    problems: List[Problem] = field(default_factory=list)  # not tied to one workload


def pointer(*tokens: str) -> str:
    return "".join("/" + escape_pointer_token(str(t)) for t in tokens)


def _tokens(ptr: str) -> List[str]:
    return [t.replace("~1", "/").replace("~0", "~") for t in ptr.split("/")[1:]]


class ManifestBuilder:
    """Builds the manifest dict, its span maps and provenance one field at a time.

    Fields are set in increasing precedence: a later `put` of the same pointer replaces the
    earlier value, its spans and its provenance (the last occurrence of a flag wins, as argparse
    does; an annotation replaces an inferred fact).
    """

    def __init__(self, file: str, root: Span):
        self.file = file
        self.root = root
        self.data: Dict[str, Any] = {"apiVersion": "kvlint/v1", "kind": "Deployment"}
        self.value_spans: Dict[str, Span] = {"": root, "/apiVersion": root, "/kind": root}
        self.key_spans: Dict[str, Span] = {}
        self.provenance: Dict[str, str] = {}
        self.missing: Dict[str, str] = {}
        self._anchors: Dict[str, Span] = {}

    def anchor(self, ptr: str, span: Span) -> None:
        """Where findings about a whole object (`/engine`, `/hardware`) should point."""
        self._anchors[ptr] = span
        if ptr in self.value_spans or self._get(ptr) is not None:
            self.value_spans[ptr] = span

    def has(self, ptr: str) -> bool:
        return self._get(ptr) is not None

    def get(self, ptr: str) -> Any:
        return self._get(ptr)

    def _get(self, ptr: str) -> Any:
        node: Any = self.data
        for token in _tokens(ptr):
            if not isinstance(node, dict) or token not in node:
                return None
            node = node[token]
        return node

    def put(
        self,
        ptr: str,
        value: Any,
        span: Span,
        provenance: str,
        key_span: Optional[Span] = None,
    ) -> None:
        tokens = _tokens(ptr)
        node = self.data
        prefix = ""
        for token in tokens[:-1]:
            prefix += "/" + escape_pointer_token(token)
            child = node.get(token)
            if not isinstance(child, dict):
                child = {}
                node[token] = child
                self.value_spans[prefix] = self._anchors.get(prefix, span)
            node = child
        # a replaced container value takes its children's spans with it (only a container has
        # children: scanning on every put made a file with 10,000 variables quadratic)
        if isinstance(node.get(tokens[-1]), (dict, list)):
            for stale in [p for p in self.value_spans if p.startswith(ptr + "/")]:
                del self.value_spans[stale]
                self.key_spans.pop(stale, None)
                self.provenance.pop(stale, None)
        node[tokens[-1]] = value
        self.value_spans[ptr] = span
        if key_span is not None:
            self.key_spans[ptr] = key_span
        else:
            self.key_spans.pop(ptr, None)
        self.provenance[ptr] = provenance
        self.missing.pop(ptr, None)
        if isinstance(value, dict):
            self._index_children(ptr, value, span, key_span)
        elif isinstance(value, list):
            for i, _ in enumerate(value):
                self.value_spans.setdefault(f"{ptr}/{i}", span)

    def put_nested(
        self, ptr: str, value: Dict[str, Any], span: Span, provenance: str,
        key_span: Optional[Span] = None,
    ) -> None:
        """Merge a dict into an existing object field (dotted JSON options, engine.env)."""
        existing = self._get(ptr)
        if isinstance(existing, dict):
            merged = _deep_merge(existing, value)
            self.put(ptr, merged, self.value_spans.get(ptr, span), provenance, key_span)
        else:
            self.put(ptr, value, span, provenance, key_span)

    def _index_children(self, ptr: str, value: Dict[str, Any], span: Span, key_span: Optional[Span]) -> None:
        for key, child in value.items():
            child_ptr = f"{ptr}/{escape_pointer_token(str(key))}"
            self.value_spans.setdefault(child_ptr, span)
            if isinstance(child, dict):
                self._index_children(child_ptr, child, span, key_span)

    def set_missing(self, ptr: str, how: str) -> None:
        if self._get(ptr) is None:
            self.missing[ptr] = how
            self.provenance[ptr] = MISSING

    def finish(
        self,
        *,
        file: str,
        format: str,
        name: str,
        index: int,
        problems: List[Problem],
        references: Optional[List[Reference]] = None,
        flags: Optional[List[FlagUse]] = None,
    ) -> Adapted:
        for ptr, span in self._anchors.items():
            if self._get(ptr) is not None:
                self.value_spans[ptr] = span
        return Adapted(
            file=file,
            format=format,
            name=name,
            index=index,
            manifest=self.data,
            value_spans=self.value_spans,
            key_spans=self.key_spans,
            provenance=self.provenance,
            missing=self.missing,
            problems=problems,
            references=list(references or []),
            flags=list(flags or []),
            start_line=self.root.line,
        )


def _deep_merge(base: Dict[str, Any], update: Dict[str, Any]) -> Dict[str, Any]:
    out = dict(base)
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = value
    return out
