"""SGLang and TensorRT-LLM accounting (docs/capacity.md, "The pool") and the readable table."""

from __future__ import annotations

from capacity_factories import GiB, alternating_layers, deployment, dense_layers, model
from kvlint.capacity import compute
from kvlint.report.capacity_table import render_capacity_text

LLAMA8 = model("llama-3.1-8b", dense_layers(32, 8, 128), heads=32)
GPT_OSS_20B = model("gpt-oss-20b", alternating_layers(24, 8, 64, 128), heads=64)


def test_sglang_cell_and_tokens():
    # cell = 8 heads * (128 + 128) * 32 layers * 1 B = 65,536 B; 40 GiB // 65,536 = 655,360
    # tokens (page 1); 655,360 / 131,072 = 5.0 sequences.
    e = compute(deployment(LLAMA8, "fp8_e4m3", engine="sglang", version="0.5.2",
                           max_model_len=131072)).engine
    assert (e.kv_cache_tokens, e.block_size, e.max_concurrency) == (655_360, 1, 5.0)


def test_sglang_fp4_and_page_floor():
    # fp4: cell//2 + cell_elems//16 = 32 * (1,024 + 128) = 36,864 B; 40 GiB // 36,864 =
    # 1,165,084 tokens; page 64 -> 1,165,056.
    e = compute(deployment(LLAMA8, "sglang_fp4", engine="sglang", version="0.5.2",
                           block_size=64, max_model_len=131072)).engine
    assert e.kv_cache_tokens == 1_165_056 and e.num_blocks == 1_165_056 // 64


def test_sglang_swa_split():
    # full 12 * 2,048 = 24,576 B, swa 24,576 B; 40 GiB // 49,152 = 873,813 tokens;
    # full_tokens = int(873,813 * 49,152 / (24,576 + 0.8 * 24,576)) = 970,903.
    e = compute(deployment(GPT_OSS_20B, "bf16", engine="sglang", version="0.5.9",
                           max_model_len=131072)).engine
    assert e.kv_cache_tokens == 970_903
    # SGLang 0.5.2 disables the hybrid SWA pool for gpt-oss (model_specific_adjustments): one pool
    # for every layer, 40 GiB // 49,152 = 873,813 tokens.
    e = compute(deployment(GPT_OSS_20B, "bf16", engine="sglang", version="0.5.2",
                           max_model_len=131072)).engine
    assert e.kv_cache_tokens == 873_813


def test_trtllm_fp8_and_nvfp4():
    # n = 2 * 32 * 128 * 8 = 65,536; FP8 65,536 B -> 655,360 tokens, 20,480 blocks of 32.
    fp8 = compute(deployment(LLAMA8, "fp8_e4m3", engine="tensorrt-llm", version="1.0.0",
                             max_model_len=131072)).engine
    assert (fp8.num_blocks, fp8.kv_cache_tokens, fp8.block_size) == (20_480, 655_360, 32)
    # NVFP4: ceil(n/2) + ceil(n/16) = 36,864 B -> 1,165,084 max tokens -> 36,408 blocks.
    fp4 = compute(deployment(LLAMA8, "trtllm_nvfp4", engine="tensorrt-llm", version="1.0.0",
                             max_model_len=131072)).engine
    assert (fp4.bytes_per_block, fp4.num_blocks, fp4.kv_cache_tokens) == (
        32 * 36_864, 36_408, 36_408 * 32)


def test_trtllm_pool_uses_free_fraction():
    # (85,520,809,984 - 16,060,000,000 - 2 GiB) * 0.9 = 60,582,147,968.4 -> int.
    r = compute(deployment(LLAMA8, "fp8_e4m3", engine="tensorrt-llm", version="1.0.0",
                           kv_cache_memory=None, weights=16_060_000_000, non_kv=2 * GiB))
    assert r.engine.pool_bytes_per_gpu == int((85_520_809_984 - 16_060_000_000 - 2 * GiB) * 0.9)


def test_table_lists_corrected_naive_and_reasons():
    r = compute(deployment(LLAMA8, "fp8_per_token_head", max_model_len=131072))
    text = render_capacity_text([r, compute(deployment(None))])
    assert "\x1b[" not in text
    assert "67,584 B (66.00 KiB)" in text  # corrected per token
    assert "65,536 B (64.00 KiB)" in text  # dtype-only estimate
    assert "39,718" in text and "635,488" in text and "655,360" in text
    assert "per-token scale metadata adds 2,048 B per token (3.12% of the payload)" in text
    assert "compression vs bf16 1.94x" in text
    assert "model geometry unknown" in text
    assert render_capacity_text([r]) == render_capacity_text([r])  # stable
