"""llama.cpp build tags and Ollama tags in kvlint.versions (issue 15, item 1)."""

import pytest

from kvlint.versions import VersionError, is_build_tag, parse_specifier, parse_version, version_matches


def test_build_tags_order_as_integers():
    # b10488 (Ollama v0.32.15's LLAMA_CPP_VERSION) is newer than b9452 (v0.30.0's): a string sort says otherwise.
    tags = ["b10488", "b9452", "b4747", "b7108", "b1619"]
    assert sorted(tags, key=parse_version) == ["b1619", "b4747", "b7108", "b9452", "b10488"]
    assert sorted(tags) != sorted(tags, key=parse_version)


@pytest.mark.parametrize("version,spec,want", [
    ("b6327", ">=b6327,<b7108", True),   # first tri-state -fa build
    ("b6326", ">=b6327,<b7108", False),
    ("b7108", ">=b6327,<b7108", False),
    ("b10488", ">=b7108", True),
    ("B4747", "==b4747", True),
    ("v0.13.3", "<0.13.4", True),         # Ollama tags with a leading v
    ("0.24.1", ">=v0.13.4,<v0.30.0", True),
    ("v0.30.0", "<0.30.0", False),
    ("0.19.1", ">=0.17", True),            # vLLM behaviour unchanged
    ("0.18.0rc1", ">=0.17", True),
])
def test_specifiers_take_build_tags(version, spec, want):
    assert version_matches(version, spec) is want


def test_beta_versions_are_not_build_tags():
    assert not is_build_tag("0.1b1")
    assert is_build_tag("b4747")
    assert parse_version("0.1b1").is_prerelease
    assert version_matches("0.1b1", "==0.1b1")


@pytest.mark.parametrize("bad", ["b", "bx12", "b12a", ">=b", ">=bogus"])
def test_bad_tags_are_errors_not_crashes(bad):
    with pytest.raises(VersionError):
        parse_specifier(bad) if bad.startswith(">") else parse_version(bad)
