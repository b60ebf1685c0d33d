"""Editor support (docs/editors.md): the manifest schema is what yaml-language-server shows on
hover and offers on completion, so every property carries a title and a description, the main
fields carry examples, and the examples are themselves valid values."""

from __future__ import annotations

import json
from typing import Any, Iterator, Tuple

import pytest
from jsonschema import Draft202012Validator

from conftest import REPO_ROOT

SCHEMA_PATH = REPO_ROOT / "schemas" / "manifest.v1.json"
SCHEMA = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


def properties(node: Any, path: str = "") -> Iterator[Tuple[str, Any]]:
    """Every (pointer, subschema) declared under a `properties` keyword, however deep (through
    $defs, items, then/else, ...), except inside `if`: a condition's properties are tests, not
    fields an editor shows."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "if":
                continue
            if key == "properties" and isinstance(value, dict):
                for name, sub in value.items():
                    yield f"{path}/properties/{name}", sub
                    yield from properties(sub, f"{path}/properties/{name}")
            else:
                yield from properties(value, f"{path}/{key}")
    elif isinstance(node, list):
        for index, item in enumerate(node):
            yield from properties(item, f"{path}/{index}")


PROPERTIES = list(properties(SCHEMA))


def test_the_walk_sees_the_whole_schema():
    assert len(PROPERTIES) >= 130
    pointers = {pointer for pointer, _ in PROPERTIES}
    assert "/$defs/kv_cache/properties/dtype" in pointers
    assert "/$defs/ablationResults/properties/buckets/items/properties/ttft_ms" in pointers


@pytest.mark.parametrize("pointer, sub", PROPERTIES, ids=[p for p, _ in PROPERTIES])
def test_every_property_has_a_title_and_a_description(pointer, sub):
    assert isinstance(sub.get("title"), str) and sub["title"].strip(), f"{pointer}: no title"
    assert isinstance(sub.get("description"), str) and sub["description"].strip(), f"{pointer}: no description"


def _validator_at(pointer: str) -> Draft202012Validator:
    # a wrapper sharing $defs, so that "#/$defs/..." references inside the subschema resolve
    wrapper = {"$schema": SCHEMA["$schema"], "$defs": SCHEMA["$defs"], "$ref": "#" + pointer}
    return Draft202012Validator(wrapper)


WITH_EXAMPLES = [(pointer, sub) for pointer, sub in PROPERTIES if "examples" in sub]


def test_main_fields_have_examples():
    have = {pointer.replace("/properties/", ".").replace("/$defs/", "") for pointer, _ in WITH_EXAMPLES}
    for field in ["engine.name", "engine.version", "hardware.gpu", "model.name", "kv_cache.dtype",
                  "memory.gpu_memory_utilization", "memory.mem_fraction_static",
                  "memory.free_gpu_memory_fraction", "memory.kv_cache_memory", "memory.non_kv_memory",
                  "serving.max_model_len", "parallelism.tensor"]:
        assert field in have, field


@pytest.mark.parametrize("pointer, sub", WITH_EXAMPLES, ids=[p for p, _ in WITH_EXAMPLES])
def test_examples_are_valid_values(pointer, sub):
    assert isinstance(sub["examples"], list) and sub["examples"]
    validator = _validator_at(pointer)
    for example in sub["examples"]:
        assert not list(validator.iter_errors(example)), (pointer, example)


def test_engine_specific_sets_are_left_to_kvlint():
    """kv_cache.dtype, the backend name and the llama.cpp cache types depend on the engine and its
    release: the schema takes any string (kvlint's KV204/KV205 check them against the catalog), and
    the description says so."""
    defs = SCHEMA["$defs"]
    for sub in (defs["kv_cache"]["properties"]["dtype"], defs["engine"]["properties"]["attention_backend"],
                defs["kv_cache"]["properties"]["key_dtype"]):
        assert "enum" not in sub and sub["type"] == "string"
        assert "kvlint" in sub["description"]


def test_the_schema_store_entry_points_at_this_schema():
    entry = json.loads((REPO_ROOT / "docs" / "editors" / "schemastore-catalog-entry.json").read_text(encoding="utf-8"))
    assert set(entry) >= {"name", "description", "fileMatch", "url"}
    from test_ci import released_schema_url

    assert entry["url"] == released_schema_url()  # what the README's and docs' modelines name
    for pattern in entry["fileMatch"]:
        assert "kvlint" in pattern and pattern.endswith((".yaml", ".yml")), pattern
    assert entry["url"] in (REPO_ROOT / "docs" / "editors.md").read_text(encoding="utf-8")
