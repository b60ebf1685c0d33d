"""aiter's memory fraction, from each catalogued SGLang release's own code.

SGLang multiplies mem_fraction_static by 0.85 when the attention backend is aiter and the
model's context is above 8192 tokens: in ModelRunner.model_specific_adjustment up to 0.5.2x,
in ServerArgs._handle_attention_backend_compatibility from 0.5.9, and from 0.5.19 in
arg_groups/attention_hook.py, which skips it for an explicit --mem-fraction-static when
SGLANG_AITER_HONOR_EXPLICIT_MEM_FRACTION is on. The per-release tables drop fraction rewrites
(default fills would repeat in every cell), so this runs the same child as sglang_truth.py on
the MI300X (gfx942) for two models on both sides of the threshold (Llama-3.1-8B: 131072 tokens,
gemma-2-9b: 8192), with aiter and with triton, a default and an explicit fraction (0.8), and the
explicit one with the switch on, and records the fraction each ends with
(`tests/test_sglang_aiter_fraction.py` checks kvlint's capacity against it).

    python tools/derive/sglang_aiter_factor.py            # every release with a table in tables/sglang
    python tools/derive/sglang_aiter_factor.py --releases 0.5.9,0.5.23
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

OUT = HERE / "tables" / "sglang_aiter_mem_fraction.json"
FORMAT = "kvlint/derived/sglang-aiter-fraction/v1"


def run(version: str, cache: Path) -> dict:
    import sglang_truth
    import sglang_wheels

    src = sglang_wheels.fetch(version, cache)
    deps = sglang_truth.ensure_deps(cache)
    with tempfile.TemporaryDirectory(prefix=f"aiter-{version}-") as tmp:
        out = Path(tmp) / "cells.json"
        env = dict(os.environ, PYTHONHASHSEED="0", PYTHONDONTWRITEBYTECODE="1")
        env.pop(sglang_truth.AITER_ENV, None)
        proc = subprocess.run([sys.executable, str(HERE / "sglang_truth.py"), "--child", "--aiter-factor",
                               "--src", str(src), "--gpu", "gfx942", "--out", str(out), "--deps", str(deps)],
                              capture_output=True, text=True, env=env, timeout=1800)
        if proc.returncode != 0 or not out.is_file():
            return {"child_error": (proc.stderr or proc.stdout)[-2000:]}
        return json.loads(out.read_text())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--releases", help="comma-separated (default: every release with a table in tables/sglang)")
    ap.add_argument("--cache-dir", default=str(HERE / ".cache"))
    ap.add_argument("--out", default=str(OUT))
    a = ap.parse_args(argv)
    from packaging.version import Version

    versions = a.releases.split(",") if a.releases else sorted(
        (p.stem for p in (HERE / "tables" / "sglang").glob("*.json")), key=Version)
    path = Path(a.out)
    doc = json.loads(path.read_text()) if path.is_file() else {}
    doc.update(format=FORMAT, gpu="gfx942", models={"llama": 131072, "gemma2": 8192})
    releases = doc.setdefault("releases", {})
    for v in versions:
        releases[v] = run(v, Path(a.cache_dir))
        print(v, {m: {c: r.get("factor") for c, r in cases.items()} for m, cases in releases[v].items()
                  if isinstance(cases, dict) and m != "child_error"} or releases[v], flush=True)
    doc["releases"] = dict(sorted(releases.items(), key=lambda kv: Version(kv[0])))
    path.write_text(json.dumps(doc, sort_keys=True, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
