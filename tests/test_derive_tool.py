"""Offline end-to-end test of tools/derive (the vLLM truth-table derivation).

A tiny fake release under tests/fixtures/derive/fake-vllm is laid out like a vLLM wheel
(vllm/config/cache.py CacheDType, v1/attention backends with supports_* methods, a
registry, a selector, a platform that imports the compiled `vllm._C`, EngineArgs). The
pipeline runs on it for real: a subprocess per device imports it under the stubs, asks
the backend classes and the selector over the grid, and writes the JSON table with
provenance. No network: the release tree is given, nothing is downloaded.
"""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DERIVE = REPO / "tools" / "derive"
FAKE = REPO / "tests" / "fixtures" / "derive" / "fake-vllm"
sys.path.insert(0, str(DERIVE))

import table  # noqa: E402
import vllm_derive  # noqa: E402


def _src(t: dict, ref: str) -> str:
    """A provenance reference (qualname) resolved to "file:line qualname"."""
    return f"{t['sources'][ref]} {ref}"


def _line(rel: str, text: str) -> int:
    for n, line in enumerate((FAKE / rel).read_text().splitlines(), 1):
        if text in line:
            return n
    raise AssertionError(f"{text!r} not in {rel}")


@pytest.fixture(scope="module")
def derived(tmp_path_factory) -> dict:
    out_dir = tmp_path_factory.mktemp("derived")
    runs = [("sm80", "sm80", False), ("sm90", "sm90", False)]
    path = vllm_derive.derive("0.0.1", root=FAKE, out_dir=out_dir, runs=runs, extra_path=[], timeout=120)
    text = path.read_text()
    return {"text": text, "table": json.loads(text)}


def test_table_is_canonical_json(derived):
    t = derived["table"]
    assert derived["text"] == json.dumps(t, sort_keys=True, separators=(",", ":")) + "\n"
    assert t["schema"] == vllm_derive.SCHEMA and t["version"] == "0.0.1"
    assert t["unknown"] == []
    assert t["wheel"] == ["vllm-0.0.1-fake.whl"]
    assert "time" not in derived["text"].lower()


def test_cache_dtypes_read_from_the_literal(derived):
    dt = derived["table"]["cache_dtypes"]
    assert dt["values"] == ["auto", "bfloat16", "fp8"]
    t = derived["table"]
    assert _src(t, dt["where"]) == f"vllm/config/cache.py:{_line('vllm/config/cache.py', 'CacheDType =')} CacheDType"


def test_compiled_module_was_stubbed(derived):
    assert derived["table"]["stubs_used"] == ["vllm._C"]


def test_predicates_answered_per_device_with_provenance(derived):
    flash = derived["table"]["backends"]["FAKE_FLASH"]
    kv = flash["predicates"]["supports_kv_cache_dtype"]
    line = _line("vllm/v1/attention/backends/fake_flash.py", "def supports_kv_cache_dtype")
    assert _src(derived["table"], kv["where"]) == \
        f"vllm/v1/attention/backends/fake_flash.py:{line} FakeFlashBackend.supports_kv_cache_dtype"
    assert table.lookup(kv["answer"], {"device": "sm90", "kv_cache_dtype": "fp8"}) is True
    assert table.lookup(kv["answer"], {"device": "sm80", "kv_cache_dtype": "fp8"}) is False
    assert table.lookup(kv["answer"], {"device": "sm80", "kv_cache_dtype": "bfloat16"}) is True
    heads = flash["predicates"]["supports_head_size"]["answer"]
    assert heads == {"by": "head_size", "true": [64, 80, 96, 128, 192, 256]}
    sink = flash["predicates"]["supports_sink"]["answer"]
    assert table.lookup(sink, {"device": "sm90"}) is True and table.lookup(sink, {"device": "sm80"}) is False
    # inherited methods point at the base class
    triton = derived["table"]["backends"]["FAKE_TRITON"]["predicates"]
    assert triton["supports_kv_cache_dtype"]["where"] == "AttentionBackend.supports_kv_cache_dtype"


def test_validate_configuration_reasons(derived):
    v = derived["table"]["backends"]["FAKE_FLASH"]["validate"]
    line = _line("vllm/v1/attention/backend.py", "def validate_configuration")
    assert _src(derived["table"], v["where"]) == \
        f"vllm/v1/attention/backend.py:{line} AttentionBackend.validate_configuration"
    assert v["variants"] == ["plain", "has_sink"]
    reasons = v["reasons"]
    assert set(reasons) == {"head_size not supported", "kv_cache_dtype not supported", "sink setting not supported"}
    pt = {"device": "sm80", "variant": "plain", "kv_cache_dtype": "fp8", "head_size": 128, "block_size": 16}
    assert table.lookup(reasons["kv_cache_dtype not supported"], pt) is True
    assert table.lookup(reasons["kv_cache_dtype not supported"], dict(pt, device="sm90")) is False
    assert table.lookup(reasons["sink setting not supported"], dict(pt, variant="has_sink")) is True
    assert table.lookup(reasons["head_size not supported"], dict(pt, head_size=576)) is True
    assert derived["table"]["backends"]["FAKE_TRITON"]["validate"]["reasons"] == {}


def test_selection_runs_the_release_selector(derived):
    sel = derived["table"]["selection"]
    t = derived["table"]
    assert _src(t, sel["where"]).startswith("vllm/v1/attention/selector.py:")
    line = _line("vllm/platforms/cuda.py", "def _get_backend_priorities")
    assert _src(t, sel["priorities_where"]["cuda"]) == f"vllm/platforms/cuda.py:{line} _get_backend_priorities"
    tree = sel["tree"]
    pt = {"device": "sm90", "use_mla": False, "variant": "plain", "kv_cache_dtype": "fp8", "head_size": 128,
          "block_size": 16}
    assert table.lookup(tree, pt) == "FAKE_FLASH"
    assert table.lookup(tree, dict(pt, device="sm80")) == "FAKE_TRITON"  # priority order differs below SM90


def test_flags_and_defaults(derived):
    f = derived["table"]["flags"]
    assert f["flags"]["tensor_parallel_size"]["options"] == ["--tensor-parallel-size", "-tp"]
    assert f["flags"]["kv_cache_dtype"]["choices"] == ["auto", "bfloat16", "fp8"]
    assert f["flags"]["attention_backend"] == {"absent": True}
    assert f["defaults"]["gpu_memory_utilization"] == {"value": 0.9}


def test_compress_lookup_roundtrip():
    dims = ["a", "b", "c"]
    domains = {"a": [1, 2, 3], "b": ["x", "y"], "c": [False, True]}
    cells = {}
    for a, b, c in itertools.product(*domains.values()):
        cells[(a, b, c)] = "P" if (a == 1 or (b == "y" and c)) else ("Q" if a == 2 else "R")
    tree = table.compress(cells, dims, domains)
    for (a, b, c), want in cells.items():
        assert table.lookup(tree, {"a": a, "b": b, "c": c}) == want
    assert table.compress({(1,): True, (2,): False}, ["a"], {"a": [1, 2]}) == {"by": "a", "true": [1]}
    assert table.compress({(1,): "z", (2,): "z"}, ["a"], {"a": [1, 2]}) == "z"


@pytest.mark.parametrize("version", ["0.20.1", "0.33.0"])
def test_finalize_gives_the_committed_table_whatever_the_device_order(version):
    """`vllm_derive.py X` writes finalize(merge(...)), whose grid lists the devices in the probe's
    run order; `--renormalize` re-reads the sorted-keys JSON. Both must give the same bytes, or a
    fresh derivation of an unchanged release differs from its committed table (0.20.1 once did:
    'sm80,sm86,sm89,sm120' against 'sm120,sm80,sm86,sm89')."""
    committed = (DERIVE / "tables" / "vllm" / f"{version}.json").read_text()
    tab = json.loads(committed)
    devices = tab["grid"]["devices"]
    run_order = [run for run, _, _ in vllm_derive.RUNS if run in devices]
    assert sorted(run_order) == sorted(devices) and run_order != sorted(devices)
    tab["grid"]["devices"] = {run: devices[run] for run in run_order}
    again = vllm_derive.finalize(tab)
    assert json.dumps(again, sort_keys=True, separators=(",", ":")) + "\n" == committed
