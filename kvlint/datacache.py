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


def cache_dir() -> Optional[Path]:
    if os.environ.get("KVLINT_NO_CACHE"):
        return None
    base = os.environ.get("KVLINT_CACHE_DIR") or os.environ.get("XDG_CACHE_HOME")
    root = Path(base) if base else Path.home() / ".cache"
    return root / "kvlint" if not os.environ.get("KVLINT_CACHE_DIR") else root


def load_cached(path: Path, parse: Callable[[str], Any]) -> Any:
    """parse(text of path), memoised on disk. `parse` errors propagate and are never cached."""
    directory = cache_dir()
    key_file: Optional[Path] = None
    if directory is not None:
        try:
            stat = path.stat()
            key_file = directory / _key_name(f"{path.resolve()}\0{stat.st_size}\0{stat.st_mtime_ns}")
            with open(key_file, "rb") as handle:
                return marshal.loads(handle.read())  # one read: load(handle) reads in small pieces
        except (OSError, EOFError, ValueError, TypeError):
            pass
    data = parse(path.read_text(encoding="utf-8"))
    _store(key_file, data)
    return data


def _store(key_file: Optional[Path], data: Any) -> None:
    """Write atomically (a reader never sees half a file); any failure just skips the cache."""
    if key_file is None:
        return
    try:
        key_file.parent.mkdir(parents=True, exist_ok=True)
        temporary = key_file.with_suffix(f".{os.getpid()}.tmp")
        with open(temporary, "wb") as handle:
            marshal.dump(data, handle)
        os.replace(temporary, key_file)
    except (OSError, ValueError):
        pass  # unmarshallable data or a read-only home: parse next time too


def _key_name(key: str) -> str:
    # marshal's format belongs to the Python version, so the key does too.
    text = f"{__version__}\0{sys.version_info[:2]}\0{key}".encode()
    return f"{zlib.crc32(text):08x}{zlib.adler32(text):08x}.marshal"


def load_cached_group(paths: Sequence[Path], parse: Callable[[str], Any]) -> List[Any]:
    """parse() of each path, memoised as one cache entry for the whole set of files."""
    directory = cache_dir()
    key_file: Optional[Path] = None
    if directory is not None:
        try:
            stamps = []
            for path in paths:
                stat = path.stat()
                stamps.append(f"{path.resolve()}\0{stat.st_size}\0{stat.st_mtime_ns}")
            key_file = directory / _key_name("\n".join(stamps))
            with open(key_file, "rb") as handle:
                cached = marshal.loads(handle.read())
            if isinstance(cached, list) and len(cached) == len(paths):
                return cached
        except (OSError, EOFError, ValueError, TypeError):
            pass
    data = [parse(path.read_text(encoding="utf-8")) for path in paths]
    _store(key_file, data)
    return data
