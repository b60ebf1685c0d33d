"""`kvlint smoke` through the real CLI on the bundled examples (CPU path; CI runs it with torch).

The bytes-per-block prediction printed by the smoke test must be the capacity stage's number for
the same manifest (`kvlint capacity --format json`), and the measured bytes on the allocated
tensors must equal it: the layout that is planned is the layout that is built.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import CliRunner

from kvlint.cli import main

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = ["llama70b-fp8-h100.yaml", "vllm-per-token-head-triton.yaml", "gpt-oss-20b-skip-sliding.yaml"]


@pytest.mark.parametrize("name", EXAMPLES)
def test_smoke_measures_what_capacity_predicts(name: str) -> None:
    pytest.importorskip("torch")
    path = str(REPO / "examples" / name)
    smoke = CliRunner().invoke(main, ["smoke", path, "--device", "cpu", "--format", "json", "--layers", "1"])
    assert smoke.exit_code == 0, smoke.output
    report = json.loads(smoke.stdout)
    assert report["summary"]["verdict"] == "passed"
    [deployment] = report["deployments"]
    capacity = json.loads(CliRunner().invoke(main, ["capacity", "--format", "json", path]).stdout)[0]
    for group in deployment["groups"]:
        measured = group["bytes_per_block"]
        assert measured["match"] is True and measured["measured"] == measured["predicted"]
        assert group["storage"]["held_dtype"] == group["storage"]["planned_dtype"]
    # Whole-block bytes for a single-group dense model equal the capacity engine's bytes per block.
    if len(deployment["groups"]) == 1:
        assert deployment["groups"][0]["bytes_per_block"]["measured"] == capacity["engine"]["bytes_per_block"]


def test_per_token_head_block_is_1056_kib_per_domain_md() -> None:
    """docs/capacity.md: Llama-3.1-8B geometry, FP8 per-token-head, 16-token block = 1,056 KiB."""
    pytest.importorskip("torch")
    path = str(REPO / "examples" / "vllm-per-token-head-triton.yaml")
    result = CliRunner().invoke(main, ["smoke", path, "--device", "cpu", "--format", "json", "--layers", "1"])
    group = json.loads(result.stdout)["deployments"][0]["groups"][0]
    assert group["bytes_per_block"]["block_size"] == 16
    assert group["bytes_per_block"]["measured"] == 1056 * 1024


def test_cuda_requested_without_a_gpu_is_not_run(monkeypatch) -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present")
    result = CliRunner().invoke(main, ["smoke", str(REPO / "examples" / EXAMPLES[0]), "--device", "cuda"])
    assert result.exit_code == 3
    assert "passed" not in result.output.lower()
