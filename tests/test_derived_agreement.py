"""kvlint's vLLM catalog agrees with the truth tables derived by running every release's code.

For every table under tools/derive/tables/vllm/ (one per vLLM release on PyPI, written by
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
TABLES = DERIVE / "tables" / "vllm"
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


def test_unchanged_lines_are_what_the_tables_show() -> None:
    """A minor line is "unchanged" (a later patch may be checked as its newest catalogued release)
    exactly when the derived tables of all its releases are equal, provenance aside."""
    import hashlib
    import json

    from packaging.version import Version

    digests: dict = {}
    for path in TABLES.glob("*.json"):
        t = json.loads(path.read_text())
        v = Version(t["version"])
        digests.setdefault(f"{v.major}.{v.minor}", set()).add(
            hashlib.sha256(json.dumps(C._content(t), sort_keys=True).encode()).hexdigest())
    expected = sorted((line for line, d in digests.items() if len(d) == 1), key=Version)
    assert "0.11" not in expected  # 0.11.1 brought the validated selector
    assert list(load_engine_catalog().unchanged_lines("vllm")) == expected


@pytest.mark.parametrize("version, checked, says", [
    ("0.19.1", "0.19.1", None),
    ("0.16.0rc2.dev367+g98b0205c3.d20260221", "0.16.0", "the release it builds toward or from"),
    ("0.19.1+cu128", "0.19.1", "the release it builds toward or from"),
    ("0.20.1.post1", None, None),  # a post-release (an organisation's own build): KV201
    ("0.99.0", "0.33.0", "newer than the newest release kvlint knows"),
    ("0.34.0rc1", "0.33.0", "newer than the newest release kvlint knows"),
    ("0.20.3", "0.20.2", "the 0.20 releases kvlint knows all behave alike"),
    ("0.12.1", "0.12.0", "the 0.12 releases kvlint knows all behave alike"),
    ("0.11.3", None, None),   # 0.11.0 and 0.11.1 differ: no stand-in, KV201
    ("0.9.2", None, None),    # older than every catalogued release
    ("nightly", None, None),
])
def test_checked_release(version, checked, says) -> None:
    release, note = load_engine_catalog().checked_release("vllm", version)
    assert (release.version if release else None) == checked
    assert (note is None) if says is None else (says in note)


def _code_accepts(version: str, backend: str, device: str, dtype: str, head: int) -> bool:
    """The release's own validate_configuration (its derived table) has no reason against it."""
    import json

    import table as T

    t = json.loads((TABLES / f"{version}.json").read_text())
    v = t["backends"][backend]["validate"]
    pt = {"device": device, "variant": "plain", "kv_cache_dtype": dtype, "head_size": head, "block_size": 16}
    return not any(T.lookup(tree, pt) for reason, tree in v["reasons"].items() if "block_size" not in reason)


MANIFEST = """\
apiVersion: kvlint/v1
kind: Deployment
metadata:
  name: example
engine:
  name: vllm
  version: "{version}"
  attention_backend: {backend}
hardware:
  gpu: H100-SXM-80GB
model:
  name: meta-llama/Llama-3.1-8B-Instruct
kv_cache:
  dtype: {dtype}
"""


def _kv301(tmp_path, version, backend, dtype) -> str:
    from conftest import invoke

    path = tmp_path / "m.yaml"
    path.write_text(MANIFEST.format(version=version, backend=backend, dtype=dtype))
    out = invoke(["check", "--output-format", "concise", "--select", "KV301", str(path)]).output
    assert "KV301" in out, out
    return out


def test_remedy_names_the_release_whose_code_accepts(tmp_path) -> None:
    """Explicit bfloat16 on vLLM 0.13 (H100, Llama head size 128): every backend's code refuses
    it, so the help names the first later release whose TRITON_ATTN code accepts it."""
    from packaging.version import Version

    assert not any(_code_accepts("0.13.0", b, "sm90", "bfloat16", 128)
                   for b in ("FLASH_ATTN", "FLASHINFER", "TRITON_ATTN", "FLEX_ATTENTION"))
    first = min((p.stem for p in TABLES.glob("*.json") if Version(p.stem) > Version("0.13.0")
                 and _code_accepts(p.stem, "TRITON_ATTN", "sm90", "bfloat16", 128)), key=Version)
    out = _kv301(tmp_path, "0.13.0", "TRITON_ATTN", "bfloat16")
    assert f"no backend of this release accepts it here; TRITON_ATTN does from vLLM {first}" in out


def test_suggested_backends_are_accepted_by_the_code(tmp_path) -> None:
    """fp8_e5m2 pinned to FLASH_ATTN on vLLM 0.19.1 H100: each backend the help suggests is one
    the release's own validate_configuration accepts for that cell."""
    import re

    out = _kv301(tmp_path, "0.19.1", "FLASH_ATTN", "fp8_e5m2")
    named = re.search(r"on this release and GPU ([A-Z_, ]+) accepts? this configuration", out)
    assert named, out
    for backend in named.group(1).split(", "):
        assert _code_accepts("0.19.1", backend, "sm90", "fp8_e5m2", 128), backend
