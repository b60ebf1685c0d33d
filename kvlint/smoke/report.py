"""Smoke results as a text table or JSON. Formatting only: nothing is computed here."""

from __future__ import annotations

import json
from typing import Any, Dict, List

from kvlint.text import aligned_table

from kvlint.smoke.runner import DeploymentResult, GroupResult

SCHEMA_VERSION = 1


def to_json(results: List[DeploymentResult], summary: Dict[str, Any]) -> str:
    return json.dumps(
        {"version": SCHEMA_VERSION, "summary": summary, "deployments": [r.as_dict() for r in results]},
        indent=2,
    )


def _fmt_err(g: GroupResult) -> str:
    if g.max_rel_error is None:
        return "-"
    tol = g.tolerance or {}
    return f"{g.max_rel_error:.3g}/{g.mean_rel_error:.3g} (<= {tol.get('max_rel')}/{tol.get('mean_rel')})"


def _fmt_bytes(g: GroupResult) -> str:
    if g.bytes_per_block_measured is None:
        return "-"
    mark = "=" if g.bytes_per_block_measured == g.bytes_per_block_predicted else "!="
    return f"{g.bytes_per_block_measured} {mark} {g.bytes_per_block_predicted} ({g.block_size} tok)"


def _fmt_time(g: GroupResult) -> str:
    t = g.timing
    if t is None:
        return "-"
    ratio = t.quantized_ms[-1] / t.bf16_ms[-1] if t.bf16_ms[-1] else float("nan")
    be = "never" if t.break_even_tokens is None else f"{t.break_even_tokens:,.0f}"
    return f"{ratio:.2f}x @{t.contexts[-1]} (break-even {be})"


def to_text(results: List[DeploymentResult], summary: Dict[str, Any]) -> str:
    lines: List[str] = []
    for r in results:
        dev = r.device
        cap = dev.get("capability")
        where = dev.get("name", "?") + (f" SM{cap[0]}{cap[1]}" if cap else "")
        lines.append(f"{r.file}: {r.name} on {dev.get('type')} ({where}): {r.status.upper()}")
        header = ["group", "layers", "held", "bytes/block meas = pred", "err max/mean (tol)", "kernel", "decode vs BF16", "status"]
        rows = [header]
        for g in r.groups:
            rows.append(
                [
                    g.group,
                    str(len(g.layers)),
                    g.storage_dtype_held or "-",
                    _fmt_bytes(g),
                    _fmt_err(g),
                    (g.kernel or "-")[:48],
                    _fmt_time(g),
                    g.status,
                ]
            )
        lines.extend(aligned_table(rows[0], rows[1:], indent="  ", rule=False))
        for g in r.groups:
            for reason in g.failures:
                lines.append(f"  FAIL {g.group}: {reason}")
            for note in g.notes:
                lines.append(f"  note {g.group}: {note}")
        for note in r.notes:
            lines.append(f"  note: {note}")
        lines.append("")
    lines.append(
        f"smoke verdict {summary['verdict'].upper()} - deployments passed {summary['passed']}, "
        f"failed {summary['failed']}, not run {summary['skipped']}"
        + (f" ({summary['message']})" if summary.get("message") else "")
    )
    return "\n".join(lines)
