"""SGLang's weight-load memory ("mem usage" at "Load weight end") as kvlint models it
(kvlint/capacity/sglang_load.py), checked against figures kvlint did not produce:

* PyTorch's caching-allocator rules, with segment sizes worked out by hand from
  c10/cuda/CUDACachingAllocator.cpp (kSmallBuffer, kLargeBuffer, kRoundLarge, should_split);
* the tensors the model classes of SGLang 0.4.3.post4, 0.4.10.post2, 0.5.2 and 0.5.9 create, in
  order, under tensor parallelism (tests/data/sglang_load/<release>.json, written by
  tools/derive/sglang_load.py from each wheel);
* the "mem usage" a real SGLang 0.4.3.post4 start-up printed (benchmarks/capacity_logs/
  sglang-l4x4-qwq-32b.yaml, QwQ-32B on 4 x L4).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from kvlint.capacity.sglang_load import (
    DenseShape,
    dense_load_events,
    dense_load_memory,
    held_after,
    held_tensor_bytes,
)

REPO = Path(__file__).resolve().parents[1]
RELEASES = {path.stem: json.loads(path.read_text())
            for path in sorted((REPO / "tests" / "data" / "sglang_load").glob("*.json"))}
DERIVED = RELEASES["0.4.3.post4"]
ALL_CASES = [(release, case) for release, data in RELEASES.items() for case in data["cases"]]
MiB = 1 << 20
GiB = 1 << 30


def _alloc(*sizes):
    return [("alloc", i, n) for i, n in enumerate(sizes)]


# --- the allocator, against segment sizes worked out from PyTorch's rules -------------------------

def test_a_large_tensor_holds_its_size_rounded_up_to_2_mib():
    # 17.5 MiB -> an 18 MiB segment; 0.5 MiB left is not split off (a large block splits only when
    # more than 1 MiB remains) and the segment is in use, so empty_cache keeps all of it
    assert held_after(_alloc(17 * MiB + MiB // 2)) == 18 * MiB
    # 12.5 MiB -> 14 MiB (the 1.5 MiB remainder is split off but stays in a used segment)
    assert held_after(_alloc(12 * MiB + MiB // 2)) == 14 * MiB
    assert held_after(_alloc(64 * MiB)) == 64 * MiB


def test_medium_tensors_share_a_20_mib_segment_and_small_ones_a_2_mib_one():
    assert held_after(_alloc(2 * MiB, 3 * MiB, 4 * MiB)) == 20 * MiB  # 1-10 MiB: packed in 20 MiB
    assert held_after(_alloc(*([8 * MiB] * 3))) == 40 * MiB  # the third does not fit in 20 MiB
    assert held_after(_alloc(10_240, 3_584, 700_000)) == 2 * MiB  # <= 1 MiB: one 2 MiB segment
    assert held_after(_alloc(700_000, 700_000, 700_000)) == 4 * MiB


def test_freed_segments_are_released_and_free_blocks_reused():
    events = _alloc(32 * MiB, 32 * MiB) + [("free", 0, 0)]
    assert held_after(events) == 32 * MiB  # empty_cache gives back the segment nothing holds
    # a freed 32 MiB segment takes a later 17.5 MiB and then a 12.5 MiB tensor (best fit)
    events = _alloc(32 * MiB) + [("free", 0, 0), ("alloc", 1, 17 * MiB + MiB // 2),
                                 ("alloc", 2, 12 * MiB + MiB // 2)]
    assert held_after(events) == 32 * MiB


# --- the tensors, against SGLang's own model classes ----------------------------------------------

_SHAPES = {
    # config.json architecture -> (qkv bias, q/k norms) in kvlint's DenseShape
    "Qwen2ForCausalLM": (True, False),
    "LlamaForCausalLM": (False, False),
    "Qwen3ForCausalLM": (False, True),
}


def _head_dim(c) -> int:
    return c.get("head_dim") or c["hidden_size"] // c["num_attention_heads"]


def _shape(case) -> DenseShape:
    c = case["config"]
    bias, qk_norm = _SHAPES[c["architectures"][0]]
    return DenseShape(
        hidden_size=c["hidden_size"], intermediate_size=c["intermediate_size"],
        num_layers=c["num_hidden_layers"], num_attention_heads=c["num_attention_heads"],
        num_kv_heads=c["num_key_value_heads"], head_dim=_head_dim(c),
        vocab_size=c["vocab_size"], tied_embeddings=c["tie_word_embeddings"],
        qkv_bias=bias, qk_norm=qk_norm, tp=case["input"]["tp"])


def _sglang_events(case):
    """SGLang's creation log as allocator events: temporaries die when the rotary cache is made."""
    events, temps = [], []
    for i, (name, nbytes) in enumerate(case["tensors"]):
        events.append(("alloc", i, nbytes))
        if name.startswith("tmp:"):
            temps.append(i)
        elif name.endswith("cos_sin_cache"):
            events += [("free", t, 0) for t in temps]
            temps = []
    assert not temps
    return events


def test_every_derived_release_has_cases():
    assert set(RELEASES) >= {"0.4.3.post4", "0.4.10.post2", "0.5.2", "0.5.9"}
    assert all(data["cases"] for data in RELEASES.values())


@pytest.mark.parametrize("release,case", ALL_CASES, ids=[f"{r}-{c['input']['name']}" for r, c in ALL_CASES])
def test_kvlint_builds_the_tensors_sglang_builds(release, case):
    c = case["config"]
    events = dense_load_events(_shape(case), c["max_position_embeddings"], _head_dim(c))
    kvlint_held = [n for kind, key, n in events if kind == "alloc"
                   and key not in ("inv_freq", "t", "freqs", "cos", "sin")]
    assert len(kvlint_held) == len([name for name, _ in case["tensors"] if not name.startswith("tmp:")])
    sglang_held = [n for name, n in case["tensors"] if not name.startswith("tmp:")]
    assert kvlint_held == sglang_held
    assert held_tensor_bytes(events) == case["held_bytes"]
    # SGLang builds the rotary cache in float32 on CUDA (the derivation's fake device is CUDA)
    assert case["rope_cache_dtypes"] == ["torch.float32"]
    cache = [n for name, n in case["tensors"] if name.endswith("cos_sin_cache")]
    assert cache == [c["max_position_embeddings"] * _head_dim(c) * 4]
    # the rotary temporaries kvlint leaves out (the scaling maths of Llama-3's rope: a few hundred
    # bytes each) do not change what the allocator holds
    assert held_after(events) == held_after(_sglang_events(case))


def test_the_parameter_count_identifies_the_layout():
    qwq = next(c for c in DERIVED["cases"] if c["input"]["name"] == "qwq-32b-tp1")
    shape = _shape(qwq)
    # QwQ-32B: 32,763,876,352 parameters (benchmarks/capacity_logs/sglang-l4x4-qwq-32b.yaml,
    # computed there from config.json); tp 1 holds them all in bf16
    assert shape.global_params() == 32_763_876_352
    assert held_tensor_bytes(dense_load_events(shape, None, 128)) == 2 * 32_763_876_352


# --- the model, against a real start-up log -------------------------------------------------------

def test_qwq_32b_tp4_matches_the_mem_usage_sglang_logged():
    log = yaml.safe_load((REPO / "benchmarks" / "capacity_logs" / "sglang-l4x4-qwq-32b.yaml").read_text())
    qwq = next(c for c in DERIVED["cases"] if c["input"]["name"] == "qwq-32b-tp4")
    estimate = dense_load_memory(_shape(qwq), 131072, 128)
    # "Load weight end. ... mem usage=15.54 GB" (GiB, two decimals)
    assert abs(estimate.total / GiB - log["logged"]["weights_gib"]) <= 0.005
    # of which params x 2 B / 4 = 15.26 GiB, the fp32 rotary cache 64 MiB, the allocator 226 MiB
    assert estimate.rope_cache == 64 * MiB
    assert round(estimate.tensors / GiB, 2) == 15.32

