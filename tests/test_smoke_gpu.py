"""CUDA/Triton path of `kvlint smoke`. Marked `gpu`: skipped, with the reason, without a CUDA device.

benchmarks/smoke_gpu.sh runs these on a GPU machine (`pytest -m gpu`).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

_FACTORY = Path(__file__).with_name("smoke_factory.py")
_spec = importlib.util.spec_from_file_location("smoke_factory", _FACTORY)
smoke_factory = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(smoke_factory)  # type: ignore[union-attr]
deployment = smoke_factory.deployment

REPO = Path(__file__).resolve().parents[1]
HAS_CUDA = torch.cuda.is_available()
HAS_TRITON = importlib.util.find_spec("triton") is not None
CAPABILITY = torch.cuda.get_device_capability() if HAS_CUDA else None

needs_cuda = pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA device (torch.cuda.is_available() is False)")
needs_triton = pytest.mark.skipif(not HAS_TRITON, reason="needs Triton (ships with the CUDA wheels of torch)")

TRITON_FORMATS = [
    "bf16",
    "fp8_e4m3",
    "fp8_e5m2",
    "int8",
    "fp8_per_token_head",
    "fp8_e5m2_per_token_head",
    "int8_per_token_head",
    "int4_per_token_head",
]


def _fp8_e4m3_native() -> bool:
    return CAPABILITY is not None and tuple(CAPABILITY) >= (8, 9)


@pytest.mark.gpu
@needs_cuda
@needs_triton
@pytest.mark.parametrize("fmt", TRITON_FORMATS)
@pytest.mark.parametrize("kind,window", [("full", None), ("sliding", 96)])
@pytest.mark.parametrize("granularity", ["per-tensor", "per-head"])
def test_triton_kernel_matches_torch_reference_on_cuda(fmt, kind, window, granularity):
    from kvlint.smoke import triton_kernels
    from kvlint.smoke.formats import FORMATS
    from kvlint.smoke.paged import PagedKVCache, paged_decode_attention, scattered_block_table
    from kvlint.smoke.runner import make_inputs

    if "e4m3" in fmt or fmt == "fp8_per_token_head":
        if not _fp8_e4m3_native():
            pytest.skip(f"FP8 E4M3 in Triton needs SM89+, this GPU is {CAPABILITY}")
    f = FORMATS[fmt]
    dev = torch.device("cuda")
    gen = torch.Generator().manual_seed(1)
    lengths = [300, 177, 33]
    k, v, q = make_inputs(3, 300, 32, 8, 128, gen, dev)
    cache = PagedKVCache.allocate(f, 64, 16, 8, 128, dev)
    written_k = torch.cat([k[b, :n] for b, n in enumerate(lengths)])
    written_v = torch.cat([v[b, :n] for b, n in enumerate(lengths)])
    cache.k_scale = f.calibrate(written_k, granularity, "checkpoint")
    cache.v_scale = f.calibrate(written_v, granularity, "checkpoint")
    table = scattered_block_table(lengths, 16, 64, gen).to(dev)
    cache.write_sequences(k, v, table, lengths)
    lens = torch.tensor(lengths, device=dev)
    expected = paged_decode_attention(cache, q, table, lens, kind, window)
    got = triton_kernels.paged_decode_attention(cache, q, table, lens, kind, window)
    torch.cuda.synchronize()
    assert (got - expected).abs().max().item() <= 2e-3 * expected.abs().max().item()


@pytest.mark.gpu
@needs_cuda
@pytest.mark.parametrize("fmt", ["bf16", "fp8_e4m3", "fp8_per_token_head", "int8_per_token_head", "int4_per_token_head"])
def test_smoke_on_cuda_runs_the_gpu_kernel(fmt):
    from kvlint.smoke import run_smoke
    from kvlint.smoke.runner import SmokeSettings

    settings = SmokeSettings(tokens=256, batch=2, itl_contexts=(256, 1024, 4096), itl_repeats=5)
    d = deployment(fmt, num_layers=2, num_kv_heads=8, num_attention_heads=32, head_dim=128)
    outcome = run_smoke([d], device="cuda", fmt="json", settings=settings)
    doc = json.loads(outcome.text)
    (group,) = doc["deployments"][0]["groups"]
    assert group["bytes_per_block"]["match"] is True
    assert group["kernel"] and group["kernel"] != "torch-reference"
    if fmt.startswith("fp8") and not _fp8_e4m3_native():
        assert outcome.exit_code == 1 and group["fallbacks"], outcome.text
        return
    assert outcome.exit_code == 0, outcome.text
    if HAS_TRITON:
        assert "_paged_decode_kernel" in group["kernel"]
    assert group["timing"]["contexts"] == [256, 1024, 4096]


@pytest.mark.gpu
@needs_cuda
def test_nvfp4_below_sm100_is_a_fallback_and_never_native():
    from kvlint.smoke import run_smoke
    from kvlint.smoke.runner import SmokeSettings

    settings = SmokeSettings(tokens=128, batch=1, itl_contexts=(128, 256), itl_repeats=2)
    outcome = run_smoke([deployment("nvfp4", backend="FLASHINFER")], device="cuda", fmt="json", settings=settings)
    (group,) = json.loads(outcome.text)["deployments"][0]["groups"]
    assert group["native"] is False
    if tuple(CAPABILITY) < (10, 0):
        assert outcome.exit_code == 1 and any("SM100" in f for f in group["fallbacks"])
    else:
        assert outcome.exit_code == 0, outcome.text


@needs_triton
def test_triton_kernel_matches_reference_in_interpreter():
    """Runs the Triton kernel on the CPU through TRITON_INTERPRET=1 (only where Triton is installed)."""
    code = r"""
import torch
from kvlint.smoke import triton_kernels as tk
from kvlint.smoke.formats import FORMATS
from kvlint.smoke.paged import PagedKVCache, paged_decode_attention, scattered_block_table
from kvlint.smoke.runner import make_inputs
gen = torch.Generator().manual_seed(0)
cpu = torch.device("cpu")
for name, f in FORMATS.items():
    if not tk.supports(f, 16, 32):
        continue
    for kind, window in (("full", None), ("sliding", 24), ("chunked", 32)):
        for gran in ("per-tensor", "per-head"):
            lens = [70, 41]
            k, v, q = make_inputs(2, 70, 8, 2, 32, gen, cpu)
            c = PagedKVCache.allocate(f, 20, 16, 2, 32, cpu)
            c.k_scale = f.calibrate(torch.cat([k[0, :70], k[1, :41]]), gran, "checkpoint")
            c.v_scale = f.calibrate(torch.cat([v[0, :70], v[1, :41]]), gran, "checkpoint")
            table = scattered_block_table(lens, 16, 20, gen)
            c.write_sequences(k, v, table, lens)
            sl = torch.tensor(lens)
            a = paged_decode_attention(c, q, table, sl, kind, window)
            b = tk.paged_decode_attention(c, q, table, sl, kind, window)
            assert (a - b).abs().max().item() < 1e-4, (name, kind, gran)
print("ok")
"""
    env = dict(os.environ, TRITON_INTERPRET="1")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().endswith("ok")
