"""SGLang release source: tools/derive/wheels.py, with a fallback for platform wheels.

From 0.5.11 SGLang ships CPython-specific manylinux_2_34 wheels, which wheels.py's
`--platform manylinux_2_31/2_28/2014 ... any` request does not match ("No matching
distribution"). The fallback downloads the wheel for *this* interpreter and platform
(pip's default tag selection) and extracts it the same way (wheels._extract_source).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import wheels  # noqa: E402  (tools/derive/wheels.py)

DEFAULT_CACHE = Path(__file__).resolve().parent / ".cache"


def fetch(version: str, cache_dir: Path = DEFAULT_CACHE) -> Path:
    try:
        return wheels.fetch_release_source("sglang", version, cache_dir)
    except RuntimeError:
        pass
    root = Path(cache_dir) / f"sglang-{version}"
    marker = root / wheels._MARKER  # noqa: SLF001 - same cache layout as wheels.py
    if marker.is_file():
        return root
    if root.exists():
        shutil.rmtree(root)
    with tempfile.TemporaryDirectory(prefix="wheel-sglang-", dir=cache_dir) as tmp:
        env = dict(os.environ, PIP_CONSTRAINT="")
        proc = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                               "--no-cache-dir", f"sglang=={version}", "-d", tmp],
                              capture_output=True, text=True, env=env)
        whls = sorted(Path(tmp).glob("*.whl"))
        if proc.returncode != 0 or not whls:
            raise RuntimeError(f"pip download sglang=={version} failed:\n{proc.stderr[-2000:]}")
        staging = Path(tmp) / "src"
        staging.mkdir()
        for whl in whls:
            wheels._extract_source(whl, staging)  # noqa: SLF001
            whl.unlink()
        (staging / wheels._MARKER).write_text(f"sglang=={version}\n" + "".join(w.name + "\n" for w in whls))  # noqa: SLF001
        staging.rename(root)
    return root


def releases() -> list:
    """0.4.10.post2 and every final 0.5.x release on the index, ascending."""
    return [v for v in wheels.list_releases("sglang") if v.startswith("0.5.") or v == "0.4.10.post2"]


if __name__ == "__main__":
    for v in (sys.argv[1:] or releases()):
        print(v, fetch(v))
