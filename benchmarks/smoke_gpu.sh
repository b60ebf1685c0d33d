#!/usr/bin/env bash
# GPU smoke check for `kvlint smoke` (one short prepared script; installs nothing).
#
#   bash benchmarks/smoke_gpu.sh            # writes under $OUT, or ./benchmarks/results
#   PYTHON=/path/to/python bash benchmarks/smoke_gpu.sh
#
# Steps (each under `timeout`, so the script never hangs):
#   1. print the environment: python, torch, CUDA, device name, compute capability, Triton;
#   2. `kvlint smoke examples/ --device cuda` when the CLI has the command and examples exist;
#   3. the reference deployments built in code (benchmarks/smoke_factory_run.py) on --device cuda,
#      JSON report, then the same as a text table;
#   4. pytest -m gpu tests/test_smoke_gpu.py (the CUDA/Triton tests; -rs shows skip reasons).
# Exit status: 0 when every step that ran passed; otherwise the first non-zero step status
# (1 a smoke check failed, 2 usage/internal error, 3 could not run here: no torch or no CUDA).
set -euo pipefail

cd "$(dirname "$0")/.."
REPO="$(pwd)"
RESULTS="${OUT:-$REPO/benchmarks/results}"
mkdir -p "$RESULTS"
export PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONDONTWRITEBYTECODE=1

if [[ -n "${PYTHON:-}" ]]; then
  PY="$PYTHON"
elif [[ -x "$REPO/.venv/bin/python" ]]; then
  PY="$REPO/.venv/bin/python"
else
  PY="$(command -v python3 || command -v python)"
fi
STEP_TIMEOUT="${STEP_TIMEOUT:-240}"
status=0
note() { echo "== $*" | tee -a "$RESULTS/summary.txt"; }
record() {  # record NAME RC
  note "$1: exit $2"
  if [[ "$status" -eq 0 && "$2" -ne 0 ]]; then status="$2"; fi
}
: > "$RESULTS/summary.txt"

note "environment"
env_rc=0
timeout 120 "$PY" - <<'EOF' 2>&1 | tee "$RESULTS/environment.txt" || env_rc=$?
import json, platform, sys
info = {"python": sys.version.split()[0], "platform": platform.platform()}
try:
    import torch
except ImportError as exc:
    info["torch"] = None
    print(json.dumps(info, indent=2))
    print("torch is not importable: pip install 'kvlint[smoke]' (this script installs nothing)")
    sys.exit(3)
info.update(torch=torch.__version__, cuda_build=torch.version.cuda, hip_build=torch.version.hip,
            cuda_available=torch.cuda.is_available())
if torch.cuda.is_available():
    info.update(device=torch.cuda.get_device_name(), capability=list(torch.cuda.get_device_capability()),
                device_count=torch.cuda.device_count())
try:
    import triton
    info["triton"] = triton.__version__
except Exception as exc:
    info["triton"] = f"not importable ({type(exc).__name__})"
print(json.dumps(info, indent=2))
sys.exit(0 if torch.cuda.is_available() else 3)
EOF
record environment "$env_rc"
if [[ "$env_rc" -ne 0 ]]; then
  note "no torch or no CUDA device here: the GPU smoke test did not run (not a pass)"
  exit "$env_rc"
fi

# 2. Manifests through the CLI, once `kvlint smoke` exists and examples/ has manifests.
if compgen -G "examples/*.y*ml" > /dev/null && timeout 60 "$PY" -m kvlint smoke --help > /dev/null 2>&1; then
  cli_rc=0
  timeout "$STEP_TIMEOUT" "$PY" -m kvlint smoke examples/ --device cuda --format json \
    > "$RESULTS/smoke_examples.json" 2> "$RESULTS/smoke_examples.stderr" || cli_rc=$?
  record "kvlint smoke examples/ --device cuda" "$cli_rc"
  tail -c 4000 "$RESULTS/smoke_examples.stderr" || true
else
  note "kvlint smoke CLI or examples/ not available: skipping the manifest run (factory deployments below)"
fi

# 3. Reference deployments built in code.
factory_rc=0
timeout "$STEP_TIMEOUT" "$PY" benchmarks/smoke_factory_run.py --device cuda --layers 2 --format json \
  --output "$RESULTS/smoke_factory.json" --text-output "$RESULTS/smoke_factory.txt" \
  > /dev/null 2> "$RESULTS/smoke_factory.stderr" || factory_rc=$?
cat "$RESULTS/smoke_factory.txt" 2> /dev/null || true
tail -c 4000 "$RESULTS/smoke_factory.stderr" || true
record "factory deployments --device cuda (smoke_factory.json, smoke_factory.txt)" "$factory_rc"

# 4. The gpu-marked tests.
pytest_rc=0
timeout "$STEP_TIMEOUT" "$PY" -m pytest -m gpu tests/test_smoke_gpu.py -rs -q -p no:cacheprovider \
  --junitxml="$RESULTS/pytest_gpu.xml" 2>&1 | tee "$RESULTS/pytest_gpu.txt" || pytest_rc=$?
record "pytest -m gpu tests/test_smoke_gpu.py" "$pytest_rc"

note "results in $RESULTS"
exit "$status"
