"""Fuzzing `kvlint check`: no input may crash it, exit 2, or print a traceback.

Inputs go through stdin (`-`), the same pipeline as files, so the loader, schema stage, semantic
stage, suppressions and the reporter all see them.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import VALID_MANIFEST, invoke

FUZZ = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

YAML_SNIPPETS = [
    ":", "- ", "[", "]", "{", "}", "&a ", "*a", "!!python/object:os.system ", "!tag ", "---\n", "...\n",
    "# kvlint: ignore[KV102]", "# kvlint: ignore[KV999] -- x", "# kvlint: ignore[]", "\t", "'", '"', "|\n",
    ">-\n", "? ", "<<: *a\n", "~", "null", "80G", "1e9", "-1", "0", "true", "\x00", "\ufeff", "\u2028", "%YAML 1.2\n",
]


def assert_clean_run(stdin: bytes) -> None:
    result = invoke(["check", "--output-format", "json", "-"], input=stdin)
    assert result.exit_code in (0, 1), f"exit {result.exit_code}: {result.output!r}"
    assert "Traceback" not in result.output
    report = json.loads(result.stdout)
    for diagnostic in report["diagnostics"]:
        assert diagnostic["line"] >= 1 and diagnostic["column"] >= 1
        assert diagnostic["severity"] in ("error", "warning", "info")
    if result.exit_code == 1:
        assert report["summary"]["errors"] >= 1


@pytest.fixture(autouse=True)
def _isolated(workspace):
    return workspace


@FUZZ
@given(st.text(max_size=400))
def test_random_text(text):
    assert_clean_run(text.encode("utf-8", "replace"))


@FUZZ
@given(st.binary(max_size=300))
def test_random_bytes(data):
    assert_clean_run(data)


@st.composite
def mutated_manifest(draw) -> str:
    lines = VALID_MANIFEST.splitlines(keepends=True)
    for _ in range(draw(st.integers(1, 4))):
        operation = draw(st.sampled_from(["insert", "delete", "duplicate", "replace", "splice", "indent"]))
        position = draw(st.integers(0, max(0, len(lines) - 1)))
        if operation == "insert":
            lines.insert(position, draw(st.sampled_from(YAML_SNIPPETS)) + draw(st.text(max_size=12)) + "\n")
        elif operation == "delete" and lines:
            del lines[position]
        elif operation == "duplicate" and lines:
            lines.insert(position, lines[position])
        elif operation == "replace" and lines:
            line = lines[position]
            cut = draw(st.integers(0, len(line)))
            lines[position] = line[:cut] + draw(st.sampled_from(YAML_SNIPPETS)) + line[cut:]
        elif operation == "splice" and lines:
            snippet = draw(st.sampled_from(YAML_SNIPPETS))
            lines[position] = lines[position].rstrip("\n") + "  " + snippet + "\n"
        elif operation == "indent" and lines:
            lines[position] = " " * draw(st.integers(1, 5)) + lines[position]
    return "".join(lines)


@FUZZ
@given(mutated_manifest())
def test_mutated_manifest(text):
    assert_clean_run(text.encode("utf-8"))


_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=12,
)


@st.composite
def manifest_with_random_values(draw) -> str:
    data = {
        "apiVersion": "kvlint/v1",
        "kind": draw(st.sampled_from(["Deployment", "Ablation", "Other"])),
        "metadata": {"name": "fuzz"},
        "engine": {"name": draw(st.sampled_from(["vllm", "sglang", "tensorrt-llm", "x"])), "version": "0.19.1"},
        "hardware": {"gpu": "H100-SXM-80GB"},
        "model": {"name": "meta-llama/Llama-3.1-8B-Instruct"},
        "kv_cache": {"dtype": "auto"},
    }
    section = draw(st.sampled_from(sorted(data) + ["memory", "serving", "targets", "parallelism"]))
    key = draw(st.sampled_from(["dtype", "name", "version", "gpu", "count", "memory", "tensor", "scales",
                                "skip_layers", "block_size", "geometry", "max_model_len", "kv_cache_memory",
                                "min_concurrency", "attention_backend", "env", "config", "weights"]))
    value = draw(_VALUES)
    if isinstance(data.get(section), dict):
        data[section][key] = value
    else:
        data[section] = {key: value} if draw(st.booleans()) else value
    return json.dumps(data, allow_nan=True)


@FUZZ
@given(manifest_with_random_values())
def test_structurally_valid_yaml_with_random_values(text):
    assert_clean_run(text.encode("utf-8"))
