"""The capacity stage: pure arithmetic on a `Deployment` (no I/O, no globals).

`compute(deployment)` gives the layout formula (per token, static scales, one sequence) and the
engine's own accounting (pool, blocks, tokens, concurrency) as a `CapacityResult`. It never raises
on a Deployment with unknown pieces: what cannot be computed is None, and why is in `assumptions`.
"""

from __future__ import annotations

from typing import List, Optional, Tuple

from kvlint.capacity.layout import (
    PerTokenBytes,
    SequenceBytes,
    per_token,
    requested_format,
    sequence,
    static_scales,
)
from kvlint.capacity.pool import GiB, PoolEstimate, sglang_pool, trtllm_pool, vllm_pool
from kvlint.capacity.result import (
    CapacityBand,
    CapacityResult,
    Difference,
    EngineCapacity,
    LayerGroupCapacity,
)
from kvlint.capacity.vllm import vllm_capacity
from kvlint.deployment import Deployment
from kvlint.records import replace

__all__ = [
    "CapacityBand",
    "CapacityResult",
    "Difference",
    "EngineCapacity",
    "LayerGroupCapacity",
    "compute",
]


def _engine(deployment: Deployment, notes: List[str]) -> Optional[EngineCapacity]:
    if deployment.engine == "vllm":
        pool: PoolEstimate = vllm_pool(deployment)
        account = vllm_capacity
    elif deployment.engine == "sglang":
        # Each engine's accounting is imported on use (start-up time): a run needs one or two.
        from kvlint.capacity.sglang import sglang_capacity

        pool, account = sglang_pool(deployment), sglang_capacity
    elif deployment.engine == "tensorrt-llm":
        from kvlint.capacity.trtllm import trtllm_capacity  # on use, as above

        pool, account = trtllm_pool(deployment), trtllm_capacity
    else:
        notes.append(f"engine {deployment.engine!r} has no capacity model")
        return None
    notes.extend(pool.assumptions)
    engine = account(deployment, pool, notes)
    if engine is None:
        return None
    engine = replace(engine, fraction=pool.gpu_memory_utilization, pool_terms=pool.terms)
    if pool.band is None or engine.startup_error is not None:
        return engine
    # The same accounting at both ends of the pool's band (tokens are monotone in the pool).
    ends = [account(deployment, replace(pool, pool_bytes=end, band=None), [])
            for end in (pool.band.low, pool.band.high)]
    if any(end is None for end in ends):
        return engine
    low, high = ends
    band = CapacityBand(
        pool_low=pool.band.low, pool_high=pool.band.high,
        tokens_low=low.kv_cache_tokens, tokens_high=high.kv_cache_tokens,
        concurrency_low=low.max_concurrency, concurrency_high=high.max_concurrency,
        terms=pool.band.terms, sized_low=pool.band.sized_low, sized_high=pool.band.sized_high,
        fits_low=low.fits_one_sequence, fits_high=high.fits_one_sequence)
    notes.append(
        f"the pool is estimated: {pool.band.low / GiB:.2f}..{pool.band.high / GiB:.2f} GiB per GPU "
        f"({low.kv_cache_tokens:,}..{high.kv_cache_tokens:,} tokens) from "
        + "; ".join(pool.band.terms)
        + ". Setting memory.kv_cache_memory (vLLM logs it as 'Available KV cache memory') removes the band")
    return replace(engine, band=band)


def _differences(pt: Optional[PerTokenBytes], seq: Optional[SequenceBytes],
                 engine: Optional[EngineCapacity], fmt: Optional[str]) -> Tuple[Difference, ...]:
    """Why the corrected figures differ from the dtype-only estimate, one cause at a time."""
    out: List[Difference] = []
    if pt is not None:
        if pt.scale_bytes:
            pct = 100.0 * pt.scale_bytes / pt.payload_bytes if pt.payload_bytes else 0.0
            out.append(Difference(
                "scales",
                f"per-token scale metadata adds {pt.scale_bytes:,} B per token "
                f"({pct:.2f}% of the payload)",
                bytes_per_token=pt.scale_bytes,
                sequence_bytes=seq.scale_bytes if seq else None))
        if pt.skipped_layer_bytes:
            extra = pt.skipped_layer_bytes - pt.skipped_layer_naive_bytes
            out.append(Difference(
                "skipped_layers",
                f"layers kept at the model dtype add {extra:,} B per token over {fmt}",
                bytes_per_token=extra))
        format_extra = (pt.payload_bytes - pt.skipped_layer_bytes) - (
            pt.naive_bytes - pt.skipped_layer_naive_bytes)
        if format_extra:
            out.append(Difference(
                "format",
                f"the {fmt} record stores {format_extra:,} B per token beyond its dtype rate "
                "(e.g. a RoPE part kept in BF16)",
                bytes_per_token=format_extra))
    if seq is not None and seq.full_length_bytes != seq.bytes:
        saved = seq.full_length_bytes - seq.bytes
        out.append(Difference(
            "windows",
            f"sliding/chunked layers retain at most their window: {saved:,} B less per "
            f"{seq.tokens:,}-token sequence",
            sequence_bytes=-saved))
    if engine is not None and engine.naive_tokens is not None and engine.startup_error is None:
        delta = engine.kv_cache_tokens - engine.naive_tokens
        if delta:
            out.append(Difference(
                "engine",
                f"the engine reports {engine.kv_cache_tokens:,} tokens against the dtype-only "
                f"{engine.naive_tokens:,} (pool / naive bytes per token): {delta:+,} tokens "
                "from all of the above plus block rounding, page padding, layer grouping and "
                "window reservations",
                tokens=delta))
    return tuple(out)


def compute(deployment: Deployment) -> CapacityResult:
    """Corrected capacity of one deployment. Never raises on unknown pieces."""
    if deployment.ggml is not None:
        from kvlint.capacity.llamacpp import llamacpp_result  # on use, as the engines above

        return llamacpp_result(deployment)
    notes: List[str] = []
    model = deployment.model
    if model is None or not deployment.layers:
        notes.append("model geometry unknown: per-token, sequence and engine figures omitted")
    pt = per_token(deployment)
    scales = static_scales(deployment)
    tokens = deployment.max_model_len
    if tokens is None and model is not None:
        tokens = model.max_position_embeddings
        if tokens is not None:
            notes.append(f"sequence length defaulted to max_position_embeddings ({tokens})")
    seq = sequence(deployment, tokens) if tokens else None
    if model is not None and deployment.layers and scales is not None:
        if scales.granularity is None and scales.kv_bytes:
            notes.append("static scale granularity not given: per-tensor assumed")
        if model.dtype == "float32":
            notes.append("the model runs in float32 (model.dtype): unquantized KV layers store "
                         "4-byte elements")
    engine = None
    try:
        engine = _engine(deployment, notes)
    except (ArithmeticError, ValueError) as exc:  # a malformed geometry must not crash lint
        notes.append(f"engine capacity not computed: {exc}")
    replicated = latent = False
    for plan in deployment.layers:
        if plan.geometry.is_mla:
            latent = latent or deployment.tensor_parallel > 1
        elif deployment.tensor_parallel > plan.geometry.num_kv_heads:
            replicated = True
    if replicated:
        notes.append(f"tensor parallel {deployment.tensor_parallel} exceeds the KV head count: "
                     "each GPU holds max(1, Hkv // tp) replicated heads")
    fmt = requested_format(deployment)
    seen = []
    for note in notes:
        if note not in seen:
            seen.append(note)
    return CapacityResult(
        file=deployment.file,
        name=deployment.name,
        engine_name=deployment.engine,
        engine_version=deployment.engine_version,
        kv_dtype=deployment.kv_dtype,
        cache_format=fmt,
        per_token=pt,
        static_scales=scales,
        sequence=seq,
        engine=engine,
        assumptions=tuple(seen),
        differences=_differences(pt, seq, engine, fmt),
        tensor_parallel=deployment.tensor_parallel,
        pipeline_parallel=deployment.pipeline_parallel,
        kv_heads_replicated=replicated,
        mla_latent_replicated=latent,
    )
