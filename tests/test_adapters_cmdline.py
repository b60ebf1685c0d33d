"""Engine command-line parsing against the per-engine flag table (kvlint/adapters/cmdline.py)."""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

import pytest

from kvlint.adapters import flags
from kvlint.adapters.cmdline import (
    ParsedCommand, arg_from_word, find_invocation, human_readable_int, parse_command,
)
from kvlint.adapters.shell import parse
from kvlint.adapters.source import LineLocator


def run(text: str, release: Optional[str] = None, env: Optional[Dict[str, str]] = None) -> ParsedCommand:
    locator = LineLocator(text)
    for command in parse(text).commands:
        argv = [arg_from_word(w, locator, f"word {i}") for i, w in enumerate(command.words)]
        invocation = find_invocation(argv)
        if invocation is not None:
            return parse_command(argv, invocation, release, env or {})
    raise AssertionError(f"no engine command in {text!r}")


def fields(parsed: ParsedCommand) -> Dict[str, object]:
    return {s.pointer: s.value for s in parsed.settings}


def kinds(parsed: ParsedCommand) -> List[str]:
    return [p.kind for p in parsed.problems]


def where(parsed: ParsedCommand, ptr: str) -> Tuple[int, int, int]:
    setting = [s for s in parsed.settings if s.pointer == ptr][-1]
    return (setting.span.line, setting.span.column, setting.span.end_column)


@pytest.mark.parametrize(
    "command, engine, form",
    [
        ("vllm serve m", "vllm", "vllm serve"),
        ("/opt/venv/bin/vllm serve m", "vllm", "vllm serve"),
        ("exec env A=1 vllm serve m", "vllm", "vllm serve"),
        ("python -m vllm.entrypoints.openai.api_server --model m", "vllm", "api_server"),
        ("python3.12 -u -m vllm.entrypoints.openai.api_server --model m", "vllm", "api_server"),
        ("python3 -m sglang.launch_server --model-path m", "sglang", "launch_server"),
        ("sglang serve --model-path m", "sglang", "sglang serve"),
        ("trtllm-serve m --tp_size 2", "tensorrt-llm", "trtllm-serve"),
        ("trtllm-serve serve m", "tensorrt-llm", "trtllm-serve"),
    ],
)
def test_recognises_engine_invocations(command, engine, form):
    parsed = run(command)
    assert (parsed.engine, parsed.form) == (engine, form)
    assert fields(parsed)["/model/name"] == "m"


def test_not_engine_commands():
    locator = LineLocator("x")
    for text in ("python -m http.server", "vllm --version", "trtllm-serve disaggregated -c x.yaml", "echo vllm serve"):
        for command in parse(text).commands:
            argv = [arg_from_word(w, locator, "w") for w in command.words]
            found = find_invocation(argv)
            assert found is None or text.startswith("echo") and found.command_start == 1


def test_vllm_spellings_values_and_columns():
    text = (
        "vllm serve meta-llama/Llama-3.1-70B-Instruct -tp 8 --max-model-len=128k --max_num_seqs 64 "
        "--kv-cache-dtype fp8_e4m3 --gpu-memory-utilization 0.92 --kv-cache-memory-bytes 80G "
        "--no-enable-prefix-caching --dtype half --block-size 16 -pp=2 --max-num-batched-tokens 8K"
    )
    parsed = run(text, release="0.19.1")
    got = fields(parsed)
    assert got["/model/name"] == "meta-llama/Llama-3.1-70B-Instruct"
    assert got["/parallelism/tensor"] == 8
    assert got["/parallelism/pipeline"] == 2
    assert got["/serving/max_model_len"] == 128_000  # lowercase k = 10^3
    assert got["/serving/max_num_seqs"] == 64  # underscore spelling normalised
    assert got["/serving/max_num_batched_tokens"] == 8 * 1024  # uppercase K = 2^10
    assert got["/memory/kv_cache_memory"] == 80 * 2**30
    assert got["/kv_cache/dtype"] == "fp8_e4m3"
    assert got["/kv_cache/block_size"] == 16
    assert got["/model/dtype"] == "float16"
    assert got["/engine/options/enable_prefix_caching"] is False
    assert parsed.problems == []
    assert where(parsed, "/serving/max_model_len") == (1, text.index("128k") + 1, text.index("128k") + 5)
    assert where(parsed, "/kv_cache/dtype")[1] == text.index("fp8_e4m3") + 1


def test_vllm_json_and_dotted_options():
    parsed = run(
        "vllm serve m --compilation-config '{\"cudagraph_mode\": \"FULL\"}' -ac.backend=FLASH_ATTN "
        "--attention-config.flash_attn_version 3 --kv-transfer-config.kv_connector NixlConnector -O3",
        release="0.19.1",
    )
    got = fields(parsed)
    assert got["/engine/options/compilation_config"] == {"cudagraph_mode": "FULL"}
    assert got["/engine/attention_backend"] == "FLASH_ATTN"
    assert got["/engine/options/attention_config"] == {"backend": "FLASH_ATTN", "flash_attn_version": 3}
    assert got["/engine/options/kv_transfer_config"] == {"kv_connector": "NixlConnector"}
    assert got["/engine/options/optimization_level"] == "3"
    assert parsed.problems == []


def test_minus_o_means_compilation_level_on_0_11():
    got = fields(run("vllm serve m -O3", release="0.11.0"))
    assert got["/engine/options/compilation_config"] == {"level": 3}


def test_json_option_that_is_not_json():
    parsed = run("vllm serve m --compilation-config '{mode: 3'")
    assert kinds(parsed) == ["invalid-flag-value"]
    assert parsed.problems[0].span.column == len("vllm serve m --compilation-config ") + 2
    assert "/engine/options/compilation_config" not in fields(parsed)


def test_unknown_ambiguous_abbreviated_and_repeated_flags():
    parsed = run("vllm serve m --kv-cach-dtype fp8 --max-num 4 --max-model 8k --block-size 8 --block-size 16")
    assert kinds(parsed) == ["unknown-flag", "ambiguous-flag", "abbreviated-flag", "repeated-flag"]
    assert "did you mean '--kv-cache-dtype'" in parsed.problems[0].message
    got = fields(parsed)
    assert got["/serving/max_model_len"] == 8000
    assert [s.value for s in parsed.settings if s.pointer == "/kv_cache/block_size"] == [8, 16]
    # a prefix of two flags is ambiguous for argparse even when one of them matches exactly-ish
    assert kinds(run("vllm serve m --kv-cache-dtyp fp8")) == ["ambiguous-flag"]
    # an unknown flag's value is consumed with it, so it is not taken as a stray argument
    assert "unexpected-argument" not in kinds(parsed)


def test_booleans_take_no_value_and_stray_arguments_are_errors():
    parsed = run("vllm serve m --enable-prefix-caching=false --enable-chunked-prefill true")
    assert kinds(parsed) == ["invalid-flag-value", "unexpected-argument"]
    assert fields(parsed)["/engine/options/enable_chunked_prefill"] is True


def test_release_aware_flags():
    removed = run("vllm serve m --calculate-kv-scales", release="0.28.0")
    assert kinds(removed) == ["flag-not-in-release"]
    assert "removed in vLLM 0.28.0" in removed.problems[0].message
    assert kinds(run("vllm serve m --calculate-kv-scales", release="0.27.1")) == []
    early = run("vllm serve m --kv-cache-dtype-skip-layers sliding_window", release="0.18.1")
    assert kinds(early) == ["flag-not-in-release"]
    assert kinds(run("vllm serve m --attention-backend FLASH_ATTN", release="0.12.0")) == ["flag-not-in-release"]
    assert kinds(run("vllm serve m --attention-backend FLASH_ATTN", release="0.13.0")) == []
    # unknown release: any flag of any checked release is accepted
    assert kinds(run("vllm serve m --calculate-kv-scales")) == []


def test_skip_layers_list_and_comma_trap():
    parsed = run("vllm serve m --kv-cache-dtype-skip-layers 0 1 sliding_window --kv-cache-dtype fp8")
    assert fields(parsed)["/kv_cache/skip_layers"] == [0, 1, "sliding_window"]
    comma = run("vllm serve m --kv-cache-dtype-skip-layers 0,1")
    assert fields(comma)["/kv_cache/skip_layers"] == ["0,1"]
    assert kinds(comma) == ["invalid-flag-value"]


def test_max_model_len_auto_is_kept_in_options():
    got = fields(run("vllm serve m --max-model-len auto"))
    assert "/serving/max_model_len" not in got
    assert got["/engine/options/max_model_len"] == "auto"


def test_serve_with_model_option():
    newer = run("vllm serve --model m --kv-cache-dtype fp8", release="0.19.1")
    assert fields(newer)["/model/name"] == "m"
    assert [(p.kind, p.severity) for p in newer.problems] == [("deprecated-spelling", "warning")]
    older = run("vllm serve --model m", release="0.11.0")
    assert [(p.kind, p.severity) for p in older.problems] == [("deprecated-spelling", "error")]


def test_expansions_resolved_from_env_or_left_unknown():
    parsed = run("vllm serve $MODEL --tensor-parallel-size ${TP:-4} --max-model-len $LEN", env={"MODEL": "org/m"})
    got = fields(parsed)
    assert got["/model/name"] == "org/m"
    assert got["/parallelism/tensor"] == 4
    assert "/serving/max_model_len" not in got
    assert kinds(parsed) == ["unresolved-value"]


def test_config_reference_only_for_the_two_word_form():
    parsed = run("vllm serve m --config serve.yaml")
    assert [(r.kind, r.path) for r in parsed.references] == [("vllm-config", "serve.yaml")]
    ignored = run("vllm serve m --config=serve.yaml")
    assert "ignored-config" in kinds(ignored)


def test_sglang_rules():
    parsed = run(
        "python3 -m sglang.launch_server --model-path Qwen/Qwen3-32B --tp 2 --kv-cache-dtype fp8_e5m2 "
        "--mem-fraction-static 0.8 --page-size 32 --context-length 32768 --max-running-requests 64 "
        "--attention-backend fa3 --enable-dp-attention --max-total-tokens 200000"
    )
    got = fields(parsed)
    assert got["/parallelism/tensor"] == 2
    assert got["/kv_cache/dtype"] == "fp8_e5m2"
    assert got["/memory/mem_fraction_static"] == 0.8
    assert got["/kv_cache/block_size"] == 32
    assert got["/serving/max_model_len"] == 32768
    assert got["/serving/max_num_seqs"] == 64
    assert got["/engine/attention_backend"] == "fa3"
    assert got["/engine/options/enable_dp_attention"] is True
    assert got["/serving/max_total_tokens"] == 200000
    assert kinds(parsed) == ["abbreviated-flag"]
    # SGLang does not normalise underscores
    wrong = run("python3 -m sglang.launch_server --model-path m --tp_size 2")
    assert kinds(wrong) == ["unknown-flag"]
    assert "--tp-size" in wrong.problems[0].message


def test_trtllm_rules():
    parsed = run(
        "trtllm-serve meta-llama/Llama-3.1-8B-Instruct --tp_size 2 --kv_cache_free_gpu_memory_fraction 0.8 "
        "--max_batch_size 32 --max_seq_len 8192 --max_num_tokens 4096 --extra_llm_api_options extra.yaml "
        "--trust_remote_code"
    )
    got = fields(parsed)
    assert got["/parallelism/tensor"] == 2
    assert got["/memory/free_gpu_memory_fraction"] == 0.8
    assert got["/serving/max_num_seqs"] == 32
    assert got["/serving/max_model_len"] == 8192
    assert got["/serving/max_num_batched_tokens"] == 4096
    assert [(r.kind, r.path) for r in parsed.references] == [("trtllm-options", "extra.yaml")]
    assert parsed.problems == []
    # click: dashes are not accepted and there is no prefix matching
    wrong = run("trtllm-serve m --tp-size 2 --max_batch 4")
    assert kinds(wrong) == ["unknown-flag", "unknown-flag"]
    assert "--tp_size" in wrong.problems[0].message


def test_human_readable_int():
    assert human_readable_int("25.6k") == 25_600
    assert human_readable_int("1K") == 1024
    assert human_readable_int("1.5K") is None  # decimals with binary suffixes are refused
    assert human_readable_int("auto", allow_auto=True) == -1
    assert human_readable_int("abc") is None


def test_flag_table_lookups_and_sources():
    spec = flags.lookup("vllm", "--kv-cache-dtype-skip-layers")
    assert (spec.added, spec.removed, spec.takes, spec.field) == ("0.19.0", None, "list", "/kv_cache/skip_layers")
    assert spec.source.startswith("https://github.com/vllm-project/vllm/blob/v0.19.1/")
    negated = flags.lookup("vllm", "--no-calculate-kv-scales")
    assert negated.negated and negated.removed == "0.28.0"
    assert flags.lookup("sglang", "--no-enable-dp-attention") is None  # store_true: no --no- form
    assert flags.lookup("tensorrt-llm", "--kv_cache_dtype").verified is False
    assert flags.prefix_matches("vllm", "--kv-cache-memory") == ["--kv-cache-memory-bytes"]
    assert flags.version_key("0.4.10.post2") > flags.version_key("0.4.10")
    assert flags.version_key("1.2.0rc1") < flags.version_key("1.2.0")
    assert flags.parser_rules("tensorrt-llm").abbrev is False


def test_api_server_module_ignores_a_positional_model():
    parsed = run("python3 -m vllm.entrypoints.openai.api_server meta-llama/Llama-3.1-8B-Instruct --kv-cache-dtype fp8")
    assert "/model/name" not in fields(parsed)
    assert [(p.kind, p.severity) for p in parsed.problems] == [("unexpected-argument", "warning")]


def test_list_flag_with_equals_takes_one_value():
    parsed = run("vllm serve m --kv-cache-dtype-skip-layers=0 1")
    assert fields(parsed)["/kv_cache/skip_layers"] == [0]
    assert kinds(parsed) == ["unexpected-argument"]


def test_sglang_pool_cap_and_chunked_prefill_fields():
    got = fields(run("python -m sglang.launch_server --model-path m --max-total-tokens 200000 --chunked-prefill-size 8192"))
    assert got["/serving/max_total_tokens"] == 200000
    assert got["/serving/chunked_prefill_size"] == 8192
    # -1 and 0 turn chunked prefill off in SGLang (pool_configurator: `chunked_prefill_size <= 0`)
    for off in ("-1", "0"):
        assert fields(run(f"python -m sglang.launch_server --model-path m --chunked-prefill-size {off}"))[
            "/serving/chunked_prefill_size"] == int(off)
    # a pool cap of 0 is not a pool size: kept verbatim in engine.options
    kept = fields(run("python -m sglang.launch_server --model-path m --max-total-tokens 0"))
    assert "/serving/max_total_tokens" not in kept and kept["/engine/options/max_total_tokens"] == "0"
