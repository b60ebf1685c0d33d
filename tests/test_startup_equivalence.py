"""Start-up time changes that must not change an answer: each fast path against what it replaced."""

from __future__ import annotations

import json
from typing import Any, Iterator

import pytest

from kvlint.catalog.engines import Source, load_engine_catalog, names_block_sizes


def _by_json(value: Any) -> bool:
    """What BackendInfo asked before (json.dumps of the backend's data, default=str)."""
    return '"block_sizes"' in json.dumps(value, default=str)


def _nodes(value: Any) -> Iterator[Any]:
    yield value
    if isinstance(value, dict):
        for item in value.values():
            yield from _nodes(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _nodes(item)


def test_every_part_of_the_engine_catalog_gets_the_json_answer():
    catalog = load_engine_catalog()
    seen = {True: 0, False: 0}
    for node in _nodes(dict(catalog.data)):
        if isinstance(node, dict):
            answer = _by_json(node)
            assert names_block_sizes(node) is answer, node
            seen[answer] += 1
    assert seen[True] > 10 and seen[False] > 100  # both answers occur in the data


@pytest.mark.parametrize("value", [
    {"ref": "block_sizes"}, {"block_sizes": 1}, {"x": ['a"block_sizes']}, {"x": 'a"block_sizes"'},
    {"x": "block_sizes_x"}, {"x": "my block_sizes"}, {"x": "\\"}, {1: "block_sizes"}, {None: ("block_sizes",)},
    {"x": 1.5, "y": True, "z": None}, {"x": Source(repo="a/b", note="block_sizes")}, {"x": {"block_sizes"}},
    ["é\"block_sizes"], {"x": "blöck_sizes"},
])
def test_edge_values_get_the_json_answer(value):
    assert names_block_sizes(value) is _by_json(value)
