"""`kvlint plan`'s report: text, Markdown (with a Mermaid capacity chart GitHub renders) or JSON."""

from __future__ import annotations

from typing import Any, List, Optional

from kvlint.text import aligned_table, markdown_cell

PLAN_FORMATS = ("text", "markdown", "json")


def _tokens(outcome: Any) -> str:
    if outcome.tokens is None:
        return "unknown"
    band = outcome.capacity.get("band")
    if isinstance(band, dict):
        return f"{outcome.tokens:,} ({band['tokens_low']:,}..{band['tokens_high']:,})"
    return f"{outcome.tokens:,}"


def _concurrency(outcome: Any) -> str:
    return f"{outcome.concurrency:.2f}" if outcome.concurrency is not None else "unknown"


def _meets(outcome: Any) -> str:
    return {"yes": "yes", "band": "within band", "no": "no", None: "-"}[outcome.meets]


def _rows(result: Any) -> List[List[str]]:
    rows = []
    if result.baseline is not None:
        b = result.baseline
        if b.errors:
            rows.append(["baseline", b.candidate.label(), "-", "-", "-", "-",
                         "fails: " + ", ".join(sorted({c for c, _, _ in b.errors}))])
        else:
            rows.append(["baseline", b.candidate.label(), _tokens(b), _concurrency(b), _meets(b), str(b.risk),
                         "; ".join(b.risk_reasons) or "-"])
    for i, (outcome, why) in enumerate(zip(result.front, result.reasons()), 1):
        rows.append([str(i), outcome.candidate.label(), _tokens(outcome), _concurrency(outcome), _meets(outcome),
                     str(outcome.risk), why + ("; risk: " + ", ".join(outcome.risk_reasons) if outcome.risk_reasons else "")])
    return rows


HEADERS = ["#", "configuration", "KV tokens (band)", "max concurrency", "meets targets", "risk", "why"]


def _summary(result: Any) -> str:
    targets = result.targets
    wanted = [f"context {targets.context:,}" if targets.context else None,
              f"concurrency {targets.concurrency:g}" if targets.concurrency is not None else None,
              f"KV tokens {targets.kv_tokens:,}" if targets.kv_tokens is not None else None]
    wanted_text = ", ".join(w for w in wanted if w) or "none"
    return (f"{result.engine} {result.release}: {result.considered:,} candidates, {result.evaluated:,} judged by "
            f"kvlint check's rules and capacity model, {len(result.kept):,} pass"
            + (f" ({result.unranked:,} more pass with an unknown capacity)" if result.unranked else "")
            + f"; targets: {wanted_text}")


def _excluded_lines(result: Any) -> List[str]:
    lines = []
    for item in result.excluded:
        share = ""
        if "candidates" in item:
            share = f" ({item['candidates']} candidates"
            share += f", {item['share']:.0%} for this reason)" if item.get("share", 1) < 1 else ")"
        lines.append(f"{item['family']}: [{item['code']}] {item['reason']}{share}")
    return lines


def render_text(result: Any, emitted: Optional[str] = None, emitted_to: Optional[str] = None) -> str:
    out = [f"kvlint plan: {_summary(result)}", ""]
    if result.unknown_capacity:
        out.append(f"capacity unknown, not ranked: {result.unknown_capacity}")
    elif not result.front:
        out.append("no configuration passes: every candidate has an error (excluded families below)")
    if result.front or result.baseline is not None:
        out.extend(aligned_table(HEADERS, _rows(result)))
    out.extend(f"note: {n}" for n in result.notes)
    if result.excluded:
        out.extend(["", "excluded:"])
        out.extend(f"  {line}" for line in _excluded_lines(result))
    if emitted_to:
        out.extend(["", f"wrote {emitted_to}"])
    elif emitted:
        out.extend(["", emitted.rstrip("\n")])
    return "\n".join(out) + "\n"


def mermaid_chart(result: Any) -> str:
    """A Mermaid `xychart-beta` bar chart of KV tokens for the baseline and each Pareto row."""
    labels: List[str] = []
    values: List[int] = []
    if result.baseline is not None and result.baseline.tokens is not None and not result.baseline.errors:
        labels.append("baseline")
        values.append(result.baseline.tokens)
    for i, outcome in enumerate(result.front, 1):
        labels.append(f"#{i}")
        values.append(outcome.tokens or 0)
    if not values:
        return ""
    top = max(values)
    return "\n".join([
        "```mermaid",
        "xychart-beta",
        '    title "KV tokens per configuration"',
        "    x-axis [" + ", ".join(f'"{label}"' for label in labels) + "]",
        f'    y-axis "KV tokens" 0 --> {int(top * 1.1) + 1}',
        "    bar [" + ", ".join(str(v) for v in values) + "]",
        "```",
    ])


def render_markdown(result: Any, emitted: Optional[str] = None, emitted_to: Optional[str] = None) -> str:
    out = ["## kvlint plan", "", markdown_cell(_summary(result)), ""]
    if result.unknown_capacity:
        out.extend([f"**Capacity unknown, not ranked:** {markdown_cell(result.unknown_capacity)}", ""])
    elif not result.front:
        out.extend(["**No configuration passes:** every candidate has an error (excluded families below).", ""])
    rows = _rows(result)
    if rows:
        out.append("| " + " | ".join(HEADERS) + " |")
        out.append("|" + "---|" * len(HEADERS))
        out.extend("| " + " | ".join(markdown_cell(cell) for cell in row) + " |" for row in rows)
        out.append("")
    chart = mermaid_chart(result)
    if chart:
        out.extend([chart, ""])
    for note in result.notes:
        out.append(f"- {markdown_cell(note)}")
    if result.excluded:
        out.extend(["", "### Excluded", ""])
        out.extend(f"- {markdown_cell(line)}" for line in _excluded_lines(result))
    if emitted_to:
        out.extend(["", f"Wrote `{emitted_to}`."])
    elif emitted:
        out.extend(["", "### Chosen configuration", "", "```", emitted.rstrip("\n"), "```"])
    return "\n".join(out) + "\n"
