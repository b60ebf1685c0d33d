"""vLLM on ROCm: VLLM_ROCM_USE_AITER in the manifest's engine.env decides which backend auto picks.

The truth is each release's own selector, run by tools/derive with VLLM_ROCM_USE_AITER=0 (device
`gfx942`) and =1 (`gfx942+aiter`) and committed in tools/derive/tables/vllm/<release>.json. kvlint's
catalog models both (`aiter` conditions, checked cell by cell by test_derived_agreement); this test
checks that a manifest's environment reaches that selection. vLLM reads the variable as true for
"true" or "1", any case (vllm/envs.py v0.33.0 L1267-1269).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from conftest import invoke

DERIVE = Path(__file__).resolve().parent.parent / "tools" / "derive"
sys.path.insert(0, str(DERIVE))

import table  # noqa: E402

MANIFEST = """\
apiVersion: kvlint/v1
kind: Deployment
metadata: {{name: rocm}}
engine: {{name: vllm, version: "{version}"{env}}}
hardware: {{gpu: MI300X-192GB, count: 8}}
parallelism: {{tensor: 8}}
model: {{name: {model}}}
kv_cache: {{dtype: auto}}
"""

MODELS = {"meta-llama/Llama-3.1-8B-Instruct": (128, False), "deepseek-ai/DeepSeek-V3": (576, True)}


def _code_picks(version: str, device: str, head: int, mla: bool) -> str:
    t = json.loads((DERIVE / "tables" / "vllm" / f"{version}.json").read_text(encoding="utf-8"))
    block = "default" if "default" in (t["selection"].get("block_sizes") or []) else 16
    return table.lookup(t["selection"]["tree"], {"device": device, "use_mla": mla, "variant": "plain",
                                                  "kv_cache_dtype": "auto", "head_size": head, "block_size": block})


def _kvlint_picks(tmp_path, version: str, model: str, env: str) -> str:
    path = tmp_path / "m.yaml"
    path.write_text(MANIFEST.format(version=version, model=model, env=env))
    result = invoke(["facts", str(path)])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    return (doc[0] if isinstance(doc, list) else doc)["backend"]["name"]


# 0.32-0.33 are left out: their ROCm non-MLA selection is a derivation limit (known_disagreements)
@pytest.mark.parametrize("version", ["0.18.1", "0.19.0", "0.25.0", "0.31.0"])
@pytest.mark.parametrize("model", sorted(MODELS))
@pytest.mark.parametrize("env, device", [
    ("", "gfx942"),
    (", env: {VLLM_ROCM_USE_AITER: \"0\"}", "gfx942"),
    (", env: {VLLM_ROCM_USE_AITER: \"1\"}", "gfx942+aiter"),
    (", env: {VLLM_ROCM_USE_AITER: \"True\"}", "gfx942+aiter"),
])
def test_auto_selection_follows_the_environment(tmp_path, version, model, env, device) -> None:
    head, mla = MODELS[model]
    assert _kvlint_picks(tmp_path, version, model, env) == _code_picks(version, device, head, mla)


def test_the_variable_changes_the_answer_somewhere() -> None:
    """The cases above are not all the same backend: AITER picks another one for MLA models."""
    assert _code_picks("0.31.0", "gfx942", 576, True) != _code_picks("0.31.0", "gfx942+aiter", 576, True)
