"""How long the llama.cpp / Ollama adapters take on very large native files.

    .venv/bin/python benchmarks/native_ggml.py [--size 10000]

Prints one line per case (seconds, median of 3 runs): a llama-server command line with SIZE
repeated flags, a systemd unit with SIZE `Environment=` lines, a Kubernetes Ollama container with
SIZE env entries (capped by the YAML loader's node budget). The test suite checks that these
inputs are read (tests/test_adapters_hostile.py) but gates no timing.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Callable, Dict

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kvlint.adapters import adapt  # noqa: E402


def cases(size: int) -> Dict[str, Callable[[], object]]:
    script = "#!/bin/sh\nllama-server -m m.gguf " + " ".join(f"-c {i}" for i in range(size)) + "\n"
    unit = "[Service]\n" + "".join(f"Environment=OLLAMA_X{i}=1\n" for i in range(size)) + "ExecStart=/usr/bin/ollama serve\n"
    entries = min(size, 6000)  # 3 nodes per entry: the loader's 20,000-node budget per document
    k8s = (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n    - name: ollama\n"
        "      image: ollama/ollama:0.13.3\n      env:\n"
        + "".join(f"        - {{name: OLLAMA_X{i}, value: '1'}}\n" for i in range(entries))
    )
    return {
        f"llama-server, {size} flags": lambda: adapt("big.sh", script),
        f"systemd unit, {size} Environment= lines": lambda: adapt("ollama.service", unit),
        f"Kubernetes Ollama, {entries} env entries": lambda: adapt("pod.yaml", k8s),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=10_000)
    args = parser.parse_args()
    for name, run in cases(args.size).items():
        times = []
        for _ in range(3):
            started = time.perf_counter()
            run()
            times.append(time.perf_counter() - started)
        print(f"{statistics.median(times):8.3f} s  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
