"""TensorRT-LLM KV-cache accounting (tensorrt_llm/_torch/pyexecutor/resource_manager.py
`KVCacheManager.get_cache_size_per_token`, `_util.py` `KvCacheCreator`,
`calculate_max_num_blocks`; NVIDIA/TensorRT-LLM 1.x, cited by path; docs/capacity.md).

    n = elements per token over the stage's attention layers (2*Hkv*D per layer, MLA: latent)
    kv_size = n (fp8, int8) | 2n (bf16/fp16) | ceil(n/2) + ceil(n/16) (nvfp4)
    max_tokens = pool // kv_size;  blocks = max_tokens // tokens_per_block (default 32)
"""

from __future__ import annotations

from typing import List, Optional

from kvlint.capacity.layout import naive_token_bytes, requested_format
from kvlint.capacity.pool import PoolEstimate
from kvlint.capacity.result import EngineCapacity, LayerGroupCapacity
from kvlint.capacity.vllm import pp_layer_ranges
from kvlint.deployment import Deployment

DEFAULT_TOKENS_PER_BLOCK = 32  # KvCacheConfig.tokens_per_block


def _kv_size(fmt: str, elements: int) -> int:
    if fmt in ("bf16", "fp16"):
        return 2 * elements
    if fmt == "fp32":
        return 4 * elements
    if fmt in ("trtllm_nvfp4", "nvfp4", "sglang_fp4"):
        return -(-elements // 2) + -(-elements // 16)
    return elements


def trtllm_capacity(deployment: Deployment, pool: PoolEstimate,
                    notes: List[str]) -> Optional[EngineCapacity]:
    if deployment.model is None or not deployment.layers or pool.pool_bytes is None:
        return None
    fmt = requested_format(deployment) or "bf16"
    if any(p.skipped for p in deployment.layers):
        notes.append("TensorRT-LLM has no per-layer KV dtype: the skip set is ignored")
    if any(p.geometry.kind != "full" for p in deployment.layers):
        notes.append("TensorRT-LLM sized as if every layer were full attention "
                     "(max_attention_window not modelled)")
    tpb = deployment.block_size or DEFAULT_TOKENS_PER_BLOCK
    if deployment.block_size is None:
        notes.append(f"tokens_per_block defaulted to TensorRT-LLM's {DEFAULT_TOKENS_PER_BLOCK}")
    max_model_len = deployment.max_model_len or deployment.model.max_position_embeddings
    best = None
    for stage_index, (start, end) in enumerate(
            pp_layer_ranges(len(deployment.layers), deployment.pipeline_parallel)):
        plans = deployment.layers[start:end]
        if not plans:
            continue
        elements = naive = 0
        for p in plans:
            heads = deployment.kv_heads_per_gpu(p.geometry)
            v_dim = 0 if p.geometry.is_mla else p.geometry.v_head_dim
            elements += heads * (p.geometry.head_dim + v_dim)
            naive += naive_token_bytes(fmt, p.geometry, heads)
        kv_size = _kv_size(fmt, elements)
        max_tokens = max(0, pool.pool_bytes) // kv_size if kv_size else 0
        blocks = max_tokens // tpb
        if best is None or blocks < best[1]:
            best = (stage_index, blocks, kv_size, naive, plans)
    if best is None:
        return None
    stage_index, blocks, kv_size, naive, plans = best
    tokens = blocks * tpb
    notes.append("TensorRT-LLM kv_cache_tokens = blocks x tokens_per_block (its log prints the "
                 "max_tokens figure before the block floor)")
    group = LayerGroupCapacity(
        kind="full", window=None, layers=tuple(p.geometry.index for p in plans), padding_layers=0,
        cache_format=fmt, block_size=tpb, bytes_per_token=kv_size, page_bytes=tpb * kv_size,
        page_padded=False,
        blocks_per_request=-(-max_model_len // tpb) if max_model_len else 0,
    )
    return EngineCapacity(
        engine="tensorrt-llm", version=deployment.engine_version,
        pool_bytes_per_gpu=pool.pool_bytes, block_size=tpb, bytes_per_block=tpb * kv_size,
        num_blocks=blocks, kv_cache_tokens=tokens,
        max_concurrency=tokens / max_model_len if max_model_len else 0.0,
        max_model_len=max_model_len, blocks_per_request=group.blocks_per_request,
        groups=(group,), pipeline_stage=stage_index,
        naive_tokens=max(0, pool.pool_bytes) // naive if naive else None,
        fits_one_sequence=bool(max_model_len) and pool.pool_bytes > 0
        and blocks >= group.blocks_per_request,
    )
