"""vLLM 0.21+ profile the sampler on one of two model runners; which one, and what its warm-up holds.

* Which runner: tools/derive/tables/vllm_model_runner.json is each release's own
  `VllmConfig.use_v2_model_runner` (vllm/config/vllm.py) run on CPU for a plain generate model of
  every architecture in kvlint's model catalog (tools/derive/vllm_runner_probe.py). kvlint's reading
  of the catalog rule (`sampler_warmup.runner_v2.default`, capacity/pool.py `model_runner`) must
  give the same answer, or say it cannot tell where the release's answer hangs on something kvlint
  does not read (an unquantized checkpoint at 0.22-0.23).
* What the warm-up holds: V1's 14 B per logit is the 0.19 fit logs' "torch peak memory increase"
  (the same code path, catalog sources); V2 drops to the logits (and at 0.22-0.25 an fp32 copy).
"""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Optional

import pytest

from conftest import REPO_ROOT
from kvlint.capacity.pool import model_runner
from kvlint.catalog.engines import load_engine_catalog

TABLE = json.loads((REPO_ROOT / "tools" / "derive" / "tables" / "vllm_model_runner.json").read_text())
CATALOG = load_engine_catalog()


def _deployment(version: str, architecture: Optional[str], pp: int = 1, env=()):
    defaults = {name: info.value for name, info in CATALOG.release("vllm", version).defaults.items()}
    model = SimpleNamespace(architectures=(architecture,) if architecture else ())
    return SimpleNamespace(engine_version=version, model=model, pipeline_parallel=pp,
                           release_default=lambda name, fallback=None: defaults.get(name, fallback),
                           env_flag=lambda name: dict(env).get(name)), defaults


CASES = [(version, arch, row) for version, release in TABLE["releases"].items()
         for arch, row in release["cases"].items()]


def test_the_table_covers_every_release_with_two_runners():
    releases = set(TABLE["releases"])
    assert {"0.22.0", "0.25.1", "0.27.1", "0.29.0", "0.33.0"} <= releases
    assert TABLE["releases"]["0.20.2"]["has_use_v2_model_runner"] is False


@pytest.mark.parametrize("version,architecture,row", CASES, ids=[f"{v}-{a}" for v, a, _ in CASES])
def test_runner_matches_the_release_code(version, architecture, row):
    deployment, defaults = _deployment(version, architecture)
    runner, text, v2_bytes = model_runner(deployment, (defaults.get("sampler_warmup") or {}).get("runner_v2"))
    if row["unquantized"] != row["quantized"]:
        assert runner is None and "unquantized" in text, (runner, text)
        return
    assert runner == ("v2" if row["unquantized"] else "v1"), (runner, text)
    assert v2_bytes is not None


def test_releases_before_two_runners_and_unread_ones():
    deployment, defaults = _deployment("0.20.2", "Qwen3ForCausalLM")
    assert model_runner(deployment, (defaults.get("sampler_warmup") or {}).get("runner_v2"))[0] == "v1"
    deployment, defaults = _deployment("0.21.0", "Qwen3ForCausalLM")
    runner, text, _ = model_runner(deployment, defaults["sampler_warmup"]["runner_v2"])
    assert runner is None and "not read" in text


def test_environment_switch_and_unknown_architecture():
    deployment, defaults = _deployment("0.27.1", "MixtralForCausalLM", env=(("VLLM_USE_V2_MODEL_RUNNER", True),))
    assert model_runner(deployment, defaults["sampler_warmup"]["runner_v2"])[0] == "v2"
    deployment, defaults = _deployment("0.33.0", "LlamaForCausalLM", env=(("VLLM_USE_V2_MODEL_RUNNER", False),))
    assert model_runner(deployment, defaults["sampler_warmup"]["runner_v2"])[0] == "v1"
    deployment, defaults = _deployment("0.27.1", None)
    assert model_runner(deployment, defaults["sampler_warmup"]["runner_v2"])[0] is None
    # 0.33 sends pipeline parallelism with async scheduling back to V1
    deployment, defaults = _deployment("0.33.0", "LlamaForCausalLM", pp=2)
    assert model_runner(deployment, defaults["sampler_warmup"]["runner_v2"])[0] is None


def test_every_release_from_0_21_has_a_warmup_fact():
    for version in CATALOG.known_versions("vllm"):
        if tuple(int(x) for x in version.split(".")[:2]) < (0, 21):
            continue
        warmup = CATALOG.release("vllm", version).defaults["sampler_warmup"].value
        assert warmup["bytes_per_logit"] == 14, version
        assert "runner_v2" in warmup, version
