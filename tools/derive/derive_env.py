"""The derivation's own environment: pinned, installed the same way everywhere, and recorded.

A truth table must depend on the engine release only, never on the machine that derived it.
Three things could make it depend on the machine; each is fixed here or in stubs.py:

* the Python packages a release imports (transformers, pydantic, numpy, gguf, ...): exact
  versions in `tools/derive/requirements/*.txt`, the whole closure, installed with `--no-deps`
  into a fresh directory per lock file (`setup`);
* torch, the real CPU build the releases import: pinned in `requirements/tool.txt`;
* what a release asks the host (nvcc, ninja, CUDA_HOME): answered from `stubs.HOST`.

`record()` gives the header each table carries ("environment"); `check()` refuses a
dependency directory that does not hold exactly its lock file's versions (a directory upgraded
in place keeps the old dist-info next to the new one, and a release then reads the wrong one).

    python tools/derive/derive_env.py setup            # (re)build every dependency dir from its lock
    python tools/derive/derive_env.py setup deps-tf5   # one of them
    python tools/derive/derive_env.py check            # the dirs, torch and Python against the locks
    python tools/derive/derive_env.py freeze DIR       # pins of a `pip install --target DIR` (new lock)
"""

from __future__ import annotations

import argparse
import hashlib
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
CACHE = HERE / ".cache"
LOCK_DIR = HERE / "requirements"
# dependency directory (under .cache/) -> its lock file (under requirements/)
LOCKS = {
    "deps": "vllm-deps.txt",          # vLLM releases whose transformers requirement is < 5
    "deps-tf5": "vllm-deps-tf5.txt",  # vLLM releases that require transformers >= 5
    "sglang-deps": "sglang-deps.txt",  # the real packages SGLang's argument code imports
}
TOOL_LOCK = "tool.txt"
PYTHON = "3.11"  # the interpreter the tables are derived with (the weekly workflow's)


class EnvironmentMismatch(RuntimeError):
    """The installed environment is not the pinned one."""


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def read_lock(path: Path) -> Dict[str, str]:
    """{normalized name: version} of a `name==version` lock file (comments and options skipped)."""
    pins: Dict[str, str] = {}
    for raw in path.read_text().splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line or line.startswith("-"):
            continue
        name, _, version = line.partition("==")
        pins[_norm(name.split("[")[0])] = version.split(";")[0].strip()
    return pins


def installed(target: Path) -> Dict[str, List[str]]:
    """{normalized name: [versions]} of the dist-info directories in a `pip --target` directory;
    more than one version of a name is what an in-place upgrade leaves behind."""
    found: Dict[str, List[str]] = {}
    for meta in sorted(Path(target).glob("*.dist-info")):
        name, _, version = meta.name[: -len(".dist-info")].rpartition("-")
        found.setdefault(_norm(name), []).append(version)
    return found


def lock_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def check_dir(name: str, cache: Path = CACHE) -> None:
    """Raise EnvironmentMismatch unless .cache/<name> holds exactly its lock file's versions."""
    lock = LOCK_DIR / LOCKS[name]
    target = Path(cache) / name
    if not target.is_dir():
        raise EnvironmentMismatch(f"{target} is missing: run `python tools/derive/derive_env.py setup {name}`")
    have = installed(target)
    problems = [f"{n}: {', '.join(v)} installed side by side" for n, v in sorted(have.items()) if len(v) > 1]
    for pkg, version in sorted(read_lock(lock).items()):
        got = have.get(pkg)
        if not got:
            problems.append(f"{pkg}=={version} missing")
        elif got != [version]:
            problems.append(f"{pkg}: {', '.join(got)} installed, {lock.name} pins {version}")
    if problems:
        raise EnvironmentMismatch(
            f"{target} is not {lock.relative_to(REPO)}: " + "; ".join(problems)
            + f" (rebuild it: python tools/derive/derive_env.py setup {name})")


def torch_version() -> Optional[str]:
    from importlib import metadata
    try:
        return metadata.version("torch")
    except metadata.PackageNotFoundError:
        return None


def check_tool() -> None:
    """The interpreter running the derivation against requirements/tool.txt: Python 3.11 and every
    pinned distribution at its version (torch the CPU build)."""
    from importlib import metadata

    problems = []
    py = f"{sys.version_info.major}.{sys.version_info.minor}"
    if py != PYTHON:
        problems.append(f"Python {py}, the tables are derived with {PYTHON}")
    have = {}
    for dist in metadata.distributions():
        name = dist.metadata.get("Name")
        if name:
            have.setdefault(_norm(name), dist.version)
    for pkg, want in sorted(read_lock(LOCK_DIR / TOOL_LOCK).items()):
        got = have.get(pkg)
        if got != want:
            problems.append(f"{pkg} {got or 'not installed'}, {TOOL_LOCK} pins {want}")
    if problems:
        raise EnvironmentMismatch(
            f"this interpreter ({sys.executable}) is not tools/derive/requirements/{TOOL_LOCK}: "
            + "; ".join(problems) + " (install it as the file's header says)")


def freeze(target: Path) -> str:
    """The `name==version` lines of a `pip --target` directory (to refresh a lock file)."""
    lines = []
    for name, versions in sorted(installed(target).items()):
        if len(versions) > 1:
            raise EnvironmentMismatch(f"{target}: {name} {', '.join(versions)} installed side by side")
        lines.append(f"{name}=={versions[0]}")
    return "\n".join(lines) + "\n"


def record(dep_dir: Optional[str], host: dict) -> dict:
    """The "environment" header of a table derived with .cache/<dep_dir> (None: paths given by
    hand) and the fixed host answers `host` (stubs.HOST, sglang_stubs.HOST)."""
    env = {
        "python": f"{sys.version_info.major}.{sys.version_info.minor}",
        "torch": torch_version(),
        "tool_lock": {"file": f"tools/derive/requirements/{TOOL_LOCK}",
                      "sha256_16": lock_digest(LOCK_DIR / TOOL_LOCK)},
        "host": host,
    }
    if dep_dir in LOCKS:
        lock = LOCK_DIR / LOCKS[dep_dir]
        env["deps"] = {"dir": dep_dir, "file": f"tools/derive/requirements/{LOCKS[dep_dir]}",
                       "sha256_16": lock_digest(lock)}
    else:
        env["deps"] = {"dir": None, "note": "dependency paths given by hand (not a pinned directory)"}
    return env


def setup(names: List[str], cache: Path = CACHE) -> None:
    """Build each dependency directory afresh from its lock file (never upgraded in place)."""
    for name in names:
        target = Path(cache) / name
        if target.exists():
            shutil.rmtree(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        cmd = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-compile",
               "--target", str(target), "-r", str(LOCK_DIR / LOCKS[name])]
        print("+", " ".join(cmd), flush=True)
        subprocess.run(cmd, check=True)
        check_dir(name, cache)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("action", choices=["setup", "check", "freeze"])
    ap.add_argument("dirs", nargs="*", help=f"dependency dirs (default: {', '.join(LOCKS)}); "
                                            "freeze: one `pip --target` directory to print pins for")
    a = ap.parse_args(argv)
    if a.action == "freeze":
        if len(a.dirs) != 1:
            ap.error("freeze takes one directory")
        sys.stdout.write(freeze(Path(a.dirs[0])))
        return 0
    names = a.dirs or list(LOCKS)
    unknown = [n for n in names if n not in LOCKS]
    if unknown:
        ap.error(f"unknown dependency dir {', '.join(unknown)} (known: {', '.join(LOCKS)})")
    try:
        if a.action == "setup":
            setup(names)
        check_tool()
        for n in names:
            check_dir(n)
    except EnvironmentMismatch as exc:
        print(f"derive_env: {exc}", file=sys.stderr)
        return 1
    print("derivation environment matches the lock files:", ", ".join(names))
    return 0


if __name__ == "__main__":
    sys.exit(main())
