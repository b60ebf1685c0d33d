"""Parsing llama.cpp's KV log lines (kvlint/smoke/llamacpp.py), without llama.cpp installed.

The lines are llama.cpp's own: the b4747 lines as printed by a real run (the Llama-3.1-8B KV
geometry on the CPU backend, quoted in llama.cpp's log format at
https://github.com/ggml-org/llama.cpp/blob/b4747/src/llama.cpp#L9765), and the b11312 lines
rendered from the exact printf formats of
https://github.com/ggml-org/llama.cpp/blob/b11312/src/llama-kv-cache.cpp (the two
`LLAMA_LOG_INFO` calls after the buffers are allocated), so the parser is tested against the
engine's format, not against itself.
"""

from __future__ import annotations

import pytest

from kvlint.smoke.llamacpp import (
    KVGeometry,
    KVLog,
    LlamaCppCase,
    Measurement,
    Prediction,
    compare,
    parse_kv_log,
)

# b11312 src/llama-kv-cache.cpp, verbatim (Python's % accepts C's %u).
SIZE_FORMAT = "%s: size = %7.2f MiB (%6u cells, %3d layers, %2u/%u seqs), K (%s): %7.2f MiB, V (%s): %7.2f MiB\n"
BUFFER_FORMAT = "%s: %10s KV buffer size = %8.2f MiB\n"


def b11312_log(cells: int, layers: int, seqs: int, streams: int, k_type: str, k: float, v_type: str, v: float) -> str:
    return (
        BUFFER_FORMAT % ("llama_kv_cache", "CPU", k + v)
        + SIZE_FORMAT % ("llama_kv_cache", k + v, cells, layers, seqs, streams, k_type, k, v_type, v)
    )


def test_b11312_lines():
    log = parse_kv_log(b11312_log(11008, 4, 3, 3, "q8_0", 102.5, "f16", 192.0))
    assert (log.cells_per_stream, log.streams, log.cells) == (11008, 3, 33024)
    assert (log.layers, log.seqs, log.k_type, log.v_type) == (4, 3, "q8_0", "f16")
    assert (log.k_mib, log.v_mib, log.total_mib) == (102.5, 192.0, 294.5)
    assert log.buffers_mib == {"CPU": 294.5}


def test_b4747_lines_from_a_real_run():
    text = (
        "llama_kv_cache_init: kv_size = 32768, offload = 1, type_k = 'q8_0', type_v = 'q8_0', n_layer = 32, can_shift = 1\n"
        "llama_kv_cache_init:        CPU KV buffer size =  2176.00 MiB\n"
        "llama_init_from_model: KV self size  = 2176.00 MiB, K (q8_0): 1088.00 MiB, V (q8_0): 1088.00 MiB\n"
    )
    log = parse_kv_log(text)
    assert (log.k_type, log.k_mib, log.v_mib, log.total_mib) == ("q8_0", 1088.0, 1088.0, 2176.0)
    assert log.buffer_total_mib == 2176.0
    assert log.cells is None  # b4747 prints no cell count on the size line


def test_buffers_of_several_devices_are_summed():
    text = BUFFER_FORMAT % ("llama_kv_cache", "CUDA0", 1024.0) + BUFFER_FORMAT % ("llama_kv_cache", "CUDA1", 1152.0)
    assert parse_kv_log(text).buffer_total_mib == 2176.0


def test_a_log_without_kv_lines():
    log = parse_kv_log("llama_init_from_model: quantized V cache requires flash_attn to be enabled\n")
    assert log == KVLog()


def _measured(created: bool, text: str, errors=()) -> Measurement:
    return Measurement(created=created, model_loaded=True, n_ctx=None, n_ctx_seq=None, kv=parse_kv_log(text),
                       errors=tuple(errors), log=text)


def test_compare_exact_to_the_logged_hundredth_of_a_mib():
    measured = _measured(True, b11312_log(32768, 32, 1, 1, "q8_0", 1088.0, "q8_0", 1088.0))
    right = Prediction(starts=True, cells=32768, k_bytes=1088 * 2**20, v_bytes=1088 * 2**20)
    assert all(c.passed for c in compare(measured, right))
    # The naive 1 B per element for q8_0 (no block scales) is caught:
    wrong = Prediction(starts=True, cells=32768, k_bytes=1024 * 2**20, v_bytes=1088 * 2**20)
    assert [c.quantity for c in compare(measured, wrong) if not c.passed] == ["K bytes"]
    assert [c.quantity for c in compare(measured, Prediction(starts=True, cells=32512)) if not c.passed] == ["cells"]


def test_compare_refusal():
    refused = _measured(False, "", ["llama_init_from_model: quantized V cache requires flash_attn to be enabled"])
    checks = compare(refused, Prediction(starts=False, start_error="quantized V cache requires flash_attn to be enabled"))
    assert [(c.quantity, c.passed) for c in checks] == [("context created", True), ("refusal message", True)]
    other_words = compare(refused, Prediction(starts=False, start_error="V cache quantization requires flash_attn"))
    assert [(c.quantity, c.passed, c.gating) for c in other_words] == [("context created", True, True), ("refusal message", False, False)]
    assert not compare(refused, Prediction(starts=True))[0].passed


@pytest.mark.parametrize(
    "case, problem",
    [
        (LlamaCppCase(KVGeometry(2, 8, 128, 128), type_k="q3_K"), "not one llama.cpp accepts"),
        (LlamaCppCase(KVGeometry(2, 8, 128, 128), flash_attn="yes"), "not on, off or auto"),
        (LlamaCppCase(KVGeometry(0, 8, 128, 128)), "at least one layer"),
        (LlamaCppCase(KVGeometry(2, 8, 128, 128), n_ctx=0), "out of the smoke test's range"),
    ],
)
def test_cases_the_smoke_test_will_not_build(case, problem):
    assert any(problem in p for p in case.problems())
