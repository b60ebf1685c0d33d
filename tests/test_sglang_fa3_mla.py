"""SGLang's fa3 runs an MLA model on Hopper only.

The runner's backend factory asserts `(major == 8 and not use_mla_backend) or major == 9`
("FlashAttention v3 Backend requires SM>=80 and SM<=90"): sgl-project/sglang
python/sglang/srt/model_executor/model_runner.py v0.4.10.post2 L1428-1434 and v0.5.2 L1650-1656,
python/sglang/srt/layers/attention/attention_registry.py v0.5.9 L126-135 and v0.5.21 L228-240.
The argument stage the derived tables record takes fa3 with an MLA model on any GPU (the table
cell below), which is why this fact is the catalog's and not the tables'.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import invoke

TABLES = Path(__file__).resolve().parent.parent / "tools" / "derive" / "tables" / "sglang"

MANIFEST = """\
apiVersion: kvlint/v1
kind: Deployment
metadata: {{name: fa3}}
engine: {{name: sglang, version: "{version}", attention_backend: fa3}}
hardware: {{gpu: {gpu}, count: 8}}
parallelism: {{tensor: 8}}
model: {{name: {model}}}
kv_cache: {{dtype: auto}}
"""


def _codes(tmp_path, version: str, gpu: str, model: str) -> set:
    path = tmp_path / "m.yaml"
    path.write_text(MANIFEST.format(version=version, gpu=gpu, model=model), encoding="utf-8")
    out = invoke(["check", "--output-format", "concise", "--select", "KV2,KV3", str(path)]).output
    return {word for line in out.splitlines() for word in line.split() if word.startswith("KV")}


@pytest.mark.parametrize("version", ["0.4.10.post2", "0.5.2", "0.5.9", "0.5.23"])
def test_fa3_refuses_an_mla_model_on_sm8x_only(tmp_path, version) -> None:
    table = json.loads((TABLES / f"{version}.json").read_text(encoding="utf-8"))
    cell = table["outcomes"][table["grid"]["sm80"]["deepseek_mla"]["fa3"]["auto"]]
    assert cell["accepted"]  # the argument stage takes it; the runner's assertion refuses it
    assert "KV323" in _codes(tmp_path, version, "A100-80GB", "deepseek-ai/DeepSeek-V3")
    assert "KV323" not in _codes(tmp_path, version, "H100-SXM-80GB", "deepseek-ai/DeepSeek-V3")
    assert "KV323" not in _codes(tmp_path, version, "A100-80GB", "meta-llama/Llama-3.1-8B-Instruct")


@pytest.mark.parametrize("backend, runs_on, refused_on", [
    # sgl-kernel/cmake/flashmla.cmake: FlashMLA built for sm_90a and sm_100a only
    ("flashmla", ("H100-SXM-80GB", "B200-180GB"), ("A100-80GB",)),
    # sgl-kernel/csrc/attention/cutlass_mla_kernel.cu: MlaSm100 (Sm100FmhaMlaKernelTmaWarpspecialized)
    ("cutlass_mla", ("B200-180GB",), ("A100-80GB", "H100-SXM-80GB")),
])
def test_mla_kernels_run_where_they_are_built(tmp_path, backend, runs_on, refused_on) -> None:
    """The argument stage takes flashmla and cutlass_mla on any GPU (the 0.5.9 table's sm80 cell);
    their kernels exist for the GPUs above only, so elsewhere kvlint reports KV323 and its remedies
    do not offer them."""
    table = json.loads((TABLES / "0.5.9.json").read_text(encoding="utf-8"))
    assert table["outcomes"][table["grid"]["sm80"]["deepseek_mla"][backend]["auto"]]["accepted"]
    path = tmp_path / "m.yaml"
    for gpu in runs_on + refused_on:
        path.write_text(MANIFEST.format(version="0.5.9", gpu=gpu, model="deepseek-ai/DeepSeek-V3")
                        .replace("attention_backend: fa3", f"attention_backend: {backend}"), encoding="utf-8")
        out = invoke(["check", "--output-format", "concise", "--select", "KV3", str(path)]).output
        assert ("KV323" in out) == (gpu in refused_on), (backend, gpu, out)
    path.write_text(MANIFEST.format(version="0.5.9", gpu="A100-80GB", model="deepseek-ai/DeepSeek-V3"), encoding="utf-8")
    out = invoke(["check", "--output-format", "concise", "--select", "KV3", str(path)]).output
    offered = re.search(r"on this release and GPU (.*?) accepts? this configuration", out)
    assert offered and "flashinfer" in offered.group(1) and backend not in offered.group(1), out
