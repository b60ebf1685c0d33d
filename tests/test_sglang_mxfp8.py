"""SGLang 0.5.23's mxfp8 KV cache: where the release refuses it, against the truth table derived by
running the release's own argument resolution (tools/derive/tables/sglang/0.5.23.json,
tools/derive/sglang_truth.py), and the run-time limit the table cannot show (KV342)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools" / "derive"))

import sglang_compare  # noqa: E402

HOOK = "kv_cache_hook.py:handle_mxfp8_kv_cache_compatibility"


@pytest.fixture(scope="module")
def table():
    return json.loads((sglang_compare.TABLES / "0.5.23.json").read_text())


@pytest.fixture(scope="module")
def kvlint():
    return sglang_compare.Kvlint()


def _mxfp8_cells(doc):
    for gpu, by_model in doc["grid"].items():
        for mkey, by_backend in by_model.items():
            for backend, by_dtype in by_backend.items():
                if "mxfp8" in by_dtype:
                    yield gpu, mkey, backend, sglang_compare.table_cell(doc, gpu, mkey, backend, "mxfp8")


def test_mxfp8_gpu_refusal_is_kv323_on_every_backend(table, kvlint):
    """The release refuses mxfp8 off Blackwell in handle_mxfp8_kv_cache_compatibility, whatever the
    backend (MI300X included); kvlint says so with KV323 (the catalog dtype's `requires`)."""
    refused = [(g, m, b) for g, m, b, code in _mxfp8_cells(table) if code["refused"] and HOOK in code["where"]]
    assert len(refused) > 500 and {g for g, _, _ in refused} == {"sm80", "sm86", "sm89", "sm90", "gfx942"}
    models = table["axes"]["model"]
    missed = [(g, m, b) for g, m, b in refused
              if "KV323" not in kvlint.verdict("0.5.23", g, models[m], b, "mxfp8")["codes"]]
    assert not missed, missed[:10]


def test_mxfp8_on_blackwell_is_not_refused_for_the_gpu(table, kvlint):
    """On SM100/SM120 the hook passes: a KV323 there would have to come from the backend, never
    from the dtype gate's message."""
    models = table["axes"]["model"]
    for g, m, b, code in _mxfp8_cells(table):
        if g in ("sm100", "sm120") and not code["refused"]:
            from kvlint.resolve import resolve

            data = {"apiVersion": "kvlint/v1", "kind": "Deployment", "metadata": {"name": "c"},
                    "engine": {"name": "sglang", "version": "0.5.23", "attention_backend": b},
                    "hardware": {"gpu": sglang_compare.GPU_IDS[g]}, "model": {"name": models[m]},
                    "kv_cache": {"dtype": "mxfp8"}}
            reason = resolve(data, "c.yaml", None, kvlint.catalogs).facts["backend"].get("cc_reason") or ""
            assert "mxfp8 does not run on" not in reason, (g, m, b, reason)


def test_fa4_takes_mxfp8_on_blackwell_like_the_release(table, kvlint):
    """fa4 is the backend SGLang names for mxfp8 (arg_groups/fields/model.py help); the argument
    stage takes it, with page 128 on SM100 only (overrides.py _fa4_page_constraint). kvlint: no
    backend or dtype refusal, the same page; only KV342 (the model supplies no MXFP8 query scales),
    which the table cannot show."""
    models = table["axes"]["model"]
    pages = {}
    for g in ("sm100", "sm120"):
        code = sglang_compare.table_cell(table, g, "llama", "fa4", "mxfp8")
        assert not code["refused"]
        ours = kvlint.verdict("0.5.23", g, models["llama"], "fa4", "mxfp8")
        assert ours["codes"] == ["KV342"], ours
        assert ours["page"] == code["page"]
        pages[g] = code["page"]
    assert pages == {"sm100": 128, "sm120": 1}
