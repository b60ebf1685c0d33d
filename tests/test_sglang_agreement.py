"""kvlint's SGLang verdicts agree with the truth tables derived by running each release's code.

For every catalogued SGLang release with a table under tools/derive/tables/sglang/ (written by
tools/derive/sglang_truth.py from the release's own ServerArgs resolution) and every grid cell
(GPU x model architecture x attention backend, `auto` included, x kv_cache_dtype),
tools/derive/sglang_compare.py puts a manifest-equivalent document through kvlint's resolve stage
and rules and compares: accepted or refused (and the reason class), the backend `auto` ends up
with, the backend after SGLang's rewrites, the kv_cache_dtype after them, the page size. Every
disagreement must be one that tools/derive/known_disagreements_sglang.yaml lists with its reason;
a new one fails, and so does a listed one that no longer occurs or occurs in other releases.

Offline: the tables are committed; nothing is downloaded.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
DERIVE = REPO / "tools" / "derive"
sys.path.insert(0, str(DERIVE))

import sglang_compare as C  # noqa: E402



@pytest.fixture(scope="module")
def comparison():
    order, counts, found = C.compare_all()
    return order, counts, {C.key_text(k): sorted(e["releases"], key=C.vkey) for k, e in found.items()}


def _known() -> dict:
    doc = yaml.safe_load(C.KNOWN.read_text(encoding="utf-8"))
    return {e["key"]: e for e in doc["disagreements"]}


def test_every_catalogued_release_with_a_table_is_compared(comparison) -> None:
    order, counts, _ = comparison
    # the four releases the catalog lists from the wheels, each with its table
    assert {"0.4.10.post2", "0.5.2", "0.5.9", "0.5.23"} <= set(order)
    for v in order:
        doc = json.loads((C.TABLES / f"{v}.json").read_text())
        n = sum(len(d) for g in doc["grid"].values() for m in g.values() for d in m.values())
        assert counts[v]["cells"] == n and counts[v]["compared"] + counts[v]["weights_refused"] == n
        assert counts[v]["compared"] > 0.8 * n, (v, counts[v])  # gpt-oss's mxfp4 weights


def test_each_known_disagreement_has_a_reason() -> None:
    for key, e in _known().items():
        reason = (e.get("reason") or "").strip()
        assert reason.startswith(("derivation limit: ", "open: ")), key
        assert e.get("releases"), key


def test_no_new_disagreement(comparison) -> None:
    _, _, found = comparison
    known = _known()
    new = {k: r for k, r in found.items() if k not in known}
    assert not new, "kvlint's SGLang verdicts disagree with the released code:\n" + "\n".join(
        f"- {k}  [releases {', '.join(r)}]" for k, r in sorted(new.items()))


def test_known_disagreements_still_occur_where_listed(comparison) -> None:
    _, _, found = comparison
    known = _known()
    stale = sorted(k for k in known if k not in found)
    assert not stale, "fixed (remove from known_disagreements_sglang.yaml):\n" + "\n".join(stale)
    moved = {k: (e["releases"], found[k]) for k, e in known.items()
             if [r.strip() for r in e["releases"].split(",")] != found[k]}
    assert not moved, "releases changed (listed, found):\n" + "\n".join(
        f"- {k}: {a} -> {b}" for k, (a, b) in sorted(moved.items()))


def test_the_comparison_reads_the_code_and_kvlint_independently() -> None:
    """Two cells read by hand in the releases' sources, so the comparison itself cannot drift:
    0.5.2 on H100 with no backend picks fa3 (model_runner.py model_specific_adjustment, Hopper
    with CUDA >= 12.3 and an fa3-default architecture), and trtllm_mha on H100 raises 'TRTLLM MHA
    backend is only supported on Blackwell GPUs' (server_args.py __post_init__)."""
    doc = json.loads((C.TABLES / "0.5.2.json").read_text())
    cell = C.table_cell(doc, "sm90", "llama", "auto", "auto")
    assert cell["refused"] is False and cell["backend"] == "fa3"
    refused = C.table_cell(doc, "sm90", "llama", "trtllm_mha", "auto")
    assert refused["refused"] and refused["class"] == "gpu"
    assert refused["where"].startswith("sglang/srt/server_args.py:")
    ours = C.Kvlint().verdict("0.5.2", "sm90", "meta-llama/Llama-3.1-8B-Instruct", "auto", "auto")
    assert ours["backend"] == "fa3" and not ours["refused"]


def test_catalog_backends_are_the_release_choices() -> None:
    """The catalog's SGLang backends of each release are exactly that release's
    --attention-backend choices (the table's axis, read from its argparse), so KV204 ('no
    attention backend') is left for a name the release does not have at all."""
    kv = C.Kvlint()
    for v in C.catalogued_releases(kv):
        doc = json.loads((C.TABLES / f"{v}.json").read_text())
        choices = set(doc["axes"]["attention_backend"]) - {"auto"}
        release = kv.catalogs.engines.release("sglang", v)
        assert set(release.backend_names()) == choices, v


def _code(version: str, gpu: str, model: str, backend: str, dtype: str) -> dict:
    return C.table_cell(json.loads((C.TABLES / f"{version}.json").read_text()), gpu, model, backend, dtype)


def test_a_backend_of_another_device_is_refused_for_the_release_reason() -> None:
    """aiter (ROCm) pinned on a B200: the release's argument stage refuses gpt-oss for its sinks
    first ('GptOssForCausalLM requires one of [...]', 0.5.9) and an FP4 cache for the backend
    list ('KV4 MHA expects attention_backend to be one of [...]'); kvlint names that reason and the
    device (KV323), not an unknown backend (KV204)."""
    kv = C.Kvlint()
    sinks = _code("0.5.9", "sm100", "gpt_oss", "aiter", "fp8_e4m3")
    assert sinks["refused"] and sinks["class"] == "model" and "GptOssForCausalLM" in sinks["message"]
    ours = kv.verdict("0.5.9", "sm100", "openai/gpt-oss-20b", "aiter", "fp8_e4m3")
    assert "KV204" not in ours["codes"] and {"KV315", "KV323"} <= set(ours["codes"])
    fp4 = _code("0.5.9", "sm100", "llama", "aiter", "fp4_e2m1")
    assert fp4["refused"] and fp4["class"] == "dtype"
    ours = kv.verdict("0.5.9", "sm100", "meta-llama/Llama-3.1-8B-Instruct", "aiter", "fp4_e2m1")
    assert "KV204" not in ours["codes"] and {"KV301", "KV323"} <= set(ours["codes"])
    # a name 0.5.2 does not have (nsa is a choice from 0.5.3): still KV204
    assert "nsa" not in json.loads((C.TABLES / "0.5.2.json").read_text())["axes"]["attention_backend"]
    assert kv.verdict("0.5.2", "sm90", "deepseek-ai/DeepSeek-V3", "nsa", "auto")["codes"] == ["KV204"]


def test_new_backends_follow_the_release_cells() -> None:
    """Cells of 0.5.23's table for backends the catalog lacked: dsa takes fp8_e4m3 on H100;
    cutedsl_mla is refused off SM100 ('CuteDSL MLA backend is only supported on Blackwell GPUs
    (SM100)') and on SM100 for fp8_e5m2 ('only supports kv-cache-dtype of fp8_e4m3, bf16, or
    auto'); compressed runs as dsv4; hpc_ops gets page 64."""
    kv = C.Kvlint()
    cell = _code("0.5.23", "sm90", "deepseek_mla", "dsa", "fp8_e4m3")
    assert not cell["refused"] and cell["backend"] == "dsa"
    assert not kv.verdict("0.5.23", "sm90", "deepseek-ai/DeepSeek-V3", "dsa", "fp8_e4m3")["refused"]
    gpu = _code("0.5.23", "sm90", "deepseek_mla", "cutedsl_mla", "fp8_e4m3")
    assert gpu["refused"] and "only supported on Blackwell" in gpu["message"]
    assert kv.verdict("0.5.23", "sm90", "deepseek-ai/DeepSeek-V3", "cutedsl_mla", "fp8_e4m3")["codes"] == ["KV323"]
    e5m2 = _code("0.5.23", "sm100", "deepseek_mla", "cutedsl_mla", "fp8_e5m2")
    assert e5m2["refused"] and e5m2["class"] == "dtype"
    assert kv.verdict("0.5.23", "sm100", "deepseek-ai/DeepSeek-V3", "cutedsl_mla", "fp8_e5m2")["codes"] == ["KV301"]
    alias = _code("0.5.23", "sm100", "deepseek_mla", "compressed", "auto")
    ours = kv.verdict("0.5.23", "sm100", "deepseek-ai/DeepSeek-V3", "compressed", "auto")
    assert alias["backend"] == "dsv4" and ours["backend"] == "dsv4"
    page = _code("0.5.23", "sm90", "llama", "hpc_ops", "bf16")
    ours = kv.verdict("0.5.23", "sm90", "meta-llama/Llama-3.1-8B-Instruct", "hpc_ops", "bf16")
    assert page["page"] == 64 and ours["page"] == 64 and not ours["refused"]


def test_model_specific_backends_are_never_a_remedy() -> None:
    """SGLang's argument stage takes nsa or dual_chunk_flash_attn for any model (0.5.9's table
    accepts nsa for Llama), but their constructors refuse other models (nsa_backend.py v0.5.9
    L300-301 asserts a DeepSeek NSA model): a remedy naming them would not run."""
    cell = _code("0.5.9", "sm90", "llama", "nsa", "fp8_e4m3")
    assert not cell["refused"]
    from kvlint.catalog import load_catalogs
    from kvlint.resolve import resolve

    data = {"apiVersion": "kvlint/v1", "kind": "Deployment", "metadata": {"name": "x"},
            "engine": {"name": "sglang", "version": "0.5.9", "attention_backend": "trtllm_mha"},
            "hardware": {"gpu": "H100-SXM-80GB"}, "model": {"name": "meta-llama/Llama-3.1-8B-Instruct"},
            "kv_cache": {"dtype": "fp8_e4m3"}}
    facts = resolve(data, "x.yaml", None, load_catalogs(())).facts
    named = {r.get("backend") for r in facts.get("remedies", [])}
    assert "fa3" in named and not named & {"nsa", "dual_chunk_flash_attn"}


def test_fp4_follows_the_model_kind_lists() -> None:
    """SGLang 0.5.9's FP4 check names backends per attention kind ('KV4 MHA expects
    attention_backend to be one of [triton, torch_native, flex_attention, trtllm_mha]', 'KV4 MLA
    expects ... [cutlass_mla, flashinfer, trtllm_mla, flashmla]'): cutlass_mla takes fp4_e2m1 for
    DeepSeek-V3 and refuses it for gemma-2; torch_native the reverse."""
    kv = C.Kvlint()
    cases = [("deepseek_mla", "deepseek-ai/DeepSeek-V3", "cutlass_mla"), ("gemma2", "google/gemma-2-9b", "cutlass_mla"),
             ("deepseek_mla", "deepseek-ai/DeepSeek-V3", "torch_native"), ("gemma2", "google/gemma-2-9b", "torch_native")]
    for key, model, backend in cases:
        code = _code("0.5.9", "sm100", key, backend, "fp4_e2m1")
        ours = kv.verdict("0.5.9", "sm100", model, backend, "fp4_e2m1")
        assert code["refused"] == ours["refused"], (key, backend, code, ours)
        if code["refused"]:
            assert code["class"] == "dtype" and "KV4 M" in code["message"] and ours["codes"] == ["KV301"]
    assert _code("0.5.9", "sm100", "gemma2", "cutlass_mla", "fp4_e2m1")["refused"]
    assert not _code("0.5.9", "sm100", "deepseek_mla", "cutlass_mla", "fp4_e2m1")["refused"]


def test_flashinfer_nvfp4_page_follows_the_trtllm_mha_decoder() -> None:
    """0.5.23 runs an nvfp4 cache with flashinfer prefill and trtllm_mha decode
    (handle_nvfp4_prefill_kv_dequant_dtype), and trtllm_mha's page rule makes page 1 into 64: the
    table's page for flashinfer + nvfp4 on B200, and what kvlint's capacity plans with."""
    kv = C.Kvlint()
    for key, model in (("llama", "meta-llama/Llama-3.1-8B-Instruct"), ("deepseek_mla", "deepseek-ai/DeepSeek-V3")):
        cell = _code("0.5.23", "sm100", key, "flashinfer", "nvfp4")
        assert not cell["refused"] and cell["page"] == 64
        assert kv.verdict("0.5.23", "sm100", model, "flashinfer", "nvfp4")["page"] == 64
        assert _code("0.5.23", "sm100", key, "flashinfer", "fp8_e4m3")["page"] == 1
        assert kv.verdict("0.5.23", "sm100", model, "flashinfer", "fp8_e4m3")["page"] == 1


def test_fp4_off_cuda_and_nvfp4_off_blackwell_are_gpu_refusals() -> None:
    """SGLang refuses an FP4 cache off CUDA before any backend check ('KV4 is not tested on non-CUDA
    platforms', 0.5.9 and 0.5.23) and nvfp4 off SM100/SM120 ('--kv-cache-dtype=nvfp4 requires
    Blackwell SM100 or SM120'): the table's class is the GPU for triton on MI300X and for auto on an
    A100, and kvlint's reason is the GPU too (KV323), not the backend's dtype list."""
    kv = C.Kvlint()
    for version, dtype in (("0.5.9", "fp4_e2m1"), ("0.5.23", "fp4_mx_block16")):
        cell = _code(version, "gfx942", "llama", "triton", dtype)
        assert cell["refused"] and cell["class"] == "gpu" and "non-CUDA" in cell["message"]
        ours = kv.verdict(version, "gfx942", "meta-llama/Llama-3.1-8B-Instruct", "triton", dtype)
        assert ours["refused"] and "gpu" in ours["classes"], ours
        # on a CUDA GPU triton takes it (0.5.9 A100; the table accepts)
        assert not _code(version, "sm80", "llama", "triton", dtype)["refused"]
        assert not kv.verdict(version, "sm80", "meta-llama/Llama-3.1-8B-Instruct", "triton", dtype)["refused"]
    cell = _code("0.5.23", "sm80", "deepseek_mla", "auto", "nvfp4")
    assert cell["refused"] and cell["class"] == "gpu"
    ours = kv.verdict("0.5.23", "sm80", "deepseek-ai/DeepSeek-V3", "auto", "nvfp4")
    assert "gpu" in ours["classes"], ours


def test_nsa_on_a_non_mla_model_is_a_recorded_derivation_limit() -> None:
    """0.5.9's argument stage takes nsa for Llama as for DeepSeek-V3 (the table accepts both); the
    backend's constructor asserts a DeepSeek NSA model, an MLA architecture (nsa_backend.py v0.5.9
    L300-301), which the derivation does not run. kvlint refuses the non-MLA pairing (KV324) and
    keeps the MLA one, and the known list carries that evidence."""
    kv = C.Kvlint()
    assert not _code("0.5.9", "sm90", "llama", "nsa", "fp8_e4m3")["refused"]
    assert not _code("0.5.9", "sm90", "deepseek_mla", "nsa", "fp8_e4m3")["refused"]
    assert kv.verdict("0.5.9", "sm90", "meta-llama/Llama-3.1-8B-Instruct", "nsa", "fp8_e4m3")["codes"] == ["KV324"]
    assert not kv.verdict("0.5.9", "sm90", "deepseek-ai/DeepSeek-V3", "nsa", "fp8_e4m3")["refused"]
    reason = _known()["verdict | nsa | * | llama | cuda | code: accepted | kvlint: refused (KV324)"]["reason"]
    assert reason.startswith("derivation limit: ") and "nsa_backend.py v0.5.9 L300-301" in reason
