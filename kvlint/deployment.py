"""The resolved deployment: what the `resolve` stage hands to rules, capacity and smoke.

A `Deployment` is plain, frozen data. Everything the catalog could not tell stays `None`; the
stages after resolve must cope with that (a finding has already been raised for it).

Cache formats are named by *storage format id* (`CacheFormatId`), not by an engine's flag
spelling: vLLM `fp8` on CUDA and SGLang `fp8_e4m3` both store `fp8_e4m3`. The mapping from an
engine's literal to a format id is catalog data.
"""

from __future__ import annotations

from dataclasses import field
from typing import Any, FrozenSet, Literal, Mapping, Optional, Tuple

from kvlint.records import dataclass

AttentionKind = Literal["full", "sliding", "chunked"]

# Storage format of one layer's KV cache. The byte arithmetic of each lives in
# kvlint/capacity/layout.py; the smoke test builds each one with real kernels.
CacheFormatId = Literal[
    "bf16",
    "fp16",
    "fp32",
    "fp8_e4m3",  # OCP E4M3 (per-tensor or static per-head scales, held outside the pool)
    "fp8_e4m3fnuz",  # AMD MI300-family FNUZ flavour (same byte cost)
    "fp8_e5m2",
    "int8",  # TensorRT-LLM INT8 KV (per-tensor scale)
    "fp8_per_token_head",  # vLLM: inline FP32 K and V scale per token and KV head
    "int8_per_token_head",
    "int4_per_token_head",  # packed two values per byte + inline FP32 scales
    "nvfp4",  # vLLM: E2M1 data + one FP8 scale per 16 elements
    "trtllm_nvfp4",  # TensorRT-LLM: ceil(n/2) + ceil(n/16) bytes per n elements
    "sglang_fp4",  # SGLang fp4_e2m1 / fp4_mx_block16: E2M1 data + one uint8 scale per 16 elements
    "sglang_nvfp4",  # SGLang nvfp4: as sglang_fp4 (E4M3 scales), plus what its backends add
    "fp8_ds_mla",  # vLLM FLASHMLA_SPARSE DeepSeek latent, 656 B per token per layer
    "sglang_mxfp8",  # SGLang mxfp8: E4M3 data + one UE8M0 scale byte per 32 elements (MHA pool)

]

ScaleGranularity = Literal["per-tensor", "per-head", "per-token-head", "block"]
ScaleSource = Literal["unit", "checkpoint", "warmup", "dynamic"]

# Classes of cache formats (one definition; resolve, capacity and smoke read them here).
UNQUANTIZED_FORMATS = frozenset({"bf16", "fp16", "fp32"})
PER_TOKEN_HEAD_FORMATS = frozenset(
    {"fp8_per_token_head", "int8_per_token_head", "int4_per_token_head"}
)
# Formats whose scales are static (per-tensor or per-head buffers outside the KV pool).
STATIC_SCALE_FORMATS = frozenset({"fp8_e4m3", "fp8_e4m3fnuz", "fp8_e5m2", "int8"})
# Block-scaled 4-bit formats: block scales are inline; a per-tensor global scale sits outside.
BLOCK_SCALED_FORMATS = frozenset({"nvfp4", "trtllm_nvfp4", "sglang_fp4", "sglang_nvfp4"})
# Formats whose scales live inside the KV record, one per block of elements and per token: the
# FP4 formats above, SGLang's MXFP8 (UE8M0 per 32 elements, no global scale) and vLLM's fp8_ds_mla.
INLINE_SCALE_FORMATS = BLOCK_SCALED_FORMATS | frozenset({"sglang_mxfp8", "fp8_ds_mla"})
# The engines built on ggml, resolved from the ggml catalog (kvlint.resolve.llamacpp) rather than
# from the engine catalog's backends.
GGML_ENGINES = ("llama.cpp", "ollama")


def model_dtype_format(model_dtype: Optional[str]) -> CacheFormatId:
    """The storage format of a layer kept at the model dtype (vLLM skip layers: kv dtype "auto").

    `model_dtype` is the dtype the engine runs the model in. A float32 checkpoint under vLLM's
    dtype "auto" runs in bfloat16 (`_resolve_auto_dtype` downcasts float32 to the platform's
    preferred dtype; kvlint.catalog.hf_config reads such a config as bfloat16), so "float32" here
    is a written `model.dtype: float32` / `--dtype float32`: the engine then runs in float32 and an
    "auto" cache stores 4-byte elements (vllm/config/cache.py: CacheDType "auto" = model dtype).
    """
    if model_dtype in ("float16", "fp16", "half"):
        return "fp16"
    if model_dtype in ("float32", "fp32", "float"):
        return "fp32"
    return "bf16"



@dataclass(frozen=True)
class LayerGeometry:
    """One attention layer as the engine sees it (before tensor parallelism)."""

    index: int
    kind: AttentionKind
    window: Optional[int]  # sliding-window size or attention-chunk size in tokens; None for full
    num_kv_heads: int  # whole model; 1 for MLA
    head_dim: int  # K head size; for MLA the latent size kv_lora_rank + qk_rope_head_dim
    v_head_dim: int  # V head size; 0 for MLA (the latent serves K and V)
    is_mla: bool = False
    has_sinks: bool = False


@dataclass(frozen=True)
class ModelGeometry:
    """The model's shape as the KV cache sees it: layers, heads, head size, dtype."""

    name: str
    num_layers: int
    num_attention_heads: Optional[int]
    num_kv_heads: int
    head_dim: int
    layers: Tuple[LayerGeometry, ...]
    max_position_embeddings: Optional[int]
    dtype: str  # "bfloat16" | "float16" | "float32"
    kv_lora_rank: Optional[int] = None
    qk_rope_head_dim: Optional[int] = None
    # MLA: qk_nope_head_dim and whether the config has a sparse-attention indexer (index_topk,
    # DeepSeek-V3.2); vLLM 0.11-0.17 pick the MLA block size by them. None = unknown.
    qk_nope_head_dim: Optional[int] = None
    mla_sparse: Optional[bool] = None
    has_sinks: bool = False
    source: str = "catalog"  # catalog | config | manifest
    # The checkpoint's HF `architectures` (catalog entries; empty when unknown). Engines key
    # release behaviour on them (SGLang's multimodal memory-fraction factor, hybrid-pool overrides).
    architectures: Tuple[str, ...] = ()
    vocab_size: Optional[int] = None  # config.json vocab_size (catalog entries); None when unknown
    # config.json hidden_size / intermediate_size (config.json or manifest geometry); SGLang's
    # weight-load memory is modelled from the tensor shapes (kvlint/capacity/sglang_load.py)
    hidden_size: Optional[int] = None
    intermediate_size: Optional[int] = None

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank is not None

    @property
    def has_sliding_layers(self) -> bool:
        return any(layer.kind == "sliding" for layer in self.layers)


@dataclass(frozen=True)
class LayerPlan:
    """A layer plus the storage format the engine will use for its cache."""

    geometry: LayerGeometry
    cache_format: CacheFormatId
    skipped: bool = False  # kept at the model dtype by the skip set


@dataclass(frozen=True)
class GpuInfo:
    """The GPU the deployment runs on, as far as the KV cache cares."""

    id: str
    vendor: Literal["nvidia", "amd", "apple"]
    memory_bytes: Optional[int]  # as the CUDA/ROCm runtime reports it, or the override; None = unknown
    compute_capability: Optional[Tuple[int, int]]  # NVIDIA (9, 0); None for AMD
    arch: Optional[str]  # "sm90", "gfx942"
    fp8: Optional[Literal["e4m3", "e4m3fnuz"]]  # native FP8 flavour, None when absent
    fp4: bool
    # Where memory_bytes comes from: "manifest" (hardware.memory), a runtime total ("cuda",
    # "rocm", "rocm-smi"), or an optimistic stand-in ("nvidia-smi", "spec"; docs/capacity.md).
    memory_basis: Optional[str] = None


@dataclass(frozen=True)
class ScaleLayout:
    """How the quantized cache's scales are laid out and where they come from."""

    granularity: Optional[ScaleGranularity]  # None for unquantized caches
    source: Optional[ScaleSource]
    derived: bool = False  # True when kvlint derived it rather than reading it from the manifest


@dataclass(frozen=True)
class MemoryPlan:
    """The memory figures that size the KV pool on one GPU."""

    device_memory_bytes: Optional[int]  # per GPU, as the runtime reports it (or the override)
    gpu_memory_utilization: Optional[float]  # as written (vLLM gpu_memory_utilization, SGLang
    #   mem_fraction_static, TensorRT-LLM free_gpu_memory_fraction); None = engine default
    kv_cache_memory: Optional[int]  # exact KV pool per GPU when the manifest gives it
    non_kv_memory: Optional[int]  # per GPU; None means "estimate it"
    weights_bytes: Optional[int]  # whole model; capacity splits it across tp x pp
    default_memory_fraction: Optional[float] = None  # the release's default from the catalog
    # Whether the release subtracts CUDA-graph memory from the KV budget (catalog default
    # estimate_cudagraph_memory); None when the catalog does not say.
    cuda_graphs_in_budget: Optional[bool] = None


@dataclass(frozen=True)
class FractionFactor:
    """A factor the engine release applies to its memory fraction on its own (SGLang: aiter
    above 8192 tokens of context multiplies mem_fraction_static by 0.85), from the catalog's
    `rewrites`; `reason` names the release and the condition."""

    factor: float
    reason: str


@dataclass(frozen=True)
class Targets:
    """The capacity targets of the manifest (`targets`)."""

    min_concurrency: Optional[float] = None
    min_kv_tokens: Optional[int] = None
    planned_kv_tokens: Optional[int] = None


@dataclass(frozen=True)
class GgmlPlan:
    """How llama.cpp (directly, or driven by Ollama) will size its KV cache: the effective cache
    types with their block layouts, and the sizing rules of the llama.cpp build that runs.
    Filled by resolve from rules/catalog/ggml/; capacity (kvlint/capacity/llamacpp.py) only
    does the arithmetic."""

    engine: str  # "llama.cpp" | "ollama"
    build: str  # the llama.cpp build whose rules apply ("b4747")
    type_k: str  # effective K cache type ("q8_0")
    type_v: str
    k_block: Tuple[int, int]  # (elements, bytes) per block: q8_0 (32, 34), f16 (1, 2)
    v_block: Tuple[int, int]
    flash_attn: Optional[bool]  # effective flash attention; None = cannot be predicted
    context_size: Optional[int]  # -c before padding (Ollama: num_ctx x num_parallel); None = unknown
    n_seq: int  # slots (-np / OLLAMA_NUM_PARALLEL)
    unified: bool  # one KV stream for all slots
    per_stream: bool  # the build keeps one stream per slot when not unified
    padding: str  # "by_fa" (256 with flash attention, 32 without) | "256"
    swa_rule: str  # "full" | "pad_then_min" | "min_then_pad256"
    swa_full: bool
    ubatch: int
    ollama_estimate: Optional[str] = None  # Ollama's own KV estimate: "dropped_scales" | "f16"
    notes: Tuple[str, ...] = ()
    # bits per element of the K / V block's quants (the rest of the block is its scale); None for
    # an unquantized type (catalog cache_types payload_bits)
    k_payload_bits: Optional[int] = None
    v_payload_bits: Optional[int] = None
    # the bytes per element the dropped_scales estimate prices K and V at (catalog
    # estimate_bytes_per_element: Ollama's kvCacheBytesPerElement)
    ollama_estimate_rates: Optional[Tuple[float, float]] = None


@dataclass(frozen=True)
class Deployment:
    """One deployment resolved: engine, release, backend, GPU, model and KV-cache plan."""

    file: str
    name: str
    engine: Literal["vllm", "sglang", "tensorrt-llm", "llama.cpp", "ollama"]
    engine_version: str
    requested_backend: str  # "auto" or the engine's spelling
    backend: Optional[str]  # the backend the engine will actually use (predicted), None if unknown
    gpu: Optional[GpuInfo]
    tensor_parallel: int
    pipeline_parallel: int
    model: Optional[ModelGeometry]
    kv_dtype: str  # the engine literal the cache is stored as: as written, unless the release rewrites it (SGLang tokenspeed_mla)
    layers: Tuple[LayerPlan, ...]  # empty when the model is unknown
    scales: ScaleLayout
    block_size: Optional[int]  # explicit kv_cache.block_size, None = engine/backend default
    backend_block_size: Optional[int]  # the backend's preferred block size (catalog), if any
    memory: MemoryPlan
    max_model_len: Optional[int]
    max_num_seqs: Optional[int]
    max_num_batched_tokens: Optional[int]  # None = engine default for this GPU
    targets: Targets = field(default_factory=Targets)
    env: Tuple[Tuple[str, str], ...] = ()
    # Engine knobs the capacity model needs, with their effective values.
    disable_hybrid_kv_cache_manager: bool = False
    max_total_tokens: Optional[int] = None  # SGLang --max-total-tokens: caps the pool's tokens
    swa_full_tokens_ratio: Optional[float] = None  # SGLang --swa-full-tokens-ratio; None = its 0.8
    disable_hybrid_swa_memory: bool = False  # SGLang --disable-hybrid-swa-memory
    chunked_prefill_size: Optional[int] = None  # SGLang --chunked-prefill-size; None = its tier default
    # vLLM --kv-transfer-config's kv_connector (engine.options.kv_transfer_config), e.g. LMCacheConnectorV1
    kv_connector: Optional[str] = None
    # How this engine release plans and logs its KV cache: the engine catalog's `defaults` and
    # available `features` at `modelled_release` (the release itself when the catalog knows it,
    # else the nearest catalogued one; `release_note` says so). Capacity reads release-dependent
    # behaviour only from here, never from version numbers of its own.
    modelled_release: Optional[str] = None
    release_note: Optional[str] = None
    release_defaults: Mapping[str, Any] = field(default_factory=dict, hash=False, compare=False)
    release_features: FrozenSet[str] = frozenset()
    # llama.cpp / Ollama: the ggml cache plan (None for the other engines).
    ggml: Optional[GgmlPlan] = None
    # Factors the release applies to the memory fraction on its own (catalog `rewrites` that set
    # mem_fraction_static_factor), and why one may apply but cannot be told (context unknown).
    mem_fraction_factors: Tuple[FractionFactor, ...] = ()
    mem_fraction_factor_note: Optional[str] = None
    # Set when the engine replaces the block size on its own (vLLM 0.11-0.17 on MLA models):
    # block_size is then None, backend_block_size the size it runs with, and this says why.
    block_size_note: Optional[str] = None

    def release_default(self, name: str, fallback: Any = None) -> Any:
        return self.release_defaults.get(name, fallback)

    def env_value(self, name: Optional[str]) -> Optional[str]:
        """engine.env[name] as written; None when unset (or no name)."""
        return next((v for k, v in self.env if k == name), None) if name else None

    def env_flag(self, name: Optional[str]) -> Optional[bool]:
        """A boolean vLLM environment switch as vllm/envs.py reads it, bool(int(value)); None when
        unset or not an integer."""
        raw = self.env_value(name)
        if raw is None:
            return None
        try:
            return bool(int(raw.strip()))
        except ValueError:
            return None

    def kv_heads_per_gpu(self, layer: LayerGeometry) -> int:
        """vLLM ModelConfig.get_num_kv_heads: max(1, Hkv // tp); MLA latents are not split."""
        if layer.is_mla:
            return 1
        return max(1, layer.num_kv_heads // self.tensor_parallel)
