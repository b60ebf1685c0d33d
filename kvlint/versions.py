"""Release numbers and PEP 440-style specifiers, without a dependency on `packaging`.

Only what the catalog needs: release segments ("0.19.1"), an optional pre-release
("1.0.0rc4"), post-release ("0.5.6.post2") and dev tags, and comma-separated specifier sets
(">=0.17,<0.28", "==0.19.*", "!=0.20.0"). Compute capabilities ("8.9") are versions too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Tuple, Union

_VERSION_RE = re.compile(
    r"^\s*v?(?P<release>\d+(?:\.\d+)*)"
    r"(?:[-_.]?(?P<pre>a|b|rc|alpha|beta|c)[-_.]?(?P<pre_n>\d*))?"
    r"(?:[-_.]?post[-_.]?(?P<post>\d*))?"
    r"(?:[-_.]?dev[-_.]?(?P<dev>\d*))?"
    r"(?:\+[0-9A-Za-z.]+)?\s*$",
    re.IGNORECASE,
)
_PRE_RANK = {"a": 0, "alpha": 0, "b": 1, "beta": 1, "c": 2, "rc": 2}
_OPS = ("===", "==", "!=", "<=", ">=", "~=", "<", ">")


class VersionError(ValueError):
    """A version or specifier string that cannot be parsed."""


@dataclass(frozen=True, order=False)
class Version:
    text: str
    release: Tuple[int, ...]
    # (phase, number): dev < pre-release < final < post-release, as PEP 440 orders them.
    _key: Tuple

    def __lt__(self, other: Version) -> bool:
        return self._key < other._key

    def __le__(self, other: Version) -> bool:
        return self._key <= other._key

    def __gt__(self, other: Version) -> bool:
        return self._key > other._key

    def __ge__(self, other: Version) -> bool:
        return self._key >= other._key

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Version) and self._key == other._key

    def __hash__(self) -> int:
        return hash(self._key)

    def __str__(self) -> str:
        return self.text

    @property
    def major(self) -> int:
        return self.release[0]

    @property
    def minor(self) -> int:
        return self.release[1] if len(self.release) > 1 else 0


def _trim(release: Tuple[int, ...]) -> Tuple[int, ...]:
    out = list(release)
    while len(out) > 1 and out[-1] == 0:
        out.pop()
    return tuple(out)


@lru_cache(maxsize=4096)
def parse_version(text: Union[str, Version]) -> Version:
    if isinstance(text, Version):
        return text
    m = _VERSION_RE.match(str(text))
    if not m:
        raise VersionError(f"not a version: {text!r}")
    release = tuple(int(p) for p in m.group("release").split("."))
    pre, post, dev = m.group("pre"), m.group("post"), m.group("dev")
    if pre is not None:
        phase: Tuple = (1, _PRE_RANK[pre.lower()], int(m.group("pre_n") or 0))
    elif post is not None:
        phase = (3, int(post or 0), 0)
    else:
        phase = (2, 0, 0)
    dev_key = (0, int(dev or 0)) if dev is not None else (1, 0)
    if dev is not None and pre is None and post is None:
        phase = (0, 0, 0)  # "1.0.dev1" sorts before "1.0a1"
    return Version(str(text).strip(), release, (_trim(release), phase, dev_key))


def _clause_matches(op: str, target: str, version: Version) -> bool:
    if target.endswith(".*"):
        if op not in ("==", "!="):
            raise VersionError(f"wildcard only with == or !=: {op}{target}")
        prefix = tuple(int(p) for p in target[:-2].split("."))
        padded = version.release + (0,) * max(0, len(prefix) - len(version.release))
        hit = padded[: len(prefix)] == prefix
        return hit if op == "==" else not hit
    other = parse_version(target)
    if op in ("==", "==="):
        return version == other
    if op == "!=":
        return version != other
    if op == "<":
        return version < other
    if op == "<=":
        return version <= other
    if op == ">":
        return version > other
    if op == ">=":
        return version >= other
    if op == "~=":
        upper = list(other.release[:-1])
        upper[-1] += 1
        return version >= other and version < parse_version(".".join(map(str, upper)))
    raise VersionError(f"unknown operator {op!r}")  # pragma: no cover


@dataclass(frozen=True)
class SpecifierSet:
    """A comma-separated AND of clauses; the empty string matches every version."""

    text: str
    clauses: Tuple[Tuple[str, str], ...]

    def contains(self, version: Union[str, Version]) -> bool:
        v = parse_version(version)
        return all(_clause_matches(op, target, v) for op, target in self.clauses)

    __contains__ = contains

    def __str__(self) -> str:
        return self.text


@lru_cache(maxsize=4096)
def parse_specifier(text: str) -> SpecifierSet:
    clauses = []
    for raw in str(text).split(","):
        part = raw.strip()
        if not part:
            continue
        for op in _OPS:
            if part.startswith(op):
                target = part[len(op):].strip()
                break
        else:
            raise VersionError(f"specifier clause needs an operator (>=, <, ==, ...): {part!r}")
        if not target:
            raise VersionError(f"specifier clause without a version: {part!r}")
        if not target.endswith(".*"):
            parse_version(target)
        clauses.append((op, target))
    return SpecifierSet(str(text), tuple(clauses))


def version_matches(version: Union[str, Version], specifier: str) -> bool:
    return parse_specifier(specifier).contains(version)


def cc_text(cc: Tuple[int, int]) -> str:
    """(9, 0) -> "9.0"; the form compute-capability specifiers are written in."""
    return f"{cc[0]}.{cc[1]}"


def sm_name(cc: Tuple[int, int]) -> str:
    """(9, 0) -> "sm90", (12, 0) -> "sm120"."""
    return f"sm{cc[0]}{cc[1]}"
