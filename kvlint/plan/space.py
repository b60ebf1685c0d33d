"""The configuration space `kvlint plan` searches: the axes, their values, and the candidates.

Every value comes from the engine catalog of the release being planned (dtypes, backends,
defaults) or from the model's facts (layer count, sliding-window layers); nothing here decides
whether a combination works. That is the job of the same resolve, rules, defect catalog and
capacity code `kvlint check` runs (kvlint.plan.search).
"""

from __future__ import annotations

import copy
import itertools
from kvlint.records import dataclass, field
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

# The memory-fraction field of each engine, and the explicit values tried beside its default.
MEMORY_FIELD = {"vllm": "gpu_memory_utilization", "sglang": "mem_fraction_static",
                "tensorrt-llm": "free_gpu_memory_fraction"}
MEMORY_VALUES = (0.90, 0.95)
# kv_cache.scales.granularity values the manifest schema accepts (schemas/manifest.v1.json).
MANIFEST_GRANULARITIES = ("per-tensor", "per-head", "per-token-head")
BLOCK_SIZES = {"vllm": (16, 32, 64), "sglang": (16, 64), "tensorrt-llm": ()}


@dataclass(frozen=True)
class Candidate:
    """One configuration: a value on every axis (None: leave the field out, the engine default)."""

    dtype: str
    scales: Optional[Tuple[str, str]]  # (granularity, source)
    backend: str
    skip: Optional[Tuple[Any, ...]]
    block_size: Optional[int]
    tensor: int
    pipeline: int
    max_model_len: Optional[int]
    memory: Optional[float]
    # llama.cpp only (None elsewhere): the V cache type when it differs from K (`dtype`), the
    # flash-attention setting (-fa on|off|auto) and the parallel slots (-np).
    value_dtype: Optional[str] = None
    flash_attention: Optional[str] = None
    slots: Optional[int] = None

    def family(self) -> str:
        return self.dtype if self.value_dtype is None else f"K {self.dtype} / V {self.value_dtype}"

    def is_ggml(self) -> bool:
        """A llama.cpp candidate (its own axes set)."""
        return self.flash_attention is not None or self.slots is not None or self.value_dtype is not None

    def label(self) -> str:
        if self.is_ggml():
            parts = [f"K {self.dtype} V {self.value_dtype or self.dtype}"]
            if self.flash_attention is not None:
                parts.append(f"fa {self.flash_attention}")
            if self.max_model_len is not None:
                parts.append(f"ctx {self.max_model_len}")
            if self.slots is not None:
                parts.append(f"np {self.slots}")
            return " ".join(parts)
        parts = [self.dtype]
        if self.scales:
            parts.append(f"{self.scales[0]}/{self.scales[1]}")
        parts.append(self.backend)
        if self.skip:
            parts.append("skip " + ",".join(str(s) for s in self.skip))
        if self.block_size:
            parts.append(f"block {self.block_size}")
        if self.tensor > 1 or self.pipeline > 1:
            parts.append(f"tp{self.tensor}pp{self.pipeline}")
        if self.memory is not None:
            parts.append(f"mem {self.memory:.2f}")
        return " ".join(parts)

    def to_json(self) -> Dict[str, Any]:
        return {
            "kv_cache_dtype": self.dtype,
            "scales": {"granularity": self.scales[0], "source": self.scales[1]} if self.scales else None,
            "attention_backend": self.backend,
            "skip_layers": list(self.skip) if self.skip else [],
            "block_size": self.block_size,
            "tensor_parallel": self.tensor,
            "pipeline_parallel": self.pipeline,
            "max_model_len": self.max_model_len,
            "memory_fraction": self.memory,
            **({"value_dtype": self.value_dtype or self.dtype, "flash_attention": self.flash_attention,
                "slots": self.slots} if self.is_ggml() else {}),
        }


@dataclass
class Axes:
    """The values of every axis, and the options left out before evaluation with the reason."""

    dtypes: List[str]
    scales: Dict[str, List[Optional[Tuple[str, str]]]]
    backends: List[str]
    skips: List[Optional[Tuple[Any, ...]]]
    block_sizes: List[Optional[int]]
    parallel: List[Tuple[int, int]]
    contexts: List[Optional[int]]
    memories: List[Optional[float]]
    left_out: List[Dict[str, str]] = field(default_factory=list)

    def size(self) -> int:
        per_dtype = sum(len(self.scales.get(d) or [None]) * (len(self.skips) if self._quantized(d) else 1)
                        for d in self.dtypes)
        return (per_dtype * len(self.backends) * len(self.block_sizes) * len(self.parallel)
                * len(self.contexts) * len(self.memories))

    quantized: Dict[str, bool] = field(default_factory=dict)

    def _quantized(self, dtype: str) -> bool:
        return self.quantized.get(dtype, False)

    def candidates(self) -> Iterator[Candidate]:
        for dtype in self.dtypes:
            skips = self.skips if self._quantized(dtype) else [None]
            for scales, backend, skip, block, (tp, pp), context, memory in itertools.product(
                    self.scales.get(dtype) or [None], self.backends, skips, self.block_sizes,
                    self.parallel, self.contexts, self.memories):
                yield Candidate(dtype, scales, backend, skip, block, tp, pp, context, memory)


def factorizations(count: int) -> List[Tuple[int, int]]:
    """(tensor, pipeline) pairs whose product is the GPU count."""
    return [(tp, count // tp) for tp in range(1, count + 1) if count % tp == 0]


def _platform(gpu_facts: Dict[str, Any]) -> str:
    return "rocm" if gpu_facts.get("vendor") == "amd" else "cuda"


def build_axes(release: Any, engine: str, facts: Dict[str, Any], gpu_count: int,
               contexts: Sequence[Optional[int]], fixed_parallel: Optional[Tuple[int, int]] = None,
               checkpoint_scales: str = "none") -> Axes:
    """The axes for one engine release, from its catalog entry and the baseline's facts.

    `facts` are the baseline deployment's (the model's geometry, the GPU); `checkpoint_scales`
    what the checkpoint carries (`model.kv_scales`): scale options that need scales it does not
    carry are left out with the reason, never silently."""
    left_out: List[Dict[str, str]] = []
    model = facts.get("model") or {}
    gpu = facts.get("gpu") or {}
    platform = _platform(gpu)
    is_mla = model.get("is_mla")
    dtypes: List[str] = []
    scales: Dict[str, List[Optional[Tuple[str, str]]]] = {}
    quantized: Dict[str, bool] = {}
    for literal, info in release.dtypes.items():
        if info.platforms and platform not in info.platforms:
            left_out.append({"family": literal, "reason": f"{literal}: only on {', '.join(info.platforms)}, "
                             f"not {platform}", "code": "catalog"})
            continue
        if info.mla_only and is_mla is False:
            left_out.append({"family": literal, "reason": f"{literal}: MLA models only", "code": "catalog"})
            continue
        dtypes.append(literal)
        quantized[literal] = bool(info.quantized)
        options: List[Optional[Tuple[str, str]]] = []
        for granularity in info.allowed_granularities:
            if granularity not in MANIFEST_GRANULARITIES:
                continue  # block scales (nvfp4): the format's own, not a manifest setting
            for source in info.scale_sources:
                if granularity == "per-head" and source != "checkpoint":
                    continue
                if source == "checkpoint" and checkpoint_scales == "none":
                    reason = ("per-head scales: no calibrated checkpoint named" if granularity == "per-head"
                              else "checkpoint scales: the checkpoint carries no KV scales")
                    left_out.append({"family": f"{literal} {granularity}/{source}",
                                     "reason": f"{literal} {reason} (model.kv_scales: none; name a "
                                               "checkpoint that carries them, or pass --checkpoint-kv-scales)",
                                     "code": "KV502" if granularity == "per-head" else "precondition"})
                    continue
                if granularity == "per-head" and checkpoint_scales != "per-head":
                    left_out.append({"family": f"{literal} per-head/checkpoint",
                                     "reason": f"{literal} per-head scales: the checkpoint carries "
                                               f"{checkpoint_scales} KV scales, no per-head calibrated ones",
                                     "code": "KV502"})
                    continue
                options.append((granularity, source))
        scales[literal] = options or [None]
    backends = ["auto"]
    for name in release.backend_names():
        info = release.backend(name, platform=platform, is_mla=is_mla)
        if info is None or (info.platforms and platform not in info.platforms):
            continue
        if is_mla is not None and info.mla != bool(is_mla):
            continue
        if not info.checks_known:
            # kvlint knows the name but not the backend's own checks (KV344): nothing it would
            # propose there could be judged, so it is not searched, and the plan says so
            left_out.append({"family": f"backend {name}",
                             "reason": f"{name}: kvlint does not model this backend's configuration checks",
                             "code": "KV344"})
            continue
        backends.append(name)
    skips: List[Optional[Tuple[Any, ...]]] = [None]
    if "kv_cache_dtype_skip_layers" in release.features or engine == "vllm":
        layers = model.get("num_layers")
        if model.get("has_sliding_layers"):
            skips.append(("sliding_window",))
        if isinstance(layers, int) and layers >= 2:
            skips.append((0, layers - 1))
    default_block = release.default("block_size")
    block_sizes: List[Optional[int]] = [None] + [b for b in BLOCK_SIZES.get(engine, ()) if b != default_block]
    default_memory = release.default(MEMORY_FIELD.get(engine, ""))
    memories: List[Optional[float]] = [None] + [m for m in MEMORY_VALUES
                                                if not isinstance(default_memory, (int, float)) or
                                                abs(m - float(default_memory)) > 1e-9]
    parallel = [fixed_parallel] if fixed_parallel else factorizations(max(1, gpu_count))
    return Axes(dtypes, scales, backends, skips, block_sizes, parallel, list(contexts) or [None], memories,
                left_out, quantized)


# Engines whose cache kvlint models through the ggml catalog (kvlint/catalog/data/ggml*.yaml),
# not the engine catalog: their axes are the K/V cache types, flash attention, context and slots.
GGML_ENGINES = ("llama.cpp",)
SLOT_VALUES = (1, 4)


@dataclass
class GgmlAxes:
    """llama.cpp's axes: K and V cache types (each from the types the build accepts), the
    flash-attention setting as the build spells it, the per-slot context and the slots (-np);
    -c is context x slots, one stream per slot."""

    dtypes: List[str]  # K cache types
    value_dtypes: List[str]
    flash: List[str]
    contexts: List[Optional[int]]
    slots: List[int]
    left_out: List[Dict[str, str]] = field(default_factory=list)
    backends: List[str] = field(default_factory=list)  # no attention-backend axis (restrict)

    def size(self) -> int:
        return len(self.dtypes) * len(self.value_dtypes) * len(self.flash) * len(self.contexts) * len(self.slots)

    def candidates(self) -> Iterator[Candidate]:
        for k, v, fa, slots, context in itertools.product(self.dtypes, self.value_dtypes, self.flash,
                                                          self.slots, self.contexts):
            yield Candidate(k, None, "auto", None, None, 1, 1, context, None,
                            value_dtype=v, flash_attention=fa, slots=slots)


def build_ggml_axes(build: str, contexts: Sequence[Optional[int]], slots: Sequence[int] = SLOT_VALUES) -> GgmlAxes:
    """The axes for one llama.cpp build, from the ggml catalog: the cache types the build accepts
    (`--cache-type-k/-v`, K and V independently) and `-fa on|off|auto` where the build takes the
    tri-state (a plain switch before: on, or left off)."""
    from kvlint.catalog.ggml import load_ggml_catalog  # on use: only llama.cpp plans need it

    catalog = load_ggml_catalog()
    types = list(catalog.accepted_types(build))
    fa_flag = catalog.setting("llama.cpp", "fa_flag", build)
    flash = ["on", "off", "auto"] if fa_flag is not None and fa_flag.value == "tristate" else ["on", "off"]
    return GgmlAxes(types, list(types), flash, list(contexts) or [None], sorted(set(slots)))


def _apply_ggml(data: Dict[str, Any], candidate: Candidate) -> Dict[str, Any]:
    engine_section = data.setdefault("engine", {})
    engine_section["flash_attention"] = candidate.flash_attention
    cache: Dict[str, Any] = {"dtype": candidate.dtype}
    if candidate.value_dtype is not None and candidate.value_dtype != candidate.dtype:
        cache = {"dtype": candidate.dtype, "key_dtype": candidate.dtype, "value_dtype": candidate.value_dtype}
    data["kv_cache"] = cache
    serving = data.get("serving") if isinstance(data.get("serving"), dict) else {}
    serving.pop("max_model_len", None)  # llama.cpp's per-slot context is -c / -np
    slots = candidate.slots or 1
    serving["max_num_seqs"] = slots
    if candidate.max_model_len is not None:
        serving["context_size"] = candidate.max_model_len * slots
    data["serving"] = serving
    return data


_ATOMS = (str, int, float, bool, type(None))


def copy_manifest(value: Any, memo: Dict[int, Any]) -> Any:
    """copy.deepcopy(value, memo) for manifest data, in a fraction of its time (a plan copies
    the base manifest once per candidate): dicts and lists rebuilt, scalars kept (immutable),
    anything else through deepcopy itself. `memo` is deepcopy's (id -> copy), so a part the base
    shares (a YAML alias) is shared in the copy too, as deepcopy does."""
    kind = type(value)
    if kind in _ATOMS:
        return value
    if kind is dict or kind is list:
        done = memo.get(id(value))
        if done is not None:
            return done
        if kind is dict:
            out: Any = {}
            memo[id(value)] = out
            for key, item in value.items():
                out[key if type(key) in _ATOMS else copy.deepcopy(key, memo)] = copy_manifest(item, memo)
            return out
        out = []
        memo[id(value)] = out
        for item in value:
            out.append(copy_manifest(item, memo))
        return out
    return copy.deepcopy(value, memo)


def apply(base: Dict[str, Any], candidate: Candidate, engine: str) -> Dict[str, Any]:
    """The base manifest with the candidate's values written in (a new dict; base untouched)."""
    data = copy_manifest(base, {})
    if engine in GGML_ENGINES:
        return _apply_ggml(data, candidate)
    engine_section = data.setdefault("engine", {})
    if candidate.backend == "auto":
        engine_section.pop("attention_backend", None)
    else:
        engine_section["attention_backend"] = candidate.backend
    hardware = data.setdefault("hardware", {})
    if "count" in hardware or candidate.tensor * candidate.pipeline > 1:
        hardware["count"] = candidate.tensor * candidate.pipeline
    if "parallelism" in data or candidate.tensor * candidate.pipeline > 1:
        data["parallelism"] = {"tensor": candidate.tensor, "pipeline": candidate.pipeline}
    cache: Dict[str, Any] = {"dtype": candidate.dtype}
    old = data.get("kv_cache") if isinstance(data.get("kv_cache"), dict) else {}
    if candidate.scales:
        scales: Dict[str, Any] = {"granularity": candidate.scales[0], "source": candidate.scales[1]}
        calibration = (old.get("scales") or {}).get("calibration") if isinstance(old.get("scales"), dict) else None
        if candidate.scales[1] == "checkpoint" and isinstance(calibration, dict):
            scales["calibration"] = copy.deepcopy(calibration)
        cache["scales"] = scales
    if candidate.skip:
        cache["skip_layers"] = list(candidate.skip)
    if candidate.block_size is not None:
        cache["block_size"] = candidate.block_size
    data["kv_cache"] = cache
    options = engine_section.get("options")
    if isinstance(options, dict):
        options.pop("calculate_kv_scales", None)
        if not options:
            engine_section.pop("options")
    if candidate.scales and candidate.scales[1] == "warmup" and engine == "vllm":
        engine_section.setdefault("options", {})["calculate_kv_scales"] = True
    memory = data.get("memory") if isinstance(data.get("memory"), dict) else {}
    memory = {k: v for k, v in memory.items() if k not in MEMORY_FIELD.values()}
    if candidate.memory is not None and engine in MEMORY_FIELD:
        memory[MEMORY_FIELD[engine]] = candidate.memory
    if memory:
        data["memory"] = memory
    else:
        data.pop("memory", None)
    serving = data.get("serving") if isinstance(data.get("serving"), dict) else {}
    if candidate.max_model_len is not None:
        serving["max_model_len"] = candidate.max_model_len
    if serving:
        data["serving"] = serving
    return data
