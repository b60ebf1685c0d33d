"""Small `Deployment` factory for the smoke tests (built directly, without the resolve stage)."""

from __future__ import annotations

from typing import Optional, Sequence

from kvlint.catalog import load_catalogs
from kvlint.resolve.engine_view import release_behaviour
from kvlint.deployment import (
    Deployment,
    GpuInfo,
    LayerGeometry,
    LayerPlan,
    MemoryPlan,
    ModelGeometry,
    ScaleLayout,
)

H100 = GpuInfo("H100-SXM-80GB", "nvidia", 85_520_809_984, (9, 0), "sm90", "e4m3", False)

GRANULARITY = {
    "fp8_per_token_head": "per-token-head",
    "int8_per_token_head": "per-token-head",
    "int4_per_token_head": "per-token-head",
    "nvfp4": "block",
    "trtllm_nvfp4": "block",
    "sglang_fp4": "block",
    "sglang_mxfp8": "block",
    "sglang_nvfp4": "block",
    "bf16": None,
    "fp16": None,
}


def deployment(
    cache_format: str = "fp8_per_token_head",
    *,
    name: Optional[str] = None,
    num_layers: int = 2,
    num_kv_heads: int = 2,
    num_attention_heads: int = 8,
    head_dim: int = 64,
    layer_kinds: Optional[Sequence[str]] = None,
    window: int = 48,
    skipped: Sequence[int] = (),
    granularity: Optional[str] = "default",
    source: Optional[str] = "checkpoint",
    backend: Optional[str] = "TRITON_ATTN",
    block_size: Optional[int] = 16,
    tensor_parallel: int = 1,
    model_dtype: str = "bfloat16",
    kv_dtype: Optional[str] = None,
) -> Deployment:
    kinds = list(layer_kinds) if layer_kinds else ["full"] * num_layers
    layers = []
    for i, kind in enumerate(kinds):
        geometry = LayerGeometry(
            index=i,
            kind=kind,  # type: ignore[arg-type]
            window=window if kind != "full" else None,
            num_kv_heads=num_kv_heads,
            head_dim=head_dim,
            v_head_dim=head_dim,
        )
        layers.append(LayerPlan(geometry, cache_format, skipped=i in skipped))  # type: ignore[arg-type]
    model = ModelGeometry(
        name="test/tiny",
        num_layers=len(kinds),
        num_attention_heads=num_attention_heads,
        num_kv_heads=num_kv_heads,
        head_dim=head_dim,
        layers=tuple(layers),
        max_position_embeddings=4096,
        dtype=model_dtype,
    )
    if granularity == "default":
        granularity = GRANULARITY.get(cache_format, "per-tensor")
    return Deployment(
        file="factory.yaml",
        name=name or f"tiny-{cache_format}",
        engine="vllm",
        engine_version="0.33.0",
        requested_backend=backend or "auto",
        backend=backend,
        gpu=H100,
        tensor_parallel=tensor_parallel,
        pipeline_parallel=1,
        model=model,
        kv_dtype=kv_dtype or cache_format,
        layers=tuple(layers),
        scales=ScaleLayout(granularity, None if cache_format in ("bf16", "fp16") else source),  # type: ignore[arg-type]
        block_size=block_size,
        backend_block_size=None,
        memory=MemoryPlan(85_520_809_984, 0.92, 8 << 30, None, 1 << 30),
        max_model_len=4096,
        max_num_seqs=16,
        max_num_batched_tokens=None,
        # vLLM 0.33.0's planning behaviour, as resolve hands it to capacity.
        **release_behaviour(*load_catalogs(()).engines.modelled_release("vllm", "0.33.0")),
    )
