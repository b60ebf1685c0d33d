"""Hostile input, round two (issue 24), the policy of docs/security.md: a fact the user stated
explicitly that cannot be read fails the gate (KV211, an error); a fact kvlint looked for on its
own does not. A broken model file next to a catalogued model is reported, never silently
replaced by the catalog.

A model file that is a FIFO, and the Hugging Face cache found through the environment, are run in
a subprocess (test_hostile_round2.kvlint, with its timeout); the other cases only check what the
command reports and run it in this process (test_hostile_round2.kvlint_here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from test_hostile_round2 import (  # noqa: F401 - project is a fixture
    _manifest_with, diagnostics, digest, kvlint, kvlint_here, posix_only, project)

BROKEN = {
    "missing": None,
    "bad-json": b'{"num_hidden_layers": ',
    "no-geometry": b'{"model_type": "llama"}',
    "truncated-gguf": b"GGUF\x03\x00\x00\x00garbage",
}


def _plant(project: Path, kind: str, name: str) -> None:
    content = BROKEN[kind]
    if content is not None:
        (project / name).write_bytes(content)


@pytest.mark.parametrize("kind", sorted(BROKEN))
def test_unreadable_model_config_of_a_catalogued_model_is_an_error(project: Path, kind: str):
    name = "model.gguf" if kind.endswith("gguf") else "config.json"
    _plant(project, kind, name)
    (project / "deploy.yaml").write_text(_manifest_with(config=name), encoding="utf-8")
    before = digest(project)
    completed = kvlint_here(["check", "deploy.yaml", "--output-format", "json"], project)
    assert completed.returncode == 1, completed.stdout
    found = [d for d in diagnostics(completed) if d["code"] == "KV211"]
    assert len(found) == 1 and found[0]["severity"] == "error", diagnostics(completed)
    assert found[0]["message"].startswith(f"cannot use model.config {name}: ")
    assert "the catalog's geometry for meta-llama/Llama-3.1-8B-Instruct instead" in found[0]["message"]
    assert (found[0]["line"], found[0]["column"]) == (12, 11)
    capacity = kvlint_here(["capacity", "deploy.yaml"], project)
    assert capacity.returncode == 1
    assert "KV211 cannot use model.config" in capacity.stderr
    assert capacity.stdout.startswith("deploy.yaml: llama8b-bf16-h100")  # the figures still come out
    assert digest(project) == before


def test_unreadable_model_config_of_an_unknown_model_is_an_error(project: Path):
    _plant(project, "bad-json", "config.json")
    (project / "deploy.yaml").write_text(
        _manifest_with(config="config.json").replace("meta-llama/Llama-3.1-8B-Instruct", "acme/unknown-7b"),
        encoding="utf-8")
    completed = kvlint_here(["check", "deploy.yaml", "--output-format", "json"], project)
    assert completed.returncode == 1
    by_code = {d["code"]: d for d in diagnostics(completed)}
    assert by_code["KV211"]["severity"] == "error"
    assert by_code["KV203"]["severity"] == "warning"
    assert "catalog" not in by_code["KV211"]["message"]


@pytest.mark.parametrize("script", [
    "llama-server -m Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf --alias meta-llama/Llama-3.1-8B-Instruct -c 4096\n",
    "llama-server -hf bartowski/Meta-Llama-3.1-8B-Instruct-GGUF:Q4_K_M -m Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf -c 4096\n",
])
def test_broken_gguf_named_by_dash_m_is_an_error(project: Path, script: str):
    _plant(project, "truncated-gguf", "Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf")
    (project / "run.sh").write_text("#!/bin/sh\n" + script, encoding="utf-8")
    completed = kvlint_here(["check", "run.sh", "--output-format", "json"], project)
    assert completed.returncode == 1
    found = [d for d in diagnostics(completed) if d["code"] == "KV211"]
    assert len(found) == 1 and found[0]["severity"] == "error"
    assert "not a readable GGUF file" in found[0]["message"]
    assert kvlint_here(["capacity", "run.sh"], project).returncode == 1


@posix_only
def test_model_config_that_is_a_fifo_is_an_error_without_blocking(project: Path):
    import os

    os.mkfifo(project / "config.json")
    (project / "deploy.yaml").write_text(_manifest_with(config="config.json"), encoding="utf-8")
    completed = kvlint(["check", "deploy.yaml", "--output-format", "json"], project)
    assert completed.returncode == 1
    assert "KV211" in [d["code"] for d in diagnostics(completed)]


def test_a_looked_for_fact_does_not_fail(project: Path, tmp_path: Path):
    """A config.json kvlint looks for on its own in the Hugging Face cache and cannot use: no
    KV211 (it is not the user's statement); the model is unknown (KV203, a warning)."""
    snapshot = tmp_path / "hf" / "hub" / "models--acme--unknown-7b" / "snapshots" / "abc"
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_bytes(BROKEN["bad-json"])
    (tmp_path / "hf" / "hub" / "models--acme--unknown-7b" / "refs").mkdir()
    (tmp_path / "hf" / "hub" / "models--acme--unknown-7b" / "refs" / "main").write_text("abc")
    (project / "deploy.yaml").write_text(
        _manifest_with().replace("meta-llama/Llama-3.1-8B-Instruct", "acme/unknown-7b"), encoding="utf-8")
    completed = kvlint(["check", "deploy.yaml", "--output-format", "json"], project,
                       env={"HF_HUB_CACHE": str(tmp_path / "hf" / "hub")})
    assert completed.returncode == 0, completed.stdout
    assert [d["code"] for d in diagnostics(completed)] == ["KV203"]
