"""llama.cpp block layouts and Ollama's estimate rates are catalog data, not code (task E, item 8):
rules/catalog/ggml/*.yaml carries them with their citations; kvlint/capacity/llamacpp.py reads
them from the resolved plan. Checked against the upstream definitions they come from."""

from __future__ import annotations

import ast
from pathlib import Path

from kvlint.catalog.ggml import load_ggml_catalog

ROOT = Path(__file__).resolve().parents[1]
CAT = load_ggml_catalog()


def test_block_layouts_split_into_quants_and_scales():
    """ggml-common.h: block_q8_0 {ggml_half d; int8_t qs[32]}, block_q4_0 {d; uint8_t qs[16]},
    block_q4_1 {d, m; qs[16]}, block_q5_0 {d; uint8_t qh[4]; qs[16]}, block_q5_1 {d, m; qh[4];
    qs[16]}, block_iq4_nl {d; qs[16]}: the block is payload_bits x 32 / 8 bytes of quants plus one
    fp16 scale (two, d and m, for the _1 types)."""
    expected_bits = {"q8_0": 8, "q4_0": 4, "q4_1": 4, "q5_0": 5, "q5_1": 5, "iq4_nl": 4}
    quantized = {t.name: t for t in CAT.cache_types if t.quantized}
    assert set(quantized) == set(expected_bits)
    for name, t in quantized.items():
        assert t.payload_bits == expected_bits[name], name
        scale_bytes = 4 if name.endswith("_1") else 2
        assert t.bytes == t.block * t.payload_bits // 8 + scale_bytes, name
        assert t.sources, name
    assert all(t.payload_bits is None for t in CAT.cache_types if not t.quantized)


def test_ollama_estimate_rates_are_kv_cache_bytes_per_element():
    """ollama/ollama fs/ggml/ggml.go kvCacheBytesPerElement: q8_0 -> 1, q4_0 -> 0.5, f32 -> 4,
    default 2 (llm/ggml.go in v0.5.0 without the f32 case)."""
    [entry] = [s for s in CAT.docs["ollama"]["settings"] if s["name"] == "estimate_bytes_per_element"]
    assert entry["value"] == {"q8_0": 1.0, "q4_0": 0.5, "f32": 4.0, "default": 2.0}
    assert entry["sources"]


def test_the_tables_left_the_code():
    tree = ast.parse((ROOT / "kvlint" / "capacity" / "llamacpp.py").read_text())
    names = {t.id for node in ast.walk(tree) if isinstance(node, ast.Assign) for t in node.targets
             if isinstance(t, ast.Name)}
    assert not names & {"_PAYLOAD_BITS", "_OLLAMA_DROPPED_SCALES"}
