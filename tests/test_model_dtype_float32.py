"""A written `model.dtype: float32` (vLLM `--dtype float32`): the engine loads a 16-bit checkpoint
at 4 B per parameter and keeps an `auto` KV cache in float32.

Checked against a real vLLM 0.19.0 start-up with `--dtype float32` (benchmarks/capacity_logs/
vllm-h100-llama31-8b-f32.yaml, a holdout log that sized nothing), and against Llama-3.1-8B's
config.json arithmetic; a float32 *checkpoint* under dtype auto still runs in 16 bit.
"""

from __future__ import annotations

import json
import sys

import yaml
from conftest import CliRunner

from conftest import REPO_ROOT
from kvlint.cli import main
from kvlint.deployment import model_dtype_format

sys.path.insert(0, str(REPO_ROOT / "benchmarks"))
import capacity_accuracy  # noqa: E402

GiB = 1 << 30
LOG = yaml.safe_load((REPO_ROOT / "benchmarks" / "capacity_logs" / "vllm-h100-llama31-8b-f32.yaml").read_text())
# Llama-3.1-8B config.json: 32 layers x 8 KV heads x head_dim 128, K and V
LLAMA_ELEMENTS_PER_TOKEN = 32 * 8 * 128 * 2


def _capacity(tmp_path, manifest):
    path = tmp_path / "deploy.yaml"
    path.write_text(yaml.safe_dump(manifest))
    result = CliRunner().invoke(main, ["capacity", str(path), "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)[0]


def test_the_log_is_what_the_test_says():
    assert "'dtype': 'float32'" in LOG["source"]["quote"]
    # the engine's own figures: 4 B per element (pool bytes / tokens, within block rounding)
    per_token = LOG["logged"]["pool_gib"] * GiB / LOG["logged"]["kv_tokens"]
    assert abs(per_token - 4 * LLAMA_ELEMENTS_PER_TOKEN) / (4 * LLAMA_ELEMENTS_PER_TOKEN) < 0.001


def test_float32_run_weights_and_cache_match_the_log(tmp_path):
    entry = _capacity(tmp_path, capacity_accuracy.full_manifest(LOG))
    assert entry["per_token"]["total_bytes"] == 4 * LLAMA_ELEMENTS_PER_TOKEN
    weights = entry["engine"]["pool_terms"]["weights"] / GiB
    assert abs(weights - LOG["logged"]["weights_gib"]) <= 0.05, weights
    tokens = entry["engine"]["kv_cache_tokens"]
    assert abs(tokens - LOG["logged"]["kv_tokens"]) <= 0.03 * LOG["logged"]["kv_tokens"], tokens


def test_sixteen_bit_run_of_the_same_deployment_is_half(tmp_path):
    manifest = capacity_accuracy.full_manifest(LOG)
    f32 = _capacity(tmp_path, manifest)
    manifest["model"]["dtype"] = "bfloat16"
    bf16 = _capacity(tmp_path, manifest)
    assert bf16["per_token"]["total_bytes"] * 2 == f32["per_token"]["total_bytes"]
    checkpoint32 = f32["engine"]["pool_terms"]["weights"] - f32["engine"]["pool_terms"]["rope_cache"]
    checkpoint16 = bf16["engine"]["pool_terms"]["weights"] - bf16["engine"]["pool_terms"]["rope_cache"]
    assert checkpoint32 == 2 * checkpoint16


def test_stated_weight_bytes_are_taken_as_written(tmp_path):
    manifest = capacity_accuracy.full_manifest(LOG)
    manifest["model"]["weights"] = {"bytes": "20GiB"}
    entry = _capacity(tmp_path, manifest)
    checkpoint = entry["engine"]["pool_terms"]["weights"] - entry["engine"]["pool_terms"]["rope_cache"]
    assert checkpoint == 20 * GiB


def test_storage_format_of_the_model_dtype():
    assert model_dtype_format("float32") == "fp32"
    assert model_dtype_format("bfloat16") == "bf16"
    assert model_dtype_format("float16") == "fp16"
    assert model_dtype_format(None) == "bf16"
