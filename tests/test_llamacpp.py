"""llama.cpp and Ollama (issue 15): catalog, resolve facts and capacity.

The byte figures are independent of kvlint's code: they are the KV sizes llama.cpp b4747 printed
(`llama_init_from_model: KV self size = ..., K (type): ..., V (type): ...`, the log format of
src/llama.cpp at b4747) for a GGUF with Llama-3.1-8B's KV geometry (32 layers, 8 KV heads, head
size 128) on the CPU backend, and the cell counts it printed (`n_ctx = ...`). Where a figure is
derived from llama.cpp's code rather than a log, the test says so.
"""

from __future__ import annotations

import pytest

from kvlint.analysis import analyze_deployment
from kvlint.capacity.llamacpp import llamacpp_cache
from kvlint.catalog.ggml import builtin_dir, load_ggml_catalog, validate_file

MiB = 1 << 20


def manifest(engine="llama.cpp", version="b4747", k="f16", v=None, fa=None, backend="cpu", ctx=32768,
             model="meta-llama/Llama-3.1-8B-Instruct", **serving):
    data = {
        "apiVersion": "kvlint/v1", "kind": "Deployment", "metadata": {"name": "t"},
        "engine": {"name": engine, "version": version, "build": {"backend": backend}},
        "model": {"name": model},
        "kv_cache": {"dtype": k},
        "serving": dict(serving),
    }
    if v is not None:
        data["kv_cache"]["value_dtype"] = v
    if fa is not None:
        data["engine"]["flash_attention"] = fa
    if ctx is not None:
        data["serving"]["context_size" if engine == "llama.cpp" else "max_model_len"] = ctx
    return data


def analyse(data):
    return analyze_deployment(data, "t.yaml", None)


@pytest.mark.parametrize("path", sorted(builtin_dir().glob("*.yaml")), ids=lambda p: p.name)
def test_catalog_files_validate(path):
    validate_file(path)


# (K, V, -fa, KV self size MiB, K MiB, V MiB) as llama.cpp b4747 logged them at -c 32768.
B4747_LOGS = [
    ("f16", "f16", "off", 4096.00, 2048.00, 2048.00),
    ("q8_0", "q8_0", "on", 2176.00, 1088.00, 1088.00),
    ("q4_0", "q4_0", "on", 1152.00, 576.00, 576.00),
    ("q5_1", "q5_1", "on", 1536.00, None, None),
    ("iq4_nl", "iq4_nl", "on", 1152.00, None, None),
    ("bf16", "bf16", "off", 4096.00, None, None),
    ("f32", "f32", "off", 8192.00, None, None),
    ("q4_1", "q5_0", "on", 1344.00, 640.00, 704.00),
    ("q8_0", "f16", "off", 3136.00, 1088.00, 2048.00),
]


@pytest.mark.parametrize("k,v,fa,total,kmib,vmib", B4747_LOGS, ids=lambda x: str(x))
def test_kv_bytes_match_b4747_logs(k, v, fa, total, kmib, vmib):
    analysis = analyse(manifest(k=k, v=v, fa=fa))
    cache = llamacpp_cache(analysis.deployment)
    assert cache is not None
    assert cache.cells == 32768
    assert cache.total_bytes == total * MiB
    if kmib is not None:
        assert (cache.k_bytes, cache.v_bytes) == (kmib * MiB, vmib * MiB)
    assert analysis.facts["llamacpp"]["start_error"] is None


@pytest.mark.parametrize("k,per_token", [("f16", 131_072), ("q8_0", 69_632), ("q4_0", 36_864)])
def test_bytes_per_token(k, per_token):
    # 4096 / 2176 / 1152 MiB over 32,768 cells (the logs above) are these bytes per cell.
    analysis = analyse(manifest(k=k, fa="on"))
    assert analysis.capacity.llamacpp.bytes_per_cell == per_token
    assert analysis.capacity.per_token.total_bytes == per_token
    assert analysis.capacity.engine.kv_cache_tokens == 32768


def test_quantized_v_without_fa_is_refused_as_b4747_did():
    # b4747: "llama_init_from_model: V cache quantization requires flash_attn"
    facts = analyse(manifest(k="q8_0", fa="off")).facts["llamacpp"]
    assert facts["start_error"] == "V cache quantization requires flash_attn"
    assert facts["start_error_reason"] == "fa_off"
    # -fa is a switch at b4747 and defaults to off: the same without writing it
    assert analyse(manifest(k="q8_0")).facts["llamacpp"]["start_error_reason"] == "fa_off"


@pytest.mark.parametrize("fa,cells", [("off", 30016), ("on", 30208)])
def test_cell_padding_b4747(fa, cells):
    # b4747 logged n_ctx = 30016 without -fa and 30208 with it for -c 30000 (pad 32 / 256).
    cache = llamacpp_cache(analyse(manifest(fa=fa, ctx=30000)).deployment)
    assert cache.cells == cells


def test_cell_padding_per_slot_b7108():
    # Derived from llama-context.cpp (Ollama v0.20.0's vendored copy, L148-L166), not a log:
    # -c 32768 -np 3 without --kv-unified: n_ctx_seq = pad256(32768 / 3 = 10922) = 11008, x 3.
    cache = llamacpp_cache(analyse(manifest(version="b7200", fa="on", max_num_seqs=3)).deployment)
    assert (cache.cells_per_stream, cache.n_stream, cache.cells) == (11008, 3, 33024)
    # -np does not multiply full-attention KV in llama.cpp: unified, 4 slots share 32768 cells.
    unified = llamacpp_cache(analyse(manifest(version="b7200", fa="on", max_num_seqs=4, kv_unified=True)).deployment)
    assert unified.cells == 32768


def test_ollama_multiplies_context_by_parallel():
    # Ollama passes num_ctx x OLLAMA_NUM_PARALLEL as -c (server/sched.go, docs/faq.mdx): 4 x 2176 MiB.
    data = manifest(engine="ollama", version="0.30.2", k="q8_0", fa="on", max_num_seqs=4)
    cache = llamacpp_cache(analyse(data).deployment)
    assert cache.total_bytes == 8704 * MiB
    # v0.30+ PredictServerVRAM prices the cache as f16: 4 x 4096 MiB
    assert cache.ollama_estimate_bytes == 4 * 4096 * MiB


def test_ollama_old_estimate_drops_block_scales():
    # <= v0.24 kvCacheBytesPerElement: q8_0 1 B per element -> 2048 MiB against the real 2176 MiB.
    data = manifest(engine="ollama", version="0.20.0", k="q8_0", fa="on")
    analysis = analyse(data)
    cache = analysis.capacity.llamacpp
    assert (cache.total_bytes, cache.ollama_estimate_bytes) == (2176 * MiB, 2048 * MiB)
    assert any("Ollama's own estimate" in d.text for d in analysis.capacity.differences)


def test_ollama_silent_f16_fallback():
    data = manifest(engine="ollama", version="0.13.3", k="q8_0")
    analysis = analyse(data)
    facts = analysis.facts["llamacpp"]
    assert facts["ollama"]["fallback_f16"] is True and facts["k_type"] == "f16"
    assert analysis.capacity.llamacpp.total_bytes == 4096 * MiB  # what is really allocated
    # from v0.30 the same setting is an error, not a fallback
    later = analyse(manifest(engine="ollama", version="0.30.2", k="q8_0", fa="off")).facts["llamacpp"]
    assert later["start_error_reason"] == "fa_off" and later["k_type"] == "q8_0"


def test_swa_cells_gpt_oss():
    # Computed from llama-kv-cache-iswa.cpp (Ollama v0.20.0 vendored copy L45-L70), not log-verified:
    # gpt-oss-20b, -c 32768, -ub 512: SWA cells = pad256(min(32768, 128 + 512)) = 768;
    # f16: 12 full layers x 32768 x 512 x 2 x 2 B = 768 MiB, 12 SWA layers x 768 x 1024 x 2 B = 18 MiB.
    data = manifest(version="b7200", fa="on", model="openai/gpt-oss-20b", max_num_seqs=1)
    cache = llamacpp_cache(analyse(data).deployment)
    assert cache.swa_cells == 768
    assert cache.total_bytes == 768 * MiB + 18 * MiB
    full = llamacpp_cache(analyse(manifest(version="b7200", fa="on", model="openai/gpt-oss-20b", max_num_seqs=1,
                                           swa_full=True)).deployment)
    assert full.total_bytes == 1536 * MiB
    # llama-server's -np auto (4 slots, unified) widens the window: pad256(128 x 4 + 512) = 1024 cells.
    auto = llamacpp_cache(analyse(manifest(version="b7200", fa="on", model="openai/gpt-oss-20b")).deployment)
    assert auto.swa_cells == 1024


@pytest.mark.parametrize("backend,k,v,all_quants,exists", [
    ("cuda", "q8_0", "q8_0", False, True),
    ("cuda", "q4_1", "q4_1", False, False),   # needs GGML_CUDA_FA_ALL_QUANTS
    ("cuda", "q4_1", "q4_1", True, True),
    ("cuda", "iq4_nl", "iq4_nl", True, False),  # never on CUDA
    ("cuda", "q8_0", "f16", False, False),     # mixed: default build has none
    ("metal", "q8_0", "q4_0", False, False),   # Metal: K == V only
    ("metal", "iq4_nl", "iq4_nl", False, False),
    ("metal", "q5_1", "q5_1", False, True),
    ("cpu", "q8_0", "iq4_nl", False, True),
])
def test_kernel_table(backend, k, v, all_quants, exists):
    verdict = load_ggml_catalog().kernel(backend, "b7200", all_quants, k, v, 128, 128)
    assert verdict.exists is exists


def test_auto_resolves_off_without_kernel():
    # issue ggml-org/llama.cpp#28524: -ctv q4_0 with K f16 on CUDA, -fa auto -> FA off -> refused
    facts = analyse(manifest(version="b7200", k="f16", v="q4_0", backend="cuda")).facts["llamacpp"]
    assert facts["fa_requested"] == "auto" and facts["fa_effective"] == "off"
    assert facts["start_error"] == "quantized V cache was requested, but this requires Flash Attention"
    on = analyse(manifest(version="b7200", k="f16", v="q4_0", backend="cuda", fa="on")).facts["llamacpp"]
    assert on["cpu_fallback"] is True and on["start_error"] is None


def test_unknown_backend_and_bad_versions_do_not_crash():
    for version in ("b", "nightly", "b99999999", "0.1"):
        data = manifest(version=version, k="q8_0")
        data["engine"].pop("build")
        analysis = analyse(data)
        assert "llamacpp" in analysis.facts


@pytest.mark.parametrize("patch", [
    {"serving": {"context_size": 10**15}},
    {"serving": {"context_size": -3, "max_num_seqs": 0}},
    {"engine": {"name": "ollama", "version": "v0.30.0", "env": {"OLLAMA_NUM_PARALLEL": "99999999999999999999",
                                                                "OLLAMA_CONTEXT_LENGTH": ["x"], "OLLAMA_KV_CACHE_TYPE": 5,
                                                                "OLLAMA_FLASH_ATTENTION": None}}},
    {"engine": {"name": "ollama", "version": "0.13.3", "env": "not a mapping"}},
    {"engine": {"name": "llama.cpp", "version": "b00000", "flash_attention": "yes", "build": {"backend": "tpu"}}},
    {"kv_cache": {"dtype": "", "key_dtype": "Q8_0", "value_dtype": 7}},
    {"model": {"name": "x", "geometry": {"num_layers": 2, "num_kv_heads": 0, "head_dim": 1}}},
    {"model": {"name": "x", "geometry": {"num_layers": 3, "num_kv_heads": 2, "head_dim": 48}}},
])
def test_hostile_values_do_not_crash(patch):
    data = manifest(k="q8_0", fa="on")
    for key, value in patch.items():
        data[key] = {**data.get(key, {}), **value} if isinstance(data.get(key), dict) else value
    analysis = analyse(data)
    assert isinstance(analysis.facts["llamacpp"]["build"], str)
    cache = analysis.capacity.llamacpp if analysis.capacity is not None else None
    if cache is not None:
        assert cache.total_bytes >= 0 and cache.cells >= 0


def test_capacity_targets_gate():
    # targets.min_kv_tokens gates llama.cpp's cells as it gates vLLM's pool tokens (KV601).
    data = manifest(version="b7200", k="q8_0", fa="on", max_num_seqs=1)
    data["targets"] = {"min_kv_tokens": 40000}
    below = analyse(data).facts["capacity"]["below_targets"]
    assert [item["target"] for item in below] == ["min_kv_tokens"]
    data["targets"] = {"min_kv_tokens": 32768}
    assert analyse(data).facts["capacity"]["below_targets"] == []


# b11312 (ggml-org/llama.cpp 0c1e57098, vendored by llama-cpp-python 0.3.36), read in its source:
# src/llama-context.cpp L3840-L3849 turns -fa auto on for a quantized V cache and prints
# "quantized V cache requires flash_attn to be enabled" when it is off; ggml/src/ggml-cuda/fattn.cu
# L495-L539 claims every K/V type but iq4_nl and converts pairs not in GGML_CUDA_FA_QUANTS to f16.
def test_b11312_auto_enables_flash_attention_for_quantized_v():
    facts = analyse(manifest(version="b11312", k="f16", v="q4_0", backend="cuda")).facts["llamacpp"]
    assert facts["fa_effective"] == "on" and facts["fa_auto_enabled_for_v"] is True
    assert facts["start_error"] is None
    assert facts["fallback_kind"] == "f16_conversion"  # f16-q4_0 is not in the default GGML_CUDA_FA_QUANTS


def test_b11312_refusal_text():
    facts = analyse(manifest(version="b11312", k="q8_0", fa="off")).facts["llamacpp"]
    assert facts["start_error"] == "quantized V cache requires flash_attn to be enabled"


@pytest.mark.parametrize("k,v,kind", [("q8_0", "q8_0", None), ("q4_1", "q4_1", "f16_conversion"),
                                      ("iq4_nl", "iq4_nl", "cpu")])
def test_b11312_cuda_pairs(k, v, kind):
    facts = analyse(manifest(version="b11312", k=k, v=v, fa="on", backend="cuda")).facts["llamacpp"]
    assert facts["fallback_kind"] == kind


def test_ollama_030_turns_flash_attention_off_on_cc_7_2():
    # Ollama v0.30+ passes --flash-attn off when a CUDA GPU fails FlashAttentionSupported (CC 7.2,
    # ml/device.go L571-L600 at v0.32.15); a quantized cache then fails to load (KV336).
    data = manifest(engine="ollama", version="0.30.2", k="q8_0", backend="cuda")
    data["hardware"] = {"gpu": "Jetson-AGX-Xavier", "compute_capability": "7.2", "memory": "32GiB"}
    facts = analyse(data).facts["llamacpp"]
    assert facts["fa_requested"] == "off" and facts["start_error_reason"] == "fa_off"
    data["engine"]["flash_attention"] = "on"
    assert analyse(data).facts["llamacpp"]["start_error"] is None


@pytest.mark.parametrize("model,fallback", [("Qwen/Qwen3-32B", False), ("meta-llama/Llama-3.1-8B-Instruct", True)])
def test_ollama_allowlisted_architectures_get_flash_attention(model, fallback):
    # v0.11.8-v0.24: FlashAttention() (fs/ggml/ggml.go at v0.24.0) turns FA on for qwen3, gemma3, gpt-oss, ...
    # without OLLAMA_FLASH_ATTENTION, so their quantized cache is applied; other models stay f16.
    facts = analyse(manifest(engine="ollama", version="0.13.3", k="q8_0", model=model)).facts["llamacpp"]
    assert facts["ollama"]["fallback_f16"] is fallback
    assert facts["start_error"] is None


@pytest.mark.parametrize("version,backend,model,fallback", [
    ("0.11.4", "cpu", "meta-llama/Llama-3.1-8B-Instruct", True),    # the CPU counts from v0.12.0
    ("0.12.3", "cpu", "meta-llama/Llama-3.1-8B-Instruct", False),
    ("0.12.3", "cuda", "google/gemma-2-9b-it", True),                 # gemma2: SupportsFlashAttention false (v0.11.11+)
    ("0.12.3", "cuda", "meta-llama/Llama-3.1-8B-Instruct", False),
])
def test_ollama_flash_attention_support_checks(version, backend, model, fallback):
    data = manifest(engine="ollama", version=version, k="q8_0", fa="on", backend=backend, model=model)
    facts = analyse(data).facts["llamacpp"]
    assert facts["ollama"]["fallback_f16"] is fallback
    assert facts["start_error"] is None


def test_gemma_1_is_not_gemma_2():
    data = manifest(engine="ollama", version="0.12.3", k="q8_0", fa="on", backend="cuda", model="google/gemma-2b")
    assert analyse(data).facts["llamacpp"]["ollama"]["fallback_f16"] is False


@pytest.mark.parametrize("k,mib", [("f16", 80.0), ("q8_0", 42.5)])
def test_smollm2_kv_from_a_public_log(k, mib):
    # gianlucamazza/xllama PR #181 logs SmolLM2-360M (32 layers, 5 KV heads x 64) at ctx 2048:
    # KV 80 MiB with f16 and 42.5 MiB with q8_0.
    data = manifest(version="b7200", k=k, fa="on", ctx=2048, max_num_seqs=1, model="HuggingFaceTB/SmolLM2-360M")
    data["model"]["geometry"] = {"num_layers": 32, "num_attention_heads": 15, "num_kv_heads": 5, "head_dim": 64,
                                 "max_position_embeddings": 8192}
    cache = llamacpp_cache(analyse(data).deployment)
    assert cache.total_bytes == mib * MiB
