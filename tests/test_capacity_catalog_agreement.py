"""Capacity reads every release-dependent switch from the engine catalog, and the catalog's
switches change where vLLM's code changed.

kvlint/capacity/vllm.py holds no version numbers; rules/catalog/engines/vllm.yaml states each
change as a sourced `defaults`/`features` entry, and resolve hands them to capacity on the
Deployment. These tests pin the boundaries to the releases the cited vLLM code changed in, and
check that a release the catalog does not list is modelled by the nearest catalogued one.
"""

from __future__ import annotations

import ast

import pytest

from conftest import REPO_ROOT
from kvlint.catalog import load_catalogs
from kvlint.versions import parse_version

CATALOG = load_catalogs(())
RELEASES = CATALOG.engines.known_versions("vllm")

# (catalog default, value before, value from, first release with the new value): each boundary
# is the release whose source the catalog entry cites.
BOUNDARIES = [
    ("kv_cache_size_log_formula", "num_blocks_per_group_times_min_block", "max_concurrency_times_max_model_len", "0.20.1"),
    ("sliding_window_inflight_tokens", "max_num_batched_tokens", "max_in_flight_tokens", "0.26"),
    ("hybrid_page_unification", "raise", "pad", "0.20"),
    ("kv_fit_check", "num_blocks", "num_blocks_minus_null_block", "0.33"),
    ("gpu_memory_utilization", 0.9, 0.92, "0.20"),
    ("estimate_cudagraph_memory", False, True, "0.20"),
]


@pytest.mark.parametrize("name, before, after, first", BOUNDARIES, ids=[b[0] for b in BOUNDARIES])
def test_release_switch_boundaries(name, before, after, first) -> None:
    for version in RELEASES:
        expected = after if parse_version(version) >= parse_version(first) else before
        assert CATALOG.engines.release("vllm", version).default(name) == expected, version


def test_skip_layer_switches() -> None:
    for version in RELEASES:
        release = CATALOG.engines.release("vllm", version)
        at = parse_version(version)
        assert release.feature("kv_cache_dtype_skip_layers").available is (at >= parse_version("0.19"))
        if at >= parse_version("0.19"):
            expected = "align_heterogeneous" if at >= parse_version("0.25") else "page_unify"
            assert release.default("skip_layer_block_alignment") == expected
        expected_int4 = "int8" if parse_version("0.25") <= at < parse_version("0.28") else "int4"
        assert release.default("int4_sliding_page_sizing") == expected_int4


def test_capacity_holds_no_release_numbers() -> None:
    """No tuple of three small ints (a release) and no version-string comparison in capacity."""
    offenders = []
    for path in sorted((REPO_ROOT / "kvlint" / "capacity").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Tuple) and len(node.elts) == 3 and all(
                isinstance(e, ast.Constant) and isinstance(e.value, int) and 0 <= e.value < 100 for e in node.elts
            ) and node.elts[0].value == 0:
                offenders.append(f"{path.name}:{node.lineno}")
    assert not offenders, offenders


@pytest.mark.parametrize("version, modelled, note", [
    ("0.19.1", "0.19.1", None),
    ("0.20.3", "0.20.2", "not in the catalog"),
    ("0.16.0rc2.dev367+g98b0205c3.d20260221", "0.16.0", "is a build of 0.16.0"),
    ("0.19.1+cu128", "0.19.1", "is a build of 0.19.1"),
    ("0.40.0", "0.33.0", "newer than the last release modelled"),
    ("0.9.2", "0.11.0", "predates the releases modelled"),
    ("nightly", "0.33.0", "not understood"),
])
def test_modelled_release(version, modelled, note) -> None:
    release, text = CATALOG.engines.modelled_release("vllm", version)
    assert release.version == modelled
    assert (text is None) if note is None else (note in text)
