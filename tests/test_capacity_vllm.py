"""vLLM engine accounting against worked numbers: vLLM's published logs, docs/capacity.md, and figures
derived by running each release's own planning code (vllm-project/vllm v0.11.0, v0.19.1, v0.25.1, v0.33.0).

Each expected figure is derived by hand from the release's rules in the comment beside it."""

from __future__ import annotations

import pytest

from capacity_factories import (
    GiB, KiB, L4, alternating_layers, deployment, dense_layers, gemma3_layers, mla_layers,
    model, sliding_indices,
)
from kvlint.capacity import compute
from kvlint.capacity.vllm import pp_layer_ranges
from kvlint.deployment import LayerGeometry

LLAMA8 = model("llama-3.1-8b", dense_layers(32, 8, 128), heads=32)
QWEN3_4B = model("qwen3-4b", dense_layers(36, 8, 128), heads=32, max_pos=40960)
GPT_OSS_20B = model("gpt-oss-20b", alternating_layers(24, 8, 64, 128), heads=64)
GPT_OSS_120B = model("gpt-oss-120b", alternating_layers(36, 8, 64, 128), heads=64)
GEMMA2_9B = model("gemma-2-9b", alternating_layers(42, 8, 256, 4096), heads=16, max_pos=8192)
GEMMA3_27B = model("gemma-3-27b", gemma3_layers(62, 16, 128, 1024), heads=32)
DEEPSEEK_V3 = model("deepseek-v3", mla_layers(61), heads=128, max_pos=163840, mla=(512, 64))
QWEN3_30B = model("qwen3-30b-a3b", dense_layers(48, 4, 128), heads=32, max_pos=40960)
POOL = 40 * GiB


def _engine(**kw):
    return compute(deployment(**kw)).engine


def test_llama8_fp8_per_token_head_blocks_in_40_gib():
    # docs/capacity.md, blocks: 16-token block = 16 * 66 KiB = 1,056 KiB; 41,943,040 KiB / 1,056 KiB
    # -> 39,718 blocks = 635,488 tokens; dtype-only 40 GiB / 64 KiB = 655,360 tokens.
    for version in ("0.20.0", "0.25.1", "0.33.0"):
        e = _engine(geometry=LLAMA8, cache_format="fp8_per_token_head", version=version,
                    max_model_len=131072)
        assert e.bytes_per_block == 1056 * KiB
        assert e.num_blocks == 39_718
        assert e.kv_cache_tokens == 635_488
        assert e.naive_tokens == 655_360


@pytest.mark.parametrize("fmt, blocks, tokens, conc", [
    # vLLM docs/features/quantization/quantized_kvcache.md table: Qwen3-4B on L4, vLLM 0.25.1, block 16, 32,768-token requests.
    # BF16 block = 16 * 4,096 * 36 = 2,359,296 B; pool 5,218 blocks' worth (11.465 GiB)
    # -> 5,218 blocks, 83,488 tokens, 5,218 / 2,048 = 2.55x.
    ("bf16", 5_218, 83_488, 2.55),
    # FP8 halves the block: 1,179,648 B; pool of 10,437 blocks -> 166,992 tokens, 5.10x.
    ("fp8_e4m3", 10_437, 166_992, 5.10),
])
def test_qwen3_4b_on_l4_vllm_0_25_1(fmt, blocks, tokens, conc):
    block_bytes = 16 * 36 * 2 * 8 * 128 * (2 if fmt == "bf16" else 1)
    e = _engine(geometry=QWEN3_4B, cache_format=fmt, version="0.25.1", gpu=L4,
                kv_cache_memory=blocks * block_bytes, max_model_len=32768, block_size=16)
    assert e.bytes_per_block == block_bytes
    assert (e.num_blocks, e.kv_cache_tokens, round(e.max_concurrency, 2)) == (blocks, tokens, conc)


def test_gpt_oss_120b_pre_0_21_log_formula():
    # vLLM log quoted in alvarobartt/hf-mem#60: "Available KV cache memory: 5.38 GiB" -> "GPU KV cache size: 78,384 tokens".
    # 18 full + 18 SW layers -> G = 18, page 16*8*64*2*2 = 32,768 B, block 589,824 B;
    # pool 9,798 * 589,824 B (5.382 GiB) -> 9,798 blocks; old log 9,798 // 2 groups * 16 = 78,384.
    e = _engine(geometry=GPT_OSS_120B, cache_format="bf16", version="0.19.1",
                kv_cache_memory=9_798 * 589_824, max_model_len=131072)
    assert e.bytes_per_block == 589_824
    assert e.num_blocks == 9_798
    assert e.kv_cache_tokens == 78_384
    assert len(e.groups) == 2


@pytest.mark.parametrize("fmt, skip, blocks, per_req, conc, tokens, block", [
    # docs/capacity.md (skip sets), v0.33 rules, 40 GiB, L 131,072, T_inflight 2 * 8,192 = 16,384.
    # SW part cdiv(min(127 + 16,384, L), 16) + 1 = 1,033 blocks; full 131,072 / 16 = 8,192.
    ("bf16", False, 109_226, 9_225, 11.84, 1_551_920, 16),  # 40 GiB // (32,768 * 12)
    ("fp8_e4m3", False, 218_453, 9_225, 23.68, 3_103_856, 16),  # 40 GiB // (16,384 * 12)
    # skip sliding: full block bumped to 32 (page 32 * 1,024 = 32,768 = SW bf16 16 * 2,048);
    # per request 131,072 / 32 + 1,033 = 5,129.
    ("fp8_e4m3", True, 109_226, 5_129, 21.30, 2_791_279, 32),
])
def test_gpt_oss_20b_v0_33_hybrid_table(fmt, skip, blocks, per_req, conc, tokens, block):
    e = _engine(geometry=GPT_OSS_20B, cache_format=fmt, version="0.33.0",
                skip=sliding_indices(GPT_OSS_20B) if skip else (), max_model_len=131072,
                max_num_batched_tokens=8192)
    assert e.inflight_tokens == 16_384
    assert (e.num_blocks, e.blocks_per_request, round(e.max_concurrency, 2), e.kv_cache_tokens,
            e.block_size) == (blocks, per_req, conc, tokens, block)
    assert e.min_block_size == 16


def test_gpt_oss_20b_skip_sliding_on_0_19_1():
    # 0.19: no _align_heterogeneous_kv_block_size; page unification doubles the fp8 full
    # layers' block to 32 (16,384 -> 32,768 B). T_inflight = max_num_batched_tokens = 8,192:
    # SW cdiv(min(127 + 8,192, L), 16) + 1 = 521, full 131,072 / 32 = 4,096 -> 4,617 per request.
    # 40 GiB // (32,768 * 12) = 109,226 blocks; 109,226 / 4,617 = 23.66x;
    # old log: 109,226 // 2 groups * min(16, 32) = 873,808 tokens.
    e = _engine(geometry=GPT_OSS_20B, cache_format="fp8_e4m3", version="0.19.1",
                skip=sliding_indices(GPT_OSS_20B), max_model_len=131072,
                max_num_batched_tokens=8192)
    assert (e.block_size, e.num_blocks, e.blocks_per_request) == (32, 109_226, 4_617)
    assert round(e.max_concurrency, 2) == 23.66
    assert e.kv_cache_tokens == 873_808


def test_gpt_oss_20b_bf16_on_0_11():
    # 0.11: T = 8,192; SW 521 + full 8,192 = 8,713 blocks per request; 109,226 blocks;
    # old log 109,226 // 2 * 16 = 873,808 tokens; concurrency 109,226 / 8,713 = 12.54x.
    e = _engine(geometry=GPT_OSS_20B, cache_format="bf16", version="0.11.0",
                max_model_len=131072, max_num_batched_tokens=8192)
    assert (e.num_blocks, e.blocks_per_request, e.kv_cache_tokens) == (109_226, 8_713, 873_808)
    assert round(e.max_concurrency, 2) == 12.54


def test_gemma3_27b_grouping_and_padding_layers():
    # _get_kv_cache_groups_uniform_page_size (kv_cache_planning.py, v0.33.0): 52 SW + 10 full -> G = 10, 6 SW groups + 1 full group, 8 padding layers.
    # page 16 * 16 heads * 256 * 2 = 131,072 B; block 10 * 131,072 = 1,310,720 B -> 32,768 blocks.
    # v0.33, H100 default max_num_batched_tokens 8,192 -> T 16,384:
    # SW cdiv(min(1,023 + 16,384, L), 16) + 1 = 1,089 per group * 6 + full 8,192 = 14,726.
    # tokens int(32,768 / 14,726 * 131,072) = 291,658.
    e = _engine(geometry=GEMMA3_27B, cache_format="bf16", version="0.33.0", max_model_len=131072)
    sw = [g for g in e.groups if g.kind == "sliding"]
    full = [g for g in e.groups if g.kind == "full"]
    assert (len(sw), len(full)) == (6, 1)
    assert sum(g.padding_layers for g in e.groups) == 8
    assert all(len(g.layers) + g.padding_layers == 10 for g in e.groups)
    assert e.bytes_per_block == 1_310_720 and e.num_blocks == 32_768
    assert e.blocks_per_request == 14_726
    assert e.kv_cache_tokens == 291_658


def test_gemma2_sliding_reserves_more_than_full():
    # SlidingWindowSpec (vllm/v1/kv_cache_interface.py): at gemma-2's 8,192 context a sliding layer reserves
    # cdiv(min(4,095 + T, 8,192), 16) + 1 = 513 blocks against 512 for a full layer.
    e = _engine(geometry=GEMMA2_9B, cache_format="bf16", version="0.33.0", max_model_len=8192)
    per_kind = {g.kind: g.blocks_per_request for g in e.groups}
    assert per_kind == {"sliding": 513, "full": 512}
    assert e.blocks_per_request == 1_025


def test_gemma2_fp8_skip_full_layer_0_19_vs_0_25():
    # v0.19.1 planning code: skip [1] (a full layer) makes 0.19.1 form 42 one-layer groups (buckets
    # 21 SW fp8 / 20 full fp8 / 1 full bf16 -> G = 1), and the old log divides by 42;
    # 0.25.1 and 0.33.0 fail at start-up in unify_kv_cache_spec_page_size.
    old = _engine(geometry=GEMMA2_9B, cache_format="fp8_e4m3", version="0.19.1", skip=[1],
                  max_model_len=8192)
    assert len(old.groups) == 42 and old.startup_error is None
    assert old.kv_cache_tokens == (old.num_blocks // 42) * 16
    for version in ("0.25.1", "0.33.0"):
        new = _engine(geometry=GEMMA2_9B, cache_format="fp8_e4m3", version=version, skip=[1],
                      max_model_len=8192)
        assert new.startup_error is not None and new.num_blocks == 0


def test_dense_skip_block_bump_0_19_vs_0_25():
    # v0.19.1 / v0.25.1 planning code: dense model, fp8 + bf16 skips: 0.19 keeps block 16 (UniformType group),
    # 0.25 raises it to 32; capacity in tokens is unchanged.
    # 0.19.1: page sum 30 * 16 * 2,048 + 2 * 16 * 4,096 = 1,114,112 B -> 38,550 blocks;
    #   old log 38,550 * 16 = 616,800 tokens.
    # 0.25.1: page sum at block 32 = 2,228,224 B -> 19,275 blocks; int(19,275/4,096*131,072)
    #   = 616,800 tokens.
    e19 = _engine(geometry=LLAMA8, cache_format="fp8_e4m3", version="0.19.1", skip=[0, 1],
                  max_model_len=131072)
    e25 = _engine(geometry=LLAMA8, cache_format="fp8_e4m3", version="0.25.1", skip=[0, 1],
                  max_model_len=131072)
    assert (e19.block_size, e19.bytes_per_block, e19.num_blocks) == (16, 1_114_112, 38_550)
    assert (e25.block_size, e25.bytes_per_block, e25.num_blocks) == (32, 2_228_224, 19_275)
    assert e19.kv_cache_tokens == e25.kv_cache_tokens == 616_800


def test_skip_ignored_before_0_19():
    # 0.11 has no skip flag: every layer fp8, 16 * 2,048 * 32 = 1,048,576 B per block.
    r = compute(deployment(LLAMA8, "fp8_e4m3", version="0.11.0", skip=[0], max_model_len=8192))
    assert r.engine.bytes_per_block == 1_048_576
    assert any("no --kv-cache-dtype-skip-layers" in a for a in r.assumptions)


@pytest.mark.parametrize("fmt, block_bytes, blocks", [
    # 0.33, llama8, 40 GiB, block 16: per layer per token 2*8*(D_data + 4) / nvfp4 2*8*(64+8).
    ("int8_per_token_head", 16 * 2112 * 32, 39_718),
    ("fp8_per_token_head", 16 * 2112 * 32, 39_718),
    ("int4_per_token_head", 16 * 1088 * 32, 77_101),  # 557,056 B
    ("nvfp4", 16 * 1152 * 32, 72_817),  # 589,824 B
])
def test_every_per_token_head_dtype_v0_33(fmt, block_bytes, blocks):
    e = _engine(geometry=LLAMA8, cache_format=fmt, version="0.33.0", max_model_len=131072)
    assert (e.bytes_per_block, e.num_blocks) == (block_bytes, blocks)


def test_nvfp4_skip_bumps_block_to_64():
    # _align_heterogeneous_kv_block_size (vllm/platforms/interface.py L826, v0.33.0): align = 16; 16 * cdiv(4,096 * 16, 16 * 1,152) = 16 * 4 = 64.
    # page sum 31 * 64 * 1,152 + 64 * 4,096 = 2,547,712 B -> 16,858 blocks.
    e = _engine(geometry=LLAMA8, cache_format="nvfp4", version="0.33.0", skip=[0],
                max_model_len=131072)
    assert (e.block_size, e.bytes_per_block, e.num_blocks) == (64, 2_547_712, 16_858)


def test_int4_sliding_bug_0_25_vs_0_33():
    # SlidingWindowSpec at v0.25.1: 0.25.1 sizes int4 sliding pages as int8 (16 * 2*8*(64+4) = 17,408 B) and
    # pads the full pages to match: block 12 * 17,408 = 208,896 B; 0.33: 12 * 16 * 576 = 110,592.
    # The errata's 61,681 vs 116,508 blocks need a pool in [61,681*208,896, 116,509*110,592).
    pool = 61_681 * 208_896
    old = _engine(geometry=GPT_OSS_20B, cache_format="int4_per_token_head", version="0.25.1",
                  kv_cache_memory=pool, max_model_len=131072)
    new = _engine(geometry=GPT_OSS_20B, cache_format="int4_per_token_head", version="0.33.0",
                  kv_cache_memory=pool, max_model_len=131072)
    assert (old.bytes_per_block, old.num_blocks) == (208_896, 61_681)
    assert (new.bytes_per_block, new.num_blocks) == (110_592, 116_508)
    assert any(g.page_padded for g in old.groups)


def test_hybrid_manager_disabled_sizes_every_layer_full():
    # all 24 layers full: 24 * 32,768 = 786,432 B per block -> 54,613 blocks;
    # int(54,613 / 8,192 * 131,072) = 873,808 tokens.
    e = _engine(geometry=GPT_OSS_20B, cache_format="bf16", version="0.33.0",
                max_model_len=131072, disable_hybrid=True)
    assert (e.bytes_per_block, e.num_blocks, e.kv_cache_tokens) == (786_432, 54_613, 873_808)
    assert len(e.groups) == 1


def test_chunked_local_attention_disables_hybrid_on_0_11():
    # Llama-4-Scout-like: 36 chunked (8,192) + 12 full, Hkv 8, D 128, bf16.
    layers = tuple(LayerGeometry(i, "full" if (i + 1) % 4 == 0 else "chunked",
                                 None if (i + 1) % 4 == 0 else 8192, 8, 128, 128)
                   for i in range(48))
    scout = model("llama-4-scout", layers, heads=40)
    # 0.11 default env 0 -> all full: 48 * 16 * 4,096 = 3,145,728 B -> 13,653 blocks.
    e11 = _engine(geometry=scout, cache_format="bf16", version="0.11.0", max_model_len=131072)
    assert (e11.bytes_per_block, e11.num_blocks) == (3_145_728, 13_653)
    # with the env set: G = 12 (36 >= 1.5 * 12): 3 chunked groups + 1 full group,
    # 12 * 65,536 = 786,432 B per block -> 54,613 blocks.
    e11h = _engine(geometry=scout, cache_format="bf16", version="0.11.0", max_model_len=131072,
                   env=(("VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE", "1"),))
    assert (e11h.bytes_per_block, e11h.num_blocks, len(e11h.groups)) == (786_432, 54_613, 4)


def test_mla_engine_with_flashmla_block_64():
    # DeepSeek-V3 bf16, backend block 64: page 64 * 1,152 = 73,728 B, * 61 = 4,497,408 B
    # -> 9,549 blocks; 163,840 / 64 = 2,560 per request; int(9,549 / 2,560 * 163,840) = 611,136.
    e = _engine(geometry=DEEPSEEK_V3, cache_format="bf16", version="0.33.0", tp=8,
                backend_block_size=64, max_model_len=163840)
    assert (e.block_size, e.bytes_per_block, e.num_blocks) == (64, 4_497_408, 9_549)
    assert e.kv_cache_tokens == 611_136


def test_tp_above_kv_heads_replicates():
    # Qwen3-30B-A3B config.json: 4 KV heads; ModelConfig.get_num_kv_heads: tp 8 -> max(1, 4 // 8) = 1 head per GPU, the
    # same as tp 4: 48 * 16 * 1 * 256 * 2 = 393,216 B per block either way.
    e4 = compute(deployment(QWEN3_30B, "bf16", tp=4, max_model_len=40960))
    e8 = compute(deployment(QWEN3_30B, "bf16", tp=8, max_model_len=40960))
    assert e4.engine.bytes_per_block == e8.engine.bytes_per_block == 393_216
    assert e8.kv_heads_replicated and not e4.kv_heads_replicated


def test_pipeline_parallel_split():
    # get_pp_indices: 61 layers on 4 stages -> 15, 15, 16, 15 (remainder to partitions[-2]).
    assert [b - a for a, b in pp_layer_ranges(61, 4)] == [15, 15, 16, 15]
    # llama8 pp 2: 16 layers per stage, 16 * 2,112 * 16 = 540,672 B -> 79,437 blocks.
    e = _engine(geometry=LLAMA8, cache_format="fp8_per_token_head", pp=2, max_model_len=131072)
    assert (e.bytes_per_block, e.num_blocks) == (540_672, 79_437)


def test_pool_from_device_memory():
    # determine_available_memory (vllm/v1/worker/gpu_worker.py): ceil(85,520,809,984 * 0.92) = 78,679,145,186 - 16,060,000,000 weights
    # - the rotary cos/sin cache vLLM loads with them (131,072 positions x 128 x 2 B = 33,554,432 B,
    # rotary_embedding/base.py) - 4 GiB non-KV = 58,290,623,458 B on 0.33; 0.19 uses 0.9: 56,580,207,258 B.
    for version, pool in (("0.33.0", 58_290_623_458), ("0.19.1", 56_580_207_258)):
        r = compute(deployment(LLAMA8, "fp8_e4m3", version=version, kv_cache_memory=None,
                               weights=16_060_000_000, non_kv=4 * GiB, max_model_len=8192))
        assert r.engine.pool_bytes_per_gpu == pool
        assert any("gpu_memory_utilization defaulted" in a for a in r.assumptions)


def test_non_kv_default_is_an_assumption_and_pool_can_be_exhausted():
    r = compute(deployment(LLAMA8, "bf16", kv_cache_memory=None, weights=16_060_000_000))
    assert any(a.startswith("non_kv_memory estimated") for a in r.assumptions)
    exhausted = compute(deployment(LLAMA8, "bf16", kv_cache_memory=None, weights=200 * GiB))
    assert exhausted.pool_exhausted is True
    assert exhausted.engine.num_blocks == 0 and exhausted.fits_one_sequence is False


def test_unknown_memory_leaves_engine_none():
    r = compute(deployment(LLAMA8, "bf16", kv_cache_memory=None, gpu=None))
    assert r.engine is None and r.per_token is not None
    assert any("cannot be computed" in a for a in r.assumptions)
