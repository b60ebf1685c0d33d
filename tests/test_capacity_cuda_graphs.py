"""vLLM >= 0.20 takes CUDA-graph memory out of the KV budget only when it captures graphs.

vllm/v1/worker/gpu_worker.py (v0.20.0 L379-401, v0.31.0 L633-677): available KV memory =
requested - non_kv_cache_memory - cudagraph_memory_estimate_applied, where the estimate is profiled
only when compilation_config.cudagraph_mode != NONE (--enforce-eager sets NONE:
vllm/config/vllm.py v0.20.0 L895-900) and applied only when VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS
is true (envs.py L1724-1726, default "1").
"""

from __future__ import annotations

import json
import math

import pytest

from conftest import invoke

SCRIPT = """#!/bin/sh
# kvlint: gpu=H100-SXM-80GB engine-version=0.25.1
{env}vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 8192 {flags}
"""

MANIFEST = """\
apiVersion: kvlint/v1
kind: Deployment
metadata: {{name: eager}}
engine: {{name: vllm, version: "0.25.1", options: {{enforce_eager: {eager}}}}}
hardware: {{gpu: H100-SXM-80GB}}
model: {{name: meta-llama/Llama-3.1-8B-Instruct}}
kv_cache: {{dtype: auto}}
serving: {{max_model_len: 8192}}
"""


def _engine(tmp_path, name: str, text: str) -> dict:
    path = tmp_path / name
    path.write_text(text)
    result = invoke(["capacity", "--format", "json", str(path)])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    return (doc[0] if isinstance(doc, list) else doc)["engine"]


def _vllm_formula(terms: dict, fraction: float) -> int:
    """requested (ceil(total x fraction)) - weights - every non-KV term kvlint lists."""
    non_kv = sum(v for k, v in terms.items() if k in ("activation", "non_torch", "cuda_graphs"))
    return math.ceil(terms["device"] * fraction) - terms["weights"] - non_kv


def test_graphs_captured_by_default_are_taken_from_the_budget(tmp_path) -> None:
    engine = _engine(tmp_path, "run.sh", SCRIPT.format(env="", flags=""))
    terms = engine["pool_terms"]
    assert terms.get("cuda_graphs", 0) > 0
    assert engine["pool_bytes_per_gpu"] == _vllm_formula(terms, 0.92)  # 0.25's default fraction


@pytest.mark.parametrize("env, flags", [
    ("", "--enforce-eager"),
    ("VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0 ", ""),
])
def test_no_graph_memory_without_graphs_or_the_estimate(tmp_path, env, flags) -> None:
    default = _engine(tmp_path, "default.sh", SCRIPT.format(env="", flags=""))
    engine = _engine(tmp_path, "eager.sh", SCRIPT.format(env=env, flags=flags))
    terms = engine["pool_terms"]
    assert terms.get("cuda_graphs", 0) == 0
    assert engine["pool_bytes_per_gpu"] == _vllm_formula(terms, 0.92)
    assert engine["pool_bytes_per_gpu"] == default["pool_bytes_per_gpu"] + default["pool_terms"]["cuda_graphs"]


def test_manifest_option_and_its_negation(tmp_path) -> None:
    eager = _engine(tmp_path, "eager.yaml", MANIFEST.format(eager="true"))
    graphs = _engine(tmp_path, "graphs.yaml", MANIFEST.format(eager="false"))
    assert eager["pool_terms"].get("cuda_graphs", 0) == 0
    assert graphs["pool_terms"]["cuda_graphs"] > 0
    no_flag = _engine(tmp_path, "no.sh", SCRIPT.format(env="", flags="--no-enforce-eager"))
    assert no_flag["pool_terms"]["cuda_graphs"] > 0


ROCM = """\
apiVersion: kvlint/v1
kind: Deployment
metadata: {{name: rocm}}
engine: {{name: vllm, version: "{version}"}}
hardware: {{gpu: {gpu}}}
model: {{name: meta-llama/Llama-3.1-8B-Instruct}}
kv_cache: {{dtype: auto}}
serving: {{max_model_len: 8192}}
"""


@pytest.mark.parametrize("version, gpu, graphs", [
    # 0.20-0.25 profile graphs on CUDA only (gpu_worker.py v0.20.0 L379-385 `not is_rocm()`,
    # v0.25.0 L477-483 `is_cuda()`); 0.26 on ROCm too (v0.26.0 L501-506 `is_cuda_alike()`)
    ("0.20.0", "MI300X-192GB", False),
    ("0.25.1", "MI300X-192GB", False),
    ("0.26.0", "MI300X-192GB", True),
    ("0.33.0", "MI300X-192GB", True),
    ("0.25.1", "H100-SXM-80GB", True),
])
def test_rocm_graph_memory_by_release(tmp_path, version, gpu, graphs) -> None:
    engine = _engine(tmp_path, "rocm.yaml", ROCM.format(version=version, gpu=gpu))
    assert (engine["pool_terms"].get("cuda_graphs", 0) > 0) is graphs
