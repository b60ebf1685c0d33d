"""Fuzzing the semantic stages: well-formed manifests with hostile *values*.

The random-text fuzzer (test_fuzz.py) mostly stops at the loader or the schema. Here every
document parses and names known catalog entries, while geometry, parallelism, memory, skip sets,
block sizes and targets take extreme or contradictory values, so resolve, capacity, the facts
document and every rule run on them. No value may crash kvlint or make it exit 2, and the
capacity command must agree.
"""

from __future__ import annotations

import json

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import invoke

SETTINGS = settings(max_examples=int(__import__("os").environ.get("KVLINT_FUZZ_EXAMPLES", "200")), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

INTS = st.one_of(st.integers(-2, 4), st.integers(5, 300), st.sampled_from([1024, 4096, 131072, 10**9, 2**40]))
NUMBERS = st.one_of(INTS, st.floats(-1, 2, allow_nan=False), st.just(0.0))
ANY = st.one_of(NUMBERS, st.none(), st.booleans(), st.sampled_from(["", "x", "sliding_window", "80GiB", "0", "-1"]))


@st.composite
def hostile_manifest(draw) -> dict:
    manifest = {
        "apiVersion": "kvlint/v1",
        "kind": "Deployment",
        "metadata": {"name": "fuzz"},
        "engine": {
            "name": draw(st.sampled_from(["vllm", "sglang", "tensorrt-llm"])),
            "version": draw(st.sampled_from(["0.11.0", "0.19.1", "0.25.1", "0.33.0", "0.5.9", "1.2.1", "9.9.9"])),
            "attention_backend": draw(st.sampled_from(["auto", "FLASH_ATTN", "TRITON_ATTN", "FLASHINFER", "FLASHMLA", "fa3", "nope"])),
        },
        "hardware": {"gpu": draw(st.sampled_from(["H100", "A100-80GB", "L4", "B200-180GB", "MI300X", "B300-288GB"]))},
        "model": {"name": draw(st.sampled_from([
            "meta-llama/Llama-3.1-8B-Instruct", "openai/gpt-oss-20b", "google/gemma-3-27b-it",
            "deepseek-ai/DeepSeek-V3", "meta-llama/Llama-4-Scout-17B-16E-Instruct", "acme/unknown"]))},
        "kv_cache": {"dtype": draw(st.sampled_from([
            "auto", "fp8", "fp8_e5m2", "fp8_per_token_head", "int4_per_token_head", "nvfp4", "fp8_ds_mla",
            "fp4_e2m1", "int8", "bfloat16"]))},
    }
    if draw(st.booleans()):
        keys = ["num_layers", "num_attention_heads", "num_kv_heads", "head_dim", "sliding_window", "max_position_embeddings"]
        manifest["model"]["geometry"] = {k: draw(ANY) for k in draw(st.lists(st.sampled_from(keys), unique=True))}
        if draw(st.booleans()):
            manifest["model"]["geometry"]["layer_types"] = draw(
                st.lists(st.sampled_from(["full_attention", "sliding_attention", "chunked_attention"]), max_size=6))
    if draw(st.booleans()):
        manifest["parallelism"] = {"tensor": draw(INTS), "pipeline": draw(INTS)}
    if draw(st.booleans()):
        manifest["kv_cache"]["skip_layers"] = draw(st.lists(ANY, max_size=4))
    if draw(st.booleans()):
        manifest["kv_cache"]["block_size"] = draw(INTS)
    if draw(st.booleans()):
        manifest["kv_cache"]["scales"] = {
            "granularity": draw(st.sampled_from(["per-tensor", "per-head", "per-token-head"])),
            "source": draw(st.sampled_from(["unit", "checkpoint", "warmup", "dynamic"])),
            "calibration": {"max_seq_len": draw(INTS)},
        }
    if draw(st.booleans()):
        manifest["memory"] = {k: draw(ANY) for k in ("gpu_memory_utilization", "kv_cache_memory", "non_kv_memory")}
    if draw(st.booleans()):
        manifest["serving"] = {"max_model_len": draw(INTS), "max_num_batched_tokens": draw(INTS)}
    if draw(st.booleans()):
        manifest["targets"] = {"min_concurrency": draw(NUMBERS), "planned_kv_tokens": draw(INTS)}
    if draw(st.booleans()):
        manifest["model"]["kv_scales"] = draw(st.sampled_from(["none", "per-tensor", "per-head", 3]))
    return manifest


@pytest.fixture(autouse=True)
def _isolated(workspace):
    return workspace


@SETTINGS
@given(hostile_manifest())
def test_no_value_crashes_check_or_capacity(manifest) -> None:
    text = yaml.safe_dump(manifest, sort_keys=False).encode()
    result = invoke(["check", "--output-format", "json", "-"], input=text)
    assert result.exit_code in (0, 1), result.output
    assert "Traceback" not in result.output
    json.loads(result.stdout)
    capacity = invoke(["capacity", "--format", "json", "-"], input=text)
    assert capacity.exit_code in (0, 1), capacity.output
    assert "Traceback" not in capacity.output
