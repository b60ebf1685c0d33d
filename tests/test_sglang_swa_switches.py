"""SGLang's two hybrid sliding-window pool switches, from the command line to the token count.

`--swa-full-tokens-ratio` (serving.swa_full_tokens_ratio) and `--disable-hybrid-swa-memory`
(serving.disable_hybrid_swa_memory) are read from a launch command and from a manifest, and the
capacity they give is SGLang 0.5.23's own: the cases in tests/data/sglang_pool/0.5.23.json were
run through its KVCacheConfigurator and HybridSWAPoolConfigurator by tools/derive/sglang_pool.py.
Here each goes through the whole manifest path (catalog model, resolve, capacity) with the pool
SGLang profiled given as memory.kv_cache_memory.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from conftest import CliRunner

from kvlint.adapters.cmdline import arg_from_word, find_invocation, parse_command
from kvlint.adapters.shell import parse
from kvlint.adapters.source import LineLocator
from kvlint.cli import main

POOL = Path(__file__).resolve().parent / "data" / "sglang_pool" / "0.5.23.json"
SWITCHES = ("swa_full_tokens_ratio", "disable_hybrid_swa_memory")


def _settings(text: str):
    locator = LineLocator(text)
    command = parse(text).commands[0]
    argv = [arg_from_word(w, locator, f"word {i}") for i, w in enumerate(command.words)]
    parsed = parse_command(argv, find_invocation(argv), "0.5.23", {})
    return {s.pointer: s.value for s in parsed.settings}, [p.kind for p in parsed.problems]


def test_launch_flags_map_to_the_serving_fields():
    got, problems = _settings("python3 -m sglang.launch_server --model-path openai/gpt-oss-20b "
                              "--swa-full-tokens-ratio 0.5 --disable-hybrid-swa-memory")
    assert got["/serving/swa_full_tokens_ratio"] == 0.5
    assert got["/serving/disable_hybrid_swa_memory"] is True
    assert problems == []
    got, _ = _settings("python3 -m sglang.launch_server --model-path openai/gpt-oss-20b")
    assert "/serving/swa_full_tokens_ratio" not in got and "/serving/disable_hybrid_swa_memory" not in got


def _switch_cases():
    cases = json.loads(POOL.read_text())["cases"]
    return [pytest.param(c, id=c["input"]["name"]) for c in cases
            if any(k in c["input"] for k in SWITCHES) and c["input"].get("gpu", "sm90") == "sm90"]


@pytest.mark.parametrize("case", _switch_cases())
def test_manifest_switches_give_sglangs_pool(tmp_path, case):
    inp, got = case["input"], case["sglang"]
    serving = {"max_model_len": 4096, **{k: inp[k] for k in SWITCHES if k in inp}}
    if inp.get("max_total_tokens"):
        serving["max_total_tokens"] = inp["max_total_tokens"]
    manifest = {
        "apiVersion": "kvlint/v1", "kind": "Deployment", "metadata": {"name": inp["name"]},
        "engine": {"name": "sglang", "version": "0.5.23"},
        "hardware": {"gpu": "H100-SXM-80GB"},
        "model": {"name": inp["model"]},
        "kv_cache": {"dtype": inp["kv"], "block_size": case["server_args"]["page_size"]},
        "memory": {"kv_cache_memory": got["profile_available_bytes"]["_return"]},
        "serving": serving,
    }
    path = tmp_path / "deploy.yaml"
    path.write_text(yaml.safe_dump(manifest, sort_keys=False))
    check = CliRunner().invoke(main, ["check", "--output-format", "json", str(path)])
    assert not [d for d in json.loads(check.stdout)["diagnostics"] if d["code"].startswith("KV1")], check.output
    result = CliRunner().invoke(main, ["capacity", str(path), "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    engine = (data[0] if isinstance(data, list) else data)["engine"]
    assert engine["kv_cache_tokens"] == got["max_total_num_tokens"]
    assert engine["swa_pool_tokens"] == (got["swa_max_total_num_tokens"] if case["is_hybrid_swa"] else None)


@pytest.mark.parametrize("value", [0, 1.5, "half"])
def test_a_ratio_outside_sglangs_range_is_a_schema_finding(tmp_path, value):
    """SGLang 0.5.23 refuses a ratio outside (0, 1] (kv_cache_hook.py); kvlint says so at the field."""
    path = tmp_path / "deploy.yaml"
    path.write_text(yaml.safe_dump({
        "apiVersion": "kvlint/v1", "kind": "Deployment", "metadata": {"name": "r"},
        "engine": {"name": "sglang", "version": "0.5.23"}, "hardware": {"gpu": "H100-SXM-80GB"},
        "model": {"name": "openai/gpt-oss-20b"}, "serving": {"swa_full_tokens_ratio": value}}, sort_keys=False))
    result = CliRunner().invoke(main, ["check", "--output-format", "json", str(path)])
    found = [d for d in json.loads(result.stdout)["diagnostics"] if d["pointer"] == "/serving/swa_full_tokens_ratio"]
    assert found and found[0]["code"].startswith("KV1") and found[0]["line"] > 0
