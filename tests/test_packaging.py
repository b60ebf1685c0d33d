"""Packaging and import cost, through real subprocesses.

The wheel test builds kvlint, installs it into a fresh virtual environment outside the source
tree (no system site-packages), and runs it from an unrelated directory, so schemas/ and rules/
must resolve from site-packages. The import test checks the design rule that `kvlint check`
imports neither torch nor numpy, in the development environment where both may be installed.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.version import Version

from conftest import REPO_ROOT, VALID_MANIFEST

HEAVY = ("torch", "numpy")

# The tests that use the built wheel run on one xdist worker (--dist loadfile), which builds it once.


def _run(args, cwd, timeout=600, env=None, check=True):
    result = subprocess.run(
        [str(a) for a in args], cwd=str(cwd), capture_output=True, text=True, timeout=timeout, env=env
    )
    if check:
        assert result.returncode == 0, f"{args}: exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    return result


def _clean_env() -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env.pop("GITHUB_STEP_SUMMARY", None)
    return env


def _imported_modules(importtime_stderr: str) -> set:
    modules = set()
    for line in importtime_stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            name = line.rsplit("|", 1)[1].strip()
            if name and name != "package":
                modules.add(name)
    return modules


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(venv python, kvlint script) for the built wheel in a fresh venv."""
    base = tmp_path_factory.mktemp("wheel")
    dist = base / "dist"
    # Both distributions, as the release workflow builds them (the wheel from the sdist).
    build = _run([sys.executable, "-m", "build", "--outdir", dist, REPO_ROOT], cwd=base, check=False)
    if build.returncode != 0:  # no index for the isolated build env: build with the hatchling here
        _run([sys.executable, "-m", "build", "--no-isolation", "--outdir", dist, REPO_ROOT], cwd=base)
    [wheel] = sorted(dist.glob("kvcache_lint-*.whl"))
    venv = base / "venv"
    python = venv / "bin" / "python"
    # As pipx and uv make a tool's environment: without a pip of its own (ensurepip is about 5 s of
    # CPU), installed into by this environment's pip (`--python`, pip 22.3 and later).
    pip = [sys.executable, "-m", "pip", "--python", python]
    if Version(importlib.metadata.version("pip")) < Version("22.3"):
        pip = None
    _run([sys.executable, "-m", "venv", *(["--without-pip"] if pip else []), venv], cwd=base)
    assert "include-system-site-packages = false" in (venv / "pyvenv.cfg").read_text()
    pip = pip or [python, "-m", "pip"]
    # As the README pins a release (`pipx install 'kvcache-lint==X.Y.Z'`): by distribution name
    # and version, found among the distributions just built (the dependencies come from the
    # package index pip is configured with); the wheel, which pip prefers to the sdist.
    _run([*pip, "install", "--quiet", "--find-links", dist, f"kvcache-lint=={_version()}"], cwd=base, env=_clean_env())
    installed = _run([*pip, "show", "--files", "kvcache-lint"], cwd=base, env=_clean_env()).stdout
    assert f"Version: {_version()}" in installed and wheel.name.split("-")[0] == "kvcache_lint"
    return python, venv / "bin" / "kvlint", base


@pytest.mark.slow
def test_built_distributions_pass_the_release_check(installed):
    """tools/check_dist.py, as the release workflow runs it, on the wheel and sdist built here."""
    _, _, base = installed
    result = _run([sys.executable, REPO_ROOT / "tools" / "check_dist.py", base / "dist"], cwd=base, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout == f"check_dist: kvcache-lint {_version()}: wheel and sdist ok\n"


@pytest.mark.slow
def test_wheel_carries_schemas_and_rules(installed):
    python, _, base = installed
    out = _run(
        [python, "-c", "import kvlint.resources as r; print(r.schemas_dir()); print(r.rules_dir())"],
        cwd=base, env=_clean_env(),
    ).stdout.split()
    schemas, rules = (Path(p) for p in out)
    for folder in (schemas, rules):
        assert "site-packages" in folder.parts, folder
        assert REPO_ROOT not in folder.parents
    assert (schemas / "manifest.v1.json").is_file()
    assert {p.name for p in rules.glob("KV*.yaml")} == {p.name for p in (REPO_ROOT / "rules").glob("KV*.yaml")}


@pytest.mark.slow
def test_installed_kvlint_checks_examples_from_another_directory(installed, tmp_path):
    python, kvlint, _ = installed
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = _clean_env()
    examples = _run(
        [kvlint, "check", "--config", REPO_ROOT / "kvlint.toml", REPO_ROOT / "examples"], cwd=elsewhere, env=env, check=False
    )
    assert examples.returncode == 0, examples.stdout + examples.stderr
    # not vacuous: a clean manifest passes, a broken one is found by the shipped rules
    (elsewhere / "ok.yaml").write_text(VALID_MANIFEST)
    (elsewhere / "bad.yaml").write_text(VALID_MANIFEST.replace("kv_cache:\n", "kv_cach:\n"))
    ok = _run([kvlint, "check", "ok.yaml"], cwd=elsewhere, env=env)
    assert "All checks passed (1 document in 1 file)." in ok.stdout
    bad = _run([kvlint, "check", "--output-format", "json", "bad.yaml"], cwd=elsewhere, env=env, check=False)
    assert bad.returncode == 1
    diagnostics = json.loads(bad.stdout)["diagnostics"]
    assert ("KV102", "unknown-property") in {(d["code"], d["name"]) for d in diagnostics}
    schema = _run([kvlint, "schema"], cwd=elsewhere, env=env)
    assert json.loads(schema.stdout)["$id"].endswith("manifest.v1.json")
    rule = _run([kvlint, "rule", "KV102"], cwd=elsewhere, env=env)
    assert rule.stdout.startswith("# KV102 unknown-property")
    assert _run([python, "-m", "kvlint", "--version"], cwd=elsewhere, env=env).stdout.strip() == "kvlint, version " + _version()


def _version() -> str:
    from kvlint import __version__

    return __version__


def test_import_of_the_cli_is_light(tmp_path):
    result = _run([sys.executable, "-X", "importtime", "-c", "import kvlint.cli"], cwd=tmp_path)
    modules = _imported_modules(result.stderr)
    assert "kvlint.cli" in modules  # the parse is not vacuous
    heavy = sorted(m for m in modules if m.split(".")[0] in HEAVY)
    assert heavy == [], heavy


def test_check_subprocess_imports_neither_torch_nor_numpy(tmp_path):
    manifest = tmp_path / "m.yaml"
    manifest.write_text(VALID_MANIFEST)
    (tmp_path / "kvlint.toml").write_text("# defaults\n")
    result = _run([sys.executable, "-X", "importtime", "-m", "kvlint", "check", "m.yaml"], cwd=tmp_path, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    modules = _imported_modules(result.stderr)
    assert {"kvlint.pipeline.check", "kvlint.load", "yaml"} <= modules
    heavy = sorted(m for m in modules if m.split(".")[0] in HEAVY)
    assert heavy == [], heavy


# --- Every user command of the README's install and usage sections, on the installed wheel ----

README = REPO_ROOT / "README.md"
USER_SECTIONS = ("## Install", "## Using kvlint")  # "Set-up on a fresh machine" is the developers' (.ci/run)


def readme_user_commands() -> list:
    """(command, comment) for each line of a ```sh block, and each `$ ` line of a ```text block,
    in the README's install and usage sections (each up to the next `## ` heading)."""
    sections = {}  # level-2 heading -> its text; a `## ` line inside a fenced block is not a heading
    heading, fenced = None, False
    for line in README.read_text(encoding="utf-8").splitlines(keepends=True):
        if line.startswith("```"):
            fenced = not fenced
        elif line.startswith("## ") and not fenced:
            heading = line.rstrip("\n")
        sections[heading] = sections.get(heading, "") + line
    commands = []
    for heading in USER_SECTIONS:
        for language, body in re.findall(r"```(\w*)\n(.*?)```", sections[heading], flags=re.S):
            for line in body.splitlines():
                if language == "sh" and line.strip():
                    command, _, comment = line.partition("  #")
                    commands.append((command.strip(), comment.strip().lstrip("# ").strip()))
                elif language == "text" and line.startswith("$ "):
                    commands.append((line[2:].strip(), "output shown below it"))
    return commands


# How the test treats each command. A README change adds or drops a command, and the test fails
# until it is listed here: run (expected exit code) or not run here (why).
NOT_RUN = {
    "pipx install kvcache-lint":
        "pipx is not installed on the test machines (nor is uv, for the `uv tool install` alternative); "
        "the fixture does what pipx does, a fresh virtual environment and a pip install of kvcache-lint "
        "pinned to this version",
    "pip install 'kvcache-lint[smoke]'":
        "it installs torch (gigabytes, and a CUDA build unless pinned to the local CPU file); checked "
        "instead: the wheel declares the `smoke` extra with its torch requirement",
    "kvlint diff --base main":
        "needs a git repository whose pull request changes a manifest against `main`; tests/test_ci.py "
        "builds one and runs this command",
}
EXIT = {
    "kvlint --version": 0,
    "kvlint check examples/": 0,
    "kvlint check examples/broken/per-head-on-triton.yaml": 1,
    "kvlint capacity examples/llama70b-fp8-h100.yaml": 0,
    "kvlint check --output-format concise examples/broken/duplicate-key.yaml": 1,
    "kvlint check --output-format concise examples/broken/k8s-e5m2-on-flash-attn.yaml": 1,
    "kvlint check --strict --output-format concise examples/broken/k8s-gpu-not-stated.yaml": 1,
    "kvlint check --output-format github examples/broken/per-head-on-triton.yaml "
    "examples/broken/plan-overstates-capacity.yaml": 1,
    'eval "$(_KVLINT_COMPLETE=bash_source kvlint)"': 0,
    'eval "$(_KVLINT_COMPLETE=zsh_source kvlint)"': 0,
    "_KVLINT_COMPLETE=fish_source kvlint | source": 0,
    "kvlint schema --output kvlint-manifest.schema.json": 0,
}


def test_every_readme_user_command_is_listed():
    commands = {command for command, _ in readme_user_commands()}
    assert commands == set(NOT_RUN) | set(EXIT)
    for command, comment in readme_user_commands():  # the README's own "# exit N" notes agree
        stated = re.match(r"exit (\d)", comment)
        if stated:
            assert EXIT[command] == int(stated.group(1)), command


@pytest.mark.slow
def test_readme_user_commands_run_against_the_installed_wheel(installed, tmp_path):
    """Each command the README gives a user, run by a shell from a copy of the repository's
    examples (and the kvlint.toml that leaves the broken ones out of `kvlint check examples/`),
    with only the fresh environment's kvlint on PATH."""
    python, kvlint, _ = installed
    project = tmp_path / "project"
    shutil.copytree(REPO_ROOT / "examples", project / "examples")
    shutil.copy(REPO_ROOT / "kvlint.toml", project / "kvlint.toml")
    env = _clean_env()
    env["PATH"] = f"{kvlint.parent}{os.pathsep}/usr/bin{os.pathsep}/bin"
    shown = dict(re.findall(r"```text\n\$ ([^\n]*)\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S))
    ran = 0
    for command, _ in readme_user_commands():
        if command in NOT_RUN:
            continue
        shell_line = command
        if command.endswith("| source"):  # fish's: the script it sources must come out
            shell_line = command[: -len("| source")].strip()
        elif command.startswith('eval "$(_KVLINT_COMPLETE=zsh_source'):  # zsh may not be installed
            shell_line = command[len('eval "$('):-len(')"')]
        elif command.startswith("eval"):
            shell_line = command + " && complete -p kvlint"
        result = subprocess.run(["bash", "-c", shell_line], cwd=project, env=env, capture_output=True, text=True,
                                timeout=300)
        assert result.returncode == EXIT[command], (command, result.stdout, result.stderr)
        ran += 1
        if command in shown:
            assert result.stdout == shown[command], command
        elif command == "kvlint --version":
            assert result.stdout == f"kvlint, version {_version()}\n"
        elif "_KVLINT_COMPLETE" in command:
            assert ("complete" in result.stdout or "compdef" in result.stdout) and "kvlint" in result.stdout, command
        elif command.startswith("kvlint schema"):
            schema = json.loads((project / "kvlint-manifest.schema.json").read_text(encoding="utf-8"))
            assert schema["$id"].endswith("manifest.v1.json")
        elif command.startswith("kvlint capacity"):
            assert "KV" in result.stdout and "tokens" in result.stdout.lower(), result.stdout
        elif EXIT[command] == 1:
            assert "KV" in result.stdout, (command, result.stdout)
        else:  # clean: nothing at or above `error` (the examples may carry infos)
            assert re.search(r"^(All checks passed|Found 0 errors)", result.stdout, flags=re.M), (command, result.stdout)
    assert ran == len([c for c, _ in readme_user_commands() if c not in NOT_RUN])
    # What `pip install 'kvcache-lint[smoke]'` would add: the extra is declared with torch.
    metadata = _run([python, "-c", "from importlib.metadata import metadata; print(metadata('kvcache-lint'))"],
                    cwd=tmp_path, env=_clean_env()).stdout
    assert "Provides-Extra: smoke" in metadata
    assert re.search(r"Requires-Dist: torch>=[\d.]+; extra == .smoke.", metadata), metadata
