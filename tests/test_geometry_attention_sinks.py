"""model.geometry.attention_sinks (schemas/manifest.v1.json, docs/manifest.md) is a geometry field
kvlint reads: before issue 22 it was missing from hf_config._GEOMETRY_KEYS, so a manifest stating it
lost its whole geometry (model.geometry was rejected as having an unknown field) and the sink and
head-size checks never ran.

gpt-oss's geometry is config.json's (https://huggingface.co/openai/gpt-oss-20b/blob/main/config.json:
24 layers, 64 attention heads, 8 KV heads, head_dim 64); vLLM's FLASH_ATTN refuses sinks below SM 9.0
(vllm v0.33.0 vllm/v1/attention/backends/flash_attn.py supports_sink, KV315's source).
"""

from __future__ import annotations

import pytest

from conftest import check_json
from kvlint.catalog.hf_config import ConfigError, manifest_geometry_overrides

MANIFEST = """\
apiVersion: kvlint/v1
kind: Deployment
metadata:
  name: sinks
engine:
  name: vllm
  version: "0.19.1"
  attention_backend: FLASH_ATTN
hardware:
  gpu: A100-80GB
  count: 1
model:
  name: {name}
  geometry:
    num_layers: 24
    num_attention_heads: 64
    num_kv_heads: 8
    head_dim: 64
    attention_sinks: {sinks}
serving:
  max_model_len: 8192
"""


def _codes(workspace, name: str, sinks: str) -> set:
    path = workspace / "m.yaml"
    path.write_text(MANIFEST.format(name=name, sinks=sinks), encoding="utf-8")
    return {d["code"] for d in check_json(str(path))["diagnostics"]}


def test_uncatalogued_model_with_sinks_keeps_its_geometry_and_gets_kv315(workspace):
    codes = _codes(workspace, "example-org/sink-model-20b", "true")
    assert "KV315" in codes, codes
    assert "KV203" not in codes, codes  # the geometry is known: it is stated


def test_without_sinks_there_is_no_kv315(workspace):
    codes = _codes(workspace, "example-org/sink-model-20b", "false")
    assert "KV315" not in codes and "KV203" not in codes, codes


def test_catalogued_model_stating_sinks_keeps_the_manifest_geometry():
    from kvlint.catalog.models import load_model_catalog

    base = load_model_catalog().lookup("openai/gpt-oss-20b").geometry()
    assert base.has_sinks  # gpt-oss: learned per-head sinks
    stated = manifest_geometry_overrides(base, {"attention_sinks": True, "head_dim": 64}, "openai/gpt-oss-20b")
    assert stated.has_sinks and stated.num_layers == 24 and stated.num_kv_heads == 8
    off = manifest_geometry_overrides(base, {"attention_sinks": False}, "openai/gpt-oss-20b")
    assert not off.has_sinks and not any(layer.has_sinks for layer in off.layers)


def test_attention_sinks_must_be_a_boolean():
    with pytest.raises(ConfigError, match="attention_sinks"):
        manifest_geometry_overrides(None, {"num_layers": 2, "head_dim": 64, "num_kv_heads": 1,
                                           "attention_sinks": "yes"}, "x")
