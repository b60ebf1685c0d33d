"""KV603 (one sequence does not fit) and KV606 (no pool left) follow the estimated pool's band as
KV601/KV602 do: an error only when even the favourable end fails, KV610's warning when the two ends
disagree, nothing when the pessimistic end passes. With `memory.kv_cache_memory` there is no band
and the central figure decides, as before.

Every case is built from the band's own endpoints as `kvlint capacity --format json` reports them
(tokens for KV603, pool bytes for KV606), not from figures pasted from an earlier run.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest
from conftest import CliRunner

from kvlint.cli import main

MANIFEST = """\
apiVersion: kvlint/v1
kind: Deployment
metadata:
  name: gate
engine:
  name: {engine}
  version: "{version}"
hardware:
  gpu: {gpu}
model:
  name: meta-llama/Llama-3.1-8B-Instruct
kv_cache:
  dtype: auto
memory:
  gpu_memory_utilization: {util}
{extra}serving:
  max_model_len: {max_model_len}
"""

ENGINES = [("vllm", "0.19.1"), ("sglang", "0.5.9")]
GATE = ("KV603", "KV606", "KV610")


def _write(tmp_path: Path, engine: Tuple[str, str], util: float, max_model_len: int,
           gpu: str = "A100-40GB", extra: str = "") -> Path:
    path = tmp_path / "deploy.yaml"
    path.write_text(MANIFEST.format(engine=engine[0], version=engine[1], gpu=gpu, util=util,
                                    max_model_len=max_model_len, extra=extra))
    return path


def _engine(path: Path) -> Dict[str, Any]:
    result = CliRunner().invoke(main, ["capacity", str(path), "--format", "json"])
    # exit 1 exactly when the capacity gate fails (a KV6xx error, named on stderr), as check
    assert result.exit_code == (1 if ": KV6" in result.stderr else 0), result.output
    data = json.loads(result.stdout)
    return (data[0] if isinstance(data, list) else data)["engine"]


def _gate(path: Path) -> List[Tuple[str, str, str]]:
    result = CliRunner().invoke(main, ["check", "--output-format", "json", str(path)])
    assert result.exit_code in (0, 1), result.output
    return [(d["code"], d["severity"], d["message"]) for d in json.loads(result.stdout)["diagnostics"]
            if d["code"] in GATE]


@pytest.mark.parametrize("engine", ENGINES, ids=[e[0] for e in ENGINES])
def test_context_fit_follows_the_band(tmp_path, engine):
    band = _engine(_write(tmp_path, engine, 0.7, 4096))["band"]
    low, high = band["kv_cache_tokens_low"], band["kv_cache_tokens_high"]
    assert 0 < low < high < 131072  # the model's max_position_embeddings: KV604 stays out of it
    # Just beyond what the favourable end holds: KV603, saying it holds even there.
    found = _gate(_write(tmp_path, engine, 0.7, high + 1))
    assert [(c, s) for c, s, _ in found] == [("KV603", "error")]
    assert f"({high:,} tokens) even at the favourable end" in found[0][2]
    assert "memory.kv_cache_memory" in found[0][2]
    # Inside the band: no error, KV610's warning on max_model_len naming the band and the field.
    middle = (low + high) // 2
    found = _gate(_write(tmp_path, engine, 0.7, middle))
    assert [(c, s) for c, s, _ in found] == [("KV610", "warning")]
    assert f"max_model_len {middle:,} fits" in found[0][2]
    assert f"{low:,}..{high:,} KV tokens" in found[0][2]
    assert "set memory.kv_cache_memory" in found[0][2]
    # Better than the pessimistic end (one page below it: vLLM keeps a null block): nothing.
    block = _engine(_write(tmp_path, engine, 0.7, 4096))["block_size"]
    assert _gate(_write(tmp_path, engine, 0.7, low - 2 * block)) == []


@pytest.mark.parametrize("engine", ENGINES, ids=[e[0] for e in ENGINES])
def test_pool_exhaustion_follows_the_band(tmp_path, engine):
    def end(util: float, which: str) -> int:
        return _engine(_write(tmp_path, engine, util, 1024))["band"][which]

    def util_for(target: float, which: str = "pool_high_bytes") -> float:
        """The memory fraction whose band end is just above `target` bytes (bisection: the pool
        grows with the fraction, though not linearly for SGLang)."""
        lo, hi = 0.05, 0.99
        for _ in range(24):
            mid = (lo + hi) / 2
            lo, hi = (lo, mid) if end(mid, which) > target else (mid, hi)
        return round(hi, 9)

    # The favourable end just below zero: KV606, even there.
    path = _write(tmp_path, engine, util_for(-2**20) - 0.001, 1024)
    assert _engine(path)["band"]["pool_high_bytes"] < 0
    found = _gate(path)
    assert [(c, s) for c, s, _ in found] == [("KV606", "error")]
    assert "even at the favourable end of the estimated pool" in found[0][2]
    # The favourable end 1 GiB up, the pessimistic end below zero: KV610 on the GPU, no error.
    path = _write(tmp_path, engine, util_for(2**30), 1024)
    band = _engine(path)["band"]
    assert band["pool_low_bytes"] < 0 < band["pool_high_bytes"]
    found = _gate(path)
    assert [(c, s) for c, s, _ in found] == [("KV610", "warning")]
    assert (f"estimated KV pool is {band['pool_low_bytes'] / 2**30:.2f}.."
            f"{band['pool_high_bytes'] / 2**30:.2f} GiB per GPU") in found[0][2]
    # The pessimistic end above zero (and one 1,024-token sequence inside it): nothing.
    path = _write(tmp_path, engine, util_for(2**29, "pool_low_bytes"), 1024)
    assert _engine(path)["band"]["pool_low_bytes"] > 2**29
    assert _gate(path) == []


@pytest.mark.parametrize("engine", ENGINES, ids=[e[0] for e in ENGINES])
def test_given_pool_decides_as_before(tmp_path, engine):
    """memory.kv_cache_memory: no band, the given pool alone decides (and no KV610)."""
    extra = "  kv_cache_memory: 8GiB\n"
    path = _write(tmp_path, engine, 0.7, 131072, extra=extra)
    eng = _engine(path)
    assert eng["band"] is None
    found = _gate(path)
    # Llama-3.1-8B keeps 32 layers x 8 KV heads x 128 x (K+V) x 2 B = 128 KiB per token.
    assert [(c, s) for c, s, _ in found] == [("KV603", "error")]
    assert "needs 16.00 GiB" in found[0][2] and "favourable" not in found[0][2]
    assert _gate(_write(tmp_path, engine, 0.7, 32768, extra=extra)) == []
