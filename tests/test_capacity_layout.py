"""Layout formula against independent worked numbers (docs/capacity.md, docs/scales.md; vLLM's TRITON_ATTN
layout, vllm-project/vllm vllm/v1/attention/backends/triton_attn.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import CliRunner

from capacity_factories import (
    GiB, KiB, MiB, alternating_layers, dense_layers, deployment, mla_layers, model,
    sliding_indices,
)
from kvlint.capacity import compute
from kvlint.capacity.layout import format_token_bytes
from kvlint.cli import main
from kvlint.deployment import LayerGeometry

LLAMA8 = model("llama-3.1-8b", dense_layers(32, 8, 128), heads=32)
LLAMA70 = model("llama-3.1-70b", dense_layers(80, 8, 128), heads=64)
GPT_OSS_20B = model("gpt-oss-20b", alternating_layers(24, 8, 64, 128), heads=64)
DEEPSEEK_V3 = model("deepseek-v3", mla_layers(61), heads=128, max_pos=163840, mla=(512, 64))


@pytest.mark.parametrize("fmt, expected", [
    # TRITON_ATTN layout (triton_attn.py L318-345 at v0.25.1): Hkv 8, D 128 -> fp8/int8 per-token-head 2*8*(128+4) = 2,112;
    # per-tensor fp8 2,048; bf16 4,096; int4 per-token-head 2*8*(64+4) = 1,088.
    ("fp8_per_token_head", (2048, 64)), ("int8_per_token_head", (2048, 64)),
    ("int4_per_token_head", (1024, 64)), ("fp8_e4m3", (2048, 0)), ("fp8_e5m2", (2048, 0)),
    ("fp8_e4m3fnuz", (2048, 0)), ("int8", (2048, 0)), ("bf16", (4096, 0)), ("fp16", (4096, 0)),
    # vLLM nvfp4 2*Hkv*(D/2 + D/16) = 2*8*(64 + 8) = 1,152: payload 1,024, block scales 128.
    ("nvfp4", (1024, 128)),
    # TensorRT-LLM ceil(n/2) + ceil(n/16), n = 2*8*128 = 2,048 -> 1,024 + 128.
    ("trtllm_nvfp4", (1024, 128)),
    # SGLang fp4_e2m1: cell//2 + (Hkv*D*2)//16 -> 1,024 + 128.
    ("sglang_fp4", (1024, 128)),
    # SGLang 0.5.23 nvfp4 with one scale layout (trtllm_mha on SM100): fp4 Hkv*(D//2)*2 = 1,024,
    # scales Hkv*(D//16)*2 = 128 (fp4_kv_cache_quant_method.py NVFP4KVCacheMethod.compute_cell_size).
    ("sglang_nvfp4", (1024, 128)),
    # SGLang mxfp8 (pool_configurator.py v0.5.23 L526-529): n*(D+Dv) E4M3 bytes + n*(D+Dv)//32 UE8M0
    # bytes = 2,048 + 64.
    ("sglang_mxfp8", (2048, 64)),
])
def test_bytes_per_token_per_layer(fmt, expected):
    layer = LayerGeometry(0, "full", None, 8, 128, 128)
    tb = format_token_bytes(fmt, layer, 8)
    assert (tb.payload, tb.scale) == expected


def test_sglang_mxfp8_on_mla_is_the_plain_fp8_latent():
    # SGLang 0.5.23 gives an MLA model the MLA pool at float8_e4m3fn (kv_cache_configurator.py
    # L1872-1881) and its MLA cell size has no mxfp8 term (pool_configurator.py L359-385): 576 B per
    # layer for DeepSeek-V3's 512 + 64 latent, no scales (61 layers: 35,136 B, the cell size the
    # release computed in tests/data/sglang_pool/0.5.23.json, deepseekv3-b200-tp8-mxfp8-*).
    tb = format_token_bytes("sglang_mxfp8", DEEPSEEK_V3.layers[0], 1)
    assert (tb.payload, tb.scale) == (576, 0)


def test_sglang_mxfp8_has_no_static_scales():
    # The FA4 MXFP8 path passes the block scales, not layer.k_scale / v_scale
    # (flashattention_backend.py v0.5.23 L1536-1537).
    r = compute(deployment(LLAMA8, "sglang_mxfp8", engine="sglang", version="0.5.23", max_model_len=4096))
    assert (r.static_scales.kv_bytes, r.static_scales.qkv_bytes) == (0, 0)
    assert (r.per_token.payload_bytes, r.per_token.scale_bytes) == (32 * 2048, 32 * 64)


def test_fp8_ds_mla_record_is_656_bytes():
    # vllm/v1/attention/backends/mla/flashmla_sparse.py L75-117 (v0.33.0): 512 FP8 NoPE + 16 B (4 FP32 scales) + 128 B (64 BF16 RoPE) = 656 B.
    tb = format_token_bytes("fp8_ds_mla", DEEPSEEK_V3.layers[0], 1)
    assert (tb.payload, tb.scale, tb.total) == (640, 16, 656)


def test_llama8_fp8_per_token_head_worked_example():
    # docs/capacity.md, inline scale metadata: payload 2*32*8*128*1 = 64 KiB, scales 8 B * 8 heads * 32 layers = 2 KiB,
    # total 66 KiB, BF16 128 KiB, 128/66 = 1.94x; at 128 Ki tokens 8 GiB + 256 MiB.
    r = compute(deployment(LLAMA8, "fp8_per_token_head", max_model_len=131072))
    pt = r.to_json()["per_token"]
    assert pt == {"payload_bytes": 64 * KiB, "scale_bytes": 2 * KiB, "total_bytes": 66 * KiB,
                  "bf16_bytes": 128 * KiB, "naive_bytes": 64 * KiB, "skipped_layer_bytes": 0}
    seq = r.to_json()["sequence"]
    assert seq["tokens"] == 131072
    assert seq["payload_bytes"] == 8 * GiB
    assert seq["scale_bytes"] == 256 * MiB
    assert seq["bytes"] == 8 * GiB + 256 * MiB
    assert seq["bf16_bytes"] == 16 * GiB
    assert seq["compression_vs_bf16"] == 1.94
    # docs/scales.md: the overhead is 4/D of an FP8 payload = 3.125% at D 128.
    assert r.scale_overhead_ratio == pytest.approx(4 / 128)


def test_llama70_at_128k_tokens():
    # docs/capacity.md: 80 layers -> 20 GiB FP8 payload + 640 MiB scales (5,120 B per token) vs 40 GiB.
    r = compute(deployment(LLAMA70, "fp8_per_token_head", max_model_len=131072))
    assert r.per_token.scale_bytes == 5120
    assert r.sequence.payload_bytes == 20 * GiB
    assert r.sequence.scale_bytes == 640 * MiB
    assert r.sequence.bf16_bytes == 40 * GiB


def test_int4_per_token_head_overhead_is_8_over_d():
    # docs/scales.md: packed INT4 payload is D bytes per head, scales 8 B -> 8/D = 6.25% at D 128.
    r = compute(deployment(LLAMA8, "int4_per_token_head", max_model_len=4096))
    assert r.per_token.payload_bytes == 32 * 8 * 128  # 32,768
    assert r.scale_overhead_ratio == pytest.approx(8 / 128)


def test_gpt_oss_20b_skip_sliding_layers_by_retained_positions():
    # docs/capacity.md (skip sets) at 32,768 tokens, 2,048 B per position in BF16:
    # A = 12*32,768 + 12*128 = 394,752; S = 12*128 = 1,536.
    # BF16 394,752*2,048 = 808,452,096 B (771 MiB); FP8 404,226,048 B (385.5 MiB);
    # FP8 + sliding in BF16 393,216*1,024 + 1,536*2,048 = 405,798,912 B (~387 MiB), 1.992x.
    bf16 = compute(deployment(GPT_OSS_20B, "bf16", max_model_len=32768)).sequence
    fp8 = compute(deployment(GPT_OSS_20B, "fp8_e4m3", max_model_len=32768)).sequence
    skip = compute(deployment(GPT_OSS_20B, "fp8_e4m3", max_model_len=32768,
                              skip=sliding_indices(GPT_OSS_20B))).sequence
    assert bf16.bytes == 808_452_096 and bf16.bytes / MiB == 771.0
    assert fp8.bytes == 404_226_048 and fp8.bytes / MiB == 385.5
    assert skip.bytes == 405_798_912
    assert round(skip.bytes / MiB) == 387
    assert skip.retained_positions == 394_752 and skip.skipped_positions == 1_536
    assert skip.compression_vs_bf16 == pytest.approx(2 * 394_752 / (394_752 + 1_536))
    assert round(skip.compression_vs_bf16, 3) == 1.992


def test_skip_half_of_uniform_layers_gives_1_33x():
    # docs/capacity.md (skip sets): S = A/2 -> 2A / 1.5A = 1.33x.
    r = compute(deployment(LLAMA8, "fp8_e4m3", max_model_len=8192, skip=range(16)))
    assert r.to_json()["sequence"]["compression_vs_bf16"] == 1.33
    # per token: 16 layers at 2,048 B (fp8) + 16 at 4,096 B (bf16) = 98,304 B; naive 65,536 B.
    assert r.per_token.total_bytes == 98_304 and r.per_token.naive_bytes == 65_536


def test_static_scales_per_tensor_and_per_head():
    # docs/scales.md: per-tensor 80 layers * 2 * 4 B = 640 B; per-head 80 * 8 * 2 * 4 = 5,120 B.
    pt = compute(deployment(LLAMA70, "fp8_e4m3", granularity="per-tensor")).static_scales
    ph = compute(deployment(LLAMA70, "fp8_e4m3", granularity="per-head")).static_scales
    assert pt.kv_bytes == 640 and ph.kv_bytes == 5120
    # Q too: 3 scalars per layer = 12 B per-tensor; per-head H + 2*Hkv = 64 + 16 = 80 values = 320 B.
    assert pt.qkv_bytes == 80 * 12 and ph.qkv_bytes == 80 * 320


def test_static_per_head_q_scales_over_24_layers():
    # docs/scales.md: 320 B per layer, 308 B over per-tensor (12 B), 7,392 B over 24 layers.
    geo = model("h64-kv8", dense_layers(24, 8, 128), heads=64)
    ph = compute(deployment(geo, "fp8_e4m3", granularity="per-head")).static_scales
    pt = compute(deployment(geo, "fp8_e4m3", granularity="per-tensor")).static_scales
    assert ph.qkv_bytes // 24 == 320
    assert (ph.qkv_bytes - pt.qkv_bytes) // 24 == 308
    assert ph.qkv_bytes - pt.qkv_bytes == 7_392


def test_static_scales_zero_when_unquantized_or_dynamic():
    assert compute(deployment(LLAMA8, "bf16")).to_json()["static_scales"] == {
        "kv_bytes": 0, "qkv_bytes": 0}
    assert compute(deployment(LLAMA8, "fp8_per_token_head")).static_scales.kv_bytes == 0


def test_mla_deepseek_v3_latent():
    # docs/capacity.md (MLA): 576 values per token per layer, no V, no TP split: 1,152 B per layer in
    # BF16, 70,272 B per token over 61 layers.
    r = compute(deployment(DEEPSEEK_V3, "bf16", tp=8))
    assert r.per_token.total_bytes == 70_272 and r.per_token.bf16_bytes == 70_272
    assert r.mla_latent_replicated and not r.kv_heads_replicated
    # fp8_ds_mla: 656 B * 61 = 40,016 B, of which 16 * 61 = 976 B scales; naive 576 * 61.
    ds = compute(deployment(DEEPSEEK_V3, "fp8_ds_mla")).per_token
    assert (ds.total_bytes, ds.scale_bytes, ds.naive_bytes) == (40_016, 976, 35_136)


def test_missing_model_gives_none_fields_and_an_assumption():
    r = compute(deployment(None))
    j = r.to_json()
    assert j["per_token"] is None and j["sequence"] is None and j["engine"] is None
    assert any("geometry unknown" in a for a in j["assumptions"])


def test_json_has_spec_fields_with_integer_bytes():
    j = compute(deployment(LLAMA8, "fp8_e4m3", max_model_len=131072)).to_json()
    assert {"file", "name", "per_token", "static_scales", "sequence", "engine",
            "assumptions"} <= set(j)
    for key in ("payload_bytes", "scale_bytes", "total_bytes", "bf16_bytes", "naive_bytes"):
        assert type(j["per_token"][key]) is int
    for key in ("pool_bytes_per_gpu", "block_size", "bytes_per_block", "num_blocks",
                "kv_cache_tokens"):
        assert type(j["engine"][key]) is int
    assert isinstance(j["engine"]["max_concurrency"], float)


def test_sglang_mxfp8_manifest_end_to_end_matches_sglang(tmp_path):
    """A SGLang 0.5.23 mxfp8 manifest through load, resolve (catalog: mxfp8 -> sglang_mxfp8, fa4 ->
    page 128) and capacity gives the cell size and token count SGLang's own KVCacheConfigurator
    computed for the same pool (tools/derive/sglang_pool.py, case llama8b-b200-mxfp8-fa4)."""
    data = Path(__file__).parent / "data" / "sglang_pool" / "0.5.23.json"
    case = next(c for c in json.loads(data.read_text())["cases"] if c["input"]["name"] == "llama8b-b200-mxfp8-fa4")
    pool = case["sglang"]["profile_available_bytes"]["_return"]
    manifest = tmp_path / "deploy.yaml"
    manifest.write_text(
        "apiVersion: kvlint/v1\nkind: Deployment\nmetadata: {name: llama8b-mxfp8}\n"
        "engine: {name: sglang, version: \"0.5.23\", attention_backend: fa4}\n"
        "hardware: {gpu: B200-180GB}\nmodel: {name: meta-llama/Llama-3.1-8B-Instruct}\n"
        f"kv_cache: {{dtype: mxfp8}}\nmemory: {{kv_cache_memory: {pool}}}\nserving: {{max_model_len: 8192}}\n")
    result = CliRunner().invoke(main, ["capacity", "--format", "json", str(manifest)])
    assert result.exit_code == 0, result.output
    (doc,) = json.loads(result.stdout)
    (group,) = doc["engine"]["groups"]
    assert group["cache_format"] == "sglang_mxfp8"
    assert group["bytes_per_token"] == case["sglang"]["cell_size"] == 67584
    assert doc["engine"]["block_size"] == case["server_args"]["page_size"] == 128
    assert doc["engine"]["kv_cache_tokens"] == case["sglang"]["max_total_num_tokens"]
    assert doc["static_scales"] == {"kv_bytes": 0, "qkv_bytes": 0}

