"""kvlint's estimate of vLLM's profiled activation peak against the "torch peak memory increase"
that real vLLM start-ups logged (benchmarks/capacity_logs, both splits). Where the release's
sampler warm-up is catalogued (vLLM 0.19) the estimate is 14 B x min(max_num_batched_tokens,
max_num_seqs) x vocab_size plus 0.26 GiB; the 14 B come from vLLM's sampler code and the 0.26 GiB
from the fit split, so the holdout logs are the independent check.
"""

from __future__ import annotations

import sys

import pytest

from conftest import REPO_ROOT, capacity_logs

sys.path.insert(0, str(REPO_ROOT / "benchmarks"))
import capacity_accuracy  # noqa: E402

GiB = 1 << 30
LOGS = [d for d in capacity_logs()
        if d["logged"].get("torch_peak_increase_gib") is not None
        and str(d["manifest"]["engine"]["version"]).startswith("0.19")
        and "name" in d["manifest"]["model"] and "geometry" not in d["manifest"]["model"]]


@pytest.fixture(scope="module")
def entries():
    return capacity_accuracy.run_capacity([sys.executable, "-m", "kvlint"],
                                          {d["id"]: capacity_accuracy.full_manifest(d) for d in LOGS})


def test_enough_logs():
    # Since the split is decided by source (benchmarks/capacity_logs/README.md), the whole
    # llm-d-planner sweep, which holds every 0.19 log with a logged torch peak, is in the fit split:
    # the check below runs on those logs, extras included, with no holdout among them.
    assert len(LOGS) >= 8


@pytest.mark.parametrize("doc", LOGS, ids=[d["id"] for d in LOGS])
def test_activation_term_is_the_logged_torch_peak(doc, entries):
    terms = entries[doc["id"]]["engine"]["pool_terms"]
    logged = doc["logged"]["torch_peak_increase_gib"]
    # the fit logs' residuals above the sampler warm-up spread 0.18..0.65 GiB around the 0.26 taken
    assert abs(terms["activation"] / GiB - logged) <= 0.4, (terms["activation"] / GiB, logged)
    assert any("sampler warm-up" in a for a in entries[doc["id"]]["assumptions"])
