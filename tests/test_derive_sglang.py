"""SGLang derivations (tools/derive/sglang_*.py).

(a) The truth-table derivation end to end, offline, on a tiny fake `sglang/srt/server_args.py`
    (tests/fixtures/derive_sglang/fakesglang): the stubs, the child process, provenance and the
    deterministic assembled document.
(b) kvlint's SGLang token count and default mem_fraction_static against SGLang 0.5.2's and
    0.5.23's own pool sizing, recorded by tools/derive/sglang_pool.py in
    tests/data/sglang_pool/<release>.json. Known disagreements are strict xfails that say what
    SGLang does and kvlint does not.
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from capacity_factories import H100, alternating_layers, deployment, dense_layers, gemma3_layers, mla_layers, model
from kvlint.capacity import compute
from kvlint.catalog import load_catalogs
from kvlint.deployment import GpuInfo

REPO = Path(__file__).resolve().parents[1]
FAKE = REPO / "tests" / "fixtures" / "derive_sglang" / "fakesglang"
POOL = REPO / "tests" / "data" / "sglang_pool"
sys.path.insert(0, str(REPO / "tools" / "derive"))

import sglang_truth  # noqa: E402


@pytest.fixture(scope="module")
def fake_parts(tmp_path_factory):
    # The child runs SGLang's code on CPU torch made to report a fake GPU (tools/derive/
    # sglang_stubs.py install_device): without torch (not a test dependency) these tests skip.
    pytest.importorskip("torch", reason="the SGLang derivation runs on CPU torch, which is not installed")
    tmp = tmp_path_factory.mktemp("truth")
    return [sglang_truth.run_child(FAKE, gpu, tmp / f"{gpu}.json") for gpu in ("sm90", "sm100")]


def _cell(doc, gpu, model_key, backend, dtype):
    return sglang_truth.outcome(doc, gpu, model_key, backend, dtype)


def test_fake_release_end_to_end(fake_parts):
    assert all("child_error" not in p for p in fake_parts), [p.get("child_error") for p in fake_parts]
    doc = sglang_truth.assemble("0.0.0-fake", FAKE, fake_parts)
    assert doc["axes"]["kv_cache_dtype"] == ["auto", "fp8_e5m2", "fp8_e4m3"]
    assert doc["axes"]["attention_backend"][0] == "auto"
    # auto: fa3 on Hopper, flashinfer elsewhere (is_flashinfer_available answered True)
    assert _cell(doc, "sm90", "llama", "auto", "auto")["attention_backend"] == "fa3"
    assert _cell(doc, "sm100", "llama", "auto", "auto")["attention_backend"] == "flashinfer"
    # the fa3 + e5m2 rewrite, with the assigning line of the fake release
    cell = _cell(doc, "sm90", "qwen3", "fa3", "fp8_e5m2")
    assert cell["attention_backend"] == "triton"
    rewrite = [r for r in cell["rewrites"] if r[0] == "attention_backend"]
    assert rewrite and rewrite[-1][1:3] == ["fa3", "triton"]
    assert rewrite[-1][3].startswith("sglang/srt/server_args.py:__post_init__:")
    assert cell["warnings"][0][0].startswith("FlashAttention3 only supports fp8_e4m3")
    # refusals carry the exception and where it was raised
    refused = _cell(doc, "sm90", "llama", "trtllm_mha", "auto")
    assert not refused["accepted"] and refused["error"]["type"] == "ValueError"
    assert refused["error"]["where"].startswith("sglang/srt/server_args.py:__post_init__:")
    assert _cell(doc, "sm100", "llama", "trtllm_mha", "auto")["page_size"] == 64
    assert not _cell(doc, "sm100", "gpt_oss", "flashinfer", "auto")["accepted"]
    # defaults: the fake's mem_fraction_static formula evaluated per memory size and TP
    assert doc["defaults"]["80GB_tp1"]["mem_fraction_static"] == round((81920 - 10 * 1024) / 81920, 3)
    assert doc["flags"]["tp_size"]["options"] == ["--tensor-parallel-size", "--tp-size"]
    assert "transformers" in doc["stubs"]["auto_stubbed_modules"]
    # deterministic
    again = sglang_truth.assemble("0.0.0-fake", FAKE, fake_parts)
    assert json.dumps(doc, sort_keys=True) == json.dumps(again, sort_keys=True)


def test_committed_truth_tables_are_well_formed():
    files = sorted((REPO / "tools" / "derive" / "tables" / "sglang").glob("*.json"))
    assert files, "no derived SGLang tables committed"
    for f in files:
        doc = json.loads(f.read_text())
        assert doc["format"] == sglang_truth.FORMAT and doc["release"] == f.stem
        n = len(doc["outcomes"])
        for gpu in doc["grid"].values():
            for backends in gpu.values():
                for dtypes in backends.values():
                    assert all(0 <= i < n for i in dtypes.values())
        for o in doc["outcomes"]:  # v2: rewrite and warning records stored once, cells index them
            assert all(0 <= i < len(doc["rewrite_list"]) for i in o["rewrites"])
            assert all(0 <= i < len(doc["warning_list"]) for i in o["warnings"])
        assert f.read_text() == json.dumps(doc, sort_keys=True, separators=(",", ":")) + "\n"


# ---- (b) kvlint vs SGLang 0.5.2's own pool sizing ------------------------------------------------

GEOMETRY = {
    "meta-llama/Llama-3.1-8B-Instruct": lambda: model("llama-3.1-8b", dense_layers(32, 8, 128), heads=32),
    "meta-llama/Llama-3.1-70B-Instruct": lambda: model("llama-3.1-70b", dense_layers(80, 8, 128), heads=64),
    "Qwen/Qwen3-32B": lambda: model("qwen3-32b", dense_layers(64, 8, 128), heads=64, max_pos=40960),
    "Qwen/Qwen3-8B": lambda: model("qwen3-8b", dense_layers(36, 8, 128), heads=32, max_pos=40960),
    "mistralai/Mistral-7B-Instruct-v0.3": lambda: model("mistral-7b", dense_layers(32, 8, 128), heads=32,
                                                        max_pos=32768),
    "google/gemma-3-27b-it": lambda: model("gemma-3-27b", gemma3_layers(62, 16, 128, 1024), heads=32),
    "openai/gpt-oss-20b": lambda: model("gpt-oss-20b", alternating_layers(24, 8, 64, 128), heads=64),
    "openai/gpt-oss-120b": lambda: model("gpt-oss-120b", alternating_layers(36, 8, 64, 128), heads=64),
    "deepseek-ai/DeepSeek-V3": lambda: model("deepseek-v3", mla_layers(61), heads=128, max_pos=163840,
                                             mla=(512, 64)),
}

KNOWN = {
}


def _pool_cases(release):
    path = POOL / f"{release}.json"
    if not path.is_file():
        return []
    doc = json.loads(path.read_text())
    out = []
    for case in doc["cases"]:
        name = case["input"]["name"]
        marks = [pytest.mark.xfail(strict=True, reason=KNOWN[name])] if name in KNOWN else []
        out.append(pytest.param(case, id=name, marks=marks))
    return out


@pytest.mark.parametrize("case", _pool_cases("0.5.2"))
def test_kvlint_matches_sglang_0_5_2_pool(case):
    assert "error" not in case, case.get("error")
    inp, got = case["input"], case["sglang"]
    prof = got["profile_max_num_token"]
    fmt = "bf16" if inp["kv"] == "auto" else inp["kv"]
    pool_bytes = int(prof["rest_memory"] * (1 << 30))
    dep = deployment(GEOMETRY[inp["model"]](), fmt, engine="sglang", version="0.5.2", tp=inp["tp"],
                     kv_cache_memory=pool_bytes, block_size=case["server_args"]["page_size"],
                     max_model_len=4096)
    # --max-total-tokens caps the pool (model_runner.py init_memory_pool): serving.max_total_tokens
    dep = replace(dep, max_total_tokens=inp.get("max_total_tokens"), **_swa_switches(inp))
    e = compute(dep).engine
    assert e.groups[0].bytes_per_token == prof["cell_size"]  # same cell size as SGLang
    assert e.kv_cache_tokens == got["max_total_num_tokens"]


# The fake GPUs of tools/derive/sglang_stubs.py (GPUS) the pool cases ran on, as kvlint sees them.
POOL_GPUS = {
    "sm90": H100,
    "sm100": GpuInfo("B200-180GB", "nvidia", 192265846784, (10, 0), "sm100", "e4m3", True),
    "sm120": GpuInfo("RTX-PRO-6000", "nvidia", 102641451008, (12, 0), "sm120", "e4m3", True),
}


@pytest.mark.parametrize("case", _pool_cases("0.5.23"))
def test_kvlint_matches_sglang_0_5_23_pool(case):
    """0.5.23 sizes the pool in KVCacheConfigurator (mem_cache/kv_cache_configurator.py) and its
    pool configurators (model_executor/pool_configurator.py); tools/derive/sglang_pool.py ran them.
    The storage format is the catalog's for the case's --kv-cache-dtype (mxfp8 -> sglang_mxfp8,
    nvfp4 -> sglang_nvfp4, fp4_mx_block16 -> sglang_fp4), so the catalog mapping is under test too."""
    assert "error" not in case, case.get("error")
    inp, got = case["input"], case["sglang"]
    fmt = "bf16" if inp["kv"] == "auto" else load_catalogs(()).engines.release("sglang", "0.5.23").dtype(inp["kv"]).format
    pool_bytes = got["profile_available_bytes"]["_return"]
    dep = deployment(GEOMETRY[inp["model"]](), fmt, engine="sglang", version="0.5.23", tp=inp["tp"],
                     kv_cache_memory=pool_bytes, block_size=case["server_args"]["page_size"],
                     max_model_len=4096, gpu=POOL_GPUS[inp.get("gpu", "sm90")], kv_dtype=inp["kv"])
    dep = replace(dep, max_total_tokens=inp.get("max_total_tokens"), requested_backend=inp.get("backend") or "auto",
                  **_swa_switches(inp))
    e = compute(dep).engine
    if not case["is_hybrid_swa"]:
        assert e.groups[0].bytes_per_token == got["cell_size"]  # same cell size as SGLang
    assert e.kv_cache_tokens == got["max_total_num_tokens"]
    # the sliding-window pool: none when SGLang has no hybrid pool, else ratio x the full pool's tokens
    assert e.swa_pool_tokens == (got["swa_max_total_num_tokens"] if case["is_hybrid_swa"] else None)


def _swa_switches(inp):
    """--swa-full-tokens-ratio and --disable-hybrid-swa-memory of a pool case, as the manifest's
    serving.swa_full_tokens_ratio and serving.disable_hybrid_swa_memory reach the Deployment."""
    return {"swa_full_tokens_ratio": inp.get("swa_full_tokens_ratio"),
            "disable_hybrid_swa_memory": bool(inp.get("disable_hybrid_swa_memory"))}


def test_swa_switch_cases_change_sglangs_pool():
    """The switch cases are not vacuous: in 0.5.23 each ratio moves SGLang's own full-pool token
    count away from the same model's default-ratio case, and disabling the hybrid pool gives
    the one-pool count; in 0.5.2, which turns gpt-oss's hybrid pool off itself, neither changes it."""
    for release, moves in (("0.5.23", True), ("0.5.2", False)):
        cases = {c["input"]["name"]: c for c in json.loads((POOL / f"{release}.json").read_text())["cases"]}
        for name, base in (("gptoss20b-h100-bf16-swa05", "gptoss20b-h100-bf16"),
                           ("gptoss20b-h100-bf16-noswa", "gptoss20b-h100-bf16"),
                           ("gptoss20b-h100-fp8-swa1", "gptoss20b-h100-fp8")):
            changed = (cases[name]["sglang"]["max_total_num_tokens"]
                       != cases[base]["sglang"]["max_total_num_tokens"])
            assert changed is moves, (release, name)


def test_sglang_0_5_23_pool_data_is_sglangs_own_arithmetic():
    """rest = available - pre_model_load_memory x (1 - mfs) - multimodal reservation (GiB), as the
    recorded locals of _profile_available_bytes say; the data is not kvlint's output."""
    for case in json.loads((POOL / "0.5.23.json").read_text())["cases"]:
        prof = case["sglang"]["profile_available_bytes"]
        slack = case["input"]["total_gib"] * (1 - case["input"]["mfs"])
        assert abs(prof["slack_gb"] - slack) < 1e-9
        assert abs(prof["rest_memory"] - (case["input"]["avail_gib"] - slack - prof["mm_reservation_gb"])) < 1e-9
        assert prof["_return"] == int(prof["rest_memory"] * (1 << 30))


def _fraction_labels(release):
    path = POOL / f"{release}.json"
    return sorted(json.loads(path.read_text())["default_mem_fraction_static"]) if path.is_file() else []


@pytest.mark.parametrize("release, label", [(r, label) for r in ("0.5.2", "0.5.23") for label in _fraction_labels(r)])
def test_default_mem_fraction_static_per_release(release, label):
    """kvlint's default mem_fraction_static against the value the release's ServerArgs resolved
    (0.5.2: the reserve tiers; 0.5.23: the chunked-prefill and CUDA-graph heuristic)."""
    from capacity_factories import H100

    got = json.loads((POOL / f"{release}.json").read_text())["default_mem_fraction_static"][label]
    dev = deployment(GEOMETRY["meta-llama/Llama-3.1-8B-Instruct"](), engine="sglang", version=release,
                     tp=got["tp"], kv_cache_memory=None,
                     gpu=replace(H100, memory_bytes=got["gpu_memory_mib"] << 20), weights=1 << 30)
    dev = replace(dev, max_num_seqs=got.get("max_running_requests"))  # --max-running-requests
    note = next(a for a in compute(dev).assumptions if a.startswith("mem_fraction_static defaulted"))
    assert f"'s {got['mem_fraction_static']} " in note, (label, note)


def test_sglang_pool_data_is_sglangs_own_arithmetic():
    """The recorded figures are internally consistent with profile_max_num_token's formula."""
    for case in json.loads((POOL / "0.5.2.json").read_text())["cases"]:
        prof = case["sglang"]["profile_max_num_token"]
        rest = prof["available_gpu_memory"] - prof["total_gpu_memory"] * (1 - case["input"]["mfs"])
        assert abs(rest - prof["rest_memory"]) < 1e-9
        assert prof["max_num_token"] == int(prof["rest_memory"] * (1 << 30) // prof["cell_size"])


@pytest.mark.parametrize("release", ["0.4.10.post2", "0.5.1", "0.5.2"])
def test_default_mem_fraction_static_is_sglangs(release):
    """kvlint's default mem_fraction_static (the catalog's reserve tiers) equals the value SGLang
    itself computed for every memory size and TP in the derived table."""
    from capacity_factories import H100

    doc = json.loads((REPO / "tools" / "derive" / "tables" / "sglang" / f"{release}.json").read_text())
    for key, got in sorted(doc["defaults"].items()):
        gib, tp = key.split("GB_tp")
        dev = deployment(GEOMETRY["meta-llama/Llama-3.1-8B-Instruct"](), engine="sglang", version=release,
                         tp=int(tp), kv_cache_memory=None, gpu=replace(H100, memory_bytes=int(gib) << 30),
                         weights=1 << 30)
        result = compute(dev)
        note = next(a for a in result.assumptions if a.startswith("mem_fraction_static defaulted"))
        assert f"'s {got['mem_fraction_static']} " in note, (key, note)
