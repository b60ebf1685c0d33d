"""Smoke-test a set of reference deployments built in code (no manifests, no resolve stage).

Used by benchmarks/smoke_gpu.sh while `kvlint smoke` is not wired to manifests, and as a fixed
reference set afterwards. Geometries follow the model catalog (rules/catalog/models/): a Llama-3.1-8B-like
full-attention stack and a gpt-oss-20b-like alternation of 128-token sliding and full layers.

    python benchmarks/smoke_factory_run.py --device cuda --layers 2 --output report.json
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

_spec = importlib.util.spec_from_file_location("smoke_factory", REPO / "tests" / "smoke_factory.py")
smoke_factory = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(smoke_factory)  # type: ignore[union-attr]
deployment = smoke_factory.deployment


def reference_deployments(num_layers: int):
    llama = dict(num_layers=num_layers, num_kv_heads=8, num_attention_heads=32, head_dim=128)
    gptoss_kinds = ["sliding", "full"] * max(1, num_layers // 2)
    gptoss = dict(layer_kinds=gptoss_kinds, window=128, num_kv_heads=8, num_attention_heads=64, head_dim=64)
    return [
        deployment("bf16", name="llama8b-bf16", backend="FLASH_ATTN", **llama),
        deployment("fp8_e4m3", name="llama8b-fp8-per-tensor-unit", backend="FLASH_ATTN", granularity="per-tensor", source="unit", **llama),
        deployment("fp8_e4m3", name="llama8b-fp8-per-head", backend="FLASH_ATTN", granularity="per-head", **llama),
        deployment("fp8_e5m2", name="llama8b-fp8-e5m2", backend="TRITON_ATTN", granularity="per-tensor", source="unit", **llama),
        deployment("fp8_per_token_head", name="llama8b-fp8-per-token-head", **llama),
        deployment("int8_per_token_head", name="llama8b-int8-per-token-head", **llama),
        deployment("int4_per_token_head", name="llama8b-int4-per-token-head", **llama),
        deployment("nvfp4", name="llama8b-nvfp4", backend="FLASHINFER", **llama),
        deployment("fp8_e4m3", name="gptoss20b-fp8-skip-sliding", backend="TRITON_ATTN",
                   skipped=[i for i, k in enumerate(gptoss_kinds) if k == "sliding"], granularity="per-tensor",
                   source="unit", **gptoss),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--device", default="auto", choices=("auto", "cuda", "cpu"))
    parser.add_argument("--layers", type=int, default=2, help="layers per model (kept small: a smoke test)")
    parser.add_argument("--format", default="json", choices=("json", "text"))
    parser.add_argument("--output", help="write the report here as well as to stdout")
    parser.add_argument("--text-output", help="also write the text table here")
    args = parser.parse_args()

    from kvlint.smoke import run_smoke

    outcome = run_smoke(reference_deployments(args.layers), device=args.device, fmt=args.format)
    print(outcome.text)
    if args.output:
        Path(args.output).write_text(outcome.text + "\n", encoding="utf-8")
    if args.text_output:
        Path(args.text_output).write_text(outcome.renderings.get("text", outcome.text) + "\n", encoding="utf-8")
    return outcome.exit_code


if __name__ == "__main__":
    sys.exit(main())
