"""`kvlint capacity` end to end: manifest in, the numbers vLLM itself logs out.

Expected values are vLLM's own published log (docs/features/quantization/quantized_kvcache.md,
Qwen3-4B on an L4 with vLLM 0.25.1, --max-model-len 32768): BF16 83,488 tokens / 2.55x, FP8
166,992 tokens / 5.10x, from an ~11.47 GiB pool. The pool is given exactly (kv_cache_memory) as
the block count times vLLM's bytes per block (16 tokens x 36 layers x 8 heads x 256 values x
2 or 1 bytes), so the test pins the whole path: manifest -> resolve -> capacity -> JSON.
"""

from __future__ import annotations

import json

import pytest
from conftest import CliRunner

from kvlint.cli import main

QWEN3_4B = """\
apiVersion: kvlint/v1
kind: Deployment
metadata:
  name: qwen3-4b-{dtype}-l4
engine:
  name: vllm
  version: "0.25.1"
hardware:
  gpu: L4
model:
  name: Qwen/Qwen3-4B
  geometry:
    num_layers: 36
    num_attention_heads: 32
    num_kv_heads: 8
    head_dim: 128
    max_position_embeddings: 40960
  kv_scales: {scales}
kv_cache:
  dtype: {dtype}
memory:
  kv_cache_memory: {pool}
serving:
  max_model_len: 32768
"""

SPEC_KEYS = {
    "per_token": {"payload_bytes", "scale_bytes", "total_bytes", "bf16_bytes", "naive_bytes"},
    "static_scales": {"kv_bytes", "qkv_bytes"},
    "sequence": {"tokens", "bytes", "bf16_bytes", "compression_vs_bf16"},
    "engine": {"pool_bytes_per_gpu", "block_size", "bytes_per_block", "num_blocks", "kv_cache_tokens", "max_concurrency"},
}


def run_capacity(tmp_path, text: str, *extra: str):
    path = tmp_path / "deploy.yaml"
    path.write_text(text)
    return CliRunner().invoke(main, ["capacity", *extra, str(path)])


@pytest.mark.parametrize(
    "dtype, scales, blocks, bytes_per_block, tokens, concurrency",
    [
        ("auto", "none", 5218, 16 * 36 * 8 * 256 * 2, 83_488, "2.55"),
        ("fp8", "per-tensor", 10437, 16 * 36 * 8 * 256 * 1, 166_992, "5.10"),
    ],
)
def test_qwen3_4b_l4_matches_vllm_log(tmp_path, dtype, scales, blocks, bytes_per_block, tokens, concurrency) -> None:
    pool = blocks * bytes_per_block
    result = run_capacity(tmp_path, QWEN3_4B.format(dtype=dtype, scales=scales, pool=pool), "--format", "json")
    assert result.exit_code == 0, result.output
    [document] = json.loads(result.stdout)
    engine = document["engine"]
    assert engine["pool_bytes_per_gpu"] == pool
    assert engine["block_size"] == 16
    assert engine["bytes_per_block"] == bytes_per_block
    assert engine["num_blocks"] == blocks
    assert engine["kv_cache_tokens"] == tokens
    assert f"{engine['max_concurrency']:.2f}" == concurrency
    assert document["name"] == f"qwen3-4b-{dtype}-l4"
    for section, keys in SPEC_KEYS.items():
        assert keys <= set(document[section]), section
        for key in keys:
            if key.endswith("bytes"):
                assert isinstance(document[section][key], int), (section, key)
    assert isinstance(document["assumptions"], list)


def test_table_shows_corrected_and_naive_side_by_side(tmp_path) -> None:
    text = QWEN3_4B.format(dtype="fp8", scales="per-tensor", pool=10437 * 16 * 36 * 8 * 256)
    result = run_capacity(tmp_path, text)
    assert result.exit_code == 0, result.output
    assert "166,992" in result.output
    assert "dtype-only estimate" in result.output
    assert "5.10x" in result.output


def test_unreadable_manifest_is_reported_not_crashed(tmp_path) -> None:
    result = run_capacity(tmp_path, "apiVersion: kvlint/v1\nkind: [unclosed\n", "--format", "json")
    assert result.exit_code == 1
    assert json.loads(result.stdout) == []
    assert "KV001" in result.stderr


GPT_OSS_SKIP_0_19 = """\
apiVersion: kvlint/v1
kind: Deployment
metadata:
  name: gpt-oss-20b-fp8-skip-sliding
engine:
  name: vllm
  version: "0.19.1"
  attention_backend: TRITON_ATTN
hardware:
  gpu: H100-SXM-80GB
model:
  name: openai/gpt-oss-20b
kv_cache:
  dtype: fp8
  skip_layers: [sliding_window]
memory:
  kv_cache_memory: 40GiB
serving:
  max_model_len: 131072
targets:
  planned_kv_tokens: 1000000
"""


def test_hybrid_before_0_21_gates_on_real_capacity_not_the_logged_line(tmp_path) -> None:
    """vLLM < 0.21 logs (num_blocks // groups) * min block size for hybrid models (#40691).

    Hand derivation (docs/capacity.md, vLLM's planning code at each release): gpt-oss-20b = 12 full + 12 sliding (W 128)
    layers, 8 KV heads, D 64. FP8 full layers 1,024 B/token, BF16 sliding 2,048 B/token; 0.19 page
    unification gives the FP8 layers block 32, so both pages are 32 KiB; two groups of 12 layers:
    393,216 B per block; 40 GiB // 393,216 = 109,226 blocks; logged = 109,226 // 2 * 16 = 873,808.
    Per request: 4,096 full blocks + (cdiv(127 + 8,192, 16) + 1) = 521 sliding blocks, so the
    pool holds 109,226 / 4,617 = 23.66 sequences of 131,072 tokens (about 3.1 M tokens): a plan of
    1 M tokens holds, although the logged line says 873,808.
    """
    path = tmp_path / "deploy.yaml"
    path.write_text(GPT_OSS_SKIP_0_19)
    capacity = CliRunner().invoke(main, ["capacity", "--format", "json", str(path)])
    engine = json.loads(capacity.stdout)[0]["engine"]
    assert engine["num_blocks"] == 109_226
    assert engine["bytes_per_block"] == 393_216
    assert engine["kv_cache_tokens"] == 873_808
    assert f"{engine['max_concurrency']:.2f}" == "23.66"
    check = CliRunner().invoke(main, ["check", "--output-format", "json", str(path)])
    codes = {d["code"] for d in json.loads(check.stdout)["diagnostics"]}
    assert "KV602" not in codes, check.output


@pytest.mark.parametrize(
    "engine, version, memory, expected",
    [
        # vLLM's default comes from the engine catalog for the release (vllm/config/cache.py: 0.92 from 0.20).
        ("vllm", "0.25.1", "", "gpu_memory_utilization defaulted to vLLM 0.25's 0.92"),
        ("vllm", "0.19.1", "", "gpu_memory_utilization defaulted to vLLM 0.19's 0.9"),
        ("vllm", "0.25.1", "  gpu_memory_utilization: 0.85\n", "x 0.85"),
        # Each engine's own knob is read under its own name (SGLang mem_fraction_static, TensorRT-LLM free_gpu_memory_fraction).
        ("sglang", "0.5.9", "  mem_fraction_static: 0.8\n", "mem_fraction_static 0.8"),
        ("tensorrt-llm", "1.2.1", "  free_gpu_memory_fraction: 0.75\n", "free_gpu_memory_fraction 0.75"),
        ("tensorrt-llm", "1.2.1", "", "free_gpu_memory_fraction defaulted to TensorRT-LLM's 0.9"),
    ],
)
def test_memory_fraction_is_read_per_engine(tmp_path, engine, version, memory, expected) -> None:
    dtype = {"vllm": "fp8", "sglang": "fp8_e4m3", "tensorrt-llm": "fp8"}[engine]
    text = (
        "apiVersion: kvlint/v1\nkind: Deployment\nmetadata:\n  name: m\n"
        f"engine:\n  name: {engine}\n  version: \"{version}\"\n"
        "hardware:\n  gpu: H100-SXM-80GB\nmodel:\n  name: meta-llama/Llama-3.1-8B-Instruct\n"
        f"kv_cache:\n  dtype: {dtype}\n" + ("memory:\n" + memory if memory else "")
    )
    result = run_capacity(tmp_path, text, "--format", "json")
    assumptions = " | ".join(json.loads(result.stdout)[0]["assumptions"])
    assert expected in assumptions, assumptions


def test_assumptions_say_when_gpu_memory_is_not_a_runtime_reading(tmp_path) -> None:
    """nvidia-smi totals (vllm-project/vllm#10511) exceed what CUDA reports by about 0.4-0.8 GiB."""
    base = (
        "apiVersion: kvlint/v1\nkind: Deployment\nmetadata:\n  name: m\n"
        "engine:\n  name: vllm\n  version: \"0.25.1\"\nhardware:\n  gpu: H100-PCIE-80GB\n{memory}"
        "model:\n  name: meta-llama/Llama-3.1-8B-Instruct\nkv_cache:\n  dtype: auto\n"
    )
    catalog = json.loads(run_capacity(tmp_path, base.format(memory=""), "--format", "json").stdout)[0]
    assert any("nvidia-smi total" in a for a in catalog["assumptions"])
    measured = json.loads(run_capacity(tmp_path, base.format(memory="  memory: 79.1GiB\n"), "--format", "json").stdout)[0]
    assert not any("nvidia-smi" in a for a in measured["assumptions"])


def test_weights_from_parameter_count_are_listed_as_an_assumption(tmp_path) -> None:
    text = (
        "apiVersion: kvlint/v1\nkind: Deployment\nmetadata:\n  name: m\n"
        "engine:\n  name: vllm\n  version: \"0.25.1\"\nhardware:\n  gpu: H100-SXM-80GB\n"
        "model:\n  name: meta-llama/Llama-3.1-8B-Instruct\n  weights: {params: 8.03e9, dtype: bf16}\n"
        "kv_cache:\n  dtype: auto\n"
    )
    document = json.loads(run_capacity(tmp_path, text, "--format", "json").stdout)[0]
    assert "weights estimated as 8.03e+09 params x 2 B (bf16)" in document["assumptions"]
    # 8.03e9 x 2 B = 16,060,000,000 B of weights on one GPU, taken out of the pool with vLLM's
    # rotary cache (131,072 x 128 x 2 B = 33,554,432 B): 16,093,554,432 B.
    assert any("the checkpoint's 16,060,000,000 B" in a for a in document["assumptions"])
    assert any("16,093,554,432 B weights" in a for a in document["assumptions"])
