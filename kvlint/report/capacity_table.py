"""Readable capacity table (`kvlint capacity` without --format json). Formats only; never computes."""

from __future__ import annotations

from typing import Iterable, List, Optional, Sequence, Tuple

from kvlint.text import aligned_table, printable, printable_block

from kvlint.capacity.result import CapacityResult

_UNITS = (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10))


def human_bytes(value: Optional[int]) -> str:
    """Exact bytes with a binary-unit gloss: "1,081,344 B (1.03 MiB)"."""
    if value is None:
        return "-"
    for unit, size in _UNITS:
        if abs(value) >= size:
            return f"{value:,} B ({value / size:.2f} {unit})"
    return f"{value:,} B"


def _int(value: Optional[int]) -> str:
    return "-" if value is None else f"{value:,}"


def _rows(rows: Sequence[Tuple[str, str, str]], headers: Tuple[str, str, str]) -> List[str]:
    return aligned_table(headers, rows)


def render_one(result: CapacityResult) -> str:
    p = printable  # every text from the input (file, name, dtype, messages) on one line, escaped
    head = (f"{p(result.file)}: {p(result.name)}  ({p(result.engine_name)} {p(result.engine_version)}, "
            f"kv_cache.dtype {p(result.kv_dtype)} -> {p(result.cache_format or '?')}, "
            f"tp {result.tensor_parallel} x pp {result.pipeline_parallel})")
    lines = [head, "=" * min(len(head), 100)]
    pt, seq, eng = result.per_token, result.sequence, result.engine
    if pt is None:
        lines.append("per token: model geometry unknown")
    else:
        rows = [
            ("payload", human_bytes(pt.payload_bytes), ""),
            ("scales (inline)", human_bytes(pt.scale_bytes),
             f"{100 * (result.scale_overhead_ratio or 0):.2f}% of payload"),
            ("total (corrected)", human_bytes(pt.total_bytes), ""),
            ("dtype-only estimate", human_bytes(pt.naive_bytes), "every layer quantized, no metadata"),
            ("bf16", human_bytes(pt.bf16_bytes),
             f"{pt.bf16_bytes / pt.total_bytes:.2f}x of corrected" if pt.total_bytes else ""),
        ]
        lines.append("Per token, whole model (all layers and KV heads):")
        lines += ["  " + r for r in _rows(rows, ("item", "bytes", "note"))]
    if result.static_scales is not None:
        lines.append(f"Static scales (once per model): K,V {_int(result.static_scales.kv_bytes)} B; "
                     f"Q,K,V {_int(result.static_scales.qkv_bytes)} B")
    if seq is not None:
        lines.append(f"One sequence of {seq.tokens:,} tokens: {human_bytes(seq.bytes)}; "
                     f"bf16 {human_bytes(seq.bf16_bytes)}; compression vs bf16 "
                     f"{seq.compression_vs_bf16:.2f}x")
    if result.llamacpp is not None:
        lines += _llamacpp_rows(result)
    elif eng is None:
        lines.append("Engine: not computed (see assumptions)")
    elif eng.startup_error:
        lines.append(f"Engine: {p(eng.startup_error)}")
    else:
        rows = [
            ("KV pool per GPU", human_bytes(eng.pool_bytes_per_gpu),
             "EXHAUSTED" if eng.pool_exhausted else ""),
            ("block size", f"{eng.block_size} token{'' if eng.block_size == 1 else 's'}",
             f"min {eng.min_block_size}" if eng.min_block_size != eng.block_size else ""),
            ("bytes per block", human_bytes(eng.bytes_per_block), ""),
            ("blocks", _int(eng.num_blocks), f"{len(eng.groups)} KV-cache group(s)"),
            ("KV cache tokens", _int(eng.kv_cache_tokens),
             f"dtype-only estimate {_int(eng.naive_tokens)}"),
            ("max concurrency", f"{eng.max_concurrency:.2f}x",
             f"at {_int(eng.max_model_len)} tokens per request"),
            ("one sequence fits", "yes" if eng.fits_one_sequence else "NO", ""),
        ]
        band = eng.band
        if band is not None:
            GiB = 1 << 30
            rows[0] = (rows[0][0], rows[0][1], "; ".join(filter(None, (
                rows[0][2], f"estimated: {band.pool_low / GiB:.2f}..{band.pool_high / GiB:.2f} GiB"))))
            rows[4] = (rows[4][0], rows[4][1], f"band {_int(band.tokens_low)}..{_int(band.tokens_high)}; "
                       + rows[4][2])
            rows[5] = (rows[5][0], rows[5][1], f"band {band.concurrency_low:.2f}..{band.concurrency_high:.2f}x; "
                       + rows[5][2])
        lines.append("Engine accounting (one GPU):")
        lines += ["  " + r for r in _rows(rows, ("item", "value", "note"))]
        if band is not None:
            lines.append("The pool is estimated; the band comes from:")
            lines += [f"  - {p(term)}" for term in band.terms]
            lines.append(f"  {p(band.removed_by)} (vLLM logs it as 'Available KV cache memory'; "
                         "`kvlint capacity FILE --from-log LOG` reads it) removes the band")
    if result.differences:
        lines.append("Why it differs from the dtype-only estimate:")
        lines += [f"  - {p(d.text)}" for d in result.differences]
    if result.assumptions:
        lines.append("Assumptions:")
        lines += [f"  - {p(a)}" for a in result.assumptions]
    return "\n".join(lines) + "\n"


def _llamacpp_rows(result: CapacityResult) -> List[str]:
    """llama.cpp / Ollama: the KV buffer llama.cpp allocates, as its log prints it."""
    c = result.llamacpp
    MiB = 1 << 20
    rows = [
        ("cells", _int(c.cells), f"-c {_int(c.context_requested)} padded to {c.padding}"
         + (f"; {c.n_stream} slots x {_int(c.cells_per_stream)}" if c.n_stream > 1 else "")),
        ("bytes per cell", human_bytes(c.bytes_per_cell), "K + V, full-attention layers"),
        (f"K ({c.type_k})", human_bytes(c.k_bytes), f"{c.k_bytes / MiB:.2f} MiB in the log"),
        (f"V ({c.type_v})", human_bytes(c.v_bytes), f"{c.v_bytes / MiB:.2f} MiB in the log"),
        ("KV cache total", human_bytes(c.total_bytes), f"{c.total_bytes / MiB:.2f} MiB in the log"),
    ]
    if c.swa_cells is not None:
        rows.insert(1, ("sliding-window cells", _int(c.swa_cells), "per slot"))
    if c.ollama_estimate_bytes is not None:
        rows.append(("Ollama's estimate", human_bytes(c.ollama_estimate_bytes), c.ollama_estimate_rule or ""))
    out = ["llama.cpp KV cache (all devices):"]
    return out + ["  " + r for r in _rows(rows, ("item", "value", "note"))]


def render_capacity_text(results: Iterable[CapacityResult]) -> str:
    """One block per manifest document, separated by a blank line. No colour codes."""
    return printable_block("\n".join(render_one(r) for r in results))
