"""`kvlint plan`'s work without click: the baseline, the axes, the search, the chosen manifest."""

from __future__ import annotations

import json
import math
from typing import Any, Dict, List, Optional, Sequence, Tuple

from kvlint.catalog import load_catalogs
from kvlint.catalog.hf_config import remembered_lookups
from kvlint.resolve.remedy import remembered_remedies
from kvlint.config import Config
from kvlint.errors import UsageError
from kvlint.plan.request import PlanRequest
from kvlint.plan.search import Judge, Outcome, PlanResult, score_risk, search, target_verdict
from kvlint.plan.space import GGML_ENGINES, MEMORY_FIELD, SLOT_VALUES, Axes, Candidate, apply, build_axes, build_ggml_axes


def baseline_candidate(request: PlanRequest) -> Candidate:
    """The base manifest's own configuration as a candidate (the baseline row)."""
    base = request.base
    if request.engine in GGML_ENGINES:
        return _ggml_baseline(base)
    cache = base.get("kv_cache") if isinstance(base.get("kv_cache"), dict) else {}
    scales = cache.get("scales") if isinstance(cache.get("scales"), dict) else {}
    parallel = base.get("parallelism") if isinstance(base.get("parallelism"), dict) else {}
    memory = base.get("memory") if isinstance(base.get("memory"), dict) else {}
    skip = cache.get("skip_layers")
    tensor = parallel.get("tensor") if isinstance(parallel.get("tensor"), int) else None
    pipeline = parallel.get("pipeline") if isinstance(parallel.get("pipeline"), int) else 1
    if tensor is None:
        tensor = max(1, request.gpu_count // pipeline)
    fraction = memory.get(MEMORY_FIELD.get(request.engine, ""))
    return Candidate(
        dtype=str(cache.get("dtype") or "auto"),
        scales=(scales["granularity"], scales["source"]) if scales.get("granularity") and scales.get("source") else None,
        backend=str((base.get("engine") or {}).get("attention_backend") or "auto"),
        skip=tuple(skip) if isinstance(skip, list) and skip else None,
        block_size=cache.get("block_size") if isinstance(cache.get("block_size"), int) else None,
        tensor=tensor, pipeline=pipeline,
        max_model_len=(base.get("serving") or {}).get("max_model_len"),
        memory=float(fraction) if isinstance(fraction, (int, float)) else None,
    )


def _ggml_baseline(base: Dict[str, Any]) -> Candidate:
    """A llama.cpp deployment's own K/V types, -fa, context per slot and slots (llama.cpp's
    defaults where it leaves them out: f16, one slot)."""
    cache = base.get("kv_cache") if isinstance(base.get("kv_cache"), dict) else {}
    serving = base.get("serving") if isinstance(base.get("serving"), dict) else {}
    shared = str(cache.get("dtype") or "f16")
    key = str(cache.get("key_dtype") or shared)
    value = str(cache.get("value_dtype") or shared)
    slots = serving.get("max_num_seqs") if isinstance(serving.get("max_num_seqs"), int) else 1
    size = serving.get("context_size")
    context = size // max(1, slots) if isinstance(size, int) and size > 0 else None
    fa = (base.get("engine") or {}).get("flash_attention")
    return Candidate(key, None, "auto", None, None, 1, 1, context, None, value_dtype=value,
                     flash_attention=str(fa) if fa is not None else "auto", slots=slots)


def context_values(request: PlanRequest, facts: Dict[str, Any]) -> List[Optional[int]]:
    """The context lengths tried: the target (or the file's), and twice it while the model allows;
    without either, the model's own maximum and the powers of two from 8k below it."""
    maximum = (facts.get("model") or {}).get("max_position_embeddings")
    target = request.targets.context
    if target:
        values = [target]
        if isinstance(maximum, int) and target * 2 <= maximum:
            values.append(target * 2)
        return values
    if not isinstance(maximum, int):
        return [None]
    values = [v for v in (8192, 32768) if v < maximum]
    return values + [maximum]


def _keep_file_defaults(axes: Axes, baseline: Candidate, default_memory: Optional[float]) -> None:
    """For `plan FILE`: an axis's "leave it out" value is what the file already says (a patch
    adds or changes settings, it does not delete them)."""
    def first(values: List[Any], value: Any) -> List[Any]:
        return [value] + [v for v in values if v != value and v is not None]

    if baseline.backend != "auto":
        axes.backends = first([b for b in axes.backends if b != "auto"], baseline.backend)
    if baseline.block_size is not None:
        axes.block_sizes = first(axes.block_sizes, baseline.block_size)
    if baseline.memory is not None:  # the release's default, written out, stays on the axis
        explicit = axes.memories + ([default_memory] if default_memory is not None else [])
        axes.memories = first(sorted({m for m in explicit if m is not None}), baseline.memory)
    if baseline.max_model_len is not None and baseline.max_model_len not in axes.contexts:
        axes.contexts = [baseline.max_model_len] + [c for c in axes.contexts if c is not None]
    if baseline.skip is not None:
        axes.skips = first(axes.skips, baseline.skip)
    if baseline.dtype in axes.dtypes:  # of equal configurations, the file's own spelling wins
        axes.dtypes = first(axes.dtypes, baseline.dtype)
    if baseline.scales is not None and baseline.scales in axes.scales.get(baseline.dtype, []):
        axes.scales[baseline.dtype] = first(axes.scales[baseline.dtype], baseline.scales)


def make_judge(request: PlanRequest, config: Config, rulebook: Any, enabled: Any) -> Judge:
    return Judge(rulebook, enabled, config.catalog_dirs, config.max_scale_overhead, request.manifest_path)


def restrict(axes: Axes, dtypes: Sequence[str] = (), backends: Sequence[str] = ()) -> None:
    """Search only these cache dtypes / attention backends (`--kv-cache-dtype`, `--attention-backend`);
    a name the release does not catalogue is a usage error."""
    for wanted, values, flag in ((dtypes, axes.dtypes, "--kv-cache-dtype"), (backends, axes.backends, "--attention-backend")):
        unknown = [w for w in wanted if w not in values]
        if unknown:
            raise UsageError(f"{flag} {', '.join(unknown)}: not among the values searched here ({', '.join(values)})")
    if dtypes:
        axes.dtypes = [d for d in axes.dtypes if d in dtypes]
        if hasattr(axes, "value_dtypes"):  # llama.cpp: the same types for K and V
            axes.value_dtypes = [d for d in axes.value_dtypes if d in dtypes]
    if backends:
        axes.backends = [b for b in axes.backends if b in backends]
    if dtypes:  # a dtype the user did not ask about: its left-out options are not news
        axes.left_out = [item for item in axes.left_out if item["family"].split()[0] in dtypes]


def plan(request: PlanRequest, config: Config, rulebook: Any, enabled: Any, limit: Optional[int] = None,
         dtypes: Sequence[str] = (), backends: Sequence[str] = ()) -> Tuple[PlanResult, Optional[Dict[str, Any]]]:
    """(the plan, the chosen configuration's manifest or None)."""
    # every candidate names the same model: one look at the HF cache; and the same refusals
    # recur over the candidates: one search for each remedy
    with remembered_lookups(), remembered_remedies():
        return _plan(request, config, rulebook, enabled, limit, dtypes, backends)


def _plan(request: PlanRequest, config: Config, rulebook: Any, enabled: Any, limit: Optional[int],
          dtypes: Sequence[str], backends: Sequence[str]) -> Tuple[PlanResult, Optional[Dict[str, Any]]]:
    judge = make_judge(request, config, rulebook, enabled)
    start = baseline_candidate(request)
    baseline = judge.judge(apply(request.base, start, request.engine), start)
    unknown_gpu = [message for code, _, message in baseline.findings if code == "KV202"]
    if unknown_gpu:  # a GPU the catalog lacks is a fixed input the plan cannot price: say so up front
        raise UsageError(f"the GPU: {unknown_gpu[0]}")
    ggml = request.engine in GGML_ENGINES
    release = None if ggml else load_catalogs(tuple(config.catalog_dirs)).engines.release(request.engine, request.release)
    default_memory = release.default(MEMORY_FIELD.get(request.engine, "")) if release is not None else None
    default_memory = float(default_memory) if isinstance(default_memory, (int, float)) else None
    if not baseline.errors and baseline.tokens is not None:
        score_risk(baseline, default_memory)
        baseline.meets = target_verdict(baseline, request.targets)
    checkpoint = (baseline.facts.get("model") or {}).get("kv_scales") or "none"
    parallel = None
    if request.source is not None:
        parallel = (start.tensor, start.pipeline)  # a file's parallelism is one of its fixed facts
    axes: Any
    if ggml:
        slots = set(SLOT_VALUES)
        if request.targets.concurrency:
            slots.add(max(1, math.ceil(request.targets.concurrency)))
        if request.source is not None and start.slots:
            slots.add(start.slots)
        axes = build_ggml_axes(request.release, context_values(request, baseline.facts), sorted(slots))
    else:
        axes = build_axes(release, request.engine, baseline.facts, request.gpu_count,
                          context_values(request, baseline.facts), parallel, checkpoint)
    if request.source is not None and not ggml:
        _keep_file_defaults(axes, start, default_memory)
    restrict(axes, dtypes, backends)
    result = search(request.base, axes, judge, request.engine, request.release, request.targets,
                    baseline if request.source is not None else None, default_memory, limit=limit)
    result.notes[:0] = request.notes
    if ggml:
        result.notes.append("llama.cpp: -c sets the KV cells, so the KV tokens follow the context and slots; "
                            "whether the weights and this cache fit the GPU (-ngl, --fit) is not modelled: "
                            "of equal tokens and risk the smaller cache is proposed")
    if request.source is not None and baseline.tokens is not None and not baseline.errors:
        result.floor_tokens = baseline.tokens
    chosen = result.chosen
    if chosen is None:
        return result, None
    manifest = apply(request.base, chosen.candidate, request.engine)
    manifest.setdefault("metadata", {})
    if request.source is None:
        manifest["metadata"] = {"name": _name(manifest), "description": f"written by kvlint plan: {chosen.candidate.label()}"}
    targets: Dict[str, Any] = {}
    kept = request.kept_targets
    if "max_scale_overhead" in kept:  # judged with it (it is in the base's targets)
        targets["max_scale_overhead"] = kept["max_scale_overhead"]
    planned = kept.get("planned_kv_tokens")
    if isinstance(planned, int) and chosen.tokens_low is not None and chosen.tokens_low >= planned:
        targets["planned_kv_tokens"] = planned  # still holds for certain: the file's plan stays
    if chosen.meets == "yes":  # only a target the plan shows is met goes into the file
        if request.targets.concurrency is not None:
            targets["min_concurrency"] = request.targets.concurrency
        if request.targets.kv_tokens is not None:
            targets["min_kv_tokens"] = request.targets.kv_tokens
    if targets:
        manifest["targets"] = targets
    else:
        manifest.pop("targets", None)
    return result, manifest


def _name(manifest: Dict[str, Any]) -> str:
    model = str((manifest.get("model") or {}).get("name") or "model").split("/")[-1].lower()
    gpu = str((manifest.get("hardware") or {}).get("gpu") or "gpu").lower()
    cleaned = "".join(c if c.isalnum() or c in ".-" else "-" for c in f"{model}-{gpu}-plan")
    return cleaned.strip("-.")[:200] or "plan"


def result_json(result: PlanResult, emitted: Optional[str] = None) -> Dict[str, Any]:
    """The documented JSON shape (docs/plan.md, "JSON output")."""
    chosen = result.chosen
    return {
        "kvlint_plan": 1,
        "engine": result.engine,
        "release": result.release,
        "targets": result.targets.to_json(),
        "candidates": {"considered": result.considered, "judged": result.evaluated,
                       "passed": len(result.kept), "capacity_unknown": result.unranked},
        "baseline": result.baseline.to_json() if result.baseline is not None else None,
        "chosen": chosen.to_json() if chosen is not None else None,
        "pareto": [dict(o.to_json(), why=why) for o, why in zip(result.front, result.reasons())],
        "excluded": result.excluded,
        "capacity_unknown": result.unknown_capacity,
        "notes": list(result.notes),
        "emitted": emitted,
    }


def dumps(document: Any) -> str:
    return json.dumps(document, indent=2) + "\n"


__all__ = ["Outcome", "plan", "result_json"]
