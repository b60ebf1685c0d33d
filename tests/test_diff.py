"""`kvlint diff --base REF`: the pull-request capacity diff, on real temporary git repositories.

Each test builds a repository (git init, commit manifests), edits the working tree and runs the
real CLI (click.testing, in-process) from inside it.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Callable, Dict

import pytest

from conftest import REPO_ROOT, invoke

# The clean starting point of the issue: vLLM 0.19.1, Llama-3.1-8B on H100, fp8 with
# per-tensor checkpoint scales, FLASH_ATTN, a 40 GiB pool (655,360 tokens, 5.00x at 131,072).
CLEAN = """\
apiVersion: kvlint/v1
kind: Deployment
metadata:
  name: llama8b-fp8-h100
engine:
  name: vllm
  version: "0.19.1"
  attention_backend: FLASH_ATTN
hardware:
  gpu: H100-SXM-80GB
model:
  name: meta-llama/Llama-3.1-8B-Instruct
  kv_scales: per-tensor
kv_cache:
  dtype: fp8
memory:
  kv_cache_memory: {pool}
serving:
  max_model_len: {max_model_len}
"""

# 64 KiB per token (32 layers x 8 KV heads x 128 x K,V x 1 byte): a 4 GiB pool holds 65,536
# tokens, so 32,768-token requests fit twice and 131,072-token requests do not fit (KV603).
SMALL_POOL_32K = CLEAN.format(pool="4GiB", max_model_len=32768)
SMALL_POOL_128K = CLEAN.format(pool="4GiB", max_model_len=131072)


def manifest(pool: str = "40GiB", max_model_len: int = 131072, name: str = "llama8b-fp8-h100") -> str:
    return CLEAN.format(pool=pool, max_model_len=max_model_len).replace("llama8b-fp8-h100", name)


def git(repo: Path, *args: str) -> str:
    completed = subprocess.run(
        ["git", "-c", "user.name=kvlint tests", "-c", "user.email=tests@kvlint.invalid",
         "-c", "commit.gpgsign=false", *args],
        cwd=str(repo), capture_output=True, text=True,
    )
    assert completed.returncode == 0, completed.stderr
    return completed.stdout


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "deployments"
    root.mkdir()
    git(root, "init", "-q")
    (root / "kvlint.toml").write_text("# defaults\n", encoding="utf-8")
    monkeypatch.chdir(root)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    return root


@pytest.fixture
def put(repo: Path) -> Callable[[str, str], Path]:
    def _put(relative: str, text: str) -> Path:
        path = repo / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path

    return _put


def commit(repo: Path, message: str = "base") -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD").strip()


def diff_json(*args: str) -> Dict:
    result = invoke(["diff", "--format", "json", *args])
    assert result.exit_code in (0, 1), result.output
    report = json.loads(result.stdout)
    report["exit_code"] = result.exit_code
    return report


def by_name(report: Dict) -> Dict[str, Dict]:
    return {d["name"]: d for d in report["deployments"]}


# --- the acceptance scenario -----------------------------------------------------------------


def test_raising_max_model_len_beyond_the_pool_fails_the_gate(repo, put):
    put("deploy/llama8b.yaml", SMALL_POOL_32K)
    commit(repo)
    put("deploy/llama8b.yaml", SMALL_POOL_128K)

    result = invoke(["diff", "--base", "HEAD"])
    assert result.exit_code == 1, result.output
    out = result.stdout
    assert "deploy/llama8b.yaml: llama8b-fp8-h100 [changed]" in out
    assert "max concurrency  2.00x -> 0.50x (-75.0%)" in out  # old and new concurrency
    assert "KV603 [error] context-does-not-fit" in out  # the failing rule
    assert "new: deploy/llama8b.yaml:19:18: KV603" in out  # at the edited line, repo-relative
    assert out.rstrip().splitlines()[-1].startswith("Gate failed: 1 new finding(s) at or above error (KV603 context-does-not-fit)")

    report = diff_json("--base", "HEAD")
    [deployment] = report["deployments"]
    assert deployment["base"]["max_concurrency"] == 2.0
    assert deployment["head"]["max_concurrency"] == 0.5
    assert deployment["base"]["kv_cache_tokens"] == deployment["head"]["kv_cache_tokens"] == 65536
    assert [f["code"] for f in deployment["new_findings"]] == ["KV603"]
    assert report["passed"] is False and report["exit_code"] == 1


def test_the_same_scenario_in_markdown_for_the_job_summary(repo, put):
    put("deploy/llama8b.yaml", SMALL_POOL_32K)
    commit(repo)
    put("deploy/llama8b.yaml", SMALL_POOL_128K)
    result = invoke(["diff", "--base", "HEAD", "--format", "markdown", "--max-capacity-regression", "10"])
    assert result.exit_code == 1
    md = result.stdout
    assert md.startswith("## kvlint capacity diff against `HEAD (")
    assert "| `llama8b-fp8-h100` | `deploy/llama8b.yaml` | changed | 65,536 → 65,536 | 65,536 → 65,536 | **2.00x → 0.50x (-75.0%)** | 1 error |" in md
    assert "| error | `deploy/llama8b.yaml:19:18` | [KV603](" in md
    assert ":x: Gate failed" in md and "max concurrency dropped 75.0%" in md


# --- the capacity regression gate ------------------------------------------------------------


def test_capacity_drop_against_the_cli_threshold(repo, put):
    put("a.yaml", manifest(pool="40GiB"))
    commit(repo)
    put("a.yaml", manifest(pool="30GiB"))  # 655,360 -> 491,520 tokens: -25%, still clean

    loose = diff_json("--base", "HEAD", "--max-capacity-regression", "30")
    assert loose["exit_code"] == 0 and loose["passed"] is True
    [d] = loose["deployments"]
    assert (d["base"]["kv_cache_tokens"], d["head"]["kv_cache_tokens"]) == (655360, 491520)
    assert d["change_pct"]["kv_cache_tokens"] == pytest.approx(-25.0)
    assert d["new_findings"] == [] and d["regressions"] == []

    strict = diff_json("--base", "HEAD", "--max-capacity-regression", "20")
    assert strict["exit_code"] == 1 and strict["passed"] is False
    regressions = {r["metric"]: r for r in strict["deployments"][0]["regressions"]}
    assert set(regressions) == {"kv_cache_tokens", "max_concurrency"}
    assert regressions["kv_cache_tokens"]["drop_pct"] == 25.0
    assert regressions["kv_cache_tokens"]["limit_pct"] == 20.0

    text = invoke(["diff", "--base", "HEAD", "--max-capacity-regression", "20"]).stdout
    assert "FAIL: KV tokens dropped 25.0% (limit 20%)" in text

    # without a limit a capacity drop alone does not fail
    assert diff_json("--base", "HEAD")["exit_code"] == 0


def test_threshold_from_config_and_cli_override(repo, put):
    put("a.yaml", manifest(pool="40GiB"))
    commit(repo)
    put("a.yaml", manifest(pool="30GiB"))
    (repo / "kvlint.toml").write_text("max-capacity-regression = 20\n", encoding="utf-8")
    assert diff_json("--base", "HEAD")["exit_code"] == 1
    assert diff_json("--base", "HEAD", "--max-capacity-regression", "30")["exit_code"] == 0
    assert invoke(["diff", "--base", "HEAD", "--exit-zero", "--max-capacity-regression", "1"]).exit_code == 0


def test_capacity_growth_is_never_a_regression(repo, put):
    put("a.yaml", manifest(pool="30GiB"))
    commit(repo)
    put("a.yaml", manifest(pool="40GiB"))
    report = diff_json("--base", "HEAD", "--max-capacity-regression", "0")
    assert report["exit_code"] == 0
    assert report["deployments"][0]["change_pct"]["max_concurrency"] == pytest.approx(100 / 3)


# --- new findings ----------------------------------------------------------------------------


def test_findings_already_in_the_base_are_not_new_even_when_lines_move(repo, put):
    put("a.yaml", SMALL_POOL_128K)  # KV603 at the base already
    commit(repo)
    put("a.yaml", SMALL_POOL_128K.replace("  name: llama8b-fp8-h100\n", "  name: llama8b-fp8-h100\n  description: moved\n"))
    report = diff_json("--base", "HEAD")
    assert report["exit_code"] == 0
    assert report["new_findings"] == [] and report["fixed_findings"] == []
    assert report["deployments"][0]["status"] == "unchanged"


def test_fixed_findings_are_reported_and_pass(repo, put):
    put("a.yaml", SMALL_POOL_128K)
    commit(repo)
    put("a.yaml", SMALL_POOL_32K)
    report = diff_json("--base", "HEAD")
    assert report["exit_code"] == 0
    assert [f["code"] for f in report["fixed_findings"]] == ["KV603"]
    assert report["deployments"][0]["head"]["max_concurrency"] == 2.0


def test_new_findings_below_fail_on_do_not_fail(repo, put):
    put("a.yaml", manifest())
    commit(repo)
    put("a.yaml", manifest().replace("kv_scales: per-tensor", "kv_scales: none"))  # KV501 (info)
    report = diff_json("--base", "HEAD")
    assert [f["code"] for f in report["new_findings"]] == ["KV501"]
    assert report["exit_code"] == 0
    assert diff_json("--base", "HEAD", "--fail-on", "info")["exit_code"] == 1
    assert report["deployments"][0]["status"] == "changed"  # same numbers, a new finding


def test_a_broken_file_is_a_new_finding_outside_any_deployment(repo, put):
    put("a.yaml", manifest())
    commit(repo)
    put("a.yaml", "apiVersion: kvlint/v1\nkind: [unclosed\n")
    result = invoke(["diff", "--base", "HEAD"])
    assert result.exit_code == 1
    assert "New findings outside a compared deployment:" in result.stdout
    assert "a.yaml:" in result.stdout and "KV001" in result.stdout


# --- matching documents and files ------------------------------------------------------------


def test_added_removed_and_renamed_documents_are_matched_by_name_within_a_file(repo, put):
    put("multi.yaml", manifest(name="keep") + "---\n" + manifest(name="old-name"))
    put("gone.yaml", manifest(name="gone"))
    commit(repo)
    put("multi.yaml", manifest(name="new-name", pool="20GiB") + "---\n" + manifest(name="keep"))  # reordered
    (repo / "gone.yaml").unlink()
    put("sub/added.yaml", manifest(name="added"))
    put("notes.yaml", "just: some yaml\n")  # not a manifest: ignored on both sides

    report = diff_json("--base", "HEAD")
    statuses = {(d["file"], d["name"]): d["status"] for d in report["deployments"]}
    assert statuses == {
        ("multi.yaml", "keep"): "unchanged",  # moved from document 1 to 2: matched by name
        ("multi.yaml", "old-name"): "removed",
        ("multi.yaml", "new-name"): "added",
        ("gone.yaml", "gone"): "removed",
        ("sub/added.yaml", "added"): "added",
    }
    added = by_name(report)["new-name"]
    assert added["base"] is None and added["head"]["kv_cache_tokens"] == 327680
    removed = by_name(report)["gone"]
    assert removed["head"] is None and removed["base"]["kv_cache_tokens"] == 655360
    assert report["files"] == ["gone.yaml", "multi.yaml", "sub/added.yaml"]
    assert report["exit_code"] == 0  # removing a deployment is not a capacity regression

    text = invoke(["diff", "--base", "HEAD"]).stdout
    assert "multi.yaml: new-name [added]" in text
    assert "gone.yaml: gone [removed]" in text
    assert "1 deployment(s) unchanged." in text


def test_relative_model_config_resolves_on_the_base_side(repo, put):
    """The base copy must bring the base's config.json along: otherwise the base side has no
    geometry (KV203), no capacity, and the deployment would read as added."""
    config = json.loads((REPO_ROOT / "tests/fixtures/hf_configs/llama-3.1-8b-instruct.json").read_text())
    text = manifest().replace(
        "  name: meta-llama/Llama-3.1-8B-Instruct\n",
        "  name: acme/custom-8b\n  config: ../models/custom/config.json\n",
    )
    put("deploy/custom.yaml", text)
    put("models/custom/config.json", json.dumps(config))
    commit(repo)
    config["num_key_value_heads"] = 4  # half the KV bytes per token on the head side
    put("models/custom/config.json", json.dumps(config))

    report = diff_json("--base", "HEAD")
    [d] = report["deployments"]
    assert d["status"] == "changed"
    assert d["base"]["per_token_bytes"] == 65536
    assert d["head"]["per_token_bytes"] == 32768
    assert d["head"]["kv_cache_tokens"] == 2 * d["base"]["kv_cache_tokens"]
    assert report["new_findings"] == [] and report["fixed_findings"] == []


def test_names_are_repo_relative_from_a_subdirectory_and_paths_narrow_the_diff(repo, put, monkeypatch):
    put("deploy/a.yaml", SMALL_POOL_32K)
    put("other/b.yaml", manifest(name="b", pool="40GiB"))
    commit(repo)
    put("deploy/a.yaml", SMALL_POOL_128K)
    put("other/b.yaml", manifest(name="b", pool="10GiB"))
    monkeypatch.chdir(repo / "deploy")
    report = diff_json("--base", "HEAD", ".")
    assert [(d["file"], d["name"]) for d in report["deployments"]] == [("deploy/a.yaml", "llama8b-fp8-h100")]
    assert report["new_findings"][0]["file"] == "deploy/a.yaml"


def test_excluded_paths_stay_excluded_on_both_sides(repo, put):
    (repo / "kvlint.toml").write_text('exclude = ["broken"]\n', encoding="utf-8")
    put("broken/x.yaml", manifest(name="x"))
    put("a.yaml", manifest())
    commit(repo)
    put("broken/x.yaml", SMALL_POOL_128K)
    report = diff_json("--base", "HEAD")
    assert report["files"] == ["a.yaml"]
    assert report["exit_code"] == 0


def test_against_an_older_commit_and_a_branch(repo, put):
    put("a.yaml", SMALL_POOL_32K)
    first = commit(repo, "first")
    git(repo, "branch", "base-branch")
    put("a.yaml", SMALL_POOL_128K)
    commit(repo, "second")  # committed: HEAD itself has the KV603
    assert diff_json("--base", "HEAD")["exit_code"] == 0
    for ref in (first, "base-branch", "HEAD~1"):
        report = diff_json("--base", ref)
        assert report["exit_code"] == 1, ref
        assert report["base"]["commit"] == first


# --- usage -----------------------------------------------------------------------------------


def test_first_commit_everything_is_added(repo, put):
    put("a.yaml", manifest())
    report = diff_json("--base", "HEAD")
    assert report["base"]["commit"] is None
    assert [d["status"] for d in report["deployments"]] == ["added"]
    assert report["exit_code"] == 0


def test_unknown_ref_is_a_usage_error(repo, put):
    put("a.yaml", manifest())
    commit(repo)
    result = invoke(["diff", "--base", "no-such-branch"])
    assert result.exit_code == 2
    assert result.stderr.strip() == "kvlint: error: --base no-such-branch: no such commit in this repository"


def test_outside_a_git_repository_is_a_usage_error(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "kvlint.toml").write_text("", encoding="utf-8")
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    result = invoke(["diff", "--base", "HEAD"])
    assert result.exit_code == 2
    assert "not inside a git repository" in result.stderr
    assert "Traceback" not in result.output


def test_base_option_is_required(repo):
    result = invoke(["diff"])
    assert result.exit_code == 2
    assert "--base" in result.output


ABLATION = """\
apiVersion: kvlint/v1
kind: Ablation
metadata:
  name: llama8b-fp8
base: ../deploy/base.yaml
variants:
- name: bf16
- name: fp8-unit
  overrides:
    kv_cache:
      dtype: fp8_e4m3
      scales: {granularity: per-tensor, source: unit}
"""


def test_ablation_variants_are_compared_and_a_path_base_comes_from_the_base_ref(repo, put):
    """The ablation's base manifest lies outside the diffed path; the base side must still read
    the base ref's version of it (otherwise every variant would read as added)."""
    put("deploy/base.yaml", manifest(pool="40GiB").replace("dtype: fp8", "dtype: bfloat16").replace("  kv_scales: per-tensor\n", ""))
    put("ablations/llama8b.yaml", ABLATION)
    commit(repo)
    put("deploy/base.yaml", manifest(pool="20GiB").replace("dtype: fp8", "dtype: bfloat16").replace("  kv_scales: per-tensor\n", ""))
    report = diff_json("--base", "HEAD", "ablations/")
    variants = {d["name"]: d for d in report["deployments"]}
    assert set(variants) == {"llama8b-fp8/bf16", "llama8b-fp8/fp8-unit"}
    for d in variants.values():
        assert d["status"] == "changed" and d["file"] == "ablations/llama8b.yaml"
        assert d["head"]["kv_cache_tokens"] * 2 == d["base"]["kv_cache_tokens"]
    assert variants["llama8b-fp8/fp8-unit"]["base"]["kv_cache_tokens"] == 655360
    assert variants["llama8b-fp8/bf16"]["base"]["kv_cache_tokens"] == 327680


NATIVE_SCRIPT = """#!/bin/sh
# kvlint: gpu=H100-SXM-80GB engine-version=0.19.1
vllm serve meta-llama/Llama-3.1-8B-Instruct --kv-cache-dtype fp8 --kv-cache-memory-bytes 4GiB --max-model-len {len}
"""


def test_native_files_are_diffed_like_manifests(repo, put):
    """A shell script's capacity is compared across the base and the working tree."""
    put("deploy/serve.sh", NATIVE_SCRIPT.format(len=32768))
    commit(repo)
    put("deploy/serve.sh", NATIVE_SCRIPT.format(len=131072))
    report = diff_json("--base", "HEAD", "--max-capacity-regression", "10")
    [deployment] = report["deployments"]
    assert deployment["file"] == "deploy/serve.sh" and deployment["status"] == "changed"
    assert deployment["head"]["max_model_len"] == 131072 and deployment["base"]["max_model_len"] == 32768
    assert report["passed"] is False and report["exit_code"] == 1  # concurrency dropped 75%
