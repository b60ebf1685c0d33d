"""Kubernetes files as the kubelet runs them: native sidecars, `$(VAR)` expansion, engine config
files mounted from ConfigMaps, KServe's Hugging Face runtime, and where release findings point.

The manifests are modelled on public ones: GoogleCloudPlatform/kubernetes-engine-samples
ai-ml/llm-serving-gemma/vllm (vllm-3-4b-it.yaml), the KServe docs' Hugging Face
InferenceService, and NVIDIA TensorRT-LLM's trtllm-serve examples.
"""

from __future__ import annotations

import json
from typing import Dict, List, Tuple

from conftest import invoke

from kvlint.adapters import adapt


def _check(args, **kw):
    result = invoke(["check", "--output-format", "json", *args], **kw)
    assert "Traceback" not in result.output
    return result, json.loads(result.stdout)


def _found(report) -> List[Tuple[str, int, int]]:
    return [(d["code"], d["line"], d["column"]) for d in report["diagnostics"]]


def _line(text: str, needle: str) -> int:
    return text[: text.index(needle)].count("\n") + 1


def _col(text: str, needle: str) -> int:
    at = text.index(needle)
    return at - (text.rfind("\n", 0, at) + 1) + 1


def _only(path: str, text: str):
    adaptation = adapt(path, text)
    assert len(adaptation.workloads) == 1, (adaptation.workloads, adaptation.problems)
    return adaptation.workloads[0]


# --- native sidecars ----------------------------------------------------------------------------

SIDECAR = """\
apiVersion: v1
kind: Pod
metadata:
  name: sidecar-engine
spec:
  nodeSelector:
    nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3
  initContainers:
  - name: fetch-weights
    image: vllm/vllm-openai:v0.19.1
    command: ["sh", "-c", "echo warming"]
  - name: vllm
    image: vllm/vllm-openai:v0.19.1
    restartPolicy: Always
    args: ["--model", "Qwen/Qwen2.5-7B-Instruct", "--kv-cache-dtype", "fp8_e5m2"]
    resources:
      limits:
        nvidia.com/gpu: 1
  containers:
  - name: proxy
    image: nginx:1.27
"""


def test_an_engine_in_a_native_sidecar_is_found():
    workload = _only("pod.yaml", SIDECAR)
    assert workload.name == "Pod/sidecar-engine/vllm"
    assert workload.manifest["model"]["name"] == "Qwen/Qwen2.5-7B-Instruct"
    assert workload.manifest["kv_cache"]["dtype"] == "fp8_e5m2"
    assert workload.manifest["engine"] == {"name": "vllm", "version": "0.19.1"}
    assert workload.manifest["hardware"]["count"] == 1
    assert workload.value_spans["/kv_cache/dtype"].line == _line(SIDECAR, "fp8_e5m2")


def test_an_init_container_that_runs_to_completion_is_not_an_engine():
    text = SIDECAR.replace("    restartPolicy: Always\n", "")
    adaptation = adapt("pod.yaml", text)
    assert adaptation.workloads == []


# --- where release findings point ------------------------------------------------------------------

UNPINNED = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: llama
spec:
  template:
    spec:
      nodeSelector:
        nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3
      containers:
      - name: vllm
        image: vllm/vllm-openai:latest
        args: ["--model", "meta-llama/Llama-3.1-8B-Instruct"]
        resources:
          limits:
            nvidia.com/gpu: 1
"""


def test_an_unpinned_image_is_one_kv206_on_the_image(workspace, write):
    write("d.yaml", UNPINNED)
    _, report = _check(["d.yaml"])
    image = (_line(UNPINNED, "image:"), _col(UNPINNED, "vllm/vllm-openai:latest"))
    codes = _found(report)
    assert ("KV206", *image) in codes
    assert not [c for c in codes if c[0] == "KV207"], report["diagnostics"]
    kv206 = next(d for d in report["diagnostics"] if d["code"] == "KV206")
    assert kv206["message"].endswith("until it is known, the checks keyed by engine release "
                                     "(flags, backends, cache formats) did not run")


def test_a_release_kv207_points_at_the_image(workspace, write):
    """An image kvlint does not know the release of: the KV207 sits on the image value, where the
    release would come from, not on the container."""
    text = UNPINNED.replace("vllm/vllm-openai:latest", "registry.example.com/team/llm-server:2024-06")
    text = text.replace('args: ["--model"', 'command: ["vllm", "serve"]\n        args: ["--model"')
    write("d.yaml", text)
    _, report = _check(["d.yaml"])
    kv207 = [d for d in report["diagnostics"] if d["code"] == "KV207"]
    assert [(d["line"], d["column"]) for d in kv207] == [
        (_line(text, "image:"), _col(text, "registry.example.com"))
    ]
    assert "is not an image kvlint knows the vllm release of" in kv207[0]["message"]
    assert not [d for d in report["diagnostics"] if d["code"] == "KV206"]
