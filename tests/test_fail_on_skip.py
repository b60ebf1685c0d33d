"""CI's smoke-cpu job: torch from the CPU wheel index, and a skipped smoke test fails the job.

tests/fail_on_skip.py turns skips into failures when KVLINT_TEST_FAIL_ON_SKIP is set; these
tests run it through a real pytest (a subprocess), on scratch test files and on the smoke tests
themselves with torch made unimportable.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Dict, Optional

import pytest
import yaml

from conftest import REPO_ROOT
from fail_on_skip import ENV

TESTS = REPO_ROOT / "tests"
SMOKE_FILES = ["tests/test_smoke.py", "tests/test_smoke_cli.py"]


def _pytest(args, cwd: Path, gate: bool, extra_path: Optional[Path] = None) -> subprocess.CompletedProcess:
    env: Dict[str, str] = {k: v for k, v in os.environ.items() if k != ENV}
    if gate:
        env[ENV] = "1"
    path = [str(TESTS)] + ([str(extra_path)] if extra_path else [])
    env["PYTHONPATH"] = os.pathsep.join(path + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rs", *args],
        cwd=str(cwd), env=env, capture_output=True, text=True, timeout=300,
    )


SCRATCH_TESTS = {
    "test_runtime_skip.py": """
        import pytest
        def test_skips_in_the_call():
            pytest.skip("no frobnicator")
    """,
    "test_marker_skip.py": """
        import pytest
        @pytest.mark.skipif(True, reason="never here")
        def test_skipif():
            pass
    """,
    "test_gpu_skip.py": """
        import pytest
        @pytest.mark.gpu
        def test_gpu_marked_skip_is_allowed():
            pytest.skip("needs a CUDA device")
    """,
    "test_xfail.py": """
        import pytest
        @pytest.mark.xfail(reason="known")
        def test_expected_failure():
            assert False
    """,
    "test_module_skip.py": """
        import pytest
        pytest.importorskip("kvlint_no_such_module")
        def test_never_collected():
            pass
    """,
    "test_passes.py": """
        def test_passes():
            pass
    """,
}


def _summary(result: subprocess.CompletedProcess) -> Dict[str, str]:
    """{node id or file: outcome} from the -rA short summary (PASSED, FAILED, ERROR, SKIPPED, XFAIL)."""
    outcomes: Dict[str, str] = {}
    for line in result.stdout.splitlines():
        match = re.match(r"(PASSED|FAILED|ERROR|SKIPPED|XFAIL) (?:\[\d+\] )?([\w./:\[\]-]+?)(?::\d+:| - |$)", line)
        if match:
            outcomes[match.group(2)] = match.group(1)
    return outcomes


@pytest.fixture(scope="module")
def scratch_runs(tmp_path_factory) -> Dict[str, subprocess.CompletedProcess]:
    """The scratch tests run once without the variable and once with it."""
    root = tmp_path_factory.mktemp("fail-on-skip")
    (root / "pytest.ini").write_text("[pytest]\nmarkers =\n    gpu: needs CUDA\n", encoding="utf-8")
    for name, body in SCRATCH_TESTS.items():
        (root / name).write_text(textwrap.dedent(body), encoding="utf-8")
    args = ["-p", "fail_on_skip", "-rA", "--continue-on-collection-errors", *sorted(SCRATCH_TESTS)]
    return {"plain": _pytest(args, root, gate=False), "gated": _pytest(args, root, gate=True)}


def test_without_the_variable_skips_stay_skips(scratch_runs):
    plain = scratch_runs["plain"]
    assert plain.returncode == 0, plain.stdout + plain.stderr
    assert _summary(plain) == {
        "test_gpu_skip.py": "SKIPPED",
        "test_marker_skip.py": "SKIPPED",
        "test_module_skip.py": "SKIPPED",
        "test_passes.py::test_passes": "PASSED",
        "test_runtime_skip.py": "SKIPPED",
        "test_xfail.py::test_expected_failure": "XFAIL",
    }, plain.stdout


def test_with_the_variable_a_skip_fails_except_gpu_marked_and_xfail(scratch_runs):
    gated = scratch_runs["gated"]
    assert gated.returncode == 1, gated.stdout + gated.stderr
    assert _summary(gated) == {
        "test_gpu_skip.py": "SKIPPED",  # gpu-marked: may skip
        "test_marker_skip.py::test_skipif": "ERROR",  # skipif skips in setup: a setup error
        "test_module_skip.py": "ERROR",  # module-level importorskip: a collection error
        "test_passes.py::test_passes": "PASSED",
        "test_runtime_skip.py::test_skips_in_the_call": "FAILED",
        "test_xfail.py::test_expected_failure": "XFAIL",
    }, gated.stdout
    # Count the reports, not the short summary: its lines are cut to the terminal's width, so
    # whether they repeat the message depends on COLUMNS where the tests run.
    reports = [line for line in gated.stdout.splitlines()
               if not re.match(r"(PASSED|FAILED|ERROR|SKIPPED|XFAIL) ", line)]
    assert sum(f"{ENV} is set, so a skip is a failure" in line for line in reports) == 3


def test_without_torch_the_gated_smoke_tests_fail_instead_of_skipping(tmp_path):
    """What the smoke-cpu job guards against: torch missing, every smoke test skipped, job green."""
    hidden = tmp_path / "no-torch"
    (hidden / "torch").mkdir(parents=True)
    (hidden / "torch" / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'torch'\", name='torch')\n", encoding="utf-8"
    )
    # As CI runs them, through pytest-xdist (pyproject's addopts), but on one worker: what is checked
    # is each test's outcome, which the number of workers does not change, and each worker is an
    # interpreter that imports pytest, kvlint's conftest and the smoke tests.
    args = [*SMOKE_FILES, "-m", "not gpu", "-q", "-rfE", "--continue-on-collection-errors", "-n", "1"]
    plain = _pytest(args, REPO_ROOT, gate=False, extra_path=hidden)
    assert plain.returncode == 0, plain.stdout + plain.stderr
    assert "skipped" in plain.stdout.splitlines()[-1]
    gated = _pytest(args, REPO_ROOT, gate=True, extra_path=hidden)
    assert gated.returncode == 1, gated.stdout + gated.stderr
    assert "could not import 'torch'" in gated.stdout
    assert "skipped" not in gated.stdout.splitlines()[-1]
    # test_smoke.py skips as a module (importorskip at import): that is a collection error
    assert "ERROR tests/test_smoke.py" in gated.stdout
    assert "FAILED tests/test_smoke_cli.py::test_smoke_measures_what_capacity_predicts" in gated.stdout


def test_ci_has_a_smoke_job_with_cpu_torch_that_fails_on_skips():
    ci = yaml.safe_load((REPO_ROOT / ".github" / "workflows" / "ci.yml").read_text(encoding="utf-8"))
    job = ci["jobs"]["smoke-cpu"]
    runs = "\n".join(step.get("run", "") for step in job["steps"])
    assert "pip install torch --index-url https://download.pytorch.org/whl/cpu" in runs
    # torch first: the smoke extra is then satisfied by the CPU wheel, never the CUDA one
    assert runs.index("--index-url https://download.pytorch.org/whl/cpu") < runs.index(".[test,smoke]")
    [test_step] = [s for s in job["steps"] if "pytest" in s.get("run", "")]
    assert test_step["env"][ENV] == "1"
    for path in SMOKE_FILES:
        assert path in test_step["run"]
    assert '-m "not gpu"' in test_step["run"]
    # no other job installs torch: the matrix legs keep testing the torch-less path
    for name, other in ci["jobs"].items():
        if name != "smoke-cpu":
            assert "torch" not in "\n".join(step.get("run", "") for step in other["steps"]), name
