"""Predict the attention backend an engine picks when the manifest says `auto`.

Mirrors the release's selector: walk the catalog's priority list for (platform, MLA, GPU),
skip candidates whose guard does not hold, validate each remaining one the way the release
does (`validates`), and take the first valid one. The chosen backend is then checked in full:
a problem at the `init` or `runtime` stage means the engine picks it and then fails.
"""

from __future__ import annotations

from typing import AbstractSet, List, Optional, Tuple

from kvlint.records import dataclass
from kvlint.catalog.engines import (
    BackendInfo,
    EngineRelease,
    Query,
    Sources,
    Verdict,
    eval_any,
    guess_quantized,
)
from kvlint.versions import sm_name

_ALL_KINDS = ("platform", "mla", "kv_dtype", "head_size", "block_size", "compute_capability",
              "sinks", "per_head_scales")


@dataclass(frozen=True)
class Selection:
    """The backend an engine's automatic selection ends up with, the ones it skipped, and whether it fails."""

    backend: Optional[str]  # what the engine ends up using; None = no valid backend
    first_choice: str  # the first candidate the selector considered ("" if none)
    rejected: Tuple[Tuple[str, str], ...]  # (backend, reason) skipped before `backend`
    fails: bool  # no backend, or the chosen one raises at init/runtime
    reason: str = ""  # why it fails (or "" when it does not)
    sources: Sources = ()
    verdict: Optional[Verdict] = None  # full check of the chosen backend

    @property
    def fell_back(self) -> bool:
        return self.backend is not None and self.backend != self.first_choice


def predict_backend(
    release: EngineRelease,
    gpu_cc: Optional[Tuple[int, int]],
    vendor: str,
    dtype_literal: str,
    head_size: Optional[int],
    is_mla: bool,
    has_sinks: bool = False,
    block_size: Optional[int] = None,
    per_head_scales: bool = False,
    *,
    missing_packages: AbstractSet[str] = frozenset(),
    aiter: bool = False,
    quantized: Optional[bool] = None,
    sparse: Optional[bool] = None,
) -> Optional[Selection]:
    """None when the catalog has no priority list for this engine/platform/GPU, or when the walk
    reaches a candidate whose answer kvlint cannot know: a backend whose checks the catalog does
    not model (`checks: unknown`), or a sparse-MLA backend while the model's kind (`sparse`:
    index_topk or not) is unknown. The prediction is then unknown, never a guess.

    Answers are memoized per release view, by every argument (a view of one release never
    changes, as BackendInfo.accepts' memo relies on; a Selection is immutable)."""
    key = (gpu_cc, vendor, dtype_literal, head_size, is_mla, has_sinks, block_size, per_head_scales,
           frozenset(missing_packages), aiter, quantized, sparse)
    memo = getattr(release, "__dict__", None)
    memo = memo.setdefault("_predict_memo", {}) if memo is not None else None
    try:
        hit = memo.get(key, _UNSEEN) if memo is not None else _UNSEEN
    except TypeError:  # an unhashable argument: answered, not remembered
        memo, hit = None, _UNSEEN
    if hit is _UNSEEN:
        hit = select_backend(release, gpu_cc, vendor, dtype_literal, head_size, is_mla, has_sinks, block_size,
                       per_head_scales, missing_packages, aiter, quantized, sparse)
        if memo is not None:
            memo[key] = hit
    return hit


_UNSEEN = object()


def select_backend(release: EngineRelease, gpu_cc: Optional[Tuple[int, int]], vendor: str, dtype_literal: str,
                   head_size: Optional[int], is_mla: bool, has_sinks: bool, block_size: Optional[int],
                   per_head_scales: bool, missing_packages: AbstractSet[str], aiter: bool,
                   quantized: Optional[bool], sparse: Optional[bool]) -> Optional[Selection]:
    """predict_backend's walk, every argument given and nothing remembered."""
    platform = "rocm" if vendor == "amd" else "cuda"
    rule = release.selection_rule(platform, is_mla, gpu_cc if platform == "cuda" else None)
    if rule is None:
        return None
    dtype_info = release.dtype(dtype_literal)
    if quantized is None:
        quantized = dtype_info.quantized if dtype_info else guess_quantized(dtype_literal)
    cc = gpu_cc if platform == "cuda" else None
    guard_q = Query(release.version, platform, cc, head_size, dtype_literal, quantized, has_sinks,
                    block_size if block_size is not None else release.default("block_size"), None, aiter)
    kinds = _ALL_KINDS if rule.validates == "all" else tuple(rule.validates)
    on = f" on {sm_name(gpu_cc)}" if gpu_cc and platform == "cuda" else f" on {platform}"

    rejected: List[Tuple[str, str]] = []
    first_choice = ""
    for item in rule.order:
        name = item if isinstance(item, str) else item["backend"]
        guard = None if isinstance(item, str) else item.get("when")
        if guard is not None and eval_any(guard, guard_q) is not True:
            continue
        backend = release.backend(name, platform=platform, is_mla=is_mla)
        if backend is not None and is_mla and backend.mla and sparse is not None and backend.sparse != sparse:
            # vLLM routes an MLA model by its kind whatever else it validates: 0.11.0 returns
            # FlashMLA Sparse for any index_topk model (vllm/platforms/cuda.py v0.11.0 L252-255),
            # later releases refuse the other kind in validate_configuration and list the sparse
            # backends after the dense ones. A backend of the other kind is no candidate at all.
            continue
        if not first_choice:
            first_choice = name
        if backend is None:
            rejected.append((name, f"{release.label} has no {name} backend{on}"))
            continue
        if backend.requires_package and backend.requires_package in missing_packages:
            rejected.append((name, f"{backend.requires_package} is not installed"))
            continue
        check = _check(backend, dtype_literal, gpu_cc, head_size, block_size, platform, has_sinks,
                       per_head_scales, is_mla, quantized, aiter, kinds, sparse)
        if not check.ok:
            rejected.append((name, check.reason))
            continue
        if not backend.checks_known or (is_mla and backend.sparse and sparse is None):
            return None
        full = _check(backend, dtype_literal, gpu_cc, head_size, block_size, platform, has_sinks,
                      per_head_scales, is_mla, quantized, aiter, None, sparse)
        fails = not full.ok
        return Selection(backend.name, first_choice, tuple(rejected), fails,
                         full.reason if fails else "", rule.sources + (full.sources if fails else ()), full)
    reason = (f"{release.label}{on}: no valid attention backend for kv_cache_dtype {dtype_literal} "
              f"(ValueError 'No valid attention backend found')")
    return Selection(None, first_choice, tuple(rejected), True, reason, rule.sources)


def _check(backend: BackendInfo, dtype: str, gpu_cc, head_size, block_size, platform, has_sinks,
           per_head_scales, is_mla, quantized, aiter, kinds, sparse=None) -> Verdict:
    return backend.accepts(dtype, gpu_cc if platform == "cuda" else None, head_size, block_size,
                           platform=platform, has_sinks=has_sinks, per_head_scales=per_head_scales,
                           is_mla=is_mla, quantized=quantized, aiter=aiter, kinds=kinds, sparse=sparse)
