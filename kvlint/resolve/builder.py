"""The facts document: everything a rule condition can test, as plain JSON data.

`FactsBuilder.resolve()` runs the resolve stage (catalog lookups, the effective cache format of
every layer, the predicted backend) and records, beside the `Deployment`, the predicates the rule
files in `rules/` test. Each predicate carries the concrete reason text the message shows, so a
rule never has to know how a fact was derived.
"""

from __future__ import annotations

import re
from dataclasses import field
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from kvlint.catalog import Catalogs
from kvlint.catalog.gpus import gpu_from_capability
from kvlint.records import dataclass, replace
from kvlint.units import parse_size
from kvlint.deployment import (
    FractionFactor,
    BLOCK_SCALED_FORMATS,
    GGML_ENGINES,
    INLINE_SCALE_FORMATS,
    PER_TOKEN_HEAD_FORMATS,
    UNQUANTIZED_FORMATS,
    Deployment,
    LayerPlan,
    ModelGeometry,
    ScaleLayout,
    model_dtype_format,
)
from kvlint.resolve.engine_view import EngineView, scale_pairing
from kvlint.resolve.fields import (
    model_geometry,
    build_deployment,
    get,
    linear_layers,
    memory_plan,
    model_dtype,
    online_quantization,
    speculative,
    weights_bytes,
)

SLIDING_WINDOW = "sliding_window"


@dataclass
class Resolution:
    """A document resolved: the Deployment (None when it cannot be built), its facts and notes."""

    deployment: Optional[Deployment]
    facts: Dict[str, Any]
    notes: List[str] = field(default_factory=list)


def resolve(data: Dict[str, Any], file: str, manifest_path: Optional[Path], catalogs: Catalogs) -> Resolution:
    """A manifest (possibly schema-invalid: wrong types read as unknown) plus the catalog ->
    the `Deployment` capacity computes on and the facts document rules read."""
    return FactsBuilder(data, file, manifest_path, catalogs).resolve()


# layer_plans' answers by (id of the layers tuple, format, kept format, skip set, quantized); each
# value holds the layers tuple it was built from, so that id is not reused while it is kept.
_LAYER_PLANS: Dict[Tuple[Any, ...], Tuple[Tuple[Any, ...], Tuple[LayerPlan, ...]]] = {}
_LAYER_PLANS_MAX = 256


def layer_plans(layers: Tuple[Any, ...], fmt: str, keep: str, skip: set, quantized: bool) -> Tuple[LayerPlan, ...]:
    """The cache format of every layer: `fmt`, or `keep` (the model dtype's) for a layer of the
    skip set when the cache is quantized. Remembered by the identity of `layers` (a catalogued
    model's geometry is built once per catalog entry, so thousands of deployments of one model
    share it) and every other input; the answer is a tuple of frozen records, safe to share."""
    skipped = frozenset(skip) if quantized else frozenset()
    key = (id(layers), fmt, keep, skipped)
    hit = _LAYER_PLANS.get(key)
    if hit is not None and hit[0] is layers:
        return hit[1]
    plans = tuple(
        LayerPlan(geometry=layer, cache_format=keep if layer.index in skipped else fmt,  # type: ignore[arg-type]
                  skipped=layer.index in skipped)
        for layer in layers
    )
    if len(_LAYER_PLANS) >= _LAYER_PLANS_MAX:
        _LAYER_PLANS.clear()
    _LAYER_PLANS[key] = (layers, plans)
    return plans


class FactsBuilder:
    def __init__(self, data: Dict[str, Any], file: str, manifest_path: Optional[Path], catalogs: Catalogs):
        self.data = data
        self.file = file
        self.manifest_path = manifest_path
        self.catalogs = catalogs
        self._checkpoint: Dict[str, Any] = {}  # a pre-quantized checkpoint's weights format (model_geometry)
        self._model_rewrite = False  # the stored dtype comes from a rewrite made before backend selection
        self.facts: Dict[str, Any] = {
            "kind": get(data, "kind", kind=str) or "Deployment",
            "file": file,
            "name": get(data, "metadata", "name", kind=str),
            "engine": {},
            "gpu": {},
            "model": {},
            "kv_cache": {},
            "scales": {},
            "skip": {},
            "backend": {"requested": get(data, "engine", "attention_backend", kind=str) or "auto"},
            "selection": {},
            "features": {},
            "serving": {},
            "targets": dict(get(data, "targets", kind=dict) or {}),
        }

    # -- pieces ------------------------------------------------------------------------------

    def _gpu(self):
        facts = self.facts["gpu"]
        written = get(self.data, "hardware", "gpu", kind=str)
        facts["written"] = written
        facts["known"] = False
        if not written:
            return None
        entry = self.catalogs.gpus.lookup(written)
        override = parse_size(get(self.data, "hardware", "memory"))
        described = get(self.data, "hardware", "compute_capability", kind=str)
        cc = tuple(int(part) for part in described.split(".")) if described and re.fullmatch(r"\d{1,2}\.\d", described) else None
        if entry is None and cc is None:
            facts["suggestions"] = self.catalogs.gpus.suggest(written)
            return None
        if entry is None:  # not in the catalog, but the manifest says what it is
            info = gpu_from_capability(written, cc, override)  # type: ignore[arg-type]
            facts["source"] = "manifest"
        else:
            info = entry.info(override)
            facts["source"] = "catalog"
        facts.update(
            known=True,
            id=info.id,
            vendor=info.vendor,
            cc=f"{info.compute_capability[0]}.{info.compute_capability[1]}" if info.compute_capability else None,
            arch=info.arch,
            fp8=info.fp8,
            fp4=info.fp4,
            memory_bytes=info.memory_bytes,
        )
        return info

    def _checkpoint_weights(self) -> Optional[Tuple[Any, ...]]:
        """The pre-quantized checkpoint's weights format model_geometry found (a catalog family
        member's `weights`, or a local config.json's quantization_config), else None."""
        found = getattr(self, "_checkpoint", None) or {}
        if not found.get("format"):
            return None
        return found["format"], found.get("source") or "the checkpoint", found.get("scale"), found.get("vocab")

    def _model(self) -> Optional[ModelGeometry]:
        facts = self.facts["model"]
        facts["name"] = get(self.data, "model", "name", kind=str)
        facts["source"] = None
        geometry = model_geometry(self.data, self.manifest_path, self.catalogs, self.facts, self._checkpoint)
        facts["known"] = geometry is not None
        stated = get(self.data, "model", "kv_scales", kind=str)
        # unstated: what the checkpoint's own config.json says (compressed-tensors kv_cache_scheme,
        # ModelOpt kv_cache_quant_algo), else none
        if stated:
            facts["kv_scales"], facts["kv_scales_source"] = stated, "manifest"
        elif facts.get("checkpoint_kv_scales"):
            facts["kv_scales"], facts["kv_scales_source"] = facts["checkpoint_kv_scales"], facts["checkpoint_kv_scales_source"]
        else:
            facts["kv_scales"], facts["kv_scales_source"] = "none", None
        if geometry is not None:
            kinds = [layer.kind for layer in geometry.layers]
            facts.update(
                num_layers=geometry.num_layers,
                num_kv_heads=geometry.num_kv_heads,
                head_dim=geometry.head_dim,
                is_mla=geometry.is_mla,
                has_sinks=geometry.has_sinks or any(layer.has_sinks for layer in geometry.layers),
                has_sliding_layers=geometry.has_sliding_layers,
                sliding_layers=kinds.count("sliding"),
                full_layers=kinds.count("full"),
                max_position_embeddings=geometry.max_position_embeddings,
                dtype=geometry.dtype,
            )
        return geometry

    def _scales_param_file(self) -> bool:
        """engine.options names a KV scales file: SGLang's --quantization-param-path (a JSON of
        per-layer scales, loaded for fp8_e4m3), under either spelling of the option."""
        options = get(self.data, "engine", "options", kind=dict) or {}
        return any(
            isinstance(options.get(key), str) and options[key].strip() != ""
            for key in ("quantization_param_path", "quantization-param-path")
        )

    def _skip(self, geometry: Optional[ModelGeometry]) -> set:
        """Indices of the layers the skip set keeps at the model dtype; facts for KV401/KV402/KV405."""
        facts = self.facts["skip"]
        entries = get(self.data, "kv_cache", "skip_layers")
        facts["given"] = isinstance(entries, list) and len(entries) > 0
        facts["entries"] = entries if isinstance(entries, list) else []
        facts["out_of_range"] = []
        facts["unrecognized"] = []
        facts["names_sliding_window"] = False
        skipped: set = set()
        if not isinstance(entries, list):
            return skipped
        num_layers = geometry.num_layers if geometry else None
        for position, entry in enumerate(entries):
            pointer = f"/kv_cache/skip_layers/{position}"
            if entry == SLIDING_WINDOW:
                facts["names_sliding_window"] = True
                facts["sliding_window_pointer"] = pointer
                if geometry is not None:
                    skipped.update(layer.index for layer in geometry.layers if layer.kind == "sliding")
                continue
            index = entry
            if isinstance(entry, str) and entry.strip().isascii() and entry.strip().isdigit():  # "²" is a digit, not a number
                index = int(entry.strip())
            if isinstance(index, int) and not isinstance(index, bool) and index >= 0:
                if num_layers is not None and index >= num_layers:
                    facts["out_of_range"].append(
                        {"value": index, "pointer": pointer, "num_layers": num_layers, "last": num_layers - 1}
                    )
                else:
                    skipped.add(index)
                continue
            facts["unrecognized"].append({"value": entry, "pointer": pointer})
        return skipped

    def _scales(self, quantized: bool, per_token_head: bool, block_scaled: bool) -> ScaleLayout:
        facts = self.facts["scales"]
        granularity = get(self.data, "kv_cache", "scales", "granularity", kind=str)
        source = get(self.data, "kv_cache", "scales", "source", kind=str)
        checkpoint = self.facts["model"]["kv_scales"]
        derived = False
        if quantized:
            if granularity is None:
                derived = True
                if per_token_head:
                    granularity = "per-token-head"
                elif block_scaled:
                    granularity = "block"
                elif checkpoint == "per-head":
                    granularity = "per-head"
                else:
                    granularity = "per-tensor"
            if source is None:
                derived = True
                if per_token_head:
                    source = "dynamic"
                elif checkpoint != "none":
                    source = "checkpoint"
                elif get(self.data, "engine", "options", "calculate_kv_scales") is True:
                    source = "warmup"
                else:
                    source = "unit"
        calibration = get(self.data, "kv_cache", "scales", "calibration", kind=dict) or {}
        max_len = get(self.facts, "serving", "max_model_len")
        cal_len = calibration.get("max_seq_len") if isinstance(calibration.get("max_seq_len"), int) else None
        facts.update(
            granularity=granularity if quantized else None,
            source=source if quantized else None,
            derived=derived,
            written_granularity=get(self.data, "kv_cache", "scales", "granularity", kind=str),
            written_source=get(self.data, "kv_cache", "scales", "source", kind=str),
            calibration_max_seq_len=cal_len,
            calibration_ratio=(max_len / cal_len) if (cal_len and max_len) else None,
            checkpoint=checkpoint,
            param_file=self._scales_param_file(),
        )
        return ScaleLayout(
            granularity=granularity if quantized else None,  # type: ignore[arg-type]
            source=source if quantized else None,  # type: ignore[arg-type]
            derived=derived,
        )

    def _serving(self, geometry: Optional[ModelGeometry]) -> Optional[int]:
        facts = self.facts["serving"]
        written = get(self.data, "serving", "max_model_len", kind=int, lo=1)
        mpe = geometry.max_position_embeddings if geometry else None
        facts.update(
            max_model_len=written or mpe,
            max_model_len_written=written,
            max_position_embeddings=mpe,
            max_num_batched_tokens=get(self.data, "serving", "max_num_batched_tokens", kind=int, lo=1),
            exceeds_model=bool(written and mpe and written > mpe),
            max_model_len_pointer="/serving/max_model_len" if written else "/model/name",
        )
        return written or mpe

    # -- the whole resolve ---------------------------------------------------------------------

    def resolve(self) -> Resolution:
        data = self.data
        engine_name = get(data, "engine", "name", kind=str) or ""
        version = str(get(data, "engine", "version") or "")
        gpu = self._gpu()
        geometry = self._model()
        linear = linear_layers(data, self.manifest_path)
        self.facts["model"].update(linear_layers=linear, hybrid_linear=bool(linear))
        self.facts["speculative"] = speculative(data)
        max_model_len = self._serving(geometry)
        if engine_name in GGML_ENGINES:
            return self._resolve_ggml(engine_name, version, gpu, geometry)
        view = EngineView(self.catalogs, engine_name, version, self.facts)
        self._backend_from_env(view, engine_name)
        dtype_literal = get(data, "kv_cache", "dtype", kind=str) or "auto"
        mdtype = model_dtype(data, geometry)
        if geometry is not None and geometry.dtype != mdtype:
            # a written model.dtype is what the engine runs in (vLLM/SGLang --dtype): the capacity
            # terms read it from the geometry (rotary cache, unquantized layers)
            geometry = replace(geometry, dtype=mdtype)
        skipped = self._skip(geometry)

        # The cache dtype the engine stores: a release that rewrites it for the named backend
        # (SGLang 0.5.23 runs the deprecated tokenspeed_mla as cutedsl_mla with fp8_e4m3 whatever
        # was given; KV325 warns) is planned with the rewritten dtype; the facts keep the written one.
        stored_literal, rewrite_note = self._dtype_rewrite(view, dtype_literal, geometry)
        # a rewrite the engine makes for the model while it builds its config comes before backend
        # selection: the backend checks see the rewritten dtype (vLLM DeepSeek-V3.2: fp8 -> fp8_ds_mla)
        selected_literal = stored_literal if self._model_rewrite else dtype_literal
        fmt = view.storage_format(stored_literal, mdtype, gpu)
        checkpoint = self.facts["model"]["kv_scales"]
        auto_quantized = False
        # the format, when kvlint read it from the checkpoint's config.json, has its own boundary
        auto_rule = ("compressed_tensors_kv_scheme_auto"
                     if self.facts["model"].get("checkpoint_kv_scheme") == "compressed-tensors"
                     and self.facts["model"].get("kv_scales_source") != "manifest" else "checkpoint_kv_scheme_auto")
        if (dtype_literal == "auto" and checkpoint != "none" and engine_name == "vllm"
                and view.default(auto_rule) != "model_dtype"):
            # vLLM: a checkpoint KV scheme turns `auto` into fp8 (`Attention.__init__`,
            # vllm/model_executor/layers/attention/attention.py L288, v0.33.0, for compressed-tensors'
            # kv_cache_scheme; `resolve_kv_cache_dtype_string`, vllm/utils/torch_utils.py L498 and
            # vllm/engine/arg_utils.py L2297, v0.33.0, for ModelOpt's), from 0.14.0 only: up to
            # 0.13.x the cache stays in the model dtype (catalog `checkpoint_kv_scheme_auto`).
            auto_quantized = True
            fmt = view.storage_format("fp8", mdtype, gpu)
        scheme_override = None
        if (dtype_literal != "auto" and checkpoint != "none" and engine_name == "vllm" and fmt is not None
                and auto_rule == "compressed_tensors_kv_scheme_auto" and view.default(auto_rule) == "fp8_any"
                and dtype_literal not in ("fp8", "fp8_e4m3")):
            # vLLM 0.15-0.21: a compressed-tensors kv_cache_scheme makes the cache fp8 whatever was
            # written (`Attention.__init__`, vllm/attention/layer.py v0.15.0 L198-203; unconditional
            # up to vllm/model_executor/layers/attention/attention.py v0.21.0 L232-238). KV345.
            scheme_override = dtype_literal
            fmt = view.storage_format("fp8", mdtype, gpu)
        fp8_checkpoint = self._fp8_checkpoint(view, engine_name)
        quantized = fmt is not None and fmt not in UNQUANTIZED_FORMATS
        per_token_head = fmt in PER_TOKEN_HEAD_FORMATS
        block_scaled = fmt in INLINE_SCALE_FORMATS  # scales inside the record (FP4, SGLang mxfp8, fp8_ds_mla)
        self.facts["kv_cache"].update(
            dtype=dtype_literal,
            format=fmt,
            known=fmt is not None,
            # KV205's message: a literal the release accepts whose storage the catalog lacks (no
            # format, e.g. SGLang 0.5.23 mxfp8) is not one the release refuses
            unknown_case="unmodelled" if fmt is None and dtype_literal in (self.facts["kv_cache"].get("accepted") or ()) else "refused",
            quantized=quantized,
            fp8=bool(fmt and fmt.startswith("fp8")),
            fp4=fmt in BLOCK_SCALED_FORMATS,
            e5m2=fmt == "fp8_e5m2",
            per_token_head=per_token_head,
            auto_quantized=auto_quantized,
            scheme_override=scheme_override,
            fp8_checkpoint=fp8_checkpoint,
            block_size=get(data, "kv_cache", "block_size", kind=int, lo=1, hi=4096),
            model_dtype=mdtype,
        )
        scales = self._scales(quantized, per_token_head, block_scaled)
        pairing_ok, pairing_sources = scale_pairing(scales.granularity, scales.source)
        self.facts["scales"].update(pairing_ok=pairing_ok, pairing_sources=pairing_sources)
        error = self.facts["model"].get("config_error")
        self.facts["model"]["config_error_suffix"] = f"; {error}" if error else ""

        layers: Tuple[LayerPlan, ...] = ()
        # vLLM 0.19-0.25 ignore the skip set on MLA models (known defect V1, KV803): plan what the
        # release allocates, every layer quantized; the facts keep the skip set as written.
        planned_skip = set() if (geometry is not None and geometry.is_mla
                                 and view.default("mla_skip_layers") == "ignored") else skipped
        if geometry is not None and fmt is not None:
            layers = layer_plans(geometry.layers, fmt, model_dtype_format(mdtype), planned_skip, quantized)
        self.facts["skip"]["effective"] = sorted(skipped) if quantized else []
        full = {layer.index for layer in geometry.layers if layer.kind == "full"} if geometry is not None else set()
        self.facts["skip"]["full_attention"] = sorted(skipped & full) if quantized else []
        self.facts["skip"]["sliding_layers"] = self.facts["model"].get("sliding_layers", 0)

        backend, backend_block = None, None
        if fmt is not None:  # an unknown dtype is KV205; predicting a backend for it adds noise
            backend, backend_block = view.backend("fp8" if auto_quantized or scheme_override else selected_literal,
                                                  gpu, geometry, scales,
                                                  env=get(data, "engine", "env", kind=dict))
        view.features(data)
        weights, weights_note = weights_bytes(data, self.facts["model"].get("catalog_weight_bytes"),
                                              self.facts["model"].get("catalog_weight_dtype"), geometry,
                                              self.facts["model"].get("catalog_hidden_size"),
                                              checkpoint=self._checkpoint_weights())
        memory = memory_plan(data, engine_name, gpu, view.default, weights)
        deployment = None
        if engine_name:
            deployment = build_deployment(
                data=data,
                file=self.file,
                engine=engine_name,
                version=version,
                requested_backend=self.facts["backend"].get("requested", "auto"),
                backend=backend,
                backend_block_size=backend_block,
                gpu=gpu,
                model=geometry,
                kv_dtype=stored_literal,
                layers=layers,
                scales=scales,
                memory=memory,
                max_model_len=max_model_len,
                max_num_batched_tokens=get(data, "serving", "max_num_batched_tokens", kind=int, lo=1),
                release_behaviour=view.release_behaviour(),
                forced_block_size=view.forced_block.size if view.forced_block else None,
                block_size_note=(f"block size {view.forced_block.size}: vLLM forces it for "
                                 f"{view.forced_block.backend} on this MLA model (check_and_update_config)")
                if view.forced_block else None,
            )
        if deployment is not None and view.modelled is not None:
            factors, factor_note = self._fraction_factors(view, backend, stored_literal, max_model_len,
                                                          memory.gpu_memory_utilization is not None)
            deployment = replace(deployment, mem_fraction_factors=factors, mem_fraction_factor_note=factor_note)
        notes = [n for n in (self._checkpoint.get("geometry_note"), weights_note, rewrite_note) if n]
        return Resolution(deployment=deployment, facts=self.facts, notes=notes)

    def _fraction_factors(self, view: EngineView, backend: Optional[str], literal: str,
                          context_len: Optional[int], explicit: bool) -> Tuple[Tuple[FractionFactor, ...], Optional[str]]:
        """The memory-fraction factors the (modelled) release applies on its own: the catalog's
        `rewrites` that set mem_fraction_static_factor for the backend it runs and the context
        length (SGLang's model_config.context_len: --context-length, else the model's), unless the
        release skips the rewrite for an explicit setting with an environment switch on."""
        release = view.modelled
        factors: List[FractionFactor] = []
        note = None
        env = get(self.data, "engine", "env", kind=dict) or {}
        for rewrite in release.rewrites:
            factor = rewrite.set.get("mem_fraction_static_factor")
            if factor is None or not rewrite.applies(backend, literal, None, context_len or 0):
                if factor is not None and context_len is None and rewrite.applies(backend, literal, None, 1 << 62):
                    note = (f"{release.label} {rewrite.message}; the context length is unknown, so "
                            "kvlint cannot tell whether it does here (serving.max_model_len sets it)")
                continue
            skip = rewrite.skipped_when or {}
            switch = str(env.get(skip.get("env", ""), "")).strip().lower()
            if skip and explicit and switch in ("true", "1", "yes", "y"):
                continue  # SGLang's EnvBool: the explicit fraction is used as it is
            factors.append(FractionFactor(float(factor), f"{release.label} {rewrite.message} "
                                                         f"(context length {context_len})"))
        return tuple(factors), note

    def _backend_from_env(self, view: EngineView, engine_name: str) -> None:
        """vLLM before 0.15 selects the backend VLLM_ATTENTION_BACKEND names (vllm/attention/selector.py
        v0.11.0 L203; from 0.13 copied into attention_config.backend, vllm/config/attention.py v0.14.0
        L83): with no engine.attention_backend, the variable is the requested backend. Where the
        release ignores it (catalog `attention_backend_env`), KV313 says so and `auto` stays."""
        if engine_name != "vllm" or view.release is None or get(self.data, "engine", "attention_backend", kind=str):
            return
        value = (get(self.data, "engine", "env", kind=dict) or {}).get("VLLM_ATTENTION_BACKEND")
        if value and view.release.feature("attention_backend_env").status in ("available", "deprecated"):
            self.facts["backend"]["requested"] = str(value)

    def _fp8_checkpoint(self, view: EngineView, engine_name: str) -> Optional[str]:
        """Why the attention layers get a KV-cache quantization method, under which the release
        refuses fp8_e5m2 (KV346), per the catalog's `e5m2_refused_with` (quant methods, checkpoint
        KV scheme formats); None when kvlint knows of none or the release has no such entry."""
        refused = view.default("e5m2_refused_with") if engine_name == "vllm" else None
        if not isinstance(refused, dict):
            return None
        model = self.facts["model"]
        methods = refused.get("quant_methods") or ()
        online = online_quantization(self.data)
        if online in methods:
            return f"--quantization {online}"
        if model.get("checkpoint_quant_method") in methods:
            return f"an {model['checkpoint_quant_method']} checkpoint (quant_method {model['checkpoint_quant_method']})"
        if model.get("checkpoint_kv_scheme") in (refused.get("kv_schemes") or ()):
            return f"a {model['checkpoint_kv_scheme']} checkpoint with a KV scheme"
        return None

    def _dtype_rewrite(self, view: EngineView, literal: str, geometry=None) -> Tuple[str, Optional[str]]:
        """The kv_cache_dtype the release stores for the model (the catalog's `rewrites` keyed by
        architectures, made before selection) or for the named backend (those keyed by backends),
        with a capacity note when it is not the written one."""
        self._model_rewrite = False
        requested = self.facts["backend"].get("requested") or "auto"
        archs = geometry.architectures if geometry is not None else ()
        if view.release is not None and archs:
            for rewrite in view.release.rewrites_for(None, literal, architectures=archs):
                stored = rewrite.set.get("kv_cache_dtype")
                if rewrite.by_model and stored and stored != literal:
                    self._model_rewrite = True
                    return stored, (f"kv_cache_dtype {stored}: {view.release.label} {rewrite.message}; "
                                    f"capacity planned with {stored}")
        if view.release is None or requested.lower() == "auto":
            return literal, None
        for rewrite in view.release.rewrites_for(requested, literal):
            stored = rewrite.set.get("kv_cache_dtype")
            if stored and stored != literal:
                return stored, (f"kv_cache_dtype {stored}: {view.release.label} stores it for "
                                f"{requested} whatever is written ({literal}); capacity planned with {stored}")
        return literal, None

    def _resolve_ggml(self, engine_name: str, version: str, gpu, geometry) -> Resolution:
        """llama.cpp and Ollama: the ggml catalog instead of the engine catalog's backends."""
        # Imported on use (start-up time): only llama.cpp and Ollama deployments need the ggml
        # catalog, and a check of a vLLM manifest should not load it.
        from kvlint.resolve.llamacpp import resolve_ggml_facts

        data = self.data
        plan = resolve_ggml_facts(data, engine_name, version, gpu, geometry, self.facts)
        self.facts["backend"]["auto"] = False
        self.facts["selection"] = {"auto": False, "fallback": False}
        self.facts["features"] = {"unavailable": [], "ignored": []}
        self.facts["scales"].update(granularity="block" if self.facts["kv_cache"].get("quantized") else None,
                                    source="dynamic" if self.facts["kv_cache"].get("quantized") else None,
                                    derived=True, written_granularity=None, written_source=None,
                                    calibration_max_seq_len=None, calibration_ratio=None,
                                    checkpoint=self.facts["model"]["kv_scales"], param_file=False,
                                    pairing_ok=True, pairing_sources=[], warmup_ok=True)
        self._skip(geometry)
        self.facts["skip"]["effective"] = []
        self.facts["skip"]["sliding_layers"] = self.facts["model"].get("sliding_layers", 0)
        error = self.facts["model"].get("config_error")
        self.facts["model"]["config_error_suffix"] = f"; {error}" if error else ""
        weights, weights_note = weights_bytes(data, self.facts["model"].get("catalog_weight_bytes"),
                                              self.facts["model"].get("catalog_weight_dtype"))
        memory = memory_plan(data, engine_name, gpu, lambda name: None, weights)
        deployment = build_deployment(
            data=data, file=self.file, engine=engine_name, version=version,
            requested_backend=self.facts["llamacpp"].get("backend") or "auto",
            backend=self.facts["llamacpp"].get("backend"), backend_block_size=None, gpu=gpu, model=geometry,
            kv_dtype=f"{plan.type_k}/{plan.type_v}" if plan.type_k != plan.type_v else plan.type_k,
            layers=(), scales=ScaleLayout(None, None), memory=memory,
            max_model_len=self.facts["serving"].get("max_model_len"),
            max_num_batched_tokens=None)
        deployment = replace(deployment, ggml=plan, max_num_seqs=plan.n_seq)
        notes = [n for n in (self._checkpoint.get("geometry_note"), weights_note) if n]
        if self.facts["model"].get("ollama_note") and self.facts["model"].get("known"):
            notes.insert(0, self.facts["model"]["ollama_note"])  # which model an Ollama tag was read as
        return Resolution(deployment=deployment, facts=self.facts, notes=notes)
