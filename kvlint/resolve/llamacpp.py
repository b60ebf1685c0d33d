"""Resolve for the ggml engines: llama.cpp (llama-server, llama-cli) and Ollama.

Ollama resolves to the llama.cpp behaviour it drives: the effective K/V cache types after
Ollama's own checks, flash attention as requested and as it will be (what `auto` resolves to on
this backend, build, K/V pair and head size), whether a kernel exists for the pair, and whether
context creation fails, with the text llama.cpp or Ollama prints (`llamacpp.start_error`; the
smoke test reads it to predict a refusal). Facts come from rules/catalog/ggml/ through
`kvlint.catalog.ggml`; the `llamacpp` namespace of the facts document is written here.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Tuple

from kvlint.catalog.ggml import Fact, GgmlCatalog, load_ggml_catalog
from kvlint.deployment import GgmlPlan, GpuInfo, ModelGeometry
from kvlint.resolve.fields import get

__all__ = ["resolve_ggml_facts"]

_GO_TRUE = ("1", "t", "T", "TRUE", "true", "True")  # Go strconv.ParseBool, as envconfig.Bool reads it
_GO_FALSE = ("0", "f", "F", "FALSE", "false", "False")
GiB = 1 << 30


def _unverified(*facts: Optional[Fact]) -> str:
    """A message suffix naming the release boundaries a finding rests on that are not pinned."""
    notes = [f.note or f.name for f in facts if f is not None and not f.verified]
    return f" (release boundary not pinned to a build: {'; '.join(dict.fromkeys(notes))})" if notes else ""


def _value(fact: Optional[Fact], default: Any = None) -> Any:
    return fact.value if fact is not None else default


def _sources_text(sources) -> str:
    return ", ".join(str(s) for s in sources[:2])


def _backend(data: Dict[str, Any], gpu: Optional[GpuInfo]) -> Tuple[Optional[str], bool]:
    written = get(data, "engine", "build", "backend", kind=str)
    if written:
        return written, False
    if gpu is not None:
        return {"amd": "hip", "apple": "metal"}.get(gpu.vendor, "cuda"), True
    return None, False


def resolve_ggml_facts(
    data: Dict[str, Any],
    engine: str,
    version: str,
    gpu: Optional[GpuInfo],
    geometry: Optional[ModelGeometry],
    facts: Dict[str, Any],
    catalog: Optional[GgmlCatalog] = None,
) -> GgmlPlan:
    """Write facts["llamacpp"] (and the engine/kv_cache/serving facts the generic rules read);
    return the cache plan capacity computes on."""
    cat = catalog or load_ggml_catalog()
    ollama = engine == "ollama"
    env = get(data, "engine", "env", kind=dict) or {}
    env = {str(k): v for k, v in env.items()}
    out: Dict[str, Any] = {"engine": engine}
    facts["llamacpp"] = out
    rng = cat.known_range(engine)
    facts["engine"].update(
        name=engine, version=version or None, known=cat.known(engine, version),
        known_range=f"{rng[0]} to {rng[1]}" if rng else "none",
        label=f"{'Ollama' if ollama else 'llama.cpp'} {version}".strip())
    notes: List[str] = []

    # -- the llama.cpp build whose rules apply ----------------------------------------------------
    build_fact: Optional[Fact] = None
    if ollama:
        build_fact = cat.ollama_build(version) if version else None
        if build_fact is None:  # an Ollama release outside the catalogue: the newest llama.cpp it maps to
            build_fact = cat.ollama_build(rng[1]) if rng else None
        build = build_fact.value if build_fact else ""
    else:
        build = version
    if not build or not facts["engine"]["known"]:
        # An unknown or out-of-range release: the nearest catalogued behaviour, said so.
        if not ollama and rng and version:
            from kvlint.versions import VersionError, parse_version
            try:
                build = rng[1] if parse_version(version) > parse_version(rng[1]) else (rng[0] if parse_version(version) < parse_version(rng[0]) else version)
            except VersionError:
                build = rng[1]
        notes.append(f"{facts['engine']['label']} is outside the catalogued range; {build} rules applied")
    out["build"] = build
    out["build_note"] = _unverified(build_fact)
    if ollama and version:
        out["ollama_version"] = version

    def setting(name: str) -> Optional[Fact]:
        return cat.setting("llama.cpp", name, build) if build else None

    def osetting(name: str) -> Optional[Fact]:
        return cat.setting("ollama", name, version) if version else None

    backend, inferred = _backend(data, gpu)
    all_quants = bool(get(data, "engine", "build", "fa_all_quants", kind=bool))
    out.update(backend=backend, backend_inferred=inferred, fa_all_quants=all_quants,
               backend_label=(backend.upper() if backend in ("cuda", "hip", "musa", "cpu") else (backend or "unknown").capitalize())
               + (" (default build)" if backend in ("cuda", "hip", "musa", "sycl") and not all_quants else ""))

    # -- cache types ------------------------------------------------------------------------------
    dtype = get(data, "kv_cache", "dtype", kind=str)
    type_pointer = "/kv_cache/dtype"
    if ollama and dtype is None and isinstance(env.get("OLLAMA_KV_CACHE_TYPE"), str):
        dtype, type_pointer = env["OLLAMA_KV_CACHE_TYPE"], "/engine/env/OLLAMA_KV_CACHE_TYPE"
    if ollama and dtype is not None:
        dtype = dtype.strip().lower()  # Ollama lower-cases OLLAMA_KV_CACHE_TYPE
    k_req = get(data, "kv_cache", "key_dtype", kind=str) or dtype or "f16"
    v_req = get(data, "kv_cache", "value_dtype", kind=str) or dtype or "f16"
    k_pointer = "/kv_cache/key_dtype" if get(data, "kv_cache", "key_dtype", kind=str) else type_pointer
    v_pointer = "/kv_cache/value_dtype" if get(data, "kv_cache", "value_dtype", kind=str) else type_pointer
    accepted = list(cat.accepted_types(build)) if build else []
    out.update(k_requested=k_req, v_requested=v_req, k_pointer=k_pointer, v_pointer=v_pointer,
               types_accepted=", ".join(accepted))

    # -- flash attention as requested -------------------------------------------------------------
    fa_flag = setting("fa_flag")
    fa_written = get(data, "engine", "flash_attention", kind=str)
    fa_pointer = "/engine/flash_attention"
    ollama_fa_env: Optional[bool] = None
    if ollama:
        raw = env.get("OLLAMA_FLASH_ATTENTION")
        if fa_written is None and raw is not None:
            fa_pointer = "/engine/env/OLLAMA_FLASH_ATTENTION"
            text = str(raw).strip()
            # envconfig.Bool: an unparsable non-empty value counts as true
            ollama_fa_env = None if text == "" else (False if text in _GO_FALSE else True)
            fa_written = None if ollama_fa_env is None else ("on" if ollama_fa_env else "off")
        elif fa_written in ("on", "off"):
            ollama_fa_env = fa_written == "on"
    out["fa_pointer"] = fa_pointer if fa_written else ("/engine/name" if not get(data, "engine", "flash_attention") else fa_pointer)
    out["fa_written"] = fa_written is not None

    # -- head sizes, architecture -------------------------------------------------------------------
    head_k = geometry.head_dim if geometry is not None else None
    head_v = geometry.layers[0].v_head_dim if geometry is not None and geometry.layers else head_k
    model_name = (get(data, "model", "name", kind=str) or "").lower()
    architecture = "grok" if "grok" in model_name else None
    forced = cat.forced_off(architecture, build) if build else None
    out["fa_auto_unsupported"] = False
    out.update(head_k=head_k, head_v=head_v, architecture=architecture,
               fa_forced_off=forced is not None, fa_forced_off_message=forced.value if forced else None)

    # -- Ollama's own handling (types and flash attention before llama.cpp sees them) -------------
    k_eff, v_eff = k_req, v_req
    ollama_out: Dict[str, Any] = {"fallback_f16": False, "type_ignored": False, "fa_allowlisted": False}
    if ollama:
        out["ollama"] = ollama_out
        types_rule = osetting("kv_cache_types")
        fa_unset = osetting("fa_unset")
        no_fa = osetting("quant_without_fa")
        ollama_out.update(fa_env=ollama_fa_env, fa_unset_rule=_value(fa_unset), passthrough=_value(types_rule) == "passthrough",
                          without_fa=_value(no_fa))
        if isinstance(_value(types_rule), list) and k_req not in _value(types_rule):
            # <= v0.24: anything but f16/q8_0/q4_0 is not applied; the cache stays f16.
            ollama_out.update(type_ignored=True, type_ignored_allowed=", ".join(_value(types_rule)),
                              reason=f"this release applies only {', '.join(_value(types_rule))}; any other "
                                     "OLLAMA_KV_CACHE_TYPE is not applied")
            k_eff = v_eff = "f16"
        quant = (cat.cache_type(k_eff) or None) is not None and cat.cache_type(k_eff).quantized
        if _value(no_fa) == "f16_fallback" and quant:
            # FA must be explicitly on (and, up to v0.13.3, supported by the GPU and the model).
            fa_on = ollama_fa_env is True
            allow = osetting("fa_allowlist")
            if ollama_fa_env is None and allow is not None and any(re.search(p, model_name) for p in allow.value):
                # the per-architecture allowlist turns flash attention on when the variable is unset
                fa_on = True
                ollama_out["fa_allowlisted"] = True
                notes.append(f"Ollama {version} turns flash attention on for this architecture without "
                             "OLLAMA_FLASH_ATTENTION (FlashAttention() allowlist, matched on the model name)"
                             + _unverified(allow))
            why = None
            fa_backends = osetting("fa_backends")
            no_fa_models = osetting("fa_unsupported_models")
            blocked_model = next((p for p in (_value(no_fa_models) or ()) if re.search(p, model_name)), None)
            if not fa_on:
                why = ("OLLAMA_FLASH_ATTENTION is not set" if ollama_fa_env is None
                       else "OLLAMA_FLASH_ATTENTION is off")
            elif fa_backends is not None and backend is not None and backend not in fa_backends.value:
                fa_on, why = False, (f"Ollama {version} does not enable flash attention on {backend} "
                                     f"(FlashAttentionSupported: {', '.join(fa_backends.value)})" + _unverified(fa_backends))
            elif blocked_model is not None and (architecture != "grok" or _value(fa_unset) == "off"):
                fa_on, why = False, f"Ollama {version} turns flash attention off for this model (SupportsFlashAttention)"
            elif geometry is not None and head_k != head_v:
                fa_on, why = False, f"Ollama disables flash attention when key_length != value_length ({head_k}/{head_v})"
            if not fa_on:
                ollama_out.update(fallback_f16=True, fallback_reason=why, requested=k_req,
                                  reason=f"a quantized OLLAMA_KV_CACHE_TYPE is applied only with flash attention on, and {why}; "
                                         "Ollama only logs a warning" + _unverified(no_fa, fa_unset))
                k_eff = v_eff = "f16"
        elif _value(no_fa) == "f16_fallback" and not quant:
            pass
    out.update(k_type=k_eff, v_type=v_eff)

    # -- unsupported types (the parser whitelist of this build) -----------------------------------
    unsupported: List[Dict[str, Any]] = []
    # without a build there is no whitelist to check against: unknown, not refused
    if build and accepted and not (ollama and not ollama_out.get("passthrough")):
        for side, name, pointer in (("K", k_eff, k_pointer), ("V", v_eff, v_pointer)):
            if name in accepted:
                continue
            if any(u["type"] == name for u in unsupported):
                unsupported[0]["side"] = "K and V"
                continue
            known = cat.cache_type(name)
            why = ("a type of llama.cpp forks or unmerged PRs, not upstream" if cat.fork_type(name)
                   else f"accepted from {known.versions.lstrip('>=')}" if known is not None
                   else "not a llama.cpp cache type")
            unsupported.append({"side": side, "type": name, "pointer": pointer, "why": why})
    out["unsupported_types"] = unsupported
    kt, vt = cat.cache_type(k_eff), cat.cache_type(v_eff)
    k_quant = bool(kt and kt.quantized)
    v_quant = bool(vt and vt.quantized)
    out.update(k_quantized=k_quant, v_quantized=v_quant, quantized=k_quant or v_quant)

    # -- flash attention as it will be --------------------------------------------------------------
    tristate = _value(fa_flag) == "tristate"
    fa_default = _value(setting("fa_default"), "off")
    if ollama:
        fa_unset_rule = ollama_out.get("fa_unset_rule")
        if ollama_fa_env is not None:
            fa_req = "on" if ollama_fa_env else "off"
        elif ollama_out.get("fa_allowlisted"):
            fa_req = "on"
        elif fa_unset_rule == "off":
            fa_req = "off"
        else:
            fa_req = "auto"  # v0.13.4+: auto (a quantized type was already set back to f16 above)
        if not tristate and fa_req == "auto":
            fa_req = "off"  # Ollama's runner takes a boolean before the tri-state builds
        cc = gpu.compute_capability if gpu is not None else None
        if (ollama_out.get("passthrough") and ollama_fa_env is None and backend in ("cuda", None) and cc is not None
                and (cc < (6, 0) or cc == (7, 2))):
            # v0.30+: --flash-attn off when a GPU fails FlashAttentionSupported (CUDA CC < 6.0, or 7.2);
            # ml/device.go L571-L600 at v0.32.15
            fa_req = "off"
            notes.append(f"Ollama passes --flash-attn off on CUDA compute capability {cc[0]}.{cc[1]} (FlashAttentionSupported)")
    else:
        fa_req = fa_written or fa_default
        if not tristate and fa_req == "auto":
            out["fa_auto_unsupported"] = True
            fa_req = "off"
    out["fa_requested"] = fa_req
    out["fa_flag"] = _value(fa_flag)
    kernel = cat.kernel(backend, build, all_quants, k_eff, v_eff, head_k, head_v) if build else None
    out["kernel"] = {
        "exists": kernel.exists if kernel else None,
        "converted": bool(kernel and kernel.converted),
        "reason": kernel.reason if kernel else "",
        "unsupported": kernel.unsupported if kernel else None,
        "verified": kernel.verified if kernel else False,
        "note": _unverified(Fact("fa_kernels", None, kernel.verified, kernel.note)) if kernel else "",
        "sources": _sources_text(kernel.sources) if kernel else "",
    }
    kernel_ok = kernel.exists if kernel else None
    auto_quant_v = setting("fa_auto_quant_v")
    if forced is not None:
        fa_eff: Optional[bool] = False
    elif fa_req == "off":
        fa_eff = False
    elif fa_req == "on":
        fa_eff = True
    elif v_quant and _value(auto_quant_v) == "enable":
        fa_eff = True  # llama_init_from_model: "enabling flash_attn since it is required for quantized V cache"
        out["fa_auto_enabled_for_v"] = True
    elif kernel_ok is None:
        fa_eff = None
    else:
        # auto: disabled when the FA op would not run on the KV's device; the old CUDA builds
        # claimed every type (supports_op true), so auto enabled FA and the kernel aborted.
        fa_eff = True if kernel_ok or (kernel and kernel.unsupported == "abort") else False
    out["fa_effective"] = None if fa_eff is None else ("on" if fa_eff else "off")
    out["fa_auto_disabled"] = fa_req == "auto" and fa_eff is False and forced is None
    cpu_fallback = bool(fa_eff and kernel_ok is False and kernel is not None and kernel.unsupported == "cpu_fallback"
                        and backend != "cpu")
    aborts = bool(fa_eff and kernel_ok is False and kernel is not None and kernel.unsupported == "abort")
    out["cpu_fallback"] = cpu_fallback
    out["f16_conversion"] = bool(fa_eff and kernel is not None and kernel.exists and kernel.converted and backend != "cpu")
    out["fallback_kind"] = "cpu" if cpu_fallback else ("f16_conversion" if out["f16_conversion"] else None)
    out.setdefault("fa_auto_enabled_for_v", False)
    out["kernel_abort"] = aborts
    slowdown, _ = cat.slowdown()
    out["slowdown"] = slowdown

    # -- head size / block size ---------------------------------------------------------------------
    head_problems = []
    for side, t, head in (("K", kt, head_k), ("V", vt, head_v)):
        if t is not None and t.quantized and head is not None and head % t.block != 0:
            head_problems.append({"side": side, "type": t.name, "block": t.block, "head": head,
                                  "pointer": k_pointer if side == "K" else v_pointer})
    out["head_size_problems"] = head_problems

    # -- will context creation fail, and with which message ---------------------------------------
    v_needs = setting("v_quant_needs_fa")
    start_error: Optional[str] = None
    reason: Optional[str] = None
    if unsupported:
        msg = setting("unsupported_type_message")
        start_error = str(_value(msg, "Unsupported cache type: {type}")).replace("{type}", unsupported[0]["type"])
        reason = "unsupported_type"
    elif head_problems and tristate:
        p = head_problems[0]
        start_error = (f"{p['side']} cache type {p['type']} with block size {p['block']} does not divide "
                       f"n_embd_head_{p['side'].lower()}={p['head']}")
        reason = "head_size"
    elif v_quant and _value(v_needs) and fa_eff is False:
        if out["fa_auto_disabled"]:
            start_error = str(_value(setting("fa_auto_error"), "quantized V cache was requested, but this requires Flash Attention"))
            reason = "fa_auto_disabled"
        else:
            start_error = str(_value(setting("v_quant_error"), "V cache quantization requires flash_attn"))
            reason = "forced_off" if forced is not None else "fa_off"
    elif aborts:
        start_error = (f"Unsupported KV type combination for head_size {head_k}. Compile with GGML_CUDA_FA_ALL_QUANTS"
                       if head_k is not None else "Unsupported KV type combination. Compile with GGML_CUDA_FA_ALL_QUANTS")
        reason = "kernel_abort"
    out["start_error"] = start_error
    out["start_error_reason"] = reason
    out["start_error_note"] = _unverified(v_needs, setting("fa_default"), fa_flag) if reason in ("fa_off", "fa_auto_disabled") else ""
    if ollama and start_error and ollama_out.get("without_fa") == "f16_fallback" and reason in ("fa_off", "fa_auto_disabled", "forced_off"):
        # <= v0.24: Ollama's runner panics when llama.cpp itself forces FA off (grok, issue #15043).
        out["start_error"] = f"panic: {start_error}"

    # -- settings that no longer do anything, or that mislead --------------------------------------
    options = get(data, "engine", "options", kind=dict) or {}
    defrag_key = next((k for k in ("defrag_thold", "defrag-thold", "dt") if k in options), None)
    defrag = setting("defrag")
    out["defrag_noop"] = bool(defrag_key and _value(defrag) == "removed")
    out["defrag_pointer"] = f"/engine/options/{defrag_key}" if defrag_key else None
    misspelled = []
    if ollama:
        table = cat.ollama_env().get("misspellings") or {}
        for name in env:
            if name in table:
                misspelled.append({"name": name, "correct": table[name], "pointer": f"/engine/env/{name}"})
    out["misspelled_env"] = misspelled

    # -- sizing -------------------------------------------------------------------------------------
    mpe = geometry.max_position_embeddings if geometry is not None else None
    n_seq_written = get(data, "serving", "max_num_seqs", kind=int, lo=1)
    unified = bool(get(data, "serving", "kv_unified", kind=bool))
    ctx_written = get(data, "serving", "context_size", kind=int, lo=0)
    context: Optional[int] = None
    per_slot_ctx: Optional[int] = None
    auto_fit = False
    if ollama:
        par_env = env.get("OLLAMA_NUM_PARALLEL")
        n_seq = n_seq_written or (int(par_env) if str(par_env or "").strip().isdigit() and 0 < int(par_env) < 2**64 else None)
        par_default = osetting("num_parallel_default")
        if n_seq is None:
            n_seq = int(_value(par_default, 1))
            if par_default is not None and not par_default.verified:
                notes.append(f"OLLAMA_NUM_PARALLEL unset: {par_default.note or 'default'}; {n_seq} assumed")
        num_ctx = get(data, "serving", "max_model_len", kind=int, lo=1)
        ctx_env = env.get("OLLAMA_CONTEXT_LENGTH")
        if num_ctx is None and str(ctx_env or "").strip().isdigit() and 0 < int(ctx_env) < 2**64:
            num_ctx = int(ctx_env)
        if num_ctx is None:
            dflt = _value(osetting("context_length_default"))
            if dflt == "vram_tier":
                mem = gpu.memory_bytes if gpu is not None else None
                if mem is not None:
                    num_ctx = 262144 if mem >= 47 * GiB else 32768 if mem >= 23 * GiB else 4096
                    notes.append(f"num_ctx unset: Ollama picks {num_ctx:,} from the GPU's memory tier")
            elif isinstance(dflt, int):
                num_ctx = dflt
                notes.append(f"num_ctx unset: Ollama {version} default {num_ctx:,}")
        if num_ctx is not None and mpe and version and _value(osetting("kv_cache_types")) == "passthrough" and num_ctx > mpe:
            notes.append(f"num_ctx {num_ctx:,} capped at the model's training context {mpe:,}")
            num_ctx = mpe
        if num_ctx is not None:
            context = num_ctx * n_seq
            per_slot_ctx = num_ctx
            if n_seq > 1:
                notes.append(f"Ollama passes num_ctx x OLLAMA_NUM_PARALLEL = {num_ctx:,} x {n_seq} = {context:,} cells to llama.cpp")
        unified = False
        out["num_ctx"] = num_ctx
    else:
        np_default = setting("np_default")
        if n_seq_written is None and _value(np_default) == "auto4_unified":
            n_seq, unified = 4, True
            notes.append("-np unset: llama-server starts 4 slots sharing one unified cache (PR #16736)")
        else:
            n_seq = n_seq_written or 1
        ctx_default = setting("ctx_default")
        if ctx_written is None:
            dflt = _value(ctx_default, 4096)
            auto_fit = bool(_value(setting("auto_fit")))
            ctx_written_eff = dflt
            out["ctx_default"] = dflt
        else:
            ctx_written_eff = ctx_written
        context = ctx_written_eff if ctx_written_eff else mpe
        if ctx_written_eff == 0 and mpe is None:
            notes.append("-c 0 means the model's training context, which is unknown here")
        if context:
            per_slot_ctx = context if unified or n_seq == 1 else context // n_seq
    out["n_ctx_train"] = mpe
    out["ctx_per_slot"] = per_slot_ctx
    out["ctx_exceeds_train"] = bool(per_slot_ctx and mpe and per_slot_ctx > mpe)
    out["ctx_pointer"] = ("/serving/max_model_len" if get(data, "serving", "max_model_len", kind=int) is not None else "/engine/name") if ollama \
        else ("/serving/context_size" if ctx_written is not None else "/engine/name")
    out["auto_fit_unset"] = auto_fit
    out["auto_fit_note"] = _unverified(setting("auto_fit")) if auto_fit else ""
    out.update(n_seq=n_seq, kv_unified=unified, context=context)
    facts["serving"]["max_model_len"] = per_slot_ctx
    facts["serving"]["max_model_len_written"] = get(data, "serving", "max_model_len", kind=int, lo=1)
    facts["serving"]["max_model_len_pointer"] = "/serving/max_model_len" if ollama else (
        "/serving/context_size" if ctx_written is not None else "/engine/name")

    # -- the generic kv_cache facts (rules written for every engine read these) -------------------
    facts["kv_cache"].update(dtype=dtype or "f16", format=None if k_eff != v_eff else k_eff, known=True,
                             quantized=k_quant or v_quant, fp8=False, fp4=False, e5m2=False,
                             per_token_head=False, auto_quantized=False, block_size=None,
                             accepted=accepted)

    swa_rule = _value(setting("swa_cache"), "full")
    padding = _value(setting("cell_padding"), "by_fa")
    estimate = _value(osetting("estimate")) if ollama else None
    for f in (setting("cell_padding"), setting("swa_cache"), setting("per_stream_cache")):
        if f is not None and not f.verified and geometry is not None:
            if f.name == "swa_cache" and not geometry.has_sliding_layers:
                continue
            if f.name == "per_stream_cache" and (n_seq == 1 or unified):
                continue
            notes.append(f"{f.name} at {build}: {f.value} (release boundary not pinned: {f.note})" if f.note
                         else f"{f.name} at {build}: {f.value} (release boundary not pinned)")
    if fa_eff is None:
        notes.append("flash attention 'auto' cannot be resolved without engine.build.backend: cells padded as without it")
    if inferred:
        notes.append(f"engine.build.backend not given: {backend} assumed from hardware.gpu")
    if ollama:
        notes.append("Ollama's own engine (ollamarunner) serves some architectures with its own cache: "
                     "this is the llama.cpp runner's figure")
    kb = (kt.block, kt.bytes) if kt else (1, 2)
    vb = (vt.block, vt.bytes) if vt else (1, 2)
    return GgmlPlan(
        engine=engine, build=build, type_k=k_eff, type_v=v_eff, k_block=kb, v_block=vb,
        flash_attn=fa_eff, context_size=context, n_seq=n_seq, unified=unified,
        per_stream=bool(_value(setting("per_stream_cache"), True)),
        padding="256" if padding == 256 else "by_fa", swa_rule=str(swa_rule),
        swa_full=bool(get(data, "serving", "swa_full", kind=bool)),
        ubatch=get(data, "serving", "ubatch_size", kind=int, lo=1) or 512,
        ollama_estimate=estimate, notes=tuple(notes),
        k_payload_bits=kt.payload_bits if kt else None, v_payload_bits=vt.payload_bits if vt else None,
        ollama_estimate_rates=_estimate_rates(osetting("estimate_bytes_per_element"), k_eff, v_eff)
        if estimate == "dropped_scales" else None)


def _estimate_rates(fact: Any, type_k: str, type_v: str) -> Optional[Tuple[float, float]]:
    """Ollama's kvCacheBytesPerElement for the K and V types (catalog estimate_bytes_per_element)."""
    table = _value(fact)
    if not isinstance(table, dict):
        return None
    default = float(table.get("default", 2.0))
    return float(table.get(type_k, default)), float(table.get(type_v, default))


def quant_requested(name: str, cat: GgmlCatalog) -> bool:
    t = cat.cache_type(name)
    return bool(t and t.quantized)
