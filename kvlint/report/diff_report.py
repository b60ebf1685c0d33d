"""Formatters for `kvlint diff`: text (terminal), Markdown (job summary, PR comment), JSON.

They only format a `DiffResult`; the comparison and the gate decision live in kvlint/diff.py.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from kvlint.text import json_text, markdown_cell, printable, printable_block

from kvlint.diff.compare import DeploymentDiff, DiffResult
from kvlint.findings import Finding

_METRICS = (
    ("per_token_bytes", "per-token bytes"),
    ("kv_cache_tokens", "KV tokens"),
    ("max_concurrency", "max concurrency"),
)
_LABEL = dict(_METRICS)


def _number(metric: str, value: Optional[float]) -> str:
    if value is None:
        return "-"
    if metric == "max_concurrency":
        return f"{value:,.2f}x"
    return f"{int(value):,}"


def _pct(value: Optional[float]) -> str:
    if value is None:
        return ""
    return f"{value:+.1f}%"


def _figure(deployment: DeploymentDiff, metric: str) -> str:
    old = getattr(deployment.base, metric, None) if deployment.base else None
    new = getattr(deployment.head, metric, None) if deployment.head else None
    if deployment.base is None:
        return _number(metric, new)
    if deployment.head is None:
        return f"{_number(metric, old)} -> removed"
    text = f"{_number(metric, old)} -> {_number(metric, new)}"
    pct = deployment.change_pct(metric)
    if pct is not None and old != new:
        text += f" ({_pct(pct)})"
    return text


def _finding_line(finding: Finding) -> str:
    return (f"{printable(finding.file)}:{finding.line}:{finding.column}: {finding.code} [{finding.severity}] "
            f"{finding.name}: {printable(finding.message)}")


def _base_label(result: DiffResult) -> str:
    if result.base_commit is None:
        return f"{result.base_ref} (no commits yet)"
    return f"{result.base_ref} ({result.base_commit[:12]})"


def _verdict(result: DiffResult) -> str:
    reasons: List[str] = []
    failing = result.failing_findings()
    if failing:
        codes = sorted({f"{f.code} {f.name}" for f in failing})
        reasons.append(f"{len(failing)} new finding(s) at or above {result.fail_on} ({', '.join(codes)})")
    for deployment, regression in result.regressions:
        reasons.append(
            f"{deployment.name}: {_LABEL[regression.metric]} dropped {regression.drop_pct:.1f}% "
            f"({_number(regression.metric, regression.base)} -> {_number(regression.metric, regression.head)}), "
            f"above max-capacity-regression {regression.limit_pct:g}%"
        )
    if reasons:
        return "Gate failed: " + "; ".join(reasons) + "."
    limit = result.max_capacity_regression
    gate = f"no capacity drop above {limit:g}%" if limit is not None else "no capacity limit set"
    return f"Gate passed: no new findings at or above {result.fail_on}; {gate}."


def _unattached(result: DiffResult) -> List[Finding]:
    attached = {id(f) for d in result.deployments for f in d.new_findings}
    return [f for f in result.new_findings if id(f) not in attached]


# --- text ------------------------------------------------------------------------------------


def format_text(result: DiffResult) -> str:
    shown = [d for d in result.deployments if d.status != "unchanged"]
    unchanged = len(result.deployments) - len(shown)
    out = [f"kvlint diff: {_base_label(result)} -> working tree ({len(result.files)} manifest file(s))", ""]
    for deployment in shown:
        out.append(f"{printable(deployment.file)}: {printable(deployment.name)} [{deployment.status}]")
        for metric, label in _METRICS:
            out.append(f"  {label:<16} {_figure(deployment, metric)}")
        old_len = deployment.base.max_model_len if deployment.base else None
        new_len = deployment.head.max_model_len if deployment.head else None
        if deployment.base and deployment.head and old_len != new_len:
            out.append(f"  {'max_model_len':<16} {_number('max_model_len', old_len)} -> {_number('max_model_len', new_len)}")
        for finding in deployment.new_findings:
            out.append(f"  new: {_finding_line(finding)}")
        for finding in deployment.fixed_findings:
            out.append(f"  fixed: {finding.code} [{finding.severity}] {finding.name}")
        for regression in deployment.regressions:
            out.append(
                f"  FAIL: {_LABEL[regression.metric]} dropped {regression.drop_pct:.1f}% "
                f"(limit {regression.limit_pct:g}%)"
            )
        out.append("")
    if not shown:
        out += ["No deployment changed.", ""]
    elif unchanged:
        out += [f"{unchanged} deployment(s) unchanged.", ""]
    others = _unattached(result)
    if others:
        out.append("New findings outside a compared deployment:")
        out += [f"  {_finding_line(f)}" for f in others]
        out.append("")
    out.append(_verdict(result))
    return printable_block("\n".join(out) + "\n")


# --- Markdown --------------------------------------------------------------------------------



def _md_figure(deployment: DeploymentDiff, metric: str) -> str:
    text = _figure(deployment, metric).replace(" -> ", " → ")
    if any(r.metric == metric for r in deployment.regressions):
        text = f"**{text}**"
    return text


def _severity_counts(findings) -> str:
    counts: Dict[str, int] = {}
    for finding in findings:
        counts[finding.severity] = counts.get(finding.severity, 0) + 1
    return ", ".join(f"{n} {s}{'s' if n != 1 else ''}" for s, n in sorted(counts.items())) or "none"


def format_markdown(result: DiffResult) -> str:
    shown = [d for d in result.deployments if d.status != "unchanged"]
    unchanged = len(result.deployments) - len(shown)
    verdict = _verdict(result)
    icon = ":x:" if result.fails() else ":white_check_mark:"
    out = [f"## kvlint capacity diff against `{markdown_cell(_base_label(result))}`", "", f"{icon} {markdown_cell(verdict)}", ""]
    if shown:
        out += [
            "| deployment | file | status | per-token bytes | KV tokens | max concurrency | new findings |",
            "|---|---|---|---|---|---|---|",
        ]
        for d in shown:
            out.append(
                f"| `{markdown_cell(d.name)}` | `{markdown_cell(d.file)}` | {d.status} | {_md_figure(d, 'per_token_bytes')} | "
                f"{_md_figure(d, 'kv_cache_tokens')} | {_md_figure(d, 'max_concurrency')} | "
                f"{_severity_counts(d.new_findings)} |"
            )
        out.append("")
    else:
        out += ["No deployment changed.", ""]
    if unchanged:
        out += [f"{unchanged} deployment(s) unchanged.", ""]
    if result.new_findings:
        out += ["### New findings", "", "| severity | location | rule | message |", "|---|---|---|---|"]
        for f in result.new_findings:
            rule = f"[{f.code}]({f.url}) {f.name}" if f.url else f"{f.code} {f.name}"
            out.append(f"| {f.severity} | `{markdown_cell(f.file)}:{f.line}:{f.column}` | {rule} | {markdown_cell(f.message)} |")
        out.append("")
    if result.fixed_findings:
        out += [f"{len(result.fixed_findings)} finding(s) of the base are gone: "
                + ", ".join(sorted({f"{f.code} {f.name}" for f in result.fixed_findings})) + ".", ""]
    return "\n".join(out).rstrip("\n") + "\n"


# --- JSON ------------------------------------------------------------------------------------


def _finding_json(finding: Finding) -> Dict[str, Any]:
    return {
        "code": finding.code,
        "name": finding.name,
        "severity": finding.severity,
        "message": finding.message,
        "file": finding.file,
        "line": finding.line,
        "column": finding.column,
        "pointer": finding.pointer,
        "url": finding.url,
    }


def format_json(result: DiffResult) -> str:
    document = {
        "version": 1,
        "base": {"ref": result.base_ref, "commit": result.base_commit},
        "fail_on": result.fail_on,
        "max_capacity_regression": result.max_capacity_regression,
        "passed": not result.fails(),
        "files": result.files,
        "deployments": [
            {
                "file": d.file,
                "name": d.name,
                "status": d.status,
                "base": d.base.to_json() if d.base else None,
                "head": d.head.to_json() if d.head else None,
                "change_pct": {m: d.change_pct(m) for m, _ in _METRICS},
                "new_findings": [_finding_json(f) for f in d.new_findings],
                "fixed_findings": [_finding_json(f) for f in d.fixed_findings],
                "regressions": [r.to_json() for r in d.regressions],
            }
            for d in result.deployments
        ],
        "new_findings": [_finding_json(f) for f in result.new_findings],
        "fixed_findings": [_finding_json(f) for f in result.fixed_findings],
    }
    return json_text(document) + "\n"


def render_diff(result: DiffResult, fmt: str) -> str:
    if fmt == "json":
        return format_json(result)
    if fmt == "markdown":
        return format_markdown(result)
    return format_text(result)
