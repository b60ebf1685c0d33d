"""Fetch a released package's Python source from its wheel, and list releases.

Used by the derivation tools (tools/derive/vllm_*.py, tools/derive/sglang*.py):
the truth about an engine release is its released code, so we download the
release's wheel through pip (the package index configured on this machine),
keep only the Python source plus small data files the source reads, and
delete the wheel (engine wheels are hundreds of MB).

    fetch_release_source("vllm", "0.12.0", Path(".cache/derive"))
        -> Path(".cache/derive/vllm-0.12.0")     # idempotent

    list_releases("vllm") -> ["0.11.0", "0.11.1", ...]   # final releases only, ascending
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.request
import zipfile
from pathlib import Path

__all__ = ["fetch_release_source", "list_releases", "is_prerelease", "version_key"]

# Data files the source may read at import time (small config/json/txt); others
# (compiled .so, CUDA kernels, fonts...) are dropped.
_KEEP_SUFFIXES = (".py", ".pyi", ".json", ".txt", ".typed", ".yaml", ".yml", ".jinja")
_MAX_DATA_BYTES = 256 * 1024  # non-.py files larger than this are skipped
_MARKER = ".derive-complete"


def _pip() -> list[str]:
    return [sys.executable, "-m", "pip"]


def fetch_release_source(package: str, version: str, cache_dir: Path) -> Path:
    """Return ``cache_dir/<package>-<version>/`` holding the wheel's Python source.

    Downloads ``<package>==<version>`` (binary wheel only, no dependencies) into
    a temporary directory, extracts ``*.py`` and small data files, deletes the
    wheel.  Idempotent: a completed extraction (marker file present) is reused.
    """
    cache_dir = Path(cache_dir)
    root = cache_dir / f"{package}-{version}"
    if (root / _MARKER).is_file() and (root / COMPILED_LIST).is_file():
        return root
    if root.exists():
        shutil.rmtree(root)  # a previous, interrupted extraction
    cache_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f"wheel-{package}-", dir=cache_dir) as tmp:
        cmd = _pip() + [
            "download", "--no-deps", "--only-binary=:all:", "--no-cache-dir",
            # Engine wheels are tagged for Linux x86_64 / CPython 3.x; ask for the
            # wheel regardless of the interpreter running this tool.
            "--platform", "manylinux_2_35_x86_64", "--platform", "manylinux_2_34_x86_64",
            "--platform", "manylinux_2_31_x86_64", "--platform", "manylinux_2_28_x86_64",
            "--platform", "manylinux_2_24_x86_64", "--platform", "manylinux_2_17_x86_64",
            "--platform", "manylinux2014_x86_64", "--platform", "linux_x86_64",
            "--platform", "any",
            f"{package}=={version}", "-d", tmp,
        ]
        env = dict(os.environ)
        env.pop("PIP_CONSTRAINT", None)
        # The machine-wide constraints file pins torch etc.; irrelevant with --no-deps
        # but pip still applies it to the requested name, so disable it.
        env["PIP_CONSTRAINT"] = ""
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
        wheels = sorted(Path(tmp).glob("*.whl"))
        if proc.returncode != 0 or not wheels:
            raise RuntimeError(
                f"pip download {package}=={version} failed (rc={proc.returncode}):\n"
                + proc.stdout[-2000:] + proc.stderr[-2000:]
            )
        staging = Path(tmp) / "src"
        staging.mkdir()
        for whl in wheels:
            _extract_source(whl, staging)
            whl.unlink()  # large; do not keep
        (staging / _MARKER).write_text(f"{package}=={version}\n" + "".join(w.name + "\n" for w in wheels))
        staging.rename(root)
    return root


COMPILED_LIST = ".compiled-modules.txt"


def _extract_source(whl: Path, dest: Path) -> None:
    """Extract source + small data; list the wheel's compiled extension modules
    (dotted names, one a line) in ``dest/.compiled-modules.txt`` so that the
    derivation can stub exactly those (they are dropped here)."""
    compiled = []
    with zipfile.ZipFile(whl) as zf:
        for info in zf.infolist():
            name = info.filename
            if name.endswith((".so", ".pyd")) and ".libs/" not in name:
                mod = name.rsplit("/", 1)
                stem = mod[-1].split(".")[0]
                dotted = ".".join(mod[0].split("/") + [stem]) if len(mod) == 2 else stem
                compiled.append(dotted)
            if info.is_dir() or ".." in Path(name).parts or name.startswith("/"):
                continue
            if not (name.endswith(_KEEP_SUFFIXES) or name.endswith(".dist-info/METADATA")):
                continue
            if not name.endswith((".py", ".pyi")) and info.file_size > _MAX_DATA_BYTES:
                continue
            target = dest / name
            target.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(info) as src, open(target, "wb") as out:
                shutil.copyfileobj(src, out)
    with open(dest / COMPILED_LIST, "a") as fh:
        fh.write("".join(m + "\n" for m in sorted(set(compiled))))


_PRE_RE = re.compile(r"(a|b|rc|dev|alpha|beta|pre|preview|c)\d*", re.I)


def is_prerelease(version: str) -> bool:
    """True for alpha/beta/rc/dev versions (``.postN`` counts as final)."""
    v = version.lower().replace(".post", "+post")
    base = v.split("+")[0]
    return bool(_PRE_RE.search(base))


def version_key(version: str) -> tuple:
    """Sort key for simple PEP 440 versions (numbers, then .postN)."""
    try:
        from packaging.version import Version  # pip vendors it; use if available
        return (0, Version(version))
    except Exception:
        pass
    nums = re.findall(r"\d+", version)
    return (1, tuple(int(n) for n in nums))


def list_releases(package: str) -> list[str]:
    """Final (non-pre) releases of ``package`` on the configured index, ascending.

    Uses ``pip index versions`` (works with this machine's pip configuration);
    falls back to the index's JSON API.
    """
    versions: list[str] = []
    try:
        proc = subprocess.run(
            _pip() + ["index", "versions", package],
            capture_output=True, text=True, timeout=300,
        )
        m = re.search(r"Available versions:\s*(.+)", proc.stdout)
        if m:
            versions = [v.strip() for v in m.group(1).split(",") if v.strip()]
    except (OSError, subprocess.SubprocessError):
        versions = []
    if not versions:
        with urllib.request.urlopen(f"https://pypi.org/pypi/{package}/json", timeout=120) as r:
            data = json.load(r)
        versions = [v for v, files in data["releases"].items() if files and not all(f.get("yanked") for f in files)]
    final = sorted({v for v in versions if not is_prerelease(v)}, key=version_key)
    return final


if __name__ == "__main__":  # python tools/derive/wheels.py vllm [version]
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("package")
    ap.add_argument("version", nargs="?")
    ap.add_argument("--cache-dir", default=str(Path(__file__).resolve().parent / ".cache"))
    a = ap.parse_args()
    if a.version:
        print(fetch_release_source(a.package, a.version, Path(a.cache_dir)))
    else:
        print("\n".join(list_releases(a.package)))
