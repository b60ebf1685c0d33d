"""Which files a run reads: discovery, exclusion, display paths.

A file named on the command line is always checked; a directory walk keeps only files that
declare a kvlint apiVersion, so model `config.json` files, CI workflows and other YAML beside the
manifests are left alone.
"""

from __future__ import annotations

import fnmatch
import os
from pathlib import Path
from typing import List, Sequence, Set

from kvlint.config import Config
from kvlint.errors import UsageError
from kvlint.pipeline.native import MANIFEST_MARKER, MARKER_WINDOW, head_of, native_format

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
SKIP_DIRS = frozenset({".git", ".hg", ".svn", ".venv", "venv", "node_modules", "__pycache__", ".tox", ".nox"})


def excluded(path: Path, patterns: Sequence[str], root: Path) -> bool:
    if not patterns:
        return False
    try:
        relative = path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        relative = path.as_posix()
    candidates = {relative, path.name, path.as_posix()}
    for pattern in patterns:
        stripped = pattern.rstrip("/")
        for candidate in candidates:
            if fnmatch.fnmatch(candidate, stripped) or fnmatch.fnmatch(candidate, stripped + "/*"):
                return True
            if candidate.startswith(stripped + "/"):
                return True
    return False


def discover_files(paths: Sequence[str], config: Config) -> List[str]:
    """Files to check, in a stable order; `-` stands for stdin."""
    found: List[str] = []
    # The configured rules-dir and catalog-dir hold rule and catalog files, not manifests (a rule
    # file's examples embed manifests): a walk does not enter them.
    data_dirs = {Path(d).resolve() for d in (*config.rules_dirs, *config.catalog_dirs)}
    for raw in paths:
        if raw == "-":
            found.append("-")
            continue
        path = Path(raw)
        if path.is_file():
            found.append(raw)
            continue
        if not path.is_dir():
            raise UsageError(f"{raw}: no such file or directory")
        # A directory named on the command line is checked even when `exclude` matches it (as a
        # file named there is, and as in ruff): `kvlint check examples/broken` shows findings.
        # Patterns that do not match the named directory still prune what lies below it.
        exclude = tuple(p for p in config.exclude if not excluded(path, (p,), config.root))
        for directory, subdirs, files in os.walk(path):
            subdirs[:] = sorted(
                d
                for d in subdirs
                if d not in SKIP_DIRS
                and not d.startswith(".")
                and not excluded(Path(directory) / d, exclude, config.root)
                and (Path(directory) / d).resolve() not in data_dirs
            )
            for name in sorted(files):
                candidate = Path(directory) / name
                if not name.endswith(MANIFEST_SUFFIXES) and not (config.native_formats and maybe_native(name)):
                    continue
                if excluded(candidate, exclude, config.root):
                    continue
                head = head_of(str(candidate), MARKER_WINDOW)
                if head is not None and MANIFEST_MARKER.search(head) is None and (
                        native_format(str(candidate), head, config) is None):
                    continue  # neither a manifest nor a native deployment file
                found.append(str(candidate))
    # de-duplicate while keeping order
    seen: Set[str] = set()
    return [f for f in found if not (f in seen or seen.add(f))]


def maybe_native(name: str) -> bool:
    """A name a native format other than YAML can have (scripts, Dockerfiles)."""
    lowered = name.lower()
    return (lowered.endswith((".sh", ".bash", ".dockerfile")) or lowered in ("dockerfile", "containerfile")
            or lowered.startswith("dockerfile."))


def display_path(path: str, root: Path) -> str:
    if path == "<stdin>":
        return path
    try:
        return Path(path).resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return Path(path).as_posix()
