"""Which files a run reads: discovery, exclusion, display paths.

A file named on the command line is always checked; a directory walk keeps only files that
declare a kvlint apiVersion, so model `config.json` files, CI workflows and other YAML beside the
manifests are left alone.
"""

from __future__ import annotations

import fnmatch
import os
import stat
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Set, Tuple

from kvlint.config import Config
from kvlint.errors import UsageError
from kvlint.load import text_native_format
from kvlint.inputs import MAX_FILE_BYTES, InputError, read_bounded, special_kind
from kvlint.pipeline.native import MANIFEST_MARKER, MARKER_WINDOW, native_format

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
SKIP_DIRS = frozenset({".git", ".hg", ".svn", ".venv", "venv", "node_modules", "__pycache__", ".tox", ".nox"})


class Unreadable(str):
    """A path discovery met but cannot read (an unreadable directory or file, a dangling symlink,
    a file that vanished, a FIFO or device): `read_input` raises with its reason, and the check
    loop reports it as a KV006 finding on that path while the run goes on."""

    reason: str

    def __new__(cls, path: str, reason: str) -> Unreadable:
        made = super().__new__(cls, path)
        made.reason = reason
        return made


class LinkOut(Unreadable):
    """A file met in a directory walk that is a symbolic link to a file outside the walked
    directory and the project: not read (its content is never printed), and reported as a KV208
    info on the link, as a fact kvlint looked for on its own (docs/security.md)."""


def _inside(target: str, roots: Sequence[str]) -> bool:
    return any(target == root or target.startswith(root.rstrip(os.sep) + os.sep) for root in roots)


def _stat_problem(path: Path) -> str:
    """Why a path met in a walk cannot be read, or "" when it is a regular file."""
    try:
        info = os.stat(path)
    except OSError as exc:
        if os.path.islink(path):
            return f"dangling symbolic link ({exc.strerror or exc})"
        return exc.strerror or str(exc)
    kind = special_kind(info.st_mode)
    return f"{kind}, not a regular file; kvlint reads only regular files" if kind else ""


def excluded(path: Path, patterns: Sequence[str], root: Path) -> bool:
    if not patterns:
        return False
    try:
        relative = path.resolve().relative_to(root.resolve()).as_posix()
    except (ValueError, RuntimeError, OSError):  # outside; or a link loop (3.11)
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


def discover_files(paths: Sequence[str], config: Config,
                   configs: Optional[Callable[[Path], Config]] = None) -> List[str]:
    """Files to check, in a stable order; `-` stands for stdin.

    `configs` gives a directory's configuration (kvlint.config.ConfigResolver.for_directory):
    in a walk, whether an entry is excluded, which data directories are skipped and which native
    formats are read follow the configuration of the directory that holds the entry, as in ruff.
    Without it, `config` serves every directory."""
    found: List[str] = []
    for_directory = configs or (lambda _directory: config)
    # The configured rules-dir and catalog-dir hold rule and catalog files, not manifests (a rule
    # file's examples embed manifests): a walk does not enter them.
    base_data_dirs = {Path(os.path.realpath(d)) for d in (*config.rules_dirs, *config.catalog_dirs)}
    for raw in paths:
        if raw == "-":
            found.append("-")
            continue
        path = Path(raw)
        try:
            mode = os.stat(path).st_mode
        except OSError as exc:
            if os.path.islink(path):
                found.append(Unreadable(raw, f"dangling symbolic link ({exc.strerror or exc})"))
                continue
            reason = "no such file or directory" if not os.path.lexists(path) else (exc.strerror or str(exc))
            raise UsageError(f"{raw}: {reason}") from None
        if not stat.S_ISDIR(mode):
            # A file named on the command line is always read; a FIFO or device is a KV006.
            found.append(raw)
            continue
        # A directory named on the command line is checked even when `exclude` matches it (as a
        # file named there is, and as in ruff): `kvlint check examples/broken` shows findings.
        # Patterns that do not match the named directory still prune what lies below it.
        walk_settings: Dict[Config, Tuple[Tuple[str, ...], Set[Path]]] = {}

        def settings(directory: str) -> Tuple[Config, Tuple[str, ...], Set[Path]]:
            here = for_directory(Path(directory))
            if here not in walk_settings:
                exclude = tuple(p for p in here.exclude if not excluded(path, (p,), here.root))
                data = {Path(os.path.realpath(d)) for d in (*here.rules_dirs, *here.catalog_dirs)}
                walk_settings[here] = (exclude, data | base_data_dirs)
            return (here, *walk_settings[here])

        # Imported on use: only a directory walk reads .gitignore (and may start git, so
        # subprocess is loaded with it); a run on named files never does.
        from kvlint.pipeline.gitignore import gitignore_matcher

        ignored = gitignore_matcher(path, config.path.parent if config.path else None) if (
            config.respect_gitignore) else None
        walk_errors: List[OSError] = []
        roots = [os.path.realpath(path), os.path.realpath(config.root)]
        for directory, subdirs, files in os.walk(path, onerror=walk_errors.append):
            while walk_errors:  # a directory that cannot be listed: a finding on it
                error = walk_errors.pop(0)
                found.append(Unreadable(str(error.filename or directory), error.strerror or str(error)))
            here, exclude, data_dirs = settings(directory)
            subdirs[:] = sorted(
                d
                for d in subdirs
                if d not in SKIP_DIRS
                and not d.startswith(".")
                and not excluded(Path(directory) / d, exclude, here.root)
                and Path(os.path.realpath(Path(directory) / d)) not in data_dirs
                and not (ignored is not None and ignored(Path(directory) / d, True))
            )
            for name in sorted(files):
                candidate = Path(directory) / name
                if not name.endswith(MANIFEST_SUFFIXES) and not (here.native_formats and maybe_native(name)):
                    continue
                if excluded(candidate, exclude, here.root):
                    continue
                if ignored is not None and ignored(candidate, False):
                    continue
                if os.path.islink(candidate) and not _inside(os.path.realpath(candidate), roots):
                    found.append(LinkOut(str(candidate), "a symbolic link to a file outside the directory "
                                         "kvlint walked and the project; kvlint does not follow it (name the "
                                         "file itself to check it)"))
                    continue
                problem = _stat_problem(candidate)
                if problem:
                    found.append(Unreadable(str(candidate), problem))
                    continue
                try:  # non-blocking and bounded, should the file have been swapped for a FIFO
                    # the whole file within the input limit: a native file's telling lines
                    # (compose's `services:`) may come late
                    head: Optional[bytes] = read_bounded(candidate, MAX_FILE_BYTES)
                except InputError:
                    head = None  # the read in the check loop reports why
                if head is not None and MANIFEST_MARKER.search(head[:MARKER_WINDOW]) is None and (
                        native_format(str(candidate), head, here) is None):
                    continue  # neither a manifest nor a native deployment file
                found.append(str(candidate))
        while walk_errors:
            error = walk_errors.pop(0)
            found.append(Unreadable(str(error.filename or path), error.strerror or str(error)))
        if ignored is not None:
            ignored.close()
    # de-duplicate while keeping order
    seen: Set[str] = set()
    return [f for f in found if not (f in seen or seen.add(f))]


def maybe_native(name: str) -> bool:
    """A name a native format other than YAML can have (scripts, Dockerfiles)."""
    return text_native_format(name) is not None


def display_path(path: str, root: Path) -> str:
    if path == "<stdin>":
        return path
    try:
        if os.path.islink(path) and not os.path.exists(path):  # dangling: name the link, not its target
            return (Path(path).parent.resolve() / Path(path).name).relative_to(root.resolve()).as_posix()
        return Path(path).resolve().relative_to(root.resolve()).as_posix()
    except (ValueError, RuntimeError, OSError):  # outside; or a link loop (3.11)
        return Path(path).as_posix()
