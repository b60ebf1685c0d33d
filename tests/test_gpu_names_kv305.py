"""FP8 KV cache on GPUs without FP8 tensor cores, named the way deployments name them (issue 22).

Before these GPUs were catalogued, a manifest naming a V100 or an RTX 3090 got KV202 (unknown GPU)
and every GPU check was skipped, so an fp8 cache the engine refuses passed with a warning. The real
cases: vLLM 0.16.0 on 'Tesla V100-DGXS-32GB' with kv_cache_dtype fp8 crashes at start-up
(https://github.com/vllm-project/vllm/pull/35720, "fix kv cache fp8 crash on sm<89";
benchmarks/public_deployments/vllm-v0160-v100-llama31-8b-fp8kv.yaml); from 0.24.0 TRITON_ATTN
refuses an fp8 cache below SM 8.9 in TritonAttentionImpl.__init__ (vllm v0.24.0
vllm/v1/attention/backends/triton_attn.py, cited in tests/test_defects.py).
"""

from __future__ import annotations

import pytest

from conftest import check_json

MANIFEST = """\
apiVersion: kvlint/v1
kind: Deployment
metadata:
  name: fp8-on-{slug}
engine:
  name: vllm
  version: "{version}"
hardware:
  gpu: {gpu}
  count: 1
model:
  name: meta-llama/Llama-3.1-8B-Instruct
  dtype: float16
kv_cache:
  dtype: fp8
serving:
  max_model_len: 4096
"""


def _codes(workspace, gpu: str, version: str) -> dict:
    path = workspace / "m.yaml"
    slug = "".join(ch for ch in gpu.lower() if ch.isalnum())[:20]
    path.write_text(MANIFEST.format(gpu=gpu, version=version, slug=slug), encoding="utf-8")
    report = check_json(str(path))
    return {d["code"]: d for d in report["diagnostics"]}


@pytest.mark.parametrize("gpu,version", [
    # the name in the vLLM 0.16.0 log of vllm-project/vllm#35720 (the engine crashes at start-up)
    ("Tesla V100-DGXS-32GB", "0.16.0"),
    ("Tesla V100-DGXS-32GB", "0.24.0"),
    ("Tesla-V100-SXM2-16GB", "0.16.0"),  # GPU feature discovery node label form
    ("nvidia-tesla-v100", "0.24.0"),  # GKE accelerator label
    # RTX 3090 with fp8 on vLLM 0.11.0: the Triton kernel fails ('type fp8e4nv not supported in
    # this architecture', vllm-project/vllm#26431, v0.11.0 on an RTX 3090)
    ("NVIDIA GeForce RTX 3090", "0.11.0"),  # nvidia-smi
    ("NVIDIA-GeForce-RTX-3090", "0.11.0"),  # node label
    ("Tesla T4", "0.24.0"),  # TRITON_ATTN is the only candidate on SM75; refused in __init__ from 0.24.0
    ("nvidia-tesla-t4", "0.24.0"),  # GKE accelerator label
])
def test_fp8_cache_without_fp8_tensor_cores_is_kv305(workspace, gpu, version):
    codes = _codes(workspace, gpu, version)
    assert "KV202" not in codes, codes.get("KV202")
    assert "KV305" in codes, sorted(codes)
    assert codes["KV305"]["severity"] == "error"


@pytest.mark.parametrize("gpu", ["NVIDIA GeForce RTX 3090", "NVIDIA A100-SXM4-80GB"])
def test_sm8x_fp8_cache_is_judged_per_release_not_by_the_gpu_alone(workspace, gpu):
    """Ampere has no FP8 tensor cores, but vLLM 0.24.0's auto selection skips FA2 and TRITON_ATTN
    for an fp8 cache and lands on FLASHINFER, which converts in software: a KV307 warning naming
    the fallback, not a KV305 error (the catalog's derived cells decide, not the GPU's fp8 flag)."""
    codes = _codes(workspace, gpu, "0.24.0")
    assert "KV202" not in codes and "KV305" not in codes, sorted(codes)
    assert "FLASHINFER" in codes["KV307"]["message"]


@pytest.mark.parametrize("gpu", ["NVIDIA L4", "NVIDIA GeForce RTX 4090", "NVIDIA-H100-80GB-HBM3"])
def test_fp8_cache_with_fp8_tensor_cores_is_not_kv305(workspace, gpu):
    codes = _codes(workspace, gpu, "0.24.0")
    assert "KV202" not in codes and "KV305" not in codes, sorted(codes)
