"""Compare kvlint's SGLang verdicts with the truth tables derived by running each release's code.

    python tools/derive/sglang_compare.py [--releases 0.5.9,0.5.23] [--out FILE]

For every catalogued SGLang release with a table in tools/derive/tables/sglang/ and every grid
cell (GPU x model x attention backend, `auto` included, x kv_cache_dtype), a manifest-equivalent
document goes through kvlint's own resolve stage (kvlint.resolve.resolve, the catalogs kvlint
ships) and its rules (kvlint.rulebook, every built-in rule of the facts stage); the answer is
compared with what the release's own ServerArgs resolution (and, up to 0.5.2, its
ModelRunner.model_specific_adjustment) did with the same arguments:

* verdict: the release started (accepted) or raised; kvlint reports an error finding or not.
  When both refuse, the reason class must agree (dtype, gpu, model, backend).
* select: with `auto`, the backend the release ends up with vs the one kvlint predicts.
* backend: with an explicit backend, the backend the release ends up with (SGLang rewrites some
  pairs, e.g. fa3 + fp8_e5m2 -> triton) vs kvlint's backend after the catalog's `rewrites`
  (kvlint's facts name the backend as written; the catalog's rewrite says what SGLang makes of it).
* kv_dtype: the kv_cache_dtype after the release's rewrites vs the literal kvlint plans with.
* page: the page size the release resolves vs the one kvlint's capacity uses (the manifest's,
  else the backend's preferred size, else SGLang's default 1: kvlint/capacity/sglang.py).

A disagreement is grouped over the axes that do not change it (the key says which stay); the
group's releases are listed. tests/test_sglang_agreement.py fails on any group that
tools/derive/known_disagreements_sglang.yaml does not list, and on a listed one that is gone.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Tuple

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
TABLES = HERE / "tables" / "sglang"
KNOWN = HERE / "known_disagreements_sglang.yaml"
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

# The table's GPU keys -> kvlint's GPU catalog ids (same compute capability and vendor; kvlint's
# verdicts do not depend on the memory size).
GPU_IDS = {"sm80": "A100-80GB", "sm86": "A10G-24GB", "sm89": "L40S-48GB", "sm90": "H100-SXM-80GB",
           "sm100": "B200-180GB", "sm120": "RTX-PRO-6000-96GB", "gfx942": "MI300X-192GB"}

# kvlint's error findings -> reason class.
CODE_CLASS = {"KV204": "backend", "KV205": "dtype", "KV301": "dtype", "KV303": "dtype", "KV304": "dtype",
              "KV305": "gpu", "KV306": "gpu", "KV310": "page", "KV311": "model", "KV315": "model",
              "KV316": "no backend", "KV302": "scales", "KV308": "scales", "KV312": "feature",
              "KV319": "flag", "KV323": "gpu", "KV324": "model", "KV342": "dtype"}


def code_class(error: Dict[str, Any]) -> str:
    """The reason class of a release's refusal, from its message (the table keeps type, message
    and the raising line)."""
    msg = error.get("message", "")
    if msg.startswith("Unknown quantization method"):
        return "quantization"
    if re.search(r"GPUs?\b|SM\d|non-CUDA|Blackwell|Hopper", msg):
        return "gpu"
    if re.search(r"kv-cache-dtype|KV4|NVFP4|nvfp4|mxfp8", msg):
        return "dtype"
    if re.search(r"for MLA|requires one of", msg):
        return "model"
    return "other"


def vkey(v: str):
    from packaging.version import Version
    return Version(v)


class Kvlint:
    """kvlint's answer for one cell: resolve + the built-in rules, as `kvlint check` runs them."""

    def __init__(self) -> None:
        from kvlint.catalog import load_catalogs
        from kvlint.rulebook import load_rulebook

        self.catalogs = load_catalogs(())
        self.book = load_rulebook(())
        # Only error findings decide "refused"; the other rules are not evaluated (half the time).
        self.errors = [r.code for r in self.book if r.severity == "error"]

    def verdict(self, version: str, gpu: str, model: str, backend: str, dtype: str) -> Dict[str, Any]:
        from kvlint.resolve import resolve

        data = {"apiVersion": "kvlint/v1", "kind": "Deployment", "metadata": {"name": "cell"},
                "engine": {"name": "sglang", "version": version, "attention_backend": backend},
                "hardware": {"gpu": GPU_IDS[gpu]}, "model": {"name": model}, "kv_cache": {"dtype": dtype}}
        res = resolve(data, "cell.yaml", None, self.catalogs)
        facts = res.facts
        errors = sorted({rule.code for rule, _, _ in self.book.evaluate(facts, enabled=self.errors)})
        release = self.catalogs.engines.release("sglang", version)
        name = facts["backend"].get("name") if facts["backend"].get("auto") is False else (
            facts["selection"].get("chosen") or facts["backend"].get("name"))
        dep = res.deployment
        page = (dep.block_size or dep.backend_block_size) if dep is not None else None
        effective = name
        if release is not None and name:
            # kvlint's facts keep the named backend; the catalog's `rewrites` say what SGLang
            # switches it to (fa3 + fp8_e5m2 -> triton). The page size stays capacity's own.
            for rw in release.rewrites_for(name, dtype, page):
                effective = rw.set.get("attention_backend", effective)
        # A backend of another device (aiter on CUDA, fa3 on ROCm, ascend on a GPU): kvlint's
        # KV323 then holds on every GPU of the platform, so the group is keyed by the platform.
        platform = "rocm" if GPU_IDS[gpu].startswith("MI") else "cuda"
        off_platform = bool(release is not None and backend != "auto"
                            and release.backend(backend, platform=platform) is None
                            and release.backend(backend) is not None)
        return {"refused": bool(errors), "codes": errors,
                "classes": sorted({CODE_CLASS.get(c, c) for c in errors}),
                "backend": effective, "kv_dtype": (dep.kv_dtype if dep is not None else dtype),
                "page": page or 1, "off_platform": off_platform}


def table_cell(doc: Dict[str, Any], gpu: str, model: str, backend: str, dtype: str) -> Dict[str, Any]:
    o = doc["outcomes"][doc["grid"][gpu][model][backend][dtype]]
    if not o["accepted"]:
        e = o["error"]
        return {"refused": True, "class": code_class(e), "where": e["where"], "message": e["message"]}
    final = o.get("attention_backend") or o.get("decode_attention_backend")
    rewrites = [doc["rewrite_list"][i] for i in o.get("rewrites", [])]

    def where(field: str) -> str:
        at = [r[3] for r in rewrites if r[0] == field]
        return at[-1] if at else ""

    return {"refused": False, "backend": final, "kv_dtype": o.get("kv_cache_dtype"), "page": o.get("page_size"),
            "where_backend": where("attention_backend"), "where_dtype": where("kv_cache_dtype"),
            "where_page": where("page_size")}


def catalogued_releases(kv: Kvlint, tables: Path = TABLES) -> List[str]:
    known = set(kv.catalogs.engines.known_versions("sglang"))
    return sorted((p.stem for p in tables.glob("*.json") if p.stem in known), key=vkey)


def compare_release(kv: Kvlint, doc: Dict[str, Any], found: Dict[Tuple[str, ...], Dict[str, Any]]) -> Dict[str, int]:
    """Adds this release's disagreements to `found` (key -> {releases, cells, example, where});
    returns the cell counts."""
    version = doc["release"]
    counts = {"cells": 0, "compared": 0, "agree": 0, "weights_refused": 0}
    models = doc["axes"]["model"]
    platform = {g: info["platform"] for g, info in doc["axes"]["gpu"].items()}

    added = [0]  # disagreements added so far: a cell agrees when it adds none

    def add(key: Tuple[str, ...], cell: str, where: str) -> None:
        entry = found.setdefault(key, {"releases": set(), "cells": 0, "example": cell, "where": set()})
        entry["releases"].add(version)
        entry["cells"] += 1
        added[0] += 1
        if where:
            entry["where"].add(f"{version} {where}")

    for gpu, by_model in doc["grid"].items():
        for mkey, by_backend in by_model.items():
            model = models[mkey]
            for backend, by_dtype in by_backend.items():
                for dtype in by_dtype:
                    counts["cells"] += 1
                    code = table_cell(doc, gpu, mkey, backend, dtype)
                    if code["refused"] and code["class"] == "quantization":
                        # The release cannot load the checkpoint's weight quantization (gpt-oss's
                        # mxfp4: not in 0.4.10.post2's registry; 0.5.x registers it on CUDA and on
                        # ROCm only where _is_mxfp_supported, layers/quantization/__init__.py v0.5.2
                        # L92-105, which MI300X's gfx942 is not):
                        # a weights question kvlint does not check, so not a KV verdict to compare.
                        counts["weights_refused"] += 1
                        continue
                    counts["compared"] += 1
                    ours = kv.verdict(version, gpu, model, backend, dtype)
                    cell = f"{version} {gpu} {mkey} {backend} {dtype}"
                    before = added[0]
                    if code["refused"] != ours["refused"]:
                        c = f"refused ({code['class']})" if code["refused"] else "accepted"
                        k = f"refused ({', '.join(ours['codes'])})" if ours["refused"] else "accepted"
                        classes = set(ours["classes"]) | {code.get("class")}
                        # The axes that decide the disagreement stay; the others are "*": when the
                        # release accepts, the dtype matters only if kvlint refuses it (KV301...),
                        # the GPU only if kvlint's reason is the GPU and not the device.
                        any_dtype = ours["classes"] == ["backend"] or (
                            not code["refused"] and "dtype" not in ours["classes"])
                        by_gpu = "gpu" in classes and not (not code["refused"] and ours["off_platform"])
                        add(("verdict", backend,
                             "*" if any_dtype else dtype,
                             mkey if "model" in classes else "*",
                             gpu if by_gpu else platform[gpu],
                             f"code: {c}", f"kvlint: {k}"), cell, code.get("where", ""))
                    elif code["refused"]:
                        if code["class"] not in ours["classes"]:
                            add(("reason", backend, dtype, f"code: {code['class']}",
                                 f"kvlint: {', '.join(ours['codes'])}"), cell, code["where"])
                    else:
                        if backend == "auto" and code["backend"] != ours["backend"]:
                            add(("select", gpu, mkey, f"code: {code['backend']}", f"kvlint: {ours['backend']}"),
                                cell, code["where_backend"])
                        elif backend != "auto" and code["backend"] != ours["backend"]:
                            add(("backend", backend, dtype, f"code: {code['backend']}", f"kvlint: {ours['backend']}"),
                                cell, code["where_backend"])
                        if code["kv_dtype"] != ours["kv_dtype"]:
                            add(("kv_dtype", backend, dtype, f"code: {code['kv_dtype']}", f"kvlint: {ours['kv_dtype']}"),
                                cell, code["where_dtype"])
                        if code["backend"] == ours["backend"] and code["page"] != ours["page"]:
                            add(("page", code["backend"] or "?", f"code: {code['page']}", f"kvlint: {ours['page']}"),
                                cell, code["where_page"])
                    if added[0] == before:
                        counts["agree"] += 1
    return counts


def compare_all(tables: Path = TABLES, releases: Optional[Iterable[str]] = None):
    from kvlint.catalog.hf_config import remembered_lookups
    from kvlint.resolve.remedy import remembered_remedies

    kv = Kvlint()
    order = list(releases) if releases else catalogued_releases(kv, tables)
    found: Dict[Tuple[str, ...], Dict[str, Any]] = {}
    counts = {}
    # One run over fixed tables and catalogs: the local Hugging Face cache is looked at once per
    # model name, and each remedy searched once, not once per cell (as `kvlint plan` does).
    with remembered_lookups(), remembered_remedies():
        for version in order:
            doc = json.loads((tables / f"{version}.json").read_text())
            counts[version] = compare_release(kv, doc, found)
    return order, counts, found


def key_text(key: Tuple[str, ...]) -> str:
    return " | ".join(key)


KNOWN_HEADER = """\
# Where kvlint's SGLang verdicts still disagree with the truth tables derived from each release's
# code (tools/derive/sglang_compare.py; the tables are tools/derive/tables/sglang/<release>.json),
# and why. tests/test_sglang_agreement.py fails on any disagreement not listed here, on a listed one
# that no longer occurs, and when the releases it occurs in change.
# Key: kind | axes that stay fixed ("*" = every value) | what the release's code did | what kvlint says.
# Reasons: "derivation limit: ..." = the table does not show what a deployed engine does there (the
# evidence is given); "open: ..." = a catalog fact or a rule still to correct.
# Regenerate with `python tools/derive/sglang_compare.py --update-known` (keeps the reasons of the
# ones still found; a new one gets "open"); review the diff before committing.
"""
OPEN = "open: not yet corrected (tools/derive/sglang_compare.py prints the code location)"


CUDA_ONLY = ("fa3", "fa4", "flashinfer", "flashmla", "cutlass_mla", "trtllm_mha", "trtllm_mla", "cutedsl_mla",
             "tokenspeed_mla", "dual_chunk_flash_attn", "minicpm_flashattn", "minicpm_flashinfer",
             "llada2_cfg_flashinfer", "hpc_ops", "hybrid_linear_attn")

# Why kvlint refuses where the release's argument stage accepts: each a check SGLang makes later,
# when the model runner builds the backend (the derivation stops before), with its source.
# (code, backend) -> the sentence; "*" = any backend the condition names.
_DEVICE = {
    "other": ("an Ascend NPU / CPU (AMX) / Intel XPU backend: SGLang's argument resolution takes the name on "
              "any device and the backend fails when the model runner builds it (not run by the derivation); "
              "kvlint's GPU catalog has no such device, so KV323 (not for this device) is what a deployment on "
              "a GPU meets"),
    "rocm": ("a ROCm backend (AMD's aiter / wave-lang kernels, installed by sglang[srt-hip] only: the wheel's "
             "METADATA). The argument stage takes the name on CUDA; the import fails when the model runner "
             "builds the backend (not run here); kvlint reports KV323"),
    "cuda": ("a CUDA backend (flashinfer, sgl-kernel's FA3/FlashMLA/CUTLASS and TRT-LLM kernels; flashinfer_python "
             "is a requirement of sglang[srt] only, not of sglang[srt-hip]: the wheel's METADATA). The argument "
             "stage does not check the platform; start-up fails in the model runner (not run here); kvlint "
             "reports KV323"),
}
_RUNTIME = {
    ("KV323", "fa3"): ("the release starts the argument stage with fa3 on any GPU; fa3's backend constructor asserts "
                       "(major == 8 and not MLA) or major == 9 ('FlashAttention v3 Backend requires SM>=80 and SM<=90': "
                       "python/sglang/srt/model_executor/model_runner.py _get_attention_backend_from_str v0.4.10.post2 "
                       "L1429-1434, v0.5.2 L1650-1656; python/sglang/srt/layers/attention/attention_registry.py "
                       "create_flashattention_v3_backend v0.5.9 L129-135, v0.5.23 L240-246), which the derivation "
                       "does not run; KV323 follows that assertion"),
    ("KV323", "flashmla"): ("the argument stage takes flashmla on any GPU, but sgl-kernel builds the FlashMLA kernels "
                            "for sm_90a and (CUDA > 12.8) sm_100a only (sgl-kernel/cmake/flashmla.cmake "
                            "FLASHMLA_CUDA_FLAGS: 'The FlashMLA kernels only work on hopper'), so another GPU has no "
                            "kernel image at the first forward, which the derivation does not run"),
    ("KV323", "cutlass_mla"): ("the argument stage takes cutlass_mla on any GPU, but its only kernel is CUTLASS's SM100 MLA "
                               "kernel (sgl-kernel/csrc/attention/cutlass_mla_kernel.cu at 15f07a0: struct MlaSm100, "
                               "Sm100FmhaMlaKernelTmaWarpspecialized), which runs on Blackwell SM100 only; the "
                               "derivation does not run the kernel"),
    ("KV323", "hpc_ops"): ("hpc_ops's constructor raises 'The hpc_ops attention backend requires an SM90 (Hopper) GPU' "
                           "off SM90 (python/sglang/srt/layers/attention/hpc_ops_backend.py v0.5.23 "
                           "HPCOpsAttnBackend.__init__ L138-143), which the derivation does not run"),
    ("KV301", "hpc_ops"): ("hpc_ops's constructor raises 'only supports bf16 or fp8_e4m3 KV cache' for any other "
                           "(hpc_ops_backend.py v0.5.23 L157-161); the argument stage takes every dtype"),
    ("KV311", "hpc_ops"): ("hpc_ops's constructor raises 'requires head_dim == 128' (hpc_ops_backend.py v0.5.23 "
                           "L178-191); gemma-2's head_dim is 256"),
    ("KV324", "hpc_ops"): ("create_hpc_ops_backend raises 'hpc_ops backend can only be used with non-MLA models' "
                           "(layers/attention/attention_registry.py v0.5.23 L286-289) when the runner builds it"),
    ("KV324", "nsa"): ("the nsa backend's constructor asserts 'NSA backend only supports DeepSeek NSA' "
                       "(layers/attention/nsa_backend.py v0.5.9 L300-301; 0.5.23 builds the dsa backend for it, "
                       "dsa_backend.py L527-528) for a model that is not a DeepSeek DSA architecture, all of which "
                       "are MLA (configs/model_config.py v0.5.23 is_deepseek_dsa L191-210, MLA list L1367-1397)"),
    ("KV324", "dsa"): ("the dsa backend's constructor asserts 'DSA backend only supports DeepSeek DSA' "
                       "(layers/attention/dsa_backend.py v0.5.23 L527-528) for a model that is not a DeepSeek DSA "
                       "architecture, all of which are MLA (configs/model_config.py v0.5.23 is_deepseek_dsa "
                       "L191-210, MLA list L1367-1397)"),
    ("KV324", "llada2_cfg_flashinfer"): ("create_llada2_cfg_flashinfer_backend raises 'LLaDA2 CFG attention does not "
                                         "use an MLA backend' (layers/attention/attention_registry.py v0.5.23 L80-84) "
                                         "when the runner builds it"),
    ("KV324", "cutedsl_mla"): ("create_cutedsl_mla_backend raises 'cutedsl_mla backend can only be used with MLA "
                               "models' (layers/attention/attention_registry.py v0.5.23 L118-121) when the runner "
                               "builds it"),
    ("KV324", "tokenspeed_mla"): ("tokenspeed_mla is renamed cutedsl_mla (arg_groups/serving_hook.py v0.5.23 "
                                  "handle_deprecated_args L303-337), and create_cutedsl_mla_backend raises "
                                  "'cutedsl_mla backend can only be used with MLA models' (attention_registry.py "
                                  "v0.5.23 L118-121) when the runner builds it"),
    ("KV301", "fa4"): ("the argument stage takes fp8 for fa4, but FA4 has no fp8 kernel: q stays bf16 "
                       "(layers/attention/flashattention_backend.py v0.5.9 L782-786) and FA4 asserts 'inputs must "
                       "have the same dtype' at the first forward (Dao-AILab/flash-attention#2321; docs/defects.md "
                       "S3); the catalog keeps fa4 without fp8"),
}


_FP4 = ("fp4_e2m1", "fp4_mx_block16", "nvfp4")
_FP4_OFF_CUDA = ("open: SGLang refuses an FP4 cache off CUDA before any backend check ('KV4 is not tested on "
                 "non-CUDA platforms': server_args.py v0.5.9 _handle_kv4_compatibility L2053, arg_groups/"
                 "kv_cache_hook.py v0.5.23 handle_kv4_compatibility L318), and kvlint accepts it; the FP4 dtype "
                 "entries of rules/catalog/engines/sglang.yaml `dtypes:` need platforms: [cuda], which the dtype "
                 "GPU gate then reports as KV323")

# fp8_e5m2 on the two MLA kernels: the argument stage has no dtype check for them; the kernels read
# E4M3 (or 16-bit) only, so the first decode fails. Read in the kernels SGLang calls.
_E5M2_MLA = {
    "flashmla": ("the argument stage takes fp8_e5m2 for flashmla, but the kernel cannot run it: SGLang quantizes "
                 "q to E4M3 for an FP8 cache (scaled_fp8_quant, layers/attention/flashmla_backend.py v0.5.9 "
                 "L370-391) and FlashMLA's dense FP8 decode checks q is float8_e4m3fn and kcache.dtype == "
                 "q.dtype ('query and key must have the same dtype': sgl-project/FlashMLA "
                 "csrc/extension/sm90/dense_fp8/dense_fp8_python_api.cpp L35-36 at 0f3fbb6, instantiated for "
                 "float_e4m3_t only); later sgl-kernel builds raise NotImplementedError for any dense FP8 cache "
                 "(sgl-kernel/python/sgl_kernel/flash_mla.py at 176ee5c). The catalog keeps fp8_e4m3 only"),
    "cutlass_mla": ("the argument stage takes fp8_e5m2 for cutlass_mla, but the kernel cannot run it: "
                    "cutlass_mla_decode dispatches on the query dtype, half / bfloat16 / float_e4m3 only, else "
                    "'Unsupported input data type of MLA' (sgl-project/sglang sgl-kernel/csrc/attention/"
                    "cutlass_mla_kernel.cu at 15f07a0), and sgl-kernel's Python wrapper asserts q_nope.dtype == "
                    "kv_c_and_k_pe_cache.dtype (cutlass_mla_decode in sgl-kernel/python/sgl_kernel/attention.py); there is no E5M2 "
                    "instantiation. The catalog keeps fp8_e4m3 only"),
}


def _accepted_but_refused(backend: str, platform: str, codes: List[str], off_platform: bool) -> Optional[str]:
    """A derivation-limit reason when every kvlint error code is a check the release makes after its
    argument stage (model runner / backend constructor); None when one of them is not."""
    parts = []
    for c in codes:
        if c == "KV323" and off_platform:
            if backend in ("ascend", "intel_amx", "intel_xpu"):
                parts.append(_DEVICE["other"])
            elif platform == "cuda" and backend in ("aiter", "wave"):
                parts.append(_DEVICE["rocm"])
            elif platform == "rocm" and backend in CUDA_ONLY:
                parts.append(_DEVICE["cuda"])
            else:
                return None
        elif (c, backend) in _RUNTIME:
            parts.append(_RUNTIME[(c, backend)])
        elif c == "KV342":  # task B's rule, with its evidence
            parts.append("0.5.23's argument stage takes mxfp8, its run time does not: only FA4 reads the MXFP8 block "
                         "scales and it needs per-token MXFP8 query scales that only Inkling's attention supplies "
                         "(layers/attention/flashattention_backend.py _mxfp8_sf_kwargs L444-464, "
                         "models/inkling_common/attn.py L895-905); kvlint says KV342")
        else:
            return None
    return "derivation limit: " + "; and ".join(dict.fromkeys(parts)) if parts else None


def default_reason(key: Tuple[str, ...]) -> str:
    """The reason a newly found disagreement starts with: a derivation limit only where the
    evidence is general (named here); everything else is open."""
    kind, rest = key[0], key[1:]
    if kind == "reason" and rest[-2] == "code: gpu" and "KV301" in rest[-1] and rest[1] in _FP4:
        return _FP4_OFF_CUDA.replace("kvlint accepts it", "kvlint names the backend's dtype list (KV301)")
    if kind == "verdict" and rest[1] in _FP4 and rest[-2] == "code: refused (gpu)" and rest[-1] == "kvlint: accepted" \
            and rest[3] == "gfx942":
        return _FP4_OFF_CUDA
    if kind == "verdict" and rest[-2] == "code: accepted" and rest[-1].startswith("kvlint: refused ("):
        backend, gpu_or_platform = rest[0], rest[3]
        codes = rest[-1][len("kvlint: refused ("):-1].split(", ")
        platform = "rocm" if gpu_or_platform in ("rocm", "gfx942") else "cuda"
        # off the device: keyed by platform (the comparison does so for another device's backend)
        reason = _accepted_but_refused(backend, platform, codes, gpu_or_platform in ("cuda", "rocm"))
        if reason:
            return reason
        if codes == ["KV204"]:
            return "open: the catalog has no such backend for this release and platform"
    if "code: refused (gpu)" in rest and rest[-1] == "kvlint: accepted":
        return ("open: the catalog's compute_capability gate refuses this GPU, but no kvlint rule turns "
                "that verdict (facts backend.cc_ok) into a finding")
    if "mxfp8" in rest and any("KV205" in r for r in rest):
        return ("open: kvlint has no storage format for mxfp8 (its MX block-scale bytes are not "
                "recorded), so it reports the literal as unknown (KV205)")
    if "code: refused (model)" in rest and rest[-1] == "kvlint: accepted":
        return ("open: a backend of the other attention kind (a non-MLA backend on an MLA model, or an "
                "MLA backend on gpt-oss): the release refuses it, kvlint's accepts() reports an `mla` "
                "problem that no rule turns into a finding")
    if kind == "verdict" and "code: refused (dtype)" in rest and rest[-1] == "kvlint: accepted":
        return ("open: SGLang's FP4 check lists backends per attention kind (KV4 MHA: triton, "
                "torch_native, flex_attention, trtllm_mha; KV4 MLA: cutlass_mla, flashinfer, trtllm_mla, "
                "flashmla in 0.5.9), and this cell pairs a backend with the other kind of model; the "
                "catalog entry used for it is the one for the kind the backend serves")
    if kind == "reason" and rest[-2] == "code: gpu" and "KV301" in rest[-1]:
        return "open: both refuse; the release checks the GPU first, kvlint names the dtype"
    if kind == "verdict" and rest[0] == "auto" and rest[1] == "nvfp4" and rest[-1] == "kvlint: refused (KV301)":
        return ("open: 0.5.23 with nvfp4 sets prefill flashinfer / decode trtllm_mha before auto picks triton for "
                "an MLA model on SM120 (arg_groups/kv_cache_hook.py handle_nvfp4_prefill_kv_dequant_dtype L34-93), "
                "so triton never runs the cache; kvlint checks nvfp4 against triton, which lacks it")
    if kind == "verdict" and rest[0] in ("fa4", "auto") and rest[1] in ("fp8_e4m3", "fp8_e5m2") and "KV301" in rest[-1]:
        return ("derivation limit: the argument stage takes fp8 for fa4, but FA4 has no fp8 kernel: q stays "
                "bf16 (layers/attention/flashattention_backend.py v0.5.9 L782-786) and FA4 asserts 'inputs "
                "must have the same dtype' at the first forward (Dao-AILab/flash-attention#2321; "
                "docs/defects.md S3); the catalog keeps fa4 without fp8")
    if kind == "verdict" and rest[0] in ("flashmla", "cutlass_mla") and rest[1] == "fp8_e5m2" and (
            rest[-1] in ("kvlint: refused (KV301)", "kvlint: refused (KV301, KV323)")):
        return "derivation limit: " + "; and ".join(
            [_E5M2_MLA[rest[0]]] + ([_DEVICE["cuda"]] if "KV323" in rest[-1] else []))
    if kind == "reason" and rest[-1] == "kvlint: KV204":
        return "open: both refuse; kvlint's reason is the unknown backend (KV204), the release's another"
    return OPEN


def update_known(found: Dict[Tuple[str, ...], Dict[str, Any]], path: Path = KNOWN) -> None:
    import yaml

    old: Dict[str, str] = {}
    if path.is_file():
        doc = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        old = {e["key"]: e.get("reason", "") for e in doc.get("disagreements") or []}
    entries = []
    for k in sorted(found, key=key_text):
        e = found[k]
        text = key_text(k)
        reason = old.get(text) if old.get(text) not in (None, "", OPEN) else default_reason(k)
        if reason.startswith("open") and default_reason(k) != OPEN:
            reason = default_reason(k)  # evidence found since, or a more precise account
        entries.append({"key": text, "releases": ", ".join(sorted(e["releases"], key=vkey)), "cells": e["cells"],
                        "example": e["example"], "reason": reason})
    body = yaml.safe_dump({"disagreements": entries}, sort_keys=False, width=110, allow_unicode=True)
    path.write_text(KNOWN_HEADER + body, encoding="utf-8")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--releases")
    ap.add_argument("--out")
    ap.add_argument("--update-known", action="store_true",
                    help="rewrite known_disagreements_sglang.yaml (reasons of the ones still found kept)")
    args = ap.parse_args(argv)
    order, counts, found = compare_all(releases=args.releases.split(",") if args.releases else None)
    lines = []
    per_release = defaultdict(int)
    for k, e in found.items():
        for v in e["releases"]:
            per_release[v] += 1
    for v in order:
        c = counts[v]
        lines.append(f"{v}: {c['cells']} cells, {c['compared']} compared, {c['agree']} agree, "
                     f"{c['weights_refused']} not compared (the release refuses the checkpoint's weight quantization); {per_release[v]} disagreement groups")
    lines.append(f"{len(found)} disagreement groups")
    for k in sorted(found, key=key_text):
        e = found[k]
        lines.append(f"- {key_text(k)}  [{', '.join(sorted(e['releases'], key=vkey))}] {e['cells']} cells, "
                     f"e.g. {e['example']}; {'; '.join(sorted(e['where'])[:2])}")
    text = "\n".join(lines) + "\n"
    if args.update_known:
        update_known(found)
    if args.out:
        Path(args.out).write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
