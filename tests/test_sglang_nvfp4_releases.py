"""SGLang 0.5.16-0.5.20's block-scaled KV dtypes (nvfp4, fp4_mx_block16, mxfp8), from the releases'
own code.

(a) The bytes per token. Both releases price any FP4 recipe with one hand formula in
    model_executor/pool_configurator.py `_compute_cell_size` (v0.5.16 L187-203 MLA, L260-277 MHA;
    the recipe's own compute_cell_size is asked only from 0.5.21), and an MLA model's mxfp8 has no
    scale term there. The expected numbers below are that formula worked by hand for the model's
    config; tests/data/sglang_pool/0.5.16.json and 0.5.20.json (tools/derive/sglang_pool.py: the
    release's own configurator) must say the same, and kvlint's capacity must too.
(b) The verdicts: nvfp4 on an MLA model is the MLA FP4 pool with the block-16 MX quantizer whatever
    the recipe (memory_pool.py v0.5.16 MLATokenToKVPoolFP4), on the KV4 MLA backends (cutlass_mla,
    flashinfer, trtllm_mla: server_args.py v0.5.16 L5125); nvfp4 on triton / torch_native /
    flex_attention is taken by the argument stage but cannot be read there (no access for the
    NVFP4 recipe: fp4_kv_cache_quant_method.py v0.5.16 L782-785), which 0.5.21 refuses outright;
    mxfp8 on an MLA model runs as plain FP8 (KV343 warns), on a non-MLA model only through FA4 with
    the model's MXFP8 query scales (KV342).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from capacity_factories import deployment
from kvlint.capacity import compute
from kvlint.catalog import load_catalogs
from test_derive_sglang import GEOMETRY, POOL_GPUS

REPO = Path(__file__).resolve().parents[1]
POOL = REPO / "tests" / "data" / "sglang_pool"
RELEASES = ("0.5.16", "0.5.20")


def mha_fp4_cell(kv_heads: int, head_dim: int, layers: int) -> int:
    """pool_configurator.py v0.5.16 L261-277 (v0.5.20 L404-419) for float4_e2m1fn_x2 (element size
    1): the K+V data halved, one scale byte per 16 K elements counted for K and V, plus one shared
    FP8 dequant workspace of Hkv x D for K and for V (not per layer), for nvfp4 and fp4_mx_block16
    alike."""
    data = kv_heads * (head_dim + head_dim) * layers // 2
    scales = kv_heads * head_dim * layers * 2 // 16
    workspace = kv_heads * head_dim * 2
    return data + scales + workspace


def mla_fp4_cell(kv_lora_rank: int, rope: int, layers: int) -> int:
    """pool_configurator.py v0.5.16 L187-203: the latent halved plus (kv_lora_rank + rope) // 16
    scale bytes per layer."""
    return (kv_lora_rank + rope) * layers // 2 + (kv_lora_rank + rope) // 16 * layers


def mla_fp8_cell(kv_lora_rank: int, rope: int, layers: int) -> int:
    """L187-192 at one byte per element: the mxfp8 torch dtype is float8_e4m3fn (mem_cache/
    kv_cache_dtype.py v0.5.16 L53-54) and the MLA branch has no mxfp8 term."""
    return (kv_lora_rank + rope) * layers


# From the models' configs: Llama-3.1-8B 8 KV heads x 128 x 32 layers, Qwen3-32B 8 x 128 x 64,
# DeepSeek-V3 kv_lora_rank 512 + qk_rope_head_dim 64, 61 layers.
EXPECTED = {
    "llama8b-b200-nvfp4-triton-r516": mha_fp4_cell(8, 128, 32),
    "llama8b-b200-fp4mx16-triton-r516": mha_fp4_cell(8, 128, 32),
    "llama8b-b200-nvfp4-trtllm-r516": mha_fp4_cell(8, 128, 32),
    "llama8b-rtx6000-nvfp4-triton-r516": mha_fp4_cell(8, 128, 32),
    "qwen3-32b-b200-nvfp4-torch-native-r516": mha_fp4_cell(8, 128, 64),
    "deepseekv3-b200-tp8-nvfp4-flashinfer-r516": mla_fp4_cell(512, 64, 61),
    "deepseekv3-b200-tp8-fp4mx16-flashinfer-r516": mla_fp4_cell(512, 64, 61),
    "deepseekv3-b200-tp8-nvfp4-cutlass-mla-r516": mla_fp4_cell(512, 64, 61),
    "deepseekv3-b200-tp8-mxfp8-triton-r516": mla_fp8_cell(512, 64, 61),
    "deepseekv3-b200-tp8-mxfp8-flashinfer-r516": mla_fp8_cell(512, 64, 61),
    "deepseekv3-b200-tp8-mxfp8-cutlass-mla-r516": mla_fp8_cell(512, 64, 61),
}

# 0.5.16-0.5.20 add the Hkv x D x 2 workspace to every MHA FP4 cache (Llama-3.1-8B: 38,912 B/token);
# kvlint's SGLang capacity reads that from the catalog default fp4_mha_dequant_workspace.


def test_hand_formula_numbers():
    assert mha_fp4_cell(8, 128, 32) == 32768 + 4096 + 2048 == 38912
    assert mla_fp4_cell(512, 64, 61) == 17568 + 2196 == 19764
    assert mla_fp8_cell(512, 64, 61) == 35136


def _cases(release):
    doc = json.loads((POOL / f"{release}.json").read_text())
    return {c["input"]["name"]: c for c in doc["cases"] if c["input"]["name"] in EXPECTED}


@pytest.mark.parametrize("release", RELEASES)
def test_release_configurator_agrees_with_the_hand_formula(release):
    """The release's own configurator (the pool data) gives the hand-computed cell for every case,
    so nvfp4 and fp4_mx_block16 cost the same on 0.5.16-0.5.20, whatever the backend or GPU."""
    cases = _cases(release)
    expected = {n for n in EXPECTED if release == "0.5.16" or "cutlass-mla" not in n}  # gone from 0.5.20
    assert set(cases) == expected
    for name, case in cases.items():
        assert "error" not in case, (name, case.get("error"))
        assert case["sglang"]["cell_size"] == EXPECTED[name], name
        assert case["sglang"]["max_total_num_tokens"] == (
            case["sglang"]["profile_available_bytes"]["_return"] // EXPECTED[name] // case["server_args"]["page_size"]
            * case["server_args"]["page_size"])


def _kvlint_tokens(release, case):
    inp = case["input"]
    fmt = load_catalogs(()).engines.release("sglang", release).dtype(inp["kv"]).format
    dep = deployment(GEOMETRY[inp["model"]](), fmt, engine="sglang", version=release, tp=inp["tp"],
                     kv_cache_memory=case["sglang"]["profile_available_bytes"]["_return"],
                     block_size=case["server_args"]["page_size"], max_model_len=4096,
                     gpu=POOL_GPUS[inp.get("gpu", "sm90")], kv_dtype=inp["kv"])
    dep = replace(dep, requested_backend=inp.get("backend") or "auto")
    e = compute(dep).engine
    return e.groups[0].bytes_per_token, e.kv_cache_tokens


def _params():
    out = []
    for release in RELEASES:
        for name in sorted(_cases(release)):
            out.append(pytest.param(release, name, id=f"{release}-{name}"))
    return out


@pytest.mark.parametrize("release, name", _params())
def test_kvlint_capacity_matches_the_release(release, name):
    case = _cases(release)[name]
    cell, tokens = _kvlint_tokens(release, case)
    assert cell == EXPECTED[name]
    assert tokens == case["sglang"]["max_total_num_tokens"]


# ------------------------------------------------------------------------------------- verdicts


def _check(version, backend, model, dtype, gpu="B200-180GB"):
    from kvlint.resolve import resolve
    from kvlint.rulebook import load_rulebook

    catalogs = load_catalogs(())
    data = {"apiVersion": "kvlint/v1", "kind": "Deployment", "metadata": {"name": "c"},
            "engine": {"name": "sglang", "version": version, "attention_backend": backend},
            "hardware": {"gpu": gpu}, "model": {"name": model}, "kv_cache": {"dtype": dtype}}
    res = resolve(data, "c.yaml", None, catalogs)
    book = load_rulebook(())
    codes = sorted({rule.code for rule, _, _ in book.evaluate(res.facts)})
    return res, codes


DSV3 = "deepseek-ai/DeepSeek-V3"
LLAMA = "meta-llama/Llama-3.1-8B-Instruct"


@pytest.mark.parametrize("version", ["0.5.16", "0.5.18", "0.5.20"])
@pytest.mark.parametrize("dtype", ["nvfp4", "fp4_mx_block16"])
def test_mla_fp4_on_flashinfer_from_0_5_16(version, dtype):
    _, codes = _check(version, "flashinfer", DSV3, dtype)
    assert "KV301" not in codes, codes


@pytest.mark.parametrize("version", ["0.5.16", "0.5.19"])
@pytest.mark.parametrize("dtype", ["nvfp4", "fp4_mx_block16", "mxfp8"])
def test_mla_block_scaled_on_cutlass_mla(version, dtype):
    _, codes = _check(version, "cutlass_mla", DSV3, dtype)
    assert "KV301" not in codes, codes


@pytest.mark.parametrize("version", ["0.5.16", "0.5.20"])
@pytest.mark.parametrize("backend", ["triton", "torch_native", "flex_attention"])
def test_mha_nvfp4_without_an_nvfp4_reader_is_refused(version, backend):
    """The argument stage of 0.5.16-0.5.20 takes it, the backend cannot read the NVFP4 pool;
    0.5.21 refuses it ('backend ... provides neither'). fp4_mx_block16 has a plain read there."""
    assert "KV301" in _check(version, backend, LLAMA, "nvfp4")[1]
    assert "KV301" not in _check(version, backend, LLAMA, "fp4_mx_block16")[1]


@pytest.mark.parametrize("version", ["0.5.16", "0.5.20", "0.5.23"])
@pytest.mark.parametrize("backend", ["triton", "flashinfer", "flashmla", "torch_native", "flex_attention"])
def test_mxfp8_on_mla_runs_as_plain_fp8_with_a_warning(version, backend):
    """Accepted where fp8_e4m3 is, warned (KV343), planned at fp8_e4m3's bytes."""
    res, codes = _check(version, backend, DSV3, "mxfp8")
    fp8_codes = _check(version, backend, DSV3, "fp8_e4m3")[1]
    assert "KV301" not in codes and "KV342" not in codes, codes
    assert "KV343" in codes and "KV343" not in fp8_codes
    assert res.facts["kv_cache"]["format"] == "sglang_mxfp8"


@pytest.mark.parametrize("version", ["0.5.16", "0.5.20", "0.5.22"])
def test_mxfp8_on_a_non_mla_model_needs_model_q_scales_from_0_5_16(version):
    """KV342: the FA4 read needs MXFP8 query scales only Inkling supplies, the same code from 0.5.16
    (flashattention_backend.py v0.5.16 L349-369)."""
    assert "KV342" in _check(version, "fa4", LLAMA, "mxfp8")[1]
    assert "KV342" in _check(version, "triton", LLAMA, "mxfp8")[1]
    assert "KV343" not in _check(version, "triton", LLAMA, "mxfp8")[1]
