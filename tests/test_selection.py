"""Auto-selection outcomes, from the release sources (vllm-project/vllm `vllm/platforms/cuda.py`
`_get_backend_priorities` and `get_attn_backend_cls` at v0.33.0, L240-392 at v0.11.0; `rocm.py`).

Each row states a fact read in the release source named in the comment, not output copied from
the code.
"""

import pytest

from kvlint.catalog.engines import load_engine_catalog
from kvlint.catalog.selection import predict_backend

H100, A100, L40S, B200 = (9, 0), (8, 0), (8, 9), (10, 0)


@pytest.fixture(scope="module")
def catalog():
    return load_engine_catalog()


# (release, gpu, dtype, has_sinks, expected backend, expected first choice, engine fails?)
CASES = [
    # cuda.py (v0.33.0): H100 fp8_e5m2 -> FA invalid (e5m2) -> FLASHINFER
    ("0.33.0", H100, "fp8_e5m2", False, "FLASHINFER", "FLASH_ATTN", False),
    ("0.25.1", H100, "fp8_e5m2", False, "FLASHINFER", "FLASH_ATTN", False),
    # v0.19.1 flash_attn.py L168: startswith("fp8") passes validation on FA3/SM90; then
    # get_fp8_dtype_for_flashattn raises "Unrecognized FP8 dtype" -> picked, then fails
    ("0.19.1", H100, "fp8_e5m2", False, "FLASH_ATTN", "FLASH_ATTN", True),
    # v0.11.0: FA on SM90 is chosen for fp8 kv (hard-coded), FA raises for e5m2 (L103-107)
    ("0.11.0", H100, "fp8_e5m2", False, "FLASH_ATTN", "FLASH_ATTN", True),
    # cuda.py: H100 int8_per_token_head -> FA and FlashInfer invalid -> TRITON_ATTN
    ("0.33.0", H100, "int8_per_token_head", False, "TRITON_ATTN", "FLASH_ATTN", False),
    ("0.25.1", H100, "int8_per_token_head", False, "TRITON_ATTN", "FLASH_ATTN", False),
    # v0.20.0 flash_attn.py L188-193: is_quantized_kv_cache -> FA3/SM90 passes; FA then fails
    ("0.20.0", H100, "int8_per_token_head", False, "FLASH_ATTN", "FLASH_ATTN", True),
    # cuda.py: A100 fp8 -> FA2 invalid -> FLASHINFER
    ("0.33.0", A100, "fp8", False, "FLASHINFER", "FLASH_ATTN", False),
    ("0.25.1", A100, "fp8", False, "FLASHINFER", "FLASH_ATTN", False),
    ("0.19.1", A100, "fp8", False, "FLASHINFER", "FLASH_ATTN", False),
    # v0.11.0 cuda.py L240-392: "(has_sink or fp8 kv) and not SM90 -> Triton"; Triton E4M3
    # does not compile below SM89 (vllm#26431, reported on v0.11.0)
    ("0.11.0", A100, "fp8", False, "TRITON_ATTN", "TRITON_ATTN", True),
    # v0.31.0 flashinfer.py supports_kv_cache_dtype L499-506: nvfp4 only on the SM100 family (TRTLLM)
    # -> H100 has no backend for nvfp4 -> ValueError
    ("0.31.0", H100, "nvfp4", False, None, "FLASH_ATTN", True),
    # v0.33.0 flashinfer.py _nvfp4_kv_on_fa2 L114 (SM80/SM90/SM120 families) and L654
    # supports_kv_cache_dtype: plain nvfp4 goes through FlashInfer's FA2 path -> FLASHINFER
    ("0.33.0", H100, "nvfp4", False, "FLASHINFER", "FLASH_ATTN", False),
    # cuda.py: A100/L40S with sinks (gpt-oss) -> TRITON_ATTN
    ("0.33.0", A100, "auto", True, "TRITON_ATTN", "FLASH_ATTN", False),
    ("0.33.0", L40S, "auto", True, "TRITON_ATTN", "FLASH_ATTN", False),
    ("0.19.1", L40S, "auto", True, "TRITON_ATTN", "FLASH_ATTN", False),
    ("0.11.0", A100, "auto", True, "TRITON_ATTN", "TRITON_ATTN", False),
    # plain configurations: first choice wins
    ("0.33.0", H100, "fp8", False, "FLASH_ATTN", "FLASH_ATTN", False),
    ("0.19.1", H100, "auto", False, "FLASH_ATTN", "FLASH_ATTN", False),
    ("0.11.0", H100, "fp8", False, "FLASH_ATTN", "FLASH_ATTN", False),
    # SM100 list starts with FLASHINFER (cuda.py _get_backend_priorities), which takes fp8
    ("0.33.0", B200, "fp8", False, "FLASHINFER", "FLASHINFER", False),
    ("0.33.0", B200, "nvfp4", False, "FLASHINFER", "FLASHINFER", False),
]


@pytest.mark.parametrize("version,gpu,dtype,sinks,backend,first,fails", CASES)
def test_vllm_auto_selection(catalog, version, gpu, dtype, sinks, backend, first, fails):
    release = catalog.release("vllm", version)
    sel = predict_backend(release, gpu, "nvidia", dtype, 128, False, has_sinks=sinks)
    assert sel is not None
    assert sel.backend == backend
    assert sel.first_choice == first
    assert sel.fails is fails
    if backend != first:
        assert sel.fell_back or backend is None
        assert sel.rejected and sel.rejected[0][0] == first
        assert sel.rejected[0][1]  # a concrete reason for KV307
    if fails:
        assert sel.reason


def test_a100_fp8_without_flashinfer_goes_to_triton_and_fails(catalog):
    # cuda.py: "FLASHINFER, or TRITON_ATTN if FlashInfer is not installed — and TRITON then raises below SM89"
    release = catalog.release("vllm", "0.33.0")
    sel = predict_backend(release, A100, "nvidia", "fp8", 128, False, missing_packages={"flashinfer"})
    assert sel.backend == "TRITON_ATTN"
    assert sel.fails
    assert "SM89" in sel.reason
    assert [name for name, _ in sel.rejected] == ["FLASH_ATTN", "FLASHINFER"]


def test_fallback_reason_names_the_rejected_dtype(catalog):
    sel = predict_backend(catalog.release("vllm", "0.33.0"), H100, "nvidia", "fp8_e5m2", 128, False)
    name, reason = sel.rejected[0]
    assert name == "FLASH_ATTN"
    assert "fp8_e5m2" in reason and "sm90" in reason


def test_per_head_scales_only_flash_attn_fa3(catalog):
    # flash_attn.py supports_per_head_quant_scales: per-head scales need FLASH_ATTN with FA>=3; otherwise auto errors
    release = catalog.release("vllm", "0.19.1")
    assert predict_backend(release, H100, "nvidia", "fp8", 128, False, per_head_scales=True).backend == "FLASH_ATTN"
    sel = predict_backend(release, L40S, "nvidia", "fp8", 128, False, per_head_scales=True)
    assert sel.backend is None and sel.fails


def test_mla_flashmla_block_size(catalog):
    # cuda.py: on SM90 the MLA order is FLASH_ATTN_MLA, FLASHMLA, ...; FLASH_ATTN_MLA takes no fp8
    release = catalog.release("vllm", "0.33.0")
    sel = predict_backend(release, H100, "nvidia", "fp8", 576, True)
    assert sel.first_choice == "FLASH_ATTN_MLA"
    assert sel.backend == "FLASHMLA"
    # v0.11.0: the selector's FLASHMLA branch falls through for block_size != 64 (cuda.py
    # L281-289), but an MLA model without VLLM_ATTENTION_BACKEND never gets there with 16:
    # check_and_update_config forces 64 for FlashMLA on SM90 (L142-165) and 128 with
    # CUTLASS_MLA on SM100 (L142-150, L169-170) before the selector runs
    old = catalog.release("vllm", "0.11.0")
    assert predict_backend(old, H100, "nvidia", "auto", 576, True, block_size=16, sparse=False).backend == "FLASHMLA"
    assert predict_backend(old, (10, 0), "nvidia", "auto", 576, True, block_size=16, sparse=False).backend == "CUTLASS_MLA"
    # ... but any index_topk model gets FlashMLA Sparse first (get_attn_backend_cls L252-255), so
    # with the model's kind unknown the prediction is unknown, not FLASHMLA
    assert predict_backend(old, H100, "nvidia", "auto", 576, True, block_size=16, sparse=True).backend == "FLASHMLA_SPARSE"
    assert predict_backend(old, H100, "nvidia", "auto", 576, True, block_size=16) is None
    assert predict_backend(old, (8, 0), "nvidia", "auto", 576, True, block_size=16).backend == "TRITON_MLA"


def test_rocm_order_starts_with_rocm_attn(catalog):
    # rocm.py L531, L775: ROCM_ATTN first; per-token-head goes to TRITON_ATTN
    release = catalog.release("vllm", "0.33.0")
    assert predict_backend(release, None, "amd", "fp8", 128, False).backend == "ROCM_ATTN"
    assert predict_backend(release, None, "amd", "int8_per_token_head", 128, False).backend == "TRITON_ATTN"
