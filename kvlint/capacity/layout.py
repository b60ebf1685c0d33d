"""The layout formula: bytes per token and per sequence, before any engine accounting.

Everything here is per storage format (`CacheFormatId`), per layer, per token. The engine modules
(`vllm.py`, `sglang.py`, `trtllm.py`) reuse `format_token_bytes` with per-GPU KV head counts.

Convention for `scale_bytes`: the capacity JSON (docs/capacity.md) defines it as "the per-token scale metadata stored beside"
the quantized data. Dynamic per-token-head scales (vLLM TRITON_ATTN), the FP8 block scales of
NVFP4/FP4 (one per 16 elements) and the four FP32 scales inside vLLM's `fp8_ds_mla` record all
grow with tokens, so all of them count as scale bytes. Static per-tensor / per-head scales live
outside the pool and are reported separately (`static_scale_bytes`).
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional, Tuple

from kvlint.records import dataclass
from kvlint.deployment import (
    PER_TOKEN_HEAD_FORMATS,
    STATIC_SCALE_FORMATS,
    UNQUANTIZED_FORMATS,
    CacheFormatId,
    Deployment,
    LayerGeometry,
    LayerPlan,
    model_dtype_format,
)

# Bytes per element of the K/V payload. INT4 and the FP4 formats pack two values per byte.
_PAYLOAD_BYTES_PER_ELEMENT: Dict[str, float] = {
    "bf16": 2,
    "fp16": 2,
    "fp32": 4,
    "fp8_e4m3": 1,
    "fp8_e4m3fnuz": 1,
    "fp8_e5m2": 1,
    "int8": 1,
    "fp8_per_token_head": 1,
    "int8_per_token_head": 1,
    "int4_per_token_head": 0.5,
    "nvfp4": 0.5,
    "trtllm_nvfp4": 0.5,
    "sglang_fp4": 0.5,
    "sglang_nvfp4": 0.5,
    "fp8_ds_mla": 1,
    "sglang_mxfp8": 1,
}

# vLLM FLASHMLA_SPARSE `fp8_ds_mla` record per token per layer
# (vllm/v1/attention/backends/mla/flashmla_sparse.py L75-117 at v0.33.0): 512 FP8 NoPE values,
# 4 FP32 scales (16 B), 64 BF16 RoPE values (128 B) = 656 B.
FP8_DS_MLA_PAYLOAD_BYTES = 512 + 128
FP8_DS_MLA_SCALE_BYTES = 16

# One FP32 scale each for K and V of one token and one KV head
# (vLLM TRITON_ATTN: scale_pad = sizeof(float32) // sizeof(uint8) = 4 per K and per V,
#  v0.25.1 vllm/v1/attention/backends/triton_attn.py L318-345; v0.33.0 customize_spec L308-319).
PER_TOKEN_HEAD_SCALE_BYTES = 2 * 4

# SGLang mxfp8: one UE8M0 (float8_e8m0fnu, 1 byte) scale per 32 E4M3 elements of K and of V
# (python/sglang/srt/mem_cache/memory_pool.py v0.5.23 MHATokenToKVPoolMXFP8.MXFP8_SCALE_BLOCK_SIZE).
MXFP8_SCALE_BLOCK = 32


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class TokenBytes:
    """Bytes one token occupies in one layer (or summed over layers)."""

    payload: int
    scale: int

    @property
    def total(self) -> int:
        return self.payload + self.scale

    def __add__(self, other: TokenBytes) -> TokenBytes:
        return TokenBytes(self.payload + other.payload, self.scale + other.scale)

    def times(self, n: int) -> TokenBytes:
        return TokenBytes(self.payload * n, self.scale * n)


def format_token_bytes(fmt: str, layer: LayerGeometry, kv_heads: int) -> TokenBytes:
    """Bytes of one token in one layer holding `kv_heads` KV heads, stored as `fmt`.

    Sources, per format:
    * bf16/fp16/fp8/int8: `AttentionSpec` page = block * Hkv * (D_k + D_v) * sizeof(dtype)
      (vllm/v1/kv_cache_interface.py, v0.33.0 L552-615; v0.11.0 `2*block*Hkv*D*sizeof`).
    * *_per_token_head: `2 * Hkv * (D_data + 4)` bytes, D_data = D (fp8/int8) or D/2 (int4)
      (v0.25.1 triton_attn.py L318-345; v0.33.0 `TritonAttentionBackend.customize_spec`).
      MLA variant: one latent of head_size plus the "inline fp32 scale pair" (8 B)
      (`MLACommonBackend.customize_spec`, mla_attention.py L1598).
    * nvfp4 (vLLM): `2 * Hkv * (D/2 + D/16)` (`nvfp4_kv_cache_full_dim`, torch_utils.py L542).
    * trtllm_nvfp4: `ceil(n/2) + ceil(n/16)` for n elements
      (TensorRT-LLM `KVCacheManager.get_cache_size_per_token`).
    * sglang_fp4: `cell//2 + (Hkv*D*2)//16` (sglang model_runner_kv_cache_mixin.py); 0.5.23's
      fp4_mx_block16 and nvfp4 on TRT-LLM MHA cost the same: `Hkv*(D//2)*2 + (Hkv*D//16)*2`
      (fp4_kv_cache_quant_method.py v0.5.23 `compute_cell_size`, L744-768 and L897-913).
    * sglang_nvfp4: the same per layer (data + one layout of block scales); what the attention
      backends add beyond it (a second scale layout, a dequant workspace) is SGLang's engine
      accounting (kvlint/capacity/sglang.py `nvfp4_backend_bytes`).
    * sglang_mxfp8: `Hkv*(D_k+D_v)` E4M3 bytes + `Hkv*(D_k+D_v)//32` UE8M0 scale bytes
      (sglang pool_configurator.py v0.5.23 L526-529, memory_pool.py `MHATokenToKVPoolMXFP8`
      L3847-3950). An MLA model gets the plain MLA pool at float8_e4m3fn: the latent at one byte,
      no scales (pool_configurator.py L359-385 has no mxfp8 term; kv_cache_configurator.py
      L1872-1881 builds MLATokenToKVPool, the MXFP8 pool only in the MHA branches).
    * fp8_ds_mla: 656 B per token per layer, independent of heads.
    * MLA: one latent of kv_lora_rank + qk_rope_head_dim values, no V (`MLAAttentionSpec`).
    """
    if fmt == "fp8_ds_mla":
        return TokenBytes(FP8_DS_MLA_PAYLOAD_BYTES, FP8_DS_MLA_SCALE_BYTES)
    k_dim = layer.head_dim
    v_dim = 0 if layer.is_mla else layer.v_head_dim
    elements = kv_heads * (k_dim + v_dim)
    if fmt in ("bf16", "fp16"):
        return TokenBytes(elements * 2, 0)
    if fmt == "fp32":
        return TokenBytes(elements * 4, 0)
    if fmt in STATIC_SCALE_FORMATS:
        return TokenBytes(elements, 0)
    if fmt in ("fp8_per_token_head", "int8_per_token_head"):
        return TokenBytes(elements, kv_heads * PER_TOKEN_HEAD_SCALE_BYTES)
    if fmt == "int4_per_token_head":
        payload = kv_heads * (k_dim // 2 + v_dim // 2)
        return TokenBytes(payload, kv_heads * PER_TOKEN_HEAD_SCALE_BYTES)
    if fmt in ("nvfp4", "sglang_fp4", "sglang_nvfp4"):
        payload = kv_heads * (_cdiv(k_dim, 2) + _cdiv(v_dim, 2))
        scale = kv_heads * (_cdiv(k_dim, 16) + _cdiv(v_dim, 16))
        if layer.is_mla:
            payload, scale = _cdiv(elements, 2), _cdiv(elements, 16)
        return TokenBytes(payload, scale)
    if fmt == "trtllm_nvfp4":
        return TokenBytes(_cdiv(elements, 2), _cdiv(elements, 16))
    if fmt == "sglang_mxfp8":
        if layer.is_mla:
            return TokenBytes(elements, 0)
        return TokenBytes(elements, kv_heads * (k_dim // MXFP8_SCALE_BLOCK + v_dim // MXFP8_SCALE_BLOCK))
    raise ValueError(f"unknown cache format {fmt!r}")


def format_payload_rate(fmt: str) -> float:
    """Payload bytes per element of a format: the "dtype-only" rate of a naive estimate."""
    return _PAYLOAD_BYTES_PER_ELEMENT[fmt]


def naive_token_bytes(fmt: str, layer: LayerGeometry, kv_heads: int) -> int:
    """Dtype-only estimate: every element at the format's payload rate, no metadata."""
    v_dim = 0 if layer.is_mla else layer.v_head_dim
    elements = kv_heads * (layer.head_dim + v_dim)
    if fmt == "fp8_ds_mla":
        return elements  # 576 latent values at one FP8 byte each
    rate = format_payload_rate(fmt)
    if rate == 0.5:
        return _cdiv(elements, 2)
    return int(elements * rate)


def bf16_token_bytes(layer: LayerGeometry, kv_heads: int) -> int:
    v_dim = 0 if layer.is_mla else layer.v_head_dim
    return kv_heads * (layer.head_dim + v_dim) * 2


def effective_format(plan: LayerPlan, model_dtype: Optional[str]) -> CacheFormatId:
    """The format a layer is stored in: a skipped layer stays at the model dtype."""
    if plan.skipped:
        return model_dtype_format(model_dtype)
    return plan.cache_format


# Answers that depend on a deployment's layer plans alone, by (question, id of the layers tuple);
# each value holds the tuple, so that id is not reused while it is kept. The resolve stage hands
# every deployment of one model, format and skip set the same tuple (kvlint.resolve.builder
# layer_plans), so `kvlint plan`'s thousands of candidates compute these once per configuration.
_BY_LAYERS: Dict[Tuple[Any, int], Tuple[Tuple[LayerPlan, ...], object]] = {}
_BY_LAYERS_MAX = 4096


def of_layers(question: Any, layers: Tuple[LayerPlan, ...], compute) -> object:
    """compute(layers), remembered for this very tuple under `question` (any hashable naming what
    compute answers); a list is computed each time (it could change under the answer)."""
    if type(layers) is not tuple:
        return compute(layers)
    key = (question, id(layers))
    hit = _BY_LAYERS.get(key)
    if hit is not None and hit[0] is layers:
        return hit[1]
    value = compute(layers)
    if len(_BY_LAYERS) >= _BY_LAYERS_MAX:
        _BY_LAYERS.clear()
    _BY_LAYERS[key] = (layers, value)
    return value


def requested_format(deployment: Deployment) -> Optional[CacheFormatId]:
    """The cache format the manifest asked for: the most common format of non-skipped layers."""
    return of_layers("requested_format", deployment.layers, most_common_format)  # type: ignore[return-value]


def most_common_format(layers: Tuple[LayerPlan, ...]) -> Optional[CacheFormatId]:
    counts: Dict[str, int] = {}
    for plan in layers:
        if not plan.skipped:
            counts[plan.cache_format] = counts.get(plan.cache_format, 0) + 1
    if not counts:
        if layers:
            return layers[0].cache_format
        return None
    return max(counts.items(), key=lambda kv: (kv[1], kv[0]))[0]  # type: ignore[return-value]


def retained_positions(layer: LayerGeometry, tokens: int) -> int:
    """Token positions one sequence of `tokens` keeps in this layer (no block rounding).

    A sliding-window layer keeps at most its window, a chunked-local layer at most its chunk.
    """
    if layer.kind in ("sliding", "chunked") and layer.window is not None:
        return min(layer.window, tokens)
    return tokens


# --------------------------------------------------------------------------------------------
# `per_token`, `static_scales`, `sequence` of the capacity JSON (docs/capacity.md)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PerTokenBytes:
    """KV-cache bytes one token costs over all layers: payload, scales, and what BF16 would cost."""

    payload_bytes: int
    scale_bytes: int
    bf16_bytes: int
    naive_bytes: int
    skipped_layer_bytes: int  # part of payload_bytes held by skipped layers at the model dtype
    skipped_layer_naive_bytes: int  # what those layers would cost at the requested dtype

    @property
    def total_bytes(self) -> int:
        return self.payload_bytes + self.scale_bytes


def _whole_model_layers(deployment: Deployment) -> Iterable[Tuple[LayerPlan, int, int]]:
    """(representative layer, whole-model KV heads (1 for MLA), number of such layers).

    Layers that differ only in their index cost the same bytes, so they are priced once and
    multiplied: a model is usually one or two classes of layers, not eighty.
    """
    return of_layers("whole_model_layers", deployment.layers, layer_classes)  # type: ignore[return-value]


def layer_classes(layers: Tuple[LayerPlan, ...]) -> Tuple[Tuple[LayerPlan, int, int], ...]:
    classes: Dict[tuple, List] = {}
    for plan in layers:
        g = plan.geometry
        key = (g.kind, g.window, g.num_kv_heads, g.head_dim, g.v_head_dim, g.is_mla,
               plan.cache_format, plan.skipped)
        entry = classes.get(key)
        if entry is None:
            classes[key] = [plan, 1]
        else:
            entry[1] += 1
    return tuple((plan, 1 if plan.geometry.is_mla else plan.geometry.num_kv_heads, count)
                 for plan, count in classes.values())


def per_token(deployment: Deployment) -> Optional[PerTokenBytes]:
    """`per_token` of the capacity JSON: whole model, all KV heads, one token held in every layer."""
    if deployment.model is None or not deployment.layers:
        return None
    model_dtype = deployment.model.dtype
    requested = requested_format(deployment)
    payload = scale = bf16 = naive = skipped = skipped_naive = 0
    for plan, heads, count in _whole_model_layers(deployment):
        fmt = effective_format(plan, model_dtype)
        tb = format_token_bytes(fmt, plan.geometry, heads)
        payload += tb.payload * count
        scale += tb.scale * count
        bf16 += bf16_token_bytes(plan.geometry, heads) * count
        layer_naive = naive_token_bytes(requested or fmt, plan.geometry, heads) * count
        naive += layer_naive
        if plan.skipped:
            skipped += tb.total * count
            skipped_naive += layer_naive
    return PerTokenBytes(payload, scale, bf16, naive, skipped, skipped_naive)


@dataclass(frozen=True)
class StaticScaleBytes:
    """Bytes of the per-model static scales (K/V, and Q where the engine keeps them)."""

    kv_bytes: int  # K and V scales, once per model
    qkv_bytes: int  # plus Q scales
    granularity: Optional[str]


def static_scales(deployment: Deployment) -> Optional[StaticScaleBytes]:
    """`static_scales` of the capacity JSON: calibrated per-layer scales held once per model (FP32).

    per-tensor: 2 values per layer (K, V), 3 with Q. per-head: Hkv per K and per V,
    H + 2*Hkv with Q (64 query + 2 x 8 KV heads = 80 values = 320 B per layer; docs/scales.md). Dynamic
    per-token-head scales are per token (see `per_token`), so they count 0 here; block-scaled
    FP4 formats carry one per-tensor global scale per K and V (counted as per-tensor).
    Skipped (unquantized) layers hold no scales.
    """
    if deployment.model is None or not deployment.layers:
        return None
    granularity = deployment.scales.granularity
    kv = qkv = 0
    model_dtype = deployment.model.dtype
    for plan, heads, count in _whole_model_layers(deployment):
        fmt = effective_format(plan, model_dtype)
        if fmt in UNQUANTIZED_FORMATS or fmt in PER_TOKEN_HEAD_FORMATS or fmt in ("fp8_ds_mla", "sglang_mxfp8"):
            continue  # sglang_mxfp8: FA4 reads only the block scales (flashattention_backend.py v0.5.23 L1536)
        if fmt in STATIC_SCALE_FORMATS and granularity == "per-head":
            q_heads = deployment.model.num_attention_heads or heads
            kv += heads * 2 * 4 * count
            qkv += (q_heads + 2 * heads) * 4 * count
        elif granularity == "per-token-head":
            continue
        else:
            kv += 2 * 4 * count
            qkv += 3 * 4 * count
    return StaticScaleBytes(kv, qkv, granularity)


@dataclass(frozen=True)
class SequenceBytes:
    """KV-cache bytes of one sequence of `tokens` tokens, with the windowed and skipped layers counted."""

    tokens: int
    payload_bytes: int
    scale_bytes: int
    bf16_bytes: int
    naive_bytes: int  # every layer at the requested payload rate, every layer retaining all tokens
    full_length_bytes: int  # same layout, but every layer retaining all tokens (no window saving)
    retained_positions: int  # A: token-layer positions summed over layers
    skipped_positions: int  # S: the part held by skipped layers

    @property
    def bytes(self) -> int:
        return self.payload_bytes + self.scale_bytes

    @property
    def compression_vs_bf16(self) -> float:
        return self.bf16_bytes / self.bytes if self.bytes else 0.0


def sequence(deployment: Deployment, tokens: int) -> Optional[SequenceBytes]:
    """`sequence` of the capacity JSON: one sequence of `tokens`, retained token-layer positions, no rounding."""
    if deployment.model is None or not deployment.layers:
        return None
    model_dtype = deployment.model.dtype
    requested = requested_format(deployment)
    payload = scale = bf16 = naive = full_len = positions = skipped = 0
    for plan, heads, count in _whole_model_layers(deployment):
        fmt = effective_format(plan, model_dtype)
        tb = format_token_bytes(fmt, plan.geometry, heads)
        kept = retained_positions(plan.geometry, tokens) * count
        payload += tb.payload * kept
        scale += tb.scale * kept
        bf16 += bf16_token_bytes(plan.geometry, heads) * kept
        naive += naive_token_bytes(requested or fmt, plan.geometry, heads) * tokens * count
        full_len += tb.total * tokens * count
        positions += kept
        if plan.skipped:
            skipped += kept
    return SequenceBytes(tokens, payload, scale, bf16, naive, full_len, positions, skipped)


def layer_token_bytes(
    deployment: Deployment, plans: Iterable[LayerPlan], per_gpu: bool = True
) -> List[Tuple[LayerPlan, str, TokenBytes]]:
    """(plan, effective format, bytes per token) for each layer, per GPU by default."""
    model_dtype = deployment.model.dtype if deployment.model else None
    out: List[Tuple[LayerPlan, str, TokenBytes]] = []
    for plan in plans:
        heads = deployment.kv_heads_per_gpu(plan.geometry) if per_gpu else (
            1 if plan.geometry.is_mla else plan.geometry.num_kv_heads
        )
        fmt = effective_format(plan, model_dtype)
        out.append((plan, fmt, format_token_bytes(fmt, plan.geometry, heads)))
    return out
