"""Each native format: the manifest produced and the native line/column of key fields."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Tuple

import jsonschema
import pytest

from kvlint.adapters import Adapted, adapt, sniff
from kvlint.adapters.engine_config import merge_config
from kvlint.load import load_text

from conftest import REPO_ROOT

NATIVE = REPO_ROOT / "tests" / "fixtures" / "native"
SCHEMA = json.loads((REPO_ROOT / "schemas" / "manifest.v1.json").read_text())


def read(name: str):
    path = NATIVE / name
    text = path.read_text()
    return adapt(str(path), text, load_text(text, str(path)).documents if path.suffix in (".yaml", ".yml") else None)


def only(name: str) -> Adapted:
    result = read(name)
    assert len(result.workloads) == 1, [w.name for w in result.workloads]
    return result.workloads[0]


def at(workload: Adapted, ptr: str) -> Tuple[int, int]:
    span = workload.value_spans[ptr]
    return (span.line, span.column)


def column_of(path: Path, line: int, needle: str) -> int:
    return path.read_text().splitlines()[line - 1].index(needle) + 1


def test_deployment_with_args_list():
    w = only("k8s-deployment-args.yaml")
    m = w.manifest
    assert w.name == "Deployment/llama70b-fp8/vllm"
    assert m["metadata"]["name"] == "llama70b-fp8-vllm"
    assert m["engine"] == {
        "name": "vllm", "version": "0.19.1", "options": {"enable_prefix_caching": False},
        "env": {"VLLM_ATTENTION_BACKEND": "FLASH_ATTN"},
    }
    assert m["hardware"] == {"gpu": "NVIDIA-H100-80GB-HBM3", "count": 8}
    assert m["model"] == {"name": "meta-llama/Llama-3.1-70B-Instruct"}
    assert m["parallelism"] == {"tensor": 8}
    assert m["kv_cache"] == {"dtype": "fp8_e5m2"}
    assert m["serving"] == {"max_model_len": 32768}
    assert m["memory"] == {"gpu_memory_utilization": 0.92}
    # `- --kv-cache-dtype=fp8_e5m2` (line 31): the value after `=`, and the flag itself
    path = NATIVE / "k8s-deployment-args.yaml"
    assert at(w, "/kv_cache/dtype") == (31, column_of(path, 31, "fp8_e5m2"))
    assert w.key_spans["/kv_cache/dtype"].column == column_of(path, 31, "--kv-cache-dtype")
    assert at(w, "/serving/max_model_len") == (33, column_of(path, 33, "32768"))
    assert at(w, "/engine/version") == (26, column_of(path, 26, "vllm/vllm-openai"))
    assert at(w, "/hardware/gpu") == (20, column_of(path, 20, "NVIDIA-H100"))
    assert w.provenance["/kv_cache/dtype"] == "container 'vllm' args[2]: --kv-cache-dtype"
    assert w.provenance["/engine/version"] == "container 'vllm' image tag"
    assert w.missing == {}
    assert w.problems == []
    jsonschema.validate(m, SCHEMA)


def test_bash_c_multiline_block_scalar():
    w = only("k8s-bash-c-multiline.yaml")
    m = w.manifest
    path = NATIVE / "k8s-bash-c-multiline.yaml"
    assert m["model"]["name"] == "Qwen/Qwen3-32B"
    assert m["parallelism"]["tensor"] == 2  # $(TP) from the container env
    assert m["serving"]["max_model_len"] == 40960  # ${MAX_LEN:-40960} default
    assert m["kv_cache"] == {"dtype": "fp8_e4m3", "block_size": 16}
    assert m["engine"]["attention_backend"] == "FLASHINFER"
    assert m["engine"]["env"]["VLLM_ATTENTION_BACKEND"] == "FLASHINFER"  # configMapKeyRef, same file
    assert m["hardware"] == {"gpu": "H100-SXM-80GB", "count": 2}
    assert m["targets"] == {"min_concurrency": 16}
    # the flag's own column inside the `|` block scalar
    assert at(w, "/kv_cache/dtype") == (39, column_of(path, 39, "fp8_e4m3"))
    assert w.key_spans["/kv_cache/dtype"].column == column_of(path, 39, "--kv-cache-dtype")
    assert at(w, "/engine/attention_backend") == (42, column_of(path, 42, "FLASHINFER"))
    assert at(w, "/parallelism/tensor") == (38, column_of(path, 38, "$(TP)"))
    assert at(w, "/model/name") == (37, column_of(path, 37, "Qwen/Qwen3-32B"))
    assert at(w, "/engine/env/VLLM_ATTENTION_BACKEND") == (8, column_of(path, 8, "FLASHINFER"))
    assert w.provenance["/hardware/gpu"] == "annotation kvlint.dev/gpu"
    assert at(w, "/hardware/gpu") == (15, column_of(path, 15, "H100-SXM-80GB"))
    # the init container (which also runs vllm serve) is not an engine
    assert [x.name for x in read("k8s-bash-c-multiline.yaml").workloads] == ["Deployment/qwen3-32b/engine"]
    jsonschema.validate(m, SCHEMA)


def test_statefulset_with_sglang():
    w = only("k8s-statefulset-sglang.yaml")
    m = w.manifest
    assert m["engine"]["name"] == "sglang" and m["engine"]["version"] == "0.5.2"
    assert m["engine"]["attention_backend"] == "fa3"
    assert m["hardware"] == {"gpu": "H100-SXM-80GB", "count": 2}  # GKE accelerator label
    assert m["parallelism"] == {"tensor": 2}
    assert m["kv_cache"] == {"dtype": "fp8_e4m3", "block_size": 16}
    assert m["memory"] == {"mem_fraction_static": 0.85}
    assert m["serving"] == {"max_model_len": 40960}
    assert at(w, "/kv_cache/dtype") == (32, 11)
    assert at(w, "/parallelism/tensor") == (30, 12)  # the "2" after --tp (quoted)
    assert [(p.kind, p.span.line) for p in w.problems] == [("abbreviated-flag", 29)]
    jsonschema.validate(m, SCHEMA)


def test_kserve_serving_runtime_and_inference_service():
    result = read("kserve-servingruntime.yaml")
    runtime, isvc = result.workloads
    assert runtime.name == "ServingRuntime/vllm-runtime/kserve-container"
    # --model=/mnt/models is a path: the annotation names the model
    assert runtime.manifest["model"]["name"] == "meta-llama/Llama-3.1-8B-Instruct"
    assert runtime.provenance["/model/name"] == "annotation kvlint.dev/model"
    assert runtime.manifest["kv_cache"]["dtype"] == "fp8"
    assert runtime.manifest["serving"]["max_model_len"] == 16384
    assert "/engine/version" in runtime.missing and "quay.io/modh/vllm" in runtime.missing["/engine/version"]
    assert runtime.provenance["/engine/version"] == "missing"
    assert "version" not in runtime.manifest["engine"]
    assert [p.kind for p in runtime.problems] == ["unresolved-value"]  # {{.Name}}
    assert isvc.name == "InferenceService/llama-8b/kserve-container"
    assert isvc.manifest["engine"]["version"] == "0.11.0"
    assert isvc.manifest["engine"]["options"] == {"calculate_kv_scales": True}
    assert isvc.manifest["hardware"] == {"gpu": "L40S", "count": 1}
    jsonschema.validate(isvc.manifest, SCHEMA)
    # positions: inside a double-quoted list item, and a plain item of the InferenceService
    path = NATIVE / "kserve-servingruntime.yaml"
    assert at(runtime, "/kv_cache/dtype") == (29, column_of(path, 29, "fp8"))
    assert at(runtime, "/serving/max_model_len") == (30, column_of(path, 30, "16384"))
    assert at(isvc, "/engine/version") == (48, column_of(path, 48, "vllm/vllm-openai"))
    assert at(isvc, "/engine/options/calculate_kv_scales")[0] == 52


def test_leader_worker_set():
    w = only("lws-multinode.yaml")
    m = w.manifest
    assert w.name == "LeaderWorkerSet/vllm-405b/leader/vllm-leader"
    assert m["parallelism"] == {"tensor": 8, "pipeline": 2}
    assert m["hardware"] == {"gpu": "H100-SXM-80GB", "count": 16}  # 8 per pod × group size 2
    assert "× leaderWorkerTemplate.size" in w.provenance["/hardware/count"]
    assert w.provenance["/hardware/gpu"] == "nodeSelector node.kubernetes.io/instance-type"
    path = NATIVE / "lws-multinode.yaml"
    # inside a double-quoted flow scalar folded over two lines
    assert at(w, "/kv_cache/dtype") == (29, column_of(path, 29, "fp8"))
    assert at(w, "/parallelism/pipeline") == (29, column_of(path, 29, "--pipeline_parallel_size 2") + len("--pipeline_parallel_size "))
    jsonschema.validate(m, SCHEMA)


def test_file_without_engines_yields_nothing():
    result = read("k8s-mixed-no-engine.yaml")
    assert result.format == "kubernetes"
    assert result.workloads == [] and result.problems == []


def test_production_stack_values():
    result = read("production-stack-values.yaml")
    assert result.format == "helm-production-stack"
    qwen, llama = result.workloads
    assert qwen.manifest["engine"]["version"] == "0.19.1"
    assert qwen.manifest["hardware"] == {"gpu": "NVIDIA-H100-80GB-HBM3", "count": 2}
    assert qwen.manifest["kv_cache"] == {"dtype": "fp8_e4m3", "skip_layers": ["sliding_window"]}
    assert qwen.manifest["serving"] == {"max_model_len": 40960, "max_num_seqs": 128}
    assert qwen.manifest["memory"] == {"gpu_memory_utilization": 0.9}
    # absent enablePrefixCaching: the chart renders --no-enable-prefix-caching
    assert qwen.manifest["engine"]["options"] == {"enable_prefix_caching": False}
    path = NATIVE / "production-stack-values.yaml"
    assert at(qwen, "/kv_cache/dtype") == (23, column_of(path, 23, "fp8_e4m3"))
    assert at(qwen, "/serving/max_num_seqs") == (23, column_of(path, 23, "128"))
    assert at(qwen, "/parallelism/tensor") == (20, column_of(path, 20, "2"))
    jsonschema.validate(qwen.manifest, SCHEMA)
    assert "/engine/version" in llama.missing
    assert {p.kind for p in llama.problems} == {"unpinned-image", "repeated-flag", "unexpected-argument"}
    stray = [p for p in llama.problems if p.kind == "unexpected-argument"][0]
    assert (stray.span.line, stray.span.column) == (41, column_of(path, 41, "true"))
    assert llama.manifest["hardware"]["gpu"] == "L4"  # podAnnotations kvlint.dev/gpu


def test_compose():
    w = only("docker-compose.yaml")
    m = w.manifest
    assert w.name == "compose/vllm"
    assert m["engine"]["version"] == "0.19.1"
    assert m["model"]["name"] == "mistralai/Mistral-7B-Instruct-v0.3"
    assert m["hardware"] == {"gpu": "L40S", "count": 1}
    assert m["serving"]["max_model_len"] == 32768  # ${MAX_MODEL_LEN:-32768}
    assert m["engine"]["env"] == {"VLLM_ATTENTION_BACKEND": "TRITON_ATTN"}
    path = NATIVE / "docker-compose.yaml"
    assert at(w, "/kv_cache/dtype") == (15, column_of(path, 15, "fp8"))
    assert w.provenance["/hardware/gpu"].startswith("comment")
    jsonschema.validate(m, SCHEMA)


def test_shell_script():
    w = only("serve-llama.sh")
    m = w.manifest
    assert m["engine"]["version"] == "0.19.1"  # pip pin
    assert m["model"]["name"] == "meta-llama/Llama-3.1-8B-Instruct"  # ${MODEL:-…}
    assert m["serving"] == {"max_model_len": 32000, "max_num_seqs": 64}
    assert m["engine"]["env"] == {"VLLM_ATTENTION_BACKEND": "FLASHINFER"}
    assert m["engine"]["options"] == {"calculate_kv_scales": True}
    assert at(w, "/kv_cache/dtype") == (13, 20)
    assert at(w, "/engine/version") == (6, 20)
    jsonschema.validate(m, SCHEMA)


def test_dockerfile_cmd():
    w = only("Dockerfile")
    m = w.manifest
    assert m["engine"]["version"] == "0.25.1"  # last stage's FROM
    assert m["kv_cache"]["dtype"] == "fp8_per_token_head"
    assert m["serving"]["max_model_len"] == 131072
    assert m["engine"]["env"] == {"VLLM_ATTENTION_BACKEND": "TRITON_ATTN"}
    path = NATIVE / "Dockerfile"
    assert at(w, "/kv_cache/dtype") == (11, column_of(path, 11, "fp8_per_token_head"))
    assert at(w, "/serving/max_model_len") == (12, column_of(path, 12, "131072"))
    assert set(w.missing) == {"/hardware/gpu"}


def test_vllm_config_file():
    w = only("vllm-serve-config.yaml")
    m = w.manifest
    assert m["engine"] == {
        "name": "vllm", "version": "0.19.1", "attention_backend": "FLASH_ATTN",
        "options": {"attention_config": {"backend": "FLASH_ATTN"}},
    }
    assert m["kv_cache"] == {"dtype": "fp8_e4m3", "skip_layers": ["sliding_window"]}
    assert m["serving"] == {"max_model_len": 40960}
    assert at(w, "/kv_cache/dtype") == (6, 17)
    assert w.key_spans["/kv_cache/dtype"].column == 1
    assert [(p.kind, p.span.line) for p in w.problems] == [("ignored-config", 11)]
    jsonschema.validate(m, SCHEMA)


def test_trtllm_extra_options():
    w = only("trtllm-extra-options.yaml")
    m = w.manifest
    assert m["engine"]["name"] == "tensorrt-llm" and m["engine"]["version"] == "1.2.1"
    assert m["kv_cache"] == {"dtype": "fp8", "block_size": 32}
    assert m["memory"] == {"free_gpu_memory_fraction": 0.85}
    assert m["serving"] == {"max_model_len": 32768, "max_num_seqs": 64}
    assert m["engine"]["attention_backend"] == "TRTLLM"
    assert "max_batch_size" not in m["engine"]["options"]
    assert m["engine"]["options"]["kv_cache_config"]["enable_block_reuse"] is True
    assert at(w, "/kv_cache/dtype") == (7, 10)
    jsonschema.validate(m, SCHEMA)


def test_merge_config_file_into_command():
    cmd = adapt("run.sh", "# kvlint: gpu=H100\nvllm serve Qwen/Qwen3-32B --config serve.yaml --kv-cache-dtype fp8\n")
    workload = cmd.workloads[0]
    reference = workload.references[0]
    assert (reference.path, reference.span.line) == ("serve.yaml", 2)
    config = only("vllm-serve-config.yaml")
    merged = merge_config(workload, config, reference.span)
    assert merged.manifest["kv_cache"]["dtype"] == "fp8"  # the command line wins
    assert merged.manifest["parallelism"]["tensor"] == 2  # from the file
    assert merged.value_spans["/parallelism/tensor"] == reference.span
    assert "vllm-serve-config.yaml line 4" in merged.provenance["/parallelism/tensor"]


def test_document_view_matches_load_document():
    w = only("k8s-deployment-args.yaml")
    doc = w.document()
    assert doc.data is w.manifest
    assert doc.span("/kv_cache/dtype") == w.value_spans["/kv_cache/dtype"]
    # an absent field falls back to its nearest ancestor, as for manifests
    assert doc.span("/hardware/memory") == w.value_spans["/hardware"]


@pytest.mark.parametrize(
    "name, expected",
    [
        ("k8s-deployment-args.yaml", "kubernetes"),
        ("production-stack-values.yaml", "helm-production-stack"),
        ("docker-compose.yaml", "compose"),
        ("serve-llama.sh", "shell"),
        ("Dockerfile", "dockerfile"),
        ("vllm-serve-config.yaml", "vllm-config"),
        ("trtllm-extra-options.yaml", "trtllm-options"),
    ],
)
def test_sniff(name, expected):
    head = (NATIVE / name).read_bytes()[:4096]
    assert sniff(name, head) == expected
    assert read(name).format == expected


def test_sniff_rejects_kvlint_manifests_and_other_files():
    manifest = (REPO_ROOT / "examples" / "llama70b-fp8-h100.yaml").read_bytes()
    assert sniff("llama70b-fp8-h100.yaml", manifest) is None
    assert sniff("README.md", b"# vllm serve") is None
    assert sniff("ci.yml", b"on: push\njobs: {}\n") is None
    text = manifest.decode()
    assert adapt("llama70b-fp8-h100.yaml", text).workloads == []


def pod(containers: str, annotations: str = "") -> str:
    return (
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n"
        + (f"  annotations:\n{annotations}" if annotations else "")
        + "spec:\n  containers:\n" + containers
    )


def test_args_after_the_image_entrypoint():
    text = pod("    - name: e\n      image: vllm/vllm-openai:v0.19.1\n      args: [org/m, --kv-cache-dtype, fp8]\n")
    (w,) = adapt("p.yaml", text).workloads
    assert w.manifest["model"]["name"] == "org/m"
    assert w.manifest["kv_cache"]["dtype"] == "fp8"
    assert w.problems == []
    repeated = pod("    - name: e\n      image: vllm/vllm-openai:v0.19.1\n      args: [vllm, serve, org/m]\n")
    (w,) = adapt("p.yaml", repeated).workloads
    assert [(p.kind, p.span.line, p.span.column) for p in w.problems] == [("unexpected-argument", 9, 14)]


def test_container_annotation_picks_the_engine_container():
    text = pod(
        "    - name: a\n      image: vllm/vllm-openai:v0.19.1\n      args: [org/a]\n"
        "    - name: b\n      image: vllm/vllm-openai:v0.19.1\n      args: [org/b]\n",
        "    kvlint.dev/container: b\n",
    )
    assert [w.name for w in adapt("p.yaml", text).workloads] == ["Pod/p/b"]
    both = pod(
        "    - name: a\n      image: vllm/vllm-openai:v0.19.1\n      args: [org/a]\n"
        "    - name: b\n      image: lmsysorg/sglang:v0.5.9-cu129\n"
        "      command: [python3, -m, sglang.launch_server, --model-path, org/b]\n"
    )
    names = {w.name: (w.manifest["engine"]["name"], w.manifest["engine"]["version"]) for w in adapt("p.yaml", both).workloads}
    assert names == {"Pod/p/a": ("vllm", "0.19.1"), "Pod/p/b": ("sglang", "0.5.9")}


def test_annotation_conflicting_with_inferred_and_native_facts():
    text = pod(
        "    - name: e\n      image: vllm/vllm-openai:v0.19.1\n      args: [org/m, --tensor-parallel-size, '2']\n",
        "    kvlint.dev/engine-version: v0.20.0\n    kvlint.dev/model: other/model\n",
    )
    (w,) = adapt("p.yaml", text).workloads
    assert w.manifest["engine"]["version"] == "0.20.0"  # the statement replaces the image tag
    assert w.provenance["/engine/version"] == "annotation kvlint.dev/engine-version"
    assert w.manifest["model"]["name"] == "org/m"  # but not an engine argument
    assert sorted((p.kind, p.severity) for p in w.problems) == [
        ("conflicting-facts", "info"), ("conflicting-facts", "warning"),
    ]


POD_SPEC = """\
nodeSelector:
  {label}: {value}
containers:
  - name: engine
    image: {image}
    args: ["--model", "meta-llama/Llama-3.1-8B-Instruct", "--kv-cache-dtype=fp8"]
    resources:
      limits:
        {resource}: 2
"""


def _indent(text: str, by: int) -> str:
    return "".join(" " * by + line if line.strip() else line for line in text.splitlines(True))


@pytest.mark.parametrize("kind, head, depth", [
    ("DaemonSet", "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: w}\nspec:\n  template:\n    spec:\n", 6),
    ("ReplicaSet", "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {name: w}\nspec:\n  template:\n    spec:\n", 6),
    ("Job", "apiVersion: batch/v1\nkind: Job\nmetadata: {name: w}\nspec:\n  template:\n    spec:\n", 6),
    ("CronJob", "apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: w}\nspec:\n  schedule: '0 * * * *'\n"
                "  jobTemplate:\n    spec:\n      template:\n        spec:\n", 10),
    ("Pod", "apiVersion: v1\nkind: Pod\nmetadata: {name: w}\nspec:\n", 2),
])
@pytest.mark.parametrize("label, value, image, resource, gpu", [
    ("nvidia.com/gpu.product", "NVIDIA-L40S", "vllm/vllm-openai:v0.19.1", "nvidia.com/gpu", "NVIDIA-L40S"),
    ("amd.com/gpu.product-name", "AMD_Instinct_MI300X_OAM", "rocm/vllm:rocm6.4.1_vllm_0.9.0.1_20250605",
     "amd.com/gpu", "MI300X"),
])
def test_every_workload_kind_and_gpu_vendor(kind, head, depth, label, value, image, resource, gpu):
    text = head + _indent(POD_SPEC.format(label=label, value=value, image=image, resource=resource), depth)
    (w,) = adapt("w.yaml", text).workloads
    assert w.name == f"{kind}/w/engine"
    assert w.manifest["hardware"] == {"gpu": gpu, "count": 2}
    assert w.manifest["kv_cache"]["dtype"] == "fp8"
    lines = text.splitlines()
    row = next(i for i, line in enumerate(lines) if "--kv-cache-dtype=fp8" in line)
    assert at(w, "/kv_cache/dtype") == (row + 1, lines[row].index("fp8\"") + 1)
    assert at(w, "/hardware/count")[0] == next(i for i, line in enumerate(lines) if resource + ":" in line) + 1


def test_a_script_is_asked_for_its_own_engines_release():
    """The hint names the engine's own pin, and that pin is what the script reader takes."""
    command = "python3 -m sglang.launch_server --model-path Qwen/Qwen3-32B --kv-cache-dtype fp8_e4m3\n"
    (bare,) = adapt("serve.sh", "#!/bin/sh\n" + command).workloads
    assert "sglang[all]==X" in bare.missing["/engine/version"] and "vllm" not in bare.missing["/engine/version"]
    (pinned,) = adapt("serve.sh", '#!/bin/sh\npip install "sglang[all]==0.5.2"\n' + command).workloads
    assert pinned.manifest["engine"]["version"] == "0.5.2" and "/engine/version" not in pinned.missing


def test_a_workload_is_asked_for_a_release_of_its_own_engine():
    text = pod("    - name: e\n      image: lmsysorg/sglang:latest\n"
               "      command: [python3, -m, sglang.launch_server, --model-path, org/m]\n")
    (w,) = adapt("p.yaml", text).workloads
    assert 'kvlint.dev/engine-version: "0.5.2"' in w.missing["/engine/version"]
    assert "0.19.1" not in w.missing["/engine/version"]  # a vLLM release would mislead
