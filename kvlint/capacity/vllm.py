"""vLLM v1 KV-cache accounting, release by release (0.11 -> 0.33).

Mirrors, in pure Python, what one vLLM worker does between the memory profile and the
"GPU KV cache size" log line (vllm-project/vllm v0.11.0-v0.33.0; walked through in docs/capacity.md):

1. per-layer spec: storage format (skip layers at the model dtype, >= 0.19), bytes per token
   (`vllm/v1/kv_cache_interface.py` `AttentionSpec.page_size_bytes`; TRITON_ATTN inline scales),
   attention kind and window, block size (manifest, else backend preference, else
   `CacheConfig.DEFAULT_BLOCK_SIZE` = 16);
2. hybrid-manager switch: `disable_hybrid_kv_cache_manager` or chunked-local attention without
   VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE turns every window layer into full
   attention (`unify_hybrid_kv_cache_specs`);
3. skip-layer block alignment from 0.25 (`Platform._align_heterogeneous_kv_block_size`,
   vllm/platforms/interface.py L826 at v0.33.0);
4. grouping (`get_kv_cache_groups`, kv_cache_planning.py L1113 at v0.33.0, kv_cache_utils.py
   <= 0.32): one group, one `UniformTypeKVCacheSpecs` group, or page unification
   (`unify_kv_cache_spec_page_size`) + uniform-page groups of G layers with padding layers
   (`_get_kv_cache_groups_uniform_page_size`, L416);
5. blocks: `num_blocks = pool // bytes_per_block` (`_get_kv_cache_bytes_per_block`, L561);
   under pipeline parallelism every worker plans its own stage and all use min(num_blocks)
   (`get_kv_cache_configs`, L1461);
6. the logged capacity: concurrency = num_blocks / blocks_per_request, and "GPU KV cache size"
   = int(concurrency * max_model_len) from 0.21, `num_blocks // n_groups * min_block_size` before
   (kv_cache_utils.py `get_max_concurrency_for_kv_cache_config` / `get_kv_cache_capacity`).
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

from kvlint.records import dataclass, replace
from kvlint.capacity.layout import (
    UNQUANTIZED_FORMATS,
    format_token_bytes,
    model_dtype_format,
    naive_token_bytes,
    of_layers,
    requested_format,
)
from kvlint.capacity.pool import PoolEstimate, default_max_num_batched_tokens
from kvlint.capacity.result import EngineCapacity, LayerGroupCapacity
from kvlint.deployment import Deployment, LayerPlan

DEFAULT_BLOCK_SIZE = 16  # vllm/config/cache.py CacheConfig.DEFAULT_BLOCK_SIZE
# Used only when the engine catalog gives no max_num_batched_tokens default (an organisation's
# own engine build, say); vLLM's smallest `vllm serve` tier.
FALLBACK_MAX_NUM_BATCHED_TOKENS = 2048
# Release-dependent behaviour comes from the engine catalog through the Deployment
# (`release_defaults`, `release_features`; rules/catalog/engines/vllm.yaml), never from version
# numbers written here.
CHUNKED_HYBRID_ENV = "VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE"


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class _LayerSpec:
    """One layer as vLLM's KV-cache spec sees it: attention kind, format, bytes per token, block size."""

    index: int
    kind: str  # full | sliding | chunked
    window: Optional[int]
    fmt: str
    bytes_per_token: int
    block_size: int
    skipped: bool
    page_padded: Optional[int] = None

    @property
    def page(self) -> int:
        return self.page_padded if self.page_padded is not None else (
            self.block_size * self.bytes_per_token
        )

    @property
    def key(self) -> Tuple[object, ...]:
        return (self.kind, self.window, self.fmt, self.block_size, self.page, self.bytes_per_token)


def pp_layer_ranges(num_layers: int, pp: int) -> List[Tuple[int, int]]:
    """vllm/distributed/utils.py `get_pp_indices`: even split, the remainder going to the
    stages before the last (partitions[-2], partitions[-3], ...)."""
    pp = max(1, pp)
    sizes = [num_layers // pp] * pp
    for i in range(2, num_layers % pp + 2):
        sizes[-i] += 1
    ranges, start = [], 0
    for size in sizes:
        ranges.append((start, start + size))
        start += size
    return ranges


def inflight_tokens(deployment: Deployment, notes: List[str]) -> int:
    """Bound on tokens in flight, which sets each sliding/chunked layer's reservation."""
    mnbt = deployment.max_num_batched_tokens
    if mnbt is None:
        mnbt = default_max_num_batched_tokens(deployment)
        if mnbt is None:
            mnbt = FALLBACK_MAX_NUM_BATCHED_TOKENS
            notes.append(f"max_num_batched_tokens taken as {mnbt}: the engine catalog gives no default "
                         "for this release")
        else:
            notes.append(f"max_num_batched_tokens defaulted to {mnbt} (the `vllm serve` default "
                         "for this GPU's memory)")
    if deployment.release_default("sliding_window_inflight_tokens") != "max_in_flight_tokens":
        return mnbt
    pp = max(1, deployment.pipeline_parallel)
    batches = 2 if pp == 1 else pp
    notes.append(f"in-flight tokens = {batches} concurrent batches x {mnbt} = {batches * mnbt} "
                 "(async scheduling assumed on with pipeline 1; pipeline size otherwise)")
    return batches * mnbt


def _blocks_per_request(spec: _LayerSpec, max_model_len: int, inflight: int) -> int:
    """`max_memory_usage_bytes / page_size_bytes` per spec type (vllm/v1/kv_cache_interface.py, v0.33.0)."""
    b = spec.block_size
    if spec.kind == "sliding" and spec.window is not None:
        return _cdiv(min(spec.window - 1 + inflight, max_model_len), b) + 1
    if spec.kind == "chunked" and spec.window is not None:
        return _cdiv(min(spec.window + inflight, max_model_len), b)
    return _cdiv(max_model_len, b)


def _hybrid_disabled(deployment: Deployment, specs: Sequence[_LayerSpec],
                     notes: List[str]) -> bool:
    if not any(s.kind in ("sliding", "chunked") for s in specs):
        return False
    if deployment.disable_hybrid_kv_cache_manager:
        notes.append("hybrid KV cache manager disabled: sliding/chunked layers are sized as full "
                     "attention (unify_hybrid_kv_cache_specs)")
        return True
    if any(s.kind == "chunked" for s in specs):
        env = dict(deployment.env)
        if CHUNKED_HYBRID_ENV in env:
            allowed = env[CHUNKED_HYBRID_ENV].strip().lower() in ("1", "true")
        else:
            allowed = bool(deployment.release_default("chunked_local_attn_hybrid_default", False))
            notes.append(f"{CHUNKED_HYBRID_ENV} assumed {'1' if allowed else '0'} by default on "
                         f"vLLM {deployment.modelled_release} (the catalog's default; the release "
                         "that flipped it to 1 is not pinned down)")
        if not allowed:
            notes.append("chunked-local attention disables the hybrid KV cache manager: every "
                         "layer is sized as full attention")
            return True
    return False


@dataclass(frozen=True)
class _StagePlan:
    """One pipeline stage's KV-cache groups and block bytes, or the error vLLM stops with at start-up."""

    groups: Tuple[LayerGroupCapacity, ...]
    bytes_per_block: int
    block_size: int
    startup_error: Optional[str]
    naive_bytes_per_token: int


def _layer_specs(deployment: Deployment, plans: Sequence[LayerPlan],
                 base_block: int, notes: List[str]) -> List[_LayerSpec]:
    model_dtype = deployment.model.dtype if deployment.model else None
    quant = requested_format(deployment)
    skip_layers = "kv_cache_dtype_skip_layers" in deployment.release_features
    int4_sliding_as_int8 = deployment.release_default("int4_sliding_page_sizing") == "int8"
    specs = []
    for plan in plans:
        geom = plan.geometry
        skipped = plan.skipped and skip_layers
        if skipped:
            fmt = model_dtype_format(model_dtype)
        elif plan.skipped:
            fmt = quant or plan.cache_format  # no skip sets before 0.19: quantized like the rest
        else:
            fmt = plan.cache_format
        heads = deployment.kv_heads_per_gpu(geom)
        sizing_fmt = fmt
        if fmt == "int4_per_token_head" and geom.kind == "sliding" and int4_sliding_as_int8:
            sizing_fmt = "int8_per_token_head"
        tb = format_token_bytes(sizing_fmt, geom, heads)
        window = geom.window if geom.kind in ("sliding", "chunked") else None
        specs.append(_LayerSpec(geom.index, geom.kind, window, fmt, tb.total, base_block, skipped))
    if any(p.skipped for p in plans) and not skip_layers:
        notes.append(f"vLLM {deployment.modelled_release} has no --kv-cache-dtype-skip-layers "
                     "(added in 0.19): the skip set is ignored and every layer is quantized")
    if int4_sliding_as_int8 and any(s.fmt == "int4_per_token_head" and s.kind == "sliding" for s in specs):
        notes.append("vLLM 0.25-0.27 SlidingWindowSpec sizes int4_per_token_head pages as int8 "
                     "(payload not halved), so sliding pages are int8-sized (vllm/v1/kv_cache_interface.py, v0.25.1)")
    return specs


def _align_skip_blocks(deployment: Deployment, specs: List[_LayerSpec], base_block: int,
                       notes: List[str]) -> List[_LayerSpec]:
    """0.25+ `_align_heterogeneous_kv_block_size`: raise the primary block size so the quantized
    page covers the model-dtype page; pad every sliding layer's page to skip_page_size_padded."""
    primary = [s for s in specs if not s.skipped and s.fmt not in UNQUANTIZED_FORMATS]
    skipped = [s for s in specs if s.skipped]
    if not primary or not skipped:
        return specs
    primary_tok = max(s.bytes_per_token for s in primary)
    skip_tok = max(s.bytes_per_token for s in skipped)
    if skip_tok <= primary_tok:
        return specs
    kernel_block = deployment.backend_block_size or DEFAULT_BLOCK_SIZE
    align = max(kernel_block, base_block)
    block = align * _cdiv(skip_tok * kernel_block, align * primary_tok)
    padded = block * primary_tok
    if block != base_block:
        notes.append(f"skip layers raise vLLM's attention block size to {block} tokens "
                     "(_align_heterogeneous_kv_block_size, >= 0.25)")
    out = []
    for s in specs:
        if s.kind == "sliding":
            fit = max(kernel_block, (padded // s.bytes_per_token) // kernel_block * kernel_block)
            out.append(replace(s, block_size=fit, page_padded=padded))
        else:
            out.append(replace(s, block_size=block))
    return out


def _group_record(members: Sequence[_LayerSpec], padding: int, max_model_len: int,
                  inflight: int, page_bytes: Optional[int] = None) -> LayerGroupCapacity:
    head = members[0]
    formats = sorted({m.fmt for m in members})
    per_layer = [_blocks_per_request(m, max_model_len, inflight) for m in members]
    return LayerGroupCapacity(
        kind=head.kind,
        window=head.window,
        layers=tuple(m.index for m in members),
        padding_layers=padding,
        cache_format="+".join(formats),
        block_size=head.block_size,
        bytes_per_token=max(m.bytes_per_token for m in members),
        page_bytes=page_bytes if page_bytes is not None else head.page,
        page_padded=any(m.page_padded is not None and
                        m.page_padded != m.block_size * m.bytes_per_token for m in members),
        blocks_per_request=max(per_layer),
    )


def _plan_stage(deployment: Deployment, plans: Sequence[LayerPlan],
                max_model_len: int, inflight: int, notes: List[str]) -> _StagePlan:
    base_block = deployment.block_size or deployment.backend_block_size or DEFAULT_BLOCK_SIZE
    specs = _layer_specs(deployment, plans, base_block, notes)
    quant = requested_format(deployment)
    naive = sum(naive_token_bytes(quant or p.cache_format, p.geometry,
                                  deployment.kv_heads_per_gpu(p.geometry)) for p in plans)
    if _hybrid_disabled(deployment, specs, notes):
        specs = [replace(s, kind="full", window=None) for s in specs]
    if deployment.release_default("skip_layer_block_alignment") == "align_heterogeneous":
        specs = _align_skip_blocks(deployment, specs, base_block, notes)
    primary_block = max((s.block_size for s in specs if s.kind == "full"),
                        default=max(s.block_size for s in specs))

    # 1. every layer has the same spec: one group of all layers.
    if len({s.key for s in specs}) == 1:
        group = _group_record(specs, 0, max_model_len, inflight)
        return _StagePlan((group,), specs[0].page * len(specs), primary_block, None, naive)

    # 2. one attention type, different pages (skip layers on a non-hybrid model):
    #    one UniformTypeKVCacheSpecs group; its page is the sum of the layers' pages.
    if len({(s.kind, s.window) for s in specs}) == 1:
        page_sum = sum(s.page for s in specs)
        group = _group_record(specs, 0, max_model_len, inflight, page_bytes=page_sum)
        return _StagePlan((group,), page_sum, primary_block, None, naive)

    # 3. hybrid: unify page sizes, then uniform-page groups of G layers.
    max_page = max(s.page for s in specs)
    unified: List[_LayerSpec] = []
    for s in specs:
        if s.page == max_page:
            unified.append(s)
            continue
        if s.page_padded is not None:
            error = ("vLLM would fail at start-up: unify_kv_cache_spec_page_size asserts on a "
                     f"padded sliding-window page ({s.page} B) smaller than another layer's "
                     f"page ({max_page} B); seen with a skip set naming a full-attention layer "
                     "on a sliding-window model (seen on vLLM 0.25.1 and 0.33.0)")
            return _StagePlan((), 0, primary_block, error, naive)
        if max_page % s.page == 0:
            unified.append(replace(s, block_size=s.block_size * (max_page // s.page)))
        elif deployment.release_default("hybrid_page_unification") == "pad" and s.fmt != "fp8_ds_mla":
            unified.append(replace(s, page_padded=max_page))
        else:
            error = ("vLLM would fail at start-up: unify_kv_cache_spec_page_size raises "
                     f"NotImplementedError (page {s.page} B does not divide {max_page} B)")
            return _StagePlan((), 0, primary_block, error, naive)
    primary_block = max((s.block_size for s in unified if s.kind == "full"),
                        default=max(s.block_size for s in unified))

    buckets: Dict[Tuple[object, ...], List[_LayerSpec]] = {}
    for s in unified:
        buckets.setdefault(s.key, []).append(s)
    sizes = [len(b) for b in buckets.values()]
    group_size = min(sizes)
    if max(sizes) < 1.5 * min(sizes):
        group_size = max(sizes)
    groups: List[LayerGroupCapacity] = []
    padding_total = 0
    for members in buckets.values():
        num_groups = _cdiv(len(members), group_size)
        for i in range(num_groups):
            part = members[i::num_groups]
            padding = group_size - len(part)
            padding_total += padding
            groups.append(_group_record(part, padding, max_model_len, inflight))
    if padding_total:
        notes.append(f"vLLM adds {padding_total} padding layers so every KV-cache group holds "
                     f"{group_size} layers (_get_kv_cache_groups_uniform_page_size)")
    return _StagePlan(tuple(groups), max_page * group_size, primary_block, None, naive)


# The last deployment's stage plans. kvlint.capacity._engine runs this accounting three times per
# deployment (the central pool and both ends of its band), and a stage's plan does not depend on
# the pool: it is computed once. Holding the deployment keeps its id from being reused.
_STAGES: Dict[Tuple[int, int, int, int], Tuple[_StagePlan, Tuple[str, ...]]] = {}
_STAGES_OF: List[Optional[Deployment]] = [None]
# Stage plans by everything _plan_stage reads (_stage_inputs): deployments that differ only in
# what the plan does not read (the memory fraction, the GPU's size, the file name) share one, so
# `kvlint plan`'s candidates of one configuration at several memory fractions plan it once.
_SHARED: Dict[Tuple[object, ...], Tuple[_StagePlan, Tuple[str, ...]]] = {}
_SHARED_MAX = 4096
# The release defaults _plan_stage and its helpers read.
_STAGE_DEFAULTS = ("int4_sliding_page_sizing", "skip_layer_block_alignment", "hybrid_page_unification",
                   "chunked_local_attn_hybrid_default")


class StageLayers:
    """A stage's layer plans as part of a dict key, hashed once: hashing the tuple itself hashes
    every layer's records again on each look-up. Equal when the plans are equal."""

    __slots__ = ("layers", "_hash")

    def __init__(self, layers: Tuple[LayerPlan, ...]):
        self.layers = layers
        self._hash = hash(layers)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return type(other) is StageLayers and (other.layers is self.layers or other.layers == self.layers)


def stage_layers(layers: Tuple[LayerPlan, ...], start: int, end: int) -> object:
    """The stage's plans as a StageLayers key, made once per deployment layers tuple and stage
    (deployments of one configuration share the tuple: layout.of_layers)."""
    if type(layers) is not tuple:  # a list could change under the key: a fresh tuple
        return tuple(layers[start:end])
    return of_layers(("stage", start, end), layers, lambda plans: StageLayers(plans[start:end]))


def _stage_inputs(deployment: Deployment, start: int, end: int, max_model_len: int,
                  inflight: int) -> Tuple[object, ...]:
    """Every input _plan_stage (with _layer_specs, _hybrid_disabled, _align_skip_blocks) reads:
    the stage's layers, the format the whole model asked for, and the deployment's fields it
    consults (tests/test_plan.py compares the plan's judgements with cold `kvlint check` runs)."""
    return (
        stage_layers(deployment.layers, start, end), requested_format(deployment),
        deployment.model.dtype if deployment.model else None,
        deployment.release_features, deployment.modelled_release,
        tuple(deployment.release_default(name) for name in _STAGE_DEFAULTS),
        deployment.tensor_parallel, deployment.block_size, deployment.backend_block_size,
        deployment.disable_hybrid_kv_cache_manager, deployment.env, max_model_len, inflight,
    )


def _stage_once(deployment: Deployment, start: int, end: int, max_model_len: int, inflight: int,
                notes: List[str]) -> _StagePlan:
    if _STAGES_OF[0] is not deployment:
        _STAGES.clear()
        _STAGES_OF[0] = deployment
    key = (start, end, max_model_len, inflight)
    hit = _STAGES.get(key)
    if hit is None:
        inputs = _stage_inputs(deployment, start, end, max_model_len, inflight)
        hit = _SHARED.get(inputs)
        if hit is None:
            local: List[str] = []
            plan = _plan_stage(deployment, deployment.layers[start:end], max_model_len, inflight, local)
            hit = (plan, tuple(local))
            if len(_SHARED) >= _SHARED_MAX:
                _SHARED.clear()
            _SHARED[inputs] = hit
        _STAGES[key] = hit
    notes.extend(hit[1])
    return hit[0]


def vllm_capacity(deployment: Deployment, pool: PoolEstimate,
                  notes: List[str]) -> Optional[EngineCapacity]:
    """What vLLM `deployment.engine_version` would allocate and log on one GPU."""
    if deployment.model is None or not deployment.layers or pool.pool_bytes is None:
        return None
    if deployment.release_note:
        notes.append(deployment.release_note)

    max_model_len = deployment.max_model_len
    if max_model_len is None:
        max_model_len = deployment.model.max_position_embeddings
        if max_model_len is None:
            notes.append("max_model_len unknown: concurrency cannot be computed")
            return None
        notes.append(f"max_model_len defaulted to the model's max_position_embeddings "
                     f"({max_model_len})")
    inflight = inflight_tokens(deployment, notes) if any(
        p.geometry.kind != "full" for p in deployment.layers) else None
    if deployment.block_size is None:
        if deployment.block_size_note:
            notes.append(deployment.block_size_note)
        elif deployment.backend_block_size is not None:
            notes.append(f"block size {deployment.backend_block_size} from the attention "
                         "backend's preference")
        else:
            notes.append(f"block size defaulted to vLLM's {DEFAULT_BLOCK_SIZE}")

    stages = pp_layer_ranges(len(deployment.layers), deployment.pipeline_parallel)
    best: Optional[Tuple[int, int, _StagePlan]] = None
    stage_notes: List[str] = []
    for stage_index, (start, end) in enumerate(stages):
        plans = deployment.layers[start:end]
        if not plans:
            continue
        local: List[str] = []
        plan = _stage_once(deployment, start, end, max_model_len, inflight or 0, local)
        if stage_index == 0 or not stage_notes:
            stage_notes = local
        blocks = (max(0, pool.pool_bytes) // plan.bytes_per_block) if plan.bytes_per_block else 0
        if plan.startup_error is not None:
            blocks = -1
        if best is None or blocks < best[1]:
            best = (stage_index, blocks, plan)
            stage_notes = local
    if best is None:
        return None
    for note in stage_notes:
        if note not in notes:
            notes.append(note)
    stage_index, num_blocks, plan = best
    if len(stages) > 1:
        notes.append(f"pipeline parallel {len(stages)}: each worker plans its own stage's layers; "
                     f"vLLM uses the minimum block count (stage {stage_index})")
    version = deployment.engine_version
    if plan.startup_error is not None:
        return EngineCapacity("vllm", version, pool.pool_bytes, plan.block_size, 0, 0, 0, 0.0,
                              max_model_len, None, inflight, (), stage_index, None,
                              plan.startup_error, False)

    blocks_per_request = sum(g.blocks_per_request for g in plan.groups)
    concurrency = num_blocks / blocks_per_request if blocks_per_request else 0.0
    if deployment.release_default("kv_cache_size_log_formula") == "max_concurrency_times_max_model_len":
        tokens = int(concurrency * max_model_len)
    else:
        tokens = (num_blocks // len(plan.groups)) * min(g.block_size for g in plan.groups)
        if len(plan.groups) > 1:
            notes.append(f"vLLM {deployment.modelled_release} logs 'GPU KV cache size' as "
                         "num_blocks // groups x min block size, which under-reports hybrid "
                         "models (fixed in 0.21); the concurrency figure is right")
    usable = num_blocks - (1 if deployment.release_default("kv_fit_check") == "num_blocks_minus_null_block" else 0)
    naive_tokens = (max(0, pool.pool_bytes) // plan.naive_bytes_per_token
                    if plan.naive_bytes_per_token else None)
    return EngineCapacity(
        engine="vllm",
        version=version,
        pool_bytes_per_gpu=pool.pool_bytes,
        block_size=plan.block_size,
        bytes_per_block=plan.bytes_per_block,
        num_blocks=num_blocks,
        kv_cache_tokens=tokens,
        max_concurrency=concurrency,
        max_model_len=max_model_len,
        blocks_per_request=blocks_per_request,
        inflight_tokens=inflight,
        groups=plan.groups,
        pipeline_stage=stage_index,
        naive_tokens=naive_tokens,
        startup_error=None,
        fits_one_sequence=pool.pool_bytes > 0 and usable >= blocks_per_request,
    )
