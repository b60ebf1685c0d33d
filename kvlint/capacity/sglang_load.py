"""What SGLang's weight load holds on the GPU beyond params x dtype: the "mem usage" its
"Load weight end" line prints, which is what its KV pool formula subtracts.

SGLang measures the load as the drop in free memory around `get_model` (model_executor/
model_runner.py `load_model`, v0.4.3.post4 L318-396: `get_available_gpu_memory` calls
`torch.cuda.empty_cache()` then `torch.cuda.mem_get_info()`). So it sees, besides the parameters:

* the rotary cos/sin cache, a buffer of max_position_embeddings x rotary_dim kept in float32 on
  CUDA (layers/rotary_embedding.py `RotaryEmbedding.__init__`: "cache needs to be in FP32",
  `.to(dtype)` only without CUDA; v0.4.3.post4 L81-86, v0.4.10.post2 L99-111, v0.5.2 L100-112,
  v0.5.9 L121-147, v0.5.23 rotary_embedding/base.py L116-154), one per model (`get_rope` caches
  instances in `_ROPE_DICT`);
* what PyTorch's caching allocator rounds every tensor up to and cannot give back: segments are
  cudaMalloc'ed whole (2 MiB for requests up to 1 MiB, 20 MiB shared for 1-10 MiB, else rounded
  up to 2 MiB) and `empty_cache` frees only segments with nothing allocated in them
  (pytorch/pytorch c10/cuda/CUDACachingAllocator.cpp, v2.5.1: kMinBlockSize .. kRoundLarge,
  `round_size`, `get_allocation_size`, `should_split`, `get_free_block` best fit,
  `release_cached_blocks`). A 32B model's 64 layers x 4 matrices lose 0.5-1.5 MiB each.

Modelled for dense decoders whose SGLang model class builds fused qkv_proj / o_proj /
gate_up_proj / down_proj per layer, embed_tokens and (untied) lm_head split over tensor
parallelism with the vocabulary padded to 64 (Qwen2/Llama/Qwen3-style; the tensors and their
order are checked against the release's own model classes, 0.4.3.post4, 0.4.10.post2, 0.5.2 and
0.5.9, in tests/data/sglang_load, built by tools/derive/sglang_load.py). Anything else (MoE, MLA, quantized checkpoints, pipeline
parallelism, a parameter count that does not match this layout) is not modelled: the caller
keeps params x dtype.
"""

from __future__ import annotations

from typing import Iterable, List, Optional, Sequence, Tuple

from kvlint.deployment import Deployment
from kvlint.records import dataclass

MiB = 1 << 20
GiB = 1 << 30

# pytorch/pytorch c10/cuda/CUDACachingAllocator.cpp (v2.5.1; unchanged through 2.9)
K_MIN_BLOCK_SIZE = 512  # all sizes are rounded to at least 512 bytes
K_SMALL_SIZE = 1 * MiB  # largest "small" allocation
K_SMALL_BUFFER = 2 * MiB  # small allocations are packed in 2 MiB segments
K_LARGE_BUFFER = 20 * MiB  # allocations between 1 and 10 MiB may use a 20 MiB segment
K_MIN_LARGE_ALLOC = 10 * MiB
K_ROUND_LARGE = 2 * MiB  # larger segments are rounded up to 2 MiB

VOCAB_PADDING = 64  # layers/vocab_parallel_embedding.py DEFAULT_VOCAB_PADDING_SIZE (v0.4.3.post4 L24)


def round_size(size: int) -> int:
    """`round_size`: the block a request takes (multiple of 512 B)."""
    return max(K_MIN_BLOCK_SIZE, -(-size // K_MIN_BLOCK_SIZE) * K_MIN_BLOCK_SIZE)


def allocation_size(size: int) -> int:
    """`get_allocation_size`: the segment cudaMalloc'ed when no cached block fits."""
    if size <= K_SMALL_SIZE:
        return K_SMALL_BUFFER
    if size < K_MIN_LARGE_ALLOC:
        return K_LARGE_BUFFER
    return -(-size // K_ROUND_LARGE) * K_ROUND_LARGE


class CachingAllocator:
    """PyTorch's CUDA caching allocator as far as the segments it holds go (one stream, default
    settings: no max_split_size, no expandable segments, no garbage collection)."""

    def __init__(self) -> None:
        # segment id -> list of [offset, size, allocated key or None], in address order
        self.segments: List[Tuple[bool, int, List[list]]] = []
        self.where: dict = {}

    def malloc(self, key: object, nbytes: int) -> None:
        size = round_size(nbytes)
        small = size <= K_SMALL_SIZE
        best = None  # (block size, segment index, block index): smallest fit, then lowest address
        for s, (is_small, _, blocks) in enumerate(self.segments):
            if is_small != small:
                continue
            for b, (_, bsize, owner) in enumerate(blocks):
                if owner is None and bsize >= size and (best is None or bsize < best[0]):
                    best = (bsize, s, b)
        if best is None:
            seg = allocation_size(size)
            self.segments.append((small, seg, [[0, seg, None]]))
            best = (seg, len(self.segments) - 1, 0)
        _, s, b = best
        blocks = self.segments[s][2]
        offset, bsize, _ = blocks[b]
        remaining = bsize - size
        # `should_split`: small pool when >= 512 B remain, large pool when more than 1 MiB remains
        if (small and remaining >= K_MIN_BLOCK_SIZE) or (not small and remaining > K_SMALL_SIZE):
            blocks[b] = [offset, size, key]
            blocks.insert(b + 1, [offset + size, remaining, None])
        else:
            blocks[b] = [offset, bsize, key]
        self.where[key] = s

    def free(self, key: object) -> None:
        s = self.where.pop(key)
        blocks = self.segments[s][2]
        b = next(i for i, blk in enumerate(blocks) if blk[2] == key)
        blocks[b][2] = None
        # merge with free neighbours (`free_block` -> `try_merge_blocks`)
        if b + 1 < len(blocks) and blocks[b + 1][2] is None:
            blocks[b][1] += blocks.pop(b + 1)[1]
        if b > 0 and blocks[b - 1][2] is None:
            blocks[b - 1][1] += blocks.pop(b)[1]

    def reserved_after_empty_cache(self) -> int:
        """Bytes in segments that still hold an allocation (`empty_cache` releases the rest)."""
        return sum(seg for _, seg, blocks in self.segments if any(blk[2] is not None for blk in blocks))


def held_after(events: Iterable[Tuple[str, object, int]]) -> int:
    """Run ("alloc", key, bytes) / ("free", key, 0) events; the memory a reading after
    `empty_cache` sees as used."""
    allocator = CachingAllocator()
    for kind, key, nbytes in events:
        if kind == "alloc":
            allocator.malloc(key, nbytes)
        else:
            allocator.free(key)
    return allocator.reserved_after_empty_cache()


@dataclass(frozen=True)
class DenseShape:
    """The per-GPU shapes of a Qwen2/Llama-style dense decoder under tensor parallelism."""

    hidden_size: int
    intermediate_size: int
    num_layers: int
    num_attention_heads: int
    num_kv_heads: int
    head_dim: int
    vocab_size: int
    tied_embeddings: bool
    qkv_bias: bool
    tp: int = 1
    dtype_bytes: int = 2
    qk_norm: bool = False  # Qwen3: per-head RMSNorm weights of q and k (head_dim each) per layer

    def global_params(self) -> int:
        """Parameters of the whole checkpoint in this layout (to check it against the manifest)."""
        h, q, kv = self.hidden_size, self.num_attention_heads * self.head_dim, self.num_kv_heads * self.head_dim
        per_layer = (h * (q + 2 * kv) + (q + 2 * kv if self.qkv_bias else 0) + q * h
                     + 3 * h * self.intermediate_size + 2 * h + (2 * self.head_dim if self.qk_norm else 0))
        embed = self.vocab_size * h
        return embed * (1 if self.tied_embeddings else 2) + self.num_layers * per_layer + h


def dense_load_events(shape: DenseShape, rope_positions: Optional[int], rotary_dim: int,
                      rope_bytes: int = 4) -> List[Tuple[str, object, int]]:
    """The allocations SGLang's model construction makes on one GPU, in order (the order of
    Qwen2ForCausalLM / LlamaForCausalLM / Qwen3ForCausalLM.__init__: embed_tokens; per layer
    (Qwen3: q_norm, k_norm) qkv_proj (+ bias),
    o_proj, the rotary cache on the first layer, gate_up_proj, down_proj, two norms; the final
    norm; lm_head unless tied). `rope_positions` None: no cos/sin cache."""
    tp, d, h = shape.tp, shape.dtype_bytes, shape.hidden_size
    heads = shape.num_attention_heads // tp
    kv_heads = max(1, shape.num_kv_heads // tp)  # replicated when fewer KV heads than ranks
    qkv_rows = (heads + 2 * kv_heads) * shape.head_dim
    vocab_rows = -(-shape.vocab_size // VOCAB_PADDING) * VOCAB_PADDING // tp
    inter = shape.intermediate_size // tp
    events: List[Tuple[str, object, int]] = [("alloc", "embed_tokens", vocab_rows * h * d)]
    for layer in range(shape.num_layers):
        if shape.qk_norm:
            events.append(("alloc", (layer, "q_norm"), shape.head_dim * d))
            events.append(("alloc", (layer, "k_norm"), shape.head_dim * d))
        events.append(("alloc", (layer, "qkv"), qkv_rows * h * d))
        if shape.qkv_bias:
            events.append(("alloc", (layer, "qkv_bias"), qkv_rows * d))
        events.append(("alloc", (layer, "o"), h * heads * shape.head_dim * d))
        if layer == 0 and rope_positions:
            # _compute_inv_freq / _compute_cos_sin_cache: inv_freq, t, freqs (outer product), cos,
            # sin, then cat((cos, sin)) kept as the buffer; the temporaries die at return
            half = rotary_dim // 2
            temps = (("inv_freq", half * 4), ("t", rope_positions * 4), ("freqs", rope_positions * half * 4),
                     ("cos", rope_positions * half * 4), ("sin", rope_positions * half * 4))
            events += [("alloc", name, n) for name, n in temps]
            events.append(("alloc", "cos_sin_cache", rope_positions * rotary_dim * rope_bytes))
            events += [("free", name, 0) for name, _ in temps]
        events.append(("alloc", (layer, "gate_up"), 2 * inter * h * d))
        events.append(("alloc", (layer, "down"), h * inter * d))
        events.append(("alloc", (layer, "ln1"), h * d))
        events.append(("alloc", (layer, "ln2"), h * d))
    events.append(("alloc", "norm", h * d))
    if not shape.tied_embeddings:
        events.append(("alloc", "lm_head", vocab_rows * h * d))
    return events


def held_tensor_bytes(events: Sequence[Tuple[str, object, int]]) -> int:
    """Bytes of the tensors still alive after the events (no allocator rounding)."""
    alive: dict = {}
    for kind, key, nbytes in events:
        if kind == "alloc":
            alive[key] = nbytes
        else:
            alive.pop(key, None)
    return sum(alive.values())


@dataclass(frozen=True)
class LoadEstimate:
    """SGLang's 'mem usage' at 'Load weight end' as modelled, per GPU."""

    total: int  # what the reading after empty_cache sees
    tensors: int  # parameters and buffers themselves
    rope_cache: int
    rounding: int  # total - tensors: what the allocator holds beyond the tensors


def dense_load_memory(shape: DenseShape, rope_positions: Optional[int], rotary_dim: int) -> LoadEstimate:
    events = dense_load_events(shape, rope_positions, rotary_dim)
    total = held_after(events)
    tensors = held_tensor_bytes(events)
    rope = rope_positions * rotary_dim * 4 if rope_positions else 0
    return LoadEstimate(total=total, tensors=tensors, rope_cache=rope, rounding=total - tensors)


def sglang_weight_load(deployment: Deployment, weights_per_gpu: int) -> Tuple[int, str]:
    """(bytes SGLang's load holds per GPU beyond `weights_per_gpu`, sentence), or (0, why not).

    The layout is identified by the checkpoint's own size: the dense Qwen2/Llama-style tensors
    (with or without a qkv bias, with or without a separate lm_head) whose parameters at 2 B
    make exactly `memory.weights_bytes`; no match (a quantized, MoE or other checkpoint) leaves
    the weights at params x dtype."""
    model = deployment.model
    if model is None or deployment.engine != "sglang":
        return 0, ""
    hidden = model.hidden_size
    intermediate = model.intermediate_size
    missing = [name for name, value in (("hidden_size", hidden), ("intermediate_size", intermediate),
                                        ("vocab_size", model.vocab_size),
                                        ("num_attention_heads", model.num_attention_heads)) if not value]
    if missing:
        return 0, ("SGLang's weight load is taken as params x dtype: model.geometry lacks "
                   f"{', '.join(missing)}, so its rotary cache and allocator rounding are not modelled")
    whole = deployment.memory.weights_bytes
    if model.is_mla or deployment.pipeline_parallel > 1 or not whole:
        return 0, ""
    tp = max(1, deployment.tensor_parallel)
    for tied, bias, qk_norm in ((t, b, n) for t in (False, True) for b in (True, False) for n in (False, True)):
        if bias and qk_norm:
            continue  # no such layout among the modelled classes
        shape = DenseShape(hidden, intermediate, model.num_layers,
                           model.num_attention_heads, model.num_kv_heads, model.head_dim,
                           model.vocab_size, tied, bias, tp=tp, dtype_bytes=2, qk_norm=qk_norm)
        if 2 * shape.global_params() != whole:
            continue
        estimate = dense_load_memory(shape, model.max_position_embeddings, model.head_dim)
        extra = estimate.total - weights_per_gpu
        return extra, (
            f"SGLang's weight load holds {estimate.total / GiB:.2f} GiB per GPU, {extra / MiB:+,.0f} MiB "
            f"beyond params x dtype: its float32 rotary cos/sin cache ({estimate.rope_cache / MiB:,.0f} MiB, "
            f"max_position_embeddings x head_dim x 4 B) and PyTorch's allocator segments "
            f"({estimate.rounding / MiB:,.0f} MiB, tensors rounded up and not given back); "
            f"dense layout{' with qkv bias' if bias else ''}{' with q/k norms' if qk_norm else ''}"
            f"{', tied embeddings' if tied else ''} "
            "identified by the checkpoint's parameter count")
    return 0, ("SGLang's weight load is taken as params x dtype: the checkpoint's size is not that of "
               "a dense Qwen2/Llama-style 16-bit model of this geometry, whose rotary cache and "
               "allocator rounding kvlint models")
