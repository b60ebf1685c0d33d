"""Reading input files safely, and remembering which files a run read.

Every read of an input (manifest, configuration, ablation base, model config.json) goes through
`read_bounded`: the file is opened non-blocking and read only when fstat says it is a regular
file, and never more than a limit, so a FIFO, /dev/zero or a huge file cannot hang the run or
exhaust memory. Each file read is recorded by device and inode, and each rules-dir and catalog-dir
as a whole; `kvlint.cli.options.write_output` refuses to write onto any of them (hard links and
symbolic links included).
"""

from __future__ import annotations

import os
import stat
from typing import Dict, List, Optional, Tuple, Union

from kvlint.errors import UsageError

# kvlint.load's limit for one manifest; every input shares it.
MAX_FILE_BYTES = 4 * 1024 * 1024

# Every file a run reads (manifests, configuration, ablation bases, model configs), by device
# and inode: kvlint.cli.options.write_output refuses to write onto any of them.
_READ_FILES: Dict[Tuple[int, int], str] = {}
# rules-dir and catalog-dir, by real path: no output may land in them.
_DATA_DIRECTORIES: Dict[str, str] = {}
MAX_TREE_ENTRIES = 10_000  # entries of a data directory looked at for a hard link to an output


class InputError(UsageError):
    """A file that cannot be read as an input: missing, unreadable, not a regular file."""


_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a directory"),
)


def special_kind(mode: int) -> Optional[str]:
    """What a file that is not a regular file is ("a FIFO", "a character device", ...), or None."""
    if stat.S_ISREG(mode):
        return None
    for test, kind in _KINDS:
        if test(mode):
            return kind
    return "not a regular file"


def files_read() -> Dict[Tuple[int, int], str]:
    """(st_dev, st_ino) -> path of every file read so far in this process."""
    return dict(_READ_FILES)


def read_bounded(path: Union[str, os.PathLike[str]], limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of a regular file, at most limit + 1 of them (so a caller sees it is too large).

    Never blocks and never reads without end: the file is opened non-blocking and refused unless
    fstat says it is a regular file (a FIFO, a device such as /dev/zero, a socket or a directory
    raises InputError). Any OSError becomes an InputError with the system's reason."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise InputError(exc.strerror or str(exc), file=path) from None
    try:
        info = os.fstat(fd)
        kind = special_kind(info.st_mode)
        if kind is not None:
            raise InputError(f"{kind}, not a regular file; kvlint reads only regular files", file=path)
        _READ_FILES[(info.st_dev, info.st_ino)] = str(path)
        chunks: List[bytes] = []
        remaining = limit + 1
        while remaining > 0:
            chunk = os.read(fd, min(remaining, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        return b"".join(chunks)
    except OSError as exc:
        raise InputError(exc.strerror or str(exc), file=path) from None
    finally:
        os.close(fd)


def read_stdin(limit: int = MAX_FILE_BYTES) -> bytes:
    """At most limit + 1 bytes of standard input. When stdin is a file (`kvlint convert - -o
    d.yaml < d.yaml`), that file is recorded as read like any other input, so that
    write_output refuses to replace it: the run would otherwise overwrite its own input."""
    import sys

    try:
        info = os.fstat(0)
    except OSError:
        info = None
    if info is not None and stat.S_ISREG(info.st_mode):
        _READ_FILES[(info.st_dev, info.st_ino)] = "<stdin>"
    return sys.stdin.buffer.read(limit + 1)


def read_capped(path: Union[str, os.PathLike[str]], limit: int = MAX_FILE_BYTES) -> bytes:
    """read_bounded, and a file over the limit is an InputError ('larger than the N-byte limit')
    instead of a truncated read: for inputs that are parsed whole (configuration, rule files,
    model config.json)."""
    raw = read_bounded(path, limit)
    if len(raw) > limit:
        raise InputError(f"larger than the {limit:,}-byte limit", file=path)
    return raw


def note_data_directory(path: Union[str, os.PathLike[str]]) -> None:
    """A directory whose files the run may read at any time (a rules-dir or catalog-dir): parsed
    data may come from kvlint's cache without a read, so the whole directory counts as read."""
    _DATA_DIRECTORIES[os.path.realpath(path)] = str(path)


def data_directories() -> Dict[str, str]:
    """Real path -> path as configured, of every noted data directory."""
    return dict(_DATA_DIRECTORIES)


def file_in_tree(directory: str, key: Tuple[int, int], limit: int = MAX_TREE_ENTRIES) -> Optional[str]:
    """The path of a file under directory that is (st_dev, st_ino) key (symbolic links followed),
    looking at no more than `limit` entries; None when there is none."""
    seen = 0
    for folder, subfolders, names in os.walk(directory):
        for name in names + subfolders:
            seen += 1
            if seen > limit:
                return None
            path = os.path.join(folder, name)
            try:
                info = os.stat(path)
            except OSError:
                continue
            if (info.st_dev, info.st_ino) == key:
                return path
    return None


def forget_reads() -> None:
    """Start a new run's record (the CLI calls it once per command)."""
    _READ_FILES.clear()
    _DATA_DIRECTORIES.clear()
