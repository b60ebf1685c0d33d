"""Engine catalog: data validity, sources on every fact, dtype acceptance and features by release.

Expected values are facts read in each engine release's source (the catalog entries cite file, release
and lines; comments name the code).
"""

import time
import typing

import pytest
import yaml

from kvlint.catalog.engines import (
    CatalogError,
    builtin_engines_dir,
    load_engine_catalog,
    load_engine_file,
)
from kvlint.versions import parse_version, version_matches
from kvlint.deployment import CacheFormatId

H100, A100, L40S, B200 = (9, 0), (8, 0), (8, 9), (10, 0)
# every final vLLM release on PyPI from 0.11.0 (`pip index versions vllm`), patch releases included
VLLM_RELEASES = ["0.11.0", "0.11.1", "0.11.2", "0.12.0", "0.13.0", "0.14.0", "0.14.1", "0.15.0", "0.15.1",
                 "0.16.0", "0.17.0", "0.17.1", "0.18.0", "0.18.1", "0.19.0", "0.19.1", "0.20.0", "0.20.1",
                 "0.20.2", "0.21.0", "0.22.0", "0.22.1", "0.23.0", "0.24.0", "0.25.0", "0.25.1", "0.26.0",
                 "0.27.0", "0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0"]


@pytest.fixture(scope="module")
def catalog():
    return load_engine_catalog(validate=True)


def test_builtin_files_validate(catalog):
    assert {"vllm", "sglang", "tensorrt-llm"} <= set(catalog.engines())
    assert len(catalog.files) >= 4


def test_all_vllm_releases_known(catalog):
    # the vLLM releases on PyPI
    assert list(catalog.known_versions("vllm")) == VLLM_RELEASES
    assert catalog.release("vllm", "0.34.0") is None  # unknown -> KV201
    assert catalog.release("vllm", "not-a-version") is None
    assert catalog.release("nope", "1.0") is None
    assert catalog.release("vllm", "0.19.1").version == "0.19.1"


def _fact_entries(doc):
    """Every mapping that states a fact: list items of the fact sections and their constraints."""
    for section in ("releases", "defaults", "features", "flash_attn_versions", "dtypes",
                    "backends", "selection", "rewrites"):
        for i, entry in enumerate(doc.get(section) or ()):
            yield f"{section}/{i}", entry
            for j, c in enumerate(entry.get("constraints") or ()):
                yield f"{section}/{i}/constraints/{j}", c


def _missing_sources(doc):
    bad = []
    for where, entry in _fact_entries(doc):
        sources = entry.get("sources")
        if not sources or not all((s.get("url") or (s.get("repo") and s.get("path"))) for s in sources):
            bad.append(where)
    return bad


def test_every_fact_has_a_source():
    for path in sorted(builtin_engines_dir().glob("*.yaml")):
        doc = yaml.safe_load(path.read_text())
        assert _missing_sources(doc) == [], path.name


def test_meta_test_catches_a_fact_without_source():
    doc = {"engine": "vllm", "features": [{"name": "x", "status": "available", "sources": []}],
           "backends": [{"name": "B", "platforms": ["cuda"], "mla": False, "kv_cache_dtypes": [{"dtypes": ["auto"]}],
                         "sources": [{"repo": "a/b", "path": "p"}],
                         "constraints": [{"id": "c", "applies": {}, "message": "m"}]}]}
    assert _missing_sources(doc) == ["features/0", "backends/0/constraints/0"]


def test_unverified_facts_say_why():
    for path in sorted(builtin_engines_dir().glob("*.yaml")):
        doc = yaml.safe_load(path.read_text())
        for where, entry in _fact_entries(doc):
            if entry.get("verified") is False:
                assert entry.get("note") or entry.get("message"), f"{path.name} {where}"


def test_schema_formats_match_deployment_cache_format_ids():
    import json
    from kvlint.resources import schemas_dir

    schema = json.loads((schemas_dir() / "catalog-engine.json").read_text())
    enum = set(schema["$defs"]["format"]["enum"]) - {"model", None}
    assert enum == set(typing.get_args(CacheFormatId))


def test_schema_invalid_extra_dir_raises(tmp_path):
    (tmp_path / "bad.yaml").write_text("engine: vllm\nfeatures:\n  - {name: x, status: available}\n")
    with pytest.raises(CatalogError) as exc:
        load_engine_catalog([builtin_engines_dir(), tmp_path])
    assert "bad.yaml" in exc.value.file
    assert "sources" in exc.value.message


def test_bad_specifier_in_extra_dir_raises(tmp_path):
    (tmp_path / "bad.yaml").write_text(
        "engine: vllm\nfeatures:\n  - {name: x, status: available, versions: '>=zz',"
        " sources: [{url: 'https://example.com'}]}\n")
    with pytest.raises(CatalogError):
        load_engine_catalog([tmp_path])


def test_extra_dir_adds_release_and_overrides(tmp_path):
    (tmp_path / "engines").mkdir()
    (tmp_path / "engines" / "vllm-next.yaml").write_text(
        "engine: vllm\nreleases:\n  - versions: ['0.34.0']\n    sources: [{url: 'https://example.com/internal'}]\n"
        "defaults:\n  - {name: gpu_memory_utilization, value: 0.95, versions: '>=0.34',"
        " sources: [{url: 'https://example.com/internal'}]}\n")
    cat = load_engine_catalog([builtin_engines_dir(), tmp_path])
    rel = cat.release("vllm", "0.34.0")
    assert rel is not None
    assert rel.default("gpu_memory_utilization") == 0.95
    assert rel.backend("FLASH_ATTN") is not None  # open-ended ranges carry over
    assert cat.release("vllm", "0.33.0").default("gpu_memory_utilization") == 0.92


def test_load_is_fast():
    # CPU time, not wall time: a guard against a catalog load that re-parses YAML on every call
    # (seconds), not a benchmark; other processes on a loaded machine do not count against it.
    start = time.process_time()
    load_engine_catalog()
    assert time.process_time() - start < 0.5  # the cached load is ~20 ms


# ---------------------------------------------------------------- dtypes by release (vllm/config/cache.py CacheDType)

@pytest.mark.parametrize("version,literal,present", [
    ("0.11.0", "fp8_ds_mla", False), ("0.12.0", "fp8_ds_mla", True),
    ("0.17.0", "float16", False), ("0.18.0", "float16", True),
    ("0.19.1", "int8_per_token_head", False), ("0.20.0", "int8_per_token_head", True),
    ("0.20.0", "nvfp4", True), ("0.19.1", "nvfp4", False),
    ("0.24.0", "int4_per_token_head", False), ("0.25.0", "int4_per_token_head", True),
    ("0.27.0", "nvfp4_4over6", False), ("0.28.0", "nvfp4_4over6", True),
    ("0.29.0", "nvfp4_ds_mla", False), ("0.30.0", "nvfp4_ds_mla", True),
    ("0.32.0", "ultraquant_4bit", True), ("0.32.0", "octave_k3v4", False), ("0.33.0", "octave_k3v4", True),
    ("0.11.0", "fp8_inc", True), ("0.11.0", "int8", False),
])
def test_vllm_dtype_literal_by_release(catalog, version, literal, present):
    assert (catalog.release("vllm", version).dtype(literal) is not None) is present


def test_vllm_dtype_formats(catalog):
    rel = catalog.release("vllm", "0.33.0")
    assert rel.dtype("fp8").format_for("e4m3") == "fp8_e4m3"       # fp8 = fp8_e4m3 (cache_dtype docstring)
    assert rel.dtype("fp8").format_for("e4m3fnuz") == "fp8_e4m3fnuz"  # MI300 FNUZ (kv_cache.py is_fp8_fnuz)
    assert rel.dtype("fp8_e5m2").format == "fp8_e5m2"
    assert rel.dtype("auto").format == "model" and not rel.dtype("auto").quantized
    assert rel.dtype("int4_per_token_head").format == "int4_per_token_head"
    assert rel.dtype("nvfp4_4over6").format == "nvfp4"  # same bytes as nvfp4 (nvfp4_kv_cache_full_dim)
    ptH = rel.dtype("fp8_per_token_head")
    assert ptH.scale_granularity == "per-token-head" and ptH.scale_sources == ("dynamic",)
    assert ptH.inline_scale_bytes_per_token_head == 8  # 2 x fp32 per token per kv head (triton_attn.py)
    assert "per-head" in rel.dtype("fp8").allowed_granularities
    assert "checkpoint" not in rel.dtype("fp8_e5m2").scale_sources  # e5m2 + checkpoint scales raise (attention.py L205-220)


# ---------------------------------------------------------------- backends (vllm/v1/attention/backends/*.py)

def test_flash_attn_never_accepts_e5m2_from_022(catalog):
    for v in ("0.22.0", "0.25.1", "0.33.0"):
        verdict = catalog.release("vllm", v).backend("FLASH_ATTN").accepts("fp8_e5m2", H100, 128)
        assert not verdict.ok and verdict.stage == "select"
        assert verdict.reason == f"vLLM {v} FLASH_ATTN on sm90 accepts fp8 and fp8_e4m3, not fp8_e5m2"
        assert verdict.sources


def test_flash_attn_fp8_by_gpu_and_release(catalog):
    def fa(v, gpu, head=128):
        return catalog.release("vllm", v).backend("FLASH_ATTN").accepts("fp8", gpu, head).ok
    assert fa("0.19.1", H100) and fa("0.33.0", H100)            # FA3 on SM90
    assert not fa("0.33.0", A100) and not fa("0.33.0", L40S)     # FA2: no FP8
    assert not fa("0.26.0", B200) and fa("0.27.0", B200)         # FA4 on SM100 from 0.27
    assert not fa("0.30.0", H100, 512) and fa("0.31.0", H100, 512)  # FA4 hd512 on SM90 from 0.31
    assert catalog.release("vllm", "0.31.0").backend("FLASH_ATTN").preferred_block_size(H100, 512, "fp8", True) == 64


def test_triton_fp8_needs_sm89(catalog):
    triton = catalog.release("vllm", "0.33.0").backend("TRITON_ATTN")
    v = triton.accepts("fp8", A100, 128)
    assert not v.ok and v.stage == "init" and "SM89" in v.reason
    assert triton.accepts("fp8", L40S, 128).ok
    assert triton.accepts("int8_per_token_head", A100, 128).ok


def test_per_token_head_only_triton(catalog):
    rel = catalog.release("vllm", "0.25.1")
    for name in ("FLASH_ATTN", "FLASHINFER", "FLEX_ATTENTION"):
        assert not rel.backend(name).accepts("int8_per_token_head", H100, 128).ok
    assert rel.backend("TRITON_ATTN").accepts("int4_per_token_head", H100, 128).ok
    assert not catalog.release("vllm", "0.20.0").backend("TRITON_ATTN").accepts("int4_per_token_head", H100, 128).ok


def test_per_head_scales_gate(catalog):
    fa = catalog.release("vllm", "0.19.1").backend("FLASH_ATTN")
    assert fa.accepts("fp8", H100, 128, per_head_scales=True).ok
    v = fa.accepts("fp8", L40S, 128, per_head_scales=True)
    assert not v.ok and any(p.kind == "per_head_scales" for p in v.problems)
    # v0.15.0 compressed_tensors.py takes strategy attn_head on FA3 (SM90); v0.14.1 refuses it;
    # SM100 resolves FA2 until 0.17 (fa_utils.get_flash_attn_version)
    assert not catalog.release("vllm", "0.14.1").backend("FLASH_ATTN").accepts("fp8", H100, 128, per_head_scales=True).ok
    assert catalog.release("vllm", "0.16.0").backend("FLASH_ATTN").accepts("fp8", H100, 128, per_head_scales=True).ok
    assert not catalog.release("vllm", "0.16.0").backend("FLASH_ATTN").accepts("fp8", (10, 0), 128, per_head_scales=True).ok
    assert not catalog.release("vllm", "0.19.1").backend("FLASHINFER").accepts("fp8", H100, 128, per_head_scales=True).ok


def test_block_and_head_sizes(catalog):
    rel = catalog.release("vllm", "0.33.0")
    assert rel.backend("FLASHMLA").preferred_block_size() == 64
    assert rel.backend("CUTLASS_MLA").preferred_block_size() == 128
    assert not rel.backend("FLASH_ATTN").accepts("auto", H100, 128, block_size=8).ok
    assert rel.backend("FLASH_ATTN").accepts("auto", H100, 128, block_size=32).ok
    v = rel.backend("FLASHINFER").accepts("auto", H100, 96)
    assert not v.ok and v.problems[0].kind == "head_size"
    assert not rel.backend("FLASHMLA").accepts("fp8", A100, 576).ok  # major 9 or 10


def test_tree_attn_removed_at_021(catalog):
    assert catalog.release("vllm", "0.20.0").backend("TREE_ATTN") is not None
    assert catalog.release("vllm", "0.21.0").backend("TREE_ATTN") is None
    assert catalog.release("vllm", "0.21.0").feature("tree_attn").status == "removed"


def test_rocm_flash_attn_is_aiter(catalog):
    b = catalog.release("vllm", "0.33.0").backend("FLASH_ATTN", platform="rocm")
    assert b.name == "ROCM_AITER_FA"
    assert not b.accepts("fp8", None, 128, platform="rocm", per_head_scales=True).ok


# ---------------------------------------------------------------- features and defaults by release

@pytest.mark.parametrize("version,status", [
    ("0.11.0", "available"), ("0.12.0", "available"), ("0.13.0", "deprecated"), ("0.14.0", "deprecated"),
    ("0.15.0", "ignored"), ("0.16.0", "ignored"), ("0.17.0", "ignored"), ("0.33.0", "ignored")])
def test_vllm_attention_backend_env(catalog, version, status):
    f = catalog.release("vllm", version).feature("attention_backend_env")
    assert f.status == status and f.sources


def test_vllm_features_by_version(catalog):
    def avail(v, name):
        return catalog.release("vllm", v).feature(name).available
    assert not avail("0.12.0", "attention_backend_cli") and avail("0.13.0", "attention_backend_cli")
    # compressed_tensors.py: v0.14.1 refuses strategy attn_head, v0.15.0 takes it
    assert not avail("0.14.1", "per_head_quant_scales") and avail("0.15.0", "per_head_quant_scales")
    assert not avail("0.18.0", "kv_cache_dtype_skip_layers") and avail("0.19.0", "kv_cache_dtype_skip_layers")
    assert avail("0.18.0", "calculate_kv_scales")
    assert catalog.release("vllm", "0.19.0").feature("calculate_kv_scales").status == "deprecated"
    assert catalog.release("vllm", "0.27.0").feature("calculate_kv_scales").status == "deprecated"
    assert catalog.release("vllm", "0.28.0").feature("calculate_kv_scales").status == "removed"
    assert not avail("0.24.0", "int4_per_token_head") and avail("0.25.0", "int4_per_token_head")
    assert catalog.release("vllm", "0.33.0").feature("no_such_feature").status == "unknown"


def test_vllm_defaults_by_version(catalog):
    def d(v, name):
        return catalog.release("vllm", v).default(name)
    assert d("0.19.1", "gpu_memory_utilization") == 0.9 and d("0.20.0", "gpu_memory_utilization") == 0.92
    assert d("0.25.1", "sliding_window_inflight_tokens") == "max_num_batched_tokens"
    assert d("0.26.0", "sliding_window_inflight_tokens") == "max_in_flight_tokens"
    assert d("0.20.0", "kv_cache_size_log_formula") != d("0.21.0", "kv_cache_size_log_formula")
    assert d("0.24.0", "skip_layer_block_alignment") == "page_unify"
    assert d("0.25.0", "skip_layer_block_alignment") == "align_heterogeneous"
    assert d("0.33.0", "block_size") == 16
    tiers = d("0.33.0", "max_num_batched_tokens")["tiers"]
    assert tiers[0]["min_memory_gib"] == 160 and tiers[-1]["serve"] == 2048


# ---------------------------------------------------------------- SGLang and TensorRT-LLM

def test_sglang(catalog):
    assert catalog.release("sglang", "0.5.2").dtype("fp4_e2m1") is None
    rel = catalog.release("sglang", "0.5.9")
    assert rel.dtype("fp4_e2m1").format == "sglang_fp4"
    assert rel.dtype("fp8_e4m3").allowed_granularities == ("per-tensor",)  # per-tensor only (sglang layers/quantization/kv_cache.py)
    assert not rel.feature("per_head_quant_scales").available
    rw = rel.rewrites_for(backend="fa3", dtype="fp8_e5m2")
    assert [r.set for r in rw if r.id == "fa3-e5m2-to-triton"] == [{"attention_backend": "triton"}]
    assert rel.rewrites_for(backend="trtllm_mha", page_size=128)[0].set == {"page_size": 64}
    assert not rel.rewrites_for(backend="trtllm_mha", page_size=32)
    assert not rel.backend("trtllm_mha").accepts("fp8_e4m3", H100, 128).ok  # SM100 only (sglang server_args.py)


def test_tensorrt_llm(catalog):
    rel = catalog.release("tensorrt-llm", "1.2.1")
    assert rel.dtype("nvfp4").format == "trtllm_nvfp4"
    assert rel.dtype("int8").format == "int8"
    assert not rel.check_dtype("nvfp4", H100).ok and rel.check_dtype("nvfp4", B200).ok  # SM10x only
    assert rel.check_dtype("fp8", A100).ok  # Ampere = Y in the hardware matrix
    assert rel.default("free_gpu_memory_fraction") == 0.9
    assert rel.default("tokens_per_block") == 32
    assert rel.backend("TRTLLM").supports_block_size(64) and not rel.backend("TRTLLM").supports_block_size(48)


def test_every_entry_version_range_parses():
    for path in sorted(builtin_engines_dir().glob("*.yaml")):
        doc = load_engine_file(path, validate=True)
        for group in doc.get("releases", ()):
            for v in group["versions"]:
                parse_version(v)


def test_versions_helper():
    assert version_matches("0.19.1", ">=0.17,<0.28")
    assert not version_matches("0.28.0", ">=0.17,<0.28")
    assert version_matches("0.19.1", "==0.19.*") and not version_matches("0.20.0", "==0.19.*")
    assert version_matches("0.20.0", "!=0.19.1")
    assert parse_version("1.0.0rc4") < parse_version("1.0.0") < parse_version("1.0.0.post1")
    assert parse_version("0.5.10") > parse_version("0.5.9")
    assert version_matches("12.1", ">=8.0,<=12.1") and not version_matches("12.2", "<=12.1")
