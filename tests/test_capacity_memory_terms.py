"""Pool terms checked against numbers the engines (or the checkpoint formats) give, not kvlint's own output.

* quantized weights (`model.weights.unquantized_params`): what vLLM logged as "Model loading took" for
  real quantized checkpoints (benchmarks/capacity_logs, quotes there);
* LMCache's GPU staging buffer: the shape lmcache 0.3.2 allocates
  (lmcache/v1/gpu_connector.py `VLLMPagedMemGPUConnectorV2.get_shape`: [2, layers, chunk_size,
  kv_heads x head_size], default chunk_size 256 in lmcache/v1/config.py);
* a KV connector kvlint does not model, and a device total that is not a runtime reading, are
  said, never silently absorbed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict

import yaml
from conftest import CliRunner

from conftest import REPO_ROOT
from kvlint.cli import main
from kvlint.resolve.fields import weights_bytes

GiB = 1 << 30
LOGS = REPO_ROOT / "benchmarks" / "capacity_logs"


def _logged(log_id: str) -> Dict[str, Any]:
    return yaml.safe_load((LOGS / f"{log_id}.yaml").read_text())


def test_w4a16_checkpoint_weights_match_what_vllm_loaded():
    # RedHatAI Llama-3.1-8B W4A16 on one H100: vLLM 0.19 "Model loading took 5.38 GiB".
    # Llama-3.1-8B: 8,030,261,248 params; embed_tokens and lm_head 128256 x 4096 each, 16 bit.
    untied = 2 * 128256 * 4096 + 32 * 2 * 4096 + 4096
    data = {"model": {"weights": {"params": 8030261248, "dtype": "int4", "unquantized_params": untied}}}
    total, note = weights_bytes(data, None)
    assert abs(total / GiB - 5.38) < 0.05, total / GiB
    assert "16 bit" in note
    # params x int4 alone misses the 16-bit tensors by more than 1.5 GiB
    naive, _ = weights_bytes({"model": {"weights": {"params": 8030261248, "dtype": "int4"}}}, None)
    assert 5.38 - naive / GiB > 1.5


def test_fp8_checkpoint_weights_match_what_vllm_loaded_per_gpu():
    doc = _logged("vllm-h100x2-llama33-70b-fp8dyn-tp2")
    logged = doc["logged"]["weights_gib"]  # "Model loading took ... GiB" on one of the two GPUs
    weights = doc["manifest"]["model"]["weights"]
    total, _ = weights_bytes({"model": {"weights": weights}}, None)
    assert abs(total / 2 / GiB - logged) / logged < 0.01, (total / 2 / GiB, logged)


def test_unquantized_params_ignored_for_a_16_bit_checkpoint():
    data = {"model": {"weights": {"params": 1e9, "dtype": "bf16", "unquantized_params": 1e8}}}
    assert weights_bytes(data, None)[0] == 2 * 10**9


MANIFEST = """\
apiVersion: kvlint/v1
kind: Deployment
metadata:
  name: connector
engine:
  name: vllm
  version: "0.19.0"
  {options}
{env}hardware:
  gpu: {gpu}
  count: 4
parallelism:
  tensor: 4
model:
  name: Qwen/Qwen3-235B-A22B-FP8
  geometry: {{num_layers: 94, num_attention_heads: 64, num_kv_heads: 4, head_dim: 128, max_position_embeddings: 40960}}
  weights: {{params: 235093634560, dtype: fp8}}
kv_cache:
  dtype: auto
serving:
  max_model_len: 40960
"""


def _capacity(tmp_path: Path, options: str = "", env: str = "", gpu: str = "H100-SXM-80GB") -> Dict[str, Any]:
    path = tmp_path / "deploy.yaml"
    path.write_text(MANIFEST.format(options=options, env=env, gpu=gpu))
    result = CliRunner().invoke(main, ["capacity", "--format", "json", str(path)])
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)[0]


def _pool(entry: Dict[str, Any]) -> int:
    return entry["engine"]["pool_bytes_per_gpu"]


def test_lmcache_staging_buffer_is_non_kv_memory(tmp_path):
    plain = _capacity(tmp_path)
    lmcache = _capacity(tmp_path, 'options: {kv_transfer_config: {kv_connector: LMCacheConnectorV1, kv_role: kv_both}}')
    # [2, 94 layers, 256 tokens, 1 KV head per GPU (4 / tp 4) x 128] in bf16
    assert _pool(plain) - _pool(lmcache) == 2 * 94 * 256 * 128 * 2
    assert any("LMCache" in a for a in lmcache["assumptions"])


def test_lmcache_chunk_size_from_its_environment_variable(tmp_path):
    plain = _capacity(tmp_path)
    env = "  env: {LMCACHE_CHUNK_SIZE: '1024'}\n"
    lmcache = _capacity(tmp_path, 'options: {kv_transfer_config: {kv_connector: LMCacheConnectorV1}}', env=env)
    assert _pool(plain) - _pool(lmcache) == 2 * 94 * 1024 * 128 * 2


def test_lmcache_config_file_or_unknown_connector_is_said_not_guessed(tmp_path):
    plain = _capacity(tmp_path)
    for options, env in (('options: {kv_transfer_config: {kv_connector: LMCacheConnectorV1}}',
                          "  env: {LMCACHE_CONFIG_FILE: /etc/lmcache.yaml}\n"),
                         ('options: {kv_transfer_config: \'{"kv_connector": "SomeConnector"}\'}', "")):
        entry = _capacity(tmp_path, options, env=env)
        assert _pool(entry) == _pool(plain)
        text = " ".join(entry["assumptions"])
        assert "NOT in this pool" in text and "memory.kv_cache_memory" in text, text


def test_a_device_total_that_is_not_a_runtime_reading_widens_the_band_downwards(tmp_path):
    # H100 SXM: a CUDA runtime total in the catalog; H100 PCIe: the nvidia-smi total
    cuda = _capacity(tmp_path)["engine"]["band"]
    smi = _capacity(tmp_path, gpu="H100-PCIE-80GB")["engine"]
    assert not any("nvidia-smi" in t for t in cuda["terms"])
    assert any("nvidia-smi" in t and "hardware.memory" in t for t in smi["band"]["terms"])
    low_gap = smi["pool_bytes_per_gpu"] - smi["band"]["pool_low_bytes"]
    cuda_gap = _capacity(tmp_path)["engine"]["pool_bytes_per_gpu"] - cuda["pool_low_bytes"]
    # vLLM: the pool is sized from nvidia-smi - 0.55 GiB and the band spans the rest of the
    # catalogued reserves (0.34-0.76 GiB), +-0.21 GiB x gpu_memory_utilization 0.9
    assert abs((low_gap - cuda_gap) - 0.21 * GiB * 0.9) < 1 << 20


def test_from_log_reads_sglangs_first_reading_and_calibrates_the_baseline(tmp_path, monkeypatch):
    # QwQ-32B on 4 x L4 (SGLang 0.4.3.post4): 'Load weight begin. avail mem=21.63 GB' (GiB)
    monkeypatch.chdir(tmp_path)
    doc = _logged("sglang-l4x4-qwq-32b")
    manifest = {"apiVersion": "kvlint/v1", "kind": "Deployment", **doc["manifest"]}
    (tmp_path / "deploy.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False))
    (tmp_path / "startup.log").write_text(doc["source"]["quote"])
    result = CliRunner().invoke(main, ["capacity", "deploy.yaml", "--from-log", "startup.log", "--format", "json"])
    assert result.exit_code == 0, result.output
    [entry] = json.loads(result.stdout)
    rows = {r["term"]: r for r in entry["rows"]}
    assert rows["free at 'Load weight begin' (GiB)"]["logged"] == 21.63
    baseline = entry["calibrate"]["memory.non_kv_memory"]
    # with that baseline, SGLang's formula puts the first reading where the log has it
    manifest["memory"] = {"non_kv_memory": baseline}
    (tmp_path / "deploy.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False))
    again = json.loads(CliRunner().invoke(main, ["capacity", "deploy.yaml", "--from-log", "startup.log",
                                                 "--format", "json"]).stdout)[0]
    assert {r["term"]: r for r in again["rows"]}["free at 'Load weight begin' (GiB)"]["predicted"] == 21.63


SGLANG = """\
apiVersion: kvlint/v1
kind: Deployment
metadata:
  name: sglang-chunked
engine:
  name: sglang
  version: "0.5.23"
hardware:
  gpu: H100-SXM-80GB
model:
  name: meta-llama/Llama-3.1-8B-Instruct
kv_cache:
  dtype: auto
serving:
  max_model_len: 8192
{serving}"""


def _sglang_fraction(tmp_path: Path, serving: str = "") -> float:
    path = tmp_path / "sglang.yaml"
    path.write_text(SGLANG.format(serving=serving))
    result = CliRunner().invoke(main, ["capacity", "--format", "json", str(path)])
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)[0]["engine"]["memory_fraction"]


def test_sglang_default_fraction_follows_chunked_prefill_size(tmp_path):
    # SGLang 0.5.23 memory_hook.py _handle_gpu_memory_settings on an H100 (81,091 MiB, tp 1):
    # reserved = 512 + max(chunked, 2048) x 1.5 + tp x pp / 8 x 1024 + decode max_bs 256 x 2
    #            + 58 prefill graph sizes x 8, at least 10 GiB above 60 GiB of memory
    gpu_mib = 85030076416 / 2**20
    def expected(chunked: int) -> float:
        reserved = max(512 + max(chunked, 2048) * 1.5 + 128 + 256 * 2 + 58 * 8, 10240)
        return round((gpu_mib - reserved) / gpu_mib, 3)
    assert _sglang_fraction(tmp_path) == expected(8192)  # the tier's default
    assert _sglang_fraction(tmp_path, "  chunked_prefill_size: 4096\n") == expected(4096)  # the 10 GiB floor
    assert _sglang_fraction(tmp_path, "  chunked_prefill_size: -1\n") == expected(16384)  # max_prefill_tokens
    assert expected(8192) != expected(4096) != expected(16384)
