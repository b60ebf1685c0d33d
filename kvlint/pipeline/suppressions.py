"""Suppression comments: drop the findings they name; report the unused (KV901) and unknown (KV902)."""

from __future__ import annotations

from typing import Dict, List, Sequence, Set, Tuple

from kvlint.findings import Finding
from kvlint.load import Suppression
from kvlint.rulebook import Rulebook


def apply_suppressions(
    findings: List[Finding], suppressions: Sequence[Suppression], file: str, rulebook: Rulebook
) -> List[Finding]:
    """Drop suppressed findings; report unused (KV901) and unknown-code (KV902) suppressions."""
    if not suppressions:
        return findings
    whole_file = [s for s in suppressions if s.whole_file]
    if whole_file:
        lines = [s for s in suppressions if not s.whole_file]
        return _apply_whole_file(apply_suppressions(findings, lines, file, rulebook), whole_file, file, rulebook)
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


def _apply_whole_file(
    findings: List[Finding], suppressions: Sequence[Suppression], file: str, rulebook: Rulebook
) -> List[Finding]:
    """`# kvlint: ignore-file[...]`: drop the findings of the codes it names anywhere in the file
    (after the per-line suppressions, whose own KV901/KV902 it may name too); each selector
    (code, prefix, name, ALL) that drops nothing is a KV901, an unknown one a KV902."""
    selectors: List[Tuple[Suppression, str, Set[str]]] = []
    extra: List[Finding] = []
    for suppression in suppressions:
        for token in suppression.codes:
            codes, unknown = rulebook.expand([token])
            if unknown:
                extra.append(Finding(
                    code="KV902", name="", severity="error", file=file, line=suppression.line,
                    column=suppression.column,
                    message=f"suppression names {token!r}, which is no known rule code, prefix or name",
                ))
            else:
                selectors.append((suppression, token, set(codes)))
    used: Set[Tuple[int, str]] = set()
    kept: List[Finding] = []
    for finding in findings:
        hits = [(s.line, token) for s, token, codes in selectors if finding.code in codes]
        used.update(hits)
        if not hits:
            kept.append(finding)
    for suppression, token, _codes in selectors:
        if (suppression.line, token) not in used:
            rule = rulebook.get(token)
            what = f"{rule.code} ({rule.name})" if rule is not None else ("every rule" if token.upper() == "ALL" else token)
            extra.append(Finding(
                code="KV901", name="", severity="warning", file=file, line=suppression.line,
                column=suppression.column,
                message=f"whole-file suppression of {what} suppressed nothing in this file; remove it",
            ))
    return kept + extra
