"""gpt-oss's MXFP4 MoE experts as vLLM holds them, counted with the weights it loads.

The expected bytes are never kvlint's own output:

* tools/derive/tables/vllm_mxfp4_moe/<release>.json: the release's own `Mxfp4MoEMethod.create_weights`,
  Marlin repack (`prepare_moe_fp4_layer_for_marlin` / `prepare_moe_mxfp4_layer_for_marlin`) and
  triton_kernels Hopper layouts, run on the meta device by tools/derive/vllm_mxfp4_probe.py: the
  bytes one MoE layer keeps on one GPU per backend and tensor-parallel size;
* the model catalog's checkpoint size, which must be the experts as stored plus the rest in bf16;
* the weights memory real vLLM start-ups logged ("Model loading took", benchmarks/capacity_logs),
  fit and holdout, as a check: nothing here was sized from them.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Dict

import pytest
from conftest import CliRunner

from conftest import REPO_ROOT, capacity_logs
from kvlint.capacity.vllm_mxfp4 import GPT_OSS_MXFP4, checkpoint_layer_bytes, layer_bytes
from kvlint.catalog import load_catalogs
from kvlint.cli import main

sys.path.insert(0, str(REPO_ROOT / "benchmarks"))
import capacity_accuracy  # noqa: E402

GiB = 1 << 30
CATALOG = load_catalogs(())
TABLES = {p.stem: json.loads(p.read_text())
          for p in sorted((REPO_ROOT / "tools" / "derive" / "tables" / "vllm_mxfp4_moe").glob("*.json"))}
BACKEND = {"MARLIN": "marlin", "TRITON": "triton", "FLASHINFER_TRTLLM_MXFP4_BF16": "flashinfer_trtllm",
           "FLASHINFER_CUTLASS_MXFP4_BF16": "flashinfer_cutlass"}

MANIFEST = """\
apiVersion: kvlint/v1
kind: Deployment
metadata:
  name: mxfp4
engine:
  name: vllm
  version: "{version}"{env}
hardware:
  gpu: {gpu}
  count: {tp}
parallelism:
  tensor: {tp}
model:
  name: {model}
kv_cache:
  dtype: auto
serving:
  max_model_len: 8192
"""


def _engine(tmp_path: Path, model: str, gpu: str, version: str, tp: int = 1, extra: str = "",
            env: str = "") -> Dict[str, Any]:
    path = tmp_path / f"{model.replace('/', '_')}-{gpu}-{tp}-{version}-{len(extra)}-{len(env)}.yaml"
    path.write_text(MANIFEST.format(model=model, gpu=gpu, tp=tp, version=version,
                                    env=f"\n  env:\n    {env}" if env else "") + extra)
    result = CliRunner().invoke(main, ["capacity", "--format", "json", str(path)])
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)[0]


def _table_layer(version: str, model: str, backend: str, tp: int) -> int:
    return TABLES[version]["models"][model]["backends"][backend][str(tp)]["layer_bytes"]


def test_tables_are_the_probe_s_and_cover_every_catalogued_layout():
    assert {"0.11.0", "0.12.0", "0.17.1", "0.19.0", "0.22.1", "0.25.1"} <= set(TABLES)
    for version, table in TABLES.items():
        assert table["generator"] == "tools/derive/vllm_mxfp4_probe.py" and table["vllm"] == version


@pytest.mark.parametrize("version", sorted(TABLES))
def test_layer_bytes_are_what_the_release_s_code_keeps(version):
    """Every backend and tp of both models: kvlint's shapes (kvlint/capacity/vllm_mxfp4.py), with the
    release's catalogued Triton details, give the bytes the release's own code kept."""
    fact = CATALOG.engines.release("vllm", version).default("mxfp4_moe_layout")
    assert fact, version
    for model, entry in TABLES[version]["models"].items():
        dims = GPT_OSS_MXFP4[model]
        assert entry["checkpoint_layer_bytes"]["1"] == checkpoint_layer_bytes(dims)
        for name, rows in entry["backends"].items():
            for tp, row in rows.items():
                mine = layer_bytes(dims, int(tp), BACKEND[name], bool(fact["hopper_value_prepad"]),
                                   fact["triton_keeps_loaded_scales"])
                assert mine == row["layer_bytes"], (version, model, name, tp)


def test_triton_details_change_where_the_code_does():
    """Pre-pad in 0.17-0.19's vendored layout only; 0.25 deletes the loaded scales."""
    t = {v: TABLES[v]["models"]["openai/gpt-oss-120b"]["backends"]["TRITON"]["1"]["tensors"] for v in TABLES}
    assert t["0.19.0"]["w13_weight_swizzled"]["bytes"] == 128 * 1472 * 5760  # packed K 1440 -> 1472
    assert t["0.22.1"]["w13_weight_swizzled"]["bytes"] == 128 * 1440 * 5760
    assert "w13_weight_scale" in t["0.19.0"] and "w13_weight_scale" not in t["0.25.1"]
    assert t["0.19.0"]["w13_bias"]["dtype"] == "float32"


@pytest.mark.parametrize("model", sorted(GPT_OSS_MXFP4))
def test_catalog_size_is_the_checkpoint_experts_plus_bf16_rest(model):
    """The catalog's bytes are the experts as stored (E8M0 scale per 32, bf16 biases) plus the other
    params at 2 B: the term's baseline is that checkpoint."""
    entry = CATALOG.models.lookup(model)
    dims = GPT_OSS_MXFP4[model]
    expert_bias_params = dims.layers * dims.experts * (2 * dims.intermediate + dims.hidden)
    other = entry.weights_params - dims.layers * dims.experts * 3 * dims.intermediate * dims.hidden - expert_bias_params
    assert entry.weight_bytes == dims.layers * checkpoint_layer_bytes(dims) + other * 2
    assert entry.weight_bytes == dims.checkpoint_bytes()  # the figure the term keys on, from config.json


@pytest.mark.parametrize("model, gpu, version, tp, backend", [
    ("openai/gpt-oss-120b", "H100-SXM-80GB", "0.11.0", 1, "MARLIN"),  # no triton_kernels in the wheel
    ("openai/gpt-oss-120b", "A100-80GB", "0.19.0", 4, "MARLIN"),
    ("openai/gpt-oss-20b", "A100-80GB", "0.19.0", 1, "MARLIN"),
    ("openai/gpt-oss-20b", "H100-SXM-80GB", "0.19.0", 2, "TRITON"),
    ("openai/gpt-oss-120b", "H100-SXM-80GB", "0.12.0", 1, "TRITON"),
    ("openai/gpt-oss-120b", "H100-SXM-80GB", "0.22.1", 1, "TRITON"),
    ("openai/gpt-oss-120b", "H100-SXM-80GB", "0.25.1", 2, "TRITON"),
    ("openai/gpt-oss-120b", "B200-180GB", "0.19.0", 1, "FLASHINFER_TRTLLM_MXFP4_BF16"),
])
def test_pool_term_is_the_code_s_layout_less_the_checkpoint_share(tmp_path, model, gpu, version, tp, backend):
    dims = GPT_OSS_MXFP4[model]
    expected = dims.layers * _table_layer(version, model, backend, tp) - dims.layers * checkpoint_layer_bytes(dims) // tp
    terms = _engine(tmp_path, model, gpu, version, tp)["engine"]["pool_terms"]
    assert terms["mxfp4_moe_layout"] == expected, (terms["mxfp4_moe_layout"] / GiB, expected / GiB)


def test_hopper_0110_band_reaches_the_triton_layout(tmp_path):
    """0.11.0 on SM90: Marlin unless triton_kernels is installed; the band's high end is Triton's."""
    dims = GPT_OSS_MXFP4["openai/gpt-oss-120b"]
    entry = _engine(tmp_path, "openai/gpt-oss-120b", "H100-SXM-80GB", "0.11.0")
    saved = dims.layers * (_table_layer("0.11.0", "openai/gpt-oss-120b", "MARLIN", 1)
                           - _table_layer("0.11.0", "openai/gpt-oss-120b", "TRITON", 1))
    assert any("triton_kernels" in t and f"+{saved / GiB:.2f} GiB" in t for t in entry["engine"]["band"]["terms"]), entry["engine"]["band"]


def test_marlin_switch(tmp_path):
    dims = GPT_OSS_MXFP4["openai/gpt-oss-20b"]
    terms = _engine(tmp_path, "openai/gpt-oss-20b", "H100-SXM-80GB", "0.19.0",
                    env='VLLM_MXFP4_USE_MARLIN: "1"')["engine"]["pool_terms"]
    assert terms["mxfp4_moe_layout"] == dims.layers * (_table_layer("0.19.0", "openai/gpt-oss-20b", "MARLIN", 1)
                                                       - checkpoint_layer_bytes(dims))


def test_uncatalogued_release_and_stated_weights_add_nothing(tmp_path):
    newer = _engine(tmp_path, "openai/gpt-oss-20b", "H100-SXM-80GB", "0.33.0")
    assert "mxfp4_moe_layout" not in newer["engine"]["pool_terms"]
    assert any("MXFP4 experts is not modelled" in a for a in newer["assumptions"])
    path = tmp_path / "stated.yaml"
    path.write_text(MANIFEST.format(model="openai/gpt-oss-20b", gpu="H100-SXM-80GB", tp=1, version="0.19.0", env="")
                    .replace("  name: openai/gpt-oss-20b\n", "  name: openai/gpt-oss-20b\n  weights:\n    bytes: 14000000000\n"))
    result = CliRunner().invoke(main, ["capacity", "--format", "json", str(path)])
    stated = json.loads(result.stdout)[0]
    assert "mxfp4_moe_layout" not in stated["engine"]["pool_terms"]  # the user's figure is what loads


LOGS = [d for d in capacity_logs()
        if "gpt-oss" in str(d["manifest"]["model"].get("name", "")) and d["logged"].get("weights_gib") is not None]


def test_enough_gpt_oss_logs():
    assert len(LOGS) >= 3, [d["id"] for d in LOGS]


@pytest.mark.parametrize("doc", LOGS, ids=[d["id"] for d in LOGS])
def test_logged_weights_memory_is_the_loaded_layout(doc):
    """vLLM logged "Model loading took X GiB"; kvlint's weights with the layout term are within
    0.05 GiB (gpt-oss's float32 rotary cache, 16 MiB over kvlint's figure, and replicated small
    params remain), where the checkpoint alone missed by 0.6-2.0 GiB."""
    entries = capacity_accuracy.run_capacity([sys.executable, "-m", "kvlint"],
                                             {doc["id"]: capacity_accuracy.full_manifest(doc)})
    terms = entries[doc["id"]]["engine"]["pool_terms"]
    logged = doc["logged"]["weights_gib"]
    assert abs(terms["weights"] / GiB - logged) <= 0.05, (terms["weights"] / GiB, logged)
    without = terms["weights"] - terms["mxfp4_moe_layout"]
    assert abs(without / GiB - logged) > 0.5
