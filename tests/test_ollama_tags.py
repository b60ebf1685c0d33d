"""Ollama library tags as model names (task E, item 7): `qwen2.5:7b` is the Hugging Face model the
tag pulls (rules/catalog/ggml/ollama.yaml `library`, cited to the Ollama library pages), so an
Ollama deployment that names it is sized; a tag kvlint cannot map stays KV203, and the message
says what to write instead."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import CliRunner

from kvlint.cli.app import main

ROOT = Path(__file__).resolve().parents[1]
OLLAMA = (ROOT / "examples" / "ollama-llama8b-q8_0.yaml").read_text()
assert "  name: meta-llama/Llama-3.1-8B-Instruct\n" in OLLAMA


def _manifest(tmp_path, model, engine="ollama"):
    text = OLLAMA.replace("  name: meta-llama/Llama-3.1-8B-Instruct\n", f"  name: {model}\n")
    if engine != "ollama":
        text = ("apiVersion: kvlint/v1\nkind: Deployment\nmetadata:\n  name: m\nengine:\n  name: vllm\n"
                f"  version: \"0.19.1\"\nhardware:\n  gpu: H100-SXM-80GB\nmodel:\n  name: {model}\n"
                "kv_cache:\n  dtype: auto\n")
    path = tmp_path / "m.yaml"
    path.write_text(text)
    return str(path)


def _diagnostics(path):
    return json.loads(CliRunner().invoke(main, ["check", "--output-format", "json", path]).stdout)["diagnostics"]


def _capacity(path):
    return json.loads(CliRunner().invoke(main, ["capacity", "--format", "json", path]).stdout)[0]


@pytest.mark.parametrize("tag", ["qwen2.5:7b", "qwen2.5:7b-instruct", "qwen2.5:7b-instruct-q8_0", "library/qwen2.5:7b"])
def test_library_tag_of_a_catalogued_model_is_sized(tmp_path, tag):
    """Qwen2.5-7B-Instruct's config.json: 28 layers, 4 KV heads, head_dim 128 (hidden 3584 / 28
    heads): 28 x 4 x 128 x 2 (K and V) x 2 B = 57,344 B per token at 16 bits."""
    path = _manifest(tmp_path, tag)
    assert "KV203" not in [d["code"] for d in _diagnostics(path)]
    capacity = _capacity(path)
    assert capacity["per_token"]["bf16_bytes"] == 28 * 4 * 128 * 2 * 2
    assert f"model {tag} read as Qwen/Qwen2.5-7B-Instruct, the model the Ollama library tag pulls" in capacity["assumptions"]


def test_gpt_oss_tag(tmp_path):
    path = _manifest(tmp_path, "gpt-oss:20b")
    assert "KV203" not in [d["code"] for d in _diagnostics(path)]


def test_tag_of_an_uncatalogued_model_names_it(tmp_path):
    [finding] = [d for d in _diagnostics(_manifest(tmp_path, "qwen2.5:14b")) if d["code"] == "KV203"]
    assert "the Ollama library tag pulls Qwen/Qwen2.5-14B-Instruct, which kvlint does not catalogue" in finding["message"]


@pytest.mark.parametrize("tag", ["qwen2.5:latest", "qwen2.5", "llama3.1:8b-text-q4_0", "mistral:7b",
                                 "qwen3:30b-a3b-instruct-2507-q4_K_M"])
def test_unmapped_tag_says_what_to_write(tmp_path, tag):
    [finding] = [d for d in _diagnostics(_manifest(tmp_path, tag)) if d["code"] == "KV203"]
    assert "write model.name as that model's Hugging Face id" in finding["message"]
    assert finding["pointer"] == "/model/name"


def test_other_engines_do_not_read_ollama_tags(tmp_path):
    [finding] = [d for d in _diagnostics(_manifest(tmp_path, "qwen2.5:7b", engine="vllm")) if d["code"] == "KV203"]
    assert "closest catalog ids" in finding["message"]


def test_a_vllm_check_does_not_load_the_ggml_catalog(tmp_path):
    path = _manifest(tmp_path, "qwen2.5:7b", engine="vllm")
    code = ("import sys\nfrom kvlint.cli import main\n"
            "try:\n    main(['check', sys.argv[1]])\nexcept SystemExit:\n    pass\n"
            "print('GGML', 'kvlint.catalog.ggml' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code, path], capture_output=True, text=True, cwd=str(ROOT))
    assert "KV203" in out.stdout and "GGML False" in out.stdout, out.stdout + out.stderr
