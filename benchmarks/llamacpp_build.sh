#!/usr/bin/env bash
# Time the CPU-only build of llama-cpp-python (the `llamacpp` extra; llama.cpp b11312) with the
# options .ci/run uses, in a throw-away virtual environment and without pip's wheel cache, so the
# figure is a cold build. Writes benchmarks/results/llamacpp-build.json (gitignored).
# Usage: benchmarks/llamacpp_build.sh [JOBS]   (default 2, as in .ci/run)
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS="${1:-2}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
python3 -m venv "$work/venv"
"$work/venv/bin/python" -m pip install --quiet --upgrade pip
start=$(date +%s)
status=0
CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_BLAS=OFF -DGGML_CCACHE=OFF -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF" \
  CMAKE_BUILD_PARALLEL_LEVEL="$JOBS" \
  "$work/venv/bin/python" -m pip wheel --no-cache-dir --no-deps -w "$work/wheels" "llama-cpp-python==0.3.36" || status=$?
seconds=$(( $(date +%s) - start ))
mkdir -p benchmarks/results
printf '{"package": "llama-cpp-python==0.3.36", "llama_cpp_build": "b11312", "jobs": %s, "cores": %s, "seconds": %s, "status": %s}\n' \
  "$JOBS" "$(nproc)" "$seconds" "$status" | tee benchmarks/results/llamacpp-build.json
exit "$status"
