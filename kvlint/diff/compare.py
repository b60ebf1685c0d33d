"""`kvlint diff --base REF`: the pull-request capacity diff.

Every manifest under the given paths is compared between a git ref (the base) and the working
tree (the head). Documents are matched by `metadata.name` within a repository-relative file path.
For each deployment the diff carries the corrected capacity on both sides (per-token bytes, the
engine's KV tokens and max concurrency) and the findings that are new on the head side.

The base side is materialised into a temporary directory with `git show REF:path`, keeping the
repository layout, so relative `model.config` paths resolve as they did at the base. Both sides
run the same check pipeline with the head's configuration, and every file is named by its
repository-relative path in the result.

The gate fails when any deployment loses more than `max-capacity-regression` percent of its KV
tokens or max concurrency, or when a finding at or above `fail-on` is new.
"""

from __future__ import annotations

import subprocess
import tempfile
from collections import Counter
from dataclasses import field, replace
from pathlib import Path, PurePosixPath
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from kvlint.analysis import manifest_kind
from kvlint.config import Config
from kvlint.errors import UsageError
from kvlint.findings import Finding, severity_rank
from kvlint.load import load_bytes
from kvlint.pipeline.check import CheckContext, run_check
from kvlint.pipeline.discovery import MANIFEST_SUFFIXES, discover_files, maybe_native
from kvlint.pipeline.native import load_source
from kvlint.pipeline.documents import analyses_of
from kvlint.records import dataclass


@dataclass(frozen=True)
class CapacityFigures:
    """The capacity numbers the diff compares, for one side of one deployment."""

    per_token_bytes: Optional[int]
    kv_cache_tokens: Optional[int]
    max_concurrency: Optional[float]
    max_model_len: Optional[int]

    def to_json(self) -> Dict[str, Any]:
        return {
            "per_token_bytes": self.per_token_bytes,
            "kv_cache_tokens": self.kv_cache_tokens,
            "max_concurrency": self.max_concurrency,
            "max_model_len": self.max_model_len,
        }


@dataclass(frozen=True)
class Regression:
    """A capacity figure that dropped by more than the allowed percentage."""

    metric: str  # kv_cache_tokens | max_concurrency
    base: float
    head: float
    drop_pct: float
    limit_pct: float

    def to_json(self) -> Dict[str, Any]:
        return {
            "metric": self.metric,
            "base": self.base,
            "head": self.head,
            "drop_pct": round(self.drop_pct, 2),
            "limit_pct": self.limit_pct,
        }


@dataclass(frozen=True)
class DeploymentDiff:
    """One deployment compared between the base and the head: its figures and findings on both sides."""

    file: str  # repository-relative path
    name: str  # metadata.name (or "#N" for an unnamed document; "name/variant" for ablations)
    status: str  # added | removed | changed | unchanged
    base: Optional[CapacityFigures]
    head: Optional[CapacityFigures]
    new_findings: Tuple[Finding, ...] = ()
    fixed_findings: Tuple[Finding, ...] = ()
    regressions: Tuple[Regression, ...] = ()

    def change_pct(self, metric: str) -> Optional[float]:
        """Relative change of a figure in percent (+ grows), None without both sides."""
        old = getattr(self.base, metric, None) if self.base else None
        new = getattr(self.head, metric, None) if self.head else None
        if old is None or new is None or old == 0:
            return None
        return 100.0 * (new - old) / old


@dataclass
class DiffResult:
    """What `kvlint diff` found between the base ref and the working tree."""

    base_ref: str
    base_commit: Optional[str]  # None when the ref is an unborn HEAD (first commit)
    deployments: List[DeploymentDiff]
    new_findings: List[Finding]  # every new finding, also those outside a deployment document
    fixed_findings: List[Finding]
    max_capacity_regression: Optional[float]
    fail_on: str = "error"
    files: List[str] = field(default_factory=list)

    @property
    def regressions(self) -> List[Tuple[DeploymentDiff, Regression]]:
        return [(d, r) for d in self.deployments for r in d.regressions]

    def failing_findings(self) -> List[Finding]:
        threshold = severity_rank(self.fail_on)
        return [f for f in self.new_findings if severity_rank(f.severity) >= threshold]

    def fails(self) -> bool:
        return bool(self.regressions or self.failing_findings())


# --- git -------------------------------------------------------------------------------------


def _git(args: Sequence[str], cwd: Path, binary: bool = False) -> Any:
    try:
        completed = subprocess.run(
            ["git", *args], cwd=str(cwd), capture_output=True, check=False
        )
    except FileNotFoundError:
        raise UsageError("kvlint diff needs git on PATH") from None
    if completed.returncode != 0:
        message = completed.stderr.decode("utf-8", "replace").strip().splitlines()
        raise UsageError(f"git {' '.join(args)}: {message[-1] if message else 'failed'}")
    return completed.stdout if binary else completed.stdout.decode("utf-8", "replace")


def repository_root(start: Path) -> Path:
    try:
        return Path(_git(["rev-parse", "--show-toplevel"], start).strip()).resolve()
    except UsageError:
        raise UsageError(f"{start}: not inside a git repository (kvlint diff compares git revisions)") from None


def resolve_ref(ref: str, root: Path) -> Optional[str]:
    """The commit id of ref; None for HEAD in a repository without commits (nothing to compare)."""
    try:
        return _git(["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], root).strip()
    except UsageError:
        if ref == "HEAD":
            try:
                _git(["rev-parse", "--verify", "--quiet", "HEAD"], root)
            except UsageError:
                return None  # unborn branch: every manifest is added
        raise UsageError(f"--base {ref}: no such commit in this repository") from None


def _base_files(commit: Optional[str], root: Path, pathspecs: Sequence[str]) -> List[str]:
    if commit is None:
        return []
    out = _git(["ls-tree", "-r", "-z", "--name-only", commit, "--", *pathspecs], root)
    return [name for name in out.split("\0") if name]


def _show(commit: str, relative: str, root: Path) -> Optional[bytes]:
    try:
        return _git(["show", f"{commit}:{relative}"], root, binary=True)
    except UsageError:
        return None


# --- the two sides ---------------------------------------------------------------------------


@dataclass
class _Side:
    """One side of the diff: files (repo-relative -> real path), capacities, findings."""

    files: Dict[str, Path]
    capacities: Dict[Tuple[str, str], CapacityFigures]
    findings: List[Finding]
    names: Dict[Tuple[str, int], str]  # (file, document index) -> document key


def _document_key(data: Any, index: int) -> str:
    if isinstance(data, dict):
        metadata = data.get("metadata")
        if isinstance(metadata, dict) and isinstance(metadata.get("name"), str) and metadata["name"]:
            return metadata["name"]
    return f"#{index + 1}"


def _figures(capacity) -> CapacityFigures:
    engine = capacity.engine
    return CapacityFigures(
        per_token_bytes=capacity.per_token.total_bytes if capacity.per_token is not None else None,
        kv_cache_tokens=engine.kv_cache_tokens if engine is not None else None,
        max_concurrency=engine.max_concurrency if engine is not None else None,
        max_model_len=engine.max_model_len if engine is not None else None,
    )


def _analyse_side(files: Dict[str, Path], context: CheckContext, no_root: Path) -> _Side:
    """Run the check pipeline and the capacity stage on real paths; name files repo-relative."""
    config = context.config
    real_to_relative = {str(path): relative for relative, path in files.items()}
    # run_check names a file relative to display_root when it can; an empty directory that holds
    # none of the files keeps the absolute real path, so model.config resolves from the real file.
    check_context = replace(context, display_root=no_root)
    result = run_check(list(real_to_relative), check_context) if files else None
    findings: List[Finding] = []
    if result is not None:
        for finding in result.findings:
            relative = real_to_relative.get(finding.file)
            findings.append(replace(finding, file=relative) if relative else finding)

    capacities: Dict[Tuple[str, str], CapacityFigures] = {}
    names: Dict[Tuple[str, int], str] = {}
    for relative, path in files.items():
        source = load_source(path.read_bytes(), str(path), str(path), config)
        for document in source.documents if source.format != "kvlint" else source.loaded.documents:
            data = document.data
            key = _document_key(data, document.index)
            names[(relative, document.index)] = key
            kind = manifest_kind(data)
            for analysis in analyses_of(document, config, file=relative, path=path):
                if analysis.capacity is None:
                    continue
                if kind == "Ablation":
                    variant = analysis.facts.get("variant") or analysis.capacity.name
                    capacities[(relative, f"{key}/{variant}")] = _figures(analysis.capacity)
                else:
                    capacities[(relative, key)] = _figures(analysis.capacity)
    return _Side(files=files, capacities=capacities, findings=findings, names=names)


def _referenced_paths(documents) -> Iterable[str]:
    for document in documents:
        data = document.data
        if isinstance(data, dict) and data.get("kind") == "Ablation" and isinstance(data.get("base"), str):
            yield data["base"]
        yield from _model_config_paths(data)


def _model_config_paths(data: Any) -> Iterable[str]:
    """Every `model.config` string in a document (deployments and ablation variants)."""
    if isinstance(data, dict):
        model = data.get("model")
        if isinstance(model, dict) and isinstance(model.get("config"), str):
            yield model["config"]
        for value in data.values():
            yield from _model_config_paths(value)
    elif isinstance(data, list):
        for value in data:
            yield from _model_config_paths(value)


def _materialise_base(
    commit: Optional[str], root: Path, pathspecs: Sequence[str], base_root: Path, base_config: Config
) -> Dict[str, Path]:
    """Write the base version of each manifest (and the model configs it names) under base_root.

    Every YAML/JSON file under the pathspecs is written out in its repository layout, then the
    working tree's own discovery runs on the copy, so both sides pick manifests the same way
    (suffixes, the apiVersion marker, hidden and tool directories, `exclude`)."""
    manifests: Dict[str, Path] = {}
    if commit is None:
        return manifests
    for relative in _base_files(commit, root, pathspecs):
        if not relative.endswith(MANIFEST_SUFFIXES) and not maybe_native(PurePosixPath(relative).name):
            continue
        raw = _show(commit, relative, root)
        if raw is None:
            continue
        target = base_root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(raw)
    named = [str(base_root / spec) for spec in pathspecs if (base_root / spec).exists()]
    for found in discover_files(named, base_config) if named else []:
        manifests[Path(found).resolve().relative_to(base_root).as_posix()] = Path(found).resolve()
    # Files a manifest names relative to itself (model.config; an ablation's base manifest, and
    # what that names in turn) come along in their base version, so they resolve as they did.
    queue = list(manifests)
    seen = set(queue)
    while queue:
        relative = queue.pop(0)
        target = base_root / relative
        for referenced in _referenced_paths(load_bytes(target.read_bytes(), str(target)).documents):
            normal = _normalise(PurePosixPath(relative).parent / referenced)
            if normal is None or normal in seen:
                continue
            seen.add(normal)
            raw = _show(commit, normal, root)
            if raw is None:
                continue
            (base_root / normal).parent.mkdir(parents=True, exist_ok=True)
            (base_root / normal).write_bytes(raw)
            queue.append(normal)
    return manifests


def _normalise(path: PurePosixPath) -> Optional[str]:
    """a/b/../c -> a/c; None when it leaves the repository or is absolute."""
    if path.is_absolute():
        return None
    parts: List[str] = []
    for part in path.parts:
        if part in ("", "."):
            continue
        if part == "..":
            if not parts:
                return None
            parts.pop()
        else:
            parts.append(part)
    return "/".join(parts) if parts else None


def _head_files(paths: Sequence[str], config: Config, root: Path) -> Dict[str, Path]:
    files: Dict[str, Path] = {}
    for path in discover_files(list(paths), config):
        real = Path(path).resolve()
        try:
            relative = real.relative_to(root).as_posix()
        except ValueError:
            raise UsageError(f"{path}: outside the git repository {root}") from None
        files[relative] = real
    return files


def _pathspecs(paths: Sequence[str], root: Path) -> List[str]:
    specs: List[str] = []
    for raw in paths:
        if raw == "-":
            raise UsageError("kvlint diff compares files in git; stdin (-) has no base version")
        absolute = Path(raw).resolve()
        try:
            relative = absolute.relative_to(root).as_posix()
        except ValueError:
            raise UsageError(f"{raw}: outside the git repository {root}") from None
        specs.append(relative)
    return specs


# --- comparing -------------------------------------------------------------------------------


def _finding_key(finding: Finding, names: Dict[Tuple[str, int], str]) -> tuple:
    # Lines move and messages quote numbers that change; a finding is "the same" when the same
    # rule fires at the same place of the same document.
    document = names.get((finding.file, finding.document), f"#{finding.document + 1}")
    return (finding.file, document, finding.code, finding.pointer)


def _unmatched(side: _Side, other: _Side) -> List[Finding]:
    """Findings of `side` with no counterpart in `other` (a multiset difference by finding key)."""
    available = Counter(_finding_key(f, other.names) for f in other.findings)
    out: List[Finding] = []
    for finding in side.findings:
        key = _finding_key(finding, side.names)
        if available[key] > 0:
            available[key] -= 1
        else:
            out.append(finding)
    return out


def _new_findings(head: _Side, base: _Side) -> Tuple[List[Finding], List[Finding]]:
    """(new in head, fixed since base)."""
    return _unmatched(head, base), _unmatched(base, head)


def _regressions(base: CapacityFigures, head: CapacityFigures, limit: Optional[float]) -> List[Regression]:
    if limit is None:
        return []
    out: List[Regression] = []
    for metric in ("kv_cache_tokens", "max_concurrency"):
        old, new = getattr(base, metric), getattr(head, metric)
        if old is None or new is None or old <= 0:
            continue
        drop = 100.0 * (old - new) / old
        if drop > limit:
            out.append(Regression(metric, old, new, drop, float(limit)))
    return out


def _document_of(finding: Finding, side: _Side) -> str:
    return side.names.get((finding.file, finding.document), f"#{finding.document + 1}")


def compare(
    base_ref: str,
    paths: Sequence[str],
    context: CheckContext,
    max_capacity_regression: Optional[float] = None,
    fail_on: Optional[str] = None,
    cwd: Optional[Path] = None,
) -> DiffResult:
    """Diff every manifest under paths between base_ref and the working tree."""
    cwd = (cwd or Path.cwd()).resolve()
    root = repository_root(cwd)
    commit = resolve_ref(base_ref, root)
    config = context.config
    pathspecs = _pathspecs(paths, root)
    head_files = _head_files(paths, config, root)

    with tempfile.TemporaryDirectory(prefix="kvlint-diff-") as tmp:
        base_root = Path(tmp, "base").resolve()
        base_root.mkdir()
        no_root = Path(tmp, "no-root").resolve()
        no_root.mkdir()
        # The head's config, re-rooted so exclude and per-file-ignores match the base copies.
        base_config = config
        if config.path is not None:
            try:
                config_relative = config.path.resolve().relative_to(root)
                base_config = replace(config, path=base_root / config_relative)
            except ValueError:
                pass
        base_files = _materialise_base(commit, root, pathspecs, base_root, base_config)
        head = _analyse_side(head_files, context, no_root)
        base = _analyse_side(base_files, replace(context, config=base_config), no_root)

    new, fixed = _new_findings(head, base)
    deployments: List[DeploymentDiff] = []
    keys: List[Tuple[str, str]] = list(head.capacities)
    keys += [k for k in base.capacities if k not in head.capacities]
    keys.sort()
    for file, name in keys:
        old, cur = base.capacities.get((file, name)), head.capacities.get((file, name))
        if old is None:
            status = "added"
        elif cur is None:
            status = "removed"
        elif old == cur:
            status = "unchanged"
        else:
            status = "changed"
        top = name.split("/", 1)[0]
        mine = tuple(f for f in new if f.file == file and _document_of(f, head) == top)
        gone = tuple(f for f in fixed if f.file == file and _document_of(f, base) == top)
        if status == "unchanged" and (mine or gone):
            status = "changed"  # same numbers, different findings (e.g. a backend change)
        regressions = tuple(_regressions(old, cur, max_capacity_regression)) if old and cur else ()
        deployments.append(DeploymentDiff(file, name, status, old, cur, mine, gone, regressions))
    return DiffResult(
        base_ref=base_ref,
        base_commit=commit,
        deployments=deployments,
        new_findings=new,
        fixed_findings=fixed,
        max_capacity_regression=max_capacity_regression,
        fail_on=fail_on or config.fail_on,
        files=sorted(set(head_files) | set(base_files)),
    )
