"""vLLM releases before the catalogued ones (0.9.2-0.10.2): the memory terms their code adds.

Checked against the tensors vLLM 0.9.2's code allocates, not kvlint's output:

* the sampler warm-up (vllm/v1/worker/gpu_model_runner.py `_dummy_sampler_run`, 0.9.2 L2086):
  min(max_num_batched_tokens, max_num_seqs) requests of full-vocabulary logits; on PyTorch's
  native path (no FlashInfer) `apply_top_k_top_p` sorts the fp32 copy. Held at the sort, per logit:
  the model-dtype logits, the fp32 copy (Sampler.forward), sort's values and int64 indices,
  PyTorch's int64 reverse indices (SortStable.cu `segmented_sort_pairs`, >= 128 segments) and
  cub's alternate key/value buffers (DispatchSegmentedRadixSort without overwrite);
* the init memory snapshot precedes the distributed init (gpu_worker.py `init_device`, 0.9.2
  L140 before L158; 0.11.0 takes it after, L169/L182), so NCCL's init memory is non-KV memory.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict

import pytest
import yaml
from conftest import CliRunner

from conftest import REPO_ROOT
from kvlint.cli import main

GiB = 1 << 30
LOGS = REPO_ROOT / "benchmarks" / "capacity_logs"

MANIFEST = """\
apiVersion: kvlint/v1
kind: Deployment
metadata:
  name: pre011
engine:
  name: vllm
  version: "{version}"
hardware:
  gpu: {gpu}
  count: {tp}
parallelism:
  tensor: {tp}
model:
  name: acme/Qwen3-235B-A22B-FP8-copy
  geometry: {{num_layers: 94, num_attention_heads: 64, num_kv_heads: 4, head_dim: 128,
             max_position_embeddings: 40960{vocab}}}
  weights: {{params: 235093634560, dtype: fp8}}
kv_cache:
  dtype: auto
serving:
  max_model_len: 40960
"""

VOCAB = 151936  # Qwen3-235B-A22B config.json vocab_size
# The model is named as an uncatalogued copy: Qwen/Qwen3-235B-A22B-FP8 itself is a family member
# of the catalogued Qwen/Qwen3-235B-A22B, whose vocab_size would size the sampler even when the
# manifest's geometry leaves it out (the case test_sampler_warmup_... checks without it).


def _engine(tmp_path: Path, version: str, tp: int = 4, gpu: str = "H100-SXM-80GB", vocab: bool = True) -> Dict[str, Any]:
    path = tmp_path / f"deploy-{version}-{tp}-{vocab}.yaml"
    path.write_text(MANIFEST.format(version=version, tp=tp, gpu=gpu, vocab=f", vocab_size: {VOCAB}" if vocab else ""))
    result = CliRunner().invoke(main, ["capacity", "--format", "json", str(path)])
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)[0]["engine"]


# Element sizes of the tensors the sampler warm-up holds. torch is not a test dependency (it is the
# `smoke` extra), so the arithmetic below runs on these; the test after it checks them against
# torch itself where torch is installed (CI's smoke-cpu job) and skips visibly elsewhere.
ELEMENT_BYTES = {"bfloat16": 2, "float32": 4, "int64": 8}


def _size(dtype: str) -> int:
    return ELEMENT_BYTES[dtype]


def test_element_sizes_are_torchs():
    torch = pytest.importorskip("torch")
    for name, size in ELEMENT_BYTES.items():
        assert torch.empty(0, dtype=getattr(torch, name)).element_size() == size, name


def test_sampler_bytes_per_logit_are_the_tensors_the_code_holds():
    sort_path = (_size("bfloat16")      # _dummy_sampler_run's logits (model dtype)
                 + _size("float32")     # Sampler.forward: logits.to(torch.float32)
                 + _size("float32")     # logits.sort values
                 + _size("int64")       # logits.sort indices
                 + _size("int64")       # SortStable.cu segmented_sort_pairs reverse indices
                 + _size("float32")     # cub third keys buffer
                 + _size("int64"))      # cub third values buffer (int64 indices)
    flashinfer = _size("bfloat16") + 3 * _size("float32")  # logits, fp32, masked, probs
    catalog = yaml.safe_load((REPO_ROOT / "rules" / "catalog" / "engines" / "vllm.yaml").read_text())
    entry = next(d for d in catalog["defaults"] if d["name"] == "older_releases_memory")
    warmup = entry["value"][0]["sampler_warmup"]
    assert warmup["bytes_per_logit"] == sort_path == 38
    assert warmup["favourable_bytes_per_logit"] == flashinfer == 14


def test_sampler_warmup_is_the_activation_peak_of_092(tmp_path):
    with_vocab = _engine(tmp_path, "0.9.2")
    # H100 80 GB: max_num_seqs 1024 and max_num_batched_tokens 8192 (arg_utils.py 0.9.2 L1629-1637)
    sampler = 38 * min(8192, 1024) * VOCAB
    residual = with_vocab["pool_terms"]["activation"] - sampler
    assert 0 < residual < 0.3 * GiB, residual / GiB  # the forward pass's outputs still held
    band = " ".join(with_vocab["band"]["terms"])
    assert "FlashInfer" in band and f"+{24 * 1024 * VOCAB / GiB:.2f} GiB" in band
    # without the vocabulary the sampler cannot be sized: the flat estimate, and no sampler band
    without = _engine(tmp_path, "0.9.2", vocab=False)
    assert "FlashInfer" not in " ".join(without["band"]["terms"])


def test_distributed_init_counts_before_011_only(tmp_path):
    old = _engine(tmp_path, "0.10.2")
    new = _engine(tmp_path, "0.11.0")
    # the same sampler path is not catalogued for 0.11.0, so compare the non-torch terms alone:
    # 0.10.2 adds the distributed init (2.05 - 0.51 GiB at tp 4, the fit logs' init snapshots)
    extra = old["pool_terms"]["non_torch"] - new["pool_terms"]["non_torch"]
    assert abs(extra - int(2.05 * GiB) + int(0.51 * GiB)) <= 1, extra / GiB
    one_gpu_old = _engine(tmp_path, "0.10.2", tp=1)
    one_gpu_new = _engine(tmp_path, "0.11.0", tp=1)
    assert one_gpu_old["pool_terms"]["non_torch"] == one_gpu_new["pool_terms"]["non_torch"]


def test_older_releases_than_those_read_get_neither_term(tmp_path):
    # 0.8.5 was not read: no pre-0.11 fact, and not the 0.11.0 stand-in's either (0.11.0 has its
    # own sampler warm-up, topk_topp_sampler.py v0.11.0 L39-64 / L183)
    old = _engine(tmp_path, "0.8.5")
    assert old["pool_terms"] == _engine(tmp_path, "0.8.5", vocab=False)["pool_terms"]
    assert "FlashInfer" not in " ".join(old["band"]["terms"])
    new = _engine(tmp_path, "0.11.0")
    assert new["pool_terms"]["activation"] - old["pool_terms"]["activation"] > 38 * 1024 * VOCAB - 2.25 * GiB
    assert old["pool_terms"]["non_torch"] == new["pool_terms"]["non_torch"]  # no distributed-init term


def test_off_sm90_the_distributed_init_widens_the_band_only(tmp_path):
    a100 = _engine(tmp_path, "0.10.1.1", gpu="A100-SXM-80GB")
    later = _engine(tmp_path, "0.11.0", gpu="A100-SXM-80GB")
    assert a100["pool_terms"]["non_torch"] == later["pool_terms"]["non_torch"]
    assert any("unmeasured" in t for t in a100["band"]["terms"])


def test_holdout_qwen3_235b_log_is_inside_the_band(tmp_path):
    doc = yaml.safe_load((LOGS / "vllm-h100x4-qwen3-235b-fp8.yaml").read_text())
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "kvlint/v1", "kind": "Deployment", **doc["manifest"]}))
    result = CliRunner().invoke(main, ["capacity", "--format", "json", str(path)])
    assert result.exit_code in (0, 1), result.output
    engine = json.loads(result.stdout)[0]["engine"]
    logged = doc["logged"]["pool_gib"] * GiB
    assert engine["band"]["pool_low_bytes"] <= logged <= engine["band"]["pool_high_bytes"]
