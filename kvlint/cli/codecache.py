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
from contextlib import contextmanager
from types import CodeType
from typing import Dict, Iterator, Optional

# A kvlint upgrade adds the sources of its changed classes; past this many entries the table is
# rewritten with only the entries of the run that writes it.
MAX_ENTRIES = 4096
_HEADER = f"kvlint dataclass methods\0{sys.version}\0{sys.implementation.cache_tag}"


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


def _read(path: str) -> Dict[str, CodeType]:
    try:
        with open(path, "rb") as handle:
            stored = marshal.loads(handle.read())
    except (OSError, EOFError, ValueError, TypeError):
        return {}
    if isinstance(stored, tuple) and len(stored) == 2 and stored[0] == _HEADER and isinstance(stored[1], dict):
        return stored[1]
    return {}


def _write(path: str, table: Dict[str, CodeType]) -> None:
    if sys.dont_write_bytecode:
        return
    temporary = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(temporary, "wb") as handle:
            handle.write(marshal.dumps((_HEADER, table)))
        os.replace(temporary, path)
    except (OSError, ValueError):
        try:
            os.unlink(temporary)
        except OSError:
            pass


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
