"""Where one `kvlint check` spends its start-up: imports per package, and time per phase.

1. Imports. `python -X importtime -m kvlint ARGS` for `check MANIFEST`, `--help` and `rules`,
   N runs each; stderr is parsed and grouped per top-level package (kvlint's own modules one by
   one; importlib.metadata, importlib.resources and click.testing singled out): modules, the sum
   of their self times, the cumulative time of their outermost imports (what importing the
   package costs, its dependencies included) and the module that first imported it. Medians.

2. Phases. The CLI runs whole-process under a small harness (the HARNESS string below, given to
   `python -c`) that wraps kvlint's functions by *name* as their modules load (a meta-path hook:
   nothing in kvlint is imported by this script, so modules may move): config, rulebook load,
   catalog load, discovery, manifest parse, schema validation, resolve, capacity, rules, output.
   Time goes to the innermost phase running (exclusive), the rest of the CLI to "cli (rest)";
   interpreter start-up and exit are measured from outside the process. Three cache states of
   kvlint's parsed-data cache: warm (a primed KVLINT_CACHE_DIR), off (KVLINT_NO_CACHE=1, every
   rule and catalog file parsed) and cold (an empty cache directory each run, parsed and written).
   One more run under -X importtime tells which imports each phase triggered.

3. Against yamllint. The console scripts `kvlint check FILE`, `kvlint check --output-format
   github FILE` and `yamllint FILE` (the same manifest; yamllint from the same environment),
   run in turn N times each after a warm-up, as an installed tool runs (bytecode and data cache
   warm): median and minimum wall and CPU time (the child's user + system time, which a loaded
   machine inflates much less than wall time), and kvlint's ratio to yamllint for each.
   `--ratios-only` runs this part alone.

Bytecode is cached as an installed tool has it (PYTHONDONTWRITEBYTECODE unset, a private
PYTHONPYCACHEPREFIX), each measurement after a warm-up run. Times on a loaded machine are
inflated; compare the shares, or rerun on a quiet one.

    .venv/bin/python benchmarks/startup.py [--runs 7] [--manifest PATH] [--output FILE.json] [--ratios-only]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

REPO = Path(__file__).resolve().parent.parent
DEFAULT_MANIFEST = REPO / "examples" / "llama70b-fp8-h100.yaml"
# Singled out of their top-level package: each is a start-up cost of its own.
SPLIT_PACKAGES = ("importlib.metadata", "importlib.resources", "click.testing", "email", "zipfile")
MARKER = "kvlint-startup-phase:"

# (phase, module glob, function-name globs, also methods of classes defined there). First match
# wins; globs know only `*`. Kept broad so that a restructured kvlint still matches; a phase that
# matches nothing is reported as such (update the names here, not kvlint).
PHASES: List[Tuple[str, str, Tuple[str, ...], bool]] = [
    ("config", "kvlint*", ("load_config",), False),
    ("rulebook load", "kvlint*", ("load_rulebook",), False),
    ("catalog load", "kvlint*", ("load_*catalog", "load_*catalogs"), False),
    ("discover files", "kvlint*", ("discover_files",), False),
    ("manifest parse", "kvlint*", ("load_bytes", "load_text"), False),
    ("schema validation", "kvlint*", ("validate_document",), False),
    ("resolve", "kvlint*", ("resolve",), False),
    ("capacity", "kvlint.capacity*", ("compute",), False),
    ("rules", "kvlint*", ("evaluate", "findings_from_facts"), True),
    ("analysis (rest)", "kvlint*", ("semantic_analyzer", "analyze_deployment"), False),
    ("output", "kvlint*", ("render_check",), False),
    ("output", "kvlint.report*", ("format_*",), False),
]

# Runs inside the measured process as `python -c HARNESS ENTRY RESULT MARKERS PHASES -- ARGS`.
# It imports nothing kvlint does not import anyway (sys, os, time are loaded at start-up).
HARNESS = r'''
import sys, os, time
_clock, _cpu = time.monotonic, time.process_time  # wall (system-wide clock), this process's CPU
_T0, _C0 = _clock(), _cpu()
_ENTRY, _RESULT, _MARKERS, _PHASES = sys.argv[1:5]
_ARGS = sys.argv[sys.argv.index("--") + 1:]
_PHASES = eval(_PHASES)  # a literal list of tuples, written by benchmarks/startup.py
_MARK = bool(int(_MARKERS))
_totals, _calls, _stack, _matched = {}, {}, [], {}

def _glob(pattern, text):
    parts = pattern.split("*")
    if len(parts) == 1:
        return text == pattern
    if not (text.startswith(parts[0]) and text.endswith(parts[-1])) or len(text) < len(parts[0]) + len(parts[-1]):
        return False
    at = len(parts[0])
    for part in parts[1:-1]:
        found = text.find(part, at, len(text) - len(parts[-1]))
        if found < 0:
            return False
        at = found + len(part)
    return True

def _phase_for(module, name, method):
    for phase, module_glob, name_globs, methods in _PHASES:
        if method and not methods:
            continue
        if _glob(module_glob, module) and any(_glob(g, name) for g in name_globs):
            return phase
    return None

def _add(phase, wall, cpu):
    total = _totals.get(phase)
    if total is None:
        _totals[phase] = [wall, cpu]
    else:
        total[0] += wall
        total[1] += cpu

def _enter(phase, mark=True):
    now, cpu = _clock(), _cpu()
    if _stack:
        outer = _stack[-1]
        _add(outer[0], now - outer[1], cpu - outer[2])
    _stack.append([phase, now, cpu])
    _calls[phase] = _calls.get(phase, 0) + 1
    if _MARK and mark:
        os.write(2, ("%s enter %s\n" % (%(marker)r, phase)).encode())

def _leave(mark=True):
    now, cpu = _clock(), _cpu()
    phase, started, cpu_started = _stack.pop()
    _add(phase, now - started, cpu - cpu_started)
    if _stack:
        _stack[-1][1] = now
        _stack[-1][2] = cpu
    if _MARK and mark:
        os.write(2, ("%s leave %s\n" % (%(marker)r, phase)).encode())

def _wrap(function, phase):
    def timed(*args, **kwargs):
        _enter(phase)
        try:
            return function(*args, **kwargs)
        finally:
            _leave()
    for attribute in ("__module__", "__name__", "__qualname__", "__doc__"):
        try:
            setattr(timed, attribute, getattr(function, attribute))
        except (AttributeError, TypeError):
            pass
    for attribute in ("cache_clear", "cache_info"):  # functools.lru_cache
        if hasattr(function, attribute):
            setattr(timed, attribute, getattr(function, attribute))
    timed.__wrapped__ = function
    return timed

def _wrappable(value):
    code = getattr(value, "__code__", None) or getattr(getattr(value, "__wrapped__", None), "__code__", None)
    return code is not None and not (code.co_flags & 0x2A0)  # not a generator or coroutine

def _instrument(module):
    name = module.__name__
    for attribute, value in list(vars(module).items()):
        if getattr(value, "__module__", None) != name:
            continue
        if isinstance(value, type):
            for member, function in list(vars(value).items()):
                phase = _phase_for(name, member, True)
                if phase and _wrappable(function) and not isinstance(function, (staticmethod, classmethod)):
                    setattr(value, member, _wrap(function, phase))
                    _matched.setdefault(phase, []).append("%s.%s.%s" % (name, attribute, member))
            continue
        phase = _phase_for(name, attribute, False)
        if phase and callable(value) and _wrappable(value):
            setattr(module, attribute, _wrap(value, phase))
            _matched.setdefault(phase, []).append("%s.%s" % (name, attribute))

_IMPORT = ["import (eager)"]  # "import (lazy)" once the CLI runs

class _Hook:
    """Meta-path finder in front of the others: times every module's execution as an import
    phase, and instruments kvlint's modules right after they execute (before any importer sees
    them, so `from x import f` gets the timed f)."""
    @classmethod
    def find_spec(cls, fullname, path=None, target=None):
        for finder in sys.meta_path:
            if finder is cls or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        # builtin and frozen modules are loaded by classes: patching those would patch them all
        if loader is not None and not isinstance(loader, type) and hasattr(loader, "exec_module"):
            original = loader.exec_module
            own = fullname.split(".")[0] == "kvlint"
            def exec_module(module, _original=original, _own=own):
                _enter(_IMPORT[0], False)
                try:
                    _original(module)
                finally:
                    _leave(False)
                if _own:
                    _instrument(module)
            try:
                loader.exec_module = exec_module
            except (AttributeError, TypeError):
                pass
        return spec

sys.meta_path.insert(0, _Hook)
_module_name, _, _attribute = _ENTRY.partition(":")
if _MARK:
    os.write(2, ("%s enter import\n" % %(marker)r).encode())
__import__(_module_name)
_entry = sys.modules[_module_name]
for _part in _attribute.split("."):
    _entry = getattr(_entry, _part)
_T1, _C1 = _clock(), _cpu()
_IMPORT[0] = "import (lazy)"
if _MARK:
    os.write(2, ("%s leave import\n" % %(marker)r).encode())
sys.argv = ["kvlint"] + _ARGS
_code = 0
try:
    _entry()
except SystemExit as _exit:
    _code = _exit.code if isinstance(_exit.code, int) else (0 if _exit.code is None else 1)
_T2, _C2 = _clock(), _cpu()
_result = {"t0": _T0, "t_imported": _T1, "t_done": _T2, "c0": _C0, "c_imported": _C1, "c_done": _C2,
           "exit_code": _code,
           "phases": _totals, "calls": _calls, "matched": _matched}
with open(_RESULT, "w") as _handle:
    _handle.write(repr(_result))
sys.stdout.flush()
sys.exit(_code)
'''.replace("%(marker)r", repr(MARKER))


# --------------------------------------------------------------------------- environment


def child_env(scratch: Path, cache: str = "warm") -> Dict[str, str]:
    """As an installed tool runs (bytecode cached, privately), with the data cache in `cache`
    state: warm and cold use a private KVLINT_CACHE_DIR, off sets KVLINT_NO_CACHE."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("KVLINT_NO_CACHE", None)
    env["PYTHONPYCACHEPREFIX"] = str(scratch / "pycache")
    if cache == "off":
        env["KVLINT_NO_CACHE"] = "1"
    else:
        env["KVLINT_CACHE_DIR"] = str(scratch / ("cache" if cache == "warm" else "cold-cache"))
    return env


def entry_point() -> str:
    """The `kvlint` console script's target (module:function), from the installed metadata."""
    try:
        from importlib.metadata import entry_points

        found = [ep for ep in entry_points(group="console_scripts") if ep.name == "kvlint"]
        if found:
            return found[0].value
    except Exception:  # noqa: BLE001 - fall back to the documented module
        pass
    return "kvlint.cli:main"


# --------------------------------------------------------------------------- -X importtime


def parse_importtime(stderr: str) -> List[Dict[str, Any]]:
    """Rows of -X importtime in output order, each with its importer (`parent`, None at the top)
    and the phase marker in force when it was printed (harness runs only)."""
    rows: List[Dict[str, Any]] = []
    phases: List[str] = []
    outside = None  # before the first marker: interpreter start; after: the CLI's own code
    for line in stderr.splitlines():
        if line.startswith(MARKER):
            outside = "cli (rest)"
            _, action, phase = line.split(" ", 2)
            if action == "enter":
                phases.append(phase)
            elif phases:
                phases.pop()
            continue
        if not line.startswith("import time:") or line.count("|") != 2:
            continue
        self_us, cumulative_us, name = line[len("import time:"):].split("|")
        if not self_us.strip().isdigit():
            continue  # the header
        rows.append({
            "module": name.strip(),
            "depth": (len(name) - len(name.lstrip()) - 1) // 2,
            "self_us": int(self_us),
            "cumulative_us": int(cumulative_us),
            "phase": phases[-1] if phases else outside,
            "parent": None,
        })
    # Output is post-order (an import prints after its nested ones), so walking backwards meets
    # each importer before the modules it imported.
    stack: List[Dict[str, Any]] = []
    for row in reversed(rows):
        while stack and stack[-1]["depth"] >= row["depth"]:
            stack.pop()
        row["parent"] = stack[-1]["module"] if stack else None
        stack.append(row)
    return rows


def group_of(module: str) -> str:
    if module.split(".")[0] == "kvlint":
        return module
    for split in SPLIT_PACKAGES:
        if module == split or module.startswith(split + "."):
            return split
    return module.split(".")[0]


def kind_of(group: str) -> str:
    top = group.split(".")[0]
    if top == "kvlint":
        return "kvlint"
    stdlib = getattr(sys, "stdlib_module_names", ())
    if top in stdlib or top.startswith("_") and top.lstrip("_") in stdlib or top in sys.builtin_module_names:
        return "stdlib"
    return "third-party" if stdlib else "?"


def group_imports(rows: Sequence[Dict[str, Any]]) -> Dict[str, Dict[str, Any]]:
    groups: Dict[str, Dict[str, Any]] = {}
    for row in rows:
        name = group_of(row["module"])
        entry = groups.setdefault(
            name, {"modules": 0, "self_us": 0, "cumulative_us": 0, "imported_by": None, "phase": None}
        )
        entry["modules"] += 1
        entry["self_us"] += row["self_us"]
        parent = row["parent"]
        if parent is None or group_of(parent) != name:  # an outermost import of this group
            entry["cumulative_us"] += row["cumulative_us"]
            # outermost imports of one group do not nest, so the first printed is the first made
            entry["imported_by"] = entry["imported_by"] or (parent or "(none: start-up or a function body)")
            entry["phase"] = entry["phase"] or row["phase"]
    return groups


def run_importtime(python: str, args: Sequence[str], cwd: Path, env: Dict[str, str]) -> List[Dict[str, Any]]:
    completed = subprocess.run(
        [python, "-X", "importtime", "-m", "kvlint", *args], cwd=str(cwd), env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=300,
    )
    return parse_importtime(completed.stderr)


def imports_report(python: str, args: Sequence[str], cwd: Path, env: Dict[str, str], runs: int) -> Dict[str, Any]:
    run_importtime(python, args, cwd, env)  # warm-up: .pyc, data cache
    per_run = [group_imports(run_importtime(python, args, cwd, env)) for _ in range(runs)]
    names = sorted({name for groups in per_run for name in groups})
    table = {}
    for name in names:
        present = [g[name] for g in per_run if name in g]
        first = present[0]
        table[name] = {
            "kind": kind_of(name),
            "modules": first["modules"],
            "self_us": int(statistics.median(p["self_us"] for p in present)),
            "cumulative_us": int(statistics.median(p["cumulative_us"] for p in present)),
            "imported_by": first["imported_by"],
            "runs_seen": len(present),
        }
    totals = {}
    for kind in ("kvlint", "third-party", "stdlib"):
        members = [t for t in table.values() if t["kind"] == kind]
        totals[kind] = {"modules": sum(t["modules"] for t in members), "self_us": sum(t["self_us"] for t in members)}
    totals["all"] = {"modules": sum(t["modules"] for t in table.values()), "self_us": sum(t["self_us"] for t in table.values())}
    return {"args": list(args), "runs": runs, "totals": totals, "groups": table}


# --------------------------------------------------------------------------- phases


def run_harness(python: str, entry: str, args: Sequence[str], cwd: Path, env: Dict[str, str],
                importtime: bool = False) -> Dict[str, Any]:
    """One whole-process run under HARNESS: {phase: seconds} in wall time and in CPU time."""
    with tempfile.TemporaryDirectory(prefix="kvlint-harness-") as work:
        result_path = Path(work) / "result.txt"
        stderr_path = Path(work) / "stderr.txt"
        argv = [python, *(["-X", "importtime"] if importtime else []), "-c", HARNESS,
                entry, str(result_path), "1" if importtime else "0", repr(PHASES), "--", *args]
        with open(stderr_path, "w") as stderr:
            started = time.monotonic()
            process = subprocess.Popen(argv, cwd=str(cwd), env=env, stdout=subprocess.DEVNULL, stderr=stderr)
            _, status, usage = os.wait4(process.pid, 0)
            ended = time.monotonic()
        text = result_path.read_text() if result_path.exists() else ""
        stderr_text = stderr_path.read_text()
    if not text:
        raise RuntimeError(f"the harness wrote nothing (status {status}):\n{stderr_text[-2000:]}")
    import ast

    result = ast.literal_eval(text)
    cpu_total = usage.ru_utime + usage.ru_stime
    measured = {name: tuple(values) for name, values in result["phases"].items()}
    eager = measured.pop("import (eager)", (0.0, 0.0))
    phases: Dict[str, Tuple[float, float]] = {
        "interpreter start": (result["t0"] - started, result["c0"]),
        "import (eager)": eager,
        "harness set-up": ((result["t_imported"] - result["t0"]) - eager[0],
                           (result["c_imported"] - result["c0"]) - eager[1]),
    }
    phases.update(measured)
    phases["cli (rest)"] = (
        (result["t_done"] - result["t_imported"]) - sum(v[0] for v in measured.values()),
        (result["c_done"] - result["c_imported"]) - sum(v[1] for v in measured.values()),
    )
    phases["exit"] = (ended - result["t_done"], cpu_total - result["c_done"])
    return {
        "wall_s": ended - started,
        "cpu_s": cpu_total,
        "exit_code": result["exit_code"],
        "phases_wall_s": {name: value[0] for name, value in phases.items()},
        "phases_cpu_s": {name: value[1] for name, value in phases.items()},
        "calls": result["calls"],
        "matched": result["matched"],
        "stderr": stderr_text if importtime else "",
    }


def phases_report(python: str, entry: str, args: Sequence[str], scratch: Path, runs: int) -> Dict[str, Any]:
    report: Dict[str, Any] = {}
    for cache in ("warm", "off", "cold"):
        env = child_env(scratch, cache)
        samples = []
        run_harness(python, entry, args, scratch, env)  # warm-up (and primes the warm cache)
        for _ in range(runs):
            if cache == "cold":
                shutil.rmtree(scratch / "cold-cache", ignore_errors=True)
            samples.append(run_harness(python, entry, args, scratch, env))
        names = list(dict.fromkeys(n for sample in samples for n in sample["phases_wall_s"]))
        report[cache] = {
            "runs": runs,
            "wall_median_s": statistics.median(s["wall_s"] for s in samples),
            "cpu_median_s": statistics.median(s["cpu_s"] for s in samples),
            "exit_codes": sorted({s["exit_code"] for s in samples}),
            "phases_wall_median_s": {n: statistics.median(s["phases_wall_s"].get(n, 0.0) for s in samples) for n in names},
            "phases_cpu_median_s": {n: statistics.median(s["phases_cpu_s"].get(n, 0.0) for s in samples) for n in names},
            "calls": samples[-1]["calls"],
            "matched": samples[-1]["matched"],
        }
    # Which imports each phase triggered: one more warm run under -X importtime.
    traced = run_harness(python, entry, args, scratch, child_env(scratch, "warm"), importtime=True)
    by_phase: Dict[str, Dict[str, int]] = {}
    for row in parse_importtime(traced["stderr"]):
        if row["parent"] is None:  # an outermost import, triggered by the phase in force
            phase = row["phase"] or "interpreter start"
            group = group_of(row["module"])
            by_phase.setdefault(phase, {})
            by_phase[phase][group] = by_phase[phase].get(group, 0) + row["cumulative_us"]
    report["imports_by_phase_us"] = by_phase
    return report


def plain_wall(python: str, args: Sequence[str], cwd: Path, env: Dict[str, str], runs: int) -> float:
    argv = [python, "-m", "kvlint", *args]
    subprocess.run(argv, cwd=str(cwd), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    times = []
    for _ in range(runs):
        started = time.monotonic()
        subprocess.run(argv, cwd=str(cwd), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.monotonic() - started)
    return statistics.median(times)


# --------------------------------------------------------------------------- against yamllint


def console_script(name: str) -> Optional[str]:
    """The console script `name` of this environment (beside sys.executable), else on PATH."""
    here = Path(sys.executable).parent / name
    return str(here) if here.is_file() else shutil.which(name)


def ratios_report(manifest: Path, cwd: Path, env: Dict[str, str], runs: int) -> Dict[str, Any]:
    """kvlint's start-up against yamllint's on the same file: each command `runs` times, in turn
    (a burst of load hits all of them alike), after one warm-up run each."""
    import resource

    kvlint, yamllint = console_script("kvlint"), console_script("yamllint")
    if kvlint is None or yamllint is None:
        return {"missing": [n for n, p in (("kvlint", kvlint), ("yamllint", yamllint)) if p is None]}
    commands = {
        "yamllint FILE": [yamllint, manifest.name],
        "kvlint check FILE": [kvlint, "check", manifest.name],
        "kvlint check --output-format github FILE": [kvlint, "check", "--output-format", "github", manifest.name],
    }
    samples: Dict[str, Dict[str, List[float]]] = {name: {"wall": [], "cpu": []} for name in commands}

    def once(argv: List[str]) -> Tuple[float, float]:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        subprocess.run(argv, cwd=str(cwd), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)

    for argv in commands.values():
        once(argv)  # warm-up: bytecode, data cache
    for _ in range(runs):
        for name, argv in commands.items():
            wall, cpu = once(argv)
            samples[name]["wall"].append(wall)
            samples[name]["cpu"].append(cpu)
    figures: Dict[str, Dict[str, Any]] = {}
    for name, sample in samples.items():
        row = figures[name] = {}
        for kind, values in sample.items():
            row[f"{kind}_median_s"] = statistics.median(values)
            row[f"{kind}_min_s"] = min(values)
    base = figures["yamllint FILE"]
    for row in figures.values():
        for key in ("wall_median", "wall_min", "cpu_median", "cpu_min"):
            row[f"{key}_ratio"] = row[f"{key}_s"] / base[f"{key}_s"] if base[f"{key}_s"] else None
    return {"runs": runs, "load_average": os.getloadavg(), "figures": figures}


def print_ratios(report: Dict[str, Any]) -> None:
    if "missing" in report:
        print(f"\n== against yamllint: skipped, not installed here: {', '.join(report['missing'])} ==")
        return
    print(f"\n== against yamllint on the same file ({report['runs']} runs each, in turn; load average "
          f"{', '.join(f'{x:.2f}' for x in report['load_average'])}) ==")
    print(f"  {'command':<42} {'wall med':>9} {'wall min':>9} {'CPU med':>8} {'CPU min':>8}   "
          f"ratio to yamllint: wall med / CPU med / CPU min")
    for name, row in report["figures"].items():
        print(f"  {name:<42} {row['wall_median_s'] * 1000:>9.1f} {row['wall_min_s'] * 1000:>9.1f} "
              f"{row['cpu_median_s'] * 1000:>8.1f} {row['cpu_min_s'] * 1000:>8.1f}   "
              f"{row['wall_median_ratio']:.2f} / {row['cpu_median_ratio']:.2f} / {row['cpu_min_ratio']:.2f}")


# --------------------------------------------------------------------------- printing


def print_imports(report: Dict[str, Any], top: int) -> None:
    totals = report["totals"]
    print(f"\n== imports: python -X importtime -m kvlint {' '.join(report['args'])} "
          f"(median of {report['runs']} runs) ==")
    print("modules: " + ", ".join(f"{k} {v['modules']} ({v['self_us'] / 1000:.1f} ms self)" for k, v in totals.items()))
    print(f"  {'package / kvlint module':<34} {'kind':<11} {'mods':>4} {'self ms':>8} {'cum ms':>8}  first imported by")
    rows = sorted(report["groups"].items(), key=lambda item: -item[1]["cumulative_us"])
    for name, row in rows[:top]:
        print(f"  {name:<34} {row['kind']:<11} {row['modules']:>4} {row['self_us'] / 1000:>8.1f} "
              f"{row['cumulative_us'] / 1000:>8.1f}  {row['imported_by']}")
    own = sorted(((n, r) for n, r in report["groups"].items() if r["kind"] == "kvlint"), key=lambda i: -i[1]["self_us"])
    print("  kvlint modules by self time: " + ", ".join(f"{n} {r['self_us'] / 1000:.1f}" for n, r in own[:12]))


def print_phases(report: Dict[str, Any], args: Sequence[str], plain: float) -> None:
    caches = ("warm", "off", "cold")
    print(f"\n== phases of one `kvlint {' '.join(args)}` (median ms of {report['warm']['runs']} runs; "
          "exclusive: nested phases and imports are not counted twice) ==")
    print("   CPU time of the process per phase, by state of the parsed-data cache: warm = primed (as")
    print("   ~/.cache/kvlint after the first run), off = KVLINT_NO_CACHE=1, cold = an empty cache dir;")
    print("   and wall time, warm. On a loaded machine wall time is inflated, CPU time much less.")
    names = list(dict.fromkeys(n for c in caches for n in report[c]["phases_cpu_median_s"]))
    order = list(dict.fromkeys(["interpreter start", "harness set-up", "import (eager)", "import (lazy)"]
                               + [p[0] for p in PHASES] + ["cli (rest)", "exit"]))
    names = [n for n in order if n in names] + [n for n in names if n not in order]
    print(f"  {'phase':<30} {'CPU warm':>9} {'CPU off':>8} {'CPU cold':>9} {'wall warm':>10}  calls")
    for name in names:
        cpus = " ".join(f"{report[c]['phases_cpu_median_s'].get(name, 0.0) * 1000:>{w}.1f}"
                        for c, w in zip(caches, (9, 8, 9)))
        wall = report["warm"]["phases_wall_median_s"].get(name, 0.0) * 1000
        print(f"  {name:<30} {cpus} {wall:>10.1f}  {report['warm']['calls'].get(name, '')}")
    cpus = " ".join(f"{report[c]['cpu_median_s'] * 1000:>{w}.1f}" for c, w in zip(caches, (9, 8, 9)))
    print(f"  {'whole process (harness)':<30} {cpus} {report['warm']['wall_median_s'] * 1000:>10.1f}")
    print(f"  {'whole process (plain -m kvlint)':<30} {'':>28} {plain * 1000:>10.1f}  (warm, no harness)")
    missing = [p[0] for p in PHASES if p[0] not in report["warm"]["matched"]]
    print("  functions timed: " + "; ".join(f"{k}: {', '.join(v)}" for k, v in report["warm"]["matched"].items()))
    if missing:
        print("  phases whose functions were not found (or never loaded): " + ", ".join(missing))
    print("  imports each phase triggered (warm, -X importtime, cumulative ms of the outermost imports):")
    for phase, groups in report["imports_by_phase_us"].items():
        total = sum(groups.values())
        listed = sorted(groups.items(), key=lambda item: -item[1])
        print(f"    {phase:<28} {total / 1000:>7.1f}  " + ", ".join(f"{g} {us / 1000:.1f}" for g, us in listed[:8]))


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--manifest", default=str(DEFAULT_MANIFEST))
    parser.add_argument("--top", type=int, default=25, help="rows of each import table")
    parser.add_argument("--output", help="also write the figures as JSON here")
    parser.add_argument("--ratios-only", action="store_true", help="only the comparison with yamllint")
    args = parser.parse_args(argv)

    python = sys.executable
    entry = entry_point()
    with tempfile.TemporaryDirectory(prefix="kvlint-startup-") as scratch_name:
        scratch = Path(scratch_name)
        (scratch / "kvlint.toml").write_text("# defaults: no discovery above the benchmark dir\n")
        manifest = scratch / "deploy.yaml"
        manifest.write_text(Path(args.manifest).read_text(encoding="utf-8"), encoding="utf-8")
        env = child_env(scratch, "warm")
        ratios = ratios_report(manifest, scratch, env, args.runs)
        imports: Dict[str, Any] = {}
        phases: Dict[str, Any] = {}
        plain = None
        if not args.ratios_only:
            commands = {"check": ["check", manifest.name], "help": ["--help"], "rules": ["rules"]}
            imports = {name: imports_report(python, cmd, scratch, env, args.runs) for name, cmd in commands.items()}
            phases = phases_report(python, entry, commands["check"], scratch, args.runs)
            plain = plain_wall(python, commands["check"], scratch, env, args.runs)

    print(f"manifest: {args.manifest}; entry point {entry}; python {sys.version.split()[0]}; "
          f"load average {', '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs")
    print_ratios(ratios)
    for report in imports.values():
        print_imports(report, args.top)
    if phases:
        print_phases(phases, commands["check"], plain)
    if args.output:
        Path(args.output).parent.mkdir(parents=True, exist_ok=True)
        Path(args.output).write_text(json.dumps(
            {"manifest": args.manifest, "entry_point": entry, "python": sys.version.split()[0],
             "load_average": os.getloadavg(), "ratios": ratios, "imports": imports, "phases": phases,
             "plain_wall_median_s": plain}, indent=2) + "\n")
        print(f"\nwrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
