"""Hostile input, end to end through the console (docs/security.md).

Every case runs the real command in a subprocess with a timeout, and checks: it finishes within
seconds, prints no traceback, exits with the documented code, its JSON parses, and every input
is byte-for-byte unchanged. Risky files (FIFOs, devices, huge files, unreadable paths) are made
at run time in a temporary directory.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Sequence

import pytest

from conftest import REPO_ROOT, VALID_MANIFEST

TIMEOUT_S = 20  # a run that blocks on a FIFO would hit this; a normal one takes about a second
ROOT_USER = hasattr(os, "geteuid") and os.geteuid() == 0
posix_only = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs and permissions are POSIX")


def kvlint(args: Sequence[str], cwd: Path, env: Dict[str, str] = None) -> subprocess.CompletedProcess:
    environment = dict(os.environ)
    environment.pop("GITHUB_STEP_SUMMARY", None)
    environment.pop("GITHUB_ACTIONS", None)
    environment["PYTHONPATH"] = str(REPO_ROOT)
    environment.update(env or {})
    completed = subprocess.run(
        [sys.executable, "-m", "kvlint", *args], cwd=cwd, env=environment, capture_output=True,
        text=True, timeout=TIMEOUT_S, stdin=subprocess.DEVNULL,
    )
    assert "Traceback" not in completed.stderr + completed.stdout, completed.stderr
    return completed


def digest(root: Path) -> Dict[str, str]:
    """sha256 of every regular file under root (what must stay byte-for-byte unchanged)."""
    out = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink():
            out[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "kvlint.toml").write_text("# defaults\n", encoding="utf-8")
    (root / "deploy.yaml").write_text(VALID_MANIFEST, encoding="utf-8")
    return root


def diagnostics(completed: subprocess.CompletedProcess) -> List[dict]:
    return json.loads(completed.stdout)["diagnostics"]


# --- 1. never write onto an input ------------------------------------------------------------


@pytest.mark.parametrize("option", ["-o", "--sarif-file"])
def test_check_refuses_to_write_onto_a_manifest_it_reads(project: Path, option: str):
    before = digest(project)
    completed = kvlint(["check", "deploy.yaml", option, "deploy.yaml"], project)
    assert completed.returncode == 2
    assert completed.stderr.count("\n") == 1 and "never writes onto its input" in completed.stderr
    assert digest(project) == before


@posix_only
def test_check_refuses_hard_links_and_symlinks_to_inputs(project: Path):
    os.link(project / "deploy.yaml", project / "hard.json")
    os.symlink(project / "deploy.yaml", project / "soft.json")
    before = digest(project)
    for target in ("hard.json", "soft.json"):
        completed = kvlint(["check", "deploy.yaml", "-o", target], project)
        assert completed.returncode == 2, completed.stderr
        assert "is a file this run reads" in completed.stderr
    # the configuration is an input too
    completed = kvlint(["check", "deploy.yaml", "-o", "kvlint.toml"], project)
    assert completed.returncode == 2 and "kvlint.toml" in completed.stderr
    assert digest(project) == before
    assert os.path.islink(project / "soft.json")


def test_facts_and_convert_refuse_their_input(project: Path):
    before = digest(project)
    assert kvlint(["facts", "deploy.yaml", "-o", "deploy.yaml"], project).returncode == 2
    (project / "serve.sh").write_text(
        "#!/bin/sh\n# kvlint: gpu=H100-SXM-80GB engine-version=0.19.1\n"
        "vllm serve meta-llama/Llama-3.1-8B-Instruct --kv-cache-dtype fp8\n", encoding="utf-8")
    before = digest(project)
    assert kvlint(["convert", "serve.sh", "-o", "serve.sh"], project).returncode == 2
    assert digest(project) == before


@posix_only
def test_ablate_refuses_a_hard_link_to_its_deployment(project: Path):
    os.link(project / "deploy.yaml", project / "ablation.yaml")
    before = digest(project)
    completed = kvlint(["ablate", "deploy.yaml", "--out", "ablation.yaml", "--force"], project)
    assert completed.returncode == 2 and "never writes onto its input" in completed.stderr
    assert digest(project) == before


def test_output_is_written_atomically_and_keeps_an_existing_mode(project: Path):
    report = project / "report.json"
    report.write_text("old", encoding="utf-8")
    os.chmod(report, 0o640)
    completed = kvlint(["check", "deploy.yaml", "--output-format", "json", "-o", "report.json"], project)
    assert completed.returncode == 0, completed.stderr
    json.loads(report.read_text(encoding="utf-8"))
    assert (report.stat().st_mode & 0o777) == 0o640
    assert not [p for p in project.iterdir() if p.name.endswith(".tmp")]  # no temporary left behind


def test_a_failed_write_is_one_line_and_exit_2(project: Path):
    completed = kvlint(["check", "deploy.yaml", "-o", "missing-dir/report.txt"], project)
    assert completed.returncode == 2 and completed.stderr.startswith("kvlint: error: cannot write")


# --- 2. bounded reads ------------------------------------------------------------------------


@posix_only
def test_a_fifo_named_on_the_command_line_is_a_finding_not_a_hang(project: Path):
    os.mkfifo(project / "pipe.yaml")
    completed = kvlint(["check", "pipe.yaml", "deploy.yaml", "--output-format", "json"], project)
    assert completed.returncode == 1
    found = diagnostics(completed)
    assert [(d["code"], d["file"]) for d in found] == [("KV006", "pipe.yaml")]
    assert "a FIFO" in found[0]["message"]


@posix_only
def test_a_walk_reports_fifos_dangling_links_and_unreadable_paths_and_goes_on(project: Path):
    os.mkfifo(project / "pipe.yaml")
    os.symlink(project / "gone.yaml", project / "dangling.yaml")
    secret = project / "secret"
    secret.mkdir()
    (secret / "inner.yaml").write_text(VALID_MANIFEST, encoding="utf-8")
    locked = project / "locked.yaml"
    locked.write_text(VALID_MANIFEST, encoding="utf-8")
    os.chmod(secret, 0)
    os.chmod(locked, 0)
    try:
        completed = kvlint(["check", ".", "--output-format", "json"], project)
    finally:
        os.chmod(secret, 0o755)
        os.chmod(locked, 0o644)
    assert completed.returncode == 1, completed.stderr
    found = {d["file"]: d for d in diagnostics(completed)}
    assert found["pipe.yaml"]["code"] == "KV006"
    assert found["dangling.yaml"]["code"] == "KV006" and "dangling symbolic link" in found["dangling.yaml"]["message"]
    if not ROOT_USER:  # root reads through permissions
        assert found["secret"]["code"] == "KV006" and "Permission denied" in found["secret"]["message"]
        assert found["locked.yaml"]["code"] == "KV006" and "Permission denied" in found["locked.yaml"]["message"]
    assert "deploy.yaml" not in found  # the readable manifest was still checked, and is clean
    assert json.loads(completed.stdout)["summary"]["files"] >= 3


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_a_device_as_manifest_config_or_ablation_base_is_refused(project: Path):
    completed = kvlint(["check", "/dev/zero", "--output-format", "json"], project)
    assert completed.returncode == 1 and diagnostics(completed)[0]["code"] == "KV006"
    completed = kvlint(["check", "deploy.yaml", "--config", "/dev/zero"], project)
    assert completed.returncode == 2 and "a character device" in completed.stderr
    assert completed.stderr.count("\n") == 1
    (project / "ablation.yaml").write_text(
        "apiVersion: kvlint/v1\nkind: Ablation\nmetadata: {name: a}\nbase: /dev/zero\n"
        "variants:\n  - name: bf16\n    overrides: {}\n", encoding="utf-8")
    completed = kvlint(["check", "ablation.yaml", "--output-format", "json"], project)
    assert completed.returncode == 1
    assert any("a character device" in d["message"] for d in diagnostics(completed))


def test_a_huge_file_is_kv004_without_reading_it_all(project: Path):
    huge = project / "huge.yaml"
    with open(huge, "wb") as handle:  # sparse: 2 GiB that cost nothing on disk
        handle.write(b"apiVersion: kvlint/v1\n")
        handle.truncate(2 * 1024 ** 3)
    completed = kvlint(["check", "huge.yaml", "--output-format", "json"], project)
    assert completed.returncode == 1
    (finding,) = diagnostics(completed)
    assert finding["code"] == "KV004" and "byte limit" in finding["message"]


def test_capacity_and_facts_report_an_unreadable_file_as_a_problem(project: Path):
    if not hasattr(os, "mkfifo"):
        pytest.skip("POSIX")
    os.mkfifo(project / "pipe.yaml")
    completed = kvlint(["facts", "pipe.yaml", "deploy.yaml"], project)
    assert completed.returncode == 1 and "KV006" in completed.stderr
    assert len(json.loads(completed.stdout)) == 1
