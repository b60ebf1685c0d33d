"""SGLang's aiter factor on mem_fraction_static, against each release's own code.

SGLang multiplies mem_fraction_static by 0.85 when the attention backend it runs is aiter and
the model's context length (model_config.context_len) is above 8192:
`ModelRunner.model_specific_adjustment` (python/sglang/srt/model_executor/model_runner.py,
v0.4.10.post2 L499-501, v0.5.2 L568-570), `ServerArgs._handle_attention_backend_compatibility`
(python/sglang/srt/server_args.py, v0.5.9 L1924-1926 .. v0.5.18 L6032-6034) and
`handle_attention_backend_compatibility` (python/sglang/srt/arg_groups/attention_hook.py, v0.5.19
L177-200 .. v0.5.23 L244-268, which keeps an explicit fraction when
SGLANG_AITER_HONOR_EXPLICIT_MEM_FRACTION is on). kvlint applies it from the catalog's `rewrites`.

The expected factors are the releases' own answers: the runner's factor in the per-release
tables (tools/derive/tables/sglang/<release>.json, `runner_mem_fraction_factor`, where the runner
applies it) and tools/derive/tables/sglang_aiter_mem_fraction.json (tools/derive/
sglang_aiter_factor.py: the fraction each release resolves with aiter against triton on MI300X).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from kvlint.capacity import compute
from kvlint.catalog import load_catalogs
from kvlint.resolve import resolve

REPO = Path(__file__).resolve().parent.parent
TABLES = REPO / "tools" / "derive" / "tables"
FACTORS = json.loads((TABLES / "sglang_aiter_mem_fraction.json").read_text())
CATALOGS = load_catalogs(())
MODELS = {"llama": "meta-llama/Llama-3.1-8B-Instruct", "gemma2": "google/gemma-2-9b"}


def _deployment(version: str, model: str, backend: str = "aiter", mfs=None, env=None):
    data = {"apiVersion": "kvlint/v1", "kind": "Deployment", "metadata": {"name": "x"},
            "engine": {"name": "sglang", "version": version, "attention_backend": backend},
            "hardware": {"gpu": "MI300X"}, "model": {"name": model}, "kv_cache": {"dtype": "auto"}}
    if mfs is not None:
        data["memory"] = {"mem_fraction_static": mfs}
    if env:
        data["engine"]["env"] = env
    return resolve(data, "x.yaml", None, CATALOGS).deployment


def _kvlint_factor(deployment) -> float:
    return math.prod(f.factor for f in deployment.mem_fraction_factors)


@pytest.mark.parametrize("version", ["0.4.10.post2", "0.5.2"])
def test_runner_factor_of_every_aiter_cell(version: str) -> None:
    """Every accepted MI300X cell that ends on aiter: the runner's own factor (table) is kvlint's."""
    doc = json.loads((TABLES / "sglang" / f"{version}.json").read_text())
    checked = 0
    for model_key, model_id in doc["axes"]["model"].items():
        cell = doc["outcomes"][doc["grid"]["gfx942"][model_key]["aiter"]["auto"]]
        if not cell.get("accepted") or cell.get("attention_backend") != "aiter":
            continue
        dep = _deployment(version, model_id)
        assert dep is not None and dep.backend == "aiter", model_id
        assert _kvlint_factor(dep) == pytest.approx(cell["runner_mem_fraction_factor"]), (version, model_id)
        checked += 1
    assert checked >= 3  # llama (0.85), gemma-2 (1.0) and more


def test_the_derived_data_covers_every_release_with_a_table() -> None:
    tables = {p.stem for p in (TABLES / "sglang").glob("*.json")}
    assert tables <= set(FACTORS["releases"])
    for version, models in FACTORS["releases"].items():
        assert "child_error" not in models, version


@pytest.mark.parametrize("version", sorted(FACTORS["releases"]))
@pytest.mark.parametrize("model_key", sorted(MODELS))
@pytest.mark.parametrize("case", ["default", "explicit", "explicit_env_on"])
def test_factor_matches_the_release(version: str, model_key: str, case: str) -> None:
    row = FACTORS["releases"][version][model_key][case]
    assert row["aiter"]["attention_backend"] == "aiter"
    if version not in CATALOGS.engines.known_versions("sglang"):
        pytest.skip(f"SGLang {version} is not catalogued (KV201: no release checks)")
    mfs = None if case == "default" else 0.8
    env = {"SGLANG_AITER_HONOR_EXPLICIT_MEM_FRACTION": "1"} if case == "explicit_env_on" else None
    dep = _deployment(version, MODELS[model_key], mfs=mfs, env=env)
    assert _kvlint_factor(dep) == pytest.approx(row["factor"], abs=1e-4), row


def test_capacity_applies_it() -> None:
    """The pool shrinks by the factor: SGLang 0.5.9, Llama-3.1-8B on MI300X, fraction 0.8."""
    with_aiter = compute(_deployment("0.5.9", MODELS["llama"], "aiter", mfs=0.8))
    with_triton = compute(_deployment("0.5.9", MODELS["llama"], "triton", mfs=0.8))
    assert with_aiter.engine.fraction == pytest.approx(0.8 * 0.85)
    assert with_triton.engine.fraction == pytest.approx(0.8)
    assert with_aiter.engine.pool_bytes_per_gpu < with_triton.engine.pool_bytes_per_gpu
    assert any("0.85" in n for n in with_aiter.assumptions)
