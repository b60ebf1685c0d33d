"""llama.cpp's KV cache as llama.cpp allocates it (also under Ollama, which drives llama.cpp).

Per layer with a KV cache, llama.cpp makes one K and one V tensor of
`ggml_row_size(type, n_embd_{k,v}_gqa) x kv_size x n_stream` bytes, where
`ggml_row_size(type, n) = n / block_elements x block_bytes` (q8_0: 34 B per 32 elements, the fp16
scale inside each block; src/llama-kv-cache.cpp in ggml-org/llama.cpp). The cells are the padded
context: padded to 256 with flash attention and to 32 without up to b6840, always to 256 from
b7108; with one stream per slot (not --kv-unified) each slot gets pad(n_ctx / n_seq) cells.
Sliding-window layers hold `pad(min(n_ctx_seq, n_swa x (unified ? n_seq : 1) + n_ubatch))` cells
from the iSWA cache on (src/llama-kv-cache-iswa.cpp), unless --swa-full.

`-np` does not multiply llama.cpp's cache for full-attention layers; Ollama does, because it
passes num_ctx x OLLAMA_NUM_PARALLEL as the context. Pure arithmetic on a `Deployment`.
"""

from __future__ import annotations

from typing import List, Optional, Tuple

from kvlint.capacity.layout import PerTokenBytes
from kvlint.capacity.result import CapacityResult, Difference, EngineCapacity
from kvlint.deployment import Deployment, GgmlPlan, LayerGeometry
from kvlint.records import dataclass

__all__ = ["LlamaCppCache", "llamacpp_cache", "llamacpp_result", "pad", "context_cells"]

MiB = 1 << 20


def pad(n: int, to: int) -> int:
    """GGML_PAD(n, to): n rounded up to a multiple of `to`."""
    return (n + to - 1) // to * to


@dataclass(frozen=True)
class LlamaCppCache:
    """The KV buffer llama.cpp allocates (all devices together), and how it got there."""

    cells: int  # KV cells of the full-attention layers, all streams together (the log's "N cells")
    cells_per_stream: int
    n_stream: int
    swa_cells: Optional[int]  # per stream, for sliding-window layers; None when the model has none
    k_bytes: int  # the log's "K (type): X MiB", in bytes
    v_bytes: int
    total_bytes: int  # the log's "KV self size" / "KV buffer size" summed over buffers
    bytes_per_cell: int  # full-attention layers, K + V, per cell (per token)
    type_k: str
    type_v: str
    padding: int  # 32 or 256
    context_requested: int  # -c before padding
    ollama_estimate_bytes: Optional[int] = None  # what Ollama's own memory estimate prices the cache at
    ollama_estimate_rule: Optional[str] = None
    notes: Tuple[str, ...] = ()

    @property
    def total_mib(self) -> float:
        return self.total_bytes / MiB

    def to_json(self) -> dict:
        return {
            "cells": self.cells, "cells_per_stream": self.cells_per_stream, "n_stream": self.n_stream,
            "swa_cells": self.swa_cells, "k_bytes": self.k_bytes, "v_bytes": self.v_bytes,
            "total_bytes": self.total_bytes, "bytes_per_cell": self.bytes_per_cell,
            "type_k": self.type_k, "type_v": self.type_v, "padding": self.padding,
            "context_requested": self.context_requested,
            "ollama_estimate_bytes": self.ollama_estimate_bytes, "ollama_estimate_rule": self.ollama_estimate_rule,
            "notes": list(self.notes),
        }


def context_cells(plan: GgmlPlan, context: int) -> Tuple[int, int, int, int]:
    """(cells total, cells per stream, streams, padding) for a requested -c of `context`."""
    if plan.padding == "256":
        padding = 256
    else:
        padding = 256 if plan.flash_attn else 32
    n_seq = max(1, plan.n_seq)
    if plan.unified or not plan.per_stream or n_seq == 1:
        cells = pad(context, padding)
        return cells, cells, 1, padding
    if plan.padding == "256":  # b7108+: n_ctx = pad(n_ctx, 256); n_ctx_seq = pad(n_ctx / n_seq, 256)
        per = pad(pad(context, padding) // n_seq, padding)
    else:  # e54d41be..b6840: pad(ceil(n_ctx / n_seq), 256 or 32)
        per = pad(-(-context // n_seq), padding)
    return per * n_seq, per, n_seq, padding


def _row(n: int, block: Tuple[int, int]) -> int:
    elements, nbytes = block
    return n // elements * nbytes


def _swa_cells(plan: GgmlPlan, per_stream: int, window: int, padding: int) -> int:
    if plan.swa_full or plan.swa_rule == "full":
        return per_stream
    reach = window * (max(1, plan.n_seq) if plan.unified else 1) + plan.ubatch
    if plan.swa_rule == "pad_then_min":
        return min(per_stream, pad(reach, padding))
    return pad(min(per_stream, reach), 256)


def _sliding(layer: LayerGeometry) -> bool:
    return layer.kind in ("sliding", "chunked") and bool(layer.window)


def llamacpp_cache(deployment: Deployment) -> Optional[LlamaCppCache]:
    """The KV cache llama.cpp allocates for this deployment; None when it cannot be computed
    (not a llama.cpp/Ollama deployment, unknown geometry or context, an MLA model)."""
    plan = deployment.ggml
    model = deployment.model
    if plan is None or model is None or not model.layers or plan.context_size is None or plan.context_size <= 0:
        return None
    if model.is_mla:
        return None  # llama.cpp's MLA cache (K = latent + rope, V a view) is not modelled
    notes: List[str] = list(plan.notes)
    cells, per_stream, n_stream, padding = context_cells(plan, plan.context_size)
    k_bytes = v_bytes = 0
    bytes_per_cell = 0
    swa_cells: Optional[int] = None
    for layer in model.layers:
        if layer.num_kv_heads <= 0:
            continue  # no cache for this layer (n_head_kv = 0)
        k_row = _row(layer.head_dim * layer.num_kv_heads, plan.k_block)
        v_row = _row(layer.v_head_dim * layer.num_kv_heads, plan.v_block)
        if _sliding(layer) and plan.swa_rule != "full":
            layer_cells = _swa_cells(plan, per_stream, int(layer.window or 0), padding)
            swa_cells = layer_cells
            streams = n_stream
            k_bytes += k_row * layer_cells * streams
            v_bytes += v_row * layer_cells * streams
            continue
        bytes_per_cell += k_row + v_row
        k_bytes += k_row * cells
        v_bytes += v_row * cells
    if plan.swa_full and any(_sliding(layer) for layer in model.layers):
        notes.append("--swa-full: sliding-window layers get full-size caches")
    estimate, rule = _ollama_estimate(plan, model.layers, plan.context_size)
    return LlamaCppCache(
        cells=cells, cells_per_stream=per_stream, n_stream=n_stream, swa_cells=swa_cells,
        k_bytes=k_bytes, v_bytes=v_bytes, total_bytes=k_bytes + v_bytes, bytes_per_cell=bytes_per_cell,
        type_k=plan.type_k, type_v=plan.type_v, padding=padding, context_requested=plan.context_size,
        ollama_estimate_bytes=estimate, ollama_estimate_rule=rule, notes=tuple(notes))


def _ollama_estimate(plan: GgmlPlan, layers: Tuple[LayerGeometry, ...], context: int) -> Tuple[Optional[int], Optional[str]]:
    """What Ollama's own memory estimate prices the KV cache at (it schedules on this figure)."""
    if plan.ollama_estimate is None:
        return None, None
    heads = [layer for layer in layers if layer.num_kv_heads > 0]
    if plan.ollama_estimate == "f16":
        # v0.30+ PredictServerVRAM: 2 x block_count x head_count_kv (the minimum over layers, at least 1)
        # x head_dim x ctx x 2 B, whatever the type (Ollama takes head_dim as n_embd / n_head; kvlint
        # uses the model's head size, the same for most models).
        kv_min = max(1, min((layer.num_kv_heads for layer in layers), default=1))
        head = layers[0].head_dim if layers else 0
        return 2 * len(layers) * kv_min * head * context * 2, "every cache priced as f16 (PredictServerVRAM)"
    # <= v0.24 GraphSize: ctx x (head_k + head_v) x n_head_kv x bytes per element, block scales
    # dropped (the rates are the catalog's estimate_bytes_per_element, on the plan)
    if plan.ollama_estimate_rates is None:
        return None, None
    rate_k, rate_v = plan.ollama_estimate_rates
    total = 0.0
    for layer in heads:
        total += context * layer.num_kv_heads * (layer.head_dim * rate_k + layer.v_head_dim * rate_v)
    return int(total), "q8_0 1 B, q4_0 0.5 B per element: the block scales left out (kvCacheBytesPerElement)"


def _per_token(plan: GgmlPlan, deployment: Deployment) -> Optional[PerTokenBytes]:
    """Bytes per token (one cell, full-attention layers), split into payload and in-block scales."""
    model = deployment.model
    if model is None or model.is_mla:
        return None
    payload = scales = bf16 = 0
    for layer in model.layers:
        if layer.num_kv_heads <= 0:
            continue
        for width, bits, block in ((layer.head_dim * layer.num_kv_heads, plan.k_payload_bits, plan.k_block),
                                   (layer.v_head_dim * layer.num_kv_heads, plan.v_payload_bits, plan.v_block)):
            row = _row(width, block)
            data = width * bits // 8 if bits else row
            payload += data
            scales += row - data
            bf16 += width * 2
    return PerTokenBytes(payload_bytes=payload, scale_bytes=scales, bf16_bytes=bf16, naive_bytes=payload,
                         skipped_layer_bytes=0, skipped_layer_naive_bytes=0)


def llamacpp_result(deployment: Deployment) -> CapacityResult:
    """The capacity result of a llama.cpp / Ollama deployment: llama.cpp's own allocation."""
    plan = deployment.ggml
    assert plan is not None
    notes: List[str] = []
    cache = None
    try:
        cache = llamacpp_cache(deployment)
    except (ArithmeticError, ValueError) as exc:  # a malformed geometry must not crash lint
        notes.append(f"llama.cpp cache not computed: {exc}")
    model = deployment.model
    if model is None or not model.layers:
        notes.append("model geometry unknown: the llama.cpp cache cannot be computed")
    elif model.is_mla:
        notes.append("MLA model: llama.cpp's latent cache is not modelled")
    elif plan.context_size is None or plan.context_size <= 0:
        notes.append("context size unknown: set serving.context_size (-c) or, for Ollama, serving.max_model_len (num_ctx)")
    if cache is not None:
        notes.extend(cache.notes)
    elif plan.notes:
        notes.extend(plan.notes)
    engine = None
    differences: List[Difference] = []
    pt = _per_token(plan, deployment)
    if cache is not None:
        per_slot = cache.cells_per_stream if cache.n_stream > 1 or plan.unified else cache.cells
        slots = max(1, plan.n_seq)
        max_len = deployment.max_model_len or (per_slot if not plan.unified else cache.cells)
        engine = EngineCapacity(
            engine=deployment.engine, version=deployment.engine_version, pool_bytes_per_gpu=cache.total_bytes,
            block_size=1, bytes_per_block=cache.bytes_per_cell, num_blocks=cache.cells,
            kv_cache_tokens=cache.cells,
            max_concurrency=(cache.cells / max_len) if max_len else float(slots),
            max_model_len=max_len,
            naive_tokens=None, fits_one_sequence=None)
        if cache.ollama_estimate_bytes is not None and cache.ollama_estimate_bytes != cache.total_bytes:
            delta = cache.ollama_estimate_bytes - cache.total_bytes
            differences.append(Difference(
                "engine",
                f"Ollama's own estimate prices this cache at {cache.ollama_estimate_bytes / MiB:,.2f} MiB against the "
                f"{cache.total_mib:,.2f} MiB llama.cpp allocates ({delta / MiB:+,.2f} MiB; {cache.ollama_estimate_rule})"))
        if cache.cells != cache.context_requested:
            differences.append(Difference(
                "engine", f"-c {cache.context_requested:,} becomes {cache.cells:,} cells (padded to {cache.padding}"
                + (f" per slot, {cache.n_stream} slots" if cache.n_stream > 1 else "") + ")",
                tokens=cache.cells - cache.context_requested))
    if pt is not None and pt.scale_bytes:
        pct = 100.0 * pt.scale_bytes / pt.payload_bytes if pt.payload_bytes else 0.0
        differences.insert(0, Difference(
            "scales", f"the fp16 scale inside every 32-element block adds {pt.scale_bytes:,} B per token "
            f"({pct:.2f}% of the payload)", bytes_per_token=pt.scale_bytes))
    seen: List[str] = []
    for note in notes:
        if note not in seen:
            seen.append(note)
    return CapacityResult(
        file=deployment.file, name=deployment.name, engine_name=deployment.engine,
        engine_version=deployment.engine_version, kv_dtype=deployment.kv_dtype,
        cache_format=plan.type_k if plan.type_k == plan.type_v else f"{plan.type_k}/{plan.type_v}",
        per_token=pt, static_scales=None, sequence=None, engine=engine, assumptions=tuple(seen),
        differences=tuple(differences), tensor_parallel=1, pipeline_parallel=1, llamacpp=cache)
