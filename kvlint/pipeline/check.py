"""The `check` pipeline: files -> documents -> findings, with selection and suppressions applied.

The CLI calls `run_check`; reporters receive its `CheckResult` and never compute anything.
"""

from __future__ import annotations

import fnmatch
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, Iterable, List, Sequence, Set, Tuple

from kvlint.config import Config
from kvlint.findings import Finding, severity_rank
from kvlint.load import Document, LoadedFile, Suppression, load_bytes
from kvlint.rulebook import Rulebook
from kvlint.schema import validate_document

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
_SKIP_DIRS = {".git", ".hg", ".svn", ".venv", "venv", "node_modules", "__pycache__", ".tox", ".nox"}
# When walking a directory, only files that declare a kvlint apiVersion are manifests; model
# config.json files, CI workflows and other YAML beside them are left alone. Files named on the
# command line are always checked.
_MANIFEST_MARKER = re.compile(rb"apiVersion[\"']?\s*:\s*[\"']?kvlint/v[0-9]")

# A semantic analyser: one loaded document -> findings (resolve, rules, capacity gate).
Analyzer = Callable[[Document, "CheckContext"], List[Finding]]


class UsageError(Exception):
    """Bad paths or options: exit 2."""


@dataclass
class CheckContext:
    config: Config
    rulebook: Rulebook
    enabled: Set[str]
    analyzers: Sequence[Analyzer] = ()
    display_root: Path = field(default_factory=Path.cwd)


@dataclass
class CheckResult:
    files: List[LoadedFile]
    findings: List[Finding]
    documents: int

    def count(self, severity: str) -> int:
        return sum(1 for f in self.findings if f.severity == severity)

    def fails(self, fail_on: str) -> bool:
        threshold = severity_rank(fail_on)
        return any(severity_rank(f.severity) >= threshold for f in self.findings)


def _excluded(path: Path, patterns: Sequence[str], root: Path) -> bool:
    if not patterns:
        return False
    try:
        relative = path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        relative = path.as_posix()
    candidates = {relative, path.name, path.as_posix()}
    for pattern in patterns:
        stripped = pattern.rstrip("/")
        for candidate in candidates:
            if fnmatch.fnmatch(candidate, stripped) or fnmatch.fnmatch(candidate, stripped + "/*"):
                return True
            if candidate.startswith(stripped + "/"):
                return True
    return False


def discover_files(paths: Sequence[str], config: Config) -> List[str]:
    """Files to check, in a stable order; `-` stands for stdin."""
    found: List[str] = []
    # The configured rules-dir and catalog-dir hold rule and catalog files, not manifests (a rule
    # file's examples embed manifests): a walk does not enter them.
    data_dirs = {Path(d).resolve() for d in (*config.rules_dirs, *config.catalog_dirs)}
    for raw in paths:
        if raw == "-":
            found.append("-")
            continue
        path = Path(raw)
        if path.is_file():
            found.append(raw)
            continue
        if not path.is_dir():
            raise UsageError(f"{raw}: no such file or directory")
        # A directory named on the command line is checked even when `exclude` matches it (as a
        # file named there is, and as in ruff): `kvlint check examples/broken` shows findings.
        # Patterns that do not match the named directory still prune what lies below it.
        exclude = tuple(p for p in config.exclude if not _excluded(path, (p,), config.root))
        for directory, subdirs, files in os.walk(path):
            subdirs[:] = sorted(
                d
                for d in subdirs
                if d not in _SKIP_DIRS
                and not d.startswith(".")
                and not _excluded(Path(directory) / d, exclude, config.root)
                and (Path(directory) / d).resolve() not in data_dirs
            )
            for name in sorted(files):
                candidate = Path(directory) / name
                if not name.endswith(MANIFEST_SUFFIXES):
                    continue
                if _excluded(candidate, exclude, config.root):
                    continue
                if not _looks_like_manifest(candidate):
                    continue
                found.append(str(candidate))
    # de-duplicate while keeping order
    seen: Set[str] = set()
    return [f for f in found if not (f in seen or seen.add(f))]


def _looks_like_manifest(path: Path) -> bool:
    try:
        with open(path, "rb") as handle:
            head = handle.read(64 * 1024)
    except OSError:
        return True  # let the loader report it
    return bool(_MANIFEST_MARKER.search(head))


def read_input(path: str) -> Tuple[str, bytes]:
    if path == "-":
        return "<stdin>", sys.stdin.buffer.read()
    try:
        with open(path, "rb") as handle:
            return path, handle.read()
    except OSError as exc:
        raise UsageError(f"{path}: {exc.strerror}") from None


def enabled_codes(rulebook: Rulebook, config: Config) -> Tuple[Set[str], List[str]]:
    selected, unknown_select = rulebook.expand(config.select + config.extend_select)
    ignored, unknown_ignore = rulebook.expand(config.ignore)
    return set(selected) - set(ignored), unknown_select + unknown_ignore


def _per_file_ignored(path: str, config: Config, rulebook: Rulebook) -> Set[str]:
    if not config.per_file_ignores or path == "<stdin>":
        return set()
    try:
        relative = Path(path).resolve().relative_to(config.root.resolve()).as_posix()
    except ValueError:
        relative = Path(path).as_posix()
    ignored: Set[str] = set()
    for pattern, selectors in config.per_file_ignores:
        if fnmatch.fnmatch(relative, pattern) or fnmatch.fnmatch(Path(path).name, pattern):
            ignored.update(rulebook.expand(selectors)[0])
    return ignored


def _under(pointer: str, prefixes: Set[str]) -> bool:
    return any(pointer == p or pointer.startswith(p + "/") for p in prefixes)


def analyze_file(loaded: LoadedFile, context: CheckContext) -> List[Finding]:
    findings: List[Finding] = list(loaded.findings)
    for document in loaded.documents:
        # A value kvlint refused to load (custom tag, KV004) reads as null; the schema errors
        # that follow from that are noise beside the KV004 at the same place.
        refused = {
            f.pointer for f in loaded.findings if f.code == "KV004" and f.document == document.index
        }
        schema_findings = validate_document(document)
        if refused:
            schema_findings = [f for f in schema_findings if not _under(f.pointer, refused)]
        findings.extend(schema_findings)
        for analyzer in context.analyzers:
            findings.extend(analyzer(document, context))
    return findings


def apply_suppressions(
    findings: List[Finding], suppressions: Sequence[Suppression], file: str, rulebook: Rulebook
) -> List[Finding]:
    """Drop suppressed findings; report unused (KV901) and unknown-code (KV902) suppressions."""
    if not suppressions:
        return findings
    kept: List[Finding] = []
    used: Set[Tuple[int, str]] = set()
    by_line: Dict[int, List[Tuple[Suppression, Set[str]]]] = {}
    extra: List[Finding] = []
    for suppression in suppressions:
        codes: Set[str] = set()
        for token in suppression.codes:
            rule = rulebook.get(token)
            if rule is None:
                extra.append(
                    Finding(
                        code="KV902",
                        name="",
                        severity="error",
                        message=f"suppression names {token!r}, which is no known rule code or name",
                        file=file,
                        line=suppression.line,
                        column=suppression.column,
                    )
                )
            else:
                codes.add(rule.code)
        by_line.setdefault(suppression.target_line, []).append((suppression, codes))
    for finding in findings:
        suppressed = False
        for suppression, codes in by_line.get(finding.line, ()):
            if finding.code in codes:
                used.add((suppression.line, finding.code))
                suppressed = True
        if not suppressed:
            kept.append(finding)
    for suppression in suppressions:
        for token in suppression.codes:
            rule = rulebook.get(token)
            if rule is not None and (suppression.line, rule.code) not in used:
                extra.append(
                    Finding(
                        code="KV901",
                        name="",
                        severity="warning",
                        message=f"suppression of {rule.code} ({rule.name}) suppressed nothing on "
                        f"line {suppression.target_line}; remove it",
                        file=file,
                        line=suppression.line,
                        column=suppression.column,
                    )
                )
    return kept + extra


def run_check(paths: Sequence[str], context: CheckContext) -> CheckResult:
    files: List[LoadedFile] = []
    all_findings: List[Finding] = []
    documents = 0
    for path in discover_files(paths, context.config):
        display, raw = read_input(path)
        display = _display_path(display, context.display_root)
        loaded = load_bytes(raw, display)
        files.append(loaded)
        documents += len(loaded.documents)
        findings = [context.rulebook.decorate(f) for f in analyze_file(loaded, context)]
        ignored_here = _per_file_ignored(path, context.config, context.rulebook)
        findings = [
            f for f in findings if f.code in context.enabled and f.code not in ignored_here
        ]
        findings = apply_suppressions(findings, loaded.suppressions, display, context.rulebook)
        findings = [
            context.rulebook.decorate(f)
            for f in findings
            if f.code not in ignored_here and (f.code in context.enabled)
        ]
        all_findings.extend(findings)
        # Keep memory flat over thousands of files: reporters need only the source text of
        # files with findings (for the caret excerpt), never the parsed documents.
        loaded.documents = []
        if not findings:
            loaded.text = ""
    all_findings.sort(key=Finding.sort_key)
    return CheckResult(files=files, findings=_dedupe(all_findings), documents=documents)


def _dedupe(findings: Iterable[Finding]) -> List[Finding]:
    seen: Set[tuple] = set()
    out: List[Finding] = []
    for finding in findings:
        key = (finding.file, finding.line, finding.column, finding.code, finding.message)
        if key not in seen:
            seen.add(key)
            out.append(finding)
    return out


def _display_path(path: str, root: Path) -> str:
    if path == "<stdin>":
        return path
    try:
        return Path(path).resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return Path(path).as_posix()
