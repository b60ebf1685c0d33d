"""Apple silicon GPUs: llama.cpp and Ollama run them through ggml's Metal backend; the released
vLLM, SGLang and TensorRT-LLM have no attention backend for them (KV348).

Metal facts of llama.cpp b11312 (ggml/src/ggml-metal/ggml-metal-device.m, read in
llama-cpp-python 0.3.36's vendored copy): `supports_op` GGML_OP_FLASH_ATTN_EXT (L1727-L1770) takes
K type == V type among f32, f16, bf16 (when the device has bfloat), q8_0, q4_0, q4_1, q5_0, q5_1;
GGML_OP_SET_ROWS (L1925-L1947) stores those and iq4_nl. A mixed K/V pair with flash attention
is no Metal kernel (the op falls back to the CPU).
"""

from __future__ import annotations

import pytest

from kvlint.catalog import load_catalogs
from kvlint.resolve import resolve

CATALOGS = load_catalogs(())


def _resolve(engine: str, version: str, dtype: str, **extra):
    data = {"apiVersion": "kvlint/v1", "kind": "Deployment", "metadata": {"name": "x"},
            "engine": {"name": engine, "version": version, **extra},
            "hardware": {"gpu": "Apple M3 Max", "memory": "96GiB"},
            "model": {"name": "meta-llama/Llama-3.1-8B-Instruct"}, "kv_cache": {"dtype": dtype}}
    return resolve(data, "x.yaml", None, CATALOGS)


def test_llamacpp_runs_metal_on_an_apple_gpu() -> None:
    res = _resolve("llama.cpp", "b11312", "q8_0")
    assert res.facts["llamacpp"]["backend"] == "metal"
    assert res.deployment.gpu.vendor == "apple" and res.deployment.gpu.memory_bytes == 96 << 30


@pytest.mark.parametrize("engine,version", [("vllm", "0.33.0"), ("sglang", "0.5.23"), ("tensorrt-llm", "1.0.0")])
def test_cuda_engines_are_marked_unsupported(engine: str, version: str, tmp_path) -> None:
    import json
    import subprocess
    import sys

    text = f"""apiVersion: kvlint/v1
kind: Deployment
metadata:
  name: x
engine:
  name: {engine}
  version: "{version}"
hardware:
  gpu: Apple M3 Max
  memory: 96GiB
model:
  name: meta-llama/Llama-3.1-8B-Instruct
kv_cache:
  dtype: auto
"""
    path = tmp_path / "deploy.yaml"
    path.write_text(text)
    out = subprocess.run([sys.executable, "-m", "kvlint", "check", "--output-format", "json", str(path)],
                         capture_output=True, text=True)
    codes = [d["code"] for d in json.loads(out.stdout)["diagnostics"]]
    assert "KV348" in codes, codes
