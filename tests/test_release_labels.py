"""Which release a capacity figure was computed with, said honestly (task E, items 3 and 4).

A deployment whose vLLM release the catalog does not model (0.9.2 predates it; a native file
without a version; a release newer than the newest catalogued) is sized with a catalogued
release's defaults and accounting. `kvlint capacity` lists that among its assumptions; the
gpu_memory_utilization note must name the release whose fact it used, and `kvlint check` must
say (KV210, info) that its KV60x gate ran on the stand-in."""

from __future__ import annotations

import json

import pytest
from conftest import CliRunner

from kvlint.catalog import load_catalogs
from kvlint.cli.app import main

KNOWN = load_catalogs(()).engines.known_versions("vllm")
NEWEST, OLDEST = KNOWN[-1], KNOWN[0]

MANIFEST = """apiVersion: kvlint/v1
kind: Deployment
metadata:
  name: m
engine:
  name: vllm
  version: "{version}"
hardware:
  gpu: H100-SXM-80GB
model:
  name: meta-llama/Llama-3.1-8B-Instruct
kv_cache:
  dtype: fp8
"""

# docker compose, engine release not stated (":latest"), GPU given by a kvlint comment
COMPOSE = """services:
  vllm:
    # kvlint: gpu=H100-SXM-80GB
    image: vllm/vllm-openai:latest
    command: ["--model", "meta-llama/Llama-3.1-8B-Instruct", "--kv-cache-dtype", "fp8", "--max-model-len", "131072"]
"""


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def _assumptions(path):
    result = CliRunner().invoke(main, ["capacity", "--format", "json", path])
    return json.loads(result.stdout)[0]["assumptions"]


def _kv210(path):
    result = CliRunner().invoke(main, ["check", "--output-format", "json", path])
    return [d for d in json.loads(result.stdout)["diagnostics"] if d["code"] == "KV210"]


def test_gpu_memory_utilization_label_names_the_stand_in(tmp_path):
    """vLLM 0.9.2's own default is 0.9 too (vllm/config.py v0.9.2 L1494 CacheConfig
    gpu_memory_utilization = 0.9), but kvlint took it from the oldest catalogued release: the note
    says whose fact it is and for which release, not "vLLM 0.11's 0.9"."""
    notes = _assumptions(_write(tmp_path, "m.yaml", MANIFEST.format(version="0.9.2")))
    [note] = [n for n in notes if n.startswith("gpu_memory_utilization defaulted")]
    assert note == f"gpu_memory_utilization defaulted to 0.9, the default of vLLM {OLDEST}, which stands in for 0.9.2"


def test_gpu_memory_utilization_label_of_a_catalogued_release_is_unchanged(tmp_path):
    notes = _assumptions(_write(tmp_path, "m.yaml", MANIFEST.format(version="0.19.1")))
    assert "gpu_memory_utilization defaulted to vLLM 0.19's 0.9" in notes


def test_check_says_the_capacity_gate_ran_on_a_stand_in_for_a_missing_release(tmp_path):
    path = _write(tmp_path, "compose.yaml", COMPOSE)
    [finding] = _kv210(path)
    assert finding["severity"] == "info"
    assert f"vLLM {NEWEST}'s defaults" in finding["message"]
    assert "release is not stated" in finding["message"]
    assert finding["line"] == 4  # the image, where the version would be


@pytest.mark.parametrize("version, stand_in", [("0.9.2", OLDEST), ("0.10.1", OLDEST)])
def test_check_says_the_capacity_gate_ran_on_a_stand_in_for_an_uncatalogued_release(tmp_path, version, stand_in):
    [finding] = _kv210(_write(tmp_path, "m.yaml", MANIFEST.format(version=version)))
    assert finding["message"].startswith(f"the capacity figures (KV60x) use vLLM {stand_in}'s")
    assert (finding["line"], finding["column"]) == (7, 12)


def test_no_stand_in_no_kv210(tmp_path):
    assert _kv210(_write(tmp_path, "m.yaml", MANIFEST.format(version="0.19.1"))) == []


def test_a_build_gets_one_kv210_not_two(tmp_path):
    """engine.stand_in already says it (the release checks and capacity both use 0.16.0)."""
    [finding] = _kv210(_write(tmp_path, "m.yaml", MANIFEST.format(version="0.16.0rc2.dev367+g98b0205c3")))
    assert "is checked as 0.16.0" in finding["message"]
