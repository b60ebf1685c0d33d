"""Compiled dataclass methods, kept between runs the way Python keeps compiled modules.

`@dataclass` writes the source of each class's `__init__`, `__repr__`, `__eq__`, `__hash__` (and,
frozen, `__setattr__`/`__delattr__`) and compiles it when the class is created, on every run:
the check's ~60 dataclasses cost ~50 ms of compiling, a third of `kvlint check`'s start-up on
one manifest (measured: benchmarks/startup.py). While `cached_dataclass_methods()` is active, the
`dataclasses` module compiles kvlint's classes through a table from source text to code object,
read at the start and written back (only when it grew) at the end. A source is compiled exactly as
`dataclasses` would (`exec` of the text, no inherited compiler flags), so the classes are the same
with the table or without; only the compiling is skipped.

The table lives where the interpreter keeps kvlint's bytecode and follows its rules: kvlint's
`__pycache__` (or the mirror under PYTHONPYCACHEPREFIX), named after the interpreter's cache
tag, checked against the exact Python version, never written under PYTHONDONTWRITEBYTECODE.
Whoever can write there can already change the `.pyc` files that Python runs, so the table adds
no new way in. KVLINT_NO_CACHE=1 bypasses it, as it bypasses the parsed-data cache. A table that
cannot be read or written is skipped silently.
"""

from __future__ import annotations

import builtins
import dataclasses
import marshal
import os
import sys
import zlib
from contextlib import contextmanager
from types import CodeType
from typing import Dict, Iterator, Optional

from kvlint.cachefiles import private_directory, read_private, write_private

# A kvlint upgrade adds the sources of its changed classes; past this many entries the table is
# rewritten with only the entries of the run that writes it.
MAX_ENTRIES = 4096
_HEADER = f"kvlint dataclass methods 2\0{sys.version}\0{sys.implementation.cache_tag}"


def table_path() -> Optional[str]:
    """Where the table lives: beside kvlint's compiled modules, or None (no cache tag, or
    KVLINT_NO_CACHE set)."""
    tag = sys.implementation.cache_tag
    if tag is None or os.environ.get("KVLINT_NO_CACHE"):
        return None
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # .../kvlint
    name = f"dataclass-methods.{tag}.marshal"
    if sys.pycache_prefix:  # as importlib.util.cache_from_source places bytecode
        return os.path.join(sys.pycache_prefix, package.lstrip(os.sep), name)
    return os.path.join(package, "__pycache__", name)


# The table's directory may be root's (a system-wide install), as Python's own bytecode is.
_OWNERS = (0,)
MAX_TABLE_BYTES = 16 * 1024 * 1024  # kvlint's ~350 methods take ~1 MiB


def _check(source: str) -> int:
    return zlib.crc32(source.encode("utf-8", "surrogatepass"))


def _read(path: str) -> Dict[str, CodeType]:
    """The table, or {} when it is absent, a link, not a regular file of the user's (or root's),
    too large, or damaged (kvlint.cachefiles.read_private). Each entry stores the checksum of its
    own source with its code: an entry whose code belongs to another source (entries swapped)
    is dropped and compiled afresh."""
    if not private_directory(os.path.dirname(path), create=False, owners=_OWNERS):
        return {}
    raw = read_private(path, MAX_TABLE_BYTES, owners=_OWNERS)
    if raw is None:
        return {}
    try:
        stored = marshal.loads(raw)
    except Exception:  # noqa: BLE001 - EOFError, ValueError, MemoryError, ...: no table
        return {}
    if not (type(stored) is tuple and len(stored) == 2 and stored[0] == _HEADER and type(stored[1]) is dict):
        return {}
    table: Dict[str, CodeType] = {}
    for source, entry in list(stored[1].items())[:MAX_ENTRIES]:
        if (type(source) is str and type(entry) is tuple and len(entry) == 2 and type(entry[1]) is CodeType
                and entry[0] == _check(source)):
            table[source] = entry[1]
    return table


def _write(path: str, table: Dict[str, CodeType]) -> None:
    """Atomically and without following a link (kvlint.cachefiles.write_private), into a
    directory only the user (or root) may write; any failure skips the table."""
    if sys.dont_write_bytecode:
        return
    directory = os.path.dirname(path)
    if not private_directory(directory, create=True, owners=_OWNERS):
        return
    try:
        raw = marshal.dumps((_HEADER, {source: (_check(source), code) for source, code in table.items()}))
    except (ValueError, TypeError):
        return
    write_private(path, raw)


def _is_kvlint(namespace: object) -> bool:
    name = namespace.get("__name__") if isinstance(namespace, dict) else None
    return isinstance(name, str) and (name == "kvlint" or name.startswith("kvlint."))


@contextmanager
def cached_dataclass_methods() -> Iterator[None]:
    """Within this block, dataclasses compile their methods through the table."""
    path = table_path()
    if path is None or "exec" in vars(dataclasses):  # bypassed, or already active
        yield
        return
    table = _read(path)
    used: Dict[str, CodeType] = {}
    added = []

    def exec_(source, *args, **kwargs):
        # Only kvlint's own classes (dataclasses passes the class's module globals): the table
        # stays the size of kvlint's ~350 methods whatever else a run imports (torch, for smoke).
        if type(source) is str and args and _is_kvlint(args[0]):
            code = table.get(source)
            if type(code) is not CodeType:
                # dataclasses runs exec(text) from its own module, which has no __future__ imports
                code = compile(source, "<string>", "exec", dont_inherit=True)
                added.append(source)
            used[source] = code
            source = code
        return builtins.exec(source, *args, **kwargs)

    dataclasses.exec = exec_  # type: ignore[attr-defined]  # found before the builtin
    try:
        yield
    finally:
        del dataclasses.exec  # type: ignore[attr-defined]
        if added:
            merged = {**table, **used}
            _write(path, merged if len(merged) <= MAX_ENTRIES else used)
