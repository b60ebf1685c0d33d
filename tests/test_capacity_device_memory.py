"""vLLM sizes its KV pool from the CUDA runtime total, not the nvidia-smi total.

vllm/v1/worker/gpu_worker.py: requested_memory = init_snapshot.total_memory x gpu_memory_utilization,
with total_memory = torch.cuda.mem_get_info()[1] (utils/mem_utils.py MemorySnapshot, v0.19.0-v0.33.0).
The catalog keeps both figures per GPU where a public log prints the runtime one (memory_bytes with
memory_basis cuda, nvidia_smi_mib); the driver's reserve between them is what kvlint takes off a GPU
known only by its nvidia-smi total. The range is recomputed here from those catalog pairs, so a GPU
added with a runtime figure outside it fails this test instead of silently leaving the band.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict

from click.testing import CliRunner

from kvlint.capacity import pool
from kvlint.catalog.gpus import load_gpu_catalog
from kvlint.cli import main

GiB = 1 << 30
MiB = 1 << 20


def test_reserve_range_is_the_catalogued_runtime_vs_nvidia_smi_gaps():
    gaps = {g.id: (g.nvidia_smi_mib * MiB - g.memory_bytes) / GiB for g in load_gpu_catalog()
            if g.memory_basis == "cuda" and g.nvidia_smi_mib and g.memory_bytes}
    # A100 40/80 GB, H100 SXM, L40S, RTX 4090, RTX 3090 at least: each runtime figure from a public log
    assert {"A100-80GB", "H100-SXM-80GB", "L40S-48GB", "RTX-4090-24GB"} <= set(gaps), gaps
    assert pool.NVIDIA_SMI_RESERVE_LOW_GIB <= min(gaps.values()) < pool.NVIDIA_SMI_RESERVE_LOW_GIB + 0.01, gaps
    assert pool.NVIDIA_SMI_RESERVE_HIGH_GIB - 0.01 < max(gaps.values()) <= pool.NVIDIA_SMI_RESERVE_HIGH_GIB, gaps


def test_l40s_is_the_runtime_total_a_public_log_prints():
    # stepfun-ai/Step-Video-T2V#8, 8 x L40S: "GPU has a total capacity of 44.42 GiB"
    l40s = load_gpu_catalog().get("L40S-48GB")
    assert l40s.memory_basis == "cuda" and l40s.nvidia_smi_mib == 46068
    assert abs(l40s.memory_bytes / GiB - 44.42) < 0.005


MANIFEST = """\
apiVersion: kvlint/v1
kind: Deployment
metadata:
  name: device
engine:
  name: {engine}
  version: "{version}"
hardware:
  gpu: {gpu}
{memory}model:
  name: Qwen/Qwen3-4B
  geometry: {{num_layers: 36, num_attention_heads: 32, num_kv_heads: 8, head_dim: 128, max_position_embeddings: 40960}}
  weights: {{params: 4022468096, dtype: bf16}}
kv_cache:
  dtype: auto
serving:
  max_model_len: 32768
"""


def _capacity(tmp_path: Path, gpu: str, memory: str = "", engine: str = "vllm",
              version: str = "0.25.1") -> Dict[str, Any]:
    path = tmp_path / "deploy.yaml"
    path.write_text(MANIFEST.format(engine=engine, version=version, gpu=gpu, memory=memory))
    result = CliRunner().invoke(main, ["capacity", "--format", "json", str(path)])
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)[0]


def test_vllm_on_an_nvidia_smi_gpu_takes_the_reserve_off_and_spans_the_rest(tmp_path):
    l4 = load_gpu_catalog().get("L4-24GB")
    assert l4.memory_basis == "nvidia-smi"
    smi = _capacity(tmp_path, "L4-24GB")
    measured = _capacity(tmp_path, "L4-24GB", memory=f"  memory: {l4.memory_bytes}\n")
    gmu = 0.92  # vLLM 0.25's default
    # the same total given as hardware.memory: no reserve, no band term
    taken = measured["engine"]["pool_bytes_per_gpu"] - smi["engine"]["pool_bytes_per_gpu"]
    assert abs(taken - pool.NVIDIA_SMI_RESERVE_GIB * GiB * gmu) < MiB
    assert any("nvidia-smi total" in a and "CUDA runtime total" in a for a in smi["assumptions"])
    band = smi["engine"]["band"]
    text = [t for t in band["terms"] if "nvidia-smi" in t]
    assert len(text) == 1 and "hardware.memory" in text[0]
    assert not any("nvidia-smi" in t for t in measured["engine"]["band"]["terms"])
    spread = (pool.NVIDIA_SMI_RESERVE_HIGH_GIB - pool.NVIDIA_SMI_RESERVE_LOW_GIB) / 2 * GiB * gmu
    widen_low = (smi["engine"]["pool_bytes_per_gpu"] - band["pool_low_bytes"]) - (
        measured["engine"]["pool_bytes_per_gpu"] - measured["engine"]["band"]["pool_low_bytes"])
    widen_high = (band["pool_high_bytes"] - smi["engine"]["pool_bytes_per_gpu"]) - (
        measured["engine"]["band"]["pool_high_bytes"] - measured["engine"]["pool_bytes_per_gpu"])
    assert abs(widen_low - spread) < MiB and abs(widen_high - spread) < MiB


def test_a_runtime_total_in_the_catalog_is_used_as_is(tmp_path):
    l40s = load_gpu_catalog().get("L40S-48GB")
    catalog = _capacity(tmp_path, "L40S-48GB")
    given = _capacity(tmp_path, "L40S-48GB", memory=f"  memory: {l40s.memory_bytes}\n")
    assert catalog["engine"]["pool_bytes_per_gpu"] == given["engine"]["pool_bytes_per_gpu"]
