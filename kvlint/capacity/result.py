"""`CapacityResult`: the capacity stage's frozen output, and its JSON form (docs/capacity.md)."""

from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

from kvlint.capacity.layout import PerTokenBytes, SequenceBytes, StaticScaleBytes
from kvlint.records import dataclass


@dataclass(frozen=True)
class LayerGroupCapacity:
    """One KV-cache group as the engine forms it (vLLM: one block table per group)."""

    kind: str  # full | sliding | chunked
    window: Optional[int]
    layers: Tuple[int, ...]  # global layer indices in this group (this pipeline stage)
    padding_layers: int  # empty slots vLLM adds so every group has G layers
    cache_format: str
    block_size: int
    bytes_per_token: int  # per GPU, one layer, inline scales included
    page_bytes: int  # per layer per block, after page padding
    page_padded: bool
    blocks_per_request: int

    def to_json(self) -> Dict[str, Any]:
        return {
            "kind": self.kind,
            "window": self.window,
            "layers": list(self.layers),
            "padding_layers": self.padding_layers,
            "cache_format": self.cache_format,
            "block_size": self.block_size,
            "bytes_per_token": self.bytes_per_token,
            "page_bytes": self.page_bytes,
            "page_padded": self.page_padded,
            "blocks_per_request": self.blocks_per_request,
        }


@dataclass(frozen=True)
class CapacityBand:
    """The range an estimated pool and what it holds may really be in (low end, high end)."""

    pool_low: int
    pool_high: int
    tokens_low: int
    tokens_high: int
    concurrency_low: float
    concurrency_high: float
    terms: Tuple[str, ...]  # which estimated terms the band comes from, and by how much
    removed_by: str = "memory.kv_cache_memory"
    # the part of the band (pool offsets, bytes) from terms sized from the engine's own code paths
    # (a vLLM sampler path that depends on an optional package, the distributed init of releases
    # that count it), not from the fit split's error ranges
    sized_low: int = 0
    sized_high: int = 0
    # whether one max_model_len sequence fits at each end (None when the engine cannot say)
    fits_low: Optional[bool] = None
    fits_high: Optional[bool] = None

    def to_json(self) -> Dict[str, Any]:
        return {
            "pool_low_bytes": self.pool_low,
            "pool_high_bytes": self.pool_high,
            "kv_cache_tokens_low": self.tokens_low,
            "kv_cache_tokens_high": self.tokens_high,
            "max_concurrency_low": self.concurrency_low,
            "max_concurrency_high": self.concurrency_high,
            "terms": list(self.terms),
            "removed_by": self.removed_by,
            "pool_sized_terms_bytes": [self.sized_low, self.sized_high],
            "fits_one_sequence_low": self.fits_low,
            "fits_one_sequence_high": self.fits_high,
        }


@dataclass(frozen=True)
class EngineCapacity:
    """`engine` of the capacity JSON: what the engine allocates and reports on one GPU."""

    engine: str
    version: str
    pool_bytes_per_gpu: int
    block_size: int  # tokens per block of the primary (full-attention) layers
    bytes_per_block: int  # bytes one block ID costs across the layers sharing it
    num_blocks: int
    kv_cache_tokens: int  # the engine's own "KV cache size in tokens" figure
    max_concurrency: float  # sequences of max_model_len, as the engine reports it
    max_model_len: Optional[int]
    blocks_per_request: Optional[int] = None
    inflight_tokens: Optional[int] = None  # vLLM sliding-window reservation bound
    groups: Tuple[LayerGroupCapacity, ...] = ()
    pipeline_stage: int = 0  # the stage whose worker limits the pool (min blocks)
    naive_tokens: Optional[int] = None  # pool / dtype-only bytes per token on this GPU
    startup_error: Optional[str] = None  # the engine would refuse this configuration
    fits_one_sequence: Optional[bool] = None
    band: Optional[CapacityBand] = None  # None when the pool is given, not estimated
    fraction: Optional[float] = None  # the memory fraction the pool formula used
    pool_terms: Tuple[Tuple[str, int], ...] = ()  # the pool formula's terms, bytes per GPU
    # SGLang's hybrid sliding-window pool: its tokens (swa_full_tokens_ratio x the full pool's)
    swa_pool_tokens: Optional[int] = None

    @property
    def pool_exhausted(self) -> bool:
        return self.pool_bytes_per_gpu <= 0

    @property
    def min_block_size(self) -> int:
        sizes = [g.block_size for g in self.groups]
        return min(sizes) if sizes else self.block_size

    def to_json(self) -> Dict[str, Any]:
        return {
            "pool_bytes_per_gpu": self.pool_bytes_per_gpu,
            "block_size": self.block_size,
            "bytes_per_block": self.bytes_per_block,
            "num_blocks": self.num_blocks,
            "kv_cache_tokens": self.kv_cache_tokens,
            "max_concurrency": self.max_concurrency,
            "name": self.engine,
            "version": self.version,
            "max_model_len": self.max_model_len,
            "blocks_per_request": self.blocks_per_request,
            "inflight_tokens": self.inflight_tokens,
            "min_block_size": self.min_block_size,
            "pipeline_stage": self.pipeline_stage,
            "naive_tokens": self.naive_tokens,
            "fits_one_sequence": self.fits_one_sequence,
            "pool_exhausted": self.pool_exhausted,
            "startup_error": self.startup_error,
            "groups": [g.to_json() for g in self.groups],
            "band": self.band.to_json() if self.band else None,
            "memory_fraction": self.fraction,
            "pool_terms": dict(self.pool_terms),
            "swa_pool_tokens": self.swa_pool_tokens,
        }


@dataclass(frozen=True)
class Difference:
    """One reason the corrected figure differs from the dtype-only estimate."""

    cause: str  # scales | skipped_layers | format | windows | engine
    text: str
    bytes_per_token: Optional[int] = None  # whole model, + means more than naive
    sequence_bytes: Optional[int] = None  # at max_model_len, + means more than naive
    tokens: Optional[int] = None  # engine tokens, + means more than naive

    def to_json(self) -> Dict[str, Any]:
        return {
            "cause": self.cause,
            "text": self.text,
            "bytes_per_token": self.bytes_per_token,
            "sequence_bytes": self.sequence_bytes,
            "tokens": self.tokens,
        }


@dataclass(frozen=True)
class CapacityResult:
    """The capacity report of one deployment: per-token and per-sequence bytes and what the engine allocates."""

    file: str
    name: str
    engine_name: str
    engine_version: str
    kv_dtype: str
    cache_format: Optional[str]  # the requested storage format (most layers)
    per_token: Optional[PerTokenBytes]
    static_scales: Optional[StaticScaleBytes]
    sequence: Optional[SequenceBytes]
    engine: Optional[EngineCapacity]
    assumptions: Tuple[str, ...] = ()
    differences: Tuple[Difference, ...] = ()
    tensor_parallel: int = 1
    pipeline_parallel: int = 1
    kv_heads_replicated: bool = False  # tp > KV heads on a non-MLA layer (KV607)
    mla_latent_replicated: bool = False  # MLA under tp > 1: every rank holds the full latent
    # llama.cpp / Ollama: the cache llama.cpp allocates (kvlint.capacity.llamacpp.LlamaCppCache)
    llamacpp: Optional[Any] = None

    # --- facts for the gate rules (KV601-KV607) --------------------------------------------

    @property
    def max_concurrency(self) -> Optional[float]:
        return self.engine.max_concurrency if self.engine else None

    @property
    def kv_cache_tokens(self) -> Optional[int]:
        return self.engine.kv_cache_tokens if self.engine else None

    @property
    def fits_one_sequence(self) -> Optional[bool]:
        return self.engine.fits_one_sequence if self.engine else None

    @property
    def pool_exhausted(self) -> Optional[bool]:
        return self.engine.pool_exhausted if self.engine else None

    @property
    def scale_overhead_ratio(self) -> Optional[float]:
        """Per-token scale metadata over payload (KV605); 0.0 without inline scales."""
        if self.per_token is None or self.per_token.payload_bytes == 0:
            return None
        return self.per_token.scale_bytes / self.per_token.payload_bytes

    def checks(self) -> Dict[str, Any]:
        return {
            "max_concurrency": self.max_concurrency,
            "kv_cache_tokens": self.kv_cache_tokens,
            "fits_one_sequence": self.fits_one_sequence,
            "scale_overhead_ratio": self.scale_overhead_ratio,
            "pool_exhausted": self.pool_exhausted,
            "kv_heads_replicated": self.kv_heads_replicated,
            "mla_latent_replicated": self.mla_latent_replicated,
            "startup_error": self.engine.startup_error if self.engine else None,
        }

    def to_json(self) -> Dict[str, Any]:
        """The capacity JSON object of docs/capacity.md (all byte counts int), plus extra fields after the required ones."""
        per_token = None
        if self.per_token is not None:
            pt = self.per_token
            per_token = {
                "payload_bytes": pt.payload_bytes,
                "scale_bytes": pt.scale_bytes,
                "total_bytes": pt.total_bytes,
                "bf16_bytes": pt.bf16_bytes,
                "naive_bytes": pt.naive_bytes,
                "skipped_layer_bytes": pt.skipped_layer_bytes,
            }
        static = None
        if self.static_scales is not None:
            static = {
                "kv_bytes": self.static_scales.kv_bytes,
                "qkv_bytes": self.static_scales.qkv_bytes,
            }
        seq = None
        if self.sequence is not None:
            s = self.sequence
            seq = {
                "tokens": s.tokens,
                "bytes": s.bytes,
                "bf16_bytes": s.bf16_bytes,
                "compression_vs_bf16": round(s.compression_vs_bf16, 2),
                "payload_bytes": s.payload_bytes,
                "scale_bytes": s.scale_bytes,
                "naive_bytes": s.naive_bytes,
                "retained_positions": s.retained_positions,
                "skipped_positions": s.skipped_positions,
            }
        out = {
            "file": self.file,
            "name": self.name,
            "per_token": per_token,
            "static_scales": static,
            "sequence": seq,
            "engine": self.engine.to_json() if self.engine else None,
            "assumptions": list(self.assumptions),
            "differences": [d.to_json() for d in self.differences],
            "checks": self.checks(),
            "kv_dtype": self.kv_dtype,
            "cache_format": self.cache_format,
            "engine_name": self.engine_name,
            "engine_version": self.engine_version,
            "tensor_parallel": self.tensor_parallel,
            "pipeline_parallel": self.pipeline_parallel,
        }
        if self.llamacpp is not None:
            out["llamacpp"] = self.llamacpp.to_json()
        return out
