"""The llama.cpp smoke test on the real engine (llama-cpp-python 0.3.36 = llama.cpp b11312, CPU).

Two kinds of test:

* llama.cpp against independent numbers: the KV bytes llama.cpp logs for a tiny model with the
  Llama-3.1-8B KV geometry (32 layers, 8 KV heads, head size 128) against the figures a real
  llama.cpp run printed (b4747 on the CPU backend: f16 4096 MiB, q8_0 2176 MiB, q4_0 1152 MiB,
  q8_0/f16 3136 MiB, q4_1/q5_0 1344 MiB at -c 32768; quantized V without flash attention refused),
  and the cell counts b11312's own code gives (src/llama-context.cpp: `n_ctx = GGML_PAD(n_ctx, 256)`;
  per sequence `n_ctx_seq = GGML_PAD(n_ctx / n_seq_max, 256)` when the cache is not unified).
  The KV size is linear in the layer count, so most cases use fewer layers (the per-layer shape is
  kept); the three acceptance cases use all 32 (4 GiB at f16, created one after the other).
* kvlint against llama.cpp: `kvlint smoke` end to end, where kvlint reads the tiny model's geometry
  from its GGUF header and predicts cells, K/V bytes and whether the context is created.

Without llama-cpp-python the module skips with that reason (.ci/run builds it; see
tests/fail_on_skip.py: with KVLINT_TEST_FAIL_ON_SKIP=1 such a skip fails the run instead).
"""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.slow  # builds and runs the real llama.cpp

pytest.importorskip("gguf", reason="the gguf package is not installed (pip install 'kvcache-lint[llamacpp]')")
pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed (pip install 'kvcache-lint[llamacpp]'; .ci/run builds it)")

from kvlint.smoke.llamacpp import (  # noqa: E402
    MIB,
    VENDORED_BUILD,
    KVGeometry,
    LlamaCppCase,
    run_case,
    run_smoke_case,
)

LLAMA8B = KVGeometry(n_layer=32, n_head_kv=8, head_dim_k=128, head_dim_v=128)


def with_layers(n: int) -> KVGeometry:
    return KVGeometry(n_layer=n, n_head_kv=8, head_dim_k=128, head_dim_v=128)


@pytest.mark.parametrize(
    "type_k, type_v, fa, logged_mib, bytes_per_token",
    [
        ("f16", "f16", "off", 4096.00, 131072),
        ("q8_0", "q8_0", "on", 2176.00, 69632),
        ("q4_0", "q4_0", "on", 1152.00, 36864),
    ],
)
def test_acceptance_llama31_8b_at_32768_cells(type_k, type_v, fa, logged_mib, bytes_per_token):
    measured = run_case(LlamaCppCase(LLAMA8B, type_k=type_k, type_v=type_v, flash_attn=fa, n_ctx=32768))
    assert measured.created, measured.errors
    assert (measured.kv.cells, measured.kv.layers, measured.kv.k_type, measured.kv.v_type) == (32768, 32, type_k, type_v)
    assert measured.kv.total_mib == logged_mib
    assert measured.kv.buffer_total_mib == logged_mib
    assert measured.bytes_per_cell() == bytes_per_token


def test_quantized_k_without_flash_attention_is_allowed():
    # b4747 log: q8_0/f16 without -fa: K 1088 MiB + V 2048 MiB for 32 layers; here 8 layers.
    measured = run_case(LlamaCppCase(with_layers(8), type_k="q8_0", type_v="f16", flash_attn="off", n_ctx=32768))
    assert measured.created, measured.errors
    assert (measured.kv.k_mib, measured.kv.v_mib) == (1088.0 / 4, 2048.0 / 4)


def test_mixed_quantized_types_with_flash_attention():
    # b4747 log: q4_1/q5_0 -fa: K 640 MiB, V 704 MiB for 32 layers; here 8 layers.
    measured = run_case(LlamaCppCase(with_layers(8), type_k="q4_1", type_v="q5_0", flash_attn="on", n_ctx=32768))
    assert measured.created, measured.errors
    assert (measured.kv.k_mib, measured.kv.v_mib) == (640.0 / 4, 704.0 / 4)


def test_quantized_v_without_flash_attention_is_refused():
    measured = run_case(LlamaCppCase(with_layers(2), type_k="q8_0", type_v="q8_0", flash_attn="off", n_ctx=4096))
    assert measured.model_loaded
    assert not measured.created
    assert measured.kv.total_mib is None  # no cache was allocated
    assert any("requires flash_attn" in line for line in measured.errors), measured.errors


def test_auto_turns_flash_attention_on_for_a_quantized_v():
    # b11312 src/llama-context.cpp: "enabling flash_attn since it is required for quantized V cache".
    measured = run_case(LlamaCppCase(with_layers(2), type_k="q8_0", type_v="q8_0", flash_attn="auto", n_ctx=4096))
    assert measured.created, measured.errors
    assert "enabling flash_attn since it is required for quantized V cache" in measured.log


@pytest.mark.parametrize("fa", ["on", "off"])
def test_context_padded_to_256_cells(fa):
    # -c 30000: GGML_PAD(30000, 256) = 30208 with or without flash attention at b11312 (b4747
    # padded to 32 without it: 30016).
    measured = run_case(LlamaCppCase(with_layers(2), flash_attn=fa, n_ctx=30000))
    assert measured.created, measured.errors
    assert (measured.kv.cells, measured.n_ctx) == (30208, 30208)
    assert measured.kv.k_mib == 2 * 30208 * 1024 * 2 / MIB


@pytest.mark.parametrize(
    "unified, per_stream, streams",
    [
        (False, 11008, 3),  # GGML_PAD(32768 / 3, 256) = GGML_PAD(10922, 256) = 11008 per slot
        (True, 32768, 1),
    ],
)
def test_parallel_slots(unified, per_stream, streams):
    measured = run_case(LlamaCppCase(with_layers(4), n_ctx=32768, n_seq_max=3, kv_unified=unified, flash_attn="on"))
    assert measured.created, measured.errors
    assert (measured.kv.cells_per_stream, measured.kv.streams, measured.kv.seqs) == (per_stream, streams, 3)
    assert measured.kv.k_mib == 4 * per_stream * streams * 1024 * 2 / MIB


# --- kvlint's prediction against llama.cpp -------------------------------------------------------

KVLINT_CASES = {
    "f16": LlamaCppCase(with_layers(4), flash_attn="off", n_ctx=32768),
    "q8_0-fa": LlamaCppCase(with_layers(4), type_k="q8_0", type_v="q8_0", flash_attn="on", n_ctx=32768),
    "q4_0-fa": LlamaCppCase(with_layers(4), type_k="q4_0", type_v="q4_0", flash_attn="on", n_ctx=32768),
    "q8_0-f16-no-fa": LlamaCppCase(with_layers(4), type_k="q8_0", type_v="f16", flash_attn="off", n_ctx=32768),
    "q8_0-no-fa-refused": LlamaCppCase(with_layers(4), type_k="q8_0", type_v="q8_0", flash_attn="off", n_ctx=32768),
    "c30000": LlamaCppCase(with_layers(2), flash_attn="off", n_ctx=30000),
    "np3": LlamaCppCase(with_layers(4), n_ctx=32768, n_seq_max=3, flash_attn="on"),
    "np3-unified": LlamaCppCase(with_layers(4), n_ctx=32768, n_seq_max=3, kv_unified=True, flash_attn="on"),
    "head-dim-64-q4_0": LlamaCppCase(KVGeometry(3, 4, 64, 64), type_k="q4_0", type_v="q4_0", flash_attn="on", n_ctx=8192),
}


@pytest.mark.parametrize("name", sorted(KVLINT_CASES))
def test_kvlint_predicts_what_llama_cpp_does(name, tmp_path):
    result = run_smoke_case(KVLINT_CASES[name], name, workdir=tmp_path)
    if result.prediction is None:
        pytest.skip(f"kvlint's side is missing: {result.reason}")
    assert result.measurement is not None, result.reason
    failed = [c for c in result.checks if c.gating and not c.passed]
    assert not failed, failed
    assert result.status == "passed"
    if result.measurement.created:
        assert {c.quantity for c in result.checks} >= {"cells", "K bytes", "V bytes"}


def test_kvlint_smoke_command_on_a_gguf_manifest(tmp_path, monkeypatch):
    """`kvlint smoke` on a llama.cpp manifest whose model.config is a GGUF file."""
    from conftest import CliRunner

    from kvlint.cli import main as cli
    from kvlint.smoke.llamacpp import write_tiny_gguf

    write_tiny_gguf(with_layers(4), tmp_path / "model.gguf")
    (tmp_path / "kvlint.toml").write_text("# defaults\n", encoding="utf-8")
    (tmp_path / "deploy.yaml").write_text(
        "apiVersion: kvlint/v1\nkind: Deployment\nmetadata: {name: q8-cpu}\n"
        f'engine: {{name: llama.cpp, version: {VENDORED_BUILD}, flash_attention: "on", build: {{backend: cpu}}}}\n'
        "hardware: {memory: 64GiB}\nmodel: {name: local/tiny, config: model.gguf}\n"
        "kv_cache: {dtype: q8_0}\nserving: {context_size: 30000, max_num_seqs: 1}\n",
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["smoke", "--format", "json", "deploy.yaml"])
    document = json.loads(result.stdout)
    deployment = document["deployments"][0]
    if deployment["prediction"] is None:
        pytest.skip(f"kvlint's side is missing: {deployment['reason']}")
    assert result.exit_code == 0, result.output
    assert deployment["measured"]["kv"]["cells"] == 30208
    # 4 layers x 1024 values x 34/32 B x 30208 cells, for K and for V; llama.cpp logs 2 decimals
    assert deployment["prediction"]["k_bytes"] == 4 * 1024 * 34 // 32 * 30208
    assert deployment["measured"]["kv"]["k_mib"] == round(4 * 1024 * 34 / 32 * 30208 / MIB, 2)
