"""SGLang KV-cache accounting (python/sglang/srt/model_executor/model_runner_kv_cache_mixin.py,
older `model_runner.py` `profile_max_num_token`; sgl-project/sglang v0.5.x; docs/capacity.md).

    cell = sum over the stage's layers of bytes per token (kv heads per attention-TP rank)
    max_total_num_tokens = pool // cell  -> // page_size * page_size, min over PP ranks
    hybrid SWA: full_tokens = max_tokens * (F + S) / (F + r*S), swa_tokens = full_tokens * r

SGLang has one cache dtype for every layer (no skip sets) and per-tensor scales only, so the
pool holds no scale metadata except the FP4 and MXFP8 block scales (and, for nvfp4, what its
attention backends add: `nvfp4_backend_bytes`).
"""

from __future__ import annotations

from typing import List, Optional

from kvlint.capacity.layout import format_token_bytes, naive_token_bytes, requested_format
from kvlint.capacity.pool import PoolEstimate
from kvlint.capacity.result import EngineCapacity, LayerGroupCapacity
from kvlint.capacity.vllm import pp_layer_ranges
from kvlint.deployment import Deployment, LayerPlan

DEFAULT_PAGE_SIZE = 1  # server_args `_handle_page_size`
DEFAULT_SWA_FULL_TOKENS_RATIO = 0.8  # --swa-full-tokens-ratio default


def nvfp4_backend_bytes(deployment: Deployment, plans: List[LayerPlan], notes: List[str]) -> int:
    """Bytes per token that SGLang's nvfp4 pool adds, for its attention backends, to the packed
    data and one layout of block scales that `format_token_bytes` prices (MHA layers only).

    0.5.23 (sgl-project/sglang python/sglang/srt/arg_groups/kv_cache_hook.py
    `handle_nvfp4_prefill_kv_dequant_dtype` L34-93): decode always runs trtllm_mha on native FP4;
    prefill runs trtllm_mha too when it is the attention backend, or when none is given on SM100,
    else (flashinfer, or no backend off SM100) flashinfer on an FP8 dequant workspace. The pool
    (layers/quantization/fp4_kv_cache_quant_method.py `NVFP4KVCacheMethod.compute_cell_size`
    L744-768) then holds the native (HND) scale layout on SM100, a token-linear one for the
    FlashInfer prefill or off SM100 (both when both apply), and a workspace of Hkv x D FP8 values
    for K and for V shared by all layers.
    """
    mha = [p for p in plans if not p.geometry.is_mla]
    if not mha:
        return 0
    cc = deployment.gpu.compute_capability if deployment.gpu else None
    if cc is None:
        notes.append("nvfp4: GPU generation unknown; SGLang's pool taken as on SM100 (native scale layout)")
    sm100 = cc is None or cc[0] == 10
    backend = deployment.requested_backend
    if backend not in ("auto", "trtllm_mha", "flashinfer"):
        return 0  # SGLang refuses nvfp4 prefill on any other backend (kv_cache_hook.py L46-50)
    dequant_prefill = backend == "flashinfer" or (backend == "auto" and not sm100)
    layouts = int(sm100) + int(dequant_prefill or not sm100)
    heads = deployment.kv_heads_per_gpu(mha[0].geometry)
    head_dim = mha[0].geometry.head_dim
    one_layout = sum(deployment.kv_heads_per_gpu(p.geometry) * (p.geometry.head_dim // 16) * 2 for p in mha)
    workspace = heads * head_dim * 2 if dequant_prefill else 0
    if dequant_prefill:
        notes.append("nvfp4 with FlashInfer prefill: SGLang keeps a token-linear copy of the block scales "
                     f"{'beside the native ones ' if sm100 else ''}and an FP8 dequant workspace "
                     f"({workspace:,} B per token) in the pool")
    return one_layout * (layouts - 1) + workspace


def sglang_capacity(deployment: Deployment, pool: PoolEstimate,
                    notes: List[str]) -> Optional[EngineCapacity]:
    if deployment.model is None or not deployment.layers or pool.pool_bytes is None:
        return None
    fmt = requested_format(deployment) or "bf16"
    if any(p.skipped for p in deployment.layers):
        notes.append("SGLang has no per-layer KV dtype: the skip set is ignored and every layer "
                     f"is stored as {fmt}")
    page = deployment.block_size or deployment.backend_block_size or DEFAULT_PAGE_SIZE
    if deployment.block_size is None:
        notes.append(f"SGLang page size {page} ({'backend-forced' if deployment.backend_block_size else 'default'})")
    max_model_len = deployment.max_model_len or deployment.model.max_position_embeddings
    if deployment.max_model_len is None and max_model_len is not None:
        notes.append(f"context length defaulted to max_position_embeddings ({max_model_len})")
    has_swa = any(p.geometry.kind == "sliding" for p in deployment.layers)
    if has_swa and deployment.release_default("hybrid_swa_pool", True) is False:
        has_swa = False
        notes.append(f"SGLang {deployment.engine_version} has no separate sliding-window pool: every "
                     "layer, sliding or not, holds every token in one pool")
    given_ratio = deployment.swa_full_tokens_ratio
    ratio = given_ratio if given_ratio is not None else DEFAULT_SWA_FULL_TOKENS_RATIO
    disabled_for = deployment.release_default("hybrid_swa_memory_disabled_for") or ()
    name = deployment.model.name.lower()
    if has_swa and deployment.disable_hybrid_swa_memory:
        # --disable-hybrid-swa-memory: ModelConfig.is_hybrid_swa is False (model_config.py
        # _derive_hybrid_model v0.5.23; ModelRunner.__init__ before), so the default pool sizes every layer
        has_swa = False
        notes.append("serving.disable_hybrid_swa_memory (SGLang --disable-hybrid-swa-memory): no "
                     "sliding-window pool; every layer, sliding or not, holds every token in one pool")
    if has_swa and any(str(family).lower() in name for family in disabled_for):
        has_swa = False
        notes.append(f"SGLang {deployment.engine_version} disables the hybrid SWA pool for this "
                     "model family: every layer, sliding or not, holds every token in one pool")
    if has_swa:
        notes.append(f"SGLang hybrid SWA pool with swa_full_tokens_ratio {ratio}"
                     f"{' (serving.swa_full_tokens_ratio)' if given_ratio is not None else ' (its default)'}: "
                     f"the sliding-window pool holds {ratio} x the full pool's tokens; "
                     "kv_cache_tokens counts the full-attention pool")

    single_division = deployment.release_default("hybrid_swa_pool_division") == "single"
    best = None
    for stage_index, (start, end) in enumerate(
            pp_layer_ranges(len(deployment.layers), deployment.pipeline_parallel)):
        plans = deployment.layers[start:end]
        if not plans:
            continue
        full = swa = naive = 0
        sized_full = sized_swa = 0  # what the hybrid SWA configurator divides by (FP4: see below)
        for p in plans:
            heads = deployment.kv_heads_per_gpu(p.geometry)
            tb = format_token_bytes(fmt, p.geometry, heads).total
            naive += naive_token_bytes(fmt, p.geometry, heads)
            # HybridSWAPoolConfigurator prices a layer at Hkv x (D_k + D_v) x element size of the
            # storage dtype, 1 for float4_e2m1fn_x2, with no FP4 halving or block scales (only
            # mxfp8 gets its scale term): pool_configurator.py v0.5.23 L656-727, the same from 0.5.11
            sized = tb
            if fmt in ("sglang_fp4", "sglang_nvfp4") and not p.geometry.is_mla:
                sized = heads * (p.geometry.head_dim + p.geometry.v_head_dim)
            if p.geometry.kind == "sliding":
                swa += tb
                sized_swa += sized
            else:
                full += tb
                sized_full += sized
        mha = [p for p in plans if not p.geometry.is_mla]
        if (fmt in ("sglang_fp4", "sglang_nvfp4") and mha and not (has_swa and swa)
                and deployment.release_default("fp4_mha_dequant_workspace") is True):
            # 0.5.16-0.5.20: one FP8 dequant workspace of Hkv x D for K and for V, shared by all
            # layers, for every FP4 recipe (pool_configurator.py v0.5.16 _compute_cell_size L260-277)
            workspace = deployment.kv_heads_per_gpu(mha[0].geometry) * mha[0].geometry.head_dim * 2
            full += workspace
            if stage_index == 0:
                notes.append(f"SGLang {deployment.engine_version} adds an FP8 dequant workspace shared by all "
                             f"layers to every FP4 cache ({workspace:,} B per token)")
        elif fmt == "sglang_nvfp4" and not (has_swa and swa):
            full += nvfp4_backend_bytes(deployment, plans, notes if stage_index == 0 else [])
        cell = full + swa
        max_tokens = max(0, pool.pool_bytes) // cell if cell else 0
        if has_swa and swa and single_division:
            # pool_configurator.py HybridSWAPoolConfigurator: one division by the fractional cell
            full_tokens = int(max(0, pool.pool_bytes) // (sized_full + ratio * sized_swa))
            if (sized_full, sized_swa) != (full, swa) and stage_index == 0:
                notes.append("SGLang sizes the hybrid SWA pools of an FP4 cache at one byte per element "
                             "(its configurator has no FP4 term), so it holds fewer tokens than the memory allows")
        elif has_swa and swa:
            # set_num_token_hybrid: the token count of the one-pool division, re-split
            full_tokens = int(max_tokens * cell / (full + ratio * swa))
        else:
            full_tokens = max_tokens
        if deployment.max_total_tokens is not None and deployment.max_total_tokens < full_tokens:
            full_tokens = deployment.max_total_tokens  # init_memory_pool: min(profiled, --max-total-tokens)
        full_tokens = full_tokens // page * page
        if best is None or full_tokens < best[1]:
            best = (stage_index, full_tokens, cell, naive, plans)
    if best is None:
        return None
    stage_index, tokens, cell, naive, plans = best
    if deployment.max_total_tokens is not None and tokens == deployment.max_total_tokens // page * page:
        notes.append(f"serving.max_total_tokens caps the pool at {deployment.max_total_tokens:,} tokens "
                     "(SGLang --max-total-tokens)")
    concurrency = tokens / max_model_len if max_model_len else 0.0
    swa_tokens = None
    if has_swa and any(p.geometry.kind == "sliding" for p in plans):
        # the SWA pool: align_page_size(int(full_tokens x ratio)) (pool_configurator.py v0.5.23
        # _solve_pool_sizes L880-881; model_runner_kv_cache_mixin.py v0.5.9 L326-332)
        swa_tokens = int(tokens * ratio) // page * page
    group = LayerGroupCapacity(
        kind="full", window=None, layers=tuple(p.geometry.index for p in plans), padding_layers=0,
        cache_format=fmt, block_size=page, bytes_per_token=cell, page_bytes=page * cell,
        page_padded=False,
        blocks_per_request=-(-max_model_len // page) if max_model_len else 0,
    )
    notes.append("SGLang allocates one extra padding page per layer beyond max_total_num_tokens")
    return EngineCapacity(
        engine="sglang", version=deployment.engine_version, pool_bytes_per_gpu=pool.pool_bytes,
        block_size=page, bytes_per_block=page * cell, num_blocks=tokens // page,
        kv_cache_tokens=tokens, max_concurrency=concurrency, max_model_len=max_model_len,
        blocks_per_request=group.blocks_per_request, groups=(group,), pipeline_stage=stage_index,
        naive_tokens=max(0, pool.pool_bytes) // naive if naive else None,
        fits_one_sequence=bool(max_model_len) and pool.pool_bytes > 0 and tokens >= max_model_len,
        swa_pool_tokens=swa_tokens,
    )
