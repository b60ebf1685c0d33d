"""Online `--quantization fp8` in the weights estimate (issue 22).

vLLM's Fp8LinearMethod stores every linear layer's weight as float8_e4m3fn after loading
(vllm v0.12.0 vllm/model_executor/layers/quantization/fp8.py `create_weights`,
`process_weights_after_loading`); the embedding, lm_head and norms stay 16-bit. Before this change
the estimate priced Llama-3.3-70B at its BF16 checkpoint (131 GiB) and gave a false KV606 on one
H200, where the engine loads about 68 GiB.

Independent figure: vLLM 0.19.0 loading RedHatAI/Llama-3.3-70B-Instruct-fp8-dynamic (the same
layout: linear layers FP8, embedding and lm_head BF16) logs 'Model loading took 16.96 GiB' on each
of 4 GPUs = 67.84 GiB (benchmarks/capacity_logs/vllm-h100x4-llama33-70b-fp8dyn-tp4.yaml, from
https://github.com/llm-d-incubation/llm-d-planner/blob/d3121e059da88662db39a926a3ead964be97359b/accuracy/results/v0.19.0/logs/fp8dyn-llama-3-3-70b--h100-80gb--tp4pp1dp1--8192.log).
Parameter counts: Llama-3.3-70B config.json (hidden 8192, vocab 128256, 80 layers;
https://huggingface.co/meta-llama/Llama-3.3-70B-Instruct/blob/main/config.json), 70.55 B
parameters (model card "70B").
"""

from __future__ import annotations

import pytest

from conftest import check_json
from kvlint.resolve.fields import weights_bytes

GiB = 2**30
MANIFEST = """\
apiVersion: kvlint/v1
kind: Deployment
metadata:
  name: llama33-70b-fp8-h200
engine:
  name: vllm
  version: "0.12.0"
  options:
    quantization: {quantization}
hardware:
  gpu: H200-141GB
  count: 1
model:
  name: meta-llama/Llama-3.3-70B-Instruct
kv_cache:
  dtype: auto
serving:
  max_model_len: 8192
"""


def _codes(workspace, quantization: str) -> set:
    path = workspace / "m.yaml"
    path.write_text(MANIFEST.format(quantization=quantization), encoding="utf-8")
    return {d["code"] for d in check_json(str(path))["diagnostics"]}


def test_llama33_70b_fp8_on_one_h200_is_not_kv606(workspace):
    assert "KV606" not in _codes(workspace, "fp8")


def test_the_same_deployment_unquantized_is_kv606(workspace):
    # 141 GB checkpoint in BF16 on one H200: the engine cannot load it (no quantization)
    assert "KV606" in _codes(workspace, "none")


def test_online_fp8_weights_match_the_logged_load():
    from kvlint.catalog.models import load_model_catalog

    entry = load_model_catalog().lookup("meta-llama/Llama-3.3-70B-Instruct")
    data = {"engine": {"name": "vllm", "options": {"quantization": "fp8"}}, "model": {"name": entry.id}}
    weights, note = weights_bytes(data, entry.weight_bytes, entry.weights_dtype, entry.geometry(), entry.hidden_size)
    logged = 4 * 16.96 * GiB  # 'Model loading took 16.96 GiB' x tensor-parallel 4
    assert abs(weights - logged) / logged < 0.01, weights / GiB
    # unquantized: embedding + lm_head (2 x 128256 x 8192) + norms (161 x 8192), at 2 B
    assert "2.1e+09 params kept at 16 bit" in note and "--quantization fp8" in note


def test_online_fp8_without_vocab_or_hidden_is_unknown_not_guessed():
    data = {"engine": {"options": {"quantization": "fp8"}}, "model": {"name": "x"}}
    weights, note = weights_bytes(data, 16 * GiB, "bf16", None, None)
    assert weights is None and "unknown" in note


@pytest.mark.parametrize("options", [{}, {"quantization": "awq"}])
def test_other_cases_keep_the_catalog_checkpoint_size(options):
    data = {"engine": {"options": options}, "model": {"name": "x"}}
    weights, _ = weights_bytes(data, 16 * GiB, "bf16", None, 8192)
    assert weights == 16 * GiB


def test_stated_weights_win_over_the_online_estimate():
    data = {"engine": {"options": {"quantization": "fp8"}},
            "model": {"name": "x", "weights": {"params": 1e9, "dtype": "bf16"}}}
    assert weights_bytes(data, 16 * GiB, "bf16", None, 8192)[0] == 2 * 10**9
