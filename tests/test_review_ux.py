"""Findings from a serving-team review of kvlint's messages (each test pins one fix).

- KV501 no longer fires on fp8_e5m2: its remediation (calibrate, set model.kv_scales) would walk
  straight into KV308 (vLLM refuses e5m2 with checkpoint KV scales), and vLLM prints no unit-scale
  warning for e5m2 (vllm/model_executor/layers/quantization/kv_cache.py, v0.33.0).
- KV302 on ROCm names the backend the manifest pinned: FLASH_ATTN there is ROCM_AITER_FA, which
  has no per-head scales (rocm_aiter_fa.py get_name() is "FLASH_ATTN"), and the help says no ROCm backend has them.
- KV301/KV305 say when `attention_backend: auto` picked the backend (SGLang picks by GPU without
  checking the dtype: server_args.py _handle_attention_backend_compatibility), instead of reading as if the manifest had pinned it.
- KV605's help covers block-scaled FP4, whose 1/16 scales are part of the format (docs/scales.md).
"""

from __future__ import annotations

from typing import Dict, List

from conftest import check_json, invoke


def _deployment(engine: str, version: str, gpu: str, dtype: str, *, model: str,
                backend: str = "", kv_scales: str = "", scales: str = "") -> str:
    lines = [
        "apiVersion: kvlint/v1", "kind: Deployment", "metadata:", "  name: review-case",
        "engine:", f"  name: {engine}", f'  version: "{version}"',
    ]
    if backend:
        lines.append(f"  attention_backend: {backend}")
    lines += ["hardware:", f"  gpu: {gpu}", "model:", f"  name: {model}"]
    if kv_scales:
        lines.append(f"  kv_scales: {kv_scales}")
    lines += ["kv_cache:", f"  dtype: {dtype}"]
    if scales:
        lines.append(f"  scales: {scales}")
    lines += ["memory:", "  kv_cache_memory: 20GiB"]
    return "\n".join(lines) + "\n"


def _diags(write, text: str) -> List[Dict]:
    write("deploy.yaml", text)
    return check_json("deploy.yaml")["diagnostics"]


def _by_code(diags: List[Dict]) -> Dict[str, Dict]:
    return {d["code"]: d for d in diags}


def test_kv501_skips_e5m2_which_cannot_take_calibrated_scales(write) -> None:
    e5m2 = _deployment("vllm", "0.33.0", "A100-80GB", "fp8_e5m2", model="meta-llama/Llama-3.1-8B-Instruct")
    assert "KV501" not in _by_code(_diags(write, e5m2))
    # following KV501's old advice (checkpoint scales) is exactly what KV308 rejects
    with_scales = _deployment("vllm", "0.33.0", "A100-80GB", "fp8_e5m2",
                              model="meta-llama/Llama-3.1-8B-Instruct", kv_scales="per-tensor")
    assert "KV308" in _by_code(_diags(write, with_scales))


def test_kv501_still_reports_unit_scales_on_e4m3(write) -> None:
    for dtype in ("fp8", "fp8_e4m3"):
        e4m3 = _deployment("vllm", "0.33.0", "H100-SXM-80GB", dtype, model="meta-llama/Llama-3.1-8B-Instruct")
        assert "KV501" in _by_code(_diags(write, e4m3)), dtype
    # MI300X stores e4m3fnuz: still an E4M3 format on unit scales
    fnuz = _deployment("vllm", "0.33.0", "MI300X", "fp8_e4m3", model="mistralai/Mixtral-8x7B-v0.1")
    assert "KV501" in _by_code(_diags(write, fnuz))


def test_kv302_on_rocm_explains_that_flash_attn_is_aiter_fa(write) -> None:
    text = _deployment("vllm", "0.33.0", "MI300X", "fp8_e4m3", model="mistralai/Mixtral-8x7B-v0.1",
                       backend="FLASH_ATTN", kv_scales="per-head",
                       scales="{granularity: per-head, source: checkpoint}")
    finding = _by_code(_diags(write, text))["KV302"]
    assert "ROCM_AITER_FA (what FLASH_ATTN selects on rocm)" in finding["message"]
    assert finding["pointer"] == "/kv_cache/scales/granularity"
    # no ROCm backend takes per-head scales, so the remedy (checked by tests/test_remedies.py) is
    # per-tensor scales on the same backend
    assert "no catalogued vLLM release accepts this on MI300X" in finding["message"]
    assert finding["message"].endswith("use per-tensor KV scales (a per-tensor calibrated checkpoint), which FLASH_ATTN accepts here")


def test_kv302_on_hopper_message_unchanged(write) -> None:
    text = _deployment("vllm", "0.19.1", "H100-SXM-80GB", "fp8", model="meta-llama/Llama-3.1-8B-Instruct",
                       backend="TRITON_ATTN", kv_scales="per-head",
                       scales="{granularity: per-head, source: checkpoint}")
    message = _by_code(_diags(write, text))["KV302"]["message"]
    assert message.startswith("vLLM 0.19.1 TRITON_ATTN on sm90 does not take static per-head KV scales")
    assert "selects on" not in message


def test_kv301_says_auto_picked_the_sglang_backend(write) -> None:
    auto = _deployment("sglang", "0.5.9", "H100-SXM-80GB", "fp4_e2m1", model="Qwen/Qwen3-32B")
    message = _by_code(_diags(write, auto))["KV301"]["message"]
    assert message.startswith("SGLang 0.5.9 fa3 on sm90 accepts fp8_e4m3 and fp8_e5m2, not fp4_e2m1")
    assert "not fp4_e2m1 (the backend attention_backend auto selects here); " in message
    pinned = _deployment("sglang", "0.5.9", "H100-SXM-80GB", "fp4_e2m1", model="Qwen/Qwen3-32B", backend="fa3")
    assert "attention_backend auto" not in _by_code(_diags(write, pinned))["KV301"]["message"]


def test_kv305_says_auto_picked_triton(write) -> None:
    # Phi-3 (head 96) on an A10G: FLASH_ATTN runs FA2 (no FP8), FlashInfer lacks head 96, so auto
    # lands on TRITON_ATTN, which raises for FP8 below SM89 (triton_attn.py L510-524, cuda.py priority lists).
    auto = _deployment("vllm", "0.33.0", "A10G", "fp8", model="microsoft/Phi-3-mini-4k-instruct")
    found = _by_code(_diags(write, auto))
    assert found["KV307"]["severity"] == "warning"
    assert "(the backend attention_backend auto selects here); " in found["KV305"]["message"]
    pinned = _deployment("vllm", "0.33.0", "A10G", "fp8", model="microsoft/Phi-3-mini-4k-instruct",
                         backend="TRITON_ATTN")
    assert "attention_backend auto" not in _by_code(_diags(write, pinned))["KV305"]["message"]


def test_kv605_help_covers_block_scaled_fp4() -> None:
    text = invoke(["rule", "KV605"]).output
    assert "NVFP4" in text and "3.56x" in text
    assert "part of the format" in text
