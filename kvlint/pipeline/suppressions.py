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
