"""Hostile input, round two (issue 24), injection: text from the input never reaches a terminal or
a CI log raw, and `kvlint convert` writes YAML that re-reads as exactly the data kvlint read.

Every text a deployment file controls (a cache dtype, a model or workload name, an environment
variable's name and value, a file name) is fed with a GitHub workflow command (`::error::`,
`::add-mask::`), a terminal escape (ESC `[31m`) and line breaks, through each input kind (kvlint/v1
manifest, compose, shell script, Dockerfile), and every output that prints it (`capacity` text
and JSON, `convert`, `check` full, concise, github, json) is checked line by line.

What is checked is the text kvlint writes, so the command runs in this process
(test_hostile_round2.kvlint_here): its stdout and stderr are read as the bytes written, where a
subprocess read as text would have turned a raw carriage return into a line break unseen.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import List

import pytest
import yaml

from conftest import VALID_MANIFEST
from test_hostile_round2 import digest, kvlint_here, posix_only

EVIL = "::error::pwned\x1b[31m\n::add-mask::x\r\n::warning::y\x07\x9b2J\x7f"

# kvlint's own annotations in the github format: a level, properties without `:` (escaped as
# %3A), then `::` and the message
OWN_ANNOTATION = re.compile(r"::(error|warning|notice) [^:\r\n]*::[^\r\n]*")
RAW_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _dq(text: str) -> str:
    """A YAML double-quoted scalar (JSON's string syntax is one)."""
    return json.dumps(text)


def _inputs() -> dict:
    manifest = VALID_MANIFEST.replace("dtype: auto", f"dtype: {_dq(EVIL)}").replace(
        "name: llama8b-bf16-h100", f"name: {_dq('m' + EVIL)}")
    compose = f"""\
services:
  vllm:
    image: vllm/vllm-openai:v0.19.1
    command: ["--model", {_dq("meta-llama/" + EVIL)}, "--kv-cache-dtype", {_dq("fp8" + EVIL)}]
    environment:
      {_dq("VLLM_A" + EVIL)}: {_dq("v" + EVIL)}
      "VLLM_B: 1\\nextra": "x"
      "VLLM_C #not a comment": "1 # nor this"
"""
    script = ("#!/bin/sh\n"
              "vllm serve meta-llama/Llama-3.1-8B-Instruct --kv-cache-dtype 'fp8\x1b[31m\n::error::sh' "
              "--tensor-parallel-size 1\n")
    dockerfile = ("FROM vllm/vllm-openai:v0.19.1\n"
                  'CMD ["--model", "meta-llama/Llama-3.1-8B-Instruct", "--kv-cache-dtype", '
                  '"::add-mask::d\x1b[31m\\n::error::df"]\n')
    return {"deploy.yaml": manifest, "compose.yaml": compose, "serve.sh": script, "Dockerfile": dockerfile}


def assert_safe(text: str, github: bool = False) -> None:
    """No raw control character but line breaks and tabs, and no line that starts a workflow
    command except (in the github format) kvlint's own annotations."""
    assert "\r" not in text
    assert not RAW_CONTROL.search(text), repr(RAW_CONTROL.search(text).group())
    for line in text.split("\n"):
        if line.lstrip().startswith("::"):
            assert github and OWN_ANNOTATION.fullmatch(line), line


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "kvlint.toml").write_text("# defaults\n", encoding="utf-8")
    for name, text in _inputs().items():
        (root / name).write_bytes(text.encode("utf-8"))
    return root


@pytest.mark.parametrize("name", sorted(_inputs()))
@pytest.mark.parametrize("fmt", ["text", "json"])
def test_capacity_escapes_every_text_from_the_input(hostile: Path, name: str, fmt: str):
    completed = kvlint_here(["capacity", name, "--output-format", fmt], hostile)
    assert completed.returncode in (0, 1), completed.stderr
    assert_safe(completed.stdout)
    assert_safe(completed.stderr)
    if fmt == "json":  # exact: JSON escapes what it must, and the value comes back whole
        documents = json.loads(completed.stdout)
        assert documents and all(("\x1b[31m" in d["kv_dtype"]) for d in documents)
    else:
        assert "\\x1b[31m" in completed.stdout


def test_capacity_text_keeps_each_value_on_its_line(hostile: Path):
    completed = kvlint_here(["capacity", "deploy.yaml"], hostile)
    head = completed.stdout.splitlines()[0]
    assert head.startswith("deploy.yaml: m::error::pwned\\x1b[31m\\n::add-mask::x\\r\\n::warning::y\\x07\\x9b2J\\x7f  (vllm 0.19.1, ")
    assert "kv_cache.dtype ::error::pwned\\x1b[31m\\n::add-mask::x" in head


@pytest.mark.parametrize("name", sorted(_inputs()))
@pytest.mark.parametrize("fmt", ["full", "concise", "github", "json"])
def test_check_formats_escape_every_text_from_the_input(hostile: Path, name: str, fmt: str):
    completed = kvlint_here(["check", name, "--output-format", fmt], hostile)
    assert completed.returncode in (0, 1), completed.stderr
    assert_safe(completed.stdout, github=fmt == "github")
    assert_safe(completed.stderr)
    if fmt == "json":
        json.loads(completed.stdout)


def _read_documents(project: Path, name: str, monkeypatch) -> List[dict]:
    """The manifests kvlint itself reads from a native file (what `convert` must print)."""
    from kvlint.config import load_config
    from kvlint.load import read_input
    from kvlint.pipeline.native import load_source

    monkeypatch.chdir(project)
    config = load_config(str(project / "kvlint.toml"))
    display, raw = read_input(name)
    return [document.data for document in load_source(raw, display, name, config).documents]


@pytest.mark.parametrize("name", ["compose.yaml", "serve.sh", "Dockerfile"])
def test_convert_output_rereads_as_exactly_the_data_read(hostile: Path, name: str, monkeypatch):
    before = digest(hostile)
    completed = kvlint_here(["convert", name], hostile)
    assert completed.returncode in (0, 1), completed.stderr
    assert_safe(completed.stdout)
    assert_safe(completed.stderr)
    expected = _read_documents(hostile, name, monkeypatch)
    assert expected
    assert list(yaml.safe_load_all(completed.stdout)) == expected
    # every line is a comment, a key, a list item or `---`: the input added no line of its own
    for line in completed.stdout.splitlines():
        assert re.match(r'( *(#|- |-$|[A-Za-z_][\w.-]*:|"[^"\n]*":)|---$)', line), line
    assert digest(hostile) == before


def test_convert_writes_hostile_environment_names_as_quoted_keys(hostile: Path):
    completed = kvlint_here(["convert", "compose.yaml"], hostile)
    env = yaml.safe_load(completed.stdout)["engine"]["env"]
    assert env == {"VLLM_A" + EVIL: "v" + EVIL, "VLLM_B: 1\nextra": "x", "VLLM_C #not a comment": "1 # nor this"}
    assert '    "VLLM_B: 1\\nextra": "x"  # ' in completed.stdout


@posix_only
def test_file_names_with_newlines_are_escaped(hostile: Path):
    evil = hostile / "evil"
    evil.mkdir()
    name = "a\n::error::file\x1b[31m.yaml"
    (evil / name).write_text(VALID_MANIFEST.replace("llama8b-bf16-h100", "ok"), encoding="utf-8")
    (evil / "c\n::error::c.yaml").write_text(_inputs()["compose.yaml"], encoding="utf-8")
    capacity = kvlint_here(["capacity", "evil"], hostile)
    assert capacity.returncode in (0, 1), capacity.stderr
    assert_safe(capacity.stdout)
    assert_safe(capacity.stderr)
    assert "a\\n::error::file\\x1b[31m.yaml: ok  (vllm" in capacity.stdout
    for fmt in ("full", "concise", "github"):
        check = kvlint_here(["check", "evil", "--output-format", fmt], hostile)
        assert_safe(check.stdout, github=fmt == "github")
        assert_safe(check.stderr)
    convert = kvlint_here(["convert", "evil/c\n::error::c.yaml"], hostile)
    assert convert.returncode in (0, 1), convert.stderr
    assert_safe(convert.stdout)
    assert convert.stdout.startswith("# Read by kvlint from evil/c\\n::error::c.yaml (compose).\n")


def test_error_lines_escape_the_input(hostile: Path):
    completed = kvlint_here(["convert", "deploy.yaml"], hostile)  # already a manifest: a usage error
    assert completed.returncode == 2
    assert_safe(completed.stderr)
    missing = kvlint_here(["check", "no\x1b[31m\n::error::such.yaml"], hostile)
    assert missing.returncode == 2
    assert_safe(missing.stderr)


def test_escaping_helpers():
    from kvlint.text import printable, printable_block

    assert printable("a\x1b[31m\n::error::x") == "a\\x1b[31m\\n::error::x"
    assert printable_block("ok\n::error::x\n  ::warning::y\na\tb\x1b\x9b") == (
        "ok\n\\x3a:error::x\n  \\x3a:warning::y\na\tb\\x1b\\x9b")
