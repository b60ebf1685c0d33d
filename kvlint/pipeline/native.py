"""Native deployment files (Kubernetes, production-stack values, compose, engine config YAML,
shell scripts, Dockerfiles) in the check pipeline.

`kvlint.adapters` turns each engine workload of such a file into a kvlint/v1 manifest whose
spans point into the native file; here those manifests become `Document`s that the schema,
resolve, capacity and rule stages check unchanged, and the adapters' problems and missing
facts become findings. A native file with no engine workload (a Service, a ConfigMap, an nginx
Deployment) gives no document and no finding.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import field, replace
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

from kvlint.catalog import load_catalogs
from kvlint.config import Config
from kvlint.findings import Finding, Span
from kvlint.inputs import MAX_FILE_BYTES, InputError, read_capped
from kvlint.load import Document, LoadedFile, find_suppressions, load_bytes
from kvlint.records import dataclass

YAML_FORMATS = ("kubernetes", "helm-production-stack", "compose", "vllm-config", "sglang-config", "trtllm-options",
                "helm-ollama")
# The whole file is sniffed, within the input limit: a compose file's `services:` can follow pages
# of comments and `x-` anchors (the adapters' patterns are linear in the bytes given).
SNIFF_WINDOW = MAX_FILE_BYTES
# A kvlint/v1 manifest declares its apiVersion near the top; a walk keeps only files that do
# (or native deployment files).
MANIFEST_MARKER = re.compile(rb"apiVersion[\"']?\s*:\s*[\"']?kvlint/v[0-9]")
MARKER_WINDOW = 64 * 1024


@dataclass
class NativeFile:
    """A native file read: the loaded text, one Document per engine workload, and findings."""

    format: str
    loaded: LoadedFile
    documents: List[Document] = field(default_factory=list)
    findings: List[Finding] = field(default_factory=list)
    # Pointers of facts the file does not give, per document: their schema findings are
    # replaced by the KV207 that says how to supply them.
    missing: Dict[int, Sequence[str]] = field(default_factory=dict)
    # Per document: pointer -> where the value came from ("container 'vllm' args[2]", ...).
    provenance: Dict[int, Dict[str, str]] = field(default_factory=dict)
    # Documents whose engine config file (`--config`, `--extra_llm_api_options`) was not read:
    # any field it may set is unknown, so only checks on what the command line gives run.
    unread: Set[int] = field(default_factory=set)
    # Documents whose tensor- or pipeline-parallel size is written but not resolved ($TP): the
    # per-GPU weights and pool are unknown, so the capacity gate's verdicts are not claimed.
    unresolved_parallelism: Set[int] = field(default_factory=set)


def native_format(path: str, head: bytes, config: Config) -> Optional[str]:
    """The native format of a file, or None (a kvlint/v1 manifest, or nothing kvlint reads)."""
    if not config.native_formats:
        return None
    # Imported on use (start-up time): the adapters and their flag tables are large.
    from kvlint.adapters import sniff

    fmt = sniff(path, head[:SNIFF_WINDOW])
    return fmt if fmt in config.native_formats else None


def _same_gpu(problem, catalog_dirs: Sequence[str]) -> bool:
    """A GPU "conflict" between two spellings of one GPU (a node label and a catalog id)."""
    if problem.kind != "conflicting-facts" or problem.pointer != "/hardware/gpu" or len(problem.values) != 2:
        return False
    gpus = load_catalogs(tuple(catalog_dirs)).gpus
    found = [gpus.lookup(str(value)) for value in problem.values]
    return found[0] is not None and found[1] is not None and found[0].id == found[1].id


# `[defaults]` keys -> the manifest field each supplies.
DEFAULT_FIELDS = {"gpu": "/hardware/gpu", "engine-version": "/engine/version", "model": "/model/name"}


def configured_defaults(path: str, config: Config) -> Tuple[Optional[str], Dict[str, str]]:
    """(the glob that matched, {pointer: value}) from `[defaults]` for a file, first match wins."""
    if not config.defaults or path in ("-", "<stdin>"):
        return None, {}
    try:
        relative = Path(path).resolve().relative_to(config.root.resolve()).as_posix()
    except (ValueError, RuntimeError, OSError):  # outside; or a link loop (3.11)
        relative = Path(path).as_posix()
    for pattern, facts in config.defaults:
        if fnmatch.fnmatch(relative, pattern) or fnmatch.fnmatch(Path(path).name, pattern):
            return pattern, {DEFAULT_FIELDS[key]: value for key, value in facts if key in DEFAULT_FIELDS}
    return None, {}


def _put(data: Dict[str, Any], pointer: str, value: str) -> None:
    *parents, leaf = pointer.strip("/").split("/")
    for part in parents:
        child = data.get(part)
        if not isinstance(child, dict):
            child = data[part] = {}
        data = child
    data[leaf] = value


# `{{HF_TOKEN}}`-style placeholders that a sample asks the user to fill in (with sed or envsubst)
# before `kubectl apply`: not YAML until filled. Helm actions (`{{ .Values.x }}`) are not these.
_PLACEHOLDER = re.compile(rb"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


def _placeholders(raw: bytes) -> List[re.Match[bytes]]:
    return list(_PLACEHOLDER.finditer(raw))[:1000]


def _load_with_placeholders(raw: bytes, display: str, placeholders: List[re.Match[bytes]]):
    """The file read with each placeholder turned into a quoted string of the same length (so every
    position stays), and one KV208 info per placeholder: what is filled in there is not checked."""
    text = bytearray(raw)
    for match in placeholders:
        start, end = match.span()
        text[start:start + 1] = b'"'
        text[end - 1:end] = b'"'
    loaded = load_bytes(bytes(text), display)
    if any(f.code == "KV004" for f in loaded.findings):
        return load_bytes(raw, display)  # not the placeholders' fault: report the file as it is
    for match in placeholders:
        line = raw.count(b"\n", 0, match.start()) + 1
        column = match.start() - (raw.rfind(b"\n", 0, match.start()) + 1) + 1
        name = match.group(1).decode("ascii")
        loaded.findings.append(Finding(
            code="KV208", name="", severity="info", file=display, pointer="", document=0,
            message=f"{{{{{name}}}}} is a placeholder filled in before the file is applied; the file is read "
                    "with it as text, and what is filled in there is not checked",
        ).with_location(Span(line, column, line, column + len(match.group(0)))))
    return loaded


def read_native(raw: bytes, display: str, fmt: str, config: Optional[Config] = None, path: str = "") -> NativeFile:
    from kvlint.adapters import adapt  # on use, as above

    if fmt in YAML_FORMATS:
        loaded = load_bytes(raw, display)
        placeholders = _placeholders(raw) if any(f.code == "KV004" for f in loaded.findings) else []
        if placeholders:
            loaded = _load_with_placeholders(raw, display, placeholders)
    else:  # a shell script or Dockerfile: text, not YAML
        text = raw.decode("utf-8", errors="replace")
        loaded = LoadedFile(path=display, text=text, suppressions=find_suppressions(text, yaml_text=False))
    native = NativeFile(format=fmt, loaded=loaded)
    if any(f.code in ("KV001", "KV004") for f in loaded.findings):
        return native  # YAML the loader refused: its findings say why
    adaptation = adapt(display, loaded.text, loaded if fmt in YAML_FORMATS else None)
    for problem in adaptation.problems:
        native.findings.append(_finding(problem, display, 0))
    config = config or Config()
    catalog_dirs = config.catalog_dirs
    pattern, defaults = configured_defaults(path or display, config)
    for position, workload in enumerate(adaptation.workloads):
        for reference in workload.references:
            workload = _merge_reference(workload, reference, path, config, native.findings, display, position, native)
        for pointer in [p for p in workload.missing if p in defaults]:
            _put(workload.manifest, pointer, defaults[pointer])
            workload.provenance[pointer] = f"kvlint.toml [defaults] {pattern!r}"
            del workload.missing[pointer]
        document = workload.document()
        # Several workloads can share one YAML document: number them apart for findings.
        document.index = position
        native.documents.append(document)
        native.missing[position] = tuple(workload.missing)
        native.provenance[position] = dict(workload.provenance)
        # An unpinned image (KV206) is why the release is missing: one finding, on the image, that
        # says so and what did not run, instead of a KV206 and a KV207 for the same cause.
        unpinned = {p.pointer for p in workload.problems if p.kind == "unpinned-image"}
        if any(p.kind == "unresolved-value" and p.pointer in _PARALLELISM for p in workload.problems):
            native.unresolved_parallelism.add(position)
        for problem in workload.problems:
            if _same_gpu(problem, catalog_dirs):
                continue
            finding = _finding(problem, display, position)
            if problem.kind == "unpinned-image" and problem.pointer in workload.missing:
                finding = replace(finding, message=f"{finding.message}; until it is known, "
                                  f"{_NOT_RUN.get(problem.pointer, 'the checks that need it did not run')}")
            native.findings.append(finding)
        for pointer, how in workload.missing.items():
            if pointer in unpinned:
                continue
            span = _missing_span(workload, pointer) or document.span("")
            native.findings.append(Finding(
                code="KV207", name="", severity="warning", file=display, pointer=pointer, document=position,
                message=f"{workload.name}: {how}{_missing_suffix(pointer, path not in ('', '-'))}",
            ).with_location(span))
    return native


_PARALLELISM = ("/parallelism/tensor", "/parallelism/pipeline")
# The capacity gate's verdicts, each computed per GPU from the parallel sizes.
CAPACITY_GATE = ("KV601", "KV602", "KV603", "KV606", "KV610")


def _missing_span(workload, pointer: str) -> Optional[Span]:
    """Where a KV207 for a missing fact points: the fact's own place, else (Kubernetes) the image
    the engine release would come from, else the workload as a whole."""
    span = workload.value_spans.get(pointer)
    if span is None and pointer == "/engine/version" and workload.format == "kubernetes":
        span = workload.value_spans.get("/engine")
    return span or workload.value_spans.get("")


# What does not run without each fact (KV207 says so: a check that did not run never passes).
_NOT_RUN = {
    "/engine/version": "the checks keyed by engine release (flags, backends, cache formats) did not run",
    "/hardware/gpu": "the checks that need the GPU (FP8 support, backends by compute capability, the KV pool) "
    "did not run",
    "/model/name": "the checks that need the model's geometry (head size, layers, capacity) did not run",
}
_DEFAULTS_KEY = {pointer: key for key, pointer in DEFAULT_FIELDS.items()}


def _missing_suffix(pointer: str, has_path: bool = True) -> str:
    key = _DEFAULTS_KEY.get(pointer)
    # [defaults] match a file's path: standard input has none
    where = f"; or `{key} = …` under `[defaults]` in kvlint.toml for this path" if key and has_path else ""
    not_run = _NOT_RUN.get(pointer)
    return where + (f"; until then {not_run}" if not_run else "")


def _merge_reference(workload, reference, path: str, config: Config, findings: List[Finding], display: str,
                     position: int, native: Optional[NativeFile] = None):
    """The workload with the engine config file its command line names (`vllm serve --config F`,
    `trtllm-serve --extra_llm_api_options F`) merged in, the command line winning. The file is
    looked for next to the native file, inside the project (KV209's rule), or, in a Kubernetes
    file, in the ConfigMap mounted at its path (same file, or a YAML file beside it). When it
    cannot be read (a path inside the container, outside the project, not in the repository), a
    KV208 (info) says that the settings in it are not checked, and the checks that need a field it
    may set do not run (`NativeFile.unread`), instead of the engine defaults standing in."""
    from kvlint.adapters.engine_config import merge_config
    from kvlint.pipeline.paths import path_problem

    written = reference.path
    flag = "--config" if reference.kind != "trtllm-options" else "--extra_llm_api_options"
    why: Optional[str] = None
    base = Path(path) if path and path != "-" else None
    mounted = None
    if native is not None and workload.format == "kubernetes" and written.startswith("/"):
        from kvlint.adapters.kubernetes import config_mount

        mounted = config_mount(display, native.loaded.text, native.loaded.documents, reference.span, written)
    if mounted is not None:
        return _merge_config_map(workload, reference, mounted, flag, base, config, findings, display, position, native)
    if base is None:
        why = "the command was read from standard input, so there is no directory to look in"
    elif "$" in written or not written.strip():
        why = "the path is not a plain file name"
    elif Path(written).is_absolute():
        why = ("an absolute path, read where the engine runs; kvlint reads only files inside the project "
               "(in Kubernetes, mount it from a ConfigMap kept beside the workload)")
    else:
        why = path_problem(written, base, config)
        if why is None and not (base.parent / written).is_file():
            why = "no such file next to this one"
    config_workload = None
    if why is None:
        target = base.parent / written
        try:
            raw = read_capped(target)
        except InputError as exc:
            why = f"it cannot be read: {exc}"
        else:
            duplicates: List[Finding] = []
            config_workload, why = _adapt_config(raw.decode("utf-8", errors="replace"), written, reference.kind,
                                                 duplicates)
            _duplicate_keys(findings, workload, display, position, reference.span, f"{flag} {written!r}", duplicates)
    if config_workload is None:
        _not_read(findings, workload, display, position, native, reference.span, f"{flag} {written!r} is not read ({why})")
        return workload
    return merge_config(workload, config_workload, reference.span)


def _duplicate_keys(findings: List[Finding], workload, display: str, position: int, span: Span, what: str,
                    duplicates: List[Finding], locate=None) -> None:
    """KV002 (error, as in a manifest) for each duplicate key of an engine config file. The file is
    still read, the last value winning as YAML loaders do, so the checks see what the engine
    gets; the finding points at the config argument (or, via `locate`, into a ConfigMap of the
    same file) and names the line in the config file."""
    for duplicate in duplicates:
        where = locate(duplicate) if locate is not None else None
        findings.append(Finding(
            code="KV002", name="", severity="error", file=display, pointer="", document=position,
            message=f"{workload.name}: {what} line {duplicate.line}: {duplicate.message}",
        ).with_location(where or span))


def _not_read(findings: List[Finding], workload, display: str, position: int, native: Optional[NativeFile],
              span: Span, what: str) -> None:
    findings.append(Finding(
        code="KV208", name="", severity="info", file=display, pointer="", document=position,
        message=f"{workload.name}: {what}; the settings in it are not checked, and the checks that need a "
        "field it may set (the KV pool and capacity, and any setting the command line does not give) did not run",
    ).with_location(span))
    if native is not None:
        native.unread.add(position)


def _adapt_config(text: str, label: str, kind: str, duplicates: Optional[List[Finding]] = None):
    """(the engine config file adapted, None) or (None, why it cannot be).

    A duplicate key does not stop the file being read: it loads as YAML loaders load it (the last
    value wins, which is what the engine gets) and each KV002 is added to `duplicates`, for the
    caller to report as the manifest path reports a duplicate key (an error)."""
    from kvlint.adapters import engine_config

    loaded = load_bytes(text.encode("utf-8"), label)
    fatal = [f for f in loaded.findings if f.code != "KV002" or duplicates is None]
    if fatal:
        return None, "it is not YAML kvlint can read: " + fatal[0].message
    if duplicates is not None:
        duplicates.extend(loaded.findings)
    if not loaded.documents or not isinstance(loaded.documents[0].data, dict):
        return None, "it holds no engine settings kvlint reads"
    try:
        adapted, _ = engine_config.adapt_document(label, text, loaded.documents[0], kind)
        return adapted[0], None
    except Exception as exc:  # never a traceback: the file stays unread, and says why
        return None, f"kvlint could not adapt it ({type(exc).__name__})"


# Other YAML files of the directory looked through for a mounted ConfigMap.
MAX_SIBLINGS = 256


def _merge_config_map(workload, reference, mounted, flag: str, base: Optional[Path], config: Config,
                      findings: List[Finding], display: str, position: int, native: NativeFile):
    """The workload with the engine config file the kubelet writes from a ConfigMap volume: the
    entry's text read as that file. In the same file, the merged fields point into the
    ConfigMap's block scalar; from a file beside it, at the path on the command line (a finding
    cannot point into a second file), with provenance naming the file and line."""
    from kvlint.adapters.engine_config import merge_config
    from kvlint.adapters.source import LineLocator, scalar_locator

    written = reference.path
    source = f"ConfigMap {mounted.config_map!r} (volume {mounted.volume!r} at {mounted.mount_path})"
    if mounted.problem:
        _not_read(findings, workload, display, position, native, reference.span,
                  f"{flag} {written!r} is mounted from {source}, but {mounted.problem}")
        return workload
    label = f"ConfigMap {mounted.config_map} key {mounted.key}"
    located = None
    if mounted.found is not None:
        document, ptr = mounted.found
        content = document.data
        for token in ptr.split("/")[1:]:
            content = content.get(token.replace("~1", "/").replace("~0", "~")) if isinstance(content, dict) else None
        content = "" if content is None else str(content)
        text = native.loaded.text
        located = scalar_locator(text, LineLocator(text), document.span(ptr), content)
    else:
        content, where = _config_map_beside(mounted, base, config)
        if content is None:
            _not_read(findings, workload, display, position, native, reference.span,
                      f"{flag} {written!r} is mounted from {source}, which is not in this file"
                      + (" or a YAML file beside it" if base is not None else "") + " (apply it with the workload, "
                      "or keep it beside this file to have it checked)")
            return workload
        label = f"{where}: {label}"
    duplicates: List[Finding] = []
    config_workload, why = _adapt_config(content, label, reference.kind, duplicates)
    lines = LineLocator(content)
    inside = located is not None and located.text == content

    def locate(duplicate: Finding) -> Optional[Span]:
        if not inside or not duplicate.line or not duplicate.column:
            return None
        start = lines.offset(duplicate.line, duplicate.column)
        end = lines.offset(duplicate.end_line or duplicate.line, duplicate.end_column or duplicate.column)
        return located.locator.span(start, max(end, start + 1))

    _duplicate_keys(findings, workload, display, position, reference.span,
                    f"{flag} {written!r} (key {mounted.key!r} of {source})", duplicates, locate)
    if config_workload is None:
        _not_read(findings, workload, display, position, native, reference.span,
                  f"{flag} {written!r} (key {mounted.key!r} of {source}) is not read ({why})")
        return workload
    merged = merge_config(workload, config_workload, reference.span)
    if inside:
        for ptr, span in config_workload.value_spans.items():
            if merged.value_spans.get(ptr) != reference.span or not merged.provenance.get(ptr, "").startswith(label):
                continue
            start = lines.offset(span.line, span.column)
            end = lines.offset(span.end_line, span.end_column)
            merged.value_spans[ptr] = located.locator.span(start, max(end, start + 1))
            key = config_workload.key_spans.get(ptr)
            if key is not None:
                merged.key_spans[ptr] = located.locator.span(
                    lines.offset(key.line, key.column), max(lines.offset(key.end_line, key.end_column),
                                                            lines.offset(key.line, key.column) + 1))
    return merged


def _config_map_beside(mounted, base: Optional[Path], config: Config) -> Tuple[Optional[str], str]:
    """(the entry's text, the file it is in) from a ConfigMap in a YAML file of the same
    directory, or (None, "")."""
    if base is None or mounted.key is None:
        return None, ""
    name = mounted.config_map.encode("utf-8")
    try:
        siblings = sorted(p for p in base.parent.iterdir() if p.suffix.lower() in (".yaml", ".yml", ".json"))
    except OSError:
        return None, ""
    for sibling in siblings[:MAX_SIBLINGS]:
        if sibling.name == base.name or not sibling.is_file():
            continue
        try:
            raw = read_capped(sibling)
        except InputError:
            continue
        if b"ConfigMap" not in raw or name not in raw:
            continue
        loaded = load_bytes(raw, sibling.name)
        for document in loaded.documents:
            data = document.data
            if not (isinstance(data, dict) and data.get("kind") == "ConfigMap"
                    and isinstance(data.get("metadata"), dict) and data["metadata"].get("name") == mounted.config_map
                    and isinstance(data.get("data"), dict) and mounted.key in data["data"]):
                continue
            return str(data["data"][mounted.key]), sibling.name
    return None, ""


def _finding(problem, display: str, document: int) -> Finding:
    return Finding(
        code=problem.code,
        name="",
        severity=problem.severity,
        message=problem.message,
        file=display,
        pointer=problem.pointer or "",
        document=document,
    ).with_location(problem.span)


def head_of(path: str, size: int = SNIFF_WINDOW) -> Optional[bytes]:
    """The first bytes of a file; None when it cannot be read (the loader then reports why)."""
    try:
        with open(Path(path), "rb") as handle:
            return handle.read(size)
    except OSError:
        return None


# Findings a missing fact would also cause, which its KV207 already explains.
_DUPLICATES_OF_MISSING = {"/engine/version": ("KV201",), "/hardware/gpu": ("KV202",), "/model/name": ("KV203",)}


def covered_by_missing(finding: Finding, missing: Sequence[str]) -> bool:
    """True for a schema or catalog finding about a fact the native file does not give: the
    KV101 that a missing property (or the missing object holding it) causes, and the KV201-KV203
    that an unknown release, GPU or model would add."""
    for pointer in missing:
        if finding.code in _DUPLICATES_OF_MISSING.get(pointer, ()):
            return True
        if finding.code != "KV101":
            continue
        # KV101 sits on the object that lacks a property and names it: the missing fact's own
        # key, or the first missing object on its path.
        if pointer.startswith(finding.pointer + "/"):
            lacking = pointer[len(finding.pointer) + 1:].split("/")[0]
            if f"'{lacking}'" in finding.message:
                return True
    return False


def given_despite_unread(finding: Finding, provenance: Dict[str, str]) -> bool:
    """Whether a check's finding stands when the workload's engine config file was not read:
    only one about a field the native file itself gives (the command line wins over the file).
    The capacity checks (KV6xx) need every memory and parallelism setting, any of which the
    file may set (an 8-GPU pod's tensor_parallel_size), so none of them stands; nor does one
    about a default (`kv_cache.dtype: auto`) or an absent field, which the file may set."""
    if finding.code.startswith("KV6"):
        return False
    origin = provenance.get(finding.pointer)
    return origin is not None and origin != "missing" and not origin.startswith("default")


def load_source(raw: bytes, display: str, path: str, config: Config) -> NativeFile:
    """A file as the pipeline reads it: a kvlint/v1 manifest file (format "kvlint"), or a native
    file adapted into one Document per engine workload."""
    head = raw[:MARKER_WINDOW]
    if MANIFEST_MARKER.search(head) is None:
        # standard input has no name to sniff by: read it as YAML (`helm template … | kvlint
        # check -`), or as a script when it starts with a shell's #! line
        fmt = native_format(path if path != "-" else "stdin.yaml", raw, config)
        if fmt is not None:
            native = read_native(raw, display, fmt, config, path)
            if fmt in YAML_FORMATS:
                _keep_misnamed_manifests(native)
            return native
        template = _helm_template(raw, display, path, head, config)
        if template is not None:
            return template
    loaded = load_bytes(raw, display)
    if loaded.documents and not any(f.code in ("KV001", "KV004") for f in loaded.findings) and not any(
            looks_like_manifest(d.data) or _kvlint_api(d.data) for d in loaded.documents):
        # Neither a kvlint manifest (not even one with a damaged apiVersion) nor a deployment file
        # kvlint reads: a workflow, a Chart.yaml, a rule file (whose examples quote manifests, so
        # the marker matched), a model's config.json. Named on the command line it is read and
        # said to be out of scope, not validated against the manifest schema (whose errors would
        # fail the run).
        loaded.documents = []
        loaded.findings.append(_not_a_deployment(display))
    return NativeFile(format="kvlint", loaded=loaded)


def _kvlint_api(data: Any) -> bool:
    return isinstance(data, dict) and isinstance(data.get("apiVersion"), str) and data["apiVersion"].startswith("kvlint/")


# Top-level fields of a kvlint/v1 manifest that no other file kvlint meets has as mappings
# (schemas/manifest.v1.json: Deployment and Ablation).
_MANIFEST_OBJECTS = ("engine", "hardware", "model", "kv_cache", "memory", "serving", "parallelism", "targets",
                     "speculative")


def looks_like_manifest(data: Any) -> bool:
    """A kvlint/v1 manifest whatever its apiVersion says: a Deployment's objects (`engine:`,
    `model:`, `kv_cache:` … as mappings) or an Ablation's `base` and `variants`. A Kubernetes
    object, a workflow, a Chart.yaml, a catalog or rule file has none of them."""
    if not isinstance(data, dict):
        return False
    if any(isinstance(data.get(key), dict) for key in _MANIFEST_OBJECTS):
        return True
    return "base" in data and isinstance(data.get("variants"), list)


def _keep_misnamed_manifests(native: NativeFile) -> None:
    """kvlint manifests in a native YAML file whose apiVersion is damaged (`""`, `kvlint`, a list,
    a number, `v1`): the sniff took the file for Kubernetes, whose adapter skips them. They are
    checked as manifests, so the schema reports the apiVersion (KV104 at it, expecting
    kvlint/v1) instead of the file passing as "0 documents"."""
    for document in native.loaded.documents:
        data = document.data
        if not looks_like_manifest(data) or data.get("apiVersion") == "kvlint/v1":
            continue
        if isinstance(data.get("spec"), dict):
            continue  # a Kubernetes object, however odd
        native.documents.append(replace(document, index=len(native.documents)))


def _not_a_deployment(display: str) -> Finding:
    return Finding(
        code="KV208", name="", severity="info", file=display, pointer="", document=0,
        message="not a deployment kvlint reads (no kvlint/v1 manifest, Kubernetes workload, compose file, "
        "values file, engine config, script or Dockerfile), so nothing in it is checked; a kvlint "
        "manifest starts with `apiVersion: kvlint/v1`",
    ).with_location(Span(1, 1, 1, 1))


def _helm_template(raw: bytes, display: str, path: str, head: bytes, config: Config) -> Optional[NativeFile]:
    """A Helm chart template named on the command line (a walk skips them): one KV005 that says
    to check the rendered output, instead of YAML errors for its template syntax."""
    named_yaml = path == "-" or (path or display).lower().endswith((".yaml", ".yml"))
    if "kubernetes" not in config.native_formats or not named_yaml:
        return None
    from kvlint.adapters import is_helm_template  # on use, as above

    if not is_helm_template(path if path != "-" else "stdin.yaml", head[:SNIFF_WINDOW]):
        return None
    text = raw.decode("utf-8", errors="replace")
    at = text.find("{{")
    line = text.count("\n", 0, at) + 1
    column = at - (text.rfind("\n", 0, at) + 1) + 1
    finding = Finding(
        code="KV005", name="", severity="error", file=display, pointer="", document=0,
        message="a Helm chart template (Go template actions such as `{{ .Values… }}`) is not YAML until "
        "rendered: check the rendered output, `helm template RELEASE CHART | kvlint check -`",
    ).with_location(Span(line, column, line, column + 2))
    loaded = LoadedFile(path=display, text=text, suppressions=find_suppressions(text, yaml_text=True))
    return NativeFile(format="helm-template", loaded=loaded, findings=[finding])


# --- findings in the user's terms --------------------------------------------------------------

_FIELD_WORD = re.compile(r"(?<![\w./-])((?:[a-z_]+\.)+[a-z_0-9]+|attention_backend)(?![\w/-])")
_WRITTEN_FLAG = re.compile(r":\s*(-{1,2}[A-Za-z0-9][\w.-]*)\s*(?:\(|$)")
_WRITTEN_ENV = re.compile(r"\b(?:env(?:ironment)?(?:\[\d+\])?|ENV|-e|Environment=?)\s+([A-Z][A-Z0-9_]*)\b")
# A finding about an unset backend (`auto`) is decided by the cache dtype: point there.
_DECIDED_BY = {"/engine/attention_backend": "/kv_cache/dtype"}


def native_terms(finding: Finding, document: Document, provenance: Dict[str, str]) -> Finding:
    """A rule's finding on a workload read from a native file, in the file's own terms: each
    manifest field the message names (`kv_cache.dtype`, `memory.kv_cache_memory`) becomes the flag
    or variable the user wrote for it, else the engine release's own flag for it; a finding on a
    field the file never wrote points at the value that decides it instead of the image line."""
    from kvlint.adapters.flags import spelling_for  # on use: the flag tables load lazily

    data = document.data if isinstance(document.data, dict) else {}
    engine_data = data.get("engine") if isinstance(data.get("engine"), dict) else {}
    engine = engine_data.get("name")
    release = engine_data.get("version")
    release = release if isinstance(release, str) else None

    def native(match: re.Match) -> str:
        word = match.group(1)
        pointer = "/engine/attention_backend" if word == "attention_backend" else "/" + word.replace(".", "/")
        written = provenance.get(pointer, "")
        flag = _WRITTEN_FLAG.search(written)
        if flag:
            return flag.group(1).split("=", 1)[0]
        env = _WRITTEN_ENV.search(written)
        if env:
            return env.group(1)
        if isinstance(engine, str):
            spelling = spelling_for(engine, pointer, release)
            if spelling:
                return spelling
        return word

    message = _FIELD_WORD.sub(native, finding.message) if "." in finding.message or "_" in finding.message else finding.message
    moved = finding
    target = _DECIDED_BY.get(finding.pointer)
    if (target and finding.pointer not in provenance and target in document.value_spans
            and not any(p.startswith("/engine/env/") and "BACKEND" in p for p in provenance)):
        moved = finding.with_location(document.value_spans[target])
    return replace(moved, message=message) if message != finding.message else moved
