"""A cache dtype the release rewrites for the named backend is what the capacity plans with.

SGLang 0.5.23 runs the deprecated `tokenspeed_mla` as `cutedsl_mla` and sets kv_cache_dtype
fp8_e4m3 whatever was written (python/sglang/srt/arg_groups/serving_hook.py v0.5.23
handle_deprecated_args L303-337). The derived table of 0.5.23 (the release's own argument
resolution, tools/derive/tables/sglang/0.5.23.json) records the rewrite; the bytes per token
follow from DeepSeek-V3's config alone: SGLang's MLA pool stores kv_lora_rank + qk_rope_head_dim
= 512 + 64 elements per layer and token, 61 layers, one byte each in FP8.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import invoke

TABLE = Path(__file__).resolve().parent.parent / "tools" / "derive" / "tables" / "sglang" / "0.5.23.json"

MANIFEST = """\
apiVersion: kvlint/v1
kind: Deployment
metadata: {{name: rewrite}}
engine: {{name: sglang, version: "0.5.23", attention_backend: {backend}}}
hardware: {{gpu: B200-180GB, count: 8}}
parallelism: {{tensor: 8}}
model: {{name: deepseek-ai/DeepSeek-V3}}
kv_cache: {{dtype: {dtype}}}
"""

MLA_ELEMENTS = (512 + 64) * 61  # DeepSeek-V3 config.json: kv_lora_rank, qk_rope_head_dim, num_hidden_layers


def _table_dtype(backend: str, dtype: str) -> str:
    doc = json.loads(TABLE.read_text(encoding="utf-8"))
    outcome = doc["outcomes"][doc["grid"]["sm100"]["deepseek_mla"][backend][dtype]]
    assert outcome["accepted"], outcome
    return outcome["kv_cache_dtype"]


def _capacity(tmp_path, backend: str, dtype: str) -> dict:
    path = tmp_path / "m.yaml"
    path.write_text(MANIFEST.format(backend=backend, dtype=dtype), encoding="utf-8")
    result = invoke(["capacity", "--format", "json", str(path)])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)[0]


@pytest.mark.parametrize("written", ["auto", "bf16"])
def test_tokenspeed_mla_plans_the_fp8_cache_sglang_stores(tmp_path, written) -> None:
    assert _table_dtype("tokenspeed_mla", written) == "fp8_e4m3"
    report = _capacity(tmp_path, "tokenspeed_mla", written)
    assert report["kv_dtype"] == "fp8_e4m3"
    assert report["per_token"]["total_bytes"] == MLA_ELEMENTS * 1
    assert any("tokenspeed_mla whatever is written" in a for a in report["assumptions"])


def test_a_backend_without_a_rewrite_plans_the_written_dtype(tmp_path) -> None:
    assert _table_dtype("cutedsl_mla", "bf16") == "bf16"
    report = _capacity(tmp_path, "cutedsl_mla", "bf16")
    assert report["per_token"]["total_bytes"] == MLA_ELEMENTS * 2
    assert not any("whatever is written" in a for a in report["assumptions"])
