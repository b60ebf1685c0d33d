"""Lossless compression of a function over a grid into a small decision tree (JSON).

A function is given as cells: {tuple(values in `dims` order): result}, over the full
cross product of `domains`. The tree splits only on dimensions the function depends
on (in `dims` order) and merges branches with identical subtrees:

    leaf                       -> the result (bool, str, number, null)
    {"by": dim, "true": [...]} -> boolean function of `dim` alone: True exactly for these values
    {"by": dim, "cases": {"v1,v2": subtree, ...}}   (keys: the values, comma-joined, domain order)

Dimensions that do not appear on a path do not matter there. `lookup(tree, point)`
evaluates a tree at a point {dim: value}.
"""

from __future__ import annotations

from typing import Any, Dict, List, Sequence, Tuple


def _key(v: Any) -> str:
    # values are bools, numbers, strings, None or trees built here (dicts in a fixed order)
    return repr(v)


def compress(cells: Dict[Tuple, Any], dims: Sequence[str], domains: Dict[str, Sequence]) -> Any:
    dims = list(dims)
    return _tree({k: v for k, v in cells.items()}, dims, [list(domains[d]) for d in dims])


def _depends(cells: Dict[Tuple, Any], i: int) -> bool:
    seen: Dict[Tuple, str] = {}
    for k, v in cells.items():
        rest = k[:i] + k[i + 1:]
        kv = _key(v)
        prev = seen.setdefault(rest, kv)
        if prev != kv:
            return True
    return False


def _tree(cells: Dict[Tuple, Any], dims: List[str], domains: List[List]) -> Any:
    values = {_key(v) for v in cells.values()}
    if len(values) <= 1:
        return next(iter(cells.values())) if cells else None
    for i, dim in enumerate(dims):
        if not _depends(cells, i):
            continue
        sub_dims = dims[:i] + dims[i + 1:]
        sub_domains = domains[:i] + domains[i + 1:]
        groups: Dict[str, List] = {}
        subtrees: Dict[str, Any] = {}
        for val in domains[i]:
            part = {k[:i] + k[i + 1:]: v for k, v in cells.items() if k[i] == val}
            if not part:
                continue
            st = _tree(part, sub_dims, sub_domains)
            sk = _key(st)
            groups.setdefault(sk, []).append(val)
            subtrees[sk] = st
        if all(isinstance(subtrees[sk], bool) for sk in groups):
            true_vals = [v for sk, vs in groups.items() if subtrees[sk] is True for v in vs]
            order = {_key(v): n for n, v in enumerate(domains[i])}
            return {"by": dim, "true": sorted(true_vals, key=lambda v: order[_key(v)])}
        cases = {}
        for sk, vs in sorted(groups.items(), key=lambda kv: domains[i].index(kv[1][0])):
            cases[",".join(str(v) for v in vs)] = subtrees[sk]
        return {"by": dim, "cases": cases}
    # depends on nothing individually but values differ: impossible for a full grid
    raise ValueError("cells are not a function over a full grid")


def lookup(tree: Any, point: Dict[str, Any]) -> Any:
    """Evaluate a compressed tree at `point` ({dim: value}); KeyError if a dim is missing."""
    while isinstance(tree, dict) and "by" in tree:
        val = point[tree["by"]]
        if "true" in tree:
            return val in tree["true"]
        sval = str(val)
        for keys, sub in tree["cases"].items():
            if sval in keys.split(","):
                tree = sub
                break
        else:
            return None  # value outside the grid
    return tree
