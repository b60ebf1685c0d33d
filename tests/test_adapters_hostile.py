"""Hostile and broken native input: problems with spans, never a traceback or a hang."""

from __future__ import annotations


import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kvlint.adapters import adapt
from kvlint.load import load_text


def k8s(args_yaml: str, command: str = '["vllm", "serve"]') -> str:
    return (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: big}\nspec:\n  template:\n    spec:\n"
        "      containers:\n        - name: engine\n          image: vllm/vllm-openai:v0.19.1\n"
        f"          command: {command}\n          args:\n{args_yaml}"
    )


def test_ten_thousand_argument_list():
    # the loader's node budget (20,000 nodes per document) caps a YAML list, so the big command
    # line goes through a shell string, where nothing caps it but the file size
    script = "vllm serve m " + " ".join(f"--served-model-name n{i}" for i in range(10_000))
    text = k8s(f"            - {script}\n", command='["/bin/sh", "-c"]')
    result = adapt("big.yaml", text)  # its time is measured in benchmarks/native_ggml.py, not here
    (workload,) = result.workloads
    assert workload.manifest["model"]["name"] == "m"
    assert sum(p.kind == "repeated-flag" for p in workload.problems) == 9_999


def test_large_yaml_args_list():
    items = "".join(f"            - --served-model-name=n{i}\n" for i in range(5_000))
    result = adapt("big.yaml", k8s("            - m\n" + items))
    assert result.workloads[0].manifest["model"]["name"] == "m"


def test_quote_that_never_closes_in_bash_c():
    text = k8s(
        "            - |\n"
        "              vllm serve m --kv-cache-dtype 'fp8\n"
        "                --max-model-len 4096\n",
        command='["/bin/bash", "-c"]',
    )
    (workload,) = adapt("q.yaml", text).workloads
    shell = [p for p in workload.problems if p.kind == "shell-syntax"]
    assert len(shell) == 1 and shell[0].severity == "error"
    line = text.splitlines()[shell[0].span.line - 1]
    assert line[shell[0].span.column - 1] == "'"


def test_quote_that_never_closes_in_a_script():
    result = adapt("run.sh", "#!/bin/sh\nvllm serve m --kv-cache-dtype \"fp8\n")
    problems = [p for w in result.workloads for p in w.problems] + result.problems
    assert [(p.kind, p.span.line, p.span.column) for p in problems if p.kind == "shell-syntax"] == [
        ("shell-syntax", 2, 31)
    ]


def test_json_option_that_is_not_json():
    text = k8s("            - m\n            - --compilation-config\n            - '{\"mode\": 3,'\n")
    (workload,) = adapt("j.yaml", text).workloads
    (problem,) = [p for p in workload.problems if p.kind == "invalid-flag-value"]
    assert "not valid JSON" in problem.message
    assert problem.span.line == 14


def test_deeply_nested_yaml_is_a_load_problem_not_a_crash():
    nested = "a: " + "[" * 5000 + "]" * 5000 + "\n"
    loaded = load_text(nested, "deep.yaml")
    result = adapt("deep.yaml", nested, loaded.documents)
    assert result.workloads == []
    deep_k8s = k8s("            - m\n") + "          resources: " + "{a: " * 60 + "1" + "}" * 60 + "\n"
    adapt("deep2.yaml", deep_k8s)  # within the loader's depth budget: read, no exception
    very = "apiVersion: v1\nkind: Pod\nspec: " + "{a: " * 3000 + "1" + "}" * 3000 + "\n"
    assert adapt("deep3.yaml", very).workloads == []


def test_wrong_types_everywhere():
    for text in (
        "apiVersion: apps/v1\nkind: Deployment\nspec: 3\n",
        "apiVersion: apps/v1\nkind: Deployment\nspec: {template: {spec: {containers: [1, null, {image: 5}]}}}\n",
        "apiVersion: apps/v1\nkind: Deployment\nspec: {template: {spec: {containers: "
        "[{image: vllm/vllm-openai, command: [vllm, serve, 3, true, null]}]}}}\n",
        "servingEngineSpec: {modelSpec: [3, {name: x, vllmConfig: [1]}]}\n",
        "services: {a: {image: vllm/vllm-openai, command: {x: 1}}}\n",
        "kv_cache_config: 3\ntensor_parallel_size: x\n",
        "model: [1, 2]\nkv-cache-dtype: {a: 1}\n",
    ):
        result = adapt("x.yaml", text)
        for workload in result.workloads:
            assert workload.manifest["apiVersion"] == "kvlint/v1"


def test_binary_and_empty_input():
    assert adapt("x.yaml", "").workloads == []
    assert adapt("x.sh", "").workloads == []
    assert adapt("Dockerfile", "").workloads == []
    garbage = adapt("x.sh", "\x00\x01 vllm serve \x00 --kv-cache-dtype \udcff")
    assert garbage.workloads[0].manifest["kv_cache"]["dtype"] == "\udcff"
    assert not garbage.problems


def test_unpinned_and_missing_facts_are_listed():
    text = (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
        "    - name: e\n      image: vllm/vllm-openai:latest\n      args: [--model, org/m]\n"
    )
    (workload,) = adapt("p.yaml", text).workloads
    assert set(workload.missing) == {"/engine/version", "/hardware/gpu"}
    assert workload.provenance["/hardware/gpu"] == "missing"
    (unpinned,) = [p for p in workload.problems if p.kind == "unpinned-image"]
    assert (unpinned.code, unpinned.span.line) == ("KV206", 7)


def test_engine_image_without_readable_command_is_reported_at_file_level():
    text = (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
        "    - name: e\n      image: vllm/vllm-openai:v0.19.1\n      command: [/scripts/start.sh]\n"
    )
    result = adapt("p.yaml", text)
    assert result.workloads == []
    assert [p.kind for p in result.problems] == ["not-checked"]


_SCRIPT_ALPHABET = st.sampled_from(
    ["vllm", "serve", " ", "\n", "--kv-cache-dtype", "fp8", "'", '"', "\\", "$(", ")", "${X:-", "}",
     "--tp", "=", "-O3", "--max-model-len", "32k", "auto", ";", "&&", "|", "#", "python3", "-m",
     "sglang.launch_server", "trtllm-serve", "--tp_size", "{", "[", ",", "-ac.backend", "<<EOF"]
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_SCRIPT_ALPHABET, max_size=40).map("".join))
def test_fuzz_scripts_never_raise(text):
    result = adapt("fuzz.sh", text)
    assert result.format == "shell"
    assert not [p for p in result.problems if p.kind == "internal-error"]
    for workload in result.workloads:
        for span in workload.value_spans.values():
            assert span.line >= 1 and span.column >= 1
        for problem in workload.problems:
            assert problem.span.line >= 1


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_SCRIPT_ALPHABET, max_size=30).map("".join), st.sampled_from(["|", ">", "'", '"', ""]))
def test_fuzz_shell_strings_inside_yaml(script, style):
    try:
        text = k8s(
            "            - " + yaml.safe_dump(script, default_style=style or None, width=40).replace(
                "\n", "\n              "
            ).rstrip() + "\n",
            command='["/bin/bash", "-c"]',
        )
    except yaml.YAMLError:
        return
    result = adapt("fuzz.yaml", text)
    assert not [p for p in result.problems if p.kind == "internal-error"]


# --- llama.cpp and Ollama forms ---------------------------------------------------------------------

_GGML_ALPHABET = st.sampled_from(
    ["llama-server", "llama-cli", "ollama", "serve", " ", "\n", "\\\n", "-fa", "on", "auto", "-1", "-c",
     "32k", "-ctk", "-ctv", "q8_0", "-np", "-kvu", "-no-kvu", "--ctx-size=", "=", "'", '"', "$X", "${X:-4}",
     "docker", "run", "-e", "LLAMA_ARG_CTX_SIZE=", "LLAMA_ARG_NO_KV_UNIFIED=1", "OLLAMA_KV_CACHE_TYPE=",
     "OLLAMA_NUM_PARALLEL=x", "ghcr.io/ggml-org/llama.cpp:server-cuda-b6840", "ollama/ollama:0.13.3",
     "--entrypoint", "--lora-scaled", "Environment=", "ExecStart=", "[Service]", "#", ";", "\x00"]
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_GGML_ALPHABET, max_size=40).map("".join))
def test_fuzz_ggml_scripts_units_and_modelfiles_never_raise(text):
    for path, body in (
        ("fuzz.sh", text),
        ("ollama.service", "[Service]\n" + text),
        ("x/ollama.service.d/override.conf", "[Service]\nEnvironment=" + text),
        ("Modelfile", "FROM " + text + "\nPARAMETER num_ctx " + text),
    ):
        result = adapt(path, body)
        assert not [p for p in result.problems if p.kind == "internal-error"], (path, body)
        for workload in result.workloads:
            assert not [p for p in workload.problems if p.kind == "internal-error"]
            for span in workload.value_spans.values():
                assert span.line >= 1 and span.column >= 1
            for problem in workload.problems:
                assert problem.span.line >= 1 and problem.span.column >= 1


def test_ten_thousand_llama_server_arguments_and_variables():
    script = "llama-server -m m.gguf " + " ".join(f"-c {i}" for i in range(10_000))
    unit = "[Service]\n" + "".join(f"Environment=OLLAMA_X{i}=1\n" for i in range(10_000)) + "ExecStart=/usr/bin/ollama serve\n"
    # (the time this takes is measured in benchmarks/, not asserted here)
    (workload,) = adapt("big.sh", "#!/bin/sh\n" + script + "\n").workloads
    (service,) = adapt("ollama.service", unit).workloads
    assert workload.manifest["serving"]["context_size"] == 9_999
    assert len(service.manifest["engine"]["env"]) == 10_000


def test_broken_ggml_input_is_a_problem_not_a_crash():
    # a quote that never closes in ExecStart, a value-less -ctk, an image with no argument list
    (unit,) = adapt("llama.service", "[Service]\nExecStart=/bin/llama-server -m 'm.gguf -ctk\n").workloads
    assert [p.kind for p in unit.problems if p.kind == "shell-syntax"] == ["shell-syntax"]
    (cli,) = adapt("run.sh", "llama-server -m m.gguf -ctk\n").workloads
    assert [(p.code, p.kind) for p in cli.problems] == [("KV320", "invalid-flag-value")]
    assert adapt("run.sh", "docker run -e OLLAMA_KV_CACHE_TYPE=q8_0\n").workloads == []
    assert adapt("Modelfile", "FROM\nPARAMETER num_ctx\n").workloads == []
    (bad_ctx,) = adapt("Modelfile", "FROM x\nPARAMETER num_ctx -5\n").workloads
    assert [p.kind for p in bad_ctx.problems] == ["invalid-flag-value"]
