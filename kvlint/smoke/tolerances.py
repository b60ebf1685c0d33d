"""How far a quantized cache's decode-attention output may be from the BF16 reference.

One table, one place. Errors are measured on the attention *output* of the smoke test's inputs
(runner.make_inputs: Gaussian K and V, KV heads spread over a 16x range of magnitudes with the
queries scaled back so that scores stay near unit variance, 2% of tokens 4x louder, as outlier
tokens and attention sinks are in real models):

    max_rel  = max |out - ref| / max |ref|
    mean_rel = mean |out - ref| / mean |ref|

The reference is the same K, V and Q in BF16 through the same attention math with FP32 softmax,
so a correct kernel's error is the format's rounding error, averaged by attention; a kernel that
reads the wrong bytes (scale offset, nibble order, block table, K/V swapped) lands near 1.0 or
above. Each bound is about 1.5-2x the worst error observed over seeds and head sizes 64/128 at
the smoke test's shapes, and well below 1.0.

| format | max_rel | mean_rel | why this much |
|---|---|---|---|
| bf16, fp16, fp32 | 0.03 | 0.015 | unquantized; only BF16 rounding of the reference (2^-9 relative) and accumulation order |
| int8_per_token_head | 0.06 | 0.04 | step = amax/127 of each token and head: under 0.4% of its range |
| fp8_e4m3, fp8_e4m3fnuz, fp8_per_token_head | 0.20 | 0.10 | 3 mantissa bits: rounding up to 2^-4 of each value; where the scale sits barely matters (docs/scales.md) |
| fp8_e5m2 (and its per-token-head variant) | 0.35 | 0.20 | 2 mantissa bits: rounding up to 2^-3 |
| int8 (static scale) | 0.40 | 0.20 | one scale shared by heads 16x apart leaves the quiet heads ~8 levels a side (docs/scales.md) |
| nvfp4, trtllm_nvfp4, sglang_nvfp4 | 0.55 | 0.30 | E2M1: one mantissa bit (values 0, 0.5 .. 4, 6), E4M3 scale per 16 values |
| sglang_mxfp8 | 0.20 | 0.10 | E4M3 values as fp8_e4m3; the power-of-two scale per 32 values keeps each block near E4M3's top binade |
| sglang_fp4 | 0.60 | 0.35 | as NVFP4, but a power-of-two (UE8M0) block scale can waste up to one binade |
| int4_per_token_head | 0.90 | 0.40 | 15 levels per token and head: step amax/7; the worst element is large, the mean stays moderate |

These are smoke-test bounds, not accuracy claims: they catch a kernel that does not read the
layout it claims; they do not replace an evaluation of the model on real prompts.
"""

from __future__ import annotations

from typing import Dict

from kvlint.records import dataclass


@dataclass(frozen=True)
class Tolerance:
    """The largest relative attention-output errors a cache format may show (maximum, mean)."""

    max_rel: float
    mean_rel: float


_UNQUANTIZED = Tolerance(0.03, 0.015)
_FP8_E4M3 = Tolerance(0.20, 0.10)
_FP8_E5M2 = Tolerance(0.35, 0.20)
_NVFP4 = Tolerance(0.55, 0.30)

TOLERANCES: Dict[str, Tolerance] = {
    "bf16": _UNQUANTIZED,
    "fp16": _UNQUANTIZED,
    "fp32": _UNQUANTIZED,
    "int8_per_token_head": Tolerance(0.06, 0.04),
    "fp8_e4m3": _FP8_E4M3,
    "fp8_e4m3fnuz": _FP8_E4M3,
    "fp8_per_token_head": _FP8_E4M3,
    "fp8_e5m2": _FP8_E5M2,
    "fp8_e5m2_per_token_head": _FP8_E5M2,
    "int8": Tolerance(0.40, 0.20),
    "nvfp4": _NVFP4,
    "trtllm_nvfp4": _NVFP4,
    "sglang_nvfp4": _NVFP4,
    "sglang_fp4": Tolerance(0.60, 0.35),
    "sglang_mxfp8": _FP8_E4M3,
    "int4_per_token_head": Tolerance(0.90, 0.40),
}


def tolerance(format_id: str) -> Tolerance:
    return TOLERANCES[format_id]
