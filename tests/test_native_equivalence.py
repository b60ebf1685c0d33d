"""One deployment, written as a `kvlint/v1` manifest and in every native form teams use, gives the
same findings and the same capacity (issue 12 acceptance). Each native form also pins where its
finding points: the line and column of the value in that file, found here by searching the file's
own text, not by asking the adapter."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

from conftest import invoke

# --- vLLM 0.19.1, Llama 3.1 8B on one H100, fp8_e5m2 with FLASH_ATTN pinned --------------------
# vLLM 0.19.1's FLASH_ATTN passes fp8_e5m2 through validation and then fails at start-up
# (vllm/v1/attention/backends/flash_attn.py, get_fp8_dtype_for_flashattn): KV301 in every form.

VLLM_MANIFEST = """\
apiVersion: kvlint/v1
kind: Deployment
metadata:
  name: llama8b
engine:
  name: vllm
  version: "0.19.1"
  attention_backend: FLASH_ATTN
hardware:
  gpu: H100-SXM-80GB
  count: 1
model:
  name: meta-llama/Llama-3.1-8B-Instruct
kv_cache:
  dtype: fp8_e5m2
memory:
  gpu_memory_utilization: 0.9
serving:
  max_model_len: 32768
  max_num_seqs: 64
"""

VLLM_NATIVE: Dict[str, str] = {
    # a Deployment with an `args:` list, `--flag=value` items
    "k8s-args.yaml": """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: llama8b
spec:
  replicas: 1
  selector:
    matchLabels: {app: llama8b}
  template:
    metadata:
      labels: {app: llama8b}
    spec:
      nodeSelector:
        nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.19.1
          args:
            - --model=meta-llama/Llama-3.1-8B-Instruct
            - --attention-backend=FLASH_ATTN
            - --kv-cache-dtype=fp8_e5m2
            - --max-model-len=32768
            - --max-num-seqs=64
            - --gpu-memory-utilization=0.9
          ports:
            - containerPort: 8000
          resources:
            limits:
              nvidia.com/gpu: 1
""",
    # a StatefulSet running `bash -c` with a multi-line command in a block scalar
    "k8s-bash-c.yaml": """\
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: llama8b
  annotations:
    kvlint.dev/gpu: H100-SXM-80GB
spec:
  serviceName: llama8b
  selector:
    matchLabels: {app: llama8b}
  template:
    metadata:
      labels: {app: llama8b}
    spec:
      containers:
        - name: server
          image: vllm/vllm-openai:v0.19.1
          command: ["/bin/bash", "-c"]
          args:
            - |
              set -e
              exec python3 -m vllm.entrypoints.openai.api_server \\
                --model meta-llama/Llama-3.1-8B-Instruct \\
                --attention-backend FLASH_ATTN \\
                --kv-cache-dtype fp8_e5m2 \\
                --max-model-len 32768 --max-num-seqs 64 \\
                --gpu-memory-utilization 0.9
          resources:
            limits:
              nvidia.com/gpu: "1"
""",
    # a Dockerfile: ENTRYPOINT + CMD in exec form, the GPU from a comment
    "Dockerfile": """\
# kvlint: gpu=H100-SXM-80GB
FROM vllm/vllm-openai:v0.19.1
ENTRYPOINT ["vllm", "serve"]
CMD ["meta-llama/Llama-3.1-8B-Instruct", \\
     "--attention-backend", "FLASH_ATTN", \\
     "--kv-cache-dtype", "fp8_e5m2", \\
     "--max-model-len", "32768", "--max-num-seqs", "64", \\
     "--gpu-memory-utilization", "0.9"]
""",
    # docker compose with a command list and a GPU reservation
    "compose.yaml": """\
# kvlint: gpu=H100-SXM-80GB
services:
  vllm:
    image: vllm/vllm-openai:v0.19.1
    ipc: host
    ports: ["8000:8000"]
    command:
      - --model
      - meta-llama/Llama-3.1-8B-Instruct
      - --attention-backend
      - FLASH_ATTN
      - --kv-cache-dtype
      - fp8_e5m2
      - --max-model-len
      - "32768"
      - --max-num-seqs
      - "64"
      - --gpu-memory-utilization
      - "0.9"
    deploy:
      resources:
        reservations:
          devices:
            - driver: nvidia
              count: 1
              capabilities: [gpu]
""",
    # vllm-project/production-stack Helm values
    "values.yaml": """\
servingEngineSpec:
  modelSpec:
  - name: "llama8b"
    repository: "vllm/vllm-openai"
    tag: "v0.19.1"
    modelURL: "meta-llama/Llama-3.1-8B-Instruct"
    replicaCount: 1
    requestGPU: 1
    nodeSelectorTerms:
      - matchExpressions:
          - key: nvidia.com/gpu.product
            operator: "In"
            values: ["NVIDIA-H100-80GB-HBM3"]
    vllmConfig:
      enablePrefixCaching: true
      maxModelLen: 32768
      gpuMemoryUtilization: 0.9
      extraArgs: ["--attention-backend", "FLASH_ATTN", "--kv-cache-dtype", "fp8_e5m2", "--max-num-seqs", "64"]
""",
    # a shell script with a pip pin and a multi-line command
    "serve.sh": """\
#!/usr/bin/env bash
# kvlint: gpu=H100-SXM-80GB
set -euo pipefail
pip install "vllm==0.19.1"
MODEL=meta-llama/Llama-3.1-8B-Instruct
vllm serve "$MODEL" \\
  --attention-backend FLASH_ATTN \\
  --kv-cache-dtype fp8_e5m2 \\
  --max-model-len 32768 \\
  --max-num-seqs 64 \\
  --gpu-memory-utilization 0.9
""",
    # vLLM's own `--config` YAML
    "serve-config.yaml": """\
# vllm serve --config serve-config.yaml
# kvlint: engine-version=0.19.1 gpu=H100-SXM-80GB
model: meta-llama/Llama-3.1-8B-Instruct
attention-backend: FLASH_ATTN
kv-cache-dtype: fp8_e5m2
max-model-len: 32768
max-num-seqs: 64
gpu-memory-utilization: 0.9
""",
}

# the value KV301 points at in each form: (line, text on that line it starts at)
VLLM_KV301_AT: Dict[str, Tuple[int, str]] = {
    "k8s-args.yaml": (21, "fp8_e5m2"),
    "k8s-bash-c.yaml": (25, "fp8_e5m2"),
    "Dockerfile": (6, "fp8_e5m2"),
    "compose.yaml": (13, "fp8_e5m2"),
    "values.yaml": (18, "fp8_e5m2"),
    "serve.sh": (8, "fp8_e5m2"),
    "serve-config.yaml": (5, "fp8_e5m2"),
}

# --- SGLang 0.5.2, Qwen3-32B on two H100s, fp8_e4m3 -------------------------------------------

SGLANG_MANIFEST = """\
apiVersion: kvlint/v1
kind: Deployment
metadata:
  name: qwen3
engine:
  name: sglang
  version: "0.5.2"
  attention_backend: fa3
hardware:
  gpu: H100-SXM-80GB
  count: 2
parallelism:
  tensor: 2
model:
  name: Qwen/Qwen3-32B
kv_cache:
  dtype: fp8_e4m3
  block_size: 16
memory:
  mem_fraction_static: 0.85
serving:
  max_model_len: 40960
  max_total_tokens: 100000
  chunked_prefill_size: 4096
"""

SGLANG_NATIVE: Dict[str, str] = {
    "k8s-sglang.yaml": """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: qwen3
spec:
  template:
    spec:
      nodeSelector:
        cloud.google.com/gke-accelerator: nvidia-h100-80gb
      containers:
      - name: sglang
        image: lmsysorg/sglang:v0.5.2-cu126
        command: [python3, -m, sglang.launch_server]
        args: [--model-path, Qwen/Qwen3-32B, --tp-size, "2", --kv-cache-dtype, fp8_e4m3,
               --mem-fraction-static, "0.85", --page-size, "16", --context-length, "40960",
               --attention-backend, fa3, --host, 0.0.0.0, --max-total-tokens, "100000",
               --chunked-prefill-size, "4096"]
        resources:
          limits:
            nvidia.com/gpu: 2
""",
    "serve-sglang.sh": """\
#!/bin/sh
# kvlint: gpu=H100-SXM-80GB engine-version=0.5.2
python3 -m sglang.launch_server --model-path Qwen/Qwen3-32B --tp-size 2 \\
    --kv-cache-dtype fp8_e4m3 --mem-fraction-static 0.85 --page-size 16 \\
    --context-length 40960 --attention-backend fa3 --max-total-tokens 100000 --chunked-prefill-size 4096
""",
}

# --- TensorRT-LLM 1.2.1, Llama 3.1 8B on one L40S, fp8 ----------------------------------------

TRTLLM_MANIFEST = """\
apiVersion: kvlint/v1
kind: Deployment
metadata:
  name: llama8b-trt
engine:
  name: tensorrt-llm
  version: "1.2.1"
hardware:
  gpu: L40S
  count: 1
model:
  name: meta-llama/Llama-3.1-8B-Instruct
kv_cache:
  dtype: fp8
  block_size: 32
memory:
  free_gpu_memory_fraction: 0.85
serving:
  max_model_len: 32768
  max_num_seqs: 64
"""

TRTLLM_NATIVE: Dict[str, str] = {
    "extra-options.yaml": """\
# trtllm-serve meta-llama/Llama-3.1-8B-Instruct --config extra-options.yaml
# kvlint: engine-version=1.2.1 gpu=L40S model=meta-llama/Llama-3.1-8B-Instruct
max_batch_size: 64
max_seq_len: 32768
kv_cache_config:
  dtype: fp8
  free_gpu_memory_fraction: 0.85
  tokens_per_block: 32
""",
    "serve-trt.sh": """\
#!/bin/bash
# kvlint: gpu=L40S engine-version=1.2.1
trtllm-serve meta-llama/Llama-3.1-8B-Instruct --max_batch_size 64 --max_seq_len 32768 \\
  --kv_cache_free_gpu_memory_fraction 0.85 --extra_llm_api_options extra.yaml
""",
    # the options file the script names; it states the cache format and page size
    "extra.yaml": """\
# kvlint: engine-version=1.2.1 gpu=L40S model=meta-llama/Llama-3.1-8B-Instruct
kv_cache_config:
  dtype: fp8
  tokens_per_block: 32
""",
}


def _check(path: str) -> List[dict]:
    result = invoke(["check", "--output-format", "json", path])
    assert "Traceback" not in result.output, result.output
    return json.loads(result.stdout)["diagnostics"]


def _capacity(path: str) -> List[dict]:
    result = invoke(["capacity", "--format", "json", path])
    assert "Traceback" not in result.output, result.output
    records = json.loads(result.stdout)
    # the file and the workload name differ by construction; everything computed must not
    return [{k: v for k, v in r.items() if k not in ("file", "name")} for r in records]


def _findings(diagnostics: List[dict]) -> List[Tuple[str, str]]:
    from conftest import manifest_terms

    return sorted((d["code"], manifest_terms(d["message"])) for d in diagnostics)


def _write(tmp_path: Path, files: Dict[str, str]) -> None:
    (tmp_path / "kvlint.toml").write_text("# no defaults\n", encoding="utf-8")
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")


@pytest.mark.parametrize("name", sorted(VLLM_NATIVE))
def test_vllm_deployment_in_every_native_form(name, tmp_path, monkeypatch):
    _write(tmp_path, {"manifest.yaml": VLLM_MANIFEST, name: VLLM_NATIVE[name]})
    monkeypatch.chdir(tmp_path)
    manifest = _check("manifest.yaml")
    native = _check(name)
    assert "KV301" in {d["code"] for d in manifest}
    assert _findings(native) == _findings(manifest)
    line, needle = VLLM_KV301_AT[name]
    (kv301,) = [d for d in native if d["code"] == "KV301"]
    column = VLLM_NATIVE[name].splitlines()[line - 1].index(needle) + 1
    assert (kv301["file"], kv301["line"], kv301["column"]) == (name, line, column)
    capacity = _capacity(name)
    assert capacity == _capacity("manifest.yaml")
    # the pool really is computed (H100 80 GB, 8B weights), not "unknown" on both sides
    assert capacity[0]["engine"]["kv_cache_tokens"] > 0


@pytest.mark.parametrize("name", sorted(SGLANG_NATIVE))
def test_sglang_deployment_in_native_forms(name, tmp_path, monkeypatch):
    _write(tmp_path, {"manifest.yaml": SGLANG_MANIFEST, name: SGLANG_NATIVE[name]})
    monkeypatch.chdir(tmp_path)
    assert _findings(_check(name)) == _findings(_check("manifest.yaml"))
    capacity = _capacity(name)
    assert capacity == _capacity("manifest.yaml")
    # --max-total-tokens caps SGLang's pool (model_runner init_memory_pool): the flag was read
    assert 0 < capacity[0]["engine"]["kv_cache_tokens"] <= 100000


@pytest.mark.parametrize("name", ["extra-options.yaml", "serve-trt.sh"])
def test_trtllm_deployment_in_native_forms(name, tmp_path, monkeypatch):
    _write(tmp_path, {"manifest.yaml": TRTLLM_MANIFEST, **TRTLLM_NATIVE})
    monkeypatch.chdir(tmp_path)
    assert _findings(_check(name)) == _findings(_check("manifest.yaml"))
    capacity = _capacity(name)
    assert capacity == _capacity("manifest.yaml")
    assert capacity[0]["engine"]["kv_cache_tokens"] > 0


def test_vllm_command_line_with_a_config_file(tmp_path, monkeypatch):
    """`vllm serve --config FILE`: the file's settings are checked with the command's."""
    _write(tmp_path, {
        "manifest.yaml": VLLM_MANIFEST,
        "run.sh": "#!/bin/sh\n# kvlint: gpu=H100-SXM-80GB engine-version=0.19.1\n"
                  "vllm serve meta-llama/Llama-3.1-8B-Instruct --config conf/serve.yaml --max-num-seqs 64\n",
        "conf/serve.yaml": "attention-backend: FLASH_ATTN\nkv-cache-dtype: fp8_e5m2\nmax-model-len: 32768\n"
                           "gpu-memory-utilization: 0.9\nmax-num-seqs: 8\n",
    })
    monkeypatch.chdir(tmp_path)
    native = _check("run.sh")
    assert _findings(native) == _findings(_check("manifest.yaml"))
    # a finding on a value from the file points at the `--config` argument that names it
    (kv301,) = [d for d in native if d["code"] == "KV301"]
    line = "vllm serve meta-llama/Llama-3.1-8B-Instruct --config conf/serve.yaml --max-num-seqs 64"
    assert (kv301["line"], kv301["column"]) == (3, line.index("conf/serve.yaml") + 1)
    # the command line wins over the file (--max-num-seqs 64, not the file's 8)
    assert _capacity("run.sh") == _capacity("manifest.yaml")


@pytest.mark.parametrize("written, why", [
    ("/etc/vllm/serve.yaml", "an absolute path"),
    ("missing.yaml", "no such file"),
    ("../outside.yaml", "leads outside the project"),
])
def test_a_config_file_kvlint_cannot_read_is_said(written, why, tmp_path, monkeypatch):
    project = tmp_path / "project"
    project.mkdir()
    (tmp_path / "outside.yaml").write_text("kv-cache-dtype: fp8\n", encoding="utf-8")
    _write(project, {"run.sh": f"#!/bin/sh\n# kvlint: gpu=H100-SXM-80GB engine-version=0.19.1\n"
                               f"vllm serve org/m --config {written}\n"})
    monkeypatch.chdir(project)
    (kv208,) = [d for d in _check("run.sh") if d["code"] == "KV208"]
    assert why in kv208["message"] and "not checked" in kv208["message"]
    assert (kv208["line"], kv208["column"]) == (3, len("vllm serve org/m --config ") + 1)


UNKNOWN_GPU_MANIFEST = VLLM_MANIFEST.replace(
    "  gpu: H100-SXM-80GB\n", "  gpu: ACME-X1\n  compute_capability: \"8.6\"\n  memory: 24GiB\n")


@pytest.mark.parametrize("cc", ["8.6", "sm_86", "sm86"])
def test_an_unknown_gpu_described_in_annotations_is_checked_like_the_manifest(cc, tmp_path, monkeypatch):
    """`kvlint.dev/gpu-compute-capability` + `kvlint.dev/gpu-memory` describe a GPU the catalog
    does not know; the rules run on it as on a manifest's hardware.compute_capability/memory."""
    native = VLLM_NATIVE["k8s-args.yaml"].replace(
        "      nodeSelector:\n        nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3\n", "").replace(
        "  template:\n    metadata:\n",
        "  template:\n    metadata:\n      annotations:\n        kvlint.dev/gpu: ACME-X1\n"
        f"        kvlint.dev/gpu-compute-capability: \"{cc}\"\n        kvlint.dev/gpu-memory: 24GiB\n")
    _write(tmp_path, {"manifest.yaml": UNKNOWN_GPU_MANIFEST, "k8s.yaml": native})
    monkeypatch.chdir(tmp_path)
    manifest = _check("manifest.yaml")
    codes = {d["code"] for d in manifest}
    # SM86 has no FP8 FlashAttention: the pinned FLASH_ATTN rejects the cache (a GPU check ran)
    assert "KV202" not in codes and "KV301" in codes, codes
    assert _findings(_check("k8s.yaml")) == _findings(manifest)
    assert _capacity("k8s.yaml") == _capacity("manifest.yaml")


def test_a_compute_capability_that_is_not_one_is_said(tmp_path, monkeypatch):
    native = VLLM_NATIVE["k8s-args.yaml"].replace(
        "  template:\n    metadata:\n",
        "  template:\n    metadata:\n      annotations:\n        kvlint.dev/gpu-compute-capability: ampere\n")
    _write(tmp_path, {"k8s.yaml": native})
    monkeypatch.chdir(tmp_path)
    (bad,) = [d for d in _check("k8s.yaml") if "gpu-compute-capability" in d["message"]]
    line = native.splitlines().index("        kvlint.dev/gpu-compute-capability: ampere") + 1
    assert (bad["code"], bad["line"]) == ("KV320", line) and "'ampere'" in bad["message"]


def test_a_missing_fact_names_the_three_ways_and_what_did_not_run(tmp_path, monkeypatch):
    native = VLLM_NATIVE["k8s-args.yaml"].replace(
        "      nodeSelector:\n        nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3\n", "")
    _write(tmp_path, {"k8s.yaml": native})
    monkeypatch.chdir(tmp_path)
    found = _check("k8s.yaml")
    (missing,) = [d for d in found if d["code"] == "KV207"]
    for way in ("kvlint.dev/gpu", "# kvlint: gpu=", "[defaults]"):
        assert way in missing["message"]
    assert "did not run" in missing["message"]


def test_rendered_helm_output_on_standard_input(tmp_path, monkeypatch):
    """`helm template … | kvlint check -`: standard input is read as native YAML too, with the
    same findings and positions as the file, and `kvlint convert -` prints its manifest."""
    rendered = "---\n# Source: chart/templates/deployment.yaml\n" + VLLM_NATIVE["k8s-args.yaml"]
    _write(tmp_path, {"manifest.yaml": VLLM_MANIFEST})
    monkeypatch.chdir(tmp_path)
    result = invoke(["check", "--output-format", "json", "-"], input=rendered)
    assert "Traceback" not in result.output
    found = json.loads(result.stdout)["diagnostics"]
    assert _findings(found) == _findings(_check("manifest.yaml"))
    (kv301,) = [d for d in found if d["code"] == "KV301"]
    assert (kv301["line"], kv301["column"]) == (23, rendered.splitlines()[22].index("fp8_e5m2") + 1)
    converted = invoke(["convert", "-"], input=rendered)
    assert converted.exit_code == 0 and 'dtype: "fp8_e5m2"' in converted.stdout
    # a script on standard input is read by its #! line
    script = invoke(["check", "--output-format", "json", "-"], input=VLLM_NATIVE["serve.sh"])
    assert _findings(json.loads(script.stdout)["diagnostics"]) == _findings(_check("manifest.yaml"))


ENV_AND_FLAG = """\
apiVersion: v1
kind: Pod
metadata:
  name: p
  annotations: {{kvlint.dev/gpu: H100-SXM-80GB}}
spec:
  containers:
    - name: e
      image: vllm/vllm-openai:v{release}
      env:
        - {{name: VLLM_ATTENTION_BACKEND, value: FLASHINFER}}
      args: [--model, meta-llama/Llama-3.1-8B-Instruct, --attention-backend, {flag}]
"""


@pytest.mark.parametrize("release, flag, expected", [
    # vllm/config/attention.py L93 (v0.13.0, v0.14.1): AttentionConfig.__post_init__ copies the
    # variable into attention_config.backend; vllm/engine/arg_utils.py L1646-1651 (v0.13.0) and
    # L1692-1697 (v0.14.1) raise "attention_backend and attention_config.backend are mutually
    # exclusive" when --attention-backend is given too, even when both name the same backend.
    ("0.13.0", "FLASH_ATTN", "KV312"),
    ("0.14.1", "FLASHINFER", "KV312"),
    # 0.15.0 dropped the variable from vllm/envs.py: it is ignored, and the flag runs
    ("0.15.0", "FLASH_ATTN", "KV313"),
])
def test_an_environment_variable_beside_the_backend_flag(release, flag, expected, tmp_path, monkeypatch):
    manifest = VLLM_MANIFEST.replace('"0.19.1"', f'"{release}"').replace(
        "  attention_backend: FLASH_ATTN\n",
        f"  attention_backend: {flag}\n  env: {{VLLM_ATTENTION_BACKEND: FLASHINFER}}\n").replace(
        "kv_cache:\n  dtype: fp8_e5m2\n", "kv_cache:\n  dtype: auto\n")
    _write(tmp_path, {"manifest.yaml": manifest, "pod.yaml": ENV_AND_FLAG.format(release=release, flag=flag)})
    monkeypatch.chdir(tmp_path)
    native = _check("pod.yaml")
    assert expected in {d["code"] for d in native}
    assert {d["code"] for d in _check("manifest.yaml")} >= {expected}
    if expected == "KV312":
        (finding,) = [d for d in native if d["code"] == "KV312"]
        line = ENV_AND_FLAG.format(release=release, flag=flag).splitlines()[11]
        assert (finding["line"], finding["column"]) == (12, line.index(flag) + 1)
        assert "mutually exclusive" in finding["message"]
    # without the variable the flag alone is fine on every one of these releases
    alone = ENV_AND_FLAG.format(release=release, flag=flag).replace(
        "      env:\n        - {name: VLLM_ATTENTION_BACKEND, value: FLASHINFER}\n", "")
    (tmp_path / "alone.yaml").write_text(alone, encoding="utf-8")
    assert not {"KV312", "KV313"} & {d["code"] for d in _check("alone.yaml")}
