"""Benchmark `kvlint check` against `check-jsonschema` on the same manifests.

Whole-process wall time (start-up included, as CI sees it), median of N runs after one warm-up,
for one manifest and for 1,000 copies of it; peak RSS of each kvlint process (wait4 rusage);
and the heaviest imports of one `kvlint check` (python -X importtime), which dominate a
one-file run. Prints a table and writes JSON to benchmarks/results/.

Targets (from the Foundation issue): one file <= 0.5x check-jsonschema, 1,000 files <= 1.0x,
peak RSS <= 40 MiB.

    benchmarks/run.sh [--runs 7] [--copies 1000]
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
TARGETS = {"one_file_ratio": 0.5, "many_files_ratio": 1.0, "peak_rss_mib": 40.0}


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


def run_once(argv: Sequence[str], cwd: Path) -> Tuple[float, int, int]:
    """(wall seconds, exit code, peak RSS in KiB) of one process."""
    started = time.perf_counter()
    process = subprocess.Popen(
        list(argv), cwd=str(cwd), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV
    )
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    return elapsed, process.returncode, usage.ru_maxrss  # KiB on Linux


def measure(argv: Sequence[str], cwd: Path, runs: int) -> Dict[str, object]:
    run_once(argv, cwd)  # warm-up: file cache, .pyc
    times: List[float] = []
    rss: List[int] = []
    codes = set()
    for _ in range(runs):
        elapsed, code, peak = run_once(argv, cwd)
        times.append(elapsed)
        rss.append(peak)
        codes.add(code)
    return {
        "median_s": statistics.median(times),
        "min_s": min(times),
        "max_s": max(times),
        "runs": runs,
        "exit_codes": sorted(codes),
        "peak_rss_mib": max(rss) / 1024,
    }


def heaviest_imports(kvlint_python: str, manifest: Path, cwd: Path, top: int = 12) -> List[Dict[str, object]]:
    result = subprocess.run(
        [kvlint_python, "-X", "importtime", "-m", "kvlint", "check", str(manifest)],
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


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--copies", type=int, default=1000)
    parser.add_argument("--manifest", help="manifest to copy (default: a bundled example)")
    args = parser.parse_args(argv)

    kvlint = tool("kvlint")
    cjs = tool("check-jsonschema")
    if not kvlint:
        print("kvlint is not installed in this environment", file=sys.stderr)
        return 2
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

        cases = {
            "one_file": [str(one.relative_to(root))],
            "many_files": many,
        }
        results: Dict[str, Dict[str, object]] = {}
        for case, files in cases.items():
            results[case] = {"files": len(files), "kvlint": measure([kvlint, "check", *files], root, args.runs)}
            if cjs:
                results[case]["check_jsonschema"] = measure(
                    [cjs, "--schemafile", str(SCHEMA), *files], root, args.runs
                )
                results[case]["ratio"] = (
                    results[case]["kvlint"]["median_s"] / results[case]["check_jsonschema"]["median_s"]
                )
        imports = heaviest_imports(sys.executable, one, root)

    peak = max(float(results[c]["kvlint"]["peak_rss_mib"]) for c in results)
    verdict = {
        "one_file_ratio": results["one_file"].get("ratio"),
        "many_files_ratio": results["many_files"].get("ratio"),
        "peak_rss_mib": peak,
    }
    met = {
        key: (value is not None and value <= TARGETS[key]) for key, value in verdict.items()
    }
    report = {
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "manifest": source,
        "bytecode": "cached (PYTHONDONTWRITEBYTECODE unset, private PYTHONPYCACHEPREFIX)",
        "results": results,
        "targets": TARGETS,
        "measured": verdict,
        "met": met,
        "heaviest_imports": imports,
    }

    print(f"manifest: {source}; median of {args.runs} runs after a warm-up; whole process, .pyc cached\n")
    print(f"{'case':<12} {'files':>6} {'kvlint s':>10} {'check-jsonschema s':>19} {'ratio':>7} {'target':>7} {'kvlint RSS MiB':>15}")
    for case, key in (("one_file", "one_file_ratio"), ("many_files", "many_files_ratio")):
        row = results[case]
        cjs_s = row.get("check_jsonschema", {}).get("median_s") if cjs else None
        ratio = row.get("ratio")
        print(
            f"{case:<12} {row['files']:>6} {row['kvlint']['median_s']:>10.3f} "
            f"{(f'{cjs_s:.3f}' if cjs_s else 'n/a'):>19} {(f'{ratio:.2f}x' if ratio else 'n/a'):>7} "
            f"{'<=' + str(TARGETS[key]) + 'x':>7} {row['kvlint']['peak_rss_mib']:>15.1f}"
        )
    print(f"\npeak RSS {peak:.1f} MiB (target <= {TARGETS['peak_rss_mib']:.0f} MiB)")
    print("targets met: " + ", ".join(f"{k}={'yes' if v else 'NO'}" for k, v in met.items()))
    print("\nheaviest imports of one `kvlint check` (cumulative ms):")
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
