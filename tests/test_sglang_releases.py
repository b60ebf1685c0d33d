"""Which SGLang releases kvlint knows, from the truth tables (tools/derive/tables/sglang/), and how
a release the tables lack is resolved.

Post releases: a table of X.postN is simply known. One the tables lack is checked as the newest
catalogued release of its own line (X, X.post1, ...) only when the tables of that line all resolve
alike (`unchanged_lines`), the rule vLLM's patch releases follow for their minor line. The tables
show why not always: 0.5.6.post1 resolves differently from 0.5.6 (server_args.py grew between them),
while 0.5.8/0.5.10/0.5.12/0.5.13/0.5.15 and their post releases resolve alike.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from packaging.version import Version

from kvlint.catalog.engines import load_engine_catalog

REPO = Path(__file__).resolve().parent.parent
TABLES = REPO / "tools" / "derive" / "tables" / "sglang"
sys.path.insert(0, str(REPO / "tools" / "derive"))

import sglang_truth as T  # noqa: E402


def _behaviour(path: Path) -> str:
    """A table's resolutions without provenance (file:line differs between releases that behave alike)."""
    d = json.loads(path.read_text())
    cells = []
    for g, ms in sorted(d["grid"].items()):
        for m, bs in sorted(ms.items()):
            for b, ds in sorted(bs.items()):
                for dt in sorted(ds):
                    o = T.outcome(d, g, m, b, dt)
                    err = o.get("error") or {}
                    cells.append([g, m, b, dt, o.get("accepted"), o.get("attention_backend"),
                                  o.get("prefill_attention_backend"), o.get("decode_attention_backend"),
                                  o.get("kv_cache_dtype"), o.get("page_size"), err.get("type"), err.get("message"),
                                  [r[:3] for r in o.get("rewrites", [])]])
    defaults = {k: {kk: vv for kk, vv in v.items() if kk != "mem_fraction_static_set_at"}
                for k, v in d.get("defaults", {}).items()}
    return json.dumps([cells, defaults, d.get("flags"), d["axes"]], sort_keys=True, default=str)


def test_every_table_from_0_5_9_on_is_catalogued_and_every_catalogued_release_has_a_table() -> None:
    cat = load_engine_catalog()
    derived = {p.stem for p in TABLES.glob("*.json")}
    listed = set(cat.data["sglang"]["releases"][0]["versions"])
    assert listed <= derived
    assert {v for v in derived if Version(v) >= Version("0.5.9")} <= listed


def test_unchanged_lines_are_what_the_tables_show() -> None:
    lines: dict = {}
    for path in TABLES.glob("*.json"):
        lines.setdefault(Version(path.stem).base_version, set()).add(_behaviour(path))
    counts = {line: sum(1 for p in TABLES.glob("*.json") if Version(p.stem).base_version == line) for line in lines}
    expected = sorted((line for line, b in lines.items() if counts[line] > 1 and len(b) == 1), key=Version)
    assert expected  # the tables hold post releases that resolve like their release
    assert list(load_engine_catalog().unchanged_lines("sglang")) == expected


@pytest.mark.parametrize("version, checked, says", [
    ("0.5.12.post1", "0.5.12.post1", None),          # in the tables: known
    ("0.5.12.post2", "0.5.12.post1", "0.5.12"),      # line unchanged in the tables
    ("0.5.14.post1", None, None),                    # one table of the line: nothing shows it unchanged
    ("0.5.16.post1", None, None),
    ("0.5.24", "0.5.23", "newer"),                   # newer than every table: the newest, said
    ("0.5.7", None, None),                           # not catalogued (before 0.5.9, see README_sglang.md)
])
def test_sglang_release_resolution(version, checked, says) -> None:
    rel, note = load_engine_catalog().checked_release("sglang", version)
    assert (rel.version if rel else None) == checked
    if says:
        assert says in note
    else:
        assert note is None
