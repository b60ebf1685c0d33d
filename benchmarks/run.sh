#!/usr/bin/env bash
# Benchmark `kvlint check` against check-jsonschema and yamllint (benchmarks/bench_check.py), then
# break one run's start-up down by import and phase (benchmarks/startup.py).
# Usage: benchmarks/run.sh [--runs N] [--one-file-runs N] [--copies N] [--yamllint-many] [--one-file-only];
# results go to benchmarks/results/ (gitignored). --one-file-only times one manifest only (kvlint,
# check-jsonschema and yamllint side by side) and skips the start-up breakdown: a quick check of
# the one-file target.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-.venv/bin/python}"
# yamllint is a yardstick, not a dependency of kvlint: installed into the benchmark's environment.
if ! "$PYTHON" -c "import yamllint" 2>/dev/null; then
  "$PYTHON" -m pip install --quiet --disable-pip-version-check yamllint
fi
# Compare like with like: pip byte-compiles yamllint and check-jsonschema when it installs them,
# and a wheel install of kvlint does the same; an editable checkout (or PYTHONDONTWRITEBYTECODE)
# would otherwise make kvlint recompile its sources on every run.
"$PYTHON" -m compileall -q kvlint >/dev/null
export PYTHONDONTWRITEBYTECODE=
"$PYTHON" benchmarks/bench_check.py "$@"
for arg in "$@"; do
  [ "$arg" = --one-file-only ] && exit 0
done
echo
exec "$PYTHON" benchmarks/startup.py --output benchmarks/results/startup-latest.json
