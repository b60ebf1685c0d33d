"""Parsed-YAML cache for kvlint's own data files (rules, catalog).

Every `kvlint check` reads some sixty YAML files of rules and catalog; parsing them costs more
than linting a manifest. The parsed data is plain (dicts, lists, scalars), so it is stored with
`marshal` in the user's cache directory, keyed by path, size, modification time and kvlint's
version: a changed file is simply parsed again. Only kvlint's data files go through here, never
the manifests being linted, and a cache that cannot be read or written is silently skipped.
Set KVLINT_NO_CACHE=1 to bypass it.
"""

from __future__ import annotations

import marshal
import os
import stat
import sys
import zlib
from pathlib import Path
from typing import Any, Callable, List, Optional, Sequence

from kvlint import __version__

_MISSING = object()
_MAX_ENTRY_BYTES = 64 * 1024 * 1024  # every parsed rule and catalog file together is far smaller


def cache_dir() -> Optional[Path]:
    if os.environ.get("KVLINT_NO_CACHE"):
        return None
    base = os.environ.get("KVLINT_CACHE_DIR") or os.environ.get("XDG_CACHE_HOME")
    try:
        root = Path(base) if base else Path.home() / ".cache"
    except (RuntimeError, KeyError, OSError):  # no HOME and no passwd entry: run without a cache
        return None
    return root / "kvlint" if not os.environ.get("KVLINT_CACHE_DIR") else root


def _read_entry(key_file: Path, key: str) -> Any:
    """The data stored under key, or _MISSING. Only a regular file is read (a FIFO or device
    planted in the cache directory would block open() or read() forever), in one read, and only
    an entry that names its own key is believed: a damaged or foreign entry is a miss, and the
    caller rewrites it."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(key_file, flags)
    except OSError:
        return _MISSING
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > _MAX_ENTRY_BYTES:
            return _MISSING
        with os.fdopen(fd, "rb", closefd=False) as handle:
            stored = marshal.loads(handle.read())  # one read: load(handle) reads in small pieces
    except (OSError, EOFError, ValueError, TypeError):
        return _MISSING
    finally:
        os.close(fd)
    if isinstance(stored, tuple) and len(stored) == 2 and stored[0] == key:
        return stored[1]
    return _MISSING


def load_cached(path: Path, parse: Callable[[str], Any]) -> Any:
    """parse(text of path), memoised on disk. `parse` errors propagate and are never cached."""
    directory = cache_dir()
    key_file: Optional[Path] = None
    key = ""
    if directory is not None:
        try:
            key = _key_text(_stamp(path))
            key_file = directory / _key_name(key)
            cached = _read_entry(key_file, key)
            if cached is not _MISSING:
                return cached
        except OSError:
            pass
    data = parse(path.read_text(encoding="utf-8"))
    _store(key_file, key, data)
    return data


def _store(key_file: Optional[Path], key: str, data: Any) -> None:
    """Write atomically (a reader never sees half a file); any failure just skips the cache.
    The entry holds its own key, so that a damaged or foreign file is never taken for it."""
    if key_file is None:
        return
    try:
        key_file.parent.mkdir(parents=True, exist_ok=True)
        temporary = key_file.with_suffix(f".{os.getpid()}.tmp")
        with open(temporary, "wb") as handle:
            marshal.dump((key, data), handle)
        os.replace(temporary, key_file)  # also replaces a FIFO or a damaged entry
    except (OSError, ValueError):
        pass  # unmarshallable data or a read-only home: parse next time too


def _stamp(path: Path) -> str:
    """Which file (absolute path, device and inode: a file replaced under the same name has a new
    inode) in which version (size, modification time). Cheaper than Path.resolve(), which walks
    every component of each of the ~70 data files a run reads."""
    info = os.stat(path)
    return f"{os.path.abspath(path)}\0{info.st_dev}\0{info.st_ino}\0{info.st_size}\0{info.st_mtime_ns}"


def _key_text(key: str) -> str:
    # marshal's format belongs to the Python version, so the key does too.
    return f"{__version__}\0{sys.version_info[:2]}\0{key}"


def _key_name(key_text: str) -> str:
    text = key_text.encode("utf-8", "surrogateescape")
    return f"{zlib.crc32(text):08x}{zlib.adler32(text):08x}.marshal"


def load_cached_group(paths: Sequence[Path], parse: Callable[[str], Any]) -> List[Any]:
    """parse() of each path, memoised as one cache entry for the whole set of files."""
    directory = cache_dir()
    key_file: Optional[Path] = None
    key = ""
    if directory is not None:
        try:
            key = _key_text("\n".join(_stamp(path) for path in paths))
            key_file = directory / _key_name(key)
            cached = _read_entry(key_file, key)
            if isinstance(cached, list) and len(cached) == len(paths):
                return cached
        except OSError:
            pass
    data = [parse(path.read_text(encoding="utf-8")) for path in paths]
    _store(key_file, key, data)
    return data
