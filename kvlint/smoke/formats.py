"""Cache formats as real bytes: quantize K/V into cache cells and read them back (torch).

Every format is stored in the layout of vLLM's TRITON_ATTN paged cache
(vllm-project/vllm `vllm/v1/attention/backends/triton_attn.py` `get_kv_cache_shape`, v0.20-v0.27,
L318-345 at v0.25.1): one tensor per layer of shape

    (num_blocks, 2, block_size, num_kv_heads, cell_width)

where index 1 selects K (0) or V (1) and a *cell* is what one token of one KV head stores for K
(or for V), in the storage dtype:

| format | storage | cell |
|---|---|---|
| bf16 / fp16 / fp32 | the model dtype | D values |
| fp8_e4m3 / fp8_e4m3fnuz / fp8_e5m2 | uint8 | D FP8 values; the per-tensor or static per-head scale lives outside the pool |
| int8 (TensorRT-LLM) | int8 | D values; static scale outside the pool |
| fp8_per_token_head | uint8 | D E4M3 values, then the FP32 scale as 4 bytes |
| int8_per_token_head | int8 | D values, then the FP32 scale as 4 bytes |
| int4_per_token_head | uint8 | D/2 bytes (two signed 4-bit values per byte, low nibble first), then the FP32 scale |
| nvfp4 / trtllm_nvfp4 / sglang_nvfp4 | uint8 | D/2 bytes of E2M1 pairs, then D/16 E4M3 block scales (one per 16 values); a per-layer FP32 global scale lives outside the pool |
| sglang_fp4 | uint8 | D/2 bytes of E2M1 pairs, then D/16 UE8M0 (power-of-two exponent) block scales |
| sglang_mxfp8 | uint8 | D E4M3 values, then D/32 UE8M0 block scales (one per 32 values) |

So a per-token-head cell is `[K data | K fp32 scale]` at index 0 and `[V data | V fp32 scale]` at
index 1: per token per head `2 * (D_data + 4)` bytes, vLLM's `2 * Hkv * (D_data + 4)` per layer.
NVFP4 gives vLLM's `2 * Hkv * (D/2 + D/16)`.

The quantizers mirror what the engines do on cache write: symmetric, round to nearest, scale =
amax / largest representable value (dynamic formats compute it per token and head at write time;
static formats take it from a calibration pass over the written data, or 1.0 for `source: unit`).
"""

from __future__ import annotations

from typing import Dict, Optional, Tuple

import torch

from kvlint.records import dataclass

FP32_SCALE_BYTES = 4
NVFP4_BLOCK = 16
MXFP8_BLOCK = 32
# E2M1 magnitudes, indexed by the 3 low bits of the 4-bit code (bit 3 is the sign).
E2M1_VALUES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)
E2M1_MAX = 6.0
_SCALE_FLOOR = 1e-12


class UnsupportedLayout(ValueError):
    """The smoke test cannot build this format for this geometry (reported, never a crash)."""


@dataclass(frozen=True)
class CacheFormat:
    """One storage format: how a K or V head vector becomes a cache cell and back."""

    id: str
    storage_dtype: torch.dtype  # the dtype of the allocated pool tensor
    element: str  # bf16 | fp16 | fp32 | fp8_e4m3 | fp8_e4m3fnuz | fp8_e5m2 | int8 | int4 | e2m1
    scaling: str  # none | static | per-token-head | block16-e4m3 | block16-ue8m0 | block32-ue8m0

    @property
    def quantized(self) -> bool:
        return self.scaling != "none"

    @property
    def inline_scales(self) -> bool:
        """Scales stored inside the pool, beside each token's data."""
        return self.scaling in ("per-token-head", "block16-e4m3", "block16-ue8m0", "block32-ue8m0")

    def data_width(self, head_dim: int) -> int:
        """Storage elements of quantized data per cell."""
        if self.element in ("int4", "e2m1"):
            if head_dim % 2:
                raise UnsupportedLayout(f"{self.id} packs two values per byte: head_dim {head_dim} is odd")
            return head_dim // 2
        return head_dim

    def cell_width(self, head_dim: int) -> int:
        """Storage elements per K (or V) cell: data plus inline scales."""
        width = self.data_width(head_dim)
        if self.scaling == "per-token-head":
            width += FP32_SCALE_BYTES // _element_size(self.storage_dtype)
        elif self.scaling.startswith("block16"):
            if head_dim % NVFP4_BLOCK:
                raise UnsupportedLayout(
                    f"{self.id} has one scale per {NVFP4_BLOCK} values: head_dim {head_dim} is not a multiple"
                )
            width += head_dim // NVFP4_BLOCK
        elif self.scaling == "block32-ue8m0":
            if head_dim % MXFP8_BLOCK:
                raise UnsupportedLayout(
                    f"{self.id} has one scale per {MXFP8_BLOCK} values: head_dim {head_dim} is not a multiple"
                )
            width += head_dim // MXFP8_BLOCK
        return width

    # ------------------------------------------------------------------ quantize

    def encode(self, x: torch.Tensor, static_scale: Optional[torch.Tensor] = None) -> torch.Tensor:
        """x: (N, H, D) float -> cells (N, H, cell_width) in the storage dtype.

        `static_scale` is a () or (H,) FP32 tensor for `static` formats and the per-layer FP32
        global scale for NVFP4; ignored otherwise.
        """
        x = x.float()
        if self.scaling == "none":
            return x.to(self.storage_dtype)
        if self.scaling == "static":
            scale = _broadcast_head_scale(static_scale, x)
            return _quantize_elements(self.element, x / scale).view(self.storage_dtype)
        if self.scaling == "per-token-head":
            amax = x.abs().amax(dim=-1, keepdim=True)
            scale = (amax / _element_max(self.element)).clamp_min(_SCALE_FLOOR)
            q = self._quantize_data(x / scale)
            scale_bytes = scale.contiguous().view(torch.uint8).view(self.storage_dtype)
            return torch.cat([q, scale_bytes], dim=-1)
        if self.scaling.startswith("block16"):
            return self._encode_fp4(x, static_scale)
        if self.scaling == "block32-ue8m0":
            return self._encode_mxfp8(x)
        raise AssertionError(self.scaling)

    def _quantize_data(self, y: torch.Tensor) -> torch.Tensor:
        if self.element == "int4":
            q = torch.round(y).clamp_(-8, 7).to(torch.int16) + 8  # offset binary nibble
            packed = q[..., 0::2] | (q[..., 1::2] << 4)
            return packed.to(torch.uint8).view(self.storage_dtype)
        return _quantize_elements(self.element, y).view(self.storage_dtype)

    def _encode_fp4(self, x: torch.Tensor, global_scale: Optional[torch.Tensor]) -> torch.Tensor:
        n, h, d = x.shape
        blocks = x.reshape(n, h, d // NVFP4_BLOCK, NVFP4_BLOCK)
        amax = blocks.abs().amax(dim=-1)  # (N, H, D/16)
        if self.scaling == "block16-e4m3":
            g = _scalar(global_scale, x.device)
            block_scale = (amax / (E2M1_MAX * g)).clamp(max=448.0).to(torch.float8_e4m3fn)
            effective = block_scale.float() * g
            scale_bytes = block_scale.view(torch.uint8)
        else:  # UE8M0: a power of two, stored as a biased exponent byte
            exponent = torch.ceil(torch.log2((amax / E2M1_MAX).clamp_min(2.0**-126))).clamp(-127, 127)
            effective = torch.exp2(exponent)
            scale_bytes = (exponent + 127).to(torch.uint8)
        y = blocks / effective.clamp_min(_SCALE_FLOOR).unsqueeze(-1)
        codes = _e2m1_codes(y).reshape(n, h, d)
        packed = (codes[..., 0::2] | (codes[..., 1::2] << 4)).to(torch.uint8)
        return torch.cat([packed, scale_bytes], dim=-1)

    def _encode_mxfp8(self, x: torch.Tensor) -> torch.Tensor:
        """SGLang's MXFP8 KV write (sgl-project/sglang python/sglang/kernels/ops/kvcache/
        mxfp8_quant_store_kv.py L45-50, v0.5.23): per 32 values, biased exponent
        clamp(ceil(log2(amax / 448)) + 127, 0, 254), values / 2^(exponent - 127) saturated to
        +-448 in E4M3."""
        n, h, d = x.shape
        blocks = x.reshape(n, h, d // MXFP8_BLOCK, MXFP8_BLOCK)
        amax = blocks.abs().amax(dim=-1).clamp_min(1e-30)
        biased = (torch.ceil(torch.log2(amax / 448.0)) + 127.0).clamp(0.0, 254.0)
        y = blocks / torch.exp2(biased - 127.0).unsqueeze(-1)
        codes = _quantize_elements("fp8_e4m3", y).reshape(n, h, d)
        return torch.cat([codes, biased.to(torch.uint8)], dim=-1)

    # ------------------------------------------------------------------ dequantize

    def decode(self, cells: torch.Tensor, head_dim: int, static_scale: Optional[torch.Tensor] = None) -> torch.Tensor:
        """cells (..., H, cell_width) -> (..., H, D) float32."""
        if self.scaling == "none":
            return cells.float()
        if self.scaling == "static":
            values = _dequantize_elements(self.element, cells)
            return values * _broadcast_head_scale(static_scale, values)
        width = self.data_width(head_dim)
        data = cells[..., :width]
        if self.scaling == "block32-ue8m0":
            values = _dequantize_elements(self.element, data)
            exponent = cells[..., width:].contiguous().view(torch.uint8).float() - 127.0
            shape = values.shape
            blocks = values.reshape(*shape[:-1], head_dim // MXFP8_BLOCK, MXFP8_BLOCK)
            return (blocks * torch.exp2(exponent).unsqueeze(-1)).reshape(shape)
        if self.scaling == "per-token-head":
            # clone: a fresh, 4-byte aligned buffer (a slice may start at an odd offset)
            scale_bytes = cells[..., width:].clone(memory_format=torch.contiguous_format).view(torch.uint8)
            scale = scale_bytes.view(torch.float32)  # (..., H, 1)
            if self.element == "int4":
                raw = data.view(torch.uint8).to(torch.int16)
                lo = (raw & 0xF) - 8
                hi = (raw >> 4) - 8
                values = torch.stack([lo, hi], dim=-1).reshape(*data.shape[:-1], head_dim).float()
            else:
                values = _dequantize_elements(self.element, data)
            return values * scale
        # FP4 with block scales
        raw = data.view(torch.uint8)
        codes = torch.stack([raw & 0xF, raw >> 4], dim=-1).reshape(*data.shape[:-1], head_dim)
        values = _e2m1_values(codes)
        scale_bytes = cells[..., width:].contiguous().view(torch.uint8)
        if self.scaling == "block16-e4m3":
            effective = scale_bytes.view(torch.float8_e4m3fn).float() * _scalar(static_scale, cells.device)
        else:
            effective = torch.exp2(scale_bytes.float() - 127.0)
        shape = values.shape
        values = values.reshape(*shape[:-1], head_dim // NVFP4_BLOCK, NVFP4_BLOCK) * effective.unsqueeze(-1)
        return values.reshape(shape)

    # ------------------------------------------------------------------ static scales

    def calibrate(self, x: torch.Tensor, granularity: Optional[str], source: Optional[str]) -> Optional[torch.Tensor]:
        """The scale held outside the pool, from a calibration pass over x (N, H, D).

        `source: unit` gives the uncalibrated 1.0 that engines fall back to; per-head gives one
        scale per KV head; NVFP4 gets its per-layer FP32 global scale.
        """
        if self.scaling == "static":
            if source == "unit":
                shape: Tuple[int, ...] = (x.shape[1],) if granularity == "per-head" else ()
                return torch.ones(shape, dtype=torch.float32, device=x.device)
            if granularity == "per-head":
                amax = x.float().abs().amax(dim=(0, 2))
            else:
                amax = x.float().abs().amax()
            return (amax / _element_max(self.element)).clamp_min(_SCALE_FLOOR)
        if self.scaling == "block16-e4m3":
            return (x.float().abs().amax() / (448.0 * E2M1_MAX)).clamp_min(_SCALE_FLOOR)
        return None


# Storage format id (kvlint.deployment.CacheFormatId) -> how the smoke test builds it.
# `fp8_e5m2_per_token_head` is no engine's format id; it exists so that the kernels cover E5M2
# with dynamic per-token-head scales too.
FORMATS: Dict[str, CacheFormat] = {
    f.id: f
    for f in (
        CacheFormat("bf16", torch.bfloat16, "bf16", "none"),
        CacheFormat("fp16", torch.float16, "fp16", "none"),
        CacheFormat("fp32", torch.float32, "fp32", "none"),
        CacheFormat("fp8_e4m3", torch.uint8, "fp8_e4m3", "static"),
        CacheFormat("fp8_e4m3fnuz", torch.uint8, "fp8_e4m3fnuz", "static"),
        CacheFormat("fp8_e5m2", torch.uint8, "fp8_e5m2", "static"),
        CacheFormat("int8", torch.int8, "int8", "static"),
        CacheFormat("fp8_per_token_head", torch.uint8, "fp8_e4m3", "per-token-head"),
        CacheFormat("fp8_e5m2_per_token_head", torch.uint8, "fp8_e5m2", "per-token-head"),
        CacheFormat("int8_per_token_head", torch.int8, "int8", "per-token-head"),
        CacheFormat("int4_per_token_head", torch.uint8, "int4", "per-token-head"),
        CacheFormat("nvfp4", torch.uint8, "e2m1", "block16-e4m3"),
        CacheFormat("trtllm_nvfp4", torch.uint8, "e2m1", "block16-e4m3"),
        CacheFormat("sglang_fp4", torch.uint8, "e2m1", "block16-ue8m0"),
        CacheFormat("sglang_nvfp4", torch.uint8, "e2m1", "block16-e4m3"),
        CacheFormat("sglang_mxfp8", torch.uint8, "fp8_e4m3", "block32-ue8m0"),
    )
}


def cache_format(format_id: str) -> CacheFormat:
    try:
        return FORMATS[format_id]
    except KeyError:
        raise UnsupportedLayout(f"the smoke test has no kernel for cache format {format_id!r}") from None


# ---------------------------------------------------------------------- element codecs

_FP8_DTYPES = {
    "fp8_e4m3": torch.float8_e4m3fn,
    "fp8_e4m3fnuz": torch.float8_e4m3fnuz,
    "fp8_e5m2": torch.float8_e5m2,
}


def _element_size(dtype: torch.dtype) -> int:
    return torch.empty((), dtype=dtype).element_size()


def _element_max(element: str) -> float:
    if element in _FP8_DTYPES:
        return float(torch.finfo(_FP8_DTYPES[element]).max)
    if element == "int8":
        return 127.0
    if element == "int4":
        return 7.0
    raise AssertionError(element)


def _quantize_elements(element: str, y: torch.Tensor) -> torch.Tensor:
    """Scaled values -> 1-byte codes (as uint8 or int8)."""
    if element in _FP8_DTYPES:
        limit = _element_max(element)
        return y.clamp(-limit, limit).to(_FP8_DTYPES[element]).view(torch.uint8)
    if element == "int8":
        return torch.round(y).clamp_(-127, 127).to(torch.int8)
    raise AssertionError(element)


def _dequantize_elements(element: str, codes: torch.Tensor) -> torch.Tensor:
    if element in _FP8_DTYPES:
        return codes.view(torch.uint8).view(_FP8_DTYPES[element]).float()
    if element == "int8":
        return codes.view(torch.int8).float()
    raise AssertionError(element)


def _e2m1_codes(y: torch.Tensor) -> torch.Tensor:
    """Nearest E2M1 value, as a 4-bit code (sign in bit 3)."""
    midpoints = torch.tensor([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0], device=y.device)
    magnitude = torch.bucketize(y.abs().clamp(max=E2M1_MAX), midpoints).to(torch.int16)
    sign = (y < 0).to(torch.int16) << 3
    return magnitude | sign


def _e2m1_values(codes: torch.Tensor) -> torch.Tensor:
    table = torch.tensor(E2M1_VALUES, device=codes.device)
    magnitude = table[(codes & 0x7).long()]
    return torch.where((codes & 0x8) != 0, -magnitude, magnitude)


def _broadcast_head_scale(scale: Optional[torch.Tensor], x: torch.Tensor) -> torch.Tensor:
    """A () or (H,) scale against (..., H, D) values."""
    if scale is None:
        return torch.ones((), device=x.device)
    scale = scale.to(device=x.device, dtype=torch.float32)
    return scale.unsqueeze(-1) if scale.dim() == 1 else scale


def _scalar(scale: Optional[torch.Tensor], device: torch.device) -> torch.Tensor:
    if scale is None:
        return torch.ones((), device=device)
    return scale.to(device=device, dtype=torch.float32)
