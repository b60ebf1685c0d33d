"""Two release-dependent readings of a vLLM manifest, from the releases' code:

* VLLM_ATTENTION_BACKEND pins the backend before 0.15 (vllm/attention/selector.py v0.11.0 L203;
  copied into attention_config.backend in 0.13-0.14) and is ignored from 0.15 (KV313);
* a checkpoint KV scheme (model.kv_scales) turns kv_cache.dtype auto into fp8 only from 0.14.0
  (resolve_kv_cache_dtype_string, vllm/engine/arg_utils.py v0.14.0 L1397-1407): on 0.13.0 the cache
  stays in the model dtype. vllm-project/vllm#32732 (DeepSeek-R1-0528 NVFP4 on 8x RTX Pro 6000,
  SM120) starts on 0.13.0 (TRITON_MLA) and fails on 0.14.0 with 'No valid attention backend found'.

And a remedy never lands on a known start-up crash: V11 (KV808, FLASHINFER + fp8 on SM90 in
0.11-0.16) keeps FLASHINFER out of the backends suggested there.
"""

from __future__ import annotations

import json

import pytest

from conftest import invoke

_ENV = """\
apiVersion: kvlint/v1
kind: Deployment
metadata:
  name: example
engine:
  name: vllm
  version: "{version}"
  env:
    VLLM_ATTENTION_BACKEND: FLASHINFER
hardware:
  gpu: H100-SXM-80GB
model:
  name: meta-llama/Llama-3.1-8B-Instruct
kv_cache:
  dtype: fp8
"""

_DSR1 = """\
apiVersion: kvlint/v1
kind: Deployment
metadata:
  name: example
engine:
  name: vllm
  version: "{version}"
hardware:
  gpu: RTX-PRO-6000-96GB
  count: 8
parallelism:
  tensor: 8
model:
  name: nvidia/DeepSeek-R1-0528-NVFP4  # kvlint: ignore[KV203]
  kv_scales: per-tensor
  geometry:
    num_layers: 61
    num_attention_heads: 128
    mla: {{kv_lora_rank: 512, qk_rope_head_dim: 64}}
    max_position_embeddings: 163840
    vocab_size: 129280
kv_cache:
  dtype: auto
"""


def _facts(workspace, manifest: str) -> dict:
    (workspace / "deploy.yaml").write_text(manifest, encoding="utf-8")
    result = invoke(["facts", "deploy.yaml"])
    return json.loads(result.stdout)[0]


def _codes(workspace, manifest: str) -> set:
    (workspace / "deploy.yaml").write_text(manifest, encoding="utf-8")
    result = invoke(["check", "--output-format", "json", "deploy.yaml"])
    assert result.exit_code in (0, 1), result.output
    return {d["code"] for d in json.loads(result.stdout)["diagnostics"]}


@pytest.mark.parametrize("version, backend", [("0.11.2", "FLASHINFER"), ("0.14.0", "FLASHINFER"),
                                              ("0.15.0", "FLASH_ATTN")])
def test_the_environment_variable_pins_the_backend_where_the_release_reads_it(workspace, version, backend):
    facts = _facts(workspace, _ENV.format(version=version))
    assert facts["backend"]["name"] == backend
    codes = _codes(workspace, _ENV.format(version=version))
    assert ("KV808" in codes) == (backend == "FLASHINFER")
    assert ("KV313" in codes) == (version == "0.15.0")


@pytest.mark.parametrize("version, quantized", [("0.13.0", False), ("0.14.0", True), ("0.19.1", True)])
def test_a_checkpoint_kv_scheme_makes_auto_fp8_from_0_14(workspace, version, quantized):
    facts = _facts(workspace, _DSR1.format(version=version))
    assert facts["kv_cache"]["auto_quantized"] is quantized
    assert facts["kv_cache"]["fp8"] is quantized


def test_dsr1_nvfp4_on_sm120_starts_on_0_13_and_finds_no_backend_on_0_14(workspace):
    old = _codes(workspace, _DSR1.format(version="0.13.0"))
    assert not old & {"KV314", "KV316"}
    assert _facts(workspace, _DSR1.format(version="0.13.0"))["backend"]["name"] == "TRITON_MLA"
    assert {"KV314", "KV316"} <= _codes(workspace, _DSR1.format(version="0.14.0"))


def test_no_remedy_suggests_flashinfer_for_fp8_on_hopper_where_v11_crashes(workspace):
    manifest = """\
apiVersion: kvlint/v1
kind: Deployment
metadata:
  name: example
engine:
  name: vllm
  version: "0.14.0"
  attention_backend: FLASH_ATTN_MLA
hardware:
  gpu: H100-SXM-80GB
model:
  name: meta-llama/Llama-3.1-8B-Instruct
kv_cache:
  dtype: fp8
"""
    facts = _facts(workspace, manifest)
    assert all(r.get("backend") != "FLASHINFER" for r in facts.get("remedies", []))
    later = _facts(workspace, manifest.replace('"0.14.0"', '"0.17.0"'))
    assert any(r.get("backend") == "FLASHINFER" for r in later.get("remedies", [])), later.get("remedies")
