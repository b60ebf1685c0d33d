"""Kubernetes files as the kubelet runs them: native sidecars, `$(VAR)` expansion, engine config
files mounted from ConfigMaps, KServe's Hugging Face runtime, and where release findings point.

The manifests are modelled on public ones: GoogleCloudPlatform/kubernetes-engine-samples
ai-ml/llm-serving-gemma/vllm (vllm-3-4b-it.yaml), the KServe docs' Hugging Face
InferenceService, and NVIDIA TensorRT-LLM's trtllm-serve examples.
"""

from __future__ import annotations

import json
from typing import List, Tuple

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


# --- engine config files mounted from ConfigMaps ----------------------------------------------------

# trtllm-serve as NVIDIA's Kubernetes examples run it: options in a mounted ConfigMap
# (TensorRT-LLM examples/serve, `trtllm-serve <model> --extra_llm_api_options <yaml>`)
TRTLLM = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: trtllm-llama70b
spec:
  replicas: 1
  template:
    spec:
      nodeSelector:
        nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3
      containers:
      - name: trtllm
        image: nvcr.io/nvidia/tensorrt-llm/release:1.2.0rc1
        command: ["trtllm-serve"]
        args:
        - meta-llama/Llama-3.1-70B-Instruct
        - --host=0.0.0.0
        - --port=8000
        - --extra_llm_api_options=/etc/trtllm/extra-llm-api-config.yml
        resources:
          limits:
            nvidia.com/gpu: 8
        volumeMounts:
        - name: trtllm-config
          mountPath: /etc/trtllm
      volumes:
      - name: trtllm-config
        configMap:
          name: trtllm-extra-options
"""

TRTLLM_OPTIONS = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: trtllm-extra-options
data:
  extra-llm-api-config.yml: |
    tensor_parallel_size: 8
    kv_cache_config:
      dtype: fp8
      free_gpu_memory_fraction: 0.9
    max_seq_len: 8192
"""

OPTIONS_PATH = "/etc/trtllm/extra-llm-api-config.yml"


def test_an_unseen_mounted_options_file_gives_no_capacity_error_from_defaults(workspace, write):
    """tp comes from the mounted options file, which is not in the tree: without it the 70B
    model on one H100 (tp=1, the default) leaves no KV pool, a KV606 that is false for this
    8-GPU pod. The options file is reported unread and the capacity checks do not run."""
    write("deploy.yaml", TRTLLM)
    result, report = _check(["deploy.yaml"])
    assert result.exit_code == 0, report["diagnostics"]
    assert not [d for d in report["diagnostics"] if d["code"].startswith("KV6")]
    kv208 = [d for d in report["diagnostics"] if d["code"] == "KV208"]
    assert [(d["line"], d["column"]) for d in kv208] == [(_line(TRTLLM, OPTIONS_PATH), _col(TRTLLM, OPTIONS_PATH))]
    assert "mounted from ConfigMap 'trtllm-extra-options' (volume 'trtllm-config' at /etc/trtllm)" in kv208[0]["message"]
    assert "did not run" in kv208[0]["message"]


def test_an_unread_options_file_without_a_mount_also_stops_the_capacity_checks(workspace, write):
    text = TRTLLM.split("        volumeMounts:")[0]
    write("deploy.yaml", text)
    result, report = _check(["deploy.yaml"])
    assert result.exit_code == 0
    assert [d["code"] for d in report["diagnostics"]] == ["KV210", "KV208"]


def test_the_mounted_configmap_beside_the_workload_is_read(workspace, write):
    write("deploy.yaml", TRTLLM)
    write("options.yaml", TRTLLM_OPTIONS)
    result, report = _check(["deploy.yaml"])
    assert result.exit_code == 0
    found = _found(report)
    # the fp8 cache the options set is checked; its finding points at the path on the command
    # line (a finding cannot point into the other file)
    assert ("KV501", _line(TRTLLM, OPTIONS_PATH), _col(TRTLLM, OPTIONS_PATH)) in found
    assert not [c for c in found if c[0] in ("KV208", "KV606")]
    convert = invoke(["convert", "deploy.yaml"])
    assert "  tensor: 8  # options.yaml: ConfigMap trtllm-extra-options key extra-llm-api-config.yml line 1: " \
           "key tensor_parallel_size" in convert.stdout


def test_the_mounted_configmap_in_the_same_file_is_read_in_place(workspace, write):
    text = TRTLLM + "---\n" + TRTLLM_OPTIONS
    write("all.yaml", text)
    result, report = _check(["all.yaml"])
    assert result.exit_code == 0
    # the finding on the options' fp8 sits in the ConfigMap's block scalar
    assert ("KV501", _line(text, "      dtype: fp8"), _col(text, "fp8\n")) in _found(report)
    workload = _only("all.yaml", text)
    assert workload.references and workload.references[0].path == OPTIONS_PATH


def test_a_subpath_and_items_mount_names_the_right_key(workspace, write):
    """vLLM's `--config` (a YAML of flags) mounted with items (key -> path) and subPath."""
    text = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: vllm-qwen
spec:
  template:
    spec:
      nodeSelector:
        nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.19.1
        args: ["--config", "/app/serve.yaml"]
        resources:
          limits:
            nvidia.com/gpu: 1
        volumeMounts:
        - name: cfg
          mountPath: /app/serve.yaml
          subPath: vllm/serve.yaml
      volumes:
      - name: cfg
        configMap:
          name: vllm-config
          items:
          - key: qwen.yaml
            path: vllm/serve.yaml
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: vllm-config
data:
  other.yaml: |
    model: wrong/model
  qwen.yaml: |
    model: Qwen/Qwen2.5-7B-Instruct
    kv-cache-dtype: fp8_e5m2
    max-model-len: 32768
"""
    write("all.yaml", text)
    from kvlint.config import Config
    from kvlint.pipeline.native import load_source

    source = load_source(text.encode(), "all.yaml", "all.yaml", Config())
    (document,) = source.documents
    assert document.data["model"]["name"] == "Qwen/Qwen2.5-7B-Instruct"
    assert document.data["kv_cache"]["dtype"] == "fp8_e5m2"
    assert document.data["serving"]["max_model_len"] == 32768
    span = document.value_spans["/kv_cache/dtype"]
    assert (span.line, span.column) == (_line(text, "    kv-cache-dtype: fp8_e5m2"), _col(text, "fp8_e5m2"))
    # an items list that does not project the path: the file does not exist
    broken = text.replace("path: vllm/serve.yaml", "path: vllm/other.yaml")
    write("broken.yaml", broken)
    _, report = _check(["broken.yaml"])
    kv208 = [d for d in report["diagnostics"] if d["code"] == "KV208"]
    assert len(kv208) == 1 and "does not project 'vllm/serve.yaml'" in kv208[0]["message"]
    assert (kv208[0]["line"], kv208[0]["column"]) == (_line(broken, '"/app/serve.yaml"'), _col(broken, "/app/serve.yaml\"") )


# --- KServe's Hugging Face runtime ------------------------------------------------------------------

# The KServe docs' Hugging Face InferenceService (modelFormat huggingface, served by the
# kserve-huggingfaceserver runtime, which runs vLLM by default)
KSERVE_HF = """\
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata:
  name: huggingface-llama3
  annotations:
    kvlint.dev/gpu: H100-SXM-80GB
spec:
  predictor:
    model:
      modelFormat:
        name: huggingface
      args:
        - --model_name=llama3
        - --model_id=meta-llama/Llama-3.1-8B-Instruct
        - --max_model_len=8192
        - --kv-cache-dtype=fp8
        - --http_port=8080
        - --enable_docs_url
        - "true"
        - --disable_log_requests
      resources:
        limits:
          cpu: "6"
          memory: 24Gi
          nvidia.com/gpu: "1"
"""


def test_a_kserve_huggingface_inference_service_is_a_vllm_workload(workspace, write):
    workload = _only("isvc.yaml", KSERVE_HF)
    manifest = workload.manifest
    assert manifest["engine"]["name"] == "vllm"
    assert manifest["model"]["name"] == "meta-llama/Llama-3.1-8B-Instruct"
    assert manifest["serving"]["max_model_len"] == 8192
    assert manifest["kv_cache"]["dtype"] == "fp8"
    assert "/engine/version" in workload.missing
    span = workload.value_spans["/model/name"]
    assert (span.line, span.column) == (_line(KSERVE_HF, "--model_id"), _col(KSERVE_HF, "meta-llama/"))
    write("isvc.yaml", KSERVE_HF)
    _, report = _check(["isvc.yaml"])
    codes = [d["code"] for d in report["diagnostics"]]
    # KServe's own flags are not vLLM's unknown flags; the release is asked for, on the model format
    assert "KV319" not in codes and "KV321" not in codes, report["diagnostics"]
    kv207 = [d for d in report["diagnostics"] if d["code"] == "KV207"]
    assert [(d["line"], d["column"]) for d in kv207] == [(_line(KSERVE_HF, "        name: huggingface\n"), 15)]
    assert "KServe's Hugging Face runtime runs the vLLM release of the installed KServe release" in kv207[0]["message"]


def test_the_runtime_image_gives_the_vllm_release_and_storage_uri_the_model():
    text = KSERVE_HF.replace(
        "      modelFormat:\n",
        "      image: kserve/huggingfaceserver:v0.18.0\n      storageUri: hf://Qwen/Qwen2.5-7B-Instruct\n"
        "      modelFormat:\n",
    ).replace("        - --model_id=meta-llama/Llama-3.1-8B-Instruct\n", "")
    workload = _only("isvc.yaml", text)
    # python/huggingface_server.Dockerfile at v0.18.0: ARG VLLM_VERSION=0.19.0
    assert workload.manifest["engine"] == {"name": "vllm", "version": "0.19.0"}
    assert workload.manifest["model"]["name"] == "Qwen/Qwen2.5-7B-Instruct"
    span = workload.value_spans["/model/name"]
    assert (span.line, span.column) == (_line(text, "storageUri"), _col(text, "Qwen/"))
    assert not [p for p in workload.problems if p.code in ("KV319", "KV207")]
    # v0.15.0's image installs vLLM 0.8.1 last (after poetry's 0.8.2)
    older = _only("isvc.yaml", text.replace("v0.18.0", "v0.15.0"))
    assert older.manifest["engine"]["version"] == "0.8.1"


def test_an_unknown_flag_is_ignored_by_kserve_not_refused(workspace, write):
    text = KSERVE_HF.replace("        - --disable_log_requests\n", "        - --no-such-option=1\n")
    write("isvc.yaml", text)
    result, report = _check(["isvc.yaml"])
    (ignored,) = [d for d in report["diagnostics"] if d["code"] == "KV321"]
    assert (ignored["line"], ignored["column"]) == (_line(text, "--no-such-option"), 11)
    assert ignored["severity"] == "warning" and "parse_known_args" in ignored["message"]
    assert "KV319" not in [d["code"] for d in report["diagnostics"]]


def test_the_huggingface_backend_is_not_vllm(workspace, write):
    text = KSERVE_HF.replace("        - --model_name=llama3\n", "        - --model_name=llama3\n        - --backend=huggingface\n")
    write("isvc.yaml", text)
    result, report = _check(["isvc.yaml"])
    assert result.exit_code == 0 and report["summary"]["documents"] == 0
    assert _found(report) == [("KV208", _line(text, "--backend=huggingface"), _col(text, "--backend=") + 10)]
    assert "serves the model with Hugging Face transformers, not vLLM" in report["diagnostics"][0]["message"]


# --- $(VAR) expansion -------------------------------------------------------------------------------

# kubernetes-engine-samples ai-ml/llm-serving-gemma/vllm: MODEL_ID in env, `--model=$(MODEL_ID)`
GEMMA = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: vllm-gemma-deployment
spec:
  replicas: 1
  template:
    spec:
      containers:
      - name: inference-server
        image: vllm/vllm-openai:v0.19.1
        resources:
          limits:
            nvidia.com/gpu: "1"
        command: ["python3", "-m", "vllm.entrypoints.openai.api_server"]
        args:
        - --model=$(MODEL_ID)
        - --tensor-parallel-size=1
        - --host=0.0.0.0
        - --port=8000
        - --max-model-len=$(MAX_LEN)
        env:
        - name: MODEL_ORG
          value: google
        - name: MODEL_ID
          value: $(MODEL_ORG)/gemma-3-4b-it
        - name: MAX_LEN
          valueFrom:
            fieldRef:
              fieldPath: metadata.annotations['max-len']
        - name: HUGGING_FACE_HUB_TOKEN
          valueFrom:
            secretKeyRef:
              name: hf-secret
              key: hf_api_token
      nodeSelector:
        cloud.google.com/gke-accelerator: nvidia-l4
"""


def test_env_values_expand_earlier_entries_and_value_from_stays_unknown():
    workload = _only("gemma.yaml", GEMMA)
    # MODEL_ID's own value refers to the earlier MODEL_ORG, as the kubelet expands it
    assert workload.manifest["model"]["name"] == "google/gemma-3-4b-it"
    # MAX_LEN comes from a fieldRef: the field is left out, and said to be unresolved
    assert "max_model_len" not in workload.manifest.get("serving", {})
    (unresolved,) = [p for p in workload.problems if p.code == "KV208"]
    assert (unresolved.span.line, unresolved.span.column) == (_line(GEMMA, "$(MAX_LEN)"), _col(GEMMA, "$(MAX_LEN)"))
    assert "MAX_LEN" in unresolved.message
    # a later entry is not expanded into an earlier one (kubelet expands in order)
    later = GEMMA.replace("          value: $(MODEL_ORG)/gemma-3-4b-it", "          value: $(LATER)/gemma-3-4b-it")
    later = later.replace("        - name: MAX_LEN\n", "        - name: LATER\n          value: google\n        - name: MAX_LEN\n")
    workload = _only("gemma.yaml", later)
    # ...so MODEL_ID keeps `$(LATER)` as text, and that text is what the engine receives as --model
    # (no shell runs exec-form args: the kubelet's one pass is the only expansion)
    assert workload.manifest["model"]["name"] == "$(LATER)/gemma-3-4b-it"
