"""Model catalog: data validity, sources, geometry against the checked-in facts of tests/fixtures/model_facts.json."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
import yaml

from kvlint.errors import CatalogError
from kvlint.catalog.models import ModelCatalog, load_model_catalog
from kvlint.deployment import ModelGeometry
from kvlint.resources import catalog_dir, schemas_dir

# Per-model facts with their upstream sources (each model's Hugging Face config.json, and the
# copies or vendor code it was checked against).
MODEL_FACTS = Path(__file__).resolve().parent / "fixtures" / "model_facts.json"

# hf id -> (layers, KV bytes/token all layers bf16, head_dim, kv heads, layer kinds, window),
# from each model's config.json as vLLM reads it (the catalog entries cite the files).
EXPECTED = {
    "meta-llama/Llama-3.1-8B-Instruct": (32, 131072, 128, 8, {"full": 32}, None),
    "meta-llama/Llama-3.1-70B-Instruct": (80, 327680, 128, 8, {"full": 80}, None),
    "meta-llama/Llama-3.1-405B": (126, 516096, 128, 8, {"full": 126}, None),
    "meta-llama/Llama-3.3-70B-Instruct": (80, 327680, 128, 8, {"full": 80}, None),
    "meta-llama/Llama-3.2-1B": (16, 32768, 64, 8, {"full": 16}, None),
    "meta-llama/Llama-3.2-3B": (28, 114688, 128, 8, {"full": 28}, None),
    "Qwen/Qwen2.5-7B-Instruct": (28, 57344, 128, 4, {"full": 28}, None),
    "Qwen/Qwen2.5-72B-Instruct": (80, 327680, 128, 8, {"full": 80}, None),
    "Qwen/Qwen3-8B": (36, 147456, 128, 8, {"full": 36}, None),
    "Qwen/Qwen3-32B": (64, 262144, 128, 8, {"full": 64}, None),
    "Qwen/Qwen3-235B-A22B": (94, 192512, 128, 4, {"full": 94}, None),
    "Qwen/Qwen3-30B-A3B": (48, 98304, 128, 4, {"full": 48}, None),
    "mistralai/Mistral-7B-Instruct-v0.3": (32, 131072, 128, 8, {"full": 32}, None),
    "mistralai/Mixtral-8x7B-v0.1": (32, 131072, 128, 8, {"full": 32}, None),
    "google/gemma-2-9b": (42, 344064, 256, 8, {"sliding": 21, "full": 21}, 4096),
    "google/gemma-2-27b": (46, 376832, 128, 16, {"sliding": 23, "full": 23}, 4096),
    "google/gemma-3-4b-it": (34, 139264, 256, 4, {"sliding": 29, "full": 5}, 1024),
    "google/gemma-3-12b-it": (48, 393216, 256, 8, {"sliding": 40, "full": 8}, 1024),
    "google/gemma-3-27b-it": (62, 507904, 128, 16, {"sliding": 52, "full": 10}, 1024),
    "openai/gpt-oss-20b": (24, 49152, 64, 8, {"sliding": 12, "full": 12}, 128),
    "openai/gpt-oss-120b": (36, 73728, 64, 8, {"sliding": 18, "full": 18}, 128),
    "deepseek-ai/DeepSeek-V3": (61, 70272, 576, 1, {"full": 61}, None),
    "microsoft/Phi-3-mini-4k-instruct": (32, 393216, 96, 32, {"sliding": 32}, 2047),
    "meta-llama/Llama-4-Scout-17B-16E-Instruct": (48, 196608, 128, 8, {"chunked": 36, "full": 12}, 8192),
}


@pytest.fixture(scope="module")
def catalog() -> ModelCatalog:
    return load_model_catalog()


def kv_bytes_per_token_bf16(geometry: ModelGeometry) -> int:
    return sum((layer.head_dim + layer.v_head_dim) * layer.num_kv_heads * 2 for layer in geometry.layers)


def test_builtin_files_validate_against_schema():
    from jsonschema import Draft202012Validator

    schema = json.loads((schemas_dir() / "catalog-model.json").read_text())
    Draft202012Validator.check_schema(schema)
    validator = Draft202012Validator(schema)
    files = sorted((catalog_dir() / "models").glob("*.yaml"))
    assert files
    for path in files:
        errors = list(validator.iter_errors(yaml.safe_load(path.read_text())))
        assert not errors, (path.name, [e.message for e in errors])


def test_all_reference_models_present(catalog):
    assert set(EXPECTED) <= set(catalog.ids)
    assert len(catalog) >= 24


def test_every_model_has_a_source_and_unverified_entries_say_why(catalog):
    for entry in catalog:
        assert entry.sources, entry.id
        for source in entry.sources:
            assert source.url or (source.repo and source.path), (entry.id, source)
        assert any(s.url and "huggingface.co/" + entry.id in s.url for s in entry.sources), entry.id
        if not entry.verified:
            assert entry.unverified_fields or entry.notes, entry.id


@pytest.mark.parametrize("model_id", sorted(EXPECTED))
def test_geometry_matches_reference(catalog, model_id):
    layers, kv_bytes, head_dim, kv_heads, layer_kinds, window = EXPECTED[model_id]
    entry = catalog.lookup(model_id)
    geometry = entry.geometry()
    assert geometry.source == "catalog" and geometry.name == model_id
    assert geometry.num_layers == layers == len(geometry.layers)
    assert kv_bytes_per_token_bf16(geometry) == kv_bytes == entry.kv_bytes_per_token_bf16
    assert geometry.head_dim == head_dim and geometry.num_kv_heads == kv_heads
    assert dict(Counter(layer.kind for layer in geometry.layers)) == layer_kinds
    sizes = {layer.window for layer in geometry.layers if layer.kind != "full"}
    assert sizes == ({window} if window else set())
    assert all(layer.window is None for layer in geometry.layers if layer.kind == "full")


def test_model_facts_fixture_covers_the_expected_models_and_cites_upstream():
    rows = json.loads(MODEL_FACTS.read_text(encoding="utf-8"))["models"]
    assert sorted(row["hf_id"] for row in rows) == sorted(EXPECTED)
    for row in rows:
        assert row["sources"][0]["url"] == f"https://huggingface.co/{row['hf_id']}/blob/main/config.json"
        assert all(s.get("url") or (s.get("repo") and s.get("path")) for s in row["sources"]), row["hf_id"]


def test_geometry_matches_model_facts_layer_by_layer(catalog):
    kind_name = {"full": "full_attention", "sliding": "sliding_attention", "chunked": "chunked_attention"}
    for row in json.loads(MODEL_FACTS.read_text(encoding="utf-8"))["models"]:
        geometry = catalog.lookup(row["hf_id"]).geometry()
        assert geometry.num_attention_heads == row["num_attention_heads"]
        assert geometry.max_position_embeddings == row["max_position_embeddings"]
        assert geometry.head_dim == row["vllm_head_size"]
        assert geometry.num_kv_heads == row["vllm_total_num_kv_heads"]
        if row["layer_types"]:
            full = set(row["layer_types"]["full_attention"])
            expected = ["full_attention" if i in full else row["layer_types"]["others"]
                        for i in range(len(geometry.layers))]
            assert [kind_name[layer.kind] for layer in geometry.layers] == expected, row["hf_id"]
        assert geometry.has_sinks == row["attention_sinks"]
        assert geometry.kv_lora_rank == row["kv_lora_rank"]
        assert catalog.lookup(row["hf_id"]).total_params == row["total_params"]


def test_pitfalls_of_reading_config_json_naively(catalog):
    assert catalog.lookup("Qwen/Qwen3-32B").geometry().head_dim == 128  # not 5120/64 = 80
    assert catalog.lookup("openai/gpt-oss-20b").geometry().head_dim == 64  # not 2880/64 = 45
    gemma = catalog.lookup("google/gemma-3-27b-it").geometry()
    assert [i for i, layer in enumerate(gemma.layers) if layer.kind == "full"] == list(range(5, 62, 6))
    oss = catalog.lookup("openai/gpt-oss-20b").geometry()
    assert oss.has_sinks and oss.layers[0].kind == "sliding" and oss.layers[1].kind == "full"
    deepseek = catalog.lookup("deepseek-ai/DeepSeek-V3").geometry()
    assert deepseek.is_mla and deepseek.kv_lora_rank + deepseek.qk_rope_head_dim == 576
    assert all(layer.is_mla and layer.num_kv_heads == 1 and layer.v_head_dim == 0 for layer in deepseek.layers)
    scout = catalog.lookup("meta-llama/Llama-4-Scout-17B-16E-Instruct").geometry()
    assert [i for i, layer in enumerate(scout.layers) if layer.kind == "full"] == list(range(3, 48, 4))


def test_dtype_is_what_vllm_auto_loads(catalog):
    gemma2 = catalog.lookup("google/gemma-2-9b")
    assert gemma2.config_dtype == "float32" and gemma2.geometry().dtype == "bfloat16"
    oss = catalog.lookup("openai/gpt-oss-20b")
    assert oss.config_dtype is None and not oss.verified and oss.unverified_fields


def test_weights(catalog):
    assert catalog.lookup("meta-llama/Llama-3.1-8B-Instruct").weights_bytes() == 8_030_261_248 * 2
    assert catalog.lookup("deepseek-ai/DeepSeek-V3").weights_bytes() == 671_026_419_200  # FP8, main model
    oss = catalog.lookup("openai/gpt-oss-20b").weights_bytes()
    assert 12e9 < oss < 15e9  # MXFP4 experts + BF16 rest, far below 2 B/param


@pytest.mark.parametrize(
    "name,expected",
    [
        ("meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Llama-3.1-8B-Instruct"),
        ("META-LLAMA/llama-3.1-8b-instruct", "meta-llama/Llama-3.1-8B-Instruct"),
        ("meta-llama/Meta-Llama-3.1-8B-Instruct", "meta-llama/Llama-3.1-8B-Instruct"),
        ("https://huggingface.co/Qwen/Qwen3-32B", "Qwen/Qwen3-32B"),
        ("hf://Qwen/Qwen3-32B/", "Qwen/Qwen3-32B"),
        ("gemma-3-27b-it", "google/gemma-3-27b-it"),
    ],
)
def test_lookup(catalog, name, expected):
    entry = catalog.lookup(name)
    assert entry is not None and entry.id == expected


@pytest.mark.parametrize("name", ["", "Qwen/Qwen3-7B", "other-org/Qwen3-32B", None])
def test_lookup_misses(catalog, name):
    assert catalog.lookup(name) is None


def test_suggest(catalog):
    assert catalog.suggest("google/gemma-3-27b")[0] == "google/gemma-3-27b-it"
    assert catalog.suggest("Qwen/Qwen3-8b-Instruct")[0] == "Qwen/Qwen3-8B"
    assert catalog.suggest("totally-unrelated-thing") == []


def test_geometry_is_built_once(catalog):
    entry = catalog.lookup("google/gemma-3-27b-it")
    assert entry.geometry() is entry.geometry()


def test_catalog_dir_adds_models_with_explicit_layer_types(tmp_path):
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "org.yaml").write_text(
        "models:\n"
        "  - id: acme/tiny\n    num_layers: 3\n    num_attention_heads: 4\n    num_kv_heads: 2\n"
        "    head_dim: 64\n    attention: {layer_types: [sliding, full, sliding], window: 256}\n"
        "    dtype: float16\n    verified: false\n    notes: internal\n"
        "    sources: [{repo: acme/models, path: tiny/config.json, release: v1}]\n"
    )
    merged = load_model_catalog([catalog_dir(), tmp_path])
    geometry = merged.lookup("acme/tiny").geometry()
    assert [layer.kind for layer in geometry.layers] == ["sliding", "full", "sliding"]
    assert geometry.dtype == "float16" and geometry.layers[0].window == 256
    assert merged.lookup("Qwen/Qwen3-8B") is not None


@pytest.mark.parametrize(
    "body,fragment",
    [
        ("models:\n  - id: a/b\n    num_layers: 2\n", "catalog-model.json"),
        ("models: [\n", "not valid YAML"),
    ],
)
def test_bad_user_catalog_is_a_catalog_error(tmp_path, body, fragment):
    (tmp_path / "models.yaml").write_text(body)
    with pytest.raises(CatalogError) as raised:
        load_model_catalog([tmp_path])
    assert fragment in str(raised.value)
