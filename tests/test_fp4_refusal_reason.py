"""KV306 ("needs FP4 tensor cores") only where the GPU is the reason; KV347 where vLLM's FlashInfer
takes nvfp4 on the GPU but not for the model.

The expected verdicts are vLLM's own, from the derived tables (tools/derive/tables/vllm/<release>.json:
FLASHINFER's validate_configuration reasons, run from each release's code): from 0.32
`FlashInferBackend.supports_combination` (vllm/v1/attention/backends/flashinfer.py, v0.33.0
L667-688) refuses nvfp4 on compute capability 8.x/9.x/12.x at head size 64 ("fa2 prefill misreads
an NVFP4 KV cache at head_size 64") and with sinks ("the sink prefill wrapper cannot read an NVFP4
KV cache"), while `supports_kv_cache_dtype` takes plain nvfp4 there.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from kvlint.catalog import load_catalogs

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tools" / "derive"))
import table as T  # noqa: E402

from kvlint.resolve import resolve  # noqa: E402

CATALOGS = load_catalogs(())
# grid device of the tables -> a catalogued GPU of that compute capability
GPUS = {"sm80": "A100-80GB", "sm86": "A10-24GB", "sm89": "L40S-48GB", "sm90": "H100-SXM-80GB",
        "sm120": "RTX-PRO-6000-96GB"}
HEAD_64_SINKS = "openai/gpt-oss-20b"  # head_dim 64, attention sinks
HEAD_128 = "meta-llama/Llama-3.1-8B-Instruct"
HEAD_REASON = "fa2 prefill misreads an NVFP4 KV cache at head_size 64"


def _table(version: str) -> dict:
    return json.loads((REPO / "tools" / "derive" / "tables" / "vllm" / f"{version}.json").read_text())


def _reason_true(tab: dict, reason: str, device: str, head: int, variant: str) -> bool:
    tree = tab["backends"]["FLASHINFER"]["validate"]["reasons"].get(reason, False)
    return bool(T.lookup(tree, {"device": device, "kv_cache_dtype": "nvfp4", "head_size": head,
                                "variant": variant, "block_size": 16}))


def _codes(version: str, gpu: str, model: str, backend: str = "FLASHINFER"):
    data = {"apiVersion": "kvlint/v1", "kind": "Deployment", "metadata": {"name": "x"},
            "engine": {"name": "vllm", "version": version, "attention_backend": backend},
            "hardware": {"gpu": gpu}, "model": {"name": model}, "kv_cache": {"dtype": "nvfp4"}}
    return resolve(data, "x.yaml", None, CATALOGS).facts


@pytest.mark.parametrize("version", ["0.32.0", "0.33.0"])
@pytest.mark.parametrize("device", sorted(GPUS))
def test_the_model_not_the_gpu(version: str, device: str) -> None:
    tab = _table(version)
    # the release's own answers for this GPU
    takes_nvfp4 = T.lookup(tab["backends"]["FLASHINFER"]["predicates"]["supports_kv_cache_dtype"]["answer"],
                           {"device": device, "kv_cache_dtype": "nvfp4"})
    assert takes_nvfp4 is True
    assert _reason_true(tab, HEAD_REASON, device, 64, "plain")
    assert not _reason_true(tab, HEAD_REASON, device, 128, "plain")

    facts = _codes(version, GPUS[device], HEAD_64_SINKS)
    assert facts["backend"]["accepts_dtype"] is False
    assert facts["backend"]["dtype_gpu_bound"] is False  # KV306 stays quiet, KV347 fires
    assert "head size 64" in facts["backend"]["dtype_model_reason"]
    if facts["gpu"]["fp4"] is False:  # SM120 (RTX PRO 6000) has FP4 tensor cores: never KV306
        assert "FLASHINFER" in facts["kv_cache"]["fp4_gpu_backends"]

    facts = _codes(version, GPUS[device], HEAD_128)
    assert facts["backend"]["accepts_dtype"] is True  # no finding at all: the release takes it


def test_before_032_the_gpu_is_the_reason() -> None:
    """0.25-0.31: FlashInfer takes nvfp4 only on the SM100 family (the table says so), so KV306."""
    tab = _table("0.31.0")
    takes = T.lookup(tab["backends"]["FLASHINFER"]["predicates"]["supports_kv_cache_dtype"]["answer"],
                     {"device": "sm90", "kv_cache_dtype": "nvfp4"})
    assert takes is False
    facts = _codes("0.31.0", "H100-SXM-80GB", HEAD_128)
    assert facts["backend"]["dtype_gpu_bound"] is True
    assert facts["kv_cache"]["fp4_gpu_backends"] == []
