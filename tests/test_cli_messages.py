"""Small CLI behaviours a user relies on: nothing passes silently."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import CliRunner

from kvlint.cli import main

REPO = Path(__file__).resolve().parent.parent


def test_directory_without_manifests_warns(tmp_path) -> None:
    (tmp_path / "ci.yaml").write_text("jobs: {}\n")
    result = CliRunner().invoke(main, ["check", str(tmp_path)])
    assert result.exit_code == 0
    assert "no manifests found" in result.stderr
    assert "apiVersion: kvlint/v1" in result.stderr


def test_directory_with_manifests_does_not_warn() -> None:
    result = CliRunner().invoke(main, ["check", str(REPO / "examples" / "llama70b-fp8-h100.yaml")])
    assert result.exit_code == 0
    assert "no manifests found" not in result.stderr


def test_capacity_exits_1_for_a_manifest_check_rejects_but_still_prints_figures() -> None:
    path = str(REPO / "examples" / "broken" / "unknown-property.yaml")
    result = CliRunner().invoke(main, ["capacity", "--format", "json", path])
    assert result.exit_code == 1
    assert "KV102" in result.stderr and "gpu_memory_utilization" in result.stderr
    assert json.loads(result.stdout)[0]["engine"]["num_blocks"] > 0
