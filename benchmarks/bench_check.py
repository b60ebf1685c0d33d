"""Benchmark `kvlint check` against `check-jsonschema` and `yamllint` on the same manifests.

Whole-process wall time (start-up included, as CI sees it) after one warm-up each, the tools run
side by side (interleaved, in rotating order, so machine load falls on all of them alike): median
and p90 of N runs, for one manifest and for 1,000 copies of it; CPU time (user + sys) of each
process, which a loaded machine inflates far less than wall time; peak RSS of each process (wait4
rusage); and the heaviest imports of one `kvlint check` (python -X importtime), which dominate a
one-file run (benchmarks/startup.py breaks a run down further). Prints a table and writes JSON to
benchmarks/results/.

Targets (from the Foundation issue): one file <= 0.5x check-jsonschema and <= 1.0x yamllint,
1,000 files <= 1.0x check-jsonschema, peak RSS <= 40 MiB. yamllint (default config) is timed on
the single manifest; `--yamllint-many` adds it to the 1,000-file case (slow: seconds per run).
yamllint is a benchmark tool only (benchmarks/run.sh installs it), never a dependency of kvlint.

    benchmarks/run.sh [--runs 7] [--one-file-runs 21] [--copies 1000] [--yamllint-many] [--one-file-only]

`--one-file-only` times the one-manifest case alone (a minute instead of several; the figures
of the other cases are then absent, not passed). Results name the load average: on a shared
machine compare the CPU ratios, and rerun when the load is high.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "benchmarks" / "results"
SCHEMA = REPO / "schemas" / "manifest.v1.json"
TARGETS = {"one_file_ratio": 0.5, "one_file_vs_yamllint": 1.0, "one_file_vs_yamllint_cpu": 1.0,
           "many_files_ratio": 1.0, "peak_rss_mib": 40.0, "many_kubernetes_vs_manifests": 1.5}
# A native deployment file (Kubernetes Deployment + Service) for the 1,000-native-files case.
KUBERNETES_EXAMPLE = REPO / "examples" / "kubernetes" / "llama70b-vllm.yaml"


PREFERRED_EXAMPLE = "llama70b-fp8-h100.yaml"  # the full example of docs/manifest.md


def bundled_manifest(explicit: Optional[str] = None) -> Tuple[str, str]:
    """(source, text): the chosen or preferred bundled example, else KV101's passing example."""
    if explicit:
        return explicit, Path(explicit).read_text(encoding="utf-8")
    examples = REPO / "examples"
    if examples.is_dir():
        candidates = sorted(examples.glob("*.yaml"), key=lambda p: (p.name != PREFERRED_EXAMPLE, p.name))
        for path in candidates:
            text = path.read_text(encoding="utf-8")
            if "kind: Deployment" in text and text.count("\n---") == 0:
                return str(path.relative_to(REPO)), text
    import yaml

    rule = yaml.safe_load((REPO / "rules" / "KV101-missing-required.yaml").read_text(encoding="utf-8"))
    passing = next(e for e in rule["examples"] if not e["failing"])
    return "rules/KV101-missing-required.yaml (passing example)", passing["manifest"]


def tool(name: str) -> Optional[str]:
    here = Path(sys.executable).parent / name
    return str(here) if here.exists() else shutil.which(name)


def child_env(scratch: Path) -> Dict[str, str]:
    """As an installed tool runs: bytecode cached (pip compiles .pyc at install time).

    PYTHONDONTWRITEBYTECODE in the caller's environment would make every run of a source
    checkout recompile kvlint while site-packages tools load their .pyc; a private
    PYTHONPYCACHEPREFIX keeps the cache out of the source tree.
    """
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(scratch / "pycache")
    return env


ENV: Dict[str, str] = dict(os.environ)


def run_once(argv: Sequence[str], cwd: Path) -> Tuple[float, int, int, float]:
    """(wall seconds, exit code, peak RSS in KiB, CPU seconds user + sys) of one process."""
    started = time.perf_counter()
    process = subprocess.Popen(
        list(argv), cwd=str(cwd), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV
    )
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    return elapsed, process.returncode, usage.ru_maxrss, usage.ru_utime + usage.ru_stime  # KiB on Linux


def p90(values: Sequence[float]) -> float:
    """90th percentile, linear between the closest ranks (the median's convention)."""
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    return statistics.quantiles(ordered, n=10, method="inclusive")[8]


def summarize(times: List[float], cpu: List[float], rss: List[int], codes: List[int]) -> Dict[str, object]:
    return {
        "median_s": statistics.median(times),
        "p90_s": p90(times),
        "min_s": min(times),
        "max_s": max(times),
        "cpu_median_s": statistics.median(cpu),
        "runs": len(times),
        "exit_codes": sorted(set(codes)),
        "peak_rss_mib": max(rss) / 1024,
    }


def measure_side_by_side(commands: Dict[str, Sequence[str]], cwd: Path, runs: int) -> Dict[str, Dict[str, object]]:
    """Each command once to warm up (file cache, .pyc), then `runs` rounds of every command, the
    order rotating each round: a burst of load on a shared machine lands on every tool alike."""
    names = list(commands)
    for name in names:
        run_once(commands[name], cwd)
    samples: Dict[str, Tuple[List[float], List[float], List[int], List[int]]] = {
        name: ([], [], [], []) for name in names
    }
    for round_ in range(runs):
        shift = round_ % len(names)
        for name in names[shift:] + names[:shift]:
            elapsed, code, peak, cpu = run_once(commands[name], cwd)
            times, cpus, rss, codes = samples[name]
            times.append(elapsed)
            cpus.append(cpu)
            rss.append(peak)
            codes.append(code)
    return {name: summarize(*samples[name]) for name in names}


def measure(argv: Sequence[str], cwd: Path, runs: int) -> Dict[str, object]:
    """One command alone (kept for callers that time a single tool)."""
    return measure_side_by_side({"only": argv}, cwd, runs)["only"]


def heaviest_imports(kvlint_python: str, manifest: Path, cwd: Path, top: int = 12,
                     script: Optional[str] = None) -> List[Dict[str, object]]:
    """Imports of one `kvlint check` as the console script runs it (`script`, the installed
    `kvlint`: its plain path never imports click), else of `python -m kvlint`."""
    entry = [script] if script else ["-m", "kvlint"]
    result = subprocess.run(
        [kvlint_python, "-X", "importtime", *entry, "check", str(manifest)],
        cwd=str(cwd), capture_output=True, text=True, env=ENV,
    )
    rows = []
    for line in result.stderr.splitlines():
        if not line.startswith("import time:") or line.count("|") != 2:
            continue
        self_us, cumulative_us, name = line[len("import time:"):].split("|")
        if not self_us.strip().isdigit():
            continue
        depth = len(name) - len(name.lstrip())  # nested imports are indented further
        rows.append(
            {"module": name.strip(), "depth": depth, "self_us": int(self_us), "cumulative_us": int(cumulative_us)}
        )
    top_level = [r for r in rows if r["depth"] == 1]
    top_level.sort(key=lambda r: -int(r["cumulative_us"]))
    total = sum(int(r["self_us"]) for r in rows)
    return [{"module": "(all imports)", "depth": 0, "self_us": total, "cumulative_us": total}] + top_level[:top]


def ratio(results: Dict[str, object], tool_key: str, field: str = "median_s") -> Optional[float]:
    if tool_key not in results:
        return None
    return float(results["kvlint"][field]) / float(results[tool_key][field])  # type: ignore[index]


TOOL_KEYS = (("kvlint", "kvlint"), ("check_jsonschema", "check-jsonschema"), ("yamllint", "yamllint"))


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="runs per tool on the 1,000-file case")
    parser.add_argument("--one-file-runs", type=int, default=21, help="runs per tool on one manifest")
    parser.add_argument("--copies", type=int, default=1000)
    parser.add_argument("--manifest", help="manifest to copy (default: a bundled example)")
    parser.add_argument("--yamllint-many", action="store_true", help="time yamllint on the 1,000 files too")
    parser.add_argument("--one-file-only", action="store_true", help="time only the one-manifest case")
    args = parser.parse_args(argv)

    kvlint = tool("kvlint")
    cjs = tool("check-jsonschema")
    yamllint = tool("yamllint")
    if not kvlint:
        print("kvlint is not installed in this environment", file=sys.stderr)
        return 2
    if not yamllint:
        print("yamllint is not installed here (benchmarks/run.sh installs it): not timed", file=sys.stderr)
    source, text = bundled_manifest(args.manifest)

    with tempfile.TemporaryDirectory(prefix="kvlint-bench-") as scratch:
        root = Path(scratch)
        global ENV
        ENV = child_env(root)
        (root / "kvlint.toml").write_text("# defaults: no discovery above the benchmark dir\n")
        one = root / "one" / "deploy.yaml"
        one.parent.mkdir()
        one.write_text(text)
        many_dir = root / "many"
        many_dir.mkdir()
        many = []
        for index in range(args.copies):
            path = many_dir / f"deploy-{index:04d}.yaml"
            path.write_text(text)
            many.append(str(path.relative_to(root)))

        k8s_dir = root / "k8s"
        k8s_dir.mkdir()
        k8s_text = KUBERNETES_EXAMPLE.read_text(encoding="utf-8")
        k8s = []
        for index in range(args.copies):
            path = k8s_dir / f"deploy-{index:04d}.yaml"
            path.write_text(k8s_text)
            k8s.append(str(path.relative_to(root)))

        cases = {
            "one_file": ([str(one.relative_to(root))], args.one_file_runs, True),
            "many_files": (many, args.runs, args.yamllint_many),
            "many_kubernetes": (k8s, args.runs, False),
        }
        if args.one_file_only:
            cases = {"one_file": cases["one_file"]}
        results: Dict[str, Dict[str, object]] = {}
        for case, (files, runs, with_yamllint) in cases.items():
            prefixes: Dict[str, List[str]] = {"kvlint": [kvlint, "check"]}
            if cjs and case != "many_kubernetes":  # the schema is kvlint/v1's: not for Kubernetes files
                prefixes["check_jsonschema"] = [cjs, "--schemafile", str(SCHEMA)]
            if yamllint and with_yamllint:
                prefixes["yamllint"] = [yamllint]  # its default config, as a user runs it
            shown = files if len(files) == 1 else [f"<{len(files)} files>"]
            row: Dict[str, object] = {"files": len(files), "argv": {k: v + shown for k, v in prefixes.items()}}
            row.update(measure_side_by_side({k: v + files for k, v in prefixes.items()}, root, runs))
            for key, name in (("ratio", "check_jsonschema"), ("ratio_yamllint", "yamllint")):
                value = ratio(row, name)
                if value is not None:
                    row[key] = value
                    row[key + "_cpu"] = ratio(row, name, "cpu_median_s")
            results[case] = row
        imports = heaviest_imports(sys.executable, one, root, script=kvlint)

    peak = max(float(results[c]["kvlint"]["peak_rss_mib"]) for c in results)  # type: ignore[index]
    many = "many_files" in results and "many_kubernetes" in results
    verdict = {
        "one_file_ratio": results["one_file"].get("ratio"),
        "one_file_vs_yamllint": results["one_file"].get("ratio_yamllint"),
        "one_file_vs_yamllint_cpu": results["one_file"].get("ratio_yamllint_cpu"),
        "many_files_ratio": results["many_files"].get("ratio") if many else None,
        "peak_rss_mib": peak,
        "many_kubernetes_vs_manifests": float(results["many_kubernetes"]["kvlint"]["median_s"])  # type: ignore[index]
        / float(results["many_files"]["kvlint"]["median_s"]) if many else None,  # type: ignore[index]
    }
    met = {
        key: (value is not None and value <= TARGETS[key]) for key, value in verdict.items()
    }
    report = {
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "load_average": os.getloadavg(),
        "manifest": source,
        "bytecode": "cached (PYTHONDONTWRITEBYTECODE unset, private PYTHONPYCACHEPREFIX)",
        "method": "whole process, one warm-up each, tools interleaved in rotating order",
        "results": results,
        "targets": TARGETS,
        "measured": verdict,
        "met": met,
        "heaviest_imports": imports,
    }

    print(f"manifest: {source}; whole process, .pyc cached, tools interleaved after one warm-up each")
    print(f"load average {', '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs "
          "(wall time on a loaded machine: compare the CPU column too)\n")
    print(f"{'case':<11} {'files':>5} {'tool':<17} {'runs':>4} {'median s':>9} {'p90 s':>7} {'min s':>7} "
          f"{'CPU s':>7} {'RSS MiB':>8} {'kvlint/tool':>11} {'(CPU)':>7}")
    for case in cases:
        row = results[case]
        for key, name in TOOL_KEYS:
            if key not in row:
                continue
            stats = row[key]
            rel = "" if key == "kvlint" else f"{ratio(row, key):.2f}x"
            rel_cpu = "" if key == "kvlint" else f"{ratio(row, key, 'cpu_median_s'):.2f}x"
            print(
                f"{case:<11} {row['files']:>5} {name:<17} {stats['runs']:>4} {stats['median_s']:>9.3f} "
                f"{stats['p90_s']:>7.3f} {stats['min_s']:>7.3f} {stats['cpu_median_s']:>7.3f} "
                f"{stats['peak_rss_mib']:>8.1f} {rel:>11} {rel_cpu:>7}"
            )
    print("\ntargets (medians of wall time; *_cpu of CPU time):")
    for key, value in verdict.items():
        shown = "n/a" if value is None else (f"{value:.1f} MiB" if key == "peak_rss_mib" else f"{value:.3f}x")
        bound = f"{TARGETS[key]:.0f} MiB" if key == "peak_rss_mib" else f"{TARGETS[key]}x"
        verdict_text = "not run" if value is None and args.one_file_only else ("met" if met[key] else "NOT MET")
        print(f"  {key:<28} {shown:>9}  (<= {bound})  {verdict_text}")
    print("\nheaviest imports of one `kvlint check` (cumulative ms; benchmarks/startup.py for more):")
    for row in imports[:10]:
        print(f"  {row['module']:<28} {int(row['cumulative_us']) / 1000:8.1f}")

    RESULTS.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for name in (f"bench-{stamp}.json", "latest.json"):
        (RESULTS / name).write_text(json.dumps(report, indent=2) + "\n")
    print(f"\nwrote {RESULTS / 'latest.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
