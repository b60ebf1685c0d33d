"""kvlint's GGUF header reader (kvlint/catalog/gguf.py) against files written by the `gguf`
package (ggml-org/llama.cpp gguf-py, the writer llama.cpp's own converters use), the layouts
llama.cpp derives (src/llama-hparams.cpp set_swa_pattern; src/models/<arch>.cpp), the same models
read from their Hugging Face config.json by kvlint's independent config reader, and hostile files.

`gguf` is a test-only dependency (the `llamacpp` extra); without it the tests that need its writer
skip with that reason, while the hostile-file tests (hand-built bytes) always run.
"""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path
from typing import Any, Callable, List, Optional

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kvlint.catalog import gguf as reader
from kvlint.catalog.gguf import GGUFError, geometry_from_gguf, parse_gguf, read_gguf_geometry, read_gguf_header
from kvlint.catalog.hf_config import ConfigError, read_config

HF_CONFIGS = Path(__file__).parent / "fixtures" / "hf_configs"

try:  # the writer llama.cpp's converters use; installed by the `llamacpp` extra
    import gguf as gguf_writer
    import numpy as np
except ImportError:  # pragma: no cover - exercised where the extra is absent
    gguf_writer = None
    np = None

needs_gguf = pytest.mark.skipif(gguf_writer is None, reason="the gguf package (pip install 'kvcache-lint[llamacpp]') is not installed")


def write(path: Path, arch: str, fill: Callable[[Any], None], endian: str = "little", tokens: int = 0) -> Path:
    kwargs = {}
    if endian == "big":
        kwargs["endianess"] = gguf_writer.GGUFEndian.BIG
    w = gguf_writer.GGUFWriter(str(path), arch, **kwargs)
    fill(w)
    if tokens:
        w.add_tokenizer_model("gpt2")
        w.add_token_list([f"tok{i}" for i in range(tokens)])
        w.add_token_types([1] * tokens)
    w.add_tensor("token_embd.weight", np.zeros((4, 8), dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def llama31_8b(w: Any) -> None:
    # meta-llama/Llama-3.1-8B-Instruct config.json: 32 layers, hidden 4096, 32 heads, 8 KV heads.
    w.add_block_count(32)
    w.add_context_length(131072)
    w.add_embedding_length(4096)
    w.add_feed_forward_length(14336)
    w.add_head_count(32)
    w.add_head_count_kv(8)
    w.add_rope_dimension_count(128)
    w.add_layer_norm_rms_eps(1e-5)


def kinds(geometry: Any) -> List[str]:
    return [layer.kind for layer in geometry.layers]


# --- files written by the gguf package ---------------------------------------------------------


@needs_gguf
@pytest.mark.parametrize("endian", ["little", "big"])
def test_llama31_8b_geometry(tmp_path, endian):
    path = write(tmp_path / "llama.gguf", "llama", llama31_8b, endian=endian, tokens=1000)
    header = read_gguf_header(path)
    assert header.architecture == "llama"
    assert header.byte_order == endian
    assert header.version == 3
    assert header.tensor_count == 1
    # String arrays (the vocabulary) are skipped, never decoded; short numeric arrays are kept.
    assert header.skipped_arrays == {"tokenizer.ggml.tokens": 1000}
    assert header.metadata["tokenizer.ggml.token_type"] == [1] * 1000
    geometry = read_gguf_geometry(path, name="llama-3.1-8b")
    # head_dim from embedding_length / head_count = 4096 / 32 (no key_length in the file)
    assert (geometry.num_layers, geometry.num_kv_heads, geometry.head_dim) == (32, 8, 128)
    assert {(layer.num_kv_heads, layer.head_dim, layer.v_head_dim, layer.kind) for layer in geometry.layers} == {(8, 128, 128, "full")}
    assert geometry.max_position_embeddings == 131072
    # The same model through kvlint's config.json reader gives the same KV layers.
    assert geometry.layers == read_config(HF_CONFIGS / "llama-3.1-8b-instruct.json").layers
    # Bytes per token at f16: 2 (K,V) x 32 layers x 8 heads x 128 x 2 B = 131,072 (reference §5).
    assert sum(2 * layer.num_kv_heads * layer.head_dim * 2 for layer in geometry.layers) == 131072


@needs_gguf
def test_explicit_key_and_value_lengths(tmp_path):
    def fill(w):
        w.add_block_count(4)
        w.add_embedding_length(2048)
        w.add_head_count(16)
        w.add_head_count_kv(4)
        w.add_key_length(192)
        w.add_value_length(128)

    geometry = read_gguf_geometry(write(tmp_path / "m.gguf", "llama", fill))
    assert {(layer.head_dim, layer.v_head_dim, layer.num_kv_heads) for layer in geometry.layers} == {(192, 128, 4)}


@needs_gguf
def test_per_layer_kv_heads_and_layers_without_cache(tmp_path):
    # deci / Nemotron-NAS: head_count_kv is an array; 0 means the layer has no KV cache
    # (llama.cpp get_key_or_arr; llama_kv_cache skips layers without KV heads).
    def fill(w):
        w.add_block_count(4)
        w.add_embedding_length(1024)
        w.add_head_count([8, 8, 8, 8])
        w.add_head_count_kv([2, 0, 4, 1])
        w.add_key_length(128)
        w.add_value_length(128)

    geometry = read_gguf_geometry(write(tmp_path / "m.gguf", "deci", fill))
    assert [(layer.index, layer.num_kv_heads) for layer in geometry.layers] == [(0, 2), (2, 4), (3, 1)]
    assert geometry.num_layers == 4


@needs_gguf
def test_gemma3_sliding_pattern_matches_its_config(tmp_path):
    # google/gemma-3-27b-it: 62 layers, window 1024, every 6th layer global. llama.cpp's gemma3.cpp
    # passes period 6 to set_swa_pattern; kvlint's config.json reader derives the same from HF.
    hf = read_config(HF_CONFIGS / "gemma-3-27b-it.json")

    def fill(w):
        w.add_block_count(hf.num_layers)
        w.add_embedding_length(5376)
        w.add_head_count(32)
        w.add_head_count_kv(16)
        w.add_key_length(128)
        w.add_value_length(128)
        w.add_sliding_window(1024)
        w.add_context_length(131072)

    geometry = read_gguf_geometry(write(tmp_path / "g.gguf", "gemma3", fill))
    assert kinds(geometry) == kinds(hf)
    assert [layer.window for layer in geometry.layers] == [layer.window for layer in hf.layers]
    assert kinds(geometry)[:6] == ["sliding"] * 5 + ["full"]


@needs_gguf
def test_gemma3_without_window_is_all_full(tmp_path):
    def fill(w):
        w.add_block_count(6)
        w.add_embedding_length(1024)
        w.add_head_count(4)
        w.add_head_count_kv(1)
        w.add_key_length(256)
        w.add_value_length(256)

    assert set(kinds(read_gguf_geometry(write(tmp_path / "g.gguf", "gemma3", fill)))) == {"full"}


@needs_gguf
def test_gpt_oss_pattern_matches_its_config(tmp_path):
    hf = read_config(HF_CONFIGS / "gpt-oss-20b.json")

    def fill(w):
        w.add_block_count(hf.num_layers)
        w.add_embedding_length(2880)
        w.add_head_count(64)
        w.add_head_count_kv(8)
        w.add_key_length(64)
        w.add_value_length(64)
        w.add_sliding_window(128)

    geometry = read_gguf_geometry(write(tmp_path / "o.gguf", "gpt-oss", fill))
    assert kinds(geometry) == kinds(hf)
    assert geometry.has_sinks and all(layer.has_sinks for layer in geometry.layers)


@needs_gguf
def test_explicit_per_layer_pattern_and_swa_head_sizes(tmp_path):
    # gemma4-style: the bool array in sliding_window_pattern wins, and SWA layers may have their
    # own head sizes (%s.attention.key_length_swa).
    pattern = [True, True, False, True, False]

    def fill(w):
        w.add_block_count(5)
        w.add_embedding_length(1024)
        w.add_head_count(8)
        w.add_head_count_kv(2)
        w.add_key_length(512)
        w.add_value_length(512)
        w.add_uint32("gemma2.attention.key_length_swa", 256)
        w.add_uint32("gemma2.attention.value_length_swa", 256)
        w.add_sliding_window(512)
        w.add_array("gemma2.attention.sliding_window_pattern", pattern)

    geometry = read_gguf_geometry(write(tmp_path / "p.gguf", "gemma2", fill))
    assert kinds(geometry) == ["sliding" if p else "full" for p in pattern]
    assert [layer.head_dim for layer in geometry.layers] == [256 if p else 512 for p in pattern]


@needs_gguf
def test_llama4_chunked_every_fourth_layer_full(tmp_path):
    def fill(w):
        w.add_block_count(8)
        w.add_embedding_length(5120)
        w.add_head_count(40)
        w.add_head_count_kv(8)
        w.add_key_length(128)
        w.add_value_length(128)

    geometry = read_gguf_geometry(write(tmp_path / "l4.gguf", "llama4", fill))
    assert kinds(geometry) == ["chunked", "chunked", "chunked", "full"] * 2
    assert {layer.window for layer in geometry.layers if layer.kind == "chunked"} == {8192}
    hf = read_config(HF_CONFIGS / "llama-4-scout-17b-16e-instruct.json")
    assert kinds(geometry)[:4] == kinds(hf)[:4]


@needs_gguf
def test_unknown_sliding_architecture_is_reported_not_guessed(tmp_path):
    def fill(w):
        w.add_block_count(4)
        w.add_embedding_length(1024)
        w.add_head_count(8)
        w.add_sliding_window(4096)

    with pytest.raises(GGUFError, match="does not know which layers"):
        read_gguf_geometry(write(tmp_path / "x.gguf", "somearch", fill))


@needs_gguf
@pytest.mark.parametrize(
    "fill, message",
    [
        (lambda w: w.add_embedding_length(64), "no somearch.block_count"),
        (lambda w: (w.add_block_count(2), w.add_embedding_length(64)), "no somearch.attention.head_count"),
        (lambda w: (w.add_block_count(2), w.add_head_count(4)), "neither somearch.attention.key_length"),
        (lambda w: (w.add_block_count(2), w.add_head_count([4, 4, 4]), w.add_embedding_length(64)), "lists 3 values for 2 layers"),
        (lambda w: (w.add_string("somearch.block_count", "32"), w.add_head_count(4)), "expected an integer"),
        (lambda w: (w.add_block_count(2), w.add_head_count(4), w.add_head_count_kv(0), w.add_embedding_length(64)), "no layer of this GGUF has KV heads"),
    ],
)
def test_metadata_without_geometry_is_one_line_error(tmp_path, fill, message):
    with pytest.raises(GGUFError, match=message):
        read_gguf_geometry(write(tmp_path / "x.gguf", "somearch", fill))


@needs_gguf
def test_manifest_model_config_reads_the_gguf(tmp_path, valid_manifest):
    """`model.config: model.gguf` in a kvlint/v1 manifest gives the geometry from the GGUF header."""
    import yaml

    from kvlint.analysis import analyze_deployment

    def fill(w):  # Llama-3.1-8B's KV heads but 20 layers: the catalog entry (32) cannot be what is read
        w.add_block_count(20)
        w.add_embedding_length(4096)
        w.add_head_count(32)
        w.add_head_count_kv(8)

    write(tmp_path / "model.gguf", "llama", fill)
    data = yaml.safe_load(valid_manifest)
    data["model"]["config"] = "model.gguf"
    manifest = tmp_path / "deploy.yaml"
    analysis = analyze_deployment(data, str(manifest), manifest)
    assert analysis.facts["model"].get("config_error") is None
    assert analysis.facts["model"]["source"] == "config"
    assert analysis.deployment.model.num_layers == 20
    assert {(layer.num_kv_heads, layer.head_dim) for layer in analysis.deployment.model.layers} == {(8, 128)}
    # A broken GGUF named in model.config is reported on the manifest, not raised.
    (tmp_path / "model.gguf").write_bytes(b"GGUF\x03\0\0\0")
    broken = analyze_deployment(data, str(manifest), manifest)
    assert "not a readable GGUF file" in broken.facts["model"]["config_error"]
    # A file that is not GGUF but named *.gguf: a ConfigError (a finding in resolve), no traceback.
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b'{"num_hidden_layers": 32}')
    with pytest.raises(ConfigError, match="not a GGUF file"):
        read_config(bad)


# --- hostile files (hand-built bytes: no gguf package needed) ---------------------------------


def gguf_string(text: str) -> bytes:
    raw = text.encode()
    return struct.pack("<Q", len(raw)) + raw


def kv(key: str, vtype: int, payload: bytes) -> bytes:
    return gguf_string(key) + struct.pack("<I", vtype) + payload


def header(kvs: List[bytes], version: int = 3, tensors: int = 0, count: Optional[int] = None) -> bytes:
    n = len(kvs) if count is None else count
    return b"GGUF" + struct.pack("<IQQ", version, tensors, n) + b"".join(kvs)


def u32(key: str, value: int) -> bytes:
    return kv(key, 4, struct.pack("<I", value))


VALID = header([
    kv("general.architecture", 8, gguf_string("llama")),
    u32("llama.block_count", 2),
    u32("llama.attention.head_count", 4),
    u32("llama.attention.head_count_kv", 2),
    u32("llama.embedding_length", 256),
    kv("tokenizer.ggml.tokens", 9, struct.pack("<IQ", 8, 3) + gguf_string("a") + gguf_string("bb") + gguf_string("c")),
])


def test_hand_built_file_parses():
    geometry = geometry_from_gguf(parse_gguf(VALID, "v"), "v")
    assert [(layer.num_kv_heads, layer.head_dim) for layer in geometry.layers] == [(2, 64), (2, 64)]


@pytest.mark.parametrize(
    "data, message",
    [
        (b"", "not a GGUF file"),
        (b"GGML" + b"\0" * 20, "not a GGUF file"),
        (b"GGUF\x01\0\0\0" + b"\0" * 16, "version 1"),
        (b"GGUF\x63\0\0\0" + b"\0" * 16, "unsupported GGUF version 99"),
        (header([], count=1 << 40), "metadata keys"),
        (header([struct.pack("<Q", 1 << 60)], count=1), "at most 65,535 allowed"),
        (header([kv("k", 8, struct.pack("<Q", 1 << 62))]), "ends inside the value of 'k'"),
        (header([kv("k", 9, struct.pack("<IQ", 4, 1 << 61))]), "ends inside the 2,305,843,009,213,693,952 items"),
        (header([kv("k", 9, struct.pack("<IQ", 8, 1 << 61))]), "ends inside"),
        (header([kv("k", 9, struct.pack("<IQ", 9, 1 << 61))]), "ends inside"),
        (header([kv("k", 77, b"")]), "unknown value type 77"),
        (header([kv("k", 9, struct.pack("<IQ", 77, 1))]), "unknown item type 77"),
        (header([kv("k", 9, struct.pack("<IQ", 9, 1) + struct.pack("<IQ", 9, 1) * 5)]), "nests arrays more than 4 deep"),
        (header([u32("k", 1), u32("k", 2)]), "appears twice"),
        (header([kv("k", 9, struct.pack("<IQ", 8, 2) + gguf_string("a") + struct.pack("<Q", 99))]), "ends inside string 1"),
    ],
)
def test_hostile_bytes_give_one_line_errors(data, message):
    with pytest.raises(GGUFError, match=message) as caught:
        parse_gguf(data, "hostile.gguf")
    assert "\n" not in str(caught.value) and str(caught.value).startswith("hostile.gguf: ")


def test_every_truncation_is_an_error_not_a_crash():
    for cut in range(len(VALID)):
        with pytest.raises(GGUFError):
            geometry_from_gguf(parse_gguf(VALID[:cut], "t"), "t")


def test_metadata_past_the_cap_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(reader, "MAX_HEADER_BYTES", 64)
    path = tmp_path / "big.gguf"
    path.write_bytes(VALID + b"\0" * 1000)
    with pytest.raises(GGUFError, match="runs past the first 64 bytes"):
        read_gguf_header(path)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "model.gguf"
    os.mkfifo(fifo)
    with pytest.raises(ConfigError, match="not a regular file"):
        read_config(fifo)


def test_missing_file_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="cannot read GGUF file"):
        read_config(tmp_path / "absent.gguf")


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.lists(st.tuples(st.integers(0, len(VALID) - 1), st.integers(0, 255)), min_size=1, max_size=8))
def test_corrupted_files_never_crash(flips):
    data = bytearray(VALID)
    for position, value in flips:
        data[position] = value
    try:
        geometry_from_gguf(parse_gguf(bytes(data), "fuzz"), "fuzz")
    except GGUFError as error:
        assert "\n" not in str(error)


def test_geometry_keys_are_read_not_guessed():
    # No head_count_kv: llama.cpp defaults it to head_count (MHA), not to a guess.
    data = header([
        kv("general.architecture", 8, gguf_string("llama")),
        u32("llama.block_count", 1),
        u32("llama.attention.head_count", 4),
        u32("llama.embedding_length", 256),
    ])
    assert geometry_from_gguf(parse_gguf(data, "m"), "m").layers[0].num_kv_heads == 4
    assert json.dumps(parse_gguf(data, "m").metadata)  # plain values only
