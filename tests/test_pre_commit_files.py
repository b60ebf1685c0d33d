"""The pre-commit hooks start when a commit touches any file kind kvlint reads (task E, item 5).

The hooks used `types_or: [yaml, json, shell, dockerfile]`; pre-commit's file typing (identify)
gives a systemd unit (`vllm.service`) or an Ollama `Modelfile` no such type, so a commit that
changed only one of them skipped kvlint although kvlint reads both. The filter now is a `files`
pattern. Checked two ways: against kvlint's own file-name predicates, and through the real
pre-commit client, with a local `language: system` hook that carries the shipped hooks' filter
keys (no environment to install, so it runs offline)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from kvlint.load import text_native_format
from kvlint.pipeline.discovery import MANIFEST_SUFFIXES

REPO_ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
HOOKS = yaml.safe_load((REPO_ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
FILTER_KEYS = ("files", "exclude", "types", "types_or", "exclude_types")

READ_BY_KVLINT = [
    "deploy/vllm.yaml", "deploy/vllm.yml", "model/config.json", "run.sh", "serve.bash",
    "Dockerfile", "Dockerfile.vllm", "images/Containerfile", "vllm.dockerfile",
    "etc/systemd/system/vllm.service", "etc/systemd/system/vllm.service.d/override.conf",
    "Modelfile", "ollama/Modelfile.q8", "llama3.modelfile", "llama3.Modelfile",
]
NOT_READ = ["README.md", "notes.txt", "logo.png", "src/app.py", "Makefile"]


def kvlint_reads(name: str) -> bool:
    base = name.rsplit("/", 1)[-1]
    return base.endswith(MANIFEST_SUFFIXES) or text_native_format(base) is not None


def test_the_names_cover_what_kvlint_reads():
    assert all(kvlint_reads(n) for n in READ_BY_KVLINT)
    assert not any(kvlint_reads(n) for n in NOT_READ)


@pytest.mark.parametrize("hook", HOOKS, ids=lambda h: h["id"])
def test_files_pattern_matches_every_name_kvlint_reads(hook):
    assert "types_or" not in hook and "types" not in hook  # identify cannot type a unit or a Modelfile
    pattern = re.compile(hook["files"])
    assert [n for n in READ_BY_KVLINT if not pattern.search(n)] == []
    assert [n for n in NOT_READ if pattern.search(n)] == []


def _git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@e"}
    return subprocess.run(["git", *args], cwd=str(cwd), env=env, capture_output=True, text=True, check=True).stdout


def _pre_commit_run(repo: Path, home: Path) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "PRE_COMMIT"))}
    env["PRE_COMMIT_HOME"] = str(home)
    result = subprocess.run([str(BIN / "pre-commit"), "run"], cwd=str(repo), env=env,
                            capture_output=True, text=True, timeout=300)
    return result.stdout + result.stderr


@pytest.mark.slow
@pytest.mark.skipif(not (BIN / "pre-commit").exists(), reason="pre-commit is a test dependency")
@pytest.mark.parametrize("changed, runs", [
    ("deploy/vllm.service", True),
    ("Modelfile", True),
    ("ollama/llama3.modelfile", True),
    ("deploy/vllm.yaml", True),
    ("notes.txt", False),
])
def test_real_pre_commit_starts_the_hooks_for_a_changed_file(tmp_path, changed, runs):
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    hooks = [{"id": h["id"], "name": h["name"], "entry": "true", "language": "system",
              "pass_filenames": False, **{k: h[k] for k in FILTER_KEYS if k in h}} for h in HOOKS]
    (repo / ".pre-commit-config.yaml").write_text(
        yaml.safe_dump({"repos": [{"repo": "local", "hooks": hooks}]}, sort_keys=False), encoding="utf-8")
    _git(repo, "add", ".pre-commit-config.yaml")
    _git(repo, "commit", "-q", "--no-verify", "-m", "config")
    path = repo / changed
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("[Service]\nExecStart=/usr/bin/vllm serve m --kv-cache-dtype fp8\n", encoding="utf-8")
    _git(repo, "add", changed)
    out = _pre_commit_run(repo, tmp_path / "home")
    for hook in HOOKS:
        line = next(x for x in out.splitlines() if x.startswith(hook["name"] + "."))
        assert line.endswith("Passed" if runs else "Skipped"), out
