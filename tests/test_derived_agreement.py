"""kvlint's vLLM catalog agrees with the truth tables derived by running every release's code.

For every table under rules/catalog/derived/vllm/ (one per vLLM release on PyPI, written by
tools/derive/vllm_derive.py) and every grid cell, tools/derive/compare_catalog.py asks kvlint's
catalog the question the release's own code answered: does an explicit backend take this
(kv dtype, head size, GPU, sinks | per-head scales)? which block sizes? which backend does auto
mode pick? which dtype literals, flags and defaults exist? Every disagreement must be one that
tools/derive/known_disagreements.yaml lists with its reason (a limit of the derivation, or a
fact the catalog states on other evidence); a new one fails, and so does a listed one that no
longer occurs (the list only shrinks when it is kept honest).

Offline: the tables are committed; nothing is downloaded. The releases whose table content and
catalog ranges equal an earlier release's are not asked twice (compare_catalog.compare_all).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
DERIVE = REPO / "tools" / "derive"
TABLES = REPO / "rules" / "catalog" / "derived" / "vllm"
KNOWN = DERIVE / "known_disagreements.yaml"
sys.path.insert(0, str(DERIVE))

import compare_catalog as C  # noqa: E402
from kvlint.catalog.engines import load_engine_catalog  # noqa: E402


def _key_text(key: tuple) -> str:
    kind, subject, what, detail = key
    return " | ".join((kind, subject, what, detail))


@pytest.fixture(scope="module")
def comparison():
    cat = load_engine_catalog()
    order, counts, groups, same_as = C.compare_all(cat, TABLES)
    merged, _ = C.merged_groups(groups)
    found = {_key_text(k): C.ranges(sorted({c[0] for c in cells}, key=C.vkey), order)
             for k, cells in merged.items()}
    return order, counts, found


def _known() -> dict:
    doc = yaml.safe_load(KNOWN.read_text(encoding="utf-8"))
    return {e["key"]: e for e in doc["disagreements"]}


def test_every_table_is_compared(comparison) -> None:
    order, counts, _ = comparison
    assert len(order) == len(list(TABLES.glob("*.json"))) >= 35
    # every release with a table is in the catalog (no KV201 for a release on PyPI)
    assert all(counts[v]["known"] and counts[v]["proxy"] is None for v in order), [
        v for v in order if counts[v]["proxy"] is not None]


def test_each_known_disagreement_has_a_reason() -> None:
    for key, e in _known().items():
        assert e.get("reason", "").strip(), key
        assert e.get("releases"), key


def test_no_new_disagreement(comparison) -> None:
    _, _, found = comparison
    known = _known()
    new = {k: r for k, r in found.items() if k not in known}
    assert not new, "kvlint's catalog disagrees with the released code:\n" + "\n".join(
        f"- {k}  [releases {r}]" for k, r in sorted(new.items()))


def test_known_disagreements_still_occur_where_listed(comparison) -> None:
    _, _, found = comparison
    stale = {k: e["releases"] for k, e in _known().items() if k not in found}
    assert not stale, "fixed (remove from known_disagreements.yaml):\n" + "\n".join(sorted(stale))
    moved = {k: (e["releases"], found[k]) for k, e in _known().items() if found[k] != e["releases"]}
    assert not moved, "release ranges changed (listed, found):\n" + "\n".join(
        f"- {k}: {a} -> {b}" for k, (a, b) in sorted(moved.items()))
