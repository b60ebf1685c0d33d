"""kvlint's SGLang verdicts agree with the truth tables derived by running each release's code.

For every catalogued SGLang release with a table under tools/derive/tables/sglang/ (written by
tools/derive/sglang_truth.py from the release's own ServerArgs resolution) and every grid cell
(GPU x model architecture x attention backend, `auto` included, x kv_cache_dtype),
tools/derive/sglang_compare.py puts a manifest-equivalent document through kvlint's resolve stage
and rules and compares: accepted or refused (and the reason class), the backend `auto` ends up
with, the backend after SGLang's rewrites, the kv_cache_dtype after them, the page size. Every
disagreement must be one that tools/derive/known_disagreements_sglang.yaml lists with its reason;
a new one fails, and so does a listed one that no longer occurs or occurs in other releases.

Offline: the tables are committed; nothing is downloaded.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
DERIVE = REPO / "tools" / "derive"
sys.path.insert(0, str(DERIVE))

import sglang_compare as C  # noqa: E402


@pytest.fixture(scope="module")
def comparison():
    order, counts, found = C.compare_all()
    return order, counts, {C.key_text(k): sorted(e["releases"], key=C.vkey) for k, e in found.items()}


def _known() -> dict:
    doc = yaml.safe_load(C.KNOWN.read_text(encoding="utf-8"))
    return {e["key"]: e for e in doc["disagreements"]}


def test_every_catalogued_release_with_a_table_is_compared(comparison) -> None:
    order, counts, _ = comparison
    # the four releases the catalog lists from the wheels, each with its table
    assert {"0.4.10.post2", "0.5.2", "0.5.9", "0.5.23"} <= set(order)
    for v in order:
        doc = json.loads((C.TABLES / f"{v}.json").read_text())
        n = sum(len(d) for g in doc["grid"].values() for m in g.values() for d in m.values())
        assert counts[v]["cells"] == n and counts[v]["compared"] + counts[v]["weights_refused"] == n
        assert counts[v]["compared"] > 0.8 * n, (v, counts[v])  # gpt-oss's mxfp4 weights


def test_each_known_disagreement_has_a_reason() -> None:
    for key, e in _known().items():
        reason = (e.get("reason") or "").strip()
        assert reason.startswith(("derivation limit: ", "open: ")), key
        assert e.get("releases"), key


def test_no_new_disagreement(comparison) -> None:
    _, _, found = comparison
    known = _known()
    new = {k: r for k, r in found.items() if k not in known}
    assert not new, "kvlint's SGLang verdicts disagree with the released code:\n" + "\n".join(
        f"- {k}  [releases {', '.join(r)}]" for k, r in sorted(new.items()))


def test_known_disagreements_still_occur_where_listed(comparison) -> None:
    _, _, found = comparison
    known = _known()
    stale = sorted(k for k in known if k not in found)
    assert not stale, "fixed (remove from known_disagreements_sglang.yaml):\n" + "\n".join(stale)
    moved = {k: (e["releases"], found[k]) for k, e in known.items()
             if [r.strip() for r in e["releases"].split(",")] != found[k]}
    assert not moved, "releases changed (listed, found):\n" + "\n".join(
        f"- {k}: {a} -> {b}" for k, (a, b) in sorted(moved.items()))


def test_the_comparison_reads_the_code_and_kvlint_independently() -> None:
    """Two cells read by hand in the releases' sources, so the comparison itself cannot drift:
    0.5.2 on H100 with no backend picks fa3 (model_runner.py model_specific_adjustment, Hopper
    with CUDA >= 12.3 and an fa3-default architecture), and trtllm_mha on H100 raises 'TRTLLM MHA
    backend is only supported on Blackwell GPUs' (server_args.py __post_init__)."""
    doc = json.loads((C.TABLES / "0.5.2.json").read_text())
    cell = C.table_cell(doc, "sm90", "llama", "auto", "auto")
    assert cell["refused"] is False and cell["backend"] == "fa3"
    refused = C.table_cell(doc, "sm90", "llama", "trtllm_mha", "auto")
    assert refused["refused"] and refused["class"] == "gpu"
    assert refused["where"].startswith("sglang/srt/server_args.py:")
    ours = C.Kvlint().verdict("0.5.2", "sm90", "meta-llama/Llama-3.1-8B-Instruct", "auto", "auto")
    assert ours["backend"] == "fa3" and not ours["refused"]
