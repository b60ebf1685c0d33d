#!/usr/bin/env bash
# Benchmark `kvlint check` against check-jsonschema (see benchmarks/bench_check.py).
# Usage: benchmarks/run.sh [--runs N] [--copies N]; results go to benchmarks/results/ (gitignored).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-.venv/bin/python}"
exec "$PYTHON" benchmarks/bench_check.py "$@"
