"""`dataclass`: the standard library's, with `__repr__`, `__eq__` and `__hash__` shared.

`dataclasses.dataclass` writes the source of every method it adds and compiles it when the class
is created, on every run: a `kvlint check` builds some sixty classes, and compiling their ~350
methods was a third of its start-up on one manifest. `__init__` (and a frozen class's
`__setattr__`/`__delattr__`) must be generated, since they depend on the fields' defaults and
the class's own name; `__repr__`, `__eq__` and `__hash__` need not be: here they are written once,
as ordinary functions compiled with this module, and read each class's fields from a key kept on
the class. They behave as the generated ones do (Python 3.9 to 3.13):

- `__repr__`: `QualName(field=value!r, ...)` over the fields with `repr=True`, `...` on recursion;
- `__eq__`: the tuples of the fields with `compare=True`, only against an object of the very same
  class (else NotImplemented);
- `__hash__`: a frozen class hashes the tuple of its fields with `hash=True`, or `compare=True`
  where `hash` is unset; a mutable one is unhashable;

and, as with `@dataclass`, a method the class body defines itself is kept. The class is a real
dataclass (`fields`, `replace`, `asdict` work as before); `tests/test_records.py` compares both
ways method by method.
"""

from __future__ import annotations

import dataclasses
from operator import attrgetter
from threading import get_ident
from typing import Any, Callable, Dict, FrozenSet, Optional, Set, Tuple

__all__ = ["dataclass", "field", "fields", "replace"]

field = dataclasses.field
fields = dataclasses.fields

_MISSING = object()
_KEYS = "__record_keys__"  # (repr names, compare key, hash key) of the class


def _tuple_of(names: Tuple[str, ...]) -> Callable[[Any], tuple]:
    """A function from an instance to the tuple of the named attributes (attrgetter runs in C)."""
    if not names:
        return lambda _instance: ()
    if len(names) == 1:
        get = attrgetter(names[0])
        return lambda instance: (get(instance),)
    return attrgetter(*names)


_repr_running: Set[Tuple[int, int]] = set()


def _repr(self: Any) -> str:
    key = (id(self), get_ident())
    if key in _repr_running:  # as dataclasses' own recursion guard
        return "..."
    _repr_running.add(key)
    try:
        names = getattr(type(self), _KEYS)[0]
        inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in names)
        return f"{type(self).__qualname__}({inner})"
    finally:
        _repr_running.discard(key)


def _eq(self: Any, other: Any) -> Any:
    if other.__class__ is self.__class__:
        key = getattr(self.__class__, _KEYS)[1]
        return key(self) == key(other)
    return NotImplemented


def _hash(self: Any) -> int:
    return hash(getattr(self.__class__, _KEYS)[2](self))


def _process(cls: type, frozen: bool) -> type:
    own = cls.__dict__
    class_hash = own.get("__hash__", _MISSING)
    explicit_hash = not (class_hash is _MISSING or (class_hash is None and "__eq__" in own))
    add_repr, add_eq = "__repr__" not in own, "__eq__" not in own
    cls = dataclasses.dataclass(cls, frozen=frozen, repr=False, eq=False)
    names = dataclasses.fields(cls)
    setattr(cls, _KEYS, (
        tuple(f.name for f in names if f.repr),
        _tuple_of(tuple(f.name for f in names if f.compare)),
        _tuple_of(tuple(f.name for f in names if (f.compare if f.hash is None else f.hash))),
    ))
    if add_repr:
        cls.__repr__ = _repr  # type: ignore[assignment]
    if add_eq:
        cls.__eq__ = _eq  # type: ignore[assignment]
    if not explicit_hash:  # dataclasses' table for eq=True, unsafe_hash=False
        cls.__hash__ = _hash if frozen else None  # type: ignore[assignment]
    return cls


# replace()'s plan per class: the names `__init__` takes, and those it does not (None: a class
# with pseudo-fields, ClassVar or InitVar, which dataclasses.replace handles itself).
_REPLACE_PLANS: Dict[type, Optional[Tuple[Tuple[str, ...], FrozenSet[str]]]] = {}


def _replace_plan(cls: type) -> Optional[Tuple[Tuple[str, ...], FrozenSet[str]]]:
    plan = _REPLACE_PLANS.get(cls, _MISSING)
    if plan is _MISSING:
        declared = getattr(cls, "__dataclass_fields__", None)
        plan = None
        if isinstance(declared, dict):
            own = dataclasses.fields(cls)
            if len(own) == len(declared):
                plan = (tuple(f.name for f in own if f.init), frozenset(f.name for f in own if not f.init))
        _REPLACE_PLANS[cls] = plan
    return plan  # type: ignore[return-value]


def replace(obj: Any, /, **changes: Any) -> Any:
    """dataclasses.replace: a new object of obj's class with `changes` and obj's other `__init__`
    fields. The list of fields is read once per class, not on every call (the pipeline replaces
    tens of thousands of records in one `kvlint plan`); a class with ClassVar or InitVar
    pseudo-fields, a change to a field `__init__` does not take, or an object that is not a
    dataclass instance goes through dataclasses.replace, which says what is wrong."""
    cls = obj.__class__
    plan = _replace_plan(cls) if not isinstance(obj, type) else None
    if plan is None or (plan[1] and not plan[1].isdisjoint(changes)):
        return dataclasses.replace(obj, **changes)
    for name in plan[0]:
        if name not in changes:
            changes[name] = getattr(obj, name)
    return cls(**changes)


def dataclass(cls: Optional[type] = None, *, frozen: bool = False) -> Any:
    """`@dataclass` / `@dataclass(frozen=True)`, as `dataclasses.dataclass` with its defaults."""
    if cls is None:
        return lambda target: _process(target, frozen)
    return _process(cls, frozen)
