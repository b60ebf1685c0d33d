"""A finding that quotes a multi-kilobyte input value keeps its head and tail, says how much was
cut, and stays bounded in every output format (docs/security.md, "What kvlint echoes")."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import VALID_MANIFEST
from kvlint.findings import MAX_MESSAGE, MAX_WORD, Finding, bounded_message
from test_hostile_inputs import digest, kvlint


def test_a_short_message_is_unchanged():
    text = "model 'org/name' is not in the catalog; did you mean 'org/name-2'?"
    assert bounded_message(text) == text
    words = " ".join(["w" * MAX_WORD] * 5)  # long, but no word over the limit and under MAX_MESSAGE
    assert bounded_message(words) == words


def test_a_long_word_keeps_head_and_tail_and_says_how_much_was_cut():
    value = "org/" + "".join(f"{i:06d}" for i in range(10_000))  # 60,004 characters, all distinct
    message = bounded_message(f"model '{value}' is not in the catalog; give model.config")
    assert message.startswith("model 'org/000000000001")
    assert message.endswith("009998009999' is not in the catalog; give model.config")
    cut = int(re.search(r"\.\.\.\[([0-9,]+) characters cut\]\.\.\.", message).group(1).replace(",", ""))
    kept = re.search(r"'(.*)'", message).group(1).replace(f"...[{cut:,} characters cut]...", "")
    assert len(kept) + cut == len(value)  # what is kept plus what is said to be cut is the whole value
    assert value.startswith(kept[:100]) and value.endswith(kept[-50:])


def test_a_long_message_of_short_words_is_bounded_too():
    message = bounded_message("flag values: " + " ".join(f"v{i}" for i in range(20_000)))
    assert len(message) <= MAX_MESSAGE + 40 and "characters cut" in message
    assert message.startswith("flag values: v0 v1") and message.endswith("v19999")


def test_every_finding_is_bounded_where_it_is_made():
    finding = Finding(code="KV203", name="", severity="warning", message="x" * 1_000_000, file="f.yaml")
    assert len(finding.message) < MAX_WORD + 40


HUGE_NAME = "org/" + "m" * 12_000 + "-tail"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "kvlint.toml").write_text("# defaults\n", encoding="utf-8")
    (root / "deploy.yaml").write_text(
        VALID_MANIFEST.replace("name: meta-llama/Llama-3.1-8B-Instruct", f"name: {HUGE_NAME}"), encoding="utf-8")
    return root


@pytest.mark.parametrize("fmt", ["full", "concise", "github", "json", "sarif"])
def test_a_huge_model_name_is_cut_in_every_format(project: Path, fmt: str):
    (project / "short.yaml").write_text(
        VALID_MANIFEST.replace("name: meta-llama/Llama-3.1-8B-Instruct", "name: org/m-tail"), encoding="utf-8")
    before = digest(project)
    completed = kvlint(["check", "deploy.yaml", "--output-format", fmt], project)
    assert completed.returncode in (0, 1), completed.stderr
    out = completed.stdout
    short = kvlint(["check", "short.yaml", "--output-format", fmt], project).stdout
    assert len(out) < len(short) + 5_000, (len(out), len(short))  # the name alone is 12,009 characters
    assert "m" * 1000 not in out
    assert "characters cut" in out and "m-tail" in out  # the tail is kept, the cut is said
    if fmt in ("json", "sarif"):
        json.loads(out)
    assert digest(project) == before
