"""The `check` pipeline: files -> documents -> findings, with selection and suppressions applied.

Commands call `run_check`; reporters receive its `CheckResult` and never compute anything.
"""

from __future__ import annotations

from typing import Callable, Dict, Iterable, List, Optional, Sequence, Set

from kvlint import pointer as json_pointer
from kvlint.analysis import CheckContext
from kvlint.config import Config, ConfigResolver
from kvlint.findings import COULD_NOT_RUN, Finding, severity_rank
from kvlint.load import InputError, LoadedFile, read_input, unreadable
from kvlint.pipeline.discovery import LinkOut, discover_files, display_path
from kvlint.pipeline.documents import analyze_document
from kvlint.records import dataclass
from kvlint.pipeline.native import (
    CAPACITY_GATE,
    NativeFile,
    covered_by_missing,
    given_despite_unread,
    load_source,
    native_terms,
)
from kvlint.pipeline.selection import per_file_ignored
from kvlint.pipeline.suppressions import apply_suppressions
from kvlint.rulebook import Rulebook
from kvlint.schema import validate_document

__all__ = ["CheckContext", "CheckResult", "Contexts", "analyze_file", "run_check"]


@dataclass
class CheckResult:
    """What a check of some files found: the files checked (those with an engine workload or a
    finding), the findings, and how many documents (engine workloads: kvlint manifests and the
    workloads of native files)."""

    files: List[LoadedFile]
    findings: List[Finding]
    documents: int

    def count(self, severity: str) -> int:
        return sum(1 for f in self.findings if f.severity == severity)

    def fails(self, fail_on: str, strict: bool = False) -> bool:
        threshold = severity_rank(fail_on)
        return any(severity_rank(f.severity) >= threshold for f in self.findings) or bool(
            strict and self.could_not_run()
        )

    def could_not_run(self) -> List[Finding]:
        """The findings that say a check could not run (COULD_NOT_RUN), for `--strict`."""
        return [f for f in self.findings if f.code in COULD_NOT_RUN]


def analyze_file(loaded: LoadedFile, context: CheckContext, source: Optional[NativeFile] = None) -> List[Finding]:
    """Every finding of one file. For a native file (`source`), its adapters' findings too, and
    the schema findings a missing fact would cause are left to that fact's KV207."""
    findings: List[Finding] = list(loaded.findings)
    if source is not None:
        findings.extend(source.findings)
    for document in loaded.documents:
        # A value kvlint refused to load (custom tag, KV004) reads as null; the schema errors
        # that follow from that are noise beside the KV004 at the same place.
        refused = {
            f.pointer for f in loaded.findings if f.code == "KV004" and f.document == document.index
        }
        schema_findings = validate_document(document)
        if refused:
            schema_findings = [f for f in schema_findings if not any(json_pointer.under(f.pointer, p) for p in refused)]
        semantic = analyze_document(document, context).findings
        missing = source.missing.get(document.index, ()) if source is not None else ()
        if missing:
            schema_findings = [f for f in schema_findings if not covered_by_missing(f, missing)]
            semantic = [f for f in semantic if not covered_by_missing(f, missing)]
        if source is not None and document.index in source.unread:
            semantic = [f for f in semantic if given_despite_unread(f, source.provenance.get(document.index, {}))]
        if source is not None and document.index in source.unresolved_parallelism:
            # `--tensor-parallel-size=$TP` unresolved: read as 1 it would divide nothing, so the
            # capacity gate would judge the whole model on one GPU; its KV208 says the size is unknown
            semantic = [f for f in semantic if f.code not in CAPACITY_GATE]
        if source is not None:
            provenance = source.provenance.get(document.index, {})
            semantic = [native_terms(f, document, provenance) for f in semantic]
        findings.extend(schema_findings)
        findings.extend(semantic)
    return findings


class Contexts:
    """The check context of each file: its nearest configuration (kvlint.config.ConfigResolver)
    with the rulebook and rule selection built from it (`build`), once per configuration."""

    def __init__(self, resolver: ConfigResolver, build: Callable[[Config], CheckContext], base: CheckContext):
        self.resolver = resolver
        self._build = build
        self._by_config: Dict[Config, CheckContext] = {base.config: base}
        self.base = base

    def for_path(self, path: str) -> CheckContext:
        return self.of(self.resolver.for_path(path))

    def of(self, config: Config) -> CheckContext:
        if config not in self._by_config:
            self._by_config[config] = self._build(config)
        return self._by_config[config]

    def rulebook(self) -> Rulebook:
        """Every rule of the run (the built-in rules and each configuration's organisation
        rules), for the reporters: the first definition of a code wins."""
        books = [context.rulebook for context in self._by_config.values()]
        if len({id(book) for book in books}) == 1:
            return books[0]
        merged = Rulebook()
        for book in books:
            for rule in book:
                if rule.code not in merged.rules and rule.name not in merged.by_name:
                    merged.add(rule)
        return merged


def run_check(paths: Sequence[str], context: CheckContext, contexts: Optional[Contexts] = None) -> CheckResult:
    """Check the files under paths: each with its own context from `contexts` (per-file nearest
    configuration), or all with `context`."""
    files: List[LoadedFile] = []
    all_findings: List[Finding] = []
    documents = 0
    base_context = context
    configs = (lambda directory: contexts.resolver.for_directory(directory)) if contexts is not None else None
    for path in discover_files(paths, base_context.config, configs):
        context = contexts.for_path(path) if contexts is not None else base_context
        try:
            display, raw = read_input(path)
        except InputError as error:  # unreadable, vanished, a FIFO or device: KV006, the run goes on
            display = display_path(str(path), context.display_root)
            source = NativeFile(format="kvlint", loaded=unreadable(display, error.message, isinstance(path, LinkOut)))
        else:
            display = display_path(display, context.display_root)
            source = load_source(raw, display, path, context.config)
        loaded = source.loaded
        native = source if source.format != "kvlint" else None
        if native is not None:
            loaded.documents = source.documents  # the engine workloads only, not Services or ConfigMaps
        workloads = len(loaded.documents)
        documents += workloads
        findings = [context.rulebook.decorate(f) for f in analyze_file(loaded, context, native)]
        ignored_here = per_file_ignored(path, context.config, context.rulebook)
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
        # A checked file holds a workload or a finding: a Kubernetes file of Services and
        # ConfigMaps only, met in a walk, was looked at but has nothing kvlint checks.
        if workloads or findings:
            files.append(loaded)
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
