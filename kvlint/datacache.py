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
import sys
import zlib
from pathlib import Path
from typing import Any, Callable, List, Optional, Sequence

from kvlint import __version__
from kvlint.cachefiles import private_directory, read_private, write_private

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
    directory = root / "kvlint" if not os.environ.get("KVLINT_CACHE_DIR") else root
    # Created 0700; one owned by someone else or writable by others is not used: whoever can
    # write there could plant entries (a rule turned from error into info).
    return directory if private_directory(str(directory)) else None


# An entry holds plain data as YAML gives it; anything else (a code object, bytes, a set), more
# nodes or deeper nesting than this means a damaged or forged entry, which is a miss.
_PLAIN = (str, int, float, bool, type(None))
MAX_ENTRY_NODES = 4_000_000
MAX_ENTRY_DEPTH = 200


def is_plain(data: Any) -> bool:
    """Whether data is dicts, lists and scalars only, within the node and depth bounds; walked
    level by level without recursion, so a deeply nested entry cannot overflow the stack."""
    level = [data]
    seen = 0
    for _depth in range(MAX_ENTRY_DEPTH + 1):
        seen += len(level)
        if seen > MAX_ENTRY_NODES:
            return False
        below: List[Any] = []
        for value in level:
            kind = type(value)
            if kind is dict:
                for key in value:
                    if type(key) not in _PLAIN:
                        return False
                below.extend(value.values())
            elif kind is list:
                below.extend(value)
            elif kind not in _PLAIN:
                return False
        if not below:
            return True
        level = below
    return False  # nested deeper than MAX_ENTRY_DEPTH


def _read_entry(key_file: Path, key: str) -> Any:
    """The data stored under key, or _MISSING. The entry is read through
    kvlint.cachefiles.read_private (no link followed, no FIFO or device opened, a regular file
    of the user's own, bounded), in one read, and believed only when it names its own key and
    holds plain data: a damaged, forged or foreign entry is a miss, and the caller rewrites it.
    Whatever marshal makes of damaged bytes (a list claiming 2^31 items is a MemoryError) is a
    miss too."""
    raw = read_private(str(key_file), _MAX_ENTRY_BYTES)
    if raw is None:
        return _MISSING
    try:
        stored = marshal.loads(raw)
    except Exception:  # noqa: BLE001 - EOFError, ValueError, TypeError, MemoryError, ...: a miss
        return _MISSING
    if type(stored) is tuple and len(stored) == 2 and stored[0] == key and is_plain(stored[1]):
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
    """Write atomically and without following a link (kvlint.cachefiles.write_private); any
    failure just skips the cache. The entry holds its own key, so that a damaged or foreign file
    is never taken for it; data that is not plain is not stored (it could not be read back)."""
    if key_file is None or not is_plain(data):
        return
    try:
        raw = marshal.dumps((key, data))
    except (ValueError, TypeError):
        return
    if len(raw) <= _MAX_ENTRY_BYTES:
        write_private(str(key_file), raw)


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
