"""Every attention-backend name each vLLM release knows, read from the release's own wheel.

`--attention-backend NAME` (and `VLLM_ATTENTION_BACKEND` before it) is looked up in the release's
backend enum: `AttentionBackendEnum` in vllm/v1/attention/backends/registry.py (0.14 on) or
vllm/attention/backends/registry.py (0.11.1-0.13), `_Backend` in vllm/platforms/interface.py
(0.11.0). vllm_probe.py imports and asks only the backends that can run on a CUDA or ROCm GPU
(its SKIP_BACKEND); this reads the enum's member names with `ast`, importing nothing, so the
catalog can be checked for the others too (CPU, TPU, XPU backends): a name the release knows is
never called unknown (KV204) when it is only for another device (KV323).

    python tools/derive/vllm_registry.py [--wheel-dir DIR] [--out tools/derive/tables/vllm_registry.json] [VERSION ...]

Without versions: every release with a table under tools/derive/tables/vllm/. A wheel is taken
from --wheel-dir (vllm-VERSION-*.whl) or downloaded with `pip download --no-deps` and removed.
Each release's entry replaces its old one and the others stay; the output is canonical JSON (sorted
keys), so a re-run gives the same bytes. vllm_derive.py records a release it
derives the same way, from the extracted tree (`read_tree`).
"""

from __future__ import annotations

import argparse
import ast
import json
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Dict, List, Optional, Tuple

HERE = Path(__file__).resolve().parent
TABLES = HERE / "tables" / "vllm"
OUT = HERE / "tables" / "vllm_registry.json"

# where the enum lives, newest layout first, and its class name there
ENUM_FILES: Tuple[Tuple[str, str], ...] = (
    ("vllm/v1/attention/backends/registry.py", "AttentionBackendEnum"),
    ("vllm/attention/backends/registry.py", "AttentionBackendEnum"),
    ("vllm/platforms/interface.py", "_Backend"),
)


def version_key(version: str) -> Tuple[int, ...]:
    return tuple(int(part) for part in version.split(".") if part.isdigit())


def enum_members(source: str, class_name: str) -> Optional[List[Tuple[str, int]]]:
    """(name, line) of each member assigned in the class body, in order; None without the class."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef) and node.name == class_name:
            members = []
            for statement in node.body:
                targets = statement.targets if isinstance(statement, ast.Assign) else (
                    [statement.target] if isinstance(statement, ast.AnnAssign) and statement.value is not None else [])
                for target in targets:
                    if isinstance(target, ast.Name) and not target.id.startswith("_"):
                        members.append((target.id, statement.lineno))
            return members
    return None


def _entry(read, label: str) -> Dict[str, object]:
    """The enum of the first ENUM_FILES path `read(path)` returns the source of (None: absent)."""
    for path, class_name in ENUM_FILES:
        source = read(path)
        members = enum_members(source, class_name) if source is not None else None
        if members:
            return {"path": path, "class": class_name, "names": [name for name, _ in members],
                    "lines": {name: line for name, line in members}}
    raise SystemExit(f"{label}: no attention-backend enum in {', '.join(p for p, _ in ENUM_FILES)}")


def read_wheel(wheel: Path) -> Dict[str, object]:
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        return _entry(lambda path: archive.read(path).decode("utf-8") if path in names else None, wheel.name)


def read_tree(root: Path) -> Dict[str, object]:
    """The same from an extracted release (wheels.fetch_release_source keeps the *.py files)."""
    return _entry(lambda path: (root / path).read_text(encoding="utf-8") if (root / path).is_file() else None,
                  str(root))


def record(version: str, entry: Dict[str, object], out: Path = OUT) -> None:
    """Put one release's entry into the table file, keeping the others; canonical JSON."""
    releases = json.loads(out.read_text(encoding="utf-8"))["releases"] if out.is_file() else {}
    releases[version] = entry
    doc = {"what": "attention-backend enum member names per vLLM release, read from the wheel by "
                   "tools/derive/vllm_registry.py (ast, nothing imported)",
           "releases": releases}
    out.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def wheel_for(version: str, wheel_dir: Optional[Path], scratch: Path) -> Tuple[Path, bool]:
    """(wheel, downloaded here)."""
    if wheel_dir is not None:
        found = sorted(wheel_dir.glob(f"vllm-{version}-*.whl"))
        if found:
            return found[0], False
    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", f"vllm=={version}",
                    "-d", str(scratch)], check=True)
    return sorted(scratch.glob(f"vllm-{version}-*.whl"))[0], True


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("versions", nargs="*")
    parser.add_argument("--wheel-dir", type=Path)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    versions = args.versions or sorted((p.stem for p in TABLES.glob("*.json")), key=version_key)
    with tempfile.TemporaryDirectory() as scratch:
        for version in versions:
            wheel, downloaded = wheel_for(version, args.wheel_dir, Path(scratch))
            entry = read_wheel(wheel)
            if downloaded:
                wheel.unlink()
            record(version, entry, args.out)
            print(f"{version}: {len(entry['names'])} names", file=sys.stderr)  # type: ignore[arg-type]
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
