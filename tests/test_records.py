"""kvlint.records.dataclass against the standard library's: the same class twice, once from each
decorator, must repr, compare and hash alike, and be a dataclass to `fields`/`replace`."""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, Tuple

import pytest

from kvlint import records


def _define(decorator, frozen: bool) -> Dict[str, type]:
    """A family of classes covering what kvlint's own use: defaults, default factories, fields
    left out of repr/compare/hash, an explicit __hash__, an explicit __eq__, inheritance, and a
    self-referencing value."""
    deco = decorator(frozen=True) if frozen else decorator

    @deco
    class Point:
        x: int
        y: int = 2
        tags: Tuple[str, ...] = ()

    @deco
    class Hidden:
        name: str
        cache: Dict[str, int] = dataclasses.field(default_factory=dict, repr=False, compare=False)
        note: str = dataclasses.field(default="", hash=False)
        extra: Any = dataclasses.field(default=None, hash=True, compare=False)

    @deco
    class Empty:
        pass

    @deco
    class Point3(Point):
        z: int = 0

    @deco
    class OwnHash:
        x: int

        def __hash__(self) -> int:
            return 7

    @deco
    class OwnEq:
        x: int

        def __eq__(self, other: object) -> bool:
            return True

    @deco
    class OwnRepr:
        x: int

        def __repr__(self) -> str:
            return "mine"

    @deco
    class Box:
        content: Any = None

    return {c.__name__: c for c in (Point, Hidden, Empty, Point3, OwnHash, OwnEq, OwnRepr, Box)}


def _samples(classes: Dict[str, type]):
    point, hidden, empty, point3 = classes["Point"], classes["Hidden"], classes["Empty"], classes["Point3"]
    return [
        point(1), point(1, 2), point(1, 3, ("a",)), point(-0, 2), point(1.0),
        hidden("a"), hidden("a", {"k": 1}), hidden("a", note="n"), hidden("a", extra=[1]),
        empty(), point3(1), point3(1, 2, (), 0), point3(1, z=5),
        classes["OwnHash"](1), classes["OwnEq"](1), classes["OwnRepr"](3), classes["Box"](("x",)),
    ]


def _hash_or_type_error(value: Any) -> Any:
    try:
        return hash(value)
    except TypeError as error:
        return ("unhashable", str(error))


def _mirror(value: Any, classes: Dict[str, type]) -> Any:
    """The same value built from the other family of classes."""
    kind = classes[type(value).__name__]
    return kind(**{f.name: getattr(value, f.name) for f in dataclasses.fields(value)})


@pytest.mark.parametrize("frozen", [False, True])
def test_repr_eq_and_hash_are_the_standard_librarys(frozen):
    ours = _define(records.dataclass, frozen)
    theirs = _define(dataclasses.dataclass, frozen)
    mine = _samples(ours)
    for a in mine:
        std_a = _mirror(a, theirs)
        assert repr(a).replace(".<locals>.", "") == repr(std_a).replace(".<locals>.", "")
        assert _hash_or_type_error(a) == _hash_or_type_error(std_a)
        assert (a.__hash__ is None) == (std_a.__hash__ is None)
        for b in mine:
            std_b = _mirror(b, theirs)
            assert (a == b) == (std_a == std_b), (a, b)
            assert (a != b) == (std_a != std_b), (a, b)
        assert (a == ("not", "a record")) == (std_a == ("not", "a record"))


@pytest.mark.parametrize("frozen", [False, True])
def test_recursion_and_dataclass_helpers(frozen):
    ours = _define(records.dataclass, frozen)
    theirs = _define(dataclasses.dataclass, frozen)
    if not frozen:
        box, std_box = ours["Box"](), theirs["Box"]()
        box.content, std_box.content = [box], [std_box]
        assert repr(box).split("Box")[-1] == repr(std_box).split("Box")[-1] == "(content=[...])"
    point = ours["Point"](1)
    assert dataclasses.is_dataclass(point)
    assert [f.name for f in dataclasses.fields(point)] == ["x", "y", "tags"]
    assert dataclasses.replace(point, y=5) == ours["Point"](1, 5)
    assert dataclasses.asdict(point) == {"x": 1, "y": 2, "tags": ()}
    if frozen:
        with pytest.raises(dataclasses.FrozenInstanceError):
            point.x = 3  # type: ignore[misc]
    else:
        point.x = 3
        assert point == ours["Point"](3)


def test_kvlint_classes_use_the_shared_methods():
    """Every dataclass kvlint defines comes from kvlint.records (a stray `@dataclasses.dataclass`
    would compile its methods again at start-up)."""
    import importlib
    import pkgutil

    import kvlint

    skipped = {"kvlint.__main__"}  # runs the CLI when imported
    found = 0
    for module_info in pkgutil.walk_packages(kvlint.__path__, "kvlint."):
        if module_info.name in skipped:
            continue
        try:
            module = importlib.import_module(module_info.name)
        except ImportError:  # an optional dependency (torch, llama-cpp) is not installed
            continue
        for value in vars(module).values():
            if isinstance(value, type) and dataclasses.is_dataclass(value) and value.__module__ == module.__name__:
                found += 1
                assert hasattr(value, records._KEYS), f"{module.__name__}.{value.__qualname__}"
    assert found > 60
