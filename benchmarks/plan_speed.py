"""How long `kvlint plan` takes over a search space of at least 10,000 candidates, on one core.

    .venv/bin/python benchmarks/plan_speed.py            # the default space (Llama 3.1 8B, 4 x H100, vLLM newest)
    .venv/bin/python benchmarks/plan_speed.py --json

The space: every cache dtype vLLM's newest catalogued release takes, every scale option, every
CUDA backend, the skip sets, block sizes, the tensor x pipeline factorizations of 4 GPUs, two
context lengths and three memory fractions. The search runs in this process, after one warm-up
judgement (catalog and rule files parsed), pinned to one CPU where the OS allows it. Nothing is
asserted: the figures are printed (tests/test_plan.py tests behaviour, not time).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="meta-llama/Llama-3.1-8B-Instruct")
    parser.add_argument("--gpu", default="H100-SXM-80GB")
    parser.add_argument("--gpus", type=int, default=4)
    parser.add_argument("--engine", default="vllm")
    parser.add_argument("--release", default="newest")
    parser.add_argument("--context", type=int, default=32768)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})

    from kvlint.config import load_config
    from kvlint.pipeline.selection import enabled_codes
    from kvlint.plan.request import request_from_options
    from kvlint.plan.run import plan
    from kvlint.plan.search import Targets
    from kvlint.rulebook import load_rulebook

    config = load_config(None)
    rulebook = load_rulebook(())
    enabled, _ = enabled_codes(rulebook, config)
    request = request_from_options(args.model, None, args.gpu, args.gpus, args.engine, args.release,
                                   Targets(context=args.context), None, config)
    plan(request, config, rulebook, enabled, limit=1)  # warm-up: parsed catalog and rules
    cpu0, wall0 = time.process_time(), time.perf_counter()
    result, _ = plan(request, config, rulebook, enabled)
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    figures = {
        "engine": f"{result.engine} {result.release}",
        "model": args.model, "gpu": f"{args.gpus} x {args.gpu}",
        "candidates": result.considered, "judged": result.evaluated, "passed": len(result.kept),
        "pareto": len(result.front), "cpu_s": round(cpu, 2), "wall_s": round(wall, 2),
        "candidates_per_s": round(result.considered / cpu, 1) if cpu else None,
    }
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        for key, value in figures.items():
            print(f"{key:>17}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
