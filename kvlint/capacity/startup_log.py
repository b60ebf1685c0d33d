"""The capacity figures an engine logs at start-up, read from the log text (vLLM and SGLang).

`kvlint capacity FILE --from-log LOG` sets these beside the prediction, term by term, so a user can
calibrate in one command (docs/capacity.md "Calibrating from a start-up log"). Only the lines below
are read; everything else in the log is ignored. Sizes are GiB as the engines print them (SGLang
labels GiB "GB": it divides by 2**30).

vLLM (`vllm/v1/worker/gpu_worker.py`, `gpu_model_runner.py`, `vllm/v1/core/kv_cache_utils.py`):

    ... total_memory=79.19GiB ...                       (DEBUG worker init memory snapshot)
    Model loading took 14.99 GiB memory and ...
    Memory profiling takes ... Total non KV cache memory: 17.12GiB; torch peak memory increase:
        1.89GiB; non-torch forward increase memory: 0.25GiB; weights memory: 14.99GiB.
    Available KV cache memory: 58.11 GiB
    GPU KV cache size: 476,016 tokens
    Maximum concurrency for 8,192 tokens per request: 58.11x

SGLang (`python/sglang/srt/model_executor/model_runner.py`, `scheduler.py`):

    Load weight begin. avail mem=21.63 GB               (SGLang's first reading: device - baseline)
    Load weight end. type=..., avail mem=6.09 GB, mem usage=15.54 GB.
    KV Cache is allocated. #tokens: 46611, K size: 1.42 GB, V size: 1.42 GB
    max_total_num_tokens=46611, ...
"""

from __future__ import annotations

import re
from dataclasses import fields
from typing import Dict, List, Optional

from kvlint.records import dataclass

# A figure of at most 25 digits and commas (a longer one, as a hostile 400-digit token count, is
# not a figure: float() would make it inf and int() raise), and no `.*` without a bound, so every
# pattern is linear in a line's length, however long.
_NUM = r"(\d[\d,]{0,24}(?:\.\d{1,12})?)(?!\d|,\d)"

_PATTERNS = {
    "device_gib": re.compile(r"total_memory=" + _NUM + r"\s*GiB"),
    "weights_gib": re.compile(r"Model loading took " + _NUM + r"\s*GiB"),
    "non_kv_gib": re.compile(r"Total non KV cache memory: " + _NUM + r"\s*GiB"),
    "torch_peak_gib": re.compile(r"torch peak memory increase: " + _NUM + r"\s*GiB"),
    "non_torch_gib": re.compile(r"non-torch forward increase memory: " + _NUM + r"\s*GiB"),
    "pool_gib": re.compile(r"Available KV cache memory: " + _NUM + r"\s*GiB"),
    "kv_tokens": re.compile(r"GPU KV cache size: " + _NUM + r" tokens"),
}
_CONCURRENCY = re.compile(r"Maximum concurrency for " + _NUM + r" tokens per request: " + _NUM + r"x")
_SGLANG_WEIGHTS = re.compile(r"Load weight end\..{0,400}?mem usage=" + _NUM + r"\s*GB")
_SGLANG_BEFORE = re.compile(r"Load weight begin\. avail mem=" + _NUM + r"\s*GB")
_SGLANG_AFTER = re.compile(r"Load weight end\..{0,400}?avail mem=" + _NUM + r"\s*GB")
_SGLANG_POOL = re.compile(r"KV Cache is allocated\. #tokens: " + _NUM + r", K size: " + _NUM
                          + r"\s*GB, V size: " + _NUM + r"\s*GB")
_SGLANG_TOKENS = re.compile(r"max_total_num_tokens=" + _NUM)


def _number(text: str) -> float:
    return float(text.replace(",", ""))


@dataclass(frozen=True)
class StartupLog:
    """What one start-up log says; None for every line the log lacks."""

    engine: Optional[str] = None  # "vllm" | "sglang", from the lines found
    device_gib: Optional[float] = None  # the CUDA runtime total the engine sized from
    weights_gib: Optional[float] = None  # per GPU
    non_kv_gib: Optional[float] = None  # vLLM: weights + activation peak + non-torch memory
    torch_peak_gib: Optional[float] = None
    non_torch_gib: Optional[float] = None
    pool_gib: Optional[float] = None  # per GPU (the smallest a worker logged); SGLang: K + V size
    kv_tokens: Optional[int] = None
    max_concurrency: Optional[float] = None
    concurrency_tokens: Optional[int] = None  # the request length the concurrency is for
    # SGLang: free memory at 'Load weight begin' (its first reading, after the CUDA context and the
    # distributed init) and at 'Load weight end' (the smallest a rank logged)
    avail_before_weights_gib: Optional[float] = None
    avail_after_weights_gib: Optional[float] = None

    @property
    def empty(self) -> bool:
        return all(getattr(self, f.name) is None for f in fields(self) if f.name != "engine")

    def to_json(self) -> Dict[str, object]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def parse_startup_log(text: str) -> StartupLog:
    """The capacity lines of a vLLM or SGLang start-up log. Several workers may log the same line
    (tensor parallelism): the pool is the smallest, as the engine plans with the smallest; any
    other figure is the last one logged."""
    found: Dict[str, object] = {}
    pools: List[float] = []
    engine = None
    for line in text.splitlines():
        for name, pattern in _PATTERNS.items():
            match = pattern.search(line)
            if match:
                value = _number(match.group(1))
                if name == "pool_gib":
                    pools.append(value)
                else:
                    found[name] = int(value) if name == "kv_tokens" else value
                engine = engine or "vllm"
        match = _CONCURRENCY.search(line)
        if match:
            found["concurrency_tokens"] = int(_number(match.group(1)))
            found["max_concurrency"] = _number(match.group(2))
            engine = engine or "vllm"
        match = _SGLANG_WEIGHTS.search(line)
        if match:
            found["weights_gib"] = _number(match.group(1))
            engine = "sglang"
        for name, pattern in (("avail_before_weights_gib", _SGLANG_BEFORE), ("avail_after_weights_gib", _SGLANG_AFTER)):
            match = pattern.search(line)
            if match:
                value = _number(match.group(1))
                previous = found.get(name)
                found[name] = value if previous is None else min(float(previous), value)  # type: ignore[arg-type]
                engine = "sglang"
        match = _SGLANG_POOL.search(line)
        if match:
            found["kv_tokens"] = int(_number(match.group(1)))
            pools.append(round(_number(match.group(2)) + _number(match.group(3)), 2))
            engine = "sglang"
        match = _SGLANG_TOKENS.search(line)
        if match:
            found["kv_tokens"] = int(_number(match.group(1)))
            engine = "sglang"
    if pools:
        found["pool_gib"] = min(pools)
    return StartupLog(engine=engine, **found)  # type: ignore[arg-type]
