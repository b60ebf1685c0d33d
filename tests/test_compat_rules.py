"""Compatibility outcomes end to end: manifest in, the engine's real behaviour out.

Each case is a fact from the released vLLM source read while building the catalog
(rules/catalog/engines/*.yaml cite the file and line; the comments name the code).
The manifest goes through the whole `kvlint check` pipeline; the test asserts the rule code and
the concrete facts the message must name (backend, release, GPU), so a wrong prediction fails.
"""

from __future__ import annotations

import json
from typing import Dict, List, Optional

import pytest
from conftest import CliRunner

from kvlint.cli import main


def manifest(
    version: str = "0.33.0",
    gpu: str = "H100-SXM-80GB",
    dtype: str = "fp8",
    backend: Optional[str] = None,
    model: str = "meta-llama/Llama-3.1-8B-Instruct",
    kv_scales: str = "per-tensor",
    engine: str = "vllm",
    extra: str = "",
) -> str:
    backend_line = f"\n  attention_backend: {backend}" if backend else ""
    return (
        "apiVersion: kvlint/v1\nkind: Deployment\nmetadata:\n  name: case\n"
        f"engine:\n  name: {engine}\n  version: \"{version}\"{backend_line}\n"
        f"hardware:\n  gpu: {gpu}\n"
        f"model:\n  name: {model}\n  kv_scales: {kv_scales}\n"
        f"kv_cache:\n  dtype: {dtype}\n"
        "memory:\n  kv_cache_memory: 30GiB\n"
        "targets:\n  max_scale_overhead: 0.2\n" + extra
    )


def diagnostics(text: str, tmp_path) -> List[Dict]:
    path = tmp_path / "deploy.yaml"
    path.write_text(text)
    result = CliRunner().invoke(main, ["check", "--output-format", "json", str(path)])
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)["diagnostics"]


def codes(diags: List[Dict]) -> Dict[str, str]:
    return {d["code"]: d["message"] for d in diags}


CASES = [
    # vllm/platforms/cuda.py priority lists: from 0.22 FLASH_ATTN rejects e5m2 at validation, so auto moves to FLASHINFER.
    pytest.param(manifest("0.25.1", dtype="fp8_e5m2", kv_scales="none"), "KV307",
                 ["FLASH_ATTN", "FLASHINFER", "0.25.1"], id="select-h100-e5m2-auto-0.25-flashinfer"),
    pytest.param(manifest("0.33.0", dtype="fp8_e5m2", kv_scales="none"), "KV307",
                 ["FLASHINFER"], id="select-h100-e5m2-auto-0.33-flashinfer"),
    # triton_attn.py: per-token-head dtypes only run on TRITON_ATTN; auto lands there.
    pytest.param(manifest("0.33.0", dtype="int8_per_token_head", kv_scales="none"), "KV307",
                 ["TRITON_ATTN"], id="select-h100-int8pth-auto-triton"),
    # Released 0.19.1 source (flash_attn.py supports_kv_cache_dtype accepts any fp8*, then
    # get_fp8_dtype_for_flashattn raises): auto keeps FLASH_ATTN and the engine crashes.
    pytest.param(manifest("0.19.1", dtype="fp8_e5m2", kv_scales="none"), "KV301",
                 ["FLASH_ATTN", "fp8_e5m2"], id="0.19.1-h100-e5m2-auto-crashes-in-flash-attn"),
    # fa_utils.py get_flash_attn_version: A100 runs FA2 (no FP8) so FLASH_ATTN is skipped.
    pytest.param(manifest("0.33.0", gpu="A100-80GB", kv_scales="none"), "KV307",
                 ["FLASH_ATTN", "A100"], id="select-a100-fp8-auto-moves"),
    # fa_utils.py flash_attn_supports_kv_cache_dtype: pinned FLASH_ATTN never takes e5m2.
    pytest.param(manifest("0.33.0", dtype="fp8_e5m2", backend="FLASH_ATTN", kv_scales="none"), "KV301",
                 ["FLASH_ATTN", "fp8_e5m2"], id="flash-attn-e5m2-pinned"),
    # fa_utils.py: FLASH_ATTN FP8 needs FA3 on SM90; L40S is SM89.
    pytest.param(manifest("0.33.0", gpu="L40S-48GB", backend="FLASH_ATTN", kv_scales="none"), "KV305",
                 ["FLASH_ATTN"], id="flash-attn-fp8-sm89"),
    # flash_attn.py supports_per_head_quant_scales: static per-head scales need FLASH_ATTN with FA >= 3.
    pytest.param(manifest("0.33.0", backend="TRITON_ATTN", kv_scales="per-head",
                          extra="").replace("  dtype: fp8\n", "  dtype: fp8\n  scales: {granularity: per-head, source: checkpoint}\n"),
                 "KV302", ["TRITON_ATTN"], id="per-head-on-triton"),
    pytest.param(manifest("0.33.0", gpu="A100-80GB", kv_scales="per-head").replace(
        "  dtype: fp8\n", "  dtype: fp8\n  scales: {granularity: per-head, source: checkpoint}\n"),
                 "KV302", ["No valid attention backend"], id="per-head-auto-a100-no-backend"),
    # per-token-head pinned elsewhere (only triton_attn.py lists the dtypes).
    pytest.param(manifest("0.33.0", dtype="fp8_per_token_head", backend="FLASHINFER", kv_scales="none"), "KV303",
                 ["FLASHINFER", "TRITON_ATTN"], id="per-token-head-on-flashinfer"),
    # vllm/config/cache.py CacheDType: per-token-head dtypes arrived in 0.20, int4 in 0.25.
    pytest.param(manifest("0.19.1", dtype="fp8_per_token_head", backend="TRITON_ATTN", kv_scales="none"), "KV205",
                 ["0.19.1", "fp8_per_token_head"], id="release-pth-before-0.20"),
    pytest.param(manifest("0.24.0", dtype="int4_per_token_head", backend="TRITON_ATTN", kv_scales="none"), "KV205",
                 ["int4_per_token_head"], id="release-int4-pth-before-0.25"),
    # vllm/envs.py: VLLM_ATTENTION_BACKEND ignored from 0.15.
    pytest.param(manifest("0.15.0", extra="").replace('  version: "0.15.0"', '  version: "0.15.0"\n  env: {VLLM_ATTENTION_BACKEND: FLASHINFER}'),
                 "KV313", ["VLLM_ATTENTION_BACKEND", "0.15.0"], id="release-env-backend-ignored-0.15"),
    # vllm/config/cache.py kv_cache_dtype_skip_layers (PR #33695): skip layers need 0.19.
    pytest.param(manifest("0.18.0").replace("  dtype: fp8\n", "  dtype: fp8\n  skip_layers: [0]\n"), "KV312",
                 ["0.18.0"], id="release-skip-layers-before-0.19"),
    # vllm/config/cache.py: calculate_kv_scales removed in 0.28.
    pytest.param(manifest("0.28.0", kv_scales="none").replace("  dtype: fp8\n", "  dtype: fp8\n  scales: {source: warmup}\n"),
                 "KV503", ["0.28.0"], id="scales-warmup-removed-0.28"),
    # attention.py L205-220 (v0.33.0): e5m2 with checkpoint scales raises.
    pytest.param(manifest("0.33.0", dtype="fp8_e5m2", backend="FLASHINFER"), "KV308",
                 ["fp8_e5m2"], id="scales-e5m2-checkpoint-scales"),
    # attention.py L299-320 (no validation): out-of-range and unknown skip entries are ignored silently.
    pytest.param(manifest("0.33.0", kv_scales="none").replace("  dtype: fp8\n", "  dtype: fp8\n  skip_layers: [96]\n"),
                 "KV401", ["96", "32 layers"], id="skip-out-of-range"),
    pytest.param(manifest("0.33.0", kv_scales="none").replace("  dtype: fp8\n", "  dtype: fp8\n  skip_layers: [full_attention]\n"),
                 "KV402", ["full_attention"], id="skip-unrecognized"),
    # attention.py L288: auto becomes fp8 with a checkpoint KV scheme.
    pytest.param(manifest("0.33.0", dtype="auto"), "KV314", ["fp8"], id="auto-is-fp8"),
    # sglang kv_cache.py, TensorRT-LLM gpt-attention.md: per-tensor scales only.
    pytest.param(manifest("1.2.1", engine="tensorrt-llm", kv_scales="per-head").replace(
        "  dtype: fp8\n", "  dtype: fp8\n  scales: {granularity: per-head, source: checkpoint}\n"),
                 "KV304", ["tensorrt-llm", "per-head"], id="engines-trtllm-per-tensor-only"),
    # FP4 needs Blackwell on vLLM 0.25 (FlashInfer takes nvfp4 only on the SM100 family there;
    # from 0.32 its FA2 path also takes plain nvfp4 elsewhere: flashinfer.py v0.32.0 L529-537).
    pytest.param(manifest("0.25.1", dtype="nvfp4", backend="FLASHINFER", kv_scales="none"), "KV306",
                 ["H100"], id="fp4-on-hopper"),
    # gpt-oss sinks: FLEX_ATTENTION has none.
    pytest.param(manifest("0.33.0", model="openai/gpt-oss-20b", dtype="auto", backend="FLEX_ATTENTION", kv_scales="none"),
                 "KV315", ["FLEX_ATTENTION"], id="sinks-on-flex"),
]


@pytest.mark.parametrize("text, code, must_name", CASES)
def test_compatibility_outcome(text: str, code: str, must_name: List[str], tmp_path) -> None:
    found = codes(diagnostics(text, tmp_path))
    assert code in found, f"expected {code}, got {found}"
    for fact in must_name:
        assert fact in found[code], f"{code} message should name {fact!r}: {found[code]}"


def test_pinned_backend_that_accepts_everything_is_clean(tmp_path) -> None:
    text = manifest("0.33.0", dtype="fp8_e5m2", backend="FLASHINFER", kv_scales="none")
    found = codes(diagnostics(text, tmp_path))
    assert not {"KV301", "KV305", "KV307", "KV316"} & set(found), found


def test_env_backend_mapped_with_deprecation_is_not_ignored_on_0_13(tmp_path) -> None:
    # vllm/config/attention.py L83 (v0.14.0): 0.13-0.14 map VLLM_ATTENTION_BACKEND to --attention-backend (it still works).
    text = manifest("0.13.0").replace('  version: "0.13.0"', '  version: "0.13.0"\n  env: {VLLM_ATTENTION_BACKEND: FLASHINFER}')
    assert "KV313" not in codes(diagnostics(text, tmp_path))


def test_unknown_dtype_is_one_finding_not_a_cascade(tmp_path) -> None:
    found = codes(diagnostics(manifest("0.19.1", dtype="int8_per_token_head", kv_scales="none"), tmp_path))
    assert "KV205" in found
    assert "KV316" not in found and "KV307" not in found


def test_finding_points_at_the_offending_value(tmp_path) -> None:
    text = manifest("0.33.0", dtype="fp8_e5m2", backend="FLASH_ATTN", kv_scales="none")
    diag = next(d for d in diagnostics(text, tmp_path) if d["code"] == "KV301")
    line = text.splitlines()[diag["line"] - 1]
    assert line.strip() == "dtype: fp8_e5m2"
    assert line[diag["column"] - 1:].startswith("fp8_e5m2")
    assert diag["pointer"] == "/kv_cache/dtype"


def test_kv303_remedy_is_checked_on_the_gpu(tmp_path) -> None:
    """triton_attn.py (v0.33.0): TRITON_ATTN is the only per-token-head backend, and it raises for FP8 below SM89."""
    hopper = codes(diagnostics(manifest("0.25.1", dtype="fp8_per_token_head", backend="FLASH_ATTN", kv_scales="none"), tmp_path))
    assert hopper["KV303"].endswith("pin TRITON_ATTN")
    ampere = codes(diagnostics(manifest("0.25.1", gpu="A100-80GB", dtype="fp8_per_token_head", backend="FLASH_ATTN",
                                        kv_scales="none"), tmp_path))
    assert "TRITON_ATTN cannot run it here either" in ampere["KV303"] and "SM89" in ampere["KV303"]
    int8 = codes(diagnostics(manifest("0.25.1", gpu="A100-80GB", dtype="int8_per_token_head", backend="FLASH_ATTN",
                                      kv_scales="none"), tmp_path))
    assert int8["KV303"].endswith("pin TRITON_ATTN")
