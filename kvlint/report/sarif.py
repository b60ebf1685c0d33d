"""`--output-format sarif`: SARIF 2.1.0 as GitHub code scanning accepts it."""

from __future__ import annotations

from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any, Dict, List
from urllib.parse import quote

from kvlint.text import json_text

from kvlint import __version__
from kvlint.rulebook import Rulebook

if TYPE_CHECKING:  # type-only: the reporters must not load the pipeline they report on
    from kvlint.pipeline.check import CheckResult

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_LEVEL = {"error": "error", "warning": "warning", "info": "note"}


def _rule_descriptor(rule) -> Dict[str, Any]:
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": " ".join(rule.rationale.split())},
        "help": {
            "text": " ".join(rule.remediation.split()),
            "markdown": rule.remediation,
        },
        "helpUri": rule.url,
        "defaultConfiguration": {"level": _LEVEL[rule.severity]},
        "properties": {"tags": ["kvlint", rule.code[:3]]},
    }


def artifact_location(file: str) -> Dict[str, Any]:
    """Relative paths stay relative to %SRCROOT% (what code scanning expects); a file outside the
    directory kvlint ran in gets an absolute file:// URI; stdin gets its display name."""
    path = PurePath(file)
    if path.is_absolute():
        return {"uri": Path(file).as_uri()}
    # A relative URI reference (RFC 3986): spaces, `%`, `#`, `?` and non-ASCII are percent-encoded.
    return {"uri": quote(path.as_posix(), safe="/"), "uriBaseId": "%SRCROOT%"}


def format_sarif(result: CheckResult, rulebook: Rulebook) -> str:
    # Only the rules that fired, in the rulebook's order: every rule's full text would make a
    # report of two findings some 150 KB (code scanning needs a descriptor per ruleId, no more).
    fired = {finding.code for finding in result.findings}
    rules = [rule for rule in rulebook if rule.code in fired]
    index = {rule.code: i for i, rule in enumerate(rules)}
    results: List[Dict[str, Any]] = []
    for finding in result.findings:
        region: Dict[str, Any] = {"startLine": finding.line, "startColumn": finding.column}
        if finding.end_line:
            region["endLine"] = finding.end_line
            if finding.end_column:
                region["endColumn"] = finding.end_column
        entry: Dict[str, Any] = {
            "ruleId": finding.code,
            "level": _LEVEL[finding.severity],
            "message": {"text": finding.message},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": artifact_location(finding.file),
                        "region": region,
                    }
                }
            ],
            "partialFingerprints": {
                "kvlint/v1": f"{finding.code}:{finding.file}:{finding.pointer}",
            },
        }
        if finding.code in index:
            entry["ruleIndex"] = index[finding.code]
        results.append(entry)
    document = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "kvlint",
                        "version": __version__,
                        "semanticVersion": __version__,
                        "informationUri": "https://github.com/kvlint/kvlint",
                        "rules": [_rule_descriptor(rule) for rule in rules],
                    }
                },
                "originalUriBaseIds": {"%SRCROOT%": {"description": {"text": "The directory kvlint ran in."}}},
                "results": results,
            }
        ],
    }
    return json_text(document) + "\n"
