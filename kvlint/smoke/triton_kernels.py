"""Triton paged decode attention that reads the cache bytes directly (CUDA; optional).

One program per (sequence, KV head): it walks the sequence's block table, loads each block's K
and V cells from the storage tensor (uint8 / int8 / bf16 / fp16), dequantizes in registers
(native FP8 conversion `fp8e4nv` / `fp8e5`, INT8, packed INT4 nibbles, FP32 per-token-head scales
read from the 4 bytes after the data), and runs an online-softmax attention for the query heads of
that KV head's GQA group. This is what vLLM's TRITON_ATTN unified kernel does for these layouts;
if Triton cannot build it for this GPU (FP8 E4M3 below SM89, for example), the runner reports a
fallback and the smoke test fails.

FP4 formats are not handled here (no Triton E2M1 path): they run the torch emulation and are
reported as not native. Block sizes below 16 also use the torch kernel (tl.dot needs 16).
"""

from __future__ import annotations

from typing import Optional

import torch
import triton
import triton.language as tl

from kvlint.smoke.formats import CacheFormat

_ELEMENT_CODE = {"bf16": 0, "fp16": 0, "fp32": 0, "fp8_e4m3": 1, "fp8_e5m2": 2, "int8": 3, "int4": 4}
_SCALING_CODE = {"none": 0, "static": 1, "per-token-head": 2}
_MODE_CODE = {"full": 0, "sliding": 1, "chunked": 2}


def _pow2(n: int) -> bool:
    return n > 0 and not n & (n - 1)


def supports(fmt: CacheFormat, block_size: int = 16, head_dim: int = 128) -> bool:
    """Whether this kernel covers the format and shape (else the runner uses the torch kernel)."""
    return (
        fmt.element in _ELEMENT_CODE
        and fmt.scaling in _SCALING_CODE
        and block_size >= 16
        and _pow2(block_size)
        and head_dim >= 16
        and _pow2(head_dim)
    )


@triton.jit
def _load_fp32_le(ptr, mask):
    """Four little-endian bytes at ptr .. ptr+3 as one FP32 (alignment-free)."""
    b0 = tl.load(ptr, mask=mask, other=0).to(tl.uint8, bitcast=True).to(tl.int32)
    b1 = tl.load(ptr + 1, mask=mask, other=0).to(tl.uint8, bitcast=True).to(tl.int32)
    b2 = tl.load(ptr + 2, mask=mask, other=0).to(tl.uint8, bitcast=True).to(tl.int32)
    b3 = tl.load(ptr + 3, mask=mask, other=0).to(tl.uint8, bitcast=True).to(tl.int32)
    word = b0 | (b1 << 8) | (b2 << 16) | (b3 << 24)
    return word.to(tl.float32, bitcast=True)


@triton.jit
def _dequant_tile(cell_ptr, tok_offsets, tok_mask, d, head_scale, ELEM: tl.constexpr, SCALING: tl.constexpr, DDATA: tl.constexpr):
    """(BS, D) float32 values of one block's K (or V) cells of one head."""
    if ELEM == 4:
        raw = tl.load(cell_ptr + tok_offsets[:, None] + (d // 2)[None, :], mask=tok_mask[:, None], other=0)
        raw = raw.to(tl.uint8, bitcast=True).to(tl.int32)
        nib = (raw >> ((d % 2) * 4)[None, :]) & 0xF
        vals = (nib - 8).to(tl.float32)
    else:
        raw = tl.load(cell_ptr + tok_offsets[:, None] + d[None, :], mask=tok_mask[:, None], other=0)
        if ELEM == 0:
            vals = raw.to(tl.float32)
        elif ELEM == 1:
            vals = raw.to(tl.uint8, bitcast=True).to(tl.float8e4nv, bitcast=True).to(tl.float32)
        elif ELEM == 2:
            vals = raw.to(tl.uint8, bitcast=True).to(tl.float8e5, bitcast=True).to(tl.float32)
        else:
            vals = raw.to(tl.int8, bitcast=True).to(tl.float32)
    if SCALING == 1:
        vals = vals * head_scale
    elif SCALING == 2:
        scale = _load_fp32_le(cell_ptr + tok_offsets + DDATA, tok_mask)
        vals = vals * scale[:, None]
    return vals


@triton.jit
def _paged_decode_kernel(
    Q, CACHE, BLOCK_TABLE, SEQ_LENS, OUT, K_SCALE, V_SCALE,
    stride_qb, stride_qh,
    stride_cb, stride_ckv, stride_cs, stride_ch,
    stride_bt,
    stride_ob, stride_oh,
    sm_scale, window,
    G: tl.constexpr, G_PAD: tl.constexpr, D: tl.constexpr, BS: tl.constexpr,
    ELEM: tl.constexpr, SCALING: tl.constexpr, PER_HEAD_SCALE: tl.constexpr, DDATA: tl.constexpr,
    MODE: tl.constexpr,
):
    b = tl.program_id(0)
    h = tl.program_id(1)
    seq_len = tl.load(SEQ_LENS + b)
    g = tl.arange(0, G_PAD)
    d = tl.arange(0, D)
    gmask = g < G
    q = tl.load(Q + b * stride_qb + (h * G + g)[:, None] * stride_qh + d[None, :], mask=gmask[:, None], other=0.0)
    q = q.to(tl.float32)
    k_head_scale = 1.0
    v_head_scale = 1.0
    if SCALING == 1:
        if PER_HEAD_SCALE:
            k_head_scale = tl.load(K_SCALE + h)
            v_head_scale = tl.load(V_SCALE + h)
        else:
            k_head_scale = tl.load(K_SCALE)
            v_head_scale = tl.load(V_SCALE)

    lo = 0
    if MODE == 1:
        lo = tl.maximum(seq_len - window, 0)
    elif MODE == 2:
        lo = ((seq_len - 1) // window) * window
    m_i = tl.full([G_PAD], float("-inf"), tl.float32)
    l_i = tl.zeros([G_PAD], tl.float32)
    acc = tl.zeros([G_PAD, D], tl.float32)
    s = tl.arange(0, BS)
    for j in range(lo // BS, tl.cdiv(seq_len, BS)):
        phys = tl.load(BLOCK_TABLE + b * stride_bt + j).to(tl.int64)
        t = j * BS + s
        tmask = (t < seq_len) & (t >= lo)
        base = CACHE + phys * stride_cb + h * stride_ch
        k = _dequant_tile(base, s * stride_cs, tmask, d, k_head_scale, ELEM, SCALING, DDATA)
        v = _dequant_tile(base + stride_ckv, s * stride_cs, tmask, d, v_head_scale, ELEM, SCALING, DDATA)
        scores = tl.dot(q, tl.trans(k), input_precision="ieee") * sm_scale  # (G_PAD, BS)
        scores = tl.where(tmask[None, :], scores, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(scores, axis=1))
        alpha = tl.exp(m_i - m_new)
        p = tl.exp(scores - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p, v, input_precision="ieee")
        m_i = m_new
    out = acc / l_i[:, None]
    tl.store(OUT + b * stride_ob + (h * G + g)[:, None] * stride_oh + d[None, :], out, mask=gmask[:, None])


def paged_decode_attention(cache, q: torch.Tensor, block_table: torch.Tensor, seq_lens: torch.Tensor,
                           kind: str = "full", window: Optional[int] = None) -> torch.Tensor:
    """Same contract as kvlint.smoke.paged.paged_decode_attention, as one Triton kernel."""
    fmt: CacheFormat = cache.fmt
    data = cache.data
    nb, _, bs, hkv, _c = data.shape
    b, hq, d = q.shape
    if bs < 16 or bs & (bs - 1) or d < 16 or d & (d - 1):
        raise ValueError(f"the Triton kernel needs block_size >= 16 and a power-of-two head size (got {bs}, {d})")
    group = hq // hkv
    out = torch.empty((b, hq, d), dtype=torch.float32, device=q.device)
    per_head = False
    k_scale = v_scale = torch.ones(1, dtype=torch.float32, device=q.device)
    if fmt.scaling == "static":
        k_scale = (cache.k_scale if cache.k_scale is not None else k_scale).to(torch.float32).reshape(-1).contiguous()
        v_scale = (cache.v_scale if cache.v_scale is not None else v_scale).to(torch.float32).reshape(-1).contiguous()
        per_head = k_scale.numel() > 1
    mode = _MODE_CODE[kind] if window else 0
    q = q.contiguous()
    table = block_table.to(torch.int32).contiguous()
    lens = seq_lens.to(torch.int32).contiguous()
    _paged_decode_kernel[(b, hkv)](
        q, data, table, lens, out, k_scale, v_scale,
        q.stride(0), q.stride(1),
        data.stride(0), data.stride(1), data.stride(2), data.stride(3),
        table.stride(0),
        out.stride(0), out.stride(1),
        1.0 / (d ** 0.5), int(window or 0),
        G=group, G_PAD=max(16, triton.next_power_of_2(group)), D=d, BS=bs,
        ELEM=_ELEMENT_CODE[fmt.element], SCALING=_SCALING_CODE[fmt.scaling], PER_HEAD_SCALE=per_head,
        DDATA=fmt.data_width(d), MODE=mode,
    )
    return out
