"""Deployment builders for the capacity tests (the resolve stage is built elsewhere)."""

from __future__ import annotations

from typing import Iterable, Optional, Sequence, Tuple

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

GiB = 1 << 30
MiB = 1 << 20
KiB = 1 << 10


def dense_layers(n: int, kv_heads: int, head_dim: int) -> Tuple[LayerGeometry, ...]:
    return tuple(LayerGeometry(i, "full", None, kv_heads, head_dim, head_dim) for i in range(n))


def alternating_layers(n: int, kv_heads: int, head_dim: int, window: int,
                       sliding_first: bool = True) -> Tuple[LayerGeometry, ...]:
    """gpt-oss / Gemma 2: even layers sliding, odd layers full."""
    out = []
    for i in range(n):
        sliding = (i % 2 == 0) == sliding_first
        out.append(LayerGeometry(i, "sliding" if sliding else "full", window if sliding else None,
                                 kv_heads, head_dim, head_dim))
    return tuple(out)


def gemma3_layers(n: int, kv_heads: int, head_dim: int, window: int) -> Tuple[LayerGeometry, ...]:
    """Gemma 3: layer i is global iff (i + 1) % 6 == 0."""
    return tuple(
        LayerGeometry(i, "full" if (i + 1) % 6 == 0 else "sliding",
                      None if (i + 1) % 6 == 0 else window, kv_heads, head_dim, head_dim)
        for i in range(n)
    )


def mla_layers(n: int, kv_lora_rank: int = 512, rope: int = 64) -> Tuple[LayerGeometry, ...]:
    return tuple(LayerGeometry(i, "full", None, 1, kv_lora_rank + rope, 0, is_mla=True)
                 for i in range(n))


def model(name: str, layers: Sequence[LayerGeometry], heads: Optional[int] = None,
          max_pos: Optional[int] = 131072, dtype: str = "bfloat16",
          mla: Optional[Tuple[int, int]] = None) -> ModelGeometry:
    first = layers[0]
    return ModelGeometry(
        name=name, num_layers=len(layers), num_attention_heads=heads,
        num_kv_heads=first.num_kv_heads, head_dim=first.head_dim, layers=tuple(layers),
        max_position_embeddings=max_pos, dtype=dtype,
        kv_lora_rank=mla[0] if mla else None, qk_rope_head_dim=mla[1] if mla else None,
    )


H100 = GpuInfo("H100-SXM-80GB", "nvidia", 85_520_809_984, (9, 0), "sm90", "e4m3", False)
L4 = GpuInfo("L4", "nvidia", 24_152_899_584, (8, 9), "sm89", "e4m3", False)


def deployment(
    geometry: Optional[ModelGeometry],
    cache_format: str = "bf16",
    *,
    engine: str = "vllm",
    version: str = "0.33.0",
    kv_dtype: Optional[str] = None,
    skip: Iterable[int] = (),
    granularity: Optional[str] = None,
    block_size: Optional[int] = None,
    backend_block_size: Optional[int] = None,
    tp: int = 1,
    pp: int = 1,
    kv_cache_memory: Optional[int] = 40 * GiB,
    device_memory: Optional[int] = None,
    gpu: Optional[GpuInfo] = H100,
    gmu: Optional[float] = None,
    weights: Optional[int] = None,
    non_kv: Optional[int] = None,
    max_model_len: Optional[int] = None,
    max_num_batched_tokens: Optional[int] = None,
    disable_hybrid: bool = False,
    env: Tuple[Tuple[str, str], ...] = (),
) -> Deployment:
    skip_set = set(skip)
    layers: Tuple[LayerPlan, ...] = ()
    if geometry is not None:
        layers = tuple(LayerPlan(g, cache_format, g.index in skip_set) for g in geometry.layers)
    quantized = cache_format not in ("bf16", "fp16", "fp32")
    if device_memory is None and gpu is not None:
        device_memory = gpu.memory_bytes
    # The release's behaviour as resolve would give it: the engine catalog's defaults/features.
    modelled, note = load_catalogs(()).engines.modelled_release(engine, version)
    default = modelled.default if modelled is not None else (lambda name: None)
    fraction = default("gpu_memory_utilization" if engine == "vllm" else
                            "mem_fraction_static" if engine == "sglang" else "free_gpu_memory_fraction")
    cuda_graphs = default("estimate_cudagraph_memory")
    return Deployment(
        file="deploy.yaml", name="test", engine=engine, engine_version=version,
        requested_backend="auto", backend=None, gpu=gpu, tensor_parallel=tp,
        pipeline_parallel=pp, model=geometry, kv_dtype=kv_dtype or cache_format, layers=layers,
        scales=ScaleLayout(granularity if quantized else None, None),
        block_size=block_size, backend_block_size=backend_block_size,
        memory=MemoryPlan(device_memory, gmu, kv_cache_memory, non_kv, weights,
                          default_memory_fraction=fraction if isinstance(fraction, (int, float)) else None,
                          cuda_graphs_in_budget=cuda_graphs if isinstance(cuda_graphs, bool) else None),
        max_model_len=max_model_len, max_num_seqs=None,
        max_num_batched_tokens=max_num_batched_tokens,
        env=env, disable_hybrid_kv_cache_manager=disable_hybrid,
        **release_behaviour(modelled, note),
    )


def sliding_indices(geometry: ModelGeometry) -> Tuple[int, ...]:
    return tuple(layer.index for layer in geometry.layers if layer.kind == "sliding")
