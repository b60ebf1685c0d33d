"""vLLM 0.9.2-0.10.2: which sampler the profile's warm-up runs, and the switch that decides it.

From the releases' code (not kvlint's output): `TopKTopPSampler.__init__`
(vllm/v1/sample/ops/topk_topp_sampler.py, 0.9.2 L33-57, 0.10.1.1 L34-59, 0.10.2 L42-67) takes
FlashInfer's sampler when `import flashinfer.sampling` works and `envs.VLLM_USE_FLASHINFER_SAMPLER
is not False`; envs.py reads the variable as bool(int(value)) when set, None when unset (0.10.2
L482-484). At the warm-up PyTorch's sort holds 38 B per logit and FlashInfer's
top_k_top_p_sampling_from_logits 14 B (tests/test_capacity_pre011.py derives both from the tensors).

The three logs of one author (dennislee22/vLLM-benchmarking, vLLM 0.10.1.1, Qwen2-7B-Instruct on
A100) print which sampler ran; given that path, kvlint lands within 3% on all three, which the
benchmark manifests cannot say (the operators set no variable: the install decided).
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path
from typing import Any, Dict, Optional

import pytest
from conftest import CliRunner

from conftest import REPO_ROOT, capacity_logs
from kvlint.capacity import pool
from kvlint.cli import main

sys.path.insert(0, str(REPO_ROOT / "benchmarks"))
import capacity_accuracy  # noqa: E402

GiB = 1 << 30
VOCAB = 152064  # Qwen/Qwen2-7B-Instruct config.json vocab_size
REQUESTS = 256  # min(max_num_batched_tokens 2048, max_num_seqs 256 on A100: arg_utils.py 0.10.1.1)

MANIFEST = """\
apiVersion: kvlint/v1
kind: Deployment
metadata:
  name: sampler
engine:
  name: vllm
  version: "{version}"
{env}hardware:
  gpu: A100-80GB
  count: 1
model:
  name: Qwen/Qwen2-7B-Instruct
  geometry: {{num_layers: 28, num_attention_heads: 28, num_kv_heads: 4, head_dim: 128,
             max_position_embeddings: 32768, vocab_size: {vocab}}}
  weights: {{params: 7615616512, dtype: bf16}}
kv_cache:
  dtype: auto
memory:
  gpu_memory_utilization: 0.5
serving:
  max_model_len: 16384
"""


def _engine(tmp_path: Path, value: Optional[str], version: str = "0.10.1.1", vocab: int = VOCAB) -> Dict[str, Any]:
    env = "" if value is None else f"  env: {{VLLM_USE_FLASHINFER_SAMPLER: {json.dumps(value)}}}\n"
    path = tmp_path / f"d-{version}-{value}-{vocab}.yaml"
    path.write_text(MANIFEST.format(version=version, env=env, vocab=vocab))
    result = CliRunner().invoke(main, ["capacity", "--format", "json", str(path)])
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)[0]["engine"]


@pytest.mark.parametrize("version", ["0.9.2", "0.10.1.1", "0.10.2", "0.11.0"])
def test_the_switch_picks_the_path_the_code_takes(tmp_path, version):
    unset, off, on = (_engine(tmp_path, v, version) for v in (None, "0", "1"))
    sort_minus_flashinfer = (38 - 14) * REQUESTS * VOCAB
    # unset: PyTorch's sort (the wheel brings no flashinfer), FlashInfer at the band's favourable end
    assert unset["pool_terms"]["activation"] == off["pool_terms"]["activation"]
    assert unset["pool_terms"]["activation"] - on["pool_terms"]["activation"] == sort_minus_flashinfer
    assert on["pool_bytes_per_gpu"] - unset["pool_bytes_per_gpu"] == sort_minus_flashinfer
    unset_terms, off_terms, on_terms = (" ".join(e["band"]["terms"]) for e in (unset, off, on))
    assert "with FlashInfer installed" in unset_terms
    # =0: the sort whatever is installed, so no FlashInfer term in the band
    assert "FlashInfer" not in off_terms
    assert unset["band"]["pool_high_bytes"] - off["band"]["pool_high_bytes"] == sort_minus_flashinfer
    # =1: FlashInfer, with the band reaching down to the sort (vLLM's fallback without flashinfer)
    assert "falls back to PyTorch's sort" in on_terms
    assert on["band"]["pool_low_bytes"] == unset["band"]["pool_low_bytes"]


@pytest.mark.parametrize("version", ["0.11.1", "0.14.1", "0.17.1"])
def test_from_0111_flashinfer_is_opt_in_and_unset_means_the_sort(tmp_path, version):
    """0.11.1-0.17 install flashinfer-python (Requires-Dist) but take its sampler only with
    VLLM_USE_FLASHINFER_SAMPLER=1 (TopKTopPSampler.__init__, v0.11.1 L34-47); apply_top_k_top_p
    sorts (no triton path before 0.18). Unset or =0: the sort, exactly, no band term."""
    unset, off, on = (_engine(tmp_path, v, version) for v in (None, "0", "1"))
    assert unset["pool_terms"] == off["pool_terms"]
    sort, flashinfer = 38 * REQUESTS * VOCAB, 14 * REQUESTS * VOCAB
    assert 0 < unset["pool_terms"]["activation"] - sort < 0.3 * GiB
    assert unset["pool_terms"]["activation"] - on["pool_terms"]["activation"] == sort - flashinfer
    assert "FlashInfer" not in " ".join(unset["band"]["terms"])
    assert "falls back to PyTorch's sort" in " ".join(on["band"]["terms"])


def test_a_value_vllm_cannot_parse_is_not_read_as_either_path(tmp_path):
    assert _engine(tmp_path, "yes")["pool_terms"] == _engine(tmp_path, None)["pool_terms"]


def test_releases_without_the_catalogued_switch_ignore_it(tmp_path):
    # 0.19's warm-up (catalog sampler_warmup, 14 B) has no flashinfer_env: the variable changes nothing
    assert _engine(tmp_path, "0", "0.19.0")["pool_terms"] == _engine(tmp_path, None, "0.19.0")["pool_terms"]


# The sampler line each log prints (the logs at the commit the benchmark's yaml cites):
# log/vllm-7B-2gpuA10040GB-0.5GRAM-diff-nodes.log, both Ray workers: "WARNING ... [topk_topp_sampler.py:61]
#   FlashInfer is not available. Falling back to the PyTorch-native implementation of top-p & top-k sampling."
# log/vllm-7B-1gpuA10080GB-0.5GRAM.log: "INFO ... [topk_topp_sampler.py:50] Using FlashInfer for top-p & top-k sampling."
# log/vllm-7B-2gpuA10080GB-0.25GRAM-same-node.log (the same run, 12.02 GiB / 450,192 tokens, is stored at
#   vllm-7B-2gpuA10080GB-same-node.log in commit c1eadb81928e8f42f3f27ab564177a90d586670a), both workers:
#   "INFO ... [topk_topp_sampler.py:50] Using FlashInfer for top-p & top-k sampling."
# The variable stands for the path the log prints (=0: the sort, as without flashinfer; =1: FlashInfer).
LOGGED_PATH = {"vllm-a100-40gb-x2-qwen2-7b-gmu050": "0", "vllm-a100-qwen2-7b-gmu050": "1",
               "vllm-a100x2-qwen2-7b-gmu025": "1"}


def test_with_the_path_each_log_prints_the_pool_is_within_three_percent():
    docs = {d["id"]: d for d in capacity_logs() if d["id"] in LOGGED_PATH}
    assert set(docs) == set(LOGGED_PATH)
    manifests = {}
    for name, doc in docs.items():
        manifest = copy.deepcopy(capacity_accuracy.full_manifest(doc))
        manifest["model"]["geometry"]["vocab_size"] = VOCAB
        manifest["engine"]["env"] = {"VLLM_USE_FLASHINFER_SAMPLER": LOGGED_PATH[name]}
        manifests[name] = manifest
    entries = capacity_accuracy.run_capacity([sys.executable, "-m", "kvlint"], manifests)
    for name, doc in docs.items():
        engine = entries[name]["engine"]
        logged = doc["logged"]["pool_gib"] * GiB
        assert abs(engine["pool_bytes_per_gpu"] - logged) / logged < 0.03, (name, engine["pool_bytes_per_gpu"] / GiB)
        assert engine["band"]["pool_low_bytes"] <= logged <= engine["band"]["pool_high_bytes"], name


def test_triton_top_k_top_p_releases_hold_fourteen_bytes_per_logit(tmp_path):
    """0.18.0, 0.19.0 and 0.20.x sample the warm-up in place (apply_top_k_top_p_triton from 8 requests,
    topk_topp_sampler.py L251-252): the model-dtype logits, their fp32 copy, the probabilities and
    random_sample's draws, 2 + 4 + 4 + 4 B per logit. From 0.21 model runner V1 warms it twice, the
    second call (per-request generator) on the same native path while the first output is held: the
    same 14 B per logit (gpu_model_runner.py _dummy_sampler_run, 0.22.0 L5910 - 0.33.0 L5866). The
    manifest here names no architecture, so at 0.21-0.28 the runner is unknown: V1's figure, with
    the band reaching up to V2's. From 0.29 every model defaults to V2, whose warm-up keeps the
    model-dtype logits alone (v1/worker/gpu/sample/sampler.py apply_sampling_params returns them
    untouched for neutral rows): 2 B per logit, under the activation floor here."""
    sampler = (2 + 4 + 4 + 4) * REQUESTS * VOCAB
    v2 = _engine(tmp_path, None, "0.33.0")
    assert v2["pool_terms"]["activation"] == max(pool.VLLM_ACTIVATION_FLOOR, 2 * REQUESTS * VOCAB + pool.VLLM_SAMPLER_RESIDUAL)
    for version in ("0.18.0", "0.19.0", "0.20.2", "0.21.0", "0.27.1"):
        engine = _engine(tmp_path, None, version)
        assert 0 < engine["pool_terms"]["activation"] - sampler < 0.3 * GiB, version
    for version in ("0.21.0", "0.27.1"):
        assert (_engine(tmp_path, None, version, vocab=2 * VOCAB)["pool_terms"]["activation"]
                - _engine(tmp_path, None, version)["pool_terms"]["activation"]) == sampler, version
        assert any("model runner" in t for t in _engine(tmp_path, None, version)["band"]["terms"]), version
    assert (_engine(tmp_path, None, "0.18.0", vocab=2 * VOCAB)["pool_terms"]["activation"]
            - _engine(tmp_path, None, "0.18.0")["pool_terms"]["activation"]) == sampler
