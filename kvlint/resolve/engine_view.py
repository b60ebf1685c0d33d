"""Compatibility predicates for one deployment, computed from the engine catalog.

`EngineView` asks the catalog the questions the rules need answered and writes the answers, with
their reason sentences, into the facts document: which storage format a dtype literal means, what
the pinned backend rejects and why, which backend `auto` would really pick, and which features
the manifest uses that this release lacks or ignores.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from kvlint.deployment import model_dtype_format
from kvlint.deployment import GpuInfo, ModelGeometry, ScaleLayout
from kvlint.catalog import Catalogs
from kvlint.catalog.engines import guess_quantized
from kvlint.catalog.selection import predict_backend
from kvlint.resolve.fields import get
from kvlint.resolve.mla_block import ForcedBlock, forced_block
from kvlint.resolve.remedy import RemedySearch, Setup, Suggestion



def _platform(gpu: Optional[GpuInfo]) -> Optional[str]:
    if gpu is None:
        return None
    # Apple silicon: no engine of the engine catalog has a Metal backend (KV348)
    return {"amd": "rocm", "apple": "metal"}.get(gpu.vendor, "cuda")


class EngineView:
    def __init__(self, catalogs: Catalogs, engine: str, version: str, facts: Dict[str, Any]):
        self._sparse: Optional[bool] = None
        self.catalogs = catalogs
        self.engine = engine
        self.version = version
        self.facts = facts
        # vLLM 0.11.0-0.17.1 replace an MLA model's block size (mla_block.py); set by backend()
        self.forced_block: Optional[ForcedBlock] = None
        self._ignored: List[Dict[str, Any]] = []
        self._written_block: Optional[int] = None
        self._mla_model: Tuple[Optional[bool], Optional[int]] = (None, None)  # (sparse, qk_nope_head_dim)
        # vLLM on ROCm: VLLM_ROCM_USE_AITER in the engine's environment (set by backend())
        self._aiter = False
        # A pre-release/dev/local build, a newer release or an uncatalogued patch of an unchanged
        # line is checked as the catalogued release that stands in for it (engine.stand_in says so).
        self.release, stand_in = (
            catalogs.engines.checked_release(engine, version) if engine and version else (None, None)
        )
        # Capacity models every release, catalogued or not, by the nearest catalogued one.
        self.modelled, self.modelled_note = (
            catalogs.engines.modelled_release(engine, version) if engine else (None, None)
        )
        known = catalogs.engines.known_versions(engine) if engine in catalogs.engines.engines() else ()
        facts["engine"].update(
            name=engine or None,
            version=version or None,
            known=self.release is not None,
            known_range=f"{known[0]} to {known[-1]}" if known else "none",
            label=self.release.label if self.release is not None else f"{engine} {version}".strip(),
            stand_in=stand_in,
        )

    # -- dtype ---------------------------------------------------------------------------------

    def storage_format(self, literal: str, model_dtype: str, gpu: Optional[GpuInfo]) -> Optional[str]:
        """The CacheFormatId a dtype literal stores, None when the release does not accept it."""
        if self.release is None:
            return self._guess_format(literal, model_dtype)
        info = self.release.dtype(literal)
        accepted = list(self.release.dtypes)
        self.facts["kv_cache"]["accepted"] = accepted
        if info is None:
            return None
        fmt = info.format_for(gpu.fp8 if gpu else None)
        if fmt == "model" or fmt is None and not info.quantized:
            return model_dtype_format(model_dtype)
        return fmt

    @staticmethod
    def _guess_format(literal: str, model_dtype: str) -> Optional[str]:
        """Without a catalog entry for the release, read the literal at face value."""
        plain = {"auto": model_dtype_format(model_dtype), "bfloat16": "bf16", "float16": "fp16",
                 "fp8": "fp8_e4m3", "fp8_e4m3": "fp8_e4m3", "fp8_e5m2": "fp8_e5m2", "int8": "int8",
                 "fp8_per_token_head": "fp8_per_token_head", "int8_per_token_head": "int8_per_token_head",
                 "int4_per_token_head": "int4_per_token_head", "nvfp4": "nvfp4"}
        return plain.get(literal)

    # -- backend -------------------------------------------------------------------------------

    def backend(
        self,
        literal: str,
        gpu: Optional[GpuInfo],
        geometry: Optional[ModelGeometry],
        scales: ScaleLayout,
        env: Optional[Dict[str, Any]] = None,
    ) -> Tuple[Optional[str], Optional[int]]:
        """(effective backend, its preferred block size) and the backend/selection facts."""
        facts = self.facts["backend"]
        selection = self.facts["selection"]
        requested = facts.get("requested") or "auto"
        facts["auto"] = requested.lower() == "auto"
        # KV301/KV305 name the backend; with `auto` the manifest never named it, so say who picked it.
        facts["auto_note"] = " (the backend attention_backend auto selects here)" if facts["auto"] else ""
        selection["auto"] = facts["auto"]
        selection["fallback"] = False
        if self.facts["kv_cache"].get("fp4"):
            self.facts["kv_cache"]["fp4_remedy"] = ""  # KV306 without a catalogued release: the help
        if self.release is None:
            return (None if facts["auto"] else requested), None
        facts["available"] = list(self.release.backend_names())
        platform = _platform(gpu)
        cc = gpu.compute_capability if gpu else None
        head = geometry.head_dim if geometry else None
        is_mla = geometry.is_mla if geometry else None
        # vLLM routes an MLA model by whether its config has a sparse-attention indexer (index_topk)
        self._sparse = geometry.mla_sparse if (self.engine == "vllm" and geometry is not None and is_mla) else None
        sinks = bool(geometry and (geometry.has_sinks or any(layer.has_sinks for layer in geometry.layers)))
        per_head = scales.granularity == "per-head"
        block = self._mla_block(gpu, geometry, None if facts["auto"] else requested, env or {})
        # AITER backends and selection orders apply only with VLLM_ROCM_USE_AITER true
        # (vllm/envs.py v0.33.0 L1267-1269: "true" or "1", case-insensitive; the catalog's `aiter`)
        self._aiter = self.engine == "vllm" and str((env or {}).get("VLLM_ROCM_USE_AITER", "False")).lower() in ("true", "1")
        if self.facts["kv_cache"].get("fp4") and gpu is not None and not gpu.fp4:  # KV306
            setup = self._setup(literal, gpu, head, block, sinks, per_head, is_mla,
                                None if facts["auto"] else requested)
            text, found = RemedySearch(self.catalogs, self.release, setup).fp8_instead("fp4")
            self.facts["kv_cache"]["fp4_remedy"] = text
            self.facts.setdefault("remedies", []).extend(x.fact() for x in found)
            self.facts["kv_cache"]["fp4_gpu_backends"] = self._fp4_gpu_backends(literal, gpu, block, per_head, is_mla)
        chosen: Optional[str] = None
        if facts["auto"]:
            chosen = self._predict(literal, gpu, geometry, per_head, sinks, block)
            if chosen is None:
                return None, None
        else:
            chosen = requested
        info = self.release.backend(chosen, platform=platform, is_mla=is_mla)
        if info is None and self.engine in ("sglang", "vllm") and platform:
            # A backend of another device. SGLang's argument resolution takes it (aiter on CUDA,
            # fa3 on ROCm, ascend/intel_amx on a GPU) and refuses first for the model, the dtype
            # or attention sinks; the device fails when the runner builds it. vLLM's registry has
            # every backend on every platform (AttentionBackendEnum, vllm/v1/attention/backends/
            # registry.py v0.33.0), and the platform's selector refuses it. So the release has the
            # backend: its checks run, and the platform is KV323's (not KV204's, which is for a
            # name the release does not have).
            info = self.release.backend(chosen, is_mla=is_mla)
        facts["known"] = info is not None
        facts["name"] = info.name if info is not None else chosen
        facts["checks_known"] = info.checks_known if info is not None else None
        facts["is_triton"] = facts["name"] == "TRITON_ATTN"
        facts["triton_note"] = ""
        if info is None:
            return chosen, None
        self._verdicts(info, literal, gpu, head, block, platform, sinks, per_head, is_mla)
        self._switch(info, literal, gpu, head, platform)
        facts["triton_note"] = self._triton_note(literal, gpu, head, block, platform, sinks, per_head, is_mla)
        preferred = None
        try:
            preferred = info.preferred_block_size(cc, head, literal)
        except TypeError:
            preferred = info.preferred_block_size(cc, head)
        return info.name, preferred

    def _mla_block(self, gpu: Optional[GpuInfo], geometry: Optional[ModelGeometry],
                   pinned: Optional[str], env: Dict[str, Any]) -> Optional[int]:
        """The block size the checks see: the written one, unless this release's
        check_and_update_config replaces it for an MLA model (catalog `mla_block_size_override`);
        then the forced size, and a KV313 entry when the manifest wrote the size it replaces."""
        block = get(self.facts, "kv_cache", "block_size")
        self._written_block = block if isinstance(block, int) else None
        if geometry is not None:
            self._mla_model = (geometry.mla_sparse, geometry.qk_nope_head_dim)
        if (self.engine != "vllm" or self.release is None or gpu is None or gpu.vendor != "nvidia"
                or geometry is None or not geometry.is_mla):
            return block
        rule = self.release.default("mla_block_size_override")
        if rule is None:
            return block
        explicit = pinned
        if explicit is None and self.release.feature("attention_backend_env").status in ("available", "deprecated"):
            explicit = str(env["VLLM_ATTENTION_BACKEND"]) if env.get("VLLM_ATTENTION_BACKEND") else None
        decided, forced = forced_block(rule, explicit=explicit, cc=gpu.compute_capability,
                                       sparse=geometry.mla_sparse, qk_nope=geometry.qk_nope_head_dim,
                                       block=block if isinstance(block, int) else None)
        if not decided or forced is None:
            return block
        self.forced_block = forced
        self.facts["kv_cache"]["block_size"] = forced.size
        if isinstance(block, int):
            why = "a sparse-MLA model (index_topk)" if forced.sparse else "an MLA model"
            self._ignored.append({
                "setting": "kv_cache.block_size", "pointer": "/kv_cache/block_size", "value": str(block),
                "detail": f"for {why} it plans for {forced.backend} and replaces the block size with "
                          f"{forced.size} (it logs 'Forcing kv cache block size to {forced.size}'), "
                          f"so the KV cache is sized with {forced.size}; drop kv_cache.block_size or "
                          f"write {forced.size}"})
        return forced.size

    def _fp4_gpu_backends(self, literal, gpu, block, per_head, is_mla) -> List[str]:
        """The backends of this release that take the FP4 dtype on this GPU for some model (head
        size and sinks set aside): where there is one, the GPU's lack of FP4 tensor cores is not
        why the deployment is refused (KV306 stays quiet; KV347 / KV316 name the model's reason)."""
        platform = _platform(gpu)
        out = []
        for name in self.release.backend_names():
            info = self.release.backend(name, platform=platform)
            if info is None or not info.checks_known:
                continue  # a backend whose dtype checks are not modelled says nothing either way
            verdict = info.accepts(literal, gpu.compute_capability, None, block, platform=platform,
                                   has_sinks=False, per_head_scales=per_head, is_mla=is_mla, aiter=self._aiter)
            if not any(p.kind == "kv_dtype" or p.kind.startswith("constraint:") for p in verdict.problems):
                out.append(info.name)
        return out

    def _triton_note(self, literal, gpu, head, block, platform, sinks, per_head, is_mla) -> str:
        """KV303's remedy is TRITON_ATTN when it accepts the whole configuration here; else why
        not, and what the search (dtype_remedy: another release, or none) found instead."""
        if not literal.endswith("_per_token_head"):
            return ""
        remedy = self.facts["backend"].get("dtype_remedy") or ""
        triton = self.release.backend("TRITON_ATTN", platform=platform)
        if triton is None:
            return f"; {self.release.label} has no TRITON_ATTN on this platform{remedy}"
        cc = gpu.compute_capability if gpu else None
        verdict = triton.accepts(literal, cc, head, block, platform=platform, has_sinks=sinks,
                                 per_head_scales=per_head, is_mla=is_mla)
        if verdict.ok:
            return "; pin TRITON_ATTN"
        return f"; TRITON_ATTN cannot run it here either ({verdict.reason}){remedy}"

    def _setup(self, literal, gpu, head, block, sinks, per_head, is_mla, current) -> Setup:
        facts = self.facts
        return Setup(
            engine=self.engine, literal=literal, written=get(facts, "kv_cache", "dtype", kind=str) or literal,
            gpu=gpu, head=head, block=block, sinks=sinks, per_head=per_head, is_mla=is_mla,
            pinned=None if facts["backend"].get("auto") else facts["backend"].get("requested"),
            current=current, model_format=model_dtype_format(get(facts, "kv_cache", "model_dtype", kind=str)),
            written_block=self._written_block, mla_sparse=self._mla_model[0], qk_nope=self._mla_model[1])

    def _remedy(self, problem: str, setup: Setup) -> str:
        """The remedy text a message appends ("; ..."), each suggestion checked against the catalog
        (kvlint/resolve/remedy.py); the suggestions themselves go to `remedies`."""
        text, found = RemedySearch(self.catalogs, self.release, setup).remedy(problem)
        self.facts.setdefault("remedies", []).extend(s.fact() for s in found)
        return text

    def _verdicts(self, info, literal, gpu, head, block, platform, sinks, per_head, is_mla) -> None:
        """One full check of the backend, split into the predicates the rules test."""
        facts = self.facts["backend"]
        cc = gpu.compute_capability if gpu else None
        # the model's attention kind is not a GPU fact: SGLang lists FP4 per kind (is_mla)
        anywhere = info.accepts(literal, None, None, None, platform=platform, is_mla=is_mla, sparse=self._sparse)
        here = info.accepts(literal, cc, head, block, platform=platform, has_sinks=sinks, sparse=self._sparse,
                            per_head_scales=per_head, is_mla=is_mla, aiter=self._aiter)

        def dtype_problems(verdict) -> List[str]:
            return [p.reason for p in verdict.problems if p.kind == "kv_dtype" or p.kind.startswith("constraint:")]

        general, specific = dtype_problems(anywhere), dtype_problems(here)
        facts["dtype_ok_any_gpu"] = not general
        facts["accepts_dtype"] = not specific
        facts["dtype_reason"] = _sentence("; ".join(specific or general)) or None
        setup = self._setup(literal, gpu, head, block, sinks, per_head, is_mla, info.name)
        facts["dtype_remedy"] = self._remedy("kv_dtype", setup) if specific else ""
        facts["fp8_gpu_ok"] = not specific if not general else None
        facts["dtype_gpu_bound"], facts["dtype_model_reason"] = None, None
        if specific and not general:
            # Refused here though some GPU takes it: is it this GPU, or this model? Ask again
            # without the model's head size and sinks (vLLM 0.32+ FLASHINFER runs nvfp4 on
            # SM80/SM90/SM120 but not at head size 64 or with sinks: KV347, not KV306).
            def refused(h, s):
                return dtype_problems(info.accepts(literal, cc, h, block, platform=platform, has_sinks=s,
                                                   per_head_scales=per_head, is_mla=is_mla, aiter=self._aiter))
            facts["dtype_gpu_bound"] = bool(refused(None, False))
            if not facts["dtype_gpu_bound"]:
                causes = ([f"its head size {head}"] if head is not None and refused(head, False) else []) + (
                    ["its attention sinks"] if sinks and refused(None, True) else [])
                facts["dtype_model_reason"] = (f"{' and '.join(causes) or 'this model'} "
                                               f"({'; '.join(specific)})")
        by_kind: Dict[str, List[Any]] = {}
        for problem in here.problems:
            by_kind.setdefault(problem.kind, []).append(problem)
        for kind, prefix, relevant in (
            ("head_size", "head", head is not None),
            ("block_size", "block", block is not None),
            ("sinks", "sinks", sinks),
            ("per_head_scales", "per_head", per_head),
            ("compute_capability", "cc", cc is not None),
            ("mla", "mla", is_mla is not None and self._kind_checked(info, platform)),  # KV324
        ):
            if kind == "compute_capability" and by_kind.get("platform"):
                relevant = True  # a backend of another device (SGLang): KV323 with the platform reason
            if relevant:
                found = by_kind.get(kind, []) + (by_kind.get("platform", []) if kind == "compute_capability" else [])
                facts[f"{prefix}_ok"] = not found
                facts[f"{prefix}_reason"] = _sentence("; ".join(p.reason for p in found)) or None
                if found and found[0].where:  # the parts KV302/KV310/KV311/KV315 templates join
                    facts[f"{prefix}_where"] = found[0].where
                    facts[f"{prefix}_detail"] = found[0].detail
                    # which message case: the catalog gives a reason (detail) or none (plain)
                    facts[f"{prefix}_problem"] = "detail" if found[0].detail else "plain"
                if found and prefix in _REMEDIED:
                    facts[f"{prefix}_remedy"] = self._remedy(_REMEDIED[prefix], setup)

        self._dtype_gpu_gate(info, literal, cc, head, platform)

    def _dtype_gpu_gate(self, info, literal, cc, head, platform) -> None:
        """A cache dtype the release refuses on this GPU whatever the backend (the catalog dtype's
        `requires` / `platforms`, e.g. SGLang 0.5.23 mxfp8 only on Blackwell): the backend cannot
        run it here (KV323). The remedy is another GPU, or a cache dtype this backend accepts here;
        pinning another backend would not help. SGLang only: its tables show the dtype checks run
        before any backend's (arg_groups/pipeline.py v0.5.23); vLLM's dtype gates (fp8_inc on HPU)
        stay with its backends, as its derived tables are compared."""
        dtype = self.release.dtype(literal) if self.release is not None else None
        if self.engine != "sglang" or dtype is None or not (dtype.requires or dtype.platforms):
            return
        verdict = self.release.check_dtype(literal, cc, platform)
        if verdict.ok:
            return
        facts = self.facts["backend"]
        backend_runs_here = facts.get("cc_ok") is not False
        facts["cc_ok"] = False
        facts["cc_reason"] = _sentence("; ".join(r for r in (facts.get("cc_reason"), verdict.reason) if r))
        # Another backend does not help (the dtype is refused on this GPU): drop such suggestions.
        remedies = self.facts.setdefault("remedies", [])
        remedies[:] = [r for r in remedies if r.get("problem") != "compute_capability"]
        other = None
        if backend_runs_here:  # another quantized dtype this backend takes here, FP8 before 4-bit
            here = sorted(info.accepted_dtypes(cc, head, platform), key=lambda d: not d.startswith("fp8"))
            other = next((d for d in here if d != literal and guess_quantized(d) and self.release.dtype(d) is not None
                          and self.release.dtype(d).format is not None  # a dtype kvlint models (no KV205)
                          and self.release.check_dtype(d, cc, platform).ok), None)
        if other:
            remedies.append(Suggestion("compute_capability", "dtype", dtype=other).fact())
        facts["cc_remedy"] = (f"; run it on a GPU the release takes {literal} on"
                              + (f", or use kv_cache.dtype {other}, which {info.name} accepts here" if other else ""))

    def _switch(self, info, literal, gpu, head, platform) -> None:
        """KV325: the release switches this backend to another one on its own for this cache dtype
        (the catalog's `rewrites` that set attention_backend, e.g. SGLang fa3 + fp8_e5m2 -> triton
        with only a warning); the remedy pins the backend that runs, or names a cache dtype the
        backend runs as is (checked: accepted here and not rewritten)."""
        facts = self.facts["backend"]
        for rewrite in self.release.rewrites_for(info.name, literal):
            target = rewrite.set.get("attention_backend")
            if not target or target == info.name:
                continue
            cc = gpu.compute_capability if gpu else None
            keep = [d for d in info.accepted_dtypes(cc, head, platform)
                    if d != literal and guess_quantized(d) == guess_quantized(literal)
                    and not any(r.set.get("attention_backend") for r in self.release.rewrites_for(info.name, d))]
            facts["switched_to"] = target
            facts["switch_reason"] = _sentence(f"{self.release.label} runs {info.name} with kv_cache_dtype "
                                               f"{literal} as {target}: {rewrite.message}")
            facts["switch_remedy"] = (f"; pin {target}, the backend that runs"
                                      + (f", or use kv_cache.dtype {keep[0]}, which {info.name} runs as is" if keep else ""))
            return

    def _kind_checked(self, info, platform) -> bool:
        """Whether the release refuses this backend for a model of the other attention kind (an
        MLA backend for a non-MLA model or the reverse), so that KV324 may say so. The catalog's
        `kind_checked` says where; without it, vLLM's validated selector checks `use_mla` against
        the backend's kind (AttentionBackend.validate_configuration, vllm/v1/attention/backend.py
        v0.26.0 L352-356: "MLA not supported" / "non-MLA not supported"); elsewhere unknown."""
        checked = info.refuses_other_kind(platform)
        if checked is None and self.engine == "vllm":
            checked = info.validated_selector
        return bool(checked)

    def _predict(self, literal, gpu, geometry, per_head, sinks, block) -> Optional[str]:
        selection = self.facts["selection"]
        if gpu is None:
            return None
        result = predict_backend(
            self.release,
            gpu.compute_capability,
            gpu.vendor,
            literal,
            geometry.head_dim if geometry else None,
            bool(geometry and geometry.is_mla),
            has_sinks=sinks,
            block_size=block,
            per_head_scales=per_head,
            aiter=self._aiter,
            sparse=self._sparse,
        )
        if result is None:  # no priority list for this platform/GPU, or the answer is unknown
            return None
        selection["first_choice"] = result.first_choice
        selection["chosen"] = result.backend
        selection["fails"] = result.fails
        selection["no_backend"] = result.backend is None
        rejected = [reason for name, reason in result.rejected if name == result.first_choice]
        selection["reason"] = _sentence(rejected[0]) if rejected else None
        selection["fallback"] = result.fell_back
        selection["per_head_failure"] = result.backend is None and per_head
        selection["rejected_text"] = "; ".join(f"{name}: {reason}" for name, reason in result.rejected)
        if result.backend is None:
            selection["fail_reason"] = _sentence(result.reason)
            head = geometry.head_dim if geometry else None
            setup = self._setup(literal, gpu, head, block, sinks, per_head, geometry.is_mla if geometry else None, None)
            if per_head:
                self.facts["backend"]["per_head_ok"] = False
                self.facts["backend"]["per_head_problem"] = "auto"
                self.facts["backend"]["per_head_remedy"] = self._remedy("per_head_scales", setup)
            else:
                selection["remedy"] = self._remedy("selection", setup)
        return result.backend

    # -- features ------------------------------------------------------------------------------

    def features(self, data: Dict[str, Any]) -> None:
        """Features the manifest uses that this release lacks (KV312) or ignores (KV313)."""
        unavailable: List[Dict[str, Any]] = []
        ignored: List[Dict[str, Any]] = []
        self.facts["features"] = {"unavailable": unavailable, "ignored": ignored}
        ignored.extend(self._ignored)
        scales = self.facts["scales"]
        scales["warmup_ok"] = True
        if self.release is None:
            return
        def need(feature: str, pointer: str, what: str) -> None:
            info = self.release.feature(feature)
            if info.status in ("absent", "removed"):
                unavailable.append({"feature": feature, "pointer": pointer, "what": what,
                                    "detail": info.message or info.status})

        skip = get(data, "kv_cache", "skip_layers")
        if isinstance(skip, list) and skip and self.engine == "vllm":
            need("kv_cache_dtype_skip_layers", "/kv_cache/skip_layers", "kv_cache.skip_layers (--kv-cache-dtype-skip-layers)")
        backend = get(data, "engine", "attention_backend", kind=str)
        if backend and backend.lower() != "auto" and self.engine == "vllm":
            info = self.release.feature("attention_backend_cli")
            env = get(data, "engine", "env", kind=dict) or {}
            if info.status == "absent" and "VLLM_ATTENTION_BACKEND" not in env:
                unavailable.append({"feature": "attention_backend_cli", "pointer": "/engine/attention_backend",
                                    "what": f"attention_backend {backend} (--attention-backend)",
                                    "detail": info.message or info.status})
        env = get(data, "engine", "env", kind=dict) or {}
        if "VLLM_ATTENTION_BACKEND" in env and self.engine == "vllm":
            info = self.release.feature("attention_backend_env")
            if info.status in ("ignored", "removed"):
                ignored.append({"setting": "VLLM_ATTENTION_BACKEND", "pointer": "/engine/env/VLLM_ATTENTION_BACKEND",
                                "value": str(env["VLLM_ATTENTION_BACKEND"]), "detail": info.message or info.status})
            elif info.status == "deprecated" and backend and backend.lower() != "auto":
                # 0.13-0.14: AttentionConfig.__post_init__ copies the variable into attention_config.backend
                # (vllm/config/attention.py L93, v0.13.0/v0.14.1), and create_engine_config raises when
                # --attention-backend is given beside it (vllm/engine/arg_utils.py L1646-1651 v0.13.0,
                # L1692-1697 v0.14.1), whether or not the two agree.
                unavailable.append({
                    "feature": "attention_backend_env", "pointer": "/engine/attention_backend",
                    "what": f"attention_backend {backend} (--attention-backend) beside "
                            f"VLLM_ATTENTION_BACKEND={env['VLLM_ATTENTION_BACKEND']}",
                    "detail": "this release copies VLLM_ATTENTION_BACKEND into attention_config.backend, and "
                              "start-up stops with ValueError('attention_backend and attention_config.backend "
                              "are mutually exclusive'); keep one of the two"})
        if scales.get("source") == "warmup":
            info = self.release.feature("calculate_kv_scales")
            if info.status in ("absent", "removed", "unknown") or self.engine != "vllm":
                scales["warmup_ok"] = False
                scales["warmup_problem"] = "unavailable"
                scales["warmup_detail"] = info.message or info.status
            elif self.facts["model"].get("kv_scales", "none") != "none":
                scales["warmup_ok"] = False
                scales["warmup_problem"] = "checkpoint_scales"

    def default(self, name: str) -> Any:
        """The release's catalog default; for a release the catalog lacks, the modelled one's."""
        return self.modelled.default(name) if self.modelled is not None else None

    def release_behaviour(self) -> Dict[str, Any]:
        """What capacity needs to know about the (modelled) release, for `build_deployment`."""
        return release_behaviour(self.modelled, self.modelled_note)


def release_behaviour(modelled: Any, note: Optional[str] = None) -> Dict[str, Any]:
    """The Deployment fields that carry a (modelled) release's planning behaviour: its catalog
    defaults and available features; {} when the catalog knows no release of the engine."""
    if modelled is None:
        return {}
    return {
        "modelled_release": modelled.version,
        "release_note": note,
        "release_defaults": {name: info.value for name, info in modelled.defaults.items()},
        "release_features": frozenset(name for name, info in modelled.features.items() if info.available),
    }


# The problems whose finding names a checked remedy: facts prefix -> problem kind (remedy.py).
_REMEDIED = {"head": "head_size", "block": "block_size", "sinks": "sinks", "per_head": "per_head_scales",
             "cc": "compute_capability", "mla": "mla"}


def _sentence(text: Optional[str]) -> Optional[str]:
    if not text:
        return text
    return text[0].upper() + text[1:] if text[0].islower() and not text.startswith(("vLLM", "fp", "int")) else text


# Which scale sources can produce each granularity (KV505).
SCALE_SOURCES = {
    "per-tensor": ("checkpoint", "unit", "warmup"),
    "per-head": ("checkpoint",),
    "per-token-head": ("dynamic",),
    "block": ("checkpoint", "dynamic", "unit"),
}


def scale_pairing(granularity: Optional[str], source: Optional[str]) -> Tuple[bool, List[str]]:
    """KV505: can this source produce this granularity? (ok, the sources that can)."""
    if granularity is None or source is None or granularity not in SCALE_SOURCES:
        return True, []
    allowed = list(SCALE_SOURCES[granularity])
    return source in allowed, allowed
