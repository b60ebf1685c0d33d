"""Rebuild committed truth tables from a clean environment and compare them byte for byte.

Does exactly what tools/derive/README.md tells a maintainer to do, in a fresh directory: a copy of
the committed tree (`git archive HEAD`), a new virtual environment installed from
tools/derive/requirements/tool.txt, the dependency directories from their lock files
(derive_env.py setup), the engine wheels downloaded anew (nothing from this checkout's .cache),
then the derivation commands. Each rebuilt table must equal the committed one byte for byte.

    python tools/derive/check_reproducible.py --vllm 0.11.0,0.24.0 --sglang 0.5.1
    python tools/derive/check_reproducible.py --vllm 0.11.0 --workdir /tmp/repro --keep

Exit status 0 when every table is identical, 1 when one differs (the first differing key is
printed), 2 when the environment could not be built. Needs the package index (pip) and, for
torch, the CPU build: `--torch-index` (default: PyTorch's CPU index, as the weekly workflow uses;
pip's own configuration, e.g. a find-links directory, is honoured too).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
TORCH_INDEX = "https://download.pytorch.org/whl/cpu"


def sh(cmd: list, cwd: Path, log: list, env=None) -> None:
    t0 = time.time()
    print("+", " ".join(str(c) for c in cmd), flush=True)
    subprocess.run([str(c) for c in cmd], cwd=str(cwd), check=True, env=env)
    log.append((" ".join(str(c) for c in cmd), round(time.time() - t0, 1)))


def first_difference(a, b, path="") -> str:
    if type(a) is not type(b):
        return f"{path or '/'}: {type(a).__name__} vs {type(b).__name__}"
    if isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return f"{path}/{k}: only in the {'rebuilt' if k in a else 'committed'} table"
            if a[k] != b[k]:
                return first_difference(a[k], b[k], f"{path}/{k}")
    if isinstance(a, list) and a != b:
        if len(a) != len(b):
            return f"{path}: {len(a)} vs {len(b)} items"
        for i, (x, y) in enumerate(zip(a, b)):
            if x != y:
                return first_difference(x, y, f"{path}/{i}")
    return f"{path}: {json.dumps(a)[:200]} vs {json.dumps(b)[:200]}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--vllm", default="", help="comma-separated vLLM releases with a committed table")
    ap.add_argument("--sglang", default="", help="comma-separated SGLang releases with a committed table")
    ap.add_argument("--workdir", help="where to build (default: a new temporary directory)")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    ap.add_argument("--python", default="python3.11")
    ap.add_argument("--torch-index", default=TORCH_INDEX, help="extra index for the CPU build of torch ('' for none)")
    ap.add_argument("--prepare-only", action="store_true", help="build the environment in --workdir and stop")
    ap.add_argument("--reuse-env", action="store_true",
                    help="with --workdir: keep the environment --prepare-only built there, lay the committed tree anew")
    a = ap.parse_args(argv)
    vllm = [v for v in a.vllm.split(",") if v]
    sglang = [v for v in a.sglang.split(",") if v]
    work = Path(a.workdir) if a.workdir else Path(tempfile.mkdtemp(prefix="derive-repro-"))
    src = work / "src"
    log: list = []
    py = src / ".venv" / "bin" / "python"
    reuse = a.reuse_env and a.workdir and py.is_file()
    try:
        if src.exists() and not reuse:
            shutil.rmtree(src)
        if reuse:  # the committed tree laid anew over the environment: only .venv and the deps stay
            keep = {src / ".venv", src / "tools" / "derive" / ".cache"}
            for path in sorted(src.rglob("*"), reverse=True):
                if path.is_file() and not any(k in path.parents or k == path for k in keep):
                    path.unlink()
            cache = src / "tools" / "derive" / ".cache"
            for old in cache.glob("*"):  # engine sources are fetched anew; the dependency dirs stay
                if old.name not in ("deps", "deps-tf5", "sglang-deps"):
                    shutil.rmtree(old) if old.is_dir() else old.unlink()
        src.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "archive", "HEAD"], cwd=REPO, capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(src)], input=archive, check=True)
        lock = "tools/derive/requirements/tool.txt"
        if not reuse:
            sh([a.python, "-m", "venv", ".venv"], src, log)
            sh([py, "-m", "pip", "install", "--quiet", "-c", lock, "-e", ".[test]"], src, log)
            sh([py, "-m", "pip", "install", "--quiet", "-c", lock]
               + (["--extra-index-url", a.torch_index] if a.torch_index else []) + ["torch"], src, log)
            sh([py, "tools/derive/derive_env.py", "setup"], src, log)
        sh([py, "tools/derive/derive_env.py", "check"], src, log)
    except subprocess.CalledProcessError as exc:
        print(f"check_reproducible: the environment could not be built: {exc}", file=sys.stderr)
        return 2
    if a.prepare_only:
        print(f"environment ready in {src}")
        return 0
    # No CUDA toolkit on the derivation's PATH and no CUDA_HOME, as on GitHub's runners: the
    # tables must not notice (stubs.HOST answers those probes)
    env = dict(os.environ, PYTHONHASHSEED="0")
    env.pop("CUDA_HOME", None)
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                  if p and not (Path(p) / "nvcc").exists())
    failed = []
    runs = ([("vllm", v, [py, "tools/derive/vllm_derive.py", v]) for v in vllm]
            + [("sglang", v, [py, "tools/derive/sglang_truth.py", "--releases", v, "--jobs", "2"]) for v in sglang])
    for engine, version, cmd in runs:
        rel = Path("tools/derive/tables") / engine / f"{version}.json"
        committed = (REPO / rel).read_bytes()
        try:
            sh(cmd, src, log, env)
        except subprocess.CalledProcessError as exc:
            failed.append(f"{engine} {version}: {exc}")
            continue
        rebuilt = (src / rel).read_bytes()
        if rebuilt == committed:
            print(f"{engine} {version}: identical ({len(rebuilt):,} bytes)", flush=True)
        else:
            why = first_difference(json.loads(rebuilt), json.loads(committed))
            failed.append(f"{engine} {version}: differs at {why}")
            print(f"{engine} {version}: DIFFERS at {why}", flush=True)
    print("\ntimes:")
    for cmd, secs in log:
        print(f"  {secs:8.1f} s  {cmd}")
    if not a.keep and not a.workdir:
        shutil.rmtree(work, ignore_errors=True)
    if failed:
        print("not reproducible:\n  " + "\n  ".join(failed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
