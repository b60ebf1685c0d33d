"""Release boundaries that the hand-written catalog once had wrong, each proved by the derived cell
(the release's own code, tools/derive/tables/vllm/<release>.json) and by kvlint's verdict on both
sides of the boundary. The whole grid is compared by test_derived_agreement; these name the facts.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from packaging.version import Version

from conftest import invoke

TABLES = Path(__file__).resolve().parent.parent / "tools" / "derive" / "tables" / "vllm"
sys.path.insert(0, str(TABLES.parent.parent))

import table  # noqa: E402

RELEASES = sorted((p.stem for p in TABLES.glob("*.json")), key=Version)

MANIFEST = """\
apiVersion: kvlint/v1
kind: Deployment
metadata: {{name: why}}
engine: {{name: vllm, version: "{version}", attention_backend: {backend}}}
hardware: {{gpu: {gpu}, count: 8}}
parallelism: {{tensor: 8}}
model: {{name: deepseek-ai/DeepSeek-V3}}
kv_cache: {{dtype: fp8}}
"""


def _table(version: str) -> dict:
    return json.loads((TABLES / f"{version}.json").read_text(encoding="utf-8"))


def _code_accepts(version: str, backend: str, device: str, dtype: str, head: int) -> bool:
    entry = _table(version)["backends"].get(backend)
    if entry is None or "reasons" not in entry.get("validate", {}):
        return False
    cell = {"device": device, "variant": "plain", "kv_cache_dtype": dtype, "head_size": head, "block_size": 64}
    return not any(table.lookup(tree, cell) for tree in entry["validate"]["reasons"].values())


def _codes(tmp_path, version: str, backend: str, gpu: str) -> set:
    path = tmp_path / "m.yaml"
    path.write_text(MANIFEST.format(version=version, backend=backend, gpu=gpu))
    out = invoke(["check", "--output-format", "concise", "--select", "KV2,KV3", str(path)]).output
    return {word for line in out.splitlines() for word in line.split() if word.startswith("KV")}


def test_triton_mla_takes_fp8_from_0_18(tmp_path) -> None:
    accepting = [v for v in RELEASES if _code_accepts(v, "TRITON_MLA", "sm90", "fp8", 576)]
    assert accepting and accepting[0] == "0.18.0"
    assert accepting == [v for v in RELEASES if Version(v) >= Version("0.18.0")]
    assert "KV301" in _codes(tmp_path, "0.17.1", "TRITON_MLA", "H200-141GB")
    assert "KV301" not in _codes(tmp_path, "0.18.0", "TRITON_MLA", "H200-141GB")


def test_tokenspeed_mla_exists_from_0_21(tmp_path) -> None:
    having = [v for v in RELEASES if "TOKENSPEED_MLA" in _table(v)["backends"]]
    assert having == [v for v in RELEASES if Version(v) >= Version("0.21.0")]
    assert _code_accepts("0.21.0", "TOKENSPEED_MLA", "sm100", "fp8", 576)
    assert "KV204" in _codes(tmp_path, "0.20.2", "TOKENSPEED_MLA", "B200-180GB")
    assert not _codes(tmp_path, "0.21.0", "TOKENSPEED_MLA", "B200-180GB") & {"KV204", "KV301", "KV323"}


def _check(tmp_path, manifest: str) -> set:
    path = tmp_path / "m.yaml"
    path.write_text(manifest)
    out = invoke(["check", "--output-format", "concise", "--select", "KV2,KV3", str(path)]).output
    return {word for line in out.splitlines() for word in line.split() if word.startswith("KV")}


PER_HEAD = """\
apiVersion: kvlint/v1
kind: Deployment
metadata: {{name: why}}
engine: {{name: vllm, version: "{version}", attention_backend: {backend}}}
hardware: {{gpu: {gpu}, count: 2}}
parallelism: {{tensor: 2}}
model: {{name: google/gemma-3-27b-it, kv_scales: per-head}}
kv_cache: {{dtype: {dtype}, scales: {{granularity: per-head, source: checkpoint}}}}
"""

GEOMETRY = """\
apiVersion: kvlint/v1
kind: Deployment
metadata: {{name: why}}
engine: {{name: vllm, version: "{version}", attention_backend: {backend}}}
hardware: {{gpu: {gpu}, count: 1}}
model: {{name: x/plain, geometry: {{num_layers: 8, num_kv_heads: 2, head_dim: {head}, num_attention_heads: 16}}}}
kv_cache: {{dtype: {dtype}}}
"""


def test_per_head_scales_from_0_15_on_hopper(tmp_path) -> None:
    """vLLM 0.15.0 compressed_tensors.py (CompressedTensorsKVCacheMethod.create_weights) takes a
    kv_cache_scheme with strategy attn_head and asserts the impl's supports_per_head_quant_scales,
    which FlashAttentionImpl.__init__ (flash_attn.py) sets to get_flash_attn_version() >= 3: FA3 on
    SM90; v0.14.1's validate_kv_cache_scheme raises for any strategy but "tensor". SM100 resolves
    FA2 until 0.17 (fa_utils.get_flash_attn_version), and the 0.17 tables show FA4 there."""
    def codes(version, gpu):
        return _check(tmp_path, PER_HEAD.format(version=version, backend="FLASH_ATTN", gpu=gpu, dtype="fp8"))

    assert "KV302" in codes("0.14.1", "H100-SXM-80GB")
    assert "KV302" not in codes("0.15.0", "H100-SXM-80GB")
    assert "KV302" in codes("0.16.0", "B200-180GB")
    assert "KV302" not in codes("0.17.0", "B200-180GB")
    # the derived cell from 0.17: FLASH_ATTN takes per-head scales on SM90 and SM100 only
    for version in ("0.17.0", "0.33.0"):
        answer = _table(version)["backends"]["FLASH_ATTN"]["predicates"]["supports_per_head_quant_scales"]["answer"]
        assert table.lookup(answer, {"device": "sm90"}) is True
        assert table.lookup(answer, {"device": "sm100"}) is True
        assert table.lookup(answer, {"device": "sm89"}) is False


def test_flashinfer_takes_head_512_from_0_22(tmp_path) -> None:
    heads = {v: _table(v)["backends"]["FLASHINFER"]["predicates"]["get_supported_head_sizes"]["answer"]
             for v in RELEASES if Version(v) >= Version("0.11.1")}
    assert [v for v, h in heads.items() if 512 in h] == [v for v in heads if Version(v) >= Version("0.22.0")]

    def codes(version):
        return _check(tmp_path, GEOMETRY.format(version=version, backend="FLASHINFER", gpu="B200-180GB",
                                                head=512, dtype="bfloat16"))

    assert "KV311" in codes("0.21.0")
    assert "KV311" not in codes("0.22.0")


def test_flash_attn_upgrades_sm90_large_heads_to_fa4_from_0_21(tmp_path) -> None:
    """v0.21.0 fa_utils.py get_flash_attn_version: 'FA3 does not support head_size=... on SM90:
    upgrading FlashAttention 3 -> 4' for head_size > 256 (v0.20.2 upgrades only diff-KV with
    sinks), and FlashAttentionBackend.supports_head_size takes up to 512 where FA4 is supported.
    FP8 passes validation there (flash_attn_supports_fp8 asks without the head size) but the
    FA4 call of 0.21-0.30 takes no descales: a runtime finding, not a refusal."""
    def codes(version, backend, dtype="bfloat16"):
        return _check(tmp_path, GEOMETRY.format(version=version, backend=backend, gpu="H100-SXM-80GB",
                                                head=512, dtype=dtype))

    assert "KV311" in codes("0.20.2", "FLASH_ATTN")
    assert "KV307" in codes("0.20.2", "auto")
    assert not codes("0.21.0", "FLASH_ATTN") & {"KV311", "KV301"}
    assert "KV307" not in codes("0.21.0", "auto")
    assert not codes("0.30.0", "FLASH_ATTN") & {"KV311", "KV301"}
    assert "KV301" not in codes("0.21.0", "FLASH_ATTN", "fp8")


def test_triton_mla_refuses_fp8_below_sm89_from_0_26(tmp_path) -> None:
    """v0.26.0 triton_mla.py TritonMLAImpl.__init__ raises 'FP8 KV cache is not supported by the
    Triton MLA backend ... requires SM89+' when not has_device_capability(89); v0.25.1 has no such
    check. Validation (the derived tables) takes fp8 on SM80 in both releases."""
    for version in ("0.25.1", "0.26.0"):
        assert _code_accepts(version, "TRITON_MLA", "sm80", "fp8", 576)
    assert "KV305" not in _codes(tmp_path, "0.25.1", "TRITON_MLA", "A100-SXM-80GB")
    assert "KV305" in _codes(tmp_path, "0.26.0", "TRITON_MLA", "A100-SXM-80GB")
    assert "KV305" not in _codes(tmp_path, "0.26.0", "TRITON_MLA", "L40S-48GB")  # SM89


def test_rocm_attn_refuses_head_80_before_0_17(tmp_path) -> None:
    """RocmAttentionImpl.__init__ calls RocmAttentionBackend.validate_head_size (v0.16.0
    rocm_attn.py), which raises for a size get_supported_head_sizes does not list; 80 joins the
    list in 0.17.0. Plain Python: the derived class answer shows it."""
    for version in ("0.11.1", "0.16.0"):
        assert 80 not in _table(version)["backends"]["ROCM_ATTN"]["predicates"]["get_supported_head_sizes"]["answer"]
    assert 80 in _table("0.17.0")["backends"]["ROCM_ATTN"]["predicates"]["get_supported_head_sizes"]["answer"]

    def codes(version):
        return _check(tmp_path, GEOMETRY.format(version=version, backend="ROCM_ATTN", gpu="MI300X",
                                                head=80, dtype="auto"))

    assert "KV311" in codes("0.16.0")
    assert "KV311" not in codes("0.17.0")


def test_flex_attention_refuses_per_head_scales_whatever_the_dtype(tmp_path) -> None:
    """From 0.17.0 the selector validates use_per_head_quant_scales (attention.py passes it from
    the kv_cache_scheme, which also forces the cache dtype to fp8); FLEX_ATTENTION refuses it for
    every cache dtype. 0.16.0 validates no such variant (the impl's assertion at load refuses it)."""
    assert "use_per_head_quant_scales" not in _table("0.16.0")["backends"]["FLEX_ATTENTION"]["validate"]["variants"]
    for version in ("0.17.0", "0.33.0"):
        t = _table(version)
        reasons = t["backends"]["FLEX_ATTENTION"]["validate"]["reasons"]["per-head quant scales not supported"]
        for dtype in t["grid"]["kv_cache_dtype"]:
            cell = {"device": "sm90", "variant": "use_per_head_quant_scales", "kv_cache_dtype": dtype,
                    "head_size": 128, "block_size": 16}
            assert table.lookup(reasons, cell) is True, (version, dtype)
    for dtype in ("auto", "fp8"):
        assert "KV302" in _check(tmp_path, PER_HEAD.format(version="0.17.0", backend="FLEX_ATTENTION",
                                                           gpu="H100-SXM-80GB", dtype=dtype))


REPO = TABLES.parent.parent.parent.parent
# deepseek-ai/DeepSeek-V3.2's real config.json (DeepseekV32ForCausalLM, index_topk 2048), byte for
# byte from ai-dynamo/aiconfigurator (tests/data/hub/sources.json names the commit).
DSV32_CONFIG = REPO / "tests" / "data" / "hub" / "configs" / "deepseek-ai--DeepSeek-V3.2.json"

SPARSE = """\
apiVersion: kvlint/v1
kind: Deployment
metadata: {{name: why}}
engine: {{name: vllm, version: "{version}", attention_backend: {backend}}}
hardware: {{gpu: {gpu}, count: 8}}
parallelism: {{tensor: 8}}
model: {{name: deepseek-ai/DeepSeek-V3.2-Exp, config: config.json}}
kv_cache: {{dtype: {dtype}}}
"""


def _facts_and_codes(tmp_path, version: str, backend: str, gpu: str = "H200-141GB", dtype: str = "fp8"):
    """kvlint's verdict on DeepSeek-V3.2 (an index_topk model: config.json next to the manifest;
    the tests chdir to tmp_path so that the file is inside the project kvlint reads)."""
    (tmp_path / "config.json").write_text(DSV32_CONFIG.read_text(encoding="utf-8"))
    path = tmp_path / "m.yaml"
    path.write_text(SPARSE.format(version=version, backend=backend, gpu=gpu, dtype=dtype))
    out = invoke(["check", "--output-format", "concise", "--select", "KV2,KV3", str(path)]).output
    facts = json.loads(invoke(["facts", str(path)]).output)[0]
    return facts, {word for line in out.splitlines() for word in line.split() if word.startswith("KV")}


def test_every_registered_backend_is_catalogued(tmp_path, monkeypatch) -> None:
    """The derived tables list each release's registry (AttentionBackendEnum); kvlint's catalog
    must know every name of it, or a real backend gets KV204."""
    monkeypatch.chdir(tmp_path)
    from kvlint.catalog.engines import load_engine_catalog

    cat = load_engine_catalog()
    for version in RELEASES:
        names = set(cat.release("vllm", version).backend_names())
        missing = set(_table(version)["backends"]) - names
        assert not missing, (version, missing)
    # FLASHINFER_MLA_SPARSE joins the registry in 0.17.0; XFORMERS leaves it after 0.11.2
    assert "FLASHINFER_MLA_SPARSE" not in _table("0.16.0")["backends"]
    assert "FLASHINFER_MLA_SPARSE" in _table("0.17.0")["backends"]
    _, before = _facts_and_codes(tmp_path, "0.16.0", "FLASHINFER_MLA_SPARSE", "B200-180GB")
    facts, after = _facts_and_codes(tmp_path, "0.17.0", "FLASHINFER_MLA_SPARSE", "B200-180GB")
    assert "KV204" in before and "KV204" not in after
    assert "KV344" in after and facts["backend"]["checks_known"] is False  # its checks: unknown, said so
    assert "XFORMERS" in _table("0.11.2")["backends"] and "XFORMERS" not in _table("0.12.0")["backends"]
    assert "KV204" not in _codes(tmp_path, "0.11.2", "XFORMERS", "H200-141GB")
    assert "KV204" in _codes(tmp_path, "0.12.0", "XFORMERS", "H200-141GB")


def test_backend_of_another_device_is_kv323_not_kv204(tmp_path) -> None:
    """AttentionBackendEnum (vllm/v1/attention/backends/registry.py) is one registry for every
    platform: ROCM_ATTN is a name vLLM 0.30.0 has, which the CUDA selector refuses."""
    codes = _codes(tmp_path, "0.30.0", "ROCM_ATTN", "H200-141GB")
    assert "KV323" in codes and "KV204" not in codes


def test_sparse_mla_backend_refuses_a_dense_mla_model(tmp_path, monkeypatch) -> None:
    """validate_configuration: use_sparse != cls.is_sparse() -> 'non-sparse not supported'
    (vllm/attention/backends/abstract.py v0.11.1 L203-207; vllm/v1/attention/backend.py v0.30.0
    L316-320), and 'sparse not supported' the other way round."""
    monkeypatch.chdir(tmp_path)
    for version in ("0.11.1", "0.30.0"):
        assert "KV324" in _codes(tmp_path, version, "FLASHMLA_SPARSE", "H200-141GB")  # DeepSeek-V3: dense
        _, codes = _facts_and_codes(tmp_path, version, "FLASHMLA_SPARSE")
        assert "KV324" not in codes
        _, codes = _facts_and_codes(tmp_path, version, "FLASHMLA")
        assert "KV324" in codes


def test_deepseek_v32_fp8_is_fp8_ds_mla_before_selection(tmp_path, monkeypatch) -> None:
    """DeepseekV32ForCausalLM.verify_and_update_config (vllm/model_executor/models/config.py)
    turns any fp8* cache dtype into fp8_ds_mla from 0.11.1 to 0.17.1 (v0.18.0 keeps only
    bfloat16 -> auto); selection then sees fp8_ds_mla, which FLASHMLA_SPARSE lists, and auto
    picks the sparse backend (the dense ones refuse an index_topk model)."""
    monkeypatch.chdir(tmp_path)
    for version in ("0.12.0", "0.17.1"):
        facts, codes = _facts_and_codes(tmp_path, version, "FLASHMLA_SPARSE")
        assert "KV301" not in codes
        assert facts["kv_cache"]["format"] == "fp8_ds_mla"
        facts, codes = _facts_and_codes(tmp_path, version, "auto")
        assert facts["selection"]["chosen"] == "FLASHMLA_SPARSE" and not codes & {"KV301", "KV307"}
    facts, codes = _facts_and_codes(tmp_path, "0.18.0", "FLASHMLA_SPARSE")
    assert facts["kv_cache"]["format"] == "fp8_e4m3" and "KV301" not in codes  # 0.18 lists fp8 itself
    # from 0.25 on SM90 FLASH_ATTN_MLA_SPARSE (checks not modelled) precedes FLASHMLA_SPARSE:
    # the prediction is unknown, never the dense FLASHMLA
    facts, _ = _facts_and_codes(tmp_path, "0.30.0", "auto")
    assert facts["selection"].get("chosen") != "FLASHMLA"
