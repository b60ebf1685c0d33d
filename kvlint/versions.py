"""Engine releases, compute capabilities and version specifiers: one place, on `packaging`.

Every version in kvlint goes through here: catalog ranges (">=0.17,<0.28", "==0.19.*"), rule
`applies_to.versions`, capacity's release switches and compute-capability conditions ("8.9").
Parsing follows PEP 440 as pip does (pre-releases, post-releases, dev builds and local versions
such as "0.16.0rc2.dev367+g98b0205c3"), and a pre-release is ordered before its final release;
specifiers match pre-releases too, so ">=0.17" holds for "0.18.0rc1".

llama.cpp releases are build tags ("b4747", ggml-org/llama.cpp's release names): a tag reads as
the version of its build number, so tags order as integers ("b10488" > "b9452"), and a specifier
may name tags (">=b6327,<b7108"). Ollama's tags ("v0.13.3") are PEP 440 with a leading "v".
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING, Optional, Tuple, Union

from packaging.version import InvalidVersion, Version

if TYPE_CHECKING:
    from packaging.specifiers import SpecifierSet

__all__ = [
    "Release",
    "SpecifierSet",
    "Version",
    "VersionError",
    "cc_text",
    "format_release",
    "is_build_tag",
    "parse_release",
    "parse_specifier",
    "parse_version",
    "sm_name",
    "version_matches",
]

# A release as capacity compares it: (major, minor, patch).
Release = Tuple[int, int, int]


class VersionError(ValueError):
    """A version or specifier string that cannot be parsed."""


# Bounds on what is parsed as a version: release strings are short and their components small;
# a hostile `version: "0.<5000 digits>"` is "not a version", never a ValueError from int().
MAX_VERSION_CHARS = 128
_LONG_COMPONENT = re.compile(r"[0-9]{19}")  # a component of 10**18 or more
# llama.cpp build tags: "b4747" alone, or after an operator inside a specifier.
_BUILD_TAG = re.compile(r"[bB]([0-9]{1,7})")
_SPEC_BUILD_TAG = re.compile(r"((?:^|,)\s*(?:===|==|!=|~=|<=|>=|<|>)\s*)[bB]([0-9]{1,7})(?=\s*(?:,|$))")


def is_build_tag(text: str) -> bool:
    """True for a llama.cpp build tag such as "b4747"."""
    return bool(_BUILD_TAG.fullmatch(str(text).strip()))


@lru_cache(maxsize=4096)
def _parse(text: str) -> Version:
    if len(text) > MAX_VERSION_CHARS:
        raise VersionError(f"not a version: {text[:40]!r}... is longer than {MAX_VERSION_CHARS} characters")
    if _LONG_COMPONENT.search(text):
        raise VersionError(f"not a version: {text[:40]!r} has a component of 19 digits or more")
    tag = _BUILD_TAG.fullmatch(text)
    if tag:
        return Version(tag.group(1))
    try:
        return Version(text)
    except (InvalidVersion, ValueError, OverflowError):
        raise VersionError(f"not a version: {text!r}") from None


def parse_version(text: Union[str, Version]) -> Version:
    if isinstance(text, Version):
        return text
    return _parse(str(text).strip())


def __getattr__(name: str):
    # `SpecifierSet` stays importable from here, loaded on first use like parse_specifier's.
    if name == "SpecifierSet":
        from packaging.specifiers import SpecifierSet

        return SpecifierSet
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@lru_cache(maxsize=4096)
def parse_specifier(text: str) -> SpecifierSet:
    """A comma-separated AND of clauses; the empty string matches every version."""
    # packaging.specifiers is imported on use (start-up time, ~4 ms): the catalog's plain ranges
    # are matched by _plain_match below, and only other specifiers need it.
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    try:
        spec = SpecifierSet(_SPEC_BUILD_TAG.sub(r"\1\2", str(text)), prereleases=True)
    except InvalidSpecifier:
        raise VersionError(f"not a version specifier (>=, <, ==, ... and a version): {text!r}") from None
    return spec


def version_matches(version: Union[str, Version], specifier: str) -> bool:
    if isinstance(version, str):
        return _matches_text(version, str(specifier))
    parsed = parse_version(version)
    plain = _plain_match(parsed, str(specifier))
    if plain is not None:
        return plain
    return parse_specifier(specifier).contains(parsed, prereleases=True)


@lru_cache(maxsize=65536)
def _matches_text(version: str, specifier: str) -> bool:
    # the catalog asks the same (release, range) pairs over and over
    parsed = parse_version(version)
    plain = _plain_match(parsed, specifier)
    if plain is not None:
        return plain
    return parse_specifier(specifier).contains(parsed, prereleases=True)


_PLAIN_OPERATORS = ("<=", ">=", "==", "!=", "<", ">")  # two-character operators first


def _plain_match(version: Version, specifier: str) -> Optional[bool]:
    """PEP 440 matching of a final release against clauses `OP X.Y.Z` with numeric releases, or
    None when either side is anything else (pre/post/dev/local/epoch, `===`, `~=`, `==X.*`).

    For a final release against final releases, every operator of PEP 440 compares the release
    tuples padded with zeros: the exclusions of `<` (pre-releases of V) and `>` (post-releases and
    local versions of V) cannot apply, and matching pre-releases is on in parse_specifier anyway.
    """
    if version.epoch or version.pre is not None or version.post is not None or version.dev is not None \
            or version.local is not None:
        return None
    text = _SPEC_BUILD_TAG.sub(r"\1\2", specifier) if "b" in specifier or "B" in specifier else specifier
    if not text.strip():
        return True
    release = version.release
    result = True
    for clause in text.split(","):
        clause = clause.strip()
        operator = next((op for op in _PLAIN_OPERATORS if clause.startswith(op)), None)
        if operator is None:
            return None
        bound = clause[len(operator):].strip()
        if not bound or len(bound) > MAX_VERSION_CHARS:
            return None
        parts = bound.split(".")
        if not all(part.isascii() and part.isdigit() for part in parts):
            return None
        other = tuple(int(part) for part in parts)
        width = max(len(release), len(other))
        mine, theirs = release + (0,) * (width - len(release)), other + (0,) * (width - len(other))
        if operator == "<":
            holds = mine < theirs
        elif operator == "<=":
            holds = mine <= theirs
        elif operator == ">":
            holds = mine > theirs
        elif operator == ">=":
            holds = mine >= theirs
        elif operator == "==":
            holds = mine == theirs
        else:
            holds = mine != theirs
        result = result and holds
    return result


def parse_release(text: Optional[str]) -> Optional[Release]:
    """(major, minor, patch) of a release string, None when it is not a version.

    Pre-release, dev and local parts are dropped ("0.25.1rc1" and "0.25.1+cu128" give (0, 25, 1)).
    """
    if not text:
        return None
    try:
        parts = parse_version(str(text)).release
    except VersionError:
        return None
    padded = tuple(parts[:3]) + (0,) * max(0, 3 - len(parts))
    return (padded[0], padded[1], padded[2])


def format_release(release: Release) -> str:
    return ".".join(str(part) for part in release)


def cc_text(cc: Tuple[int, int]) -> str:
    """(9, 0) -> "9.0"; the form compute-capability specifiers are written in."""
    return f"{cc[0]}.{cc[1]}"


def sm_name(cc: Tuple[int, int]) -> str:
    """(9, 0) -> "sm90", (12, 0) -> "sm120"."""
    return f"sm{cc[0]}{cc[1]}"
