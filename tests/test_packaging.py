"""Packaging and import cost, through real subprocesses.

The wheel test builds kvlint, installs it into a fresh virtual environment outside the source
tree (no system site-packages), and runs it from an unrelated directory, so schemas/ and rules/
must resolve from site-packages. The import test checks the design rule that `kvlint check`
imports neither torch nor numpy, in the development environment where both may be installed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO_ROOT, VALID_MANIFEST

HEAVY = ("torch", "numpy")


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
    _run([sys.executable, "-m", "venv", venv], cwd=base)
    assert "include-system-site-packages = false" in (venv / "pyvenv.cfg").read_text()
    python = venv / "bin" / "python"
    _run([python, "-m", "pip", "install", "--quiet", wheel], cwd=base, env=_clean_env())
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
