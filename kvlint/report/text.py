"""`full` and `concise` output, in the spirit of ruff's."""

from __future__ import annotations

from typing import TYPE_CHECKING, Dict, List, Optional, Sequence

from kvlint.findings import Finding
from kvlint.rulebook import Rulebook
from kvlint.text import escape_char, printable, safe_line

if TYPE_CHECKING:  # type-only: the reporters must not load the pipeline they report on
    from kvlint.pipeline.check import CheckResult


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def summary_line(result: CheckResult) -> str:
    if not result.findings:
        return (
            f"All checks passed ({_plural(result.documents, 'document')} in "
            f"{_plural(len(result.files), 'file')})."
        )
    parts = [
        _plural(result.count("error"), "error"),
        _plural(result.count("warning"), "warning"),
        _plural(result.count("info"), "info"),
    ]
    return (
        f"Found {', '.join(parts)} in {_plural(len(result.files), 'file')} "
        f"({_plural(result.documents, 'document')})."
    )


def format_concise(result: CheckResult, rulebook: Optional[Rulebook] = None) -> str:
    lines = [
        safe_line(f"{printable(f.file)}:{f.line}:{f.column}: {f.code} [{f.severity}] {printable(f.message)}")
        for f in result.findings
    ]
    lines.append(summary_line(result))
    return "\n".join(lines) + "\n"


EXCERPT_WIDTH = 120  # source characters shown around the caret; a longer line is cut, with "…"


def _shown(char: str) -> str:
    return " " if char == "\t" else escape_char(char)


def _source_excerpt(finding: Finding, source: List[str]) -> List[str]:
    """The finding's source line with a caret under it. Input is echoed escaped (control
    characters, bidi overrides), and a long line is cut to EXCERPT_WIDTH characters around the
    caret, so a minified one-line file cannot flood the output."""
    if not source or finding.line < 1 or finding.line > len(source):
        return []
    raw = source[finding.line - 1].rstrip("\n")
    gutter = len(str(finding.line))
    start = min(max(finding.column - 1, 0), len(raw))
    width = 1
    if finding.end_line == finding.line and finding.end_column and finding.end_column > finding.column:
        width = finding.end_column - finding.column
    width = max(1, min(width, max(1, len(raw) - start)))
    low, high = 0, len(raw)
    if len(raw) > EXCERPT_WIDTH:
        low = max(0, min(start - EXCERPT_WIDTH // 3, len(raw) - EXCERPT_WIDTH))
        high = low + EXCERPT_WIDTH
        width = max(1, min(width, high - start))
    before = ("…" if low else "") + "".join(_shown(c) for c in raw[low:start])
    marked = "".join(_shown(c) for c in raw[start:start + width])
    after = "".join(_shown(c) for c in raw[start + width:high]) + ("…" if high < len(raw) else "")
    pad = " " * gutter
    return [
        f"{pad} |",
        f"{finding.line} | {before}{marked}{after}",
        f"{pad} | {' ' * len(before)}{'^' * max(1, len(marked))}",
    ]


def format_full(result: CheckResult, rulebook: Rulebook) -> str:
    sources: Dict[str, List[str]] = {loaded.path: loaded.lines for loaded in result.files}
    blocks: List[str] = []
    for finding in result.findings:
        block = [
            safe_line(f"{printable(finding.file)}:{finding.line}:{finding.column}: {finding.code} "
                      f"[{finding.severity}] {finding.name}: {printable(finding.message)}")
        ]
        block.extend(_source_excerpt(finding, sources.get(finding.file, [])))
        for related in finding.related:
            block.append(f"  = note: {printable(related.message)} at line {related.line}, column {related.column}")
        rule = rulebook.get(finding.code)
        if rule is not None:
            help_text = " ".join(rule.remediation.split())
            block.append(f"  = help: {help_text}")
            block.append(f"  = docs: {rule.url}")
        blocks.append("\n".join(block))
    blocks.append(summary_line(result))
    return "\n\n".join(blocks) + "\n"


def format_rules_table(rules: Sequence, fmt: str = "text") -> str:
    lines = [f"{'code':<7} {'severity':<8} {'name':<40} summary"]
    for rule in rules:
        lines.append(f"{rule.code:<7} {rule.severity:<8} {rule.name:<40} {rule.summary}")
    return "\n".join(lines) + "\n"


def format_rule_doc(rule, heading: Optional[str] = None) -> str:
    """One rule's documentation as Markdown (used by `kvlint rule` and docs/rules/)."""
    lines = [
        f"# {rule.code} {rule.name}",
        "",
        f"**Severity:** {rule.severity}  ",
    ]
    if rule.engines or rule.versions:
        engines = ", ".join(rule.engines) if rule.engines else "all engines"
        versions = f" {rule.versions}" if rule.versions else ""
        lines.append(f"**Applies to:** {engines}{versions}  ")
    lines += ["", rule.summary, "", "## Why", "", rule.rationale, "", "## How to fix", "", rule.remediation, ""]
    if rule.examples:
        for example in rule.examples:
            title = "Fails" if example.get("failing") else "Passes"
            lines += [f"## Example: {title.lower()}", "", "```yaml", example["manifest"].rstrip("\n"), "```", ""]
    lines += ["## Sources", ""]
    for source in rule.sources:
        if "url" in source:
            item = source["url"]
        else:
            item = f"`{source['repo']}` `{source['path']}` @ {source['release']}"
        if source.get("note"):
            item += f" — {source['note']}"
        lines.append(f"- {item}")
    return "\n".join(lines) + "\n"
