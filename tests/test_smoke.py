"""CPU tests of `kvlint smoke` (torch reference kernels). Tiny shapes: the whole file runs in seconds."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

_FACTORY = Path(__file__).with_name("smoke_factory.py")
_spec = importlib.util.spec_from_file_location("smoke_factory", _FACTORY)
smoke_factory = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(smoke_factory)  # type: ignore[union-attr]
deployment = smoke_factory.deployment

REPO = Path(__file__).resolve().parents[1]


# --------------------------------------------------------------------------- without torch


def test_importing_smoke_and_cli_does_not_import_torch():
    code = (
        "import sys, importlib.util\n"
        "import kvlint.smoke\n"
        "mods = ['kvlint.smoke']\n"
        "if importlib.util.find_spec('kvlint.cli') is not None:\n"
        "    import kvlint.cli; mods.append('kvlint.cli')\n"
        "assert 'torch' not in sys.modules, mods\n"
        "print('ok', mods)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("ok")


def test_no_torch_exits_3_with_install_hint(monkeypatch):
    import kvlint.smoke as smoke

    monkeypatch.setattr(smoke, "torch_available", lambda: False)
    outcome = smoke.run_smoke([deployment()], device="auto")
    assert outcome.exit_code == 3
    assert "pip install 'kvcache-lint[smoke]'" in outcome.text
    assert "passed" not in outcome.text.lower()
    js = smoke.run_smoke([deployment()], device="auto", fmt="json")
    assert js.exit_code == 3 and json.loads(js.text)["summary"]["verdict"] == "not-run"


def test_usage_errors_exit_2():
    from kvlint.smoke import run_smoke

    assert run_smoke([deployment()], device="tpu").exit_code == 2
    assert run_smoke([deployment()], fmt="yaml").exit_code == 2
    assert run_smoke([deployment()], layers=0).exit_code == 2


# --------------------------------------------------------------------------- with torch

torch = pytest.importorskip("torch")

from kvlint.smoke import run_smoke  # noqa: E402
from kvlint.smoke import runner as smoke_runner  # noqa: E402
from kvlint.smoke.device import DeviceInfo, kernel_plan  # noqa: E402
from kvlint.smoke.formats import FORMATS  # noqa: E402
from kvlint.smoke.paged import PagedKVCache, paged_decode_attention, reference_attention, scattered_block_table  # noqa: E402
from kvlint.smoke.runner import SmokeSettings, break_even, make_inputs  # noqa: E402
from kvlint.smoke.tolerances import TOLERANCES  # noqa: E402

FAST = SmokeSettings(tokens=80, batch=2, itl_contexts=(32, 64, 96), itl_repeats=1)

DEPLOYMENT_FORMATS = [
    "bf16",
    "fp16",
    "fp8_e4m3",
    "fp8_e4m3fnuz",
    "fp8_e5m2",
    "int8",
    "fp8_per_token_head",
    "int8_per_token_head",
    "int4_per_token_head",
    "nvfp4",
    "trtllm_nvfp4",
    "sglang_fp4",
    "sglang_nvfp4",
    "sglang_mxfp8",
]


def _json(outcome):
    return json.loads(outcome.text)


def _groups(outcome):
    doc = _json(outcome)
    return [g for d in doc["deployments"] for g in d["groups"]]


@pytest.mark.parametrize("fmt", DEPLOYMENT_FORMATS)
def test_every_format_passes_on_cpu(fmt):
    dtype = "float16" if fmt == "fp16" else "bfloat16"
    outcome = run_smoke([deployment(fmt, model_dtype=dtype)], device="cpu", fmt="json", settings=FAST)
    assert outcome.exit_code == 0, outcome.text
    (group,) = _groups(outcome)
    assert group["status"] == "passed"
    assert group["bytes_per_block"]["measured"] == group["bytes_per_block"]["predicted"] > 0
    assert group["bytes_per_block"]["match"] is True
    assert group["storage"]["held_dtype"] == str(FORMATS[fmt].storage_dtype).replace("torch.", "")
    err, tol = group["error"], group["error"]["tolerance"]
    assert err["layers_checked"] == 2
    assert 0 <= err["max_rel"] <= tol["max_rel"] and 0 <= err["mean_rel"] <= tol["mean_rel"]
    assert group["kernel"] == "torch-reference"
    assert group["timing"]["contexts"] == [32, 64, 96] and len(group["timing"]["bf16_ms"]) == 3
    assert group["fallbacks"] == []


@pytest.mark.parametrize("granularity,source", [("per-tensor", "unit"), ("per-tensor", "checkpoint"), ("per-head", "checkpoint"), ("per-head", "unit")])
@pytest.mark.parametrize("fmt", ["fp8_e4m3", "fp8_e5m2"])
def test_static_fp8_scale_layouts(fmt, granularity, source):
    outcome = run_smoke([deployment(fmt, granularity=granularity, source=source)], device="cpu", fmt="json", settings=FAST)
    assert outcome.exit_code == 0, outcome.text


def test_uncalibrated_int8_fails_the_error_check():
    """INT8 with a unit scale rounds every Gaussian value to an integer: the smoke test must say so."""
    outcome = run_smoke([deployment("int8", source="unit")], device="cpu", fmt="json", settings=FAST)
    assert outcome.exit_code == 1
    (group,) = _groups(outcome)
    assert any("attention error" in f for f in group["failures"])


def test_measured_bytes_follow_vllm_per_token_head_formula():
    # vLLM TRITON_ATTN: 2 * Hkv * (D_data + 4) bytes per token per layer (triton_attn.py L318-345 at v0.25.1).
    hkv, d, bs, layers = 2, 64, 16, 2
    expected = {
        "fp8_per_token_head": 2 * hkv * (d + 4),
        "int8_per_token_head": 2 * hkv * (d + 4),
        "int4_per_token_head": 2 * hkv * (d // 2 + 4),
        "nvfp4": 2 * hkv * (d // 2 + d // 16),
        "fp8_e4m3": 2 * hkv * d,
        "bf16": 2 * hkv * d * 2,
        # SGLang mxfp8: Hkv*(D+Dv) E4M3 bytes + that // 32 UE8M0 bytes (pool_configurator.py v0.5.23 L526-529)
        "sglang_mxfp8": 2 * hkv * d + (2 * hkv * d) // 32,
    }
    for fmt, per_token in expected.items():
        (group,) = _groups(run_smoke([deployment(fmt, num_layers=layers)], device="cpu", fmt="json", settings=FAST))
        assert group["bytes_per_block"]["measured"] == layers * bs * per_token, fmt


def test_per_token_head_cell_byte_layout():
    """Cell = [K data | K fp32 scale] at index 0 and [V data | V fp32 scale] at index 1."""
    fmt = FORMATS["fp8_per_token_head"]
    cache = PagedKVCache.allocate(fmt, num_blocks=3, block_size=4, num_kv_heads=2, head_dim=16, device=torch.device("cpu"))
    assert tuple(cache.data.shape) == (3, 2, 4, 2, 16 + 4) and cache.data.dtype == torch.uint8
    k = torch.zeros(1, 2, 16)
    k[0, 0, 3] = 8.96  # amax of head 0 -> scale 8.96 / 448 = 0.02
    k[0, 1, 0] = -448.0
    v = torch.ones(1, 2, 16)
    cache.write(k, v, torch.tensor([2]), torch.tensor([1]))
    cell_k = cache.data[2, 0, 1]  # (H, C)
    scale_k = cell_k[:, 16:].contiguous().view(torch.float32).flatten()
    assert torch.allclose(scale_k, torch.tensor([8.96 / 448, 1.0]))
    assert cell_k[0, 3].view(torch.float8_e4m3fn).float().item() == 448.0
    scale_v = cache.data[2, 1, 1][:, 16:].contiguous().view(torch.float32).flatten()
    assert torch.allclose(scale_v, torch.tensor([1 / 448, 1 / 448]))
    assert int(cache.data[[0, 1]].count_nonzero()) == 0  # nothing outside the written slot


def test_int4_packing_low_nibble_first():
    fmt = FORMATS["int4_per_token_head"]
    x = torch.tensor([[[7.0, -7.0, 0.0, 3.0]]])
    cells = fmt.encode(x)
    assert cells.shape[-1] == 2 + 4
    assert cells[0, 0, 0].item() == (7 + 8) | ((-7 + 8) << 4)
    assert torch.allclose(fmt.decode(cells, 4), x)


def test_nvfp4_roundtrip_exact_on_grid():
    fmt = FORMATS["nvfp4"]
    grid = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0] * 2).view(1, 1, 16)
    x = torch.cat([grid, -grid], dim=-1)  # D = 32: two blocks
    g = fmt.calibrate(x, None, None)
    cells = fmt.encode(x, g)
    assert cells.shape[-1] == 16 + 2
    assert torch.allclose(fmt.decode(cells, 32, g), x, rtol=1e-3, atol=1e-6)


def test_sglang_mxfp8_cell_matches_sglang_quantizer():
    """SGLang's MXFP8 write (python/sglang/kernels/ops/kvcache/mxfp8_quant_store_kv.py L45-50,
    v0.5.23): biased exponent clamp(ceil(log2(amax / 448)) + 127, 0, 254) per 32 values, E4M3
    values saturated at +-448; the pool keeps D E4M3 bytes and D/32 UE8M0 bytes per head
    (memory_pool.py MHATokenToKVPoolMXFP8, k_sf_dim = head_dim // 32)."""
    fmt = FORMATS["sglang_mxfp8"]
    x = torch.zeros(1, 1, 64)
    x[0, 0, 0] = 896.0  # block 0: amax 896 -> log2(2) = 1 -> biased 128, scale 2
    x[0, 0, 1] = 3.0  # 3 / 2 = 1.5, exact in E4M3
    x[0, 0, 32] = 0.4375  # block 1: amax 0.4375 -> ceil(log2(0.4375 / 448)) = -10 -> biased 117
    cells = fmt.encode(x)
    assert cells.shape[-1] == 64 + 2 and cells.dtype == torch.uint8
    assert cells[0, 0, 64].item() == 128 and cells[0, 0, 65].item() == 117
    assert cells[0, 0, 0].view(torch.float8_e4m3fn).float().item() == 448.0
    assert cells[0, 0, 1].view(torch.float8_e4m3fn).float().item() == 1.5
    assert cells[0, 0, 32].view(torch.float8_e4m3fn).float().item() == 0.4375 * 1024
    assert torch.equal(fmt.decode(cells, 64), x)
    with pytest.raises(Exception, match="not a multiple"):
        fmt.cell_width(48)


@pytest.mark.parametrize("fmt", sorted(FORMATS))
@pytest.mark.parametrize("kind,window", [("full", None), ("sliding", 24), ("chunked", 32)])
def test_kernel_level_every_format_and_window(fmt, kind, window):
    """Paged write + decode for every format (including E5M2 with per-token-head scales), GQA 4:1."""
    f = FORMATS[fmt]
    gen = torch.Generator().manual_seed(3)
    lengths = [70, 41]
    k, v, q = make_inputs(2, 70, 8, 2, 32, gen, torch.device("cpu"))
    cache = PagedKVCache.allocate(f, 20, 8, 2, 32, torch.device("cpu"))
    written_k = torch.cat([k[0, :70], k[1, :41]])
    written_v = torch.cat([v[0, :70], v[1, :41]])
    cache.k_scale = f.calibrate(written_k, "per-head", "checkpoint")
    cache.v_scale = f.calibrate(written_v, "per-head", "checkpoint")
    table = scattered_block_table(lengths, 8, 20, gen)
    cache.write_sequences(k, v, table, lengths)
    lens = torch.tensor(lengths)
    out = paged_decode_attention(cache, q, table, lens, kind, window)
    ref = reference_attention(q, k, v, lens, kind, window).float()
    err = (out - ref).abs()
    tol = TOLERANCES[fmt]
    assert (err.max() / ref.abs().max()).item() <= tol.max_rel
    assert (err.mean() / ref.abs().mean()).item() <= tol.mean_rel


def test_window_groups_and_skipped_layers():
    d = deployment("fp8_e4m3", layer_kinds=["sliding", "full", "sliding", "full"], skipped=[0, 2], granularity="per-head")
    outcome = run_smoke([d], device="cpu", fmt="json", settings=FAST)
    assert outcome.exit_code == 0, outcome.text
    groups = {g["group"]: g for g in _groups(outcome)}
    assert set(groups) == {"sliding(48)/bf16/skipped", "full/fp8_e4m3"}
    assert groups["sliding(48)/bf16/skipped"]["storage"]["held_dtype"] == "bfloat16"
    assert groups["full/fp8_e4m3"]["storage"]["held_dtype"] == "uint8"
    # vLLM >= 0.25 raises the quantized layers' block size beside BF16 skip layers; the smoke
    # test allocates what the capacity stage plans.
    assert groups["full/fp8_e4m3"]["bytes_per_block"]["block_size"] == 32


def test_tensor_parallel_builds_one_gpu_shard():
    outcome = run_smoke([deployment("int8_per_token_head", num_kv_heads=2, tensor_parallel=2)], device="cpu", fmt="json", settings=FAST)
    assert outcome.exit_code == 0, outcome.text
    (group,) = _groups(outcome)
    assert group["bytes_per_block"]["measured"] == 2 * 16 * 2 * 1 * (64 + 4)


def test_layers_option_limits_attention_checks_not_allocation():
    d = deployment("fp8_per_token_head", num_layers=4)
    settings = SmokeSettings(layers=1, tokens=48, batch=1, itl_contexts=(16, 32), itl_repeats=1)
    (group,) = _groups(run_smoke([d], device="cpu", fmt="json", settings=settings))
    assert group["error"]["layers_checked"] == 1
    assert group["bytes_per_block"]["measured"] == 4 * 16 * 2 * 2 * (64 + 4)


def test_misdeclared_prediction_without_scales_fails(monkeypatch):
    """A capacity prediction that forgot the per-token-head scales must fail the smoke test."""
    from kvlint.capacity import layout

    real = layout.format_token_bytes

    def without_scales(fmt, layer, kv_heads):
        tb = real(fmt, layer, kv_heads)
        return layout.TokenBytes(tb.payload, 0)

    monkeypatch.setattr(layout, "format_token_bytes", without_scales)
    outcome = run_smoke([deployment("fp8_per_token_head")], device="cpu", settings=FAST)
    assert outcome.exit_code == 1
    assert "bytes per block mismatch" in outcome.text
    assert "FAILED" in outcome.text
    (group,) = _groups(run_smoke([deployment("fp8_per_token_head")], device="cpu", fmt="json", settings=FAST))
    assert group["bytes_per_block"]["match"] is False
    assert group["bytes_per_block"]["measured"] - group["bytes_per_block"]["predicted"] == 2 * 16 * 2 * 2 * 4


def test_cache_stored_wider_than_planned_fails(monkeypatch):
    real = PagedKVCache.allocate.__func__

    def wide(cls, fmt, num_blocks, block_size, num_kv_heads, head_dim, device):
        return real(cls, FORMATS["bf16"], num_blocks, block_size, num_kv_heads, head_dim, device)

    monkeypatch.setattr(PagedKVCache, "allocate", classmethod(wide))
    outcome = run_smoke([deployment("fp8_e4m3")], device="cpu", fmt="json", settings=FAST)
    assert outcome.exit_code == 1
    (group,) = _groups(outcome)
    assert any("stored wider than planned" in f for f in group["fallbacks"])


def test_kernel_reading_the_wrong_bytes_fails(monkeypatch):
    """A kernel that ignores the inline scales (reads data as if scale were 1) is caught."""
    def scale_blind(cache, q, table, lens, kind, window):
        from kvlint.smoke.paged import attention_mask, decode_attention

        cells = cache.data[table]
        b, mb, _, bs, h, c = cells.shape
        k = cells[:, :, 0, :, :, : cache.head_dim].reshape(b, mb * bs, h, -1).view(torch.float8_e4m3fn).float()
        v = cells[:, :, 1, :, :, : cache.head_dim].reshape(b, mb * bs, h, -1).view(torch.float8_e4m3fn).float()
        return decode_attention(q, k, v, attention_mask(lens, k.shape[1], kind, window))

    monkeypatch.setattr(smoke_runner, "paged_decode_attention", scale_blind)
    outcome = run_smoke([deployment("fp8_per_token_head")], device="cpu", fmt="json", settings=FAST)
    assert outcome.exit_code == 1
    (group,) = _groups(outcome)
    assert any("attention error vs BF16 above tolerance" in f for f in group["failures"])


def test_planned_kernel_unavailable_on_device():
    def gpu(cap):
        return DeviceInfo(torch.device("cpu"), "fake", cap, torch.__version__, "3.0")

    class Cuda(DeviceInfo):
        @property
        def is_cuda(self):
            return True

    a100 = Cuda(torch.device("cpu"), "A100", (8, 0), torch.__version__, "3.0")
    h100 = Cuda(torch.device("cpu"), "H100", (9, 0), torch.__version__, "3.0")
    b200 = Cuda(torch.device("cpu"), "B200", (10, 0), torch.__version__, "3.0")
    assert not kernel_plan(a100, "fp8_e4m3", "TRITON_ATTN").native
    assert "SM89" in kernel_plan(a100, "fp8_per_token_head", "TRITON_ATTN").fallback_reasons[0]
    assert kernel_plan(a100, "fp8_e5m2", "TRITON_ATTN").fallback_reasons == []
    assert kernel_plan(h100, "fp8_e4m3", "FLASH_ATTN").fallback_reasons == []
    assert kernel_plan(h100, "nvfp4", "FLASHINFER").fallback_reasons  # FP4 below SM100
    assert kernel_plan(b200, "nvfp4", "FLASHINFER").fallback_reasons == []
    assert not kernel_plan(b200, "nvfp4", "FLASHINFER").native  # emulated: reported not native
    cpu = kernel_plan(gpu(None), "nvfp4", None)
    assert not cpu.native and any("not native" in n for n in cpu.notes) and not cpu.fallback_reasons


def test_fallback_makes_the_verdict_fail(monkeypatch):
    from kvlint.smoke.device import KernelPlan

    monkeypatch.setattr(smoke_runner, "kernel_plan", lambda info, fmt, backend: KernelPlan(False, ["Triton FP8 E4M3 (fp8e4nv) needs SM89+; this GPU is SM80"]))
    outcome = run_smoke([deployment("fp8_per_token_head")], device="cpu", settings=FAST)
    assert outcome.exit_code == 1
    assert "needs SM89+" in outcome.text


def test_engine_selecting_another_backend_fails(monkeypatch):
    monkeypatch.setattr(
        smoke_runner, "probe_vllm_backend", lambda d, g: {"engine": "vllm", "importable": True, "probed": True, "backend": "FLASHINFER", "version": "0.33.0"}
    )
    outcome = run_smoke([deployment("fp8_e5m2", backend="FLASH_ATTN")], device="cpu", fmt="json", settings=FAST)
    assert outcome.exit_code == 1
    (group,) = _groups(outcome)
    assert any("selects FLASHINFER" in f for f in group["fallbacks"])


def test_engine_probe_failure_is_not_a_failure(monkeypatch):
    monkeypatch.setattr(smoke_runner, "probe_vllm_backend", lambda d, g: {"engine": "vllm", "importable": True, "probed": False, "error": "boom"})
    assert run_smoke([deployment("fp8_per_token_head")], device="cpu", settings=FAST).exit_code == 0


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_device_cuda_without_gpu_exits_3():
    outcome = run_smoke([deployment()], device="cuda")
    assert outcome.exit_code == 3
    assert "no CUDA device" in outcome.text and "passed" not in outcome.text.lower()
    js = json.loads(run_smoke([deployment()], device="cuda", fmt="json").text)
    assert js["summary"]["verdict"] == "not-run"


def test_unbuildable_layouts_are_not_run_never_passed():
    odd = deployment("nvfp4", head_dim=40)  # not a multiple of 16
    outcome = run_smoke([odd], device="cpu", settings=FAST)
    assert outcome.exit_code == 3 and "PASSED" not in outcome.text
    mixed = run_smoke([odd, deployment("bf16")], device="cpu", fmt="json", settings=FAST)
    assert mixed.exit_code == 3
    assert _json(mixed)["summary"] == {"verdict": "not-run", "passed": 1, "failed": 0, "skipped": 1, "message": "some layer groups could not be built here; not a pass"}


def test_no_deployments_is_not_a_pass():
    assert run_smoke([], device="cpu", settings=FAST).exit_code == 3


def test_text_report_is_a_table():
    outcome = run_smoke([deployment("fp8_per_token_head"), deployment("bf16")], device="cpu", settings=FAST)
    assert outcome.exit_code == 0
    lines = outcome.text.splitlines()
    assert any(line.strip().startswith("group") and "bytes/block" in line for line in lines)
    assert any("full/fp8_per_token_head" in line and "8704 = 8704" in line for line in lines)
    assert lines[-1].startswith("smoke verdict PASSED")


def test_internal_error_exits_2_without_traceback(monkeypatch):
    def boom(*a, **k):
        raise RuntimeError("kaput")

    monkeypatch.setattr(smoke_runner, "run_deployment", boom)
    outcome = run_smoke([deployment()], device="cpu")
    assert outcome.exit_code == 2 and "kaput" in outcome.text and "Traceback" not in outcome.text


def test_break_even_matches_domain_worked_example():
    # vLLM FP8 KV-cache blog (2026-04-22), Llama-3.1-8B on vLLM 0.19.1: 0.14 ms / 2.0e-05 ms per token = 7,000.
    bf16 = {"slope_ms_per_token": 4.37e-05, "intercept_ms": 6.44}
    fp8 = {"slope_ms_per_token": 2.37e-05, "intercept_ms": 6.58}
    assert break_even(fp8, bf16) == pytest.approx(7000, rel=1e-6)
    assert break_even(bf16, fp8) is None
