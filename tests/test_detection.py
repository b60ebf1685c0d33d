"""Which files kvlint reads as what: sniffing the whole file, files named on the command line that
are no deployment, and kvlint manifests whose apiVersion is damaged."""

from __future__ import annotations

import json

import pytest

from conftest import invoke

from kvlint.adapters import sniff

MANIFEST_BODY = """\
kind: Deployment
metadata:
  name: llama8b
engine:
  name: vllm
  version: "0.19.1"
hardware:
  gpu: H100-SXM-80GB
  count: 1
model:
  name: meta-llama/Llama-3.1-8B-Instruct
kv_cache:
  dtype: fp8_e5m2
"""

# vLLM's own examples/online_serving compose style, with a long header and an x- anchor first
LATE_COMPOSE = (
    "".join(f"# line {i}: notes on this stack, kept by the platform team ....................\n" for i in range(120))
    + "x-common: &common\n  restart: unless-stopped\n  ipc: host\n"
    + "services:\n"
    + "  vllm:\n"
    + "    <<: *common\n"
    + "    image: vllm/vllm-openai:v0.19.1\n"
    + '    command: ["--model", "meta-llama/Llama-3.1-8B-Instruct", "--kv-cache-dtype", "fp8_e5m2"]\n'
    + "    deploy:\n      resources:\n        reservations:\n          devices:\n"
    + "            - driver: nvidia\n              count: 1\n              capabilities: [gpu]\n"
)


def _run(args, **kw):
    result = invoke(["check", "--output-format", "json", *args], **kw)
    assert "Traceback" not in result.output
    return result, json.loads(result.stdout)


def _found(report):
    return [(d["code"], d["line"], d["column"]) for d in report["diagnostics"]]


def test_compose_services_after_8_kib_is_read_as_compose(workspace, write):
    assert LATE_COMPOSE.index("services:") > 8 * 1024
    assert sniff("stack.yaml", LATE_COMPOSE.encode()) == "compose"
    write("stack.yaml", LATE_COMPOSE)
    result, report = _run(["stack.yaml"])
    # the service's mapping starts on the line after `  vllm:`
    service_line = LATE_COMPOSE[: LATE_COMPOSE.index("    <<: *common")].count("\n") + 1
    # read as compose (not validated as a kvlint manifest): one workload, whose only gap is the
    # GPU model, reported on the service
    assert result.exit_code == 0
    assert report["summary"]["documents"] == 1
    assert _found(report) == [("KV207", service_line, 5)]
    assert report["diagnostics"][0]["message"].startswith("compose/vllm: the GPU model")


def test_compose_found_late_in_a_directory_walk(workspace, write):
    write("deploy/stack.yaml", LATE_COMPOSE)
    write("deploy/notes.yaml", "# nothing\nfoo: 1\n")
    _, report = _run(["deploy"])
    assert {d["file"] for d in report["diagnostics"]} == {"deploy/stack.yaml"}


def test_sniff_stays_linear_on_blank_lines():
    # `^\s*ollama:` backtracked over every run of blank lines; 4 MiB of them must sniff at once
    import time

    head = b"\n" * (4 * 1024 * 1024 - 16) + b"x: 1\n"
    start = time.monotonic()
    assert sniff("values.yaml", head) is None
    assert sniff("Modelfile", head) is None
    assert time.monotonic() - start < 5


@pytest.mark.parametrize(
    "name, text",
    [
        (".github/workflows/ci.yml", "name: CI\non: push\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps: []\n"),
        ("Chart.yaml", "apiVersion: v2\nname: vllm-stack\nversion: 0.1.0\nappVersion: \"0.19.1\"\n"),
        ("config.json", '{"architectures": ["LlamaForCausalLM"], "num_hidden_layers": 32}\n'),
        ("random.yaml", "foo: 1\nbar: [1, 2]\n"),
    ],
)
def test_a_named_file_that_is_no_deployment_is_one_info(workspace, write, name, text):
    write(name, text)
    result, report = _run([name])
    assert result.exit_code == 0, result.output
    assert _found(report) == [("KV208", 1, 1)]
    (only,) = report["diagnostics"]
    assert only["severity"] == "info" and only["message"].startswith("not a deployment kvlint reads")
    assert report["summary"]["documents"] == 0


def test_a_named_rule_file_is_no_deployment(workspace, write):
    """A rule file quotes manifests (`apiVersion: kvlint/v1` inside its examples' block scalars),
    which is what a walk's marker looks for; read, it holds no manifest."""
    from conftest import REPO_ROOT

    write("KV001.yaml", (REPO_ROOT / "rules" / "KV001-yaml-syntax.yaml").read_text(encoding="utf-8"))
    result, report = _run(["KV001.yaml"])
    assert result.exit_code == 0 and _found(report) == [("KV208", 1, 1)]


@pytest.mark.parametrize(
    "written, shown",
    [('""', "''"), ("kvlint", "'kvlint'"), ("[kvlint/v1]", '["kvlint/v1"]'), ("1", "1"), ("kvlint/v2", "'kvlint/v2'"),
     ("v1", "'v1'")],
)
def test_a_damaged_manifest_api_version_is_reported(workspace, write, written, shown):
    write("m.yaml", f"apiVersion: {written}\n" + MANIFEST_BODY)
    result, report = _run(["m.yaml"])
    assert result.exit_code == 1
    assert _found(report) == [("KV104", 1, 13)]
    assert report["diagnostics"][0]["message"].startswith(f"{shown} is not allowed for /apiVersion (expected kvlint/v1)")


def test_a_damaged_manifest_beside_kubernetes_objects(workspace, write):
    """In a file the sniff takes for Kubernetes (a Service first), the damaged manifest is still
    reported, and the Service is not judged against the manifest schema."""
    service = "apiVersion: v1\nkind: Service\nmetadata:\n  name: llama\nspec:\n  ports: [{port: 8000}]\n---\n"
    write("m.yaml", service + "apiVersion: kvlint\n" + MANIFEST_BODY)
    result, report = _run(["m.yaml"])
    assert result.exit_code == 1
    assert _found(report) == [("KV104", 8, 13)]
    assert "did you mean 'kvlint/v1'" in report["diagnostics"][0]["message"]


def test_a_manifest_without_api_version_is_still_validated(workspace, write):
    write("m.yaml", MANIFEST_BODY)
    result, report = _run(["m.yaml"])
    assert result.exit_code == 1
    assert ("KV101", 1, 1) in _found(report)
    assert any("'apiVersion'" in d["message"] for d in report["diagnostics"])


def test_stdin_that_is_no_deployment(workspace):
    result, report = _run(["-"], input="jobs: {}\n")
    assert result.exit_code == 0 and _found(report) == [("KV208", 1, 1)]
