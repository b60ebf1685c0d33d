"""Rebuilding a committed truth table from a clean environment gives the same bytes.

tools/derive/check_reproducible.py does what tools/derive/README.md says, in a fresh directory:
the committed tree, a new venv from tools/derive/requirements/tool.txt, the dependency dirs from
their lock files, the release's wheel downloaded anew, no nvcc on PATH and no CUDA_HOME. It needs
the package index and several minutes (vLLM 0.11.0, the smallest table: about 8 minutes of
derivation plus the environment on a busy 2-core machine), so it runs only when asked:
KVLINT_DERIVE_REPRO=1. The weekly workflow (.github/workflows/derive.yml, job `reproduce`) runs
the full proof: two vLLM tables and one SGLang table.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.environ.get("KVLINT_DERIVE_REPRO") != "1",
                       reason="rebuilds a table from scratch (network, minutes): set KVLINT_DERIVE_REPRO=1"),
]


def test_vllm_table_rebuilds_byte_for_byte(tmp_path: Path) -> None:
    table = REPO / "tools" / "derive" / "tables" / "vllm" / "0.11.0.json"
    assert b'"environment"' in table.read_bytes()  # derived in the pinned environment
    proc = subprocess.run([sys.executable, str(REPO / "tools" / "derive" / "check_reproducible.py"),
                           "--vllm", "0.11.0", "--workdir", str(tmp_path)],
                          capture_output=True, text=True, timeout=3600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "vllm 0.11.0: identical" in proc.stdout
