"""The shell reader: how wrapper entrypoints, variables, positional parameters and compound
commands reach the engine's arguments (kvlint/adapters/launch.py, expansion.py, shell.py).

Each case is the shape found in real deployment files; each asserts the value read AND where it
points in the file (line, column), or that a value the file cannot decide is reported unresolved
(KV208) and never turned into an error.
"""

from __future__ import annotations

import textwrap
from typing import Dict, List, Tuple

import pytest

from kvlint.adapters import adapt
from kvlint.adapters.result import Adapted, Adaptation


def read(name: str, text: str) -> Adaptation:
    return adapt(name, textwrap.dedent(text).lstrip("\n"))


def only(adaptation: Adaptation) -> Adapted:
    assert len(adaptation.workloads) == 1, [w.name for w in adaptation.workloads] + [
        p.message for p in adaptation.problems]
    return adaptation.workloads[0]


def value(workload: Adapted, ptr: str):
    node = workload.manifest
    for part in ptr.strip("/").split("/"):
        node = node[part]
    return node


def at(workload: Adapted, ptr: str) -> Tuple[int, int]:
    span = workload.value_spans[ptr]
    return (span.line, span.column)


def locate(text: str, needle: str, nth: int = 0) -> Tuple[int, int]:
    """(line, column) of the nth occurrence of needle in text: the expected position, from the text."""
    text = textwrap.dedent(text).lstrip("\n") if text.startswith("\n") else text
    index = -1
    for _ in range(nth + 1):
        index = text.index(needle, index + 1)
    line = text.count("\n", 0, index) + 1
    return line, index - (text.rfind("\n", 0, index) + 1) + 1


def codes(workload: Adapted) -> Dict[str, List[str]]:
    out: Dict[str, List[str]] = {}
    for problem in workload.problems:
        out.setdefault(problem.code, []).append(problem.severity)
    return out


def no_errors_or_warnings(workload: Adapted) -> None:
    bad = [(p.code, p.severity, p.message) for p in workload.problems if p.severity in ("error", "warning")]
    assert not bad


# --- `sh -c` with the arguments after it --------------------------------------------------------


def test_bash_c_exec_dollar_at_takes_the_args_from_kubernetes_args():
    source = """
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: vllm}
        spec:
          template:
            spec:
              containers:
              - name: vllm
                image: vllm/vllm-openai:v0.19.1
                command: ["/bin/bash", "-c", 'pip list >/dev/null; exec vllm serve "$@"', "--"]
                args:
                - meta-llama/Llama-3.1-8B-Instruct
                - --kv-cache-dtype
                - fp8
                - --max-model-len=8192
    """
    workload = only(read("deploy.yaml", source))
    assert value(workload, "/model/name") == "meta-llama/Llama-3.1-8B-Instruct"
    assert at(workload, "/model/name") == locate(source, "meta-llama/Llama-3.1-8B-Instruct")
    assert value(workload, "/kv_cache/dtype") == "fp8"
    assert at(workload, "/kv_cache/dtype") == locate(source, "fp8")
    assert value(workload, "/serving/max_model_len") == 8192
    assert at(workload, "/serving/max_model_len") == locate(source, "8192")
    no_errors_or_warnings(workload)


def test_dollar_at_inside_compose_entrypoint_and_command_lists():
    source = """
        services:
          vllm:
            image: vllm/vllm-openai:v0.19.1
            entrypoint: ["/bin/sh", "-c", 'exec python3 -m vllm.entrypoints.openai.api_server "$@"', "--"]
            command: ["--model", "Qwen/Qwen2.5-7B-Instruct", "--kv-cache-dtype", "fp8_e4m3"]
    """
    workload = only(read("compose.yaml", source))
    assert value(workload, "/model/name") == "Qwen/Qwen2.5-7B-Instruct"
    assert at(workload, "/model/name") == locate(source, "Qwen/Qwen2.5-7B-Instruct")
    assert value(workload, "/kv_cache/dtype") == "fp8_e4m3"
    no_errors_or_warnings(workload)


def test_positional_parameters_by_number_and_dollar_zero():
    workload = only(read("deploy.yaml", """
        apiVersion: v1
        kind: Pod
        metadata: {name: p}
        spec:
          containers:
          - name: engine
            image: vllm/vllm-openai:v0.19.1
            command: ["sh", "-c", 'vllm serve "$1" --kv-cache-dtype "$2"', "launcher", "Qwen/Qwen2.5-7B-Instruct", "fp8"]
    """))
    assert value(workload, "/model/name") == "Qwen/Qwen2.5-7B-Instruct"
    assert at(workload, "/model/name")[0] == 8
    assert value(workload, "/kv_cache/dtype") == "fp8"
    no_errors_or_warnings(workload)


@pytest.mark.parametrize("shell_options", [
    '"-o", "pipefail", "-c"', '"-euo", "pipefail", "-c"', '"-lc", "--"', '"-ec"', '"--login", "-c"',
])
def test_shell_option_clusters_before_the_script(shell_options):
    workload = only(read("deploy.yaml", f"""
        apiVersion: v1
        kind: Pod
        metadata: {{name: p}}
        spec:
          containers:
          - name: engine
            image: vllm/vllm-openai:v0.19.1
            command: ["/bin/bash", {shell_options}, "vllm serve Qwen/Qwen2.5-7B-Instruct --kv-cache-dtype fp8"]
    """))
    assert value(workload, "/kv_cache/dtype") == "fp8"
    line, column = at(workload, "/kv_cache/dtype")
    source = textwrap.dedent(f"""
        apiVersion: v1
        kind: Pod
        metadata: {{name: p}}
        spec:
          containers:
          - name: engine
            image: vllm/vllm-openai:v0.19.1
            command: ["/bin/bash", {shell_options}, "vllm serve Qwen/Qwen2.5-7B-Instruct --kv-cache-dtype fp8"]
    """).lstrip("\n").splitlines()
    assert source[line - 1][column - 1:column + 2] == "fp8"


# --- wrappers --------------------------------------------------------------------------------------


SCRIPT_HEAD = "#!/bin/bash\n# kvlint: engine-version=0.19.1 gpu=H100-SXM-80GB\n"


@pytest.mark.parametrize("line", [
    "exec tini -- vllm serve Qwen/Qwen2.5-7B-Instruct --kv-cache-dtype fp8",
    "dumb-init --single-child -- vllm serve Qwen/Qwen2.5-7B-Instruct --kv-cache-dtype fp8",
    "tini -s -- bash -c 'vllm serve Qwen/Qwen2.5-7B-Instruct --kv-cache-dtype fp8'",
    "nohup vllm serve Qwen/Qwen2.5-7B-Instruct --kv-cache-dtype fp8 > server.log 2>&1 &",
    "su -c 'vllm serve Qwen/Qwen2.5-7B-Instruct --kv-cache-dtype fp8' serving",
    "su - serving -c 'exec vllm serve Qwen/Qwen2.5-7B-Instruct --kv-cache-dtype fp8'",
    "env -S 'VLLM_LOGGING_LEVEL=DEBUG vllm serve Qwen/Qwen2.5-7B-Instruct --kv-cache-dtype fp8'",
    "eval \"vllm serve Qwen/Qwen2.5-7B-Instruct --kv-cache-dtype fp8\"",
    "sh -c \"bash -c 'vllm serve Qwen/Qwen2.5-7B-Instruct --kv-cache-dtype fp8'\"",
    "numactl --interleave=all bash -c 'vllm serve Qwen/Qwen2.5-7B-Instruct --kv-cache-dtype fp8'",
    "gosu serving vllm serve Qwen/Qwen2.5-7B-Instruct --kv-cache-dtype fp8",
    "timeout 3600 vllm serve Qwen/Qwen2.5-7B-Instruct --kv-cache-dtype fp8",
])
def test_wrappers_reach_the_engine_command(line):
    text = SCRIPT_HEAD + line + "\n"
    workload = only(adapt("serve.sh", text))
    assert value(workload, "/model/name") == "Qwen/Qwen2.5-7B-Instruct"
    assert value(workload, "/kv_cache/dtype") == "fp8"
    row, column = at(workload, "/kv_cache/dtype")
    assert row == 3
    assert line[column - 1:column + 2] == "fp8"
    no_errors_or_warnings(workload)


def test_here_document_fed_to_bash():
    text = SCRIPT_HEAD + textwrap.dedent("""
        bash <<'EOF'
        export VLLM_ATTENTION_BACKEND=FLASH_ATTN
        vllm serve Qwen/Qwen2.5-7B-Instruct \\
            --kv-cache-dtype fp8
        EOF
    """).lstrip("\n")
    workload = only(adapt("serve.sh", text))
    assert value(workload, "/kv_cache/dtype") == "fp8"
    assert at(workload, "/kv_cache/dtype") == locate(text, "fp8")
    assert value(workload, "/engine/env/VLLM_ATTENTION_BACKEND") == "FLASH_ATTN"


def test_xargs_arguments_from_stdin_are_unresolved_not_errors():
    text = SCRIPT_HEAD + "cat args.txt | xargs vllm serve Qwen/Qwen2.5-7B-Instruct --kv-cache-dtype fp8\n"
    workload = only(adapt("serve.sh", text))
    assert value(workload, "/kv_cache/dtype") == "fp8"
    assert codes(workload).get("KV208") == ["info"]
    no_errors_or_warnings(workload)


# --- variables ------------------------------------------------------------------------------------


def test_arrays_expand_to_their_elements_at_the_assignment():
    text = SCRIPT_HEAD + textwrap.dedent("""
        MODEL=Qwen/Qwen2.5-7B-Instruct
        ARGS=(--kv-cache-dtype fp8 --max-model-len 16384)
        ARGS+=(--tensor-parallel-size 2)
        vllm serve "$MODEL" "${ARGS[@]}"
    """).lstrip("\n")
    workload = only(adapt("serve.sh", text))
    assert value(workload, "/kv_cache/dtype") == "fp8"
    assert at(workload, "/kv_cache/dtype") == locate(text, "fp8")
    assert value(workload, "/serving/max_model_len") == 16384
    assert value(workload, "/parallelism/tensor") == 2
    no_errors_or_warnings(workload)


def test_unquoted_variable_splits_into_several_arguments():
    text = SCRIPT_HEAD + textwrap.dedent("""
        EXTRA="--kv-cache-dtype fp8 --max-model-len 8192"
        vllm serve Qwen/Qwen2.5-7B-Instruct $EXTRA
    """).lstrip("\n")
    workload = only(adapt("serve.sh", text))
    assert value(workload, "/kv_cache/dtype") == "fp8"
    assert value(workload, "/serving/max_model_len") == 8192
    assert at(workload, "/kv_cache/dtype")[0] == 4  # the reference, where the engine gets it
    no_errors_or_warnings(workload)


def test_assignment_inside_if_is_unresolved_after_it():
    # InferenceX-style: optional arguments assigned in a branch, expanded unquoted
    text = SCRIPT_HEAD + textwrap.dedent("""
        EVAL_CONTEXT_ARGS=""
        if [ "$RUN_EVAL" = "true" ]; then
          EVAL_CONTEXT_ARGS="--max-model-len 131072"
        fi
        vllm serve Qwen/Qwen2.5-7B-Instruct --kv-cache-dtype fp8 $EVAL_CONTEXT_ARGS
    """).lstrip("\n")
    workload = only(adapt("serve.sh", text))
    assert value(workload, "/kv_cache/dtype") == "fp8"
    assert "max_model_len" not in workload.manifest.get("serving", {})
    kv208 = [p for p in workload.problems if p.code == "KV208"]
    assert len(kv208) == 1 and kv208[0].severity == "info"
    assert "EVAL_CONTEXT_ARGS" in kv208[0].message
    assert (kv208[0].span.line, kv208[0].span.column) == locate(text, "$EVAL_CONTEXT_ARGS")
    no_errors_or_warnings(workload)


def test_value_the_same_on_every_path_stays_known():
    text = SCRIPT_HEAD + textwrap.dedent("""
        DTYPE=fp8
        if [ -n "$DEBUG" ]; then DTYPE=fp8; set -x; fi
        vllm serve Qwen/Qwen2.5-7B-Instruct --kv-cache-dtype $DTYPE
    """).lstrip("\n")
    workload = only(adapt("serve.sh", text))
    assert value(workload, "/kv_cache/dtype") == "fp8"


def test_value_inside_the_branch_that_runs_the_engine_is_known_there():
    text = SCRIPT_HEAD + textwrap.dedent("""
        case "$1" in
          long) LEN=131072; vllm serve Qwen/Qwen2.5-7B-Instruct --max-model-len $LEN ;;
        esac
    """).lstrip("\n")
    workload = only(adapt("serve.sh", text))
    assert value(workload, "/serving/max_model_len") == 131072


def test_flag_value_from_a_run_time_value_is_unresolved_not_an_integer_error():
    text = SCRIPT_HEAD + "trtllm-serve Qwen/Qwen2.5-7B-Instruct --max_seq_len=$EVAL_MAX_MODEL_LEN\n"
    adaptation = adapt("serve.sh", text.replace("engine-version=0.19.1", "engine-version=1.2.1"))
    workload = only(adaptation)
    found = [(p.code, p.severity) for p in workload.problems]
    assert ("KV208", "info") in found
    assert not any(code == "KV320" for code, _ in found)


def test_loop_variable_is_unresolved():
    text = SCRIPT_HEAD + "for tp in 1 2 4; do vllm serve Qwen/Qwen2.5-7B-Instruct --tensor-parallel-size $tp; done\n"
    workload = only(adapt("serve.sh", text))
    assert "tensor" not in workload.manifest.get("parallelism", {})
    assert any(p.code == "KV208" and "$tp" in p.message for p in workload.problems)


def test_command_substitution_is_unresolved():
    text = SCRIPT_HEAD + 'vllm serve Qwen/Qwen2.5-7B-Instruct --tensor-parallel-size "$(nvidia-smi -L | wc -l)"\n'
    workload = only(adapt("serve.sh", text))
    assert any(p.code == "KV208" and "command substitution" in p.message for p in workload.problems)
    no_errors_or_warnings(workload)


def test_default_and_arithmetic_expansions():
    text = SCRIPT_HEAD + textwrap.dedent("""
        GPUS=8
        vllm serve ${MODEL:-Qwen/Qwen2.5-7B-Instruct} --tensor-parallel-size $((GPUS / 2)) --max-model-len ${CTX:=4096}
    """).lstrip("\n")
    workload = only(adapt("serve.sh", text))
    assert value(workload, "/model/name") == "Qwen/Qwen2.5-7B-Instruct"
    assert value(workload, "/parallelism/tensor") == 4
    assert value(workload, "/serving/max_model_len") == 4096


def test_script_arguments_unknown_for_a_script_file():
    text = SCRIPT_HEAD + 'exec vllm serve Qwen/Qwen2.5-7B-Instruct --kv-cache-dtype fp8 "$@"\n'
    workload = only(adapt("serve.sh", text))
    assert value(workload, "/kv_cache/dtype") == "fp8"
    assert [p.severity for p in workload.problems if p.code == "KV208"] == ["info"]
    no_errors_or_warnings(workload)


def test_set_dash_dash_replaces_positional_parameters():
    text = SCRIPT_HEAD + textwrap.dedent("""
        set -- Qwen/Qwen2.5-7B-Instruct --kv-cache-dtype fp8
        exec vllm serve "$@"
    """).lstrip("\n")
    workload = only(adapt("serve.sh", text))
    assert value(workload, "/kv_cache/dtype") == "fp8"
    assert at(workload, "/kv_cache/dtype") == locate(text, "fp8")


def test_subshell_assignment_does_not_leak():
    text = SCRIPT_HEAD + textwrap.dedent("""
        DTYPE=auto
        (DTYPE=fp8; echo "$DTYPE")
        vllm serve Qwen/Qwen2.5-7B-Instruct --kv-cache-dtype $DTYPE
    """).lstrip("\n")
    workload = only(adapt("serve.sh", text))
    assert value(workload, "/kv_cache/dtype") == "auto"


def test_deep_nesting_is_bounded():
    line = "eval " * 40 + "vllm serve Qwen/Qwen2.5-7B-Instruct"
    assert adapt("serve.sh", SCRIPT_HEAD + line + "\n").workloads == []  # too deep: not followed
    line = "eval " * 5 + "vllm serve Qwen/Qwen2.5-7B-Instruct"
    assert len(adapt("serve.sh", SCRIPT_HEAD + line + "\n").workloads) == 1


# --- compose interpolation ---------------------------------------------------------------------


def test_compose_variables_defaults_dotenv_and_escapes(tmp_path):
    (tmp_path / ".env").write_text("TAG=v0.19.1\n# a comment\nCTX='16384'\n")
    compose = tmp_path / "docker-compose.yml"
    compose.write_text(textwrap.dedent("""
        services:
          llm:
            image: vllm/vllm-openai:${TAG}
            environment:
              VLLM_ATTENTION_BACKEND: ${BACKEND:-FLASH_ATTN}
            command: >-
              --model ${MODEL:-Qwen/Qwen2.5-7B-Instruct}
              --max-model-len ${CTX:?set CTX}
              --kv-cache-dtype ${KV_DTYPE-fp8}
              --served-model-name $${NAME}
    """).lstrip("\n"))
    workload = only(adapt(str(compose), compose.read_text()))
    assert value(workload, "/engine/version") == "0.19.1"
    assert value(workload, "/model/name") == "Qwen/Qwen2.5-7B-Instruct"
    assert value(workload, "/serving/max_model_len") == 16384
    assert value(workload, "/kv_cache/dtype") == "fp8"
    assert at(workload, "/kv_cache/dtype") == locate(compose.read_text(), "${KV_DTYPE-fp8}")
    assert value(workload, "/engine/env/VLLM_ATTENTION_BACKEND") == "FLASH_ATTN"


def test_compose_required_variable_missing_is_unresolved(tmp_path):
    compose = tmp_path / "compose.yaml"
    compose.write_text(textwrap.dedent("""
        services:
          llm:
            image: "ghcr.io/ggml-org/llama.cpp:server-cuda-${LLAMA_BUILD:?pin a build}"
            command: ["-m", "/models/m.gguf", "-ctk", "${K_TYPE:-q8_0}", "-fa", "on"]
    """).lstrip("\n"))
    adaptation = adapt(str(compose), compose.read_text())
    workload = only(adaptation)
    assert "version" not in workload.manifest.get("engine", {})
    assert any(p.code == "KV208" and "LLAMA_BUILD" in p.message for p in workload.problems)


def test_compose_extends_in_the_same_file():
    workload = only(read("compose.yaml", """
        services:
          base:
            image: vllm/vllm-openai:v0.19.1
            environment: {VLLM_USE_V1: "1"}
            deploy: {resources: {reservations: {devices: [{driver: nvidia, count: 2, capabilities: [gpu]}]}}}
            command: ["--model", "Qwen/Qwen2.5-7B-Instruct"]
          tuned:
            extends: {service: base}
            command: ["--model", "Qwen/Qwen2.5-7B-Instruct", "--kv-cache-dtype", "fp8", "-tp", "2"]
        x-unused: {}
    """.replace("          base:", "          base:").replace(
        '    command: ["--model", "Qwen/Qwen2.5-7B-Instruct"]\n', '    profiles: [never]\n', 1)))
    assert workload.name == "compose/tuned"
    assert value(workload, "/engine/version") == "0.19.1"
    assert value(workload, "/hardware/count") == 2
    assert value(workload, "/kv_cache/dtype") == "fp8"
