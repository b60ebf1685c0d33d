"""`kvlint plan`: every configuration it proposes passes `kvlint check` clean, in every form it
writes (manifest, command line, patched native file); it never modifies its input; it refuses to
rank a capacity it cannot compute; and its proposals for real deployments are ones the engine
release's own code accepts (tools/derive/tables, derived from the released wheels, not from
kvlint's catalog)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List

import pytest
import yaml

from conftest import invoke

REPO = Path(__file__).resolve().parent.parent
LOGS = REPO / "benchmarks" / "capacity_logs"
TABLES = REPO / "tools" / "derive" / "tables" / "vllm"
sys.path.insert(0, str(REPO / "tools" / "derive"))

import table as T  # noqa: E402


def _check(path: Path) -> Dict[str, Any]:
    result = invoke(["check", "--output-format", "json", str(path)])
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.output)


def _findings(report: Dict[str, Any]) -> List[Dict[str, Any]]:
    return report["diagnostics"]


def _plan_json(args: List[str]) -> Dict[str, Any]:
    result = invoke(["plan", "--output-format", "json", *args])
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.output)


def _assert_clean(path: Path, reported: List[Dict[str, Any]]) -> None:
    """No error, and no warning the plan did not report for this configuration."""
    findings = _findings(_check(path))
    errors = [f for f in findings if f["severity"] == "error"]
    assert not errors, (path.read_text(), errors)
    known = {f["code"] for f in reported}
    unreported = [f for f in findings if f["severity"] == "warning" and f["code"] not in known]
    assert not unreported, (path.read_text(), unreported)


LLAMA8B = ["--model", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "H100-SXM-80GB", "--context", "32768"]
SMALL = ["--kv-cache-dtype", "auto", "--kv-cache-dtype", "fp8", "--kv-cache-dtype", "fp8_e5m2",
         "--kv-cache-dtype", "nvfp4", "--attention-backend", "auto", "--attention-backend", "FLASH_ATTN",
         "--attention-backend", "TRITON_ATTN"]


@pytest.mark.parametrize("emit_form,suffix", [("manifest", ".yaml"), ("vllm", ".sh")])
def test_emitted_configuration_checks_clean(tmp_path, emit_form, suffix):
    out = tmp_path / f"plan{suffix}"
    plan = _plan_json([*LLAMA8B, "--concurrency", "4", *SMALL, "--emit", emit_form, "-o", str(out)])
    assert plan["chosen"] is not None
    assert out.exists()
    _assert_clean(out, plan["chosen"]["findings"])
    if emit_form == "vllm":
        text = out.read_text()
        assert text.startswith("#!/bin/sh\n") and "vllm serve meta-llama/Llama-3.1-8B-Instruct" in text
        assert f"--kv-cache-dtype {plan['chosen']['configuration']['kv_cache_dtype']}" in text


def test_targets_written_only_when_met(tmp_path):
    out = tmp_path / "plan.yaml"
    plan = _plan_json([*LLAMA8B, "--concurrency", "4", *SMALL, "-o", str(out)])
    assert plan["chosen"]["meets_targets"] == "yes"
    written = yaml.safe_load(out.read_text())
    assert written["targets"] == {"min_concurrency": 4.0}
    # an unreachable target: the plan says no row meets it and writes no target it cannot hold
    out2 = tmp_path / "plan2.yaml"
    plan = _plan_json([*LLAMA8B, "--concurrency", "500", *SMALL, "-o", str(out2)])
    assert plan["chosen"]["meets_targets"] == "no"
    assert "targets" not in yaml.safe_load(out2.read_text())
    _assert_clean(out2, plan["chosen"]["findings"])


def test_fp4_on_hopper_is_excluded_with_its_rule():
    plan = _plan_json([*LLAMA8B, "--kv-cache-dtype", "nvfp4_4over6", "--kv-cache-dtype", "auto"])
    families = {e["family"]: e for e in plan["excluded"]}
    assert families["nvfp4_4over6"]["code"] == "KV306", families
    assert "FP4" in families["nvfp4_4over6"]["reason"]
    assert all(row["configuration"]["kv_cache_dtype"] != "nvfp4_4over6" for row in plan["pareto"])


def test_per_head_without_calibrated_checkpoint_is_an_exclusion_reason():
    plan = _plan_json([*LLAMA8B, *SMALL])
    reasons = [e["reason"] for e in plan["excluded"]]
    assert any("per-head scales: no calibrated checkpoint named" in r for r in reasons), reasons


def test_unknown_geometry_is_not_ranked(tmp_path):
    result = invoke(["plan", "--model", "example-org/not-a-catalogued-model", "--gpu", "H100-SXM-80GB",
                     "--context", "8192", *SMALL])
    assert result.exit_code == 1, result.output
    assert "capacity unknown, not ranked" in result.output
    assert "--model-config" in result.output


SERVE = """\
#!/bin/sh
# kvlint: gpu=H100-SXM-80GB engine-version=0.19.0
exec vllm serve meta-llama/Llama-3.1-8B-Instruct \\
  --max-model-len 8192 \\
  --gpu-memory-utilization 0.90
"""

K8S = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: llama
  annotations:
    kvlint.dev/gpu: H100-SXM-80GB
spec:
  template:
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.19.0
          args:
            - --model
            - meta-llama/Llama-3.1-8B-Instruct
            - --max-model-len
            - "8192"
          resources:
            limits:
              nvidia.com/gpu: 1
"""


@pytest.mark.parametrize("name,text", [("serve.sh", SERVE), ("deploy.yaml", K8S)])
def test_patch_applies_and_the_patched_file_checks_clean(tmp_path, name, text):
    source = tmp_path / name
    source.write_text(text)
    patch_file = tmp_path / "plan.patch"
    # a target above the file's own capacity, so the plan has to change something
    plan = _plan_json([str(source), "--kv-tokens", "600000", "--kv-cache-dtype", "auto",
                       "--kv-cache-dtype", "fp8", "--attention-backend", "auto", "-o", str(patch_file)])
    assert source.read_text() == text  # never modifies its input
    assert plan["baseline"] is not None and plan["chosen"]["kv_cache_tokens"] >= 600000
    diff = patch_file.read_text()
    assert diff.startswith(f"--- a/{source}")
    patched = tmp_path / "patched" / name
    patched.parent.mkdir()
    shutil.copy(source, patched)
    subprocess.run(["patch", "-s", str(patched), str(patch_file)], check=True)
    assert "fp8" in patched.read_text()
    _assert_clean(patched, plan["chosen"]["findings"])


def test_output_file_may_not_be_the_input(tmp_path):
    source = tmp_path / "serve.sh"
    source.write_text(SERVE)
    result = invoke(["plan", str(source), "-o", str(source)])
    assert result.exit_code == 2
    assert source.read_text() == SERVE


def test_markdown_has_a_mermaid_bar_chart(tmp_path, monkeypatch):
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    result = invoke(["plan", "--output-format", "markdown", *LLAMA8B, *SMALL, "-o", str(tmp_path / "p.yaml")],
                    env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert result.exit_code == 0, result.output
    assert "```mermaid\nxychart-beta" in result.output and "    bar [" in result.output
    assert "xychart-beta" in summary.read_text()


# --- the whole Pareto front, several models, GPUs and releases --------------------------------

FRONTS = [
    ["--model", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "H100-SXM-80GB", "--release", "0.33.0", "--context", "32768"],
    ["--model", "Qwen/Qwen2.5-7B-Instruct", "--gpu", "A100-SXM4-80GB", "--release", "0.19.0", "--context", "16384"],
    ["--model", "google/gemma-3-27b-it", "--gpu", "H100-SXM-80GB", "--gpus", "2", "--release", "0.25.1", "--context", "32768"],
    ["--model", "Qwen/Qwen3-32B", "--gpu", "H100-SXM-80GB", "--gpus", "2", "--engine", "sglang", "--release", "0.5.9",
     "--context", "32768"],
]


@pytest.mark.parametrize("args", FRONTS, ids=lambda a: f"{a[1]}-{a[3]}-{a[a.index('--release') + 1]}")
def test_every_pareto_configuration_checks_clean(tmp_path, args):
    restrict = ["--kv-cache-dtype", "auto", "--kv-cache-dtype", "fp8_e4m3", "--kv-cache-dtype", "fp8_e5m2"]
    if "sglang" not in args:
        restrict += ["--attention-backend", "auto", "--attention-backend", "FLASH_ATTN",
                     "--attention-backend", "TRITON_ATTN"]
    plan = _plan_json([*args, *restrict])
    assert plan["pareto"], plan["excluded"]
    from kvlint.plan.emit import manifest_text
    for i, row in enumerate(plan["pareto"]):
        manifest = _manifest_for(args, row)
        path = tmp_path / f"front{i}.yaml"
        path.write_text(manifest_text(manifest, "front row"))
        _assert_clean(path, row["findings"])


def _manifest_for(args: List[str], row: Dict[str, Any]) -> Dict[str, Any]:
    """The front row's manifest, written from the row's JSON alone (the documented shape)."""
    c = row["configuration"]
    value = dict(zip(args[::2], args[1::2]))
    engine = value.get("--engine", "vllm")
    if engine == "llama.cpp":  # -c is the per-slot context x the slots (docs/plan.md)
        return {
            "apiVersion": "kvlint/v1", "kind": "Deployment", "metadata": {"name": "front"},
            "engine": {"name": engine, "version": value["--release"], "flash_attention": c["flash_attention"]},
            "hardware": {"gpu": value["--gpu"]},
            "model": {"name": value["--model"]},
            "kv_cache": {"dtype": c["kv_cache_dtype"], "key_dtype": c["kv_cache_dtype"], "value_dtype": c["value_dtype"]},
            "serving": {"context_size": c["max_model_len"] * c["slots"], "max_num_seqs": c["slots"]},
        }
    data: Dict[str, Any] = {
        "apiVersion": "kvlint/v1", "kind": "Deployment", "metadata": {"name": "front"},
        "engine": {"name": engine, "version": value["--release"]},
        "hardware": {"gpu": value["--gpu"], "count": c["tensor_parallel"] * c["pipeline_parallel"]},
        "model": {"name": value["--model"]},
        "kv_cache": {"dtype": c["kv_cache_dtype"]},
        "serving": {"max_model_len": c["max_model_len"]},
    }
    if c["tensor_parallel"] * c["pipeline_parallel"] > 1:
        data["parallelism"] = {"tensor": c["tensor_parallel"], "pipeline": c["pipeline_parallel"]}
    if c["attention_backend"] != "auto":
        data["engine"]["attention_backend"] = c["attention_backend"]
    if c["scales"]:
        data["kv_cache"]["scales"] = c["scales"]
    if c["skip_layers"]:
        data["kv_cache"]["skip_layers"] = c["skip_layers"]
    if c["block_size"]:
        data["kv_cache"]["block_size"] = c["block_size"]
    if c["memory_fraction"] is not None:
        field = {"vllm": "gpu_memory_utilization", "sglang": "mem_fraction_static"}[engine]
        data["memory"] = {field: c["memory_fraction"]}
    return data


# --- llama.cpp (llama-server) -------------------------------------------------------------------

LLAMACPP_FRONTS = [
    ["--model", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "RTX-4090-24GB", "--release", "b7200", "--context", "8192",
     "--engine", "llama.cpp"],
    ["--model", "google/gemma-3-27b-it", "--gpu", "H100-SXM-80GB", "--release", "b11312", "--context", "16384",
     "--concurrency", "2", "--engine", "llama.cpp"],
]


@pytest.mark.parametrize("args", LLAMACPP_FRONTS, ids=lambda a: f"{a[1]}-{a[3]}-{a[5]}")
def test_every_llamacpp_pareto_row_and_command_line_checks_clean(tmp_path, args):
    out = tmp_path / "serve.sh"
    plan = _plan_json([*args, "--emit", "llama-server", "-o", str(out)])
    assert plan["pareto"], plan["excluded"]
    for i, row in enumerate(plan["pareto"]):
        path = tmp_path / f"front{i}.yaml"
        from kvlint.plan.emit import manifest_text
        path.write_text(manifest_text(_manifest_for(args, row), "front row"))
        _assert_clean(path, row["findings"])
    _assert_clean(out, plan["chosen"]["findings"])
    text = out.read_text()
    c = plan["chosen"]["configuration"]
    # the spellings llama.cpp's common/arg.cpp registers (kvlint/adapters/llamacpp_flags.py)
    assert f"llama-server --hf-repo {args[1]}" in text
    assert f"--cache-type-k {c['kv_cache_dtype']}" in text and f"--cache-type-v {c['value_dtype']}" in text
    assert f"--ctx-size {c['max_model_len'] * c['slots']}" in text and f"--parallel {c['slots']}" in text
    assert f"--flash-attn {c['flash_attention']}" in text  # both builds take -fa on|off|auto


def test_llamacpp_quantized_v_without_flash_attention_is_excluded_with_kv330():
    # llama.cpp refuses a quantized V cache without flash attention (src/llama-context.cpp:
    # "V cache quantization requires flash_attn"); the plan must say so, not drop it silently
    plan = _plan_json([*LLAMACPP_FRONTS[0], "--kv-cache-dtype", "f16", "--kv-cache-dtype", "q8_0"])
    families = {e["family"]: e for e in plan["excluded"]}
    assert families["V q8_0 with fa off"]["code"] == "KV330", families
    assert families["V q8_0 with fa off"]["share"] == 1.0
    assert "V f16 with fa off" not in families  # an f16 V cache needs no flash attention
    for row in plan["pareto"]:
        c = row["configuration"]
        assert not (c["value_dtype"] == "q8_0" and c["flash_attention"] == "off"), row


def test_llamacpp_script_patch_checks_clean(tmp_path):
    script = tmp_path / "serve.sh"
    script.write_text("#!/bin/sh\n# kvlint: engine=llama.cpp engine-version=b7200 gpu=RTX-4090-24GB\n"
                      "llama-server --hf-repo meta-llama/Llama-3.1-8B-Instruct \\\n  -ctk q8_0 -ctv q8_0 \\\n"
                      "  -c 8192 -np 2\n")
    before = script.read_text()
    plan = _plan_json([str(script)])
    assert script.read_text() == before
    assert plan["emitted"].startswith("--- a/")
    if shutil.which("patch") is None:
        pytest.skip("no patch(1)")
    subprocess.run(["patch", "-p1", "-s", "-d", str(tmp_path)], input=plan["emitted"].replace(
        f"a/{script}", "a/serve.sh").replace(f"b/{script}", "b/serve.sh"), text=True, check=True)
    assert script.read_text() != before
    _assert_clean(script, plan["chosen"]["findings"])


def test_llamacpp_old_build_spells_flash_attention_as_a_switch(tmp_path):
    # before the tri-state `-fa on|off|auto` (first seen at b6327) -fa took no value; the old
    # common/arg.cpp in kvlint/adapters/llamacpp_flags.py registers it as a plain switch
    out = tmp_path / "serve.sh"
    plan = _plan_json(["--engine", "llama.cpp", "--model", "Qwen/Qwen2.5-7B-Instruct", "--gpu", "A100-SXM4-80GB",
                       "--release", "b5000", "--context", "8192", "--kv-cache-dtype", "f16", "--kv-cache-dtype", "q8_0",
                       "--emit", "llama-server", "-o", str(out)])
    assert plan["chosen"]["configuration"]["flash_attention"] == "on"
    assert "  --flash-attn \\\n" in out.read_text()
    assert all(row["configuration"]["flash_attention"] in ("on", "off") for row in plan["pareto"])
    _assert_clean(out, plan["chosen"]["findings"])


def test_llamacpp_emit_refuses_other_engines():
    result = invoke(["plan", *LLAMA8B, "--emit", "llama-server"])
    assert result.exit_code == 2 and "the plan is for vllm" in result.output


# --- acceptance: real deployments (benchmarks/capacity_logs: logs of what the engine ran) -------

ACCEPTANCE = [
    "vllm-h100-llama31-8b-kvfp8", "vllm-h100-llama31-8b-bf16", "vllm-h100-qwen25-7b", "vllm-h100-qwen3-8b",
    "vllm-h100-gptoss-120b-mnbt1024", "vllm-h100x2-llama31-8b-tp2", "vllm-h100-gemma3-12b", "vllm-h100-gemma3-4b",
    "vllm-l4-qwen3-4b-fp8", "vllm-h100x4-qwen25-7b-tp4", "vllm-h100-qwen25-7b-kvfp8", "vllm-a100-gptoss-20b-gmu065",
]

_DEVICE_BY_CC = {"8.0": "sm80", "8.6": "sm86", "8.9": "sm89", "9.0": "sm90", "10.0": "sm100", "12.0": "sm120"}


def _engine_accepts(version: str, row: Dict[str, Any], facts: Dict[str, Any]) -> List[str]:
    """What the release's own code (its derived table) refuses about a proposal; [] when nothing."""
    table = json.loads((TABLES / f"{version}.json").read_text())
    c = row["configuration"]
    problems = []
    if c["kv_cache_dtype"] not in table["cache_dtypes"]["values"]:
        problems.append(f"{c['kv_cache_dtype']} is not a CacheDType of {version}")
    device = _DEVICE_BY_CC[facts["gpu"]["cc"]]
    variant = "use_per_head_quant_scales" if (c["scales"] or {}).get("granularity") == "per-head" else "plain"
    point = {"device": device, "variant": variant, "kv_cache_dtype": c["kv_cache_dtype"],
             "head_size": facts["model"]["head_dim"], "block_size": c["block_size"] or 16, "use_mla": False}
    if c["attention_backend"] == "auto":
        point["block_size"] = c["block_size"] or "default"
        chosen = T.lookup(table["selection"]["tree"], point)
        if not isinstance(chosen, str) or chosen.startswith("error"):
            problems.append(f"auto selection: {chosen}")
        return problems
    validate = table["backends"][c["attention_backend"]]["validate"]
    for reason, tree in validate["reasons"].items():
        if T.lookup(tree, point):
            problems.append(f"{c['attention_backend']}: {reason}")
    if c["skip_layers"] and "--kv-cache-dtype-skip-layers" not in json.dumps(table["flags"]):
        problems.append("no --kv-cache-dtype-skip-layers")
    return problems


@pytest.mark.parametrize("case", ACCEPTANCE)
def test_real_deployment_plan(tmp_path, case):
    log = yaml.safe_load((LOGS / f"{case}.yaml").read_text())
    manifest = {"apiVersion": "kvlint/v1", "kind": "Deployment", **log["manifest"]}
    manifest["engine"]["version"] = str(manifest["engine"]["version"])
    path = tmp_path / "deploy.yaml"
    path.write_text(yaml.safe_dump(manifest, sort_keys=False))
    plan = _plan_json([str(path), "--kv-cache-dtype", "auto", "--kv-cache-dtype", "fp8",
                       "--kv-cache-dtype", "fp8_e5m2", "--kv-cache-dtype", "fp8_per_token_head"]
                      if manifest["engine"]["version"] >= "0.25" else
                      [str(path), "--kv-cache-dtype", "auto", "--kv-cache-dtype", "fp8",
                       "--kv-cache-dtype", "fp8_e5m2"])
    facts = json.loads(invoke(["facts", str(path)]).output)[0]
    version = manifest["engine"]["version"]
    for row in plan["pareto"]:
        assert _engine_accepts(version, row, facts) == [], row["label"]
    baseline, chosen = plan["baseline"], plan["chosen"]
    assert chosen is not None
    if baseline["kv_cache_tokens"] is not None and not any(f["severity"] == "error" for f in baseline["findings"]):
        assert chosen["kv_cache_tokens"] >= baseline["kv_cache_tokens"]
    else:
        assert plan["notes"] or "fails" in json.dumps(baseline)


def test_check_does_not_import_plan():
    """Start-up: a plain `kvlint check` imports the pipeline but nothing of kvlint.plan."""
    out = subprocess.run([sys.executable, "-X", "importtime", "-c",
                          "import sys; from kvlint.cli import run; "
                          "sys.argv = ['kvlint', 'check', 'examples/llama70b-fp8-h100.yaml']; run()"],
                         cwd=REPO, capture_output=True, text=True)
    imported = [line.rsplit("|", 1)[-1].strip() for line in out.stderr.splitlines() if "|" in line]
    assert "kvlint.pipeline.check" in imported, out.stderr[-2000:]
    assert not [m for m in imported if m.startswith("kvlint.plan")]


# --- the search's shortcuts are exact -----------------------------------------------------------

def _judge_and_axes(model: str, gpu: str, engine: str, release: str, gpus: int = 1):
    from kvlint.catalog import load_catalogs
    from kvlint.config import Config
    from kvlint.plan.request import request_from_options
    from kvlint.plan.run import baseline_candidate, context_values
    from kvlint.plan.search import Judge, Targets
    from kvlint.plan.space import apply, build_axes
    from kvlint.rulebook import load_rulebook

    config = Config()
    request = request_from_options(model, None, gpu, gpus, engine, release, Targets(context=16384), None, config)
    rulebook = load_rulebook(())
    judge = Judge(rulebook, {r.code for r in rulebook})
    start = baseline_candidate(request)
    baseline = judge.judge(apply(request.base, start, engine), start)
    release_info = load_catalogs(()).engines.release(engine, request.release)
    axes = build_axes(release_info, engine, baseline.facts, gpus, context_values(request, baseline.facts), None, "per-head")
    return request, rulebook, judge, axes


SHORTCUT_CASES = [("meta-llama/Llama-3.1-8B-Instruct", "H100-SXM-80GB", "vllm", "0.33.0", 2),
                  ("google/gemma-3-12b-it", "A100-SXM4-80GB", "vllm", "0.19.0", 1),
                  ("Qwen/Qwen3-32B", "H100-SXM-80GB", "sglang", "0.5.9", 2)]


@pytest.mark.parametrize("case", SHORTCUT_CASES, ids=lambda c: f"{c[2]}-{c[3]}")
def test_sizing_changes_no_fact_outside_the_sizing_sections(case):
    """The screen's premise: two sizings (memory fraction, context) of one configuration resolve to
    the same facts outside capacity/serving/memory, so a rule reading none of those gives one verdict."""
    from dataclasses import replace

    from kvlint.analysis import analyze_deployment
    from kvlint.plan.search import SIZING_SECTIONS
    from kvlint.plan.space import apply

    request, _, _, axes = _judge_and_axes(*case)
    groups = {}
    for candidate in axes.candidates():
        groups.setdefault(replace(candidate, max_model_len=None, memory=None), []).append(candidate)
    checked = 0
    for members in list(groups.values())[::7]:  # a spread of configurations, every sizing of each
        views = []
        for candidate in members:
            facts = analyze_deployment(apply(request.base, candidate, request.engine), "<plan>", None).facts
            views.append(json.dumps({k: v for k, v in facts.items() if k not in SIZING_SECTIONS}, sort_keys=True))
        assert len(set(views)) == 1, members[0].label()
        checked += 1
    assert checked >= 10


@pytest.mark.parametrize("case", SHORTCUT_CASES, ids=lambda c: f"{c[2]}-{c[3]}")
def test_split_rule_evaluation_equals_the_rulebook(case):
    """Judge.evaluate (memoised rules that read no sizing section + the rest) returns what
    Rulebook.evaluate returns on every rule, finding for finding, in order."""
    from kvlint.analysis import analyze_deployment
    from kvlint.plan.space import apply

    request, rulebook, judge, axes = _judge_and_axes(*case)
    for candidate in list(axes.candidates())[::11]:
        facts = analyze_deployment(apply(request.base, candidate, request.engine), "<plan>", None).facts
        split = [(r.code, m, p) for r, m, p in judge.evaluate(facts)]
        whole = [(r.code, m, p) for r, m, p in rulebook.evaluate(facts)]
        assert split == whole, candidate.label()


def _complete(words: str, cword: int) -> str:
    import os

    env = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"}
    env.update({"_KVLINT_COMPLETE": "bash_complete", "COMP_WORDS": words, "COMP_CWORD": str(cword)})
    return subprocess.run([str(Path(sys.executable).parent / "kvlint")], env=env, capture_output=True,
                          text=True, timeout=120).stdout


def test_shell_completion_knows_plan_and_its_choices():
    assert "plain,plan" in _complete("kvlint pl", 1)
    emitted = _complete("kvlint plan --emit ", 3)
    assert all(f"plain,{form}" in emitted for form in ("manifest", "vllm", "sglang", "patch")), emitted
    formats = _complete("kvlint plan --output-format ", 3)
    assert all(f"plain,{fmt}" in formats for fmt in ("text", "markdown", "json")), formats


def test_help_matches_the_other_commands():
    text = invoke(["plan", "--help"]).output
    for option in ("--output-format", "-o, --output-file", "--config", "--emit", "--context", "--concurrency",
                   "--kv-tokens"):
        assert option in text, option
    assert "plan" in invoke(["--help"]).output


def test_missing_weights_is_named_not_guessed():
    args = ["--model-config", "examples/models/qwen2.5-7b-support-ft/config.json", "--gpu", "L4", "--context", "8192",
            "--kv-cache-dtype", "auto", "--attention-backend", "auto"]
    result = invoke(["plan", *args])
    assert result.exit_code == 1
    assert "capacity unknown, not ranked" in result.output and "--weights" in result.output
    plan = _plan_json([*args, "--weights", "15.2GB"])
    assert plan["chosen"]["kv_cache_tokens"] > 0


def test_unknown_gpu_is_a_usage_error():
    result = invoke(["plan", "--model", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "NOT-A-GPU"])
    assert result.exit_code == 2
    assert "NOT-A-GPU is not in the catalog" in result.output


# --- the fast path equals a plain `kvlint check` of the written manifest ------------------------

EXACT_CASES = SHORTCUT_CASES + [("google/gemma-3-27b-it", "H100-SXM-80GB", "vllm", "0.25.1", 2),
                                ("Qwen/Qwen2.5-7B-Instruct", "L4", "vllm", "0.22.0", 1)]


@pytest.mark.parametrize("case", EXACT_CASES, ids=lambda c: f"{c[0].split('/')[-1]}-{c[2]}-{c[3]}")
def test_judged_candidates_equal_a_plain_check(tmp_path, case):
    """Every candidate judged as the search judges it (in order, one process, the HF-cache lookups
    remembered and stage plans shared between candidates) has the findings `kvlint check` reports
    and the capacity `kvlint facts` computes for its written manifest, each run from cold caches."""
    from kvlint.capacity import vllm
    from kvlint.catalog.hf_config import remembered_lookups
    from kvlint.plan.emit import manifest_text
    from kvlint.plan.space import apply

    request, _, judge, axes = _judge_and_axes(*case)
    sample = {}
    with remembered_lookups():
        for i, candidate in enumerate(axes.candidates()):
            outcome = judge.judge(apply(request.base, candidate, request.engine), candidate)
            if i % 97 == 0:
                sample[i] = (candidate, outcome)
    assert len(sample) >= 5
    with_capacity = 0
    for i, (candidate, outcome) in sample.items():
        path = tmp_path / f"c{i}.yaml"
        path.write_text(manifest_text(apply(request.base, candidate, request.engine), "candidate"))
        vllm._SHARED.clear()
        reported = {(f["code"], f["severity"], f["message"]) for f in _findings(_check(path))}
        assert set(outcome.findings) == reported, (candidate.label(), set(outcome.findings) ^ reported)
        vllm._SHARED.clear()
        facts = json.loads(invoke(["facts", str(path)]).output)[0]
        assert facts["capacity"] == json.loads(json.dumps(outcome.capacity)), candidate.label()
        with_capacity += outcome.tokens is not None
    assert with_capacity >= 3
