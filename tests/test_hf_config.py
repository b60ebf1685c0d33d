"""config.json -> geometry, against each model's published geometry (the model catalog and
tests/fixtures/model_facts.json cite the upstream files)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from kvlint.catalog.hf_config import (
    ConfigError,
    geometry_from_config,
    manifest_geometry_overrides,
    read_config,
)
from kvlint.catalog.models import load_model_catalog
from kvlint.deployment import ModelGeometry

FIXTURES = Path(__file__).parent / "fixtures" / "hf_configs"


def kv_bytes_per_token_bf16(geometry: ModelGeometry) -> int:
    """All layers as if full, bf16: 2 (K, V) x heads x head_dim x 2 B; MLA: latent x 2 B."""
    total = 0
    for layer in geometry.layers:
        total += (layer.head_dim + layer.v_head_dim) * layer.num_kv_heads * 2
    return total


def kinds(geometry: ModelGeometry) -> Counter:
    return Counter(layer.kind for layer in geometry.layers)


def load(name: str) -> ModelGeometry:
    return read_config(FIXTURES / name, name=name)


# (fixture, KV bytes/token all layers bf16, head_dim, kv heads, layer kinds, window, max_pos, dtype)
EXPECTED = [
    ("llama-3.1-8b-instruct.json", 131072, 128, 8, {"full": 32}, None, 131072, "bfloat16"),
    ("qwen3-32b.json", 262144, 128, 8, {"full": 64}, None, 40960, "bfloat16"),
    ("qwen2.5-7b-instruct.json", 57344, 128, 4, {"full": 28}, None, 32768, "bfloat16"),
    ("mistral-7b-instruct-v0.3.json", 131072, 128, 8, {"full": 32}, None, 32768, "bfloat16"),
    ("gemma-2-9b.json", 344064, 256, 8, {"sliding": 21, "full": 21}, 4096, 8192, "bfloat16"),
    ("gemma-3-4b-it.json", 139264, 256, 4, {"sliding": 29, "full": 5}, 1024, 131072, "bfloat16"),
    ("gemma-3-27b-it.json", 507904, 128, 16, {"sliding": 52, "full": 10}, 1024, 131072, "bfloat16"),
    ("gpt-oss-20b.json", 49152, 64, 8, {"sliding": 12, "full": 12}, 128, 131072, "bfloat16"),
    ("deepseek-v3.json", 70272, 576, 1, {"full": 61}, None, 163840, "bfloat16"),
    ("phi-3-mini-4k-instruct.json", 393216, 96, 32, {"sliding": 32}, 2047, 4096, "bfloat16"),
    ("llama-4-scout-17b-16e-instruct.json", 196608, 128, 8, {"chunked": 36, "full": 12}, 8192, 10485760, "bfloat16"),
]


@pytest.mark.parametrize("fixture,kv_bytes,head_dim,kv_heads,layer_kinds,window,max_pos,dtype", EXPECTED)
def test_fixture_geometry_matches_reference(fixture, kv_bytes, head_dim, kv_heads, layer_kinds, window, max_pos, dtype):
    geometry = load(fixture)
    assert geometry.source == "config"
    assert kv_bytes_per_token_bf16(geometry) == kv_bytes
    assert geometry.head_dim == head_dim
    assert geometry.num_kv_heads == kv_heads
    assert dict(kinds(geometry)) == layer_kinds
    windows = {layer.window for layer in geometry.layers if layer.kind != "full"}
    assert windows == ({window} if window else set())
    assert geometry.max_position_embeddings == max_pos
    assert geometry.dtype == dtype
    assert [layer.index for layer in geometry.layers] == list(range(geometry.num_layers))


@pytest.mark.parametrize("fixture", [row[0] for row in EXPECTED])
def test_config_and_catalog_agree(fixture):
    """The fixture (written from the reference's config description) and the catalog entry (from
    the reference's table) give the same per-layer geometry."""
    config = json.loads((FIXTURES / fixture).read_text())
    from_config = geometry_from_config(config, "x")
    catalog = load_model_catalog()
    entry = next(e for e in catalog if e.id.split("/")[-1].lower() + ".json" == fixture)
    from_catalog = entry.geometry()
    assert from_config.layers == from_catalog.layers
    assert from_config.num_kv_heads == from_catalog.num_kv_heads
    assert from_config.head_dim == from_catalog.head_dim
    assert from_config.max_position_embeddings == from_catalog.max_position_embeddings
    assert from_config.has_sinks == from_catalog.has_sinks
    assert from_config.kv_lora_rank == from_catalog.kv_lora_rank


def test_qwen3_32b_prefers_explicit_head_dim_over_hidden_over_heads():
    geometry = load("qwen3-32b.json")
    assert geometry.head_dim == 128  # not 5120 / 64 = 80


def test_gpt_oss_head_dim_sinks_and_alternation():
    geometry = load("gpt-oss-20b.json")
    assert geometry.head_dim == 64  # not 2880 / 64 = 45
    assert geometry.has_sinks and all(layer.has_sinks for layer in geometry.layers)
    assert [layer.kind for layer in geometry.layers[:4]] == ["sliding", "full", "sliding", "full"]


def test_gpt_oss_without_layer_types_follows_vllm_hard_coded_rule():
    config = json.loads((FIXTURES / "gpt-oss-20b.json").read_text())
    del config["layer_types"]
    geometry = geometry_from_config(config, "gpt-oss")
    assert dict(kinds(geometry)) == {"sliding": 12, "full": 12}
    assert geometry.layers[0].kind == "sliding" and geometry.layers[0].window == 128


def test_gemma3_sparse_text_config_uses_class_defaults():
    geometry = load("gemma-3-4b-it.json")
    assert geometry.num_attention_heads == 8
    assert geometry.num_kv_heads == 4
    assert geometry.head_dim == 256  # not 2560 / 8 = 320
    # layer i is global iff (i + 1) % 6 == 0
    assert [i for i, layer in enumerate(geometry.layers) if layer.kind == "full"] == [5, 11, 17, 23, 29]


def test_gemma3_explicit_pattern_and_layer_types():
    config = json.loads((FIXTURES / "gemma-3-27b-it.json").read_text())
    config["text_config"]["sliding_window_pattern"] = 2
    assert dict(kinds(geometry_from_config(config, "g"))) == {"sliding": 31, "full": 31}
    config["text_config"]["layer_types"] = ["full_attention"] * 62
    assert dict(kinds(geometry_from_config(config, "g"))) == {"full": 62}


def test_gemma3_absent_window_is_class_default_4096():
    config = json.loads((FIXTURES / "gemma-3-4b-it.json").read_text())
    del config["text_config"]["sliding_window"]
    windows = {layer.window for layer in geometry_from_config(config, "g").layers if layer.kind == "sliding"}
    assert windows == {4096}


def test_gemma2_alternates_starting_with_sliding():
    geometry = load("gemma-2-9b.json")
    assert geometry.layers[0].kind == "sliding" and geometry.layers[1].kind == "full"
    assert geometry.dtype == "bfloat16"  # float32 config is loaded as bf16 by vLLM dtype=auto


def test_qwen_use_sliding_window_false_disables_the_window():
    geometry = load("qwen2.5-7b-instruct.json")
    assert not geometry.has_sliding_layers


def test_qwen_use_sliding_window_true_follows_max_window_layers():
    config = json.loads((FIXTURES / "qwen2.5-7b-instruct.json").read_text())
    config.update(use_sliding_window=True, sliding_window=4096, max_window_layers=20)
    geometry = geometry_from_config(config, "q")
    assert [layer.kind for layer in geometry.layers] == ["full"] * 20 + ["sliding"] * 8
    config["max_window_layers"] = 0
    assert dict(kinds(geometry_from_config(config, "q"))) == {"sliding": 28}


def test_mistral_null_window_absent_window_and_int_window():
    config = json.loads((FIXTURES / "mistral-7b-instruct-v0.3.json").read_text())
    assert not geometry_from_config(config, "m").has_sliding_layers  # explicit null
    del config["sliding_window"]  # MistralConfig default 4096 on every layer
    geometry = geometry_from_config(config, "m")
    assert dict(kinds(geometry)) == {"sliding": 32} and geometry.layers[0].window == 4096
    config["sliding_window"] = 0  # vLLM v0.33 turns 0 into None
    assert not geometry_from_config(config, "m").has_sliding_layers


def test_phi3_model_wide_window_on_every_layer():
    geometry = load("phi-3-mini-4k-instruct.json")
    assert all(layer.kind == "sliding" and layer.window == 2047 for layer in geometry.layers)


def test_llama4_chunked_layers_and_nope_globals():
    geometry = load("llama-4-scout-17b-16e-instruct.json")
    assert [i for i, layer in enumerate(geometry.layers) if layer.kind == "full"] == list(range(3, 48, 4))
    assert all(layer.window == 8192 for layer in geometry.layers if layer.kind == "chunked")


def test_llama4_explicit_no_rope_layers():
    config = json.loads((FIXTURES / "llama-4-scout-17b-16e-instruct.json").read_text())
    config["text_config"]["no_rope_layers"] = [1] * 47 + [0]
    assert dict(kinds(geometry_from_config(config, "l4"))) == {"chunked": 47, "full": 1}


def test_deepseek_mla_latent():
    geometry = load("deepseek-v3.json")
    assert geometry.is_mla and geometry.kv_lora_rank == 512 and geometry.qk_rope_head_dim == 64
    assert geometry.num_kv_heads == 1 and geometry.head_dim == 576
    assert all(layer.is_mla and layer.v_head_dim == 0 and layer.num_kv_heads == 1 for layer in geometry.layers)
    assert geometry.num_attention_heads == 128


def test_null_or_zero_head_dim_falls_back_to_hidden_over_heads():
    config = json.loads((FIXTURES / "llama-3.1-8b-instruct.json").read_text())
    for value in (None, 0):
        config["head_dim"] = value
        assert geometry_from_config(config, "l").head_dim == 128


def test_num_key_value_heads_defaults_to_attention_heads():
    config = json.loads((FIXTURES / "llama-3.1-8b-instruct.json").read_text())
    del config["num_key_value_heads"]
    assert geometry_from_config(config, "l").num_kv_heads == 32


def test_dtype_key_and_absent_dtype():
    config = json.loads((FIXTURES / "llama-3.1-8b-instruct.json").read_text())
    del config["torch_dtype"]
    config["dtype"] = "float16"
    assert geometry_from_config(config, "l").dtype == "float16"
    del config["dtype"]
    assert geometry_from_config(config, "l").dtype == "bfloat16"


def test_mistral_format_per_layer_window_list():
    config = json.loads((FIXTURES / "mistral-7b-instruct-v0.3.json").read_text())
    config["sliding_window"] = [4096, None] * 16
    geometry = geometry_from_config(config, "m")
    assert dict(kinds(geometry)) == {"sliding": 16, "full": 16}


@pytest.mark.parametrize(
    "config,fragment",
    [
        ({"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32}, "layer count"),
        ({"num_hidden_layers": 4}, "head_dim"),
        ({"num_hidden_layers": 4, "head_dim": 64}, "num_key_value_heads"),
        ({"num_hidden_layers": "many", "head_dim": 64, "num_attention_heads": 2}, "positive integer"),
        ({"num_hidden_layers": 4, "head_dim": 64, "num_attention_heads": 2, "layer_types": ["full_attention"]}, "one entry per layer"),
        ({"num_hidden_layers": 1, "head_dim": 64, "num_attention_heads": 2, "layer_types": ["linear_attention"]}, "linear_attention"),
        ({"model_type": "deepseek_v3", "num_hidden_layers": 2, "num_attention_heads": 2, "kv_lora_rank": 512, "qk_rope_head_dim": None}, "qk_rope_head_dim"),
        ([1, 2], "JSON object"),
    ],
)
def test_unusable_configs_raise_config_error(config, fragment):
    with pytest.raises(ConfigError) as raised:
        geometry_from_config(config, "bad")
    assert fragment in raised.value.message


def test_read_config_errors_are_config_errors(tmp_path):
    with pytest.raises(ConfigError, match="layer count"):
        read_config(FIXTURES / "no-layer-count.json")
    with pytest.raises(ConfigError, match="cannot read"):
        read_config(tmp_path / "missing.json")
    broken = tmp_path / "config.json"
    broken.write_text("{not json")
    with pytest.raises(ConfigError, match="not valid JSON"):
        read_config(broken)


# --- manifest model.geometry ---------------------------------------------------------------


def catalog_geometry(model_id: str) -> ModelGeometry:
    entry = load_model_catalog().lookup(model_id)
    assert entry is not None
    return entry.geometry()


def test_overrides_without_base_spec_example():
    geometry = manifest_geometry_overrides(
        None,
        {"num_layers": 80, "num_attention_heads": 64, "num_kv_heads": 8, "head_dim": 128,
         "sliding_window": None, "max_position_embeddings": 131072},
        "llama70b",
    )
    assert geometry.source == "manifest"
    assert kv_bytes_per_token_bf16(geometry) == 327680
    assert not geometry.has_sliding_layers and geometry.dtype == "bfloat16"


def test_overrides_win_over_base_and_keep_the_rest():
    base = catalog_geometry("google/gemma-3-27b-it")
    geometry = manifest_geometry_overrides(base, {"sliding_window": 512}, "g", dtype="float16")
    assert dict(kinds(geometry)) == {"sliding": 52, "full": 10}
    assert {layer.window for layer in geometry.layers if layer.kind == "sliding"} == {512}
    assert geometry.head_dim == 128 and geometry.num_kv_heads == 16 and geometry.dtype == "float16"
    disabled = manifest_geometry_overrides(base, {"sliding_window": None}, "g")
    assert not disabled.has_sliding_layers


def test_override_layer_count_extends_the_pattern():
    base = catalog_geometry("google/gemma-3-27b-it")
    geometry = manifest_geometry_overrides(base, {"num_layers": 12}, "g")
    assert [layer.kind for layer in geometry.layers] == (["sliding"] * 5 + ["full"]) * 2


def test_override_layer_types_and_model_wide_window():
    base = catalog_geometry("meta-llama/Llama-3.1-8B-Instruct")
    explicit = manifest_geometry_overrides(
        base, {"layer_types": ["sliding_attention", "full_attention"] * 16, "sliding_window": 4096}, "l"
    )
    assert dict(kinds(explicit)) == {"sliding": 16, "full": 16}
    wide = manifest_geometry_overrides(base, {"sliding_window": 4096}, "l")
    assert dict(kinds(wide)) == {"sliding": 32}


def test_override_mla_block_and_mla_off():
    geometry = manifest_geometry_overrides(
        None, {"num_layers": 61, "num_attention_heads": 128, "mla": {"kv_lora_rank": 512, "qk_rope_head_dim": 64}}, "ds"
    )
    assert geometry.is_mla and geometry.head_dim == 576 and kv_bytes_per_token_bf16(geometry) == 70272
    off = manifest_geometry_overrides(geometry, {"mla": None, "num_kv_heads": 128, "head_dim": 192}, "ds")
    assert not off.is_mla and off.num_kv_heads == 128


@pytest.mark.parametrize(
    "base_id,geometry,fragment",
    [
        (None, {"head_dim": 128}, "num_layers"),
        (None, {"num_layers": 2, "num_kv_heads": 2}, "head_dim"),
        (None, {"num_layers": 2, "head_dim": 64}, "num_kv_heads"),
        (None, {"num_layers": 2, "head_dim": 64, "num_kv_heads": 2, "layer_types": ["full_attention"]}, "one entry per layer"),
        (None, {"num_layers": 1, "head_dim": 64, "num_kv_heads": 2, "layer_types": ["sliding_attention"]}, "sliding_window"),
        (None, {"num_layers": 1, "head_dim": 64, "num_kv_heads": 2, "layer_types": ["chunked_attention"]}, "chunk"),
        (None, {"num_layers": 0, "head_dim": 64, "num_kv_heads": 2}, "positive integer"),
        (None, {"num_layers": 1, "mla": {"kv_lora_rank": 512}}, "qk_rope_head_dim"),
        (None, {"num_layers": 1, "head_dim": 128, "mla": {"kv_lora_rank": 512, "qk_rope_head_dim": 64}}, "contradicts"),
        ("meta-llama/Llama-3.1-8B-Instruct", {"num_layer": 3}, "unknown field"),
    ],
)
def test_unusable_overrides_raise_config_error(base_id, geometry, fragment):
    base = catalog_geometry(base_id) if base_id else None
    with pytest.raises(ConfigError) as raised:
        manifest_geometry_overrides(base, geometry, "m")
    assert fragment in raised.value.message
