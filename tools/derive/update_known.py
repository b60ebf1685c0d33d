"""Rewrite tools/derive/known_disagreements.yaml from the current comparison.

    python tools/derive/update_known.py

Keeps the reason of every disagreement that is still found, gives a new one the reason
"open: ..." (to be replaced by a real reason or a catalog fix), and drops the ones no longer
found, and rewrites catalog_disagreements.txt (compare_catalog.py's report). tests/test_derived_agreement.py then passes
until the catalog or the tables change again; review the diff of the YAML before committing.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent.parent))

import compare_catalog as C  # noqa: E402
from kvlint.catalog.engines import load_engine_catalog  # noqa: E402

KNOWN = HERE / "known_disagreements.yaml"
HEADER = """\
# Where kvlint's vLLM catalog still disagrees with the truth tables derived from each release's
# code (tools/derive/compare_catalog.py), and why. tests/test_derived_agreement.py fails on any
# disagreement not listed here, on a listed one that no longer occurs, and when its releases move.
# Reasons: "derivation limit" = the table does not show what a deployed engine does there (the
# catalog follows the cited code); "ROCm before 0.18" = the platform never asks the class;
# "decision" = the catalog models a deployment the table's plain pip install is not (said why);
# "open" = a catalog fact still to correct (its code location is in catalog_disagreements.txt).
# Regenerate with `python tools/derive/update_known.py` (keeps the reasons of the ones still found).
"""
DEFAULT = ("open: not yet corrected in the catalog (found by tools/derive/compare_catalog.py; "
           "the code location is in catalog_disagreements.txt)")


ROCM_NO_VALIDATION = (
    "ROCm before 0.18 never calls validate_configuration: RocmPlatform.get_attn_backend_cls is hard-coded and "
    "returns the named backend (vllm/platforms/rocm.py v0.15.0 L229-339), so the class's answer is not what the "
    "engine does there; the catalog keeps the lists these backends validate from 0.18 (every ROCm cell of the 0.18-0.33 "
    "tables agrees), and what their impls do before 0.18 with a dtype the class does not list needs a GPU (the "
    "backends stay verified: false)")
FLASHINFER_SINKS_OFFLINE = (
    "derivation limit: FlashInfer's attention sinks need TRTLLM kernels whose cubins come from the flashinfer-cubin "
    "package or NVIDIA's artifactory (vllm/utils/flashinfer.py has_nvidia_artifactory); releases whose wheel does not "
    "require flashinfer-cubin are derived offline, so the table says 'no sinks' where a deployed engine takes them "
    "(the catalog's FLASHINFER sinks gate, cited per release)")
ROCM_TRITON_STUB = (
    "derivation limit: on ROCm 0.32-0.33 the selector imports a Triton kernel at selection time and the stubbed "
    "triton has no tl.bfloat16; the code's answer there is unknown, not 'no backend'")


FLASHINFER_TRTLLM_OFFLINE = (
    "derivation limit: FlashInfer takes nvfp4 on SM100 only with the TRTLLM prefill and decode kernels "
    "(FlashInferBackend.supports_kv_cache_dtype: is_device_capability_family(100) and supports_trtllm_attention, "
    "vllm/v1/attention/backends/flashinfer.py v0.26.0 L446-453), and supports_trtllm_attention needs the cubins of "
    "the flashinfer-cubin package or NVIDIA's artifactory (vllm/utils/flashinfer.py v0.26.0 has_nvidia_artifactory L346-368); "
    "from 0.26 the wheel no longer requires flashinfer-cubin, so the offline table says 'not supported' where a "
    "deployed engine (vLLM's images, or any host that reaches the artifactory) takes it; the catalog follows the code "
    "with the kernels present")
V0110_MLA_FORCED_BLOCK = (
    "derivation limit: the table runs 0.11.0's hard-coded selector with the grid's block size, but a deployed 0.11.0 "
    "serving an MLA model without VLLM_ATTENTION_BACKEND first runs CudaPlatform.check_and_update_config, which forces "
    "block size 128 and CUTLASS_MLA on SM100 and block size 64 for FlashMLA elsewhere (vllm/platforms/cuda.py v0.11.0 "
    "L134-175); the catalog models the forced sizes, so its pick differs only where the grid's block size would be "
    "overridden")
V0110_NO_FLASHINFER = (
    "decision: FlashInfer is not a requirement of the 0.11.0 wheel (it becomes one in 0.11.1), so the table's plain pip "
    "install cannot import it and 0.11.0's selector (vllm/platforms/cuda.py v0.11.0 L330-392: FlashInfer on SM100 "
    "if importable) falls to FlashAttention/Triton; vLLM's 0.11.0 release images ship FlashInfer, and the catalog follows "
    "the images (FLASHINFER carries requires_package: flashinfer)")
PROBE_CACHE_DTYPE_AUTO = (
    "derivation limit: from 0.29 FA4's head-256 kernel on SM100 falls back to FA2 when the config's cache_dtype is "
    "quantized (vllm/v1/attention/backends/fa_utils.py v0.29.0 _fa4_hd256_fallback_reason L252-253), but the probe "
    "selects under VllmConfig(cache_config=CacheConfig(block_size=b)) whose cache_dtype is 'auto', so with a block size "
    "that is a multiple of 128 the table keeps FA4 and takes fp8; a deployed engine has cache_dtype fp8 in its config "
    "and gets FA2, which has no FP8 (the same cells at block sizes 16-64 reject it in the table too)")


def auto_reason(key: tuple, cells: list) -> str:
    """A reason that follows from where the disagreement is (all its cells), or ""."""
    kind, subject, what, detail = key
    rocm = all(c[1].startswith("gfx") for c in cells)
    if "triton.language' has no attribute 'bfloat16'" in detail and rocm:
        return ROCM_TRITON_STUB
    if kind == "accept" and rocm and all(C.vkey(c[0]) < C.vkey("0.18.0") for c in cells):
        return ROCM_NO_VALIDATION
    versions = {c[0] for c in cells}
    if (subject.startswith("FLASHINFER [cuda") or "picks FLASHINFER, code picks nothing" in what) and all(
            c[1] == "sm100" and c[3].startswith("nvfp4") for c in cells) and all(
            C.vkey(v) >= C.vkey("0.26.0") for v in versions):
        return FLASHINFER_TRTLLM_OFFLINE
    if kind == "select" and versions == {"0.11.0"} and subject.startswith("MLA [cuda"):
        return V0110_MLA_FORCED_BLOCK
    if kind == "select" and versions == {"0.11.0"} and "catalog picks FLASHINFER," in what and all(
            c[1] == "sm100" for c in cells) and not all(c[2] == "has_sink" for c in cells):
        return V0110_NO_FLASHINFER
    if kind == "select" and "picks nothing (error), code picks FLASH_ATTN" in what and all(
            c[1] == "sm100" and c[4] == 256 and c[3] in ("fp8", "fp8_e4m3") and c[5] in (128, 256, "default")
            for c in cells):
        return PROBE_CACHE_DTYPE_AUTO
    sink_cells = all(c[2] == "has_sink" for c in cells)
    if sink_cells and "sink" in detail + what and (subject.split(" [")[0] == "FLASHINFER" or "picks FLASHINFER," in what) and all(
            c[1] in ("sm90", "sm100", "sm120") for c in cells):
        return FLASHINFER_SINKS_OFFLINE
    return ""


def main() -> None:
    old = {}
    if KNOWN.exists():
        old = {e["key"]: e["reason"] for e in yaml.safe_load(KNOWN.read_text())["disagreements"]}
    cat = load_engine_catalog()
    order, counts, groups, same_as = C.compare_all(cat, REPO_TABLES)
    (HERE / "catalog_disagreements.txt").write_text(C.report(order, counts, groups, same_as), encoding="utf-8")
    merged, _ = C.merged_groups(groups)
    out = []
    for key, cells in sorted(merged.items()):
        text = " | ".join(key)
        rel = sorted({c[0] for c in cells}, key=C.vkey)
        out.append({"key": text, "releases": C.ranges(rel, order), "cells": len(cells),
                    "reason": auto_reason(key, cells) or old.get(text, DEFAULT)})
    KNOWN.write_text(HEADER + yaml.safe_dump({"disagreements": out}, sort_keys=False, width=200,
                                             allow_unicode=True), encoding="utf-8")
    print(f"{len(out)} disagreements, {sum(1 for o in out if o['reason'].startswith('open'))} open; "
          f"{len(set(old) - {o['key'] for o in out})} no longer found")
    missing = [v for v in order if not counts[v]["known"] or counts[v]["proxy"]]
    if missing:
        print("add to `releases` in rules/catalog/engines/vllm.yaml:", ", ".join(missing))
    lines: dict = {}
    for p in REPO_TABLES.glob("*.json"):
        t = json.loads(p.read_text())
        line = ".".join(t["version"].split(".")[:2])
        lines.setdefault(line, set()).add(json.dumps(C._content(t), sort_keys=True))
    same = sorted((k for k, v in lines.items() if len(v) == 1), key=C.vkey)
    if same != list(cat.unchanged_lines("vllm")):
        print("set `unchanged_lines` in rules/catalog/engines/vllm.yaml to:", json.dumps(same))


REPO_TABLES = HERE / "tables" / "vllm"

if __name__ == "__main__":
    main()
