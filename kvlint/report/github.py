"""`--output-format github`: workflow-command annotations plus a Markdown job summary.

GitHub shows at most 10 error and 10 warning annotations per step, so the output says how many
more there are, and the job summary lists every finding.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, List

from kvlint.text import markdown_cell, printable

from kvlint.findings import Finding
from kvlint.report.text import summary_line

if TYPE_CHECKING:  # type-only: the reporters must not load the pipeline they report on
    from kvlint.pipeline.check import CheckResult

ANNOTATION_LIMIT = 10  # per severity level and step (docs.github.com, workflow commands)
_LEVEL = {"error": "error", "warning": "warning", "info": "notice"}


def escape_data(value: str) -> str:
    """A workflow command's message (as @actions/core escapes it): `%`, CR and LF encoded, so
    input can never end the command's line and start another; other control characters are
    shown as escapes (kvlint.text.printable) so they reach no terminal."""
    value = value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return printable(value)


def escape_property(value: str) -> str:
    """A workflow command's property value: also `:` and `,`, which end a property."""
    return escape_data(value).replace(":", "%3A").replace(",", "%2C")


def annotation(finding: Finding) -> str:
    props = [
        f"file={escape_property(finding.file)}",
        f"line={finding.line}",
        f"col={finding.column}",
    ]
    if finding.end_line:
        props.append(f"endLine={finding.end_line}")
    if finding.end_column and finding.end_line == finding.line:
        props.append(f"endColumn={finding.end_column}")
    props.append(f"title={escape_property(f'{finding.code} {finding.name}')}")
    return f"::{_LEVEL[finding.severity]} {','.join(props)}::{escape_data(finding.message)}"


def format_github(result: CheckResult, rulebook: object = None) -> str:
    lines: List[str] = []
    shown = {"error": 0, "warning": 0, "notice": 0}
    hidden = {"error": 0, "warning": 0, "notice": 0}
    for finding in result.findings:
        level = _LEVEL[finding.severity]
        lines.append(annotation(finding))
        if shown[level] < ANNOTATION_LIMIT:
            shown[level] += 1
        else:
            hidden[level] += 1
    for level, count in hidden.items():
        if count:
            lines.append(
                f"::notice title=kvlint::GitHub shows only {ANNOTATION_LIMIT} {level} annotations "
                f"per step; {count} more {level}s are listed in the job summary"
            )
    lines.append(summary_line(result))
    return "\n".join(lines) + "\n"



def markdown_summary(result: CheckResult) -> str:
    out = ["## kvlint", "", summary_line(result), ""]
    if result.findings:
        out += ["| severity | location | rule | message |", "|---|---|---|---|"]
        for f in result.findings:
            out.append(
                f"| {f.severity} | `{markdown_cell(f.file)}:{f.line}:{f.column}` | "
                f"[{f.code}]({f.url}) {f.name} | {markdown_cell(f.message)} |"
            )
        out.append("")
    return "\n".join(out) + "\n"
