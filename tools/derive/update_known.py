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
# "open" = a catalog fact still to correct (its code location is in catalog_disagreements.txt).
# Regenerate with `python tools/derive/update_known.py` (keeps the reasons of the ones still found).
"""
DEFAULT = ("open: not yet corrected in the catalog (found by tools/derive/compare_catalog.py; "
           "the code location is in catalog_disagreements.txt)")


ROCM_NO_VALIDATION = (
    "ROCm before 0.18 never calls validate_configuration: RocmPlatform.get_attn_backend_cls is hard-coded and "
    "returns the named backend (vllm/platforms/rocm.py v0.15.0 L229-339), so the class's answer is not what the "
    "engine does there; the catalog keeps the backend's own lists")
FLASHINFER_SINKS_OFFLINE = (
    "derivation limit: FlashInfer's attention sinks need TRTLLM kernels whose cubins come from the flashinfer-cubin "
    "package or NVIDIA's artifactory (vllm/utils/flashinfer.py has_nvidia_artifactory); releases whose wheel does not "
    "require flashinfer-cubin are derived offline, so the table says 'no sinks' where a deployed engine takes them "
    "(the catalog's FLASHINFER sinks gate, cited per release)")
ROCM_TRITON_STUB = (
    "derivation limit: on ROCm 0.32-0.33 the selector imports a Triton kernel at selection time and the stubbed "
    "triton has no tl.bfloat16; the code's answer there is unknown, not 'no backend'")


def auto_reason(key: tuple, cells: list) -> str:
    """A reason that follows from where the disagreement is (all its cells), or ""."""
    kind, subject, what, detail = key
    rocm = all(c[1].startswith("gfx") for c in cells)
    if "triton.language' has no attribute 'bfloat16'" in detail and rocm:
        return ROCM_TRITON_STUB
    if kind == "accept" and rocm and all(C.vkey(c[0]) < C.vkey("0.18.0") for c in cells):
        return ROCM_NO_VALIDATION
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
