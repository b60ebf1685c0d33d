"""kvlint's SGLang pool against what SGLang itself logged, for the releases before 0.4.10.

Each case takes the memory readings a real start-up log printed (SGLang's first reading, the
weights' "mem usage" at "Load weight end") as inputs and checks that kvlint, with nothing else
given, lands on the "#tokens" SGLang logged. What is under test is SGLang's own arithmetic for
the release, read in its wheel: the default mem_fraction_static (by TP size before 0.4.9,
server_args.py), the multimodal factor of ModelRunner (x0.95 before 0.4.9), the baseline
semantics of `profile_max_num_token` (rest = avail_after_weights - total * (1 - mfs)), and the one
pool for every layer before 0.4.10's sliding-window pool. The logs are cited in
benchmarks/capacity_logs/ (sglang-h200-gemma3-4b, sglang-l4x4-qwq-32b).
"""

from __future__ import annotations

from dataclasses import replace

from capacity_factories import GiB, dense_layers, deployment, gemma3_layers, model
from kvlint.capacity import compute


def _tolerance(cell: int) -> int:
    # SGLang prints GiB with two decimals: +-0.005 GiB on each of two readings.
    return int(2 * 0.005 * GiB * 0.9 // cell) + 1


def test_gemma3_4b_on_0_4_4_post2_one_pool_multimodal_fraction():
    # "Load weight end. ... avail mem=131.08 GB, mem usage=8.13 GB": SGLang's first reading is
    # 131.08 + 8.13 GiB. Default mem_fraction_static 0.88 at tp 1 (server_args printed 0.88), x0.95
    # for Gemma3ForConditionalGeneration; all 34 layers in one pool: 34 x 4 x 256 x 2 x 2 = 139,264 B.
    geometry = replace(model("google/gemma-3-4b-it", gemma3_layers(34, 4, 256, 1024), heads=8,
                             max_pos=131072), architectures=("Gemma3ForConditionalGeneration",))
    dep = deployment(geometry, engine="sglang", version="0.4.4.post2", kv_cache_memory=None,
                     device_memory=int((131.08 + 8.13) * GiB), weights=int(8.13 * GiB), non_kv=0,
                     max_model_len=131072)
    result = compute(dep)
    e = result.engine
    assert e.groups[0].bytes_per_token == 139_264  # = K size 54.12 GiB x 2 / 834,615 tokens
    assert any("multiplies mem_fraction_static by 0.95" in a for a in result.assumptions)
    assert abs(e.kv_cache_tokens - 834_615) <= _tolerance(139_264)


def test_qwq_32b_tp4_on_0_4_3_post4_default_fraction_by_tp():
    # "Load weight begin. avail mem=21.63 GB", "mem usage=15.54 GB"; default 0.85 at tp 4;
    # 64 layers x 2 KV heads per GPU x 128 x 2 x 2 B = 65,536 B per token; logged #tokens 46,611.
    geometry = model("Qwen/QwQ-32B", dense_layers(64, 8, 128), heads=40, max_pos=131072)
    dep = deployment(geometry, engine="sglang", version="0.4.3.post4", tp=4, kv_cache_memory=None,
                     device_memory=int(21.63 * GiB), weights=4 * int(15.54 * GiB), non_kv=0,
                     max_model_len=131072)
    result = compute(dep)
    assert any("defaulted to SGLang 0.4.3.post4's 0.85 " in a for a in result.assumptions)
    assert abs(result.engine.kv_cache_tokens - 46_611) <= _tolerance(65_536)


def test_baseline_is_scaled_by_the_fraction_not_subtracted():
    # The same deployment with 1 GiB held before SGLang's reading: the pool drops by mfs x 1 GiB.
    geometry = model("Qwen/QwQ-32B", dense_layers(64, 8, 128), heads=40, max_pos=131072)
    pools = [compute(deployment(geometry, engine="sglang", version="0.4.3.post4", tp=4, kv_cache_memory=None,
                                device_memory=22 * GiB, weights=4 * 15 * GiB, non_kv=baseline,
                                max_model_len=131072)).engine.pool_bytes_per_gpu
             for baseline in (0, GiB)]
    assert abs((pools[0] - pools[1]) - 0.85 * GiB) <= 1


def test_hybrid_swa_pool_by_release():
    # Gemma-3 keeps one pool in 0.4.4.post2 (no SWA pool yet) and in 0.5.2 (disabled for Gemma-3);
    # gpt-oss: disabled in 0.5.2 (server_args model_specific_adjustments), kept in 0.5.9 (only
    # trtllm_mha disables it there).
    from capacity_factories import alternating_layers

    gemma = model("google/gemma-3-27b-it", gemma3_layers(62, 16, 128, 1024), heads=32)
    oss = model("openai/gpt-oss-20b", alternating_layers(24, 8, 64, 128), heads=64)
    for version in ("0.4.4.post2", "0.5.2", "0.5.9"):
        e = compute(deployment(gemma, engine="sglang", version=version, max_model_len=4096)).engine
        assert e.kv_cache_tokens == 40 * GiB // (62 * 16 * 128 * 2 * 2), version
    one_pool = 40 * GiB // (24 * 8 * 64 * 2 * 2)
    assert compute(deployment(oss, engine="sglang", version="0.5.2", max_model_len=4096)).engine.kv_cache_tokens == one_pool
    assert compute(deployment(oss, engine="sglang", version="0.5.9", max_model_len=4096)).engine.kv_cache_tokens > one_pool
