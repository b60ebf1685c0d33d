"""Files in kvlint's caches (the parsed-data cache and the dataclass code table), kept private.

A cache can only ever cost speed, so whatever is wrong with one makes it absent, never an error:

- a cache directory is used only when it is a directory owned by the user (or, for the code
  table beside kvlint's bytecode, by root, whose `.pyc` files Python runs anyway) that no one
  else may write (no group or world write bit); kvlint creates its own with mode 0700;
- an entry is opened with O_NOFOLLOW and O_NONBLOCK (a symbolic link to /dev/zero or a planted
  FIFO is never read) and read only when fstat says it is a regular file owned by the user and no
  larger than the caller's bound;
- an entry is written to a fresh temporary file in the same directory (tempfile.mkstemp:
  O_CREAT|O_EXCL|O_NOFOLLOW, mode 0600), then moved over the entry with os.replace, which replaces
  a link rather than following it: a link planted under the temporary or the entry's name can
  never make kvlint write to another file.
"""

from __future__ import annotations

import os
import stat
from typing import Collection, Optional

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_READ_FLAGS = (os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
               | getattr(os, "O_BINARY", 0))


def _user() -> Optional[int]:
    return os.geteuid() if hasattr(os, "geteuid") else None


def private_directory(path: str, create: bool = True, owners: Collection[int] = ()) -> bool:
    """Whether path is a cache directory kvlint may use (created 0700 when absent and create is
    set): a directory, owned by the user (or one of `owners`), not writable by group or others."""
    try:
        if create and not os.path.isdir(path):
            os.makedirs(path, mode=0o700, exist_ok=True)
        info = os.stat(path)
    except (OSError, ValueError):
        return False
    if not stat.S_ISDIR(info.st_mode):
        return False
    user = _user()
    if user is None:  # no owners to compare (Windows): the file checks below still apply
        return True
    return (info.st_uid == user or info.st_uid in owners) and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def read_private(path: str, limit: int, owners: Collection[int] = ()) -> Optional[bytes]:
    """The bytes of a cache entry, or None: not there, a link, not a regular file, owned by
    someone else, or larger than limit."""
    try:
        fd = os.open(path, _READ_FLAGS)
    except (OSError, ValueError):
        return None
    try:
        info = os.fstat(fd)
        user = _user()
        if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
            return None
        if user is not None and info.st_uid != user and info.st_uid not in owners:
            return None
        chunks = []
        remaining = limit + 1
        while remaining > 0:
            chunk = os.read(fd, min(remaining, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        data = b"".join(chunks)
        return data if len(data) <= limit else None
    except OSError:
        return None
    finally:
        os.close(fd)


def write_private(path: str, data: bytes) -> bool:
    """Replace path with data atomically, through a fresh temporary file (never following a
    link); False, and nothing left behind, when that fails."""
    import tempfile  # only when a cache is written

    directory, name = os.path.split(path)
    try:
        fd, temporary = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=directory or ".")
    except (OSError, ValueError):
        return False
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(temporary, path)
        return True
    except (OSError, ValueError):
        try:
            os.unlink(temporary)
        except OSError:
            pass
        return False
