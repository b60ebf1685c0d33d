"""Side-by-side table of an ablation's variants (`kvlint capacity` on a kind: Ablation).

Formats only: every number comes from the variants' CapacityResult and the results recorded in
the ablation file.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

from kvlint.text import aligned_table, printable, printable_block

from kvlint.report.capacity_table import human_bytes

_STEP_NAMES = {
    "baseline": "BF16 baseline",
    "fp8-per-tensor-uncalibrated": "FP8 per-tensor, unit",
    "fp8-per-head-calibrated": "FP8 per-head, calibrated",
    "fp8-per-head-skip": "FP8 per-head + skip set",
}

_METRICS: Tuple[Tuple[str, str], ...] = (
    ("ttft_ms", "TTFT ms"),
    ("itl_ms", "ITL ms"),
    ("throughput_tok_s", "throughput tok/s"),
)


def _short_bytes(value: Optional[int]) -> str:
    if value is None:
        return "-"
    text = human_bytes(value)
    return text.split(" (")[1].rstrip(")") if " (" in text else text


def _num(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return "-"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.4g}" if abs(value) < 1000 else f"{value:,.1f}"
    return str(value)


def _capacity_rows(analyses: Sequence[Any]) -> List[Tuple[str, List[str]]]:
    rows: List[Tuple[str, List[str]]] = []

    def add(label: str, cells: List[str]) -> None:
        rows.append((label, cells))

    results = [a.capacity for a in analyses]
    facts = [a.facts for a in analyses]
    add("step", [_STEP_NAMES.get(f.get("ablation_step") or "", "(not a recommended step)") for f in facts])
    add("kv_cache.dtype", [f"{r.kv_dtype} -> {r.cache_format or '?'}" if r else "-" for r in results])
    add("scales", [
        f"{(f.get('scales') or {}).get('granularity') or '-'}/{(f.get('scales') or {}).get('source') or '-'}"
        if (f.get("kv_cache") or {}).get("quantized") else "-"
        for f in facts
    ])
    add("skip set", [", ".join(str(e) for e in (f.get("skip") or {}).get("entries") or []) or "none" for f in facts])
    add("backend", [str((f.get("backend") or {}).get("name") or (f.get("backend") or {}).get("requested") or "-") for f in facts])
    add("per-token payload", [_short_bytes(r.per_token.payload_bytes) if r and r.per_token else "-" for r in results])
    add("per-token scales", [_short_bytes(r.per_token.scale_bytes) if r and r.per_token else "-" for r in results])
    add("per-token total", [_short_bytes(r.per_token.total_bytes) if r and r.per_token else "-" for r in results])
    add("static scales (K,V)", [_short_bytes(r.static_scales.kv_bytes) if r and r.static_scales else "-" for r in results])
    add("compression vs bf16", [f"{r.sequence.compression_vs_bf16:.2f}x" if r and r.sequence else "-" for r in results])
    engines = [r.engine if r else None for r in results]
    add("KV pool per GPU", [_short_bytes(e.pool_bytes_per_gpu) if e else "-" for e in engines])
    add("block size", [_num(e.block_size) if e else "-" for e in engines])
    add("bytes per block", [_short_bytes(e.bytes_per_block) if e else "-" for e in engines])
    add("blocks", [_num(e.num_blocks) if e and not e.startup_error else "-" for e in engines])
    add("KV cache tokens", [_num(e.kv_cache_tokens) if e and not e.startup_error else "-" for e in engines])
    add("max concurrency", [f"{e.max_concurrency:.2f}x" if e and not e.startup_error else "-" for e in engines])
    return rows


def _result_rows(analyses: Sequence[Any]) -> List[Tuple[str, List[str]]]:
    """One row per (bucket, quality task or metric) that any variant recorded."""
    per_variant: List[Dict[Tuple[str, str], Any]] = []
    order: List[Tuple[str, str]] = []
    for analysis in analyses:
        recorded: Dict[Tuple[str, str], Any] = {}
        results = analysis.facts.get("results")
        buckets = results.get("buckets") if isinstance(results, dict) else None
        for bucket in buckets if isinstance(buckets, list) else ():
            if not isinstance(bucket, dict):
                continue
            context = str(bucket.get("context", "?"))
            quality = bucket.get("quality")
            for task, score in (quality.items() if isinstance(quality, dict) else ()):
                if isinstance(score, (int, float)) and not isinstance(score, bool):
                    recorded[(context, str(task))] = score
            for key, label in _METRICS:
                value = bucket.get(key)
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    recorded[(context, label)] = value
        for key in recorded:
            if key not in order:
                order.append(key)
        per_variant.append(recorded)
    return [(f"[{context}] {what}", [_num(r.get((context, what))) for r in per_variant]) for context, what in order]


def _grid(header: List[str], rows: List[Tuple[str, List[str]]]) -> List[str]:
    return aligned_table(header, [[label] + cells for label, cells in rows])


def render_ablation_table(analyses: Sequence[Any]) -> str:
    """The variants of one ablation side by side: capacity, then any recorded results."""
    if not analyses:
        return ""
    first = analyses[0]
    name = first.facts.get("ablation") or first.facts.get("name") or "ablation"
    file = first.capacity.file if first.capacity is not None else first.facts.get("file", "")
    head = f"{printable(file)}: ablation {printable(name)} ({len(analyses)} variants)"
    lines = [head, "=" * min(len(head), 100)]
    header = ["variant"] + [str(a.facts.get("variant") or "?") for a in analyses]
    lines += _grid(header, _capacity_rows(analyses))
    result_rows = _result_rows(analyses)
    lines.append("")
    if result_rows:
        lines.append("Recorded results (per context bucket):")
        lines += _grid(header, result_rows)
    else:
        lines.append("Recorded results: none yet (fill in results.buckets of each variant).")
    tokens = [a.capacity.sequence.tokens for a in analyses if a.capacity is not None and a.capacity.sequence is not None]
    if tokens and len(set(tokens)) == 1:
        lines.append(f"Compression is for one sequence of {tokens[0]:,} tokens (max_model_len); "
                     "engine rows are for one GPU.")
    return printable_block("\n".join(lines) + "\n")
