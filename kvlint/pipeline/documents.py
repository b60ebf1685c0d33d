"""One document -> its analyses and findings, for both manifest kinds, in one place.

`check`, `capacity`, `smoke` and `diff` all go through `analyses_of` / `analyze_document`, so a
`kind: Ablation` is expanded into its variants the same way everywhere.
"""

from __future__ import annotations

from dataclasses import field, replace
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

from kvlint.records import dataclass
from kvlint.analysis import (
    API_VERSION,
    Analysis,
    CheckContext,
    analyze_deployment,
    findings_from_facts,
    manifest_kind,
    manifest_path,
)
from kvlint.config import Config
from kvlint.findings import Finding
from kvlint.load import Document, InputError, read_input, unreadable
from kvlint.pipeline.discovery import LinkOut, discover_files, display_path
from kvlint.pipeline.native import covered_by_missing, load_source
from kvlint.pipeline.paths import contain_paths, path_problem
from kvlint.schema import finite_only, non_finite, validate_document
from kvlint.text import printable

def _finite(document: Document) -> Document:
    """The document as the semantic stages see it: NaN and infinities (KV106 in the schema
    stage) read as unknown values."""
    if not non_finite(document.data):
        return document
    return replace(document, data=finite_only(document.data))


@dataclass
class DocumentAnalysis:
    """The findings of one document's analysis."""

    findings: List[Finding] = field(default_factory=list)


def analyze_document(document: Document, context: CheckContext) -> DocumentAnalysis:
    """Resolve, capacity and rule findings of one loaded document (schema findings come first,
    from the check loop)."""
    document = _finite(document)
    kind = manifest_kind(document.data)
    if kind not in ("Ablation", "Deployment"):
        return DocumentAnalysis()
    document, outside = contain_paths(document, context.config, manifest_path(document))
    if kind == "Ablation":
        # Imported on use (start-up time): most runs hold no ablation.
        from kvlint.ablation.check import analyze_ablation

        return DocumentAnalysis(outside + analyze_ablation(document, context, _path_check(context.config)))
    config = context.config
    analysis = analyze_deployment(
        document.data, document.file, manifest_path(document), config.catalog_dirs, config.max_scale_overhead
    )
    return DocumentAnalysis(outside + findings_from_facts(analysis.facts, document, context))


def _path_check(config: Config):
    """path_problem with this run's configuration: how an ablation checks its base file's paths."""
    return lambda written, manifest: path_problem(written, manifest, config)


def analyses_of(document: Document, config: Config, file: Optional[str] = None, path: Optional[Path] = None,
                problems: Optional[List[Finding]] = None) -> List[Analysis]:
    """Capacity analyses of one document: one per Deployment, one per ablation variant in order.

    `file` names the document in the analyses (default: the document's own name) and `path` is
    where relative `model.config` paths resolve from (default: the document's file). A path an
    ablation's base file names outside the project is added to `problems` (KV209)."""
    document = _finite(document)
    document, _ = contain_paths(document, config, path if path is not None else manifest_path(document))
    kind = manifest_kind(document.data)
    if kind == "Ablation":
        from kvlint.ablation.check import expand_for_capacity  # on use, as above

        return expand_for_capacity(document, config, _path_check(config), problems)
    if kind != "Deployment":
        return []
    return [
        analyze_deployment(
            document.data,
            file if file is not None else document.file,
            path if path is not None else manifest_path(document),
            config.catalog_dirs,
            config.max_scale_overhead,
        )
    ]


def _unreadable_model_files(analyses: Sequence[Analysis], document: Document) -> List[str]:
    """KV211 for each model file the document names that could not be read: a stated fact fails
    `kvlint capacity` as it fails `kvlint check` (docs/security.md), even when the catalog stands in."""
    seen: List[str] = []
    for analysis in analyses:
        message = (analysis.facts.get("model") or {}).get("config_unreadable")
        if message and message not in seen:
            seen.append(message)
    return [Finding(code="KV211", name="", severity="error", file=document.file, pointer="/model/config",
                    document=document.index, message=message).with_location(document.span("/model/config")).one_line()
            for message in seen]


def deployment_analyses(paths: Sequence[str], config: Config) -> Tuple[List[Analysis], List[str]]:
    """(analyses, problems) for every manifest under paths, for `kvlint capacity` and `smoke`.

    The figures still come out for a document with schema errors (resolve reads invalid values
    as unknown), but each such error is a one-line problem, so the command exits 1; `kvlint
    check` explains them in full."""
    analyses: List[Analysis] = []
    problems: List[str] = []
    for path in discover_files(list(paths), config):
        try:
            display, raw = read_input(path)
        except InputError as error:
            if isinstance(path, LinkOut):  # a link out of the walked tree: not read, not a problem
                continue
            problems.append(unreadable(display_path(str(path), Path.cwd()), error.message).findings[0].one_line())
            continue
        source = load_source(raw, display_path(display, Path.cwd()), path, config)
        loaded = source.loaded
        for finding in loaded.findings:
            if finding.code in ("KV001", "KV004"):
                problems.append(finding.one_line())
        for document in source.documents if source.format != "kvlint" else loaded.documents:
            if not isinstance(document.data, dict) or document.data.get("apiVersion") != API_VERSION:
                continue
            missing = source.missing.get(document.index, ())
            problems.extend(f.one_line() for f in validate_document(document) if not covered_by_missing(f, missing))
            problems.extend(f.one_line() for f in contain_paths(document, config, manifest_path(document))[1])
            outside: List[Finding] = []
            found = analyses_of(document, config, problems=outside)
            analyses.extend(found)
            problems.extend(f.one_line() for f in outside)
            problems.extend(_unreadable_model_files(found, document))
    return analyses, [printable(problem) for problem in problems]  # lines for stderr: input escaped
