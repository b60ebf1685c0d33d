"""`# kvlint: key=value` statements in native files: only real comments count, and the keys
docs/native.md lists work as it says (kvlint/adapters/workload.py)."""

from __future__ import annotations

import textwrap

from kvlint.adapters import adapt
from kvlint.adapters.result import Adapted


def only(path: str, text: str) -> Adapted:
    adaptation = adapt(path, textwrap.dedent(text).lstrip("\n"))
    assert len(adaptation.workloads) == 1, [p.message for p in adaptation.problems]
    return adaptation.workloads[0]


def test_statement_inside_a_compose_string_is_content_not_a_statement():
    workload = only("compose.yaml", """
        # kvlint: gpu=H100-SXM-80GB
        services:
          vllm:
            image: vllm/vllm-openai:v0.19.1
            environment:
              NOTE: "# kvlint: engine-version=0.11.0 gpu=A100-SXM4-80GB"
            command: ["--model", "Qwen/Qwen2.5-7B-Instruct"]
    """)
    assert workload.manifest["engine"]["version"] == "0.19.1"
    assert workload.manifest["hardware"]["gpu"] == "H100-SXM-80GB"


def test_statement_inside_a_shell_string_is_content_not_a_statement():
    workload = only("serve.sh", """
        #!/bin/bash
        # kvlint: engine-version=0.19.1
        echo "# kvlint: engine-version=0.11.0 gpu=A100-SXM4-80GB"
        vllm serve Qwen/Qwen2.5-7B-Instruct
    """)
    assert workload.manifest["engine"]["version"] == "0.19.1"
    assert "gpu" not in workload.manifest.get("hardware", {})
    assert "/hardware/gpu" in workload.missing


def test_statement_inside_a_dockerfile_label_is_content_not_a_statement():
    workload = only("Dockerfile", """
        FROM vllm/vllm-openai:v0.19.1
        LABEL note="# kvlint: engine-version=0.11.0"
        # kvlint: gpu=H100-SXM-80GB
        CMD ["--model", "Qwen/Qwen2.5-7B-Instruct"]
    """)
    assert workload.manifest["engine"]["version"] == "0.19.1"
    assert workload.manifest["hardware"]["gpu"] == "H100-SXM-80GB"


def test_metal_backend_statement_needs_no_gpu_model():
    workload = only("serve.sh", """
        #!/bin/bash
        # kvlint: engine-version=b6840 backend=metal model=Qwen/Qwen2.5-7B-Instruct
        llama-server -m qwen2.5-7b-instruct-q4_k_m.gguf -c 8192 -ctk q8_0 -ctv q8_0 -fa on
    """)
    assert workload.manifest["engine"]["build"]["backend"] == "metal"
    assert "/hardware/gpu" not in workload.missing
    # the statement names the model a .gguf file holds: no conflict with -m
    assert workload.manifest["model"]["name"] == "Qwen/Qwen2.5-7B-Instruct"
    assert not [p for p in workload.problems if p.code == "KV322"]


def test_ngl_zero_runs_the_cache_on_the_cpu():
    workload = only("serve.sh", """
        #!/bin/bash
        # kvlint: engine-version=b6840
        llama-server -m model.gguf -c 4096 -ngl 0
    """)
    assert workload.manifest["engine"]["build"]["backend"] == "cpu"
    assert "/hardware/gpu" not in workload.missing
    span = workload.value_spans["/engine/build/backend"]
    line = "llama-server -m model.gguf -c 4096 -ngl 0"
    assert (span.line, span.column) == (3, line.index("-ngl 0") + len("-ngl ") + 1)  # the 0 of -ngl 0


def test_gpu_count_statement_answers_count_all():
    workload = only("compose.yaml", """
        # kvlint: gpu=H100-SXM-80GB gpu-count=2
        services:
          vllm:
            image: vllm/vllm-openai:v0.19.1
            command: ["--model", "Qwen/Qwen2.5-7B-Instruct", "-tp", "2"]
            deploy: {resources: {reservations: {devices: [{driver: nvidia, count: all, capabilities: [gpu]}]}}}
    """)
    assert workload.manifest["hardware"]["count"] == 2
    assert not [p for p in workload.problems if p.code == "KV207"]


def test_compute_capability_and_memory_describe_an_uncatalogued_gpu():
    workload = only("serve.sh", """
        #!/bin/bash
        # kvlint: engine-version=0.19.1 gpu-compute-capability=8.9 gpu-memory=48GiB
        vllm serve Qwen/Qwen2.5-7B-Instruct
    """)
    assert "/hardware/gpu" not in workload.missing
    assert workload.manifest["hardware"]["compute_capability"] == "8.9"
    assert workload.manifest["hardware"]["memory"] == "48GiB"
