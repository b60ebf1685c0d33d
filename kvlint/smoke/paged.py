"""A paged KV cache in a real storage tensor, and decode attention that reads it (torch).

The cache is one tensor per layer, `(num_blocks, 2, block_size, num_kv_heads, cell_width)` in the
format's storage dtype (see formats.py), with a block table per sequence, as in vLLM's paged
attention. Decode attention gathers a sequence's blocks through its block table, dequantizes the
cells and attends with grouped-query heads, causal, optionally restricted to a sliding window
(`sliding`) or to the query's own chunk (`chunked`). The BF16 reference attends over the very
same K and V before quantization, held contiguously in BF16.
"""

from __future__ import annotations

import math
from typing import List, Optional, Sequence

import torch

from kvlint.records import dataclass
from kvlint.smoke.formats import CacheFormat


@dataclass
class PagedKVCache:
    """A paged KV cache held in one cache format: blocks of K and V, with their scales."""

    fmt: CacheFormat
    data: torch.Tensor  # (num_blocks, 2, block_size, Hkv, cell_width), storage dtype
    head_dim: int
    k_scale: Optional[torch.Tensor] = None  # held outside the pool (static or NVFP4 global)
    v_scale: Optional[torch.Tensor] = None

    @classmethod
    def allocate(
        cls,
        fmt: CacheFormat,
        num_blocks: int,
        block_size: int,
        num_kv_heads: int,
        head_dim: int,
        device: torch.device,
    ) -> PagedKVCache:
        shape = (num_blocks, 2, block_size, num_kv_heads, fmt.cell_width(head_dim))
        return cls(fmt, torch.zeros(shape, dtype=fmt.storage_dtype, device=device), head_dim)

    @property
    def num_blocks(self) -> int:
        return self.data.shape[0]

    @property
    def block_size(self) -> int:
        return self.data.shape[2]

    def bytes_per_block(self) -> int:
        """Measured on the allocated tensor, not computed from the format."""
        total = self.data.numel() * self.data.element_size()
        assert total % self.num_blocks == 0
        return total // self.num_blocks

    def slots(self, block_table: torch.Tensor, positions: torch.Tensor) -> tuple:
        """(block ids, offsets) of token `positions[i]` of sequence i."""
        rows = torch.arange(block_table.shape[0], device=block_table.device)
        blocks = block_table[rows, positions // self.block_size]
        return blocks, positions % self.block_size

    def write(self, k: torch.Tensor, v: torch.Tensor, blocks: torch.Tensor, offsets: torch.Tensor) -> None:
        """Quantize-and-write tokens: k, v (N, Hkv, D); token i goes to (blocks[i], offsets[i])."""
        self.data[blocks, 0, offsets] = self.fmt.encode(k, self.k_scale)
        self.data[blocks, 1, offsets] = self.fmt.encode(v, self.v_scale)

    def write_sequences(self, k: torch.Tensor, v: torch.Tensor, block_table: torch.Tensor, seq_lens: Sequence[int]) -> None:
        """Prefill: k, v (B, T, Hkv, D) padded; sequence b holds its first seq_lens[b] tokens."""
        for b, length in enumerate(seq_lens):
            positions = torch.arange(length, device=k.device)
            blocks = block_table[b, positions // self.block_size]
            self.write(k[b, :length], v[b, :length], blocks, positions % self.block_size)

    def gather(self, block_table: torch.Tensor) -> tuple:
        """Dequantized K, V of every sequence: (B, max_blocks * block_size, Hkv, D) float32."""
        cells = self.data[block_table]  # (B, MB, 2, bs, H, C)
        b, mb, _, bs, h, c = cells.shape
        k = self.fmt.decode(cells[:, :, 0].reshape(b, mb * bs, h, c), self.head_dim, self.k_scale)
        v = self.fmt.decode(cells[:, :, 1].reshape(b, mb * bs, h, c), self.head_dim, self.v_scale)
        return k, v


def attention_mask(
    seq_lens: torch.Tensor, num_positions: int, kind: str, window: Optional[int]
) -> torch.Tensor:
    """(B, T) True where the decode query (at position seq_len - 1) may attend."""
    t = torch.arange(num_positions, device=seq_lens.device).unsqueeze(0)
    lens = seq_lens.unsqueeze(1)
    mask = t < lens
    if window and kind == "sliding":
        mask &= t >= lens - window
    elif window and kind == "chunked":
        mask &= t >= ((lens - 1) // window) * window
    return mask


def decode_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor, scale: Optional[float] = None
) -> torch.Tensor:
    """q (B, Hq, D), k/v (B, T, Hkv, D), mask (B, T) -> (B, Hq, Dv) float32 (GQA, FP32 softmax)."""
    b, hq, d = q.shape
    hkv = k.shape[2]
    group = hq // hkv
    scale = scale if scale is not None else 1.0 / math.sqrt(d)
    qg = q.float().view(b, hkv, group, d)
    scores = torch.einsum("bhgd,bthd->bhgt", qg, k.float()) * scale
    scores = scores.masked_fill(~mask[:, None, None, :], float("-inf"))
    probs = torch.softmax(scores, dim=-1)
    out = torch.einsum("bhgt,bthd->bhgd", probs, v.float())
    return out.reshape(b, hq, v.shape[-1])


def paged_decode_attention(
    cache: PagedKVCache,
    q: torch.Tensor,
    block_table: torch.Tensor,
    seq_lens: torch.Tensor,
    kind: str = "full",
    window: Optional[int] = None,
) -> torch.Tensor:
    """The torch-reference kernel: read the paged cache through the block table and attend."""
    k, v = cache.gather(block_table)
    mask = attention_mask(seq_lens, k.shape[1], kind, window)
    return decode_attention(q, k, v, mask)


def reference_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, seq_lens: torch.Tensor, kind: str = "full", window: Optional[int] = None
) -> torch.Tensor:
    """BF16 reference on the same inputs: contiguous BF16 K/V (B, T, Hkv, D), no quantization."""
    mask = attention_mask(seq_lens, k.shape[1], kind, window)
    return decode_attention(q.bfloat16(), k.bfloat16(), v.bfloat16(), mask)


def scattered_block_table(seq_lens: List[int], block_size: int, num_blocks: int, generator: torch.Generator) -> torch.Tensor:
    """A block table that hands out the pool's blocks in a shuffled order, as a paged allocator would
    after some churn, so that a kernel reading contiguous memory instead of the table is caught.
    Block 0 is kept free (vLLM's null block)."""
    per_seq = [max(1, math.ceil(n / block_size)) for n in seq_lens]
    needed = sum(per_seq)
    if needed + 1 > num_blocks:
        raise ValueError(f"{needed} blocks needed, pool has {num_blocks}")
    order = torch.randperm(num_blocks - 1, generator=generator)[:needed] + 1
    width = max(per_seq)
    table = torch.zeros((len(seq_lens), width), dtype=torch.long)
    start = 0
    for b, count in enumerate(per_seq):
        table[b, :count] = order[start : start + count]
        start += count
    return table
