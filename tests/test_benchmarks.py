"""benchmarks/bench_check.py and benchmarks/startup.py work (no timing is asserted: speed is
measured by the benchmarks, never gated by the test suite)."""

from __future__ import annotations

import importlib.util
import os
import sys
from types import ModuleType

import pytest

from conftest import REPO_ROOT


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"kvlint_benchmarks_{name}", REPO_ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


bench = _load("bench_check")
startup = _load("startup")

IMPORTTIME = """\
import time: self [us] | cumulative | imported package
import time:       100 |        100 |   _io
import time:       200 |        300 | io
import time:        50 |         50 |       yaml.error
import time:        70 |        120 |     yaml
import time:        30 |         30 |     jsonschema._utils
import time:        40 |         40 |       referencing
kvlint-startup-phase: enter schema validation
import time:        10 |         50 |     jsonschema
kvlint-startup-phase: leave schema validation
import time:       400 |        600 |   kvlint.schema
import time:        20 |        620 | kvlint.check
"""


def test_importtime_rows_know_their_importer_and_phase():
    rows = {r["module"]: r for r in startup.parse_importtime(IMPORTTIME)}
    assert rows["_io"]["parent"] == "io" and rows["io"]["parent"] is None
    assert rows["yaml.error"]["parent"] == "yaml"
    assert rows["yaml"]["parent"] == "kvlint.schema" and rows["kvlint.schema"]["parent"] == "kvlint.check"
    assert rows["referencing"]["parent"] == "jsonschema"
    assert rows["jsonschema"]["phase"] == "schema validation"
    assert rows["io"]["phase"] is None and rows["kvlint.check"]["phase"] == "cli (rest)"


def test_imports_group_per_package_with_kvlint_modules_one_by_one():
    groups = startup.group_imports(startup.parse_importtime(IMPORTTIME))
    assert groups["yaml"] == {"modules": 2, "self_us": 120, "cumulative_us": 120, "imported_by": "kvlint.schema",
                              "phase": None}
    # two outermost imports of jsonschema's modules: both count towards its cumulative time
    assert groups["jsonschema"]["modules"] == 2 and groups["jsonschema"]["cumulative_us"] == 80
    assert groups["referencing"]["imported_by"] == "jsonschema"
    assert groups["kvlint.schema"]["self_us"] == 400 and groups["kvlint.check"]["cumulative_us"] == 620
    assert startup.group_of("importlib.metadata._meta") == "importlib.metadata"
    assert startup.group_of("click.testing") == "click.testing" and startup.group_of("click.core") == "click"
    assert startup.kind_of("kvlint.cli") == "kvlint"
    if hasattr(sys, "stdlib_module_names"):
        assert startup.kind_of("json") == "stdlib" and startup.kind_of("yaml") == "third-party"


def test_harness_times_the_real_cli_by_phase(tmp_path):
    (tmp_path / "kvlint.toml").write_text("# defaults\n", encoding="utf-8")
    (tmp_path / "deploy.yaml").write_text(
        (REPO_ROOT / "examples" / "llama70b-fp8-h100.yaml").read_text(encoding="utf-8"), encoding="utf-8"
    )
    env = startup.child_env(tmp_path, "warm")
    run = startup.run_harness(sys.executable, startup.entry_point(), ["check", "deploy.yaml"], tmp_path, env,
                              importtime=True)
    assert run["exit_code"] == 0
    known = {phase for phase, *_ in startup.PHASES}
    assert run["matched"] and set(run["matched"]) <= known
    for key in ("phases_wall_s", "phases_cpu_s"):
        assert {"interpreter start", "import (eager)", "cli (rest)", "exit"} <= set(run[key])
    # the traced run attributes imports to phases through the markers
    phases = {row["phase"] for row in startup.parse_importtime(run["stderr"])}
    assert "import" in phases and "cli (rest)" in phases


def test_p90_and_side_by_side_measurement(tmp_path):
    assert bench.p90([1.0]) == 1.0
    assert bench.p90([float(v) for v in range(1, 11)]) == pytest.approx(9.1)
    bench.ENV = dict(os.environ)
    results = bench.measure_side_by_side(
        {"a": [sys.executable, "-c", "pass"], "b": [sys.executable, "-c", "raise SystemExit(1)"]}, tmp_path, 2
    )
    assert set(results) == {"a", "b"}
    assert results["a"]["runs"] == results["b"]["runs"] == 2
    assert results["a"]["exit_codes"] == [0] and results["b"]["exit_codes"] == [1]
    assert {"median_s", "p90_s", "cpu_median_s", "peak_rss_mib"} <= set(results["a"])
