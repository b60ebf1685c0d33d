"""Engine release strings as comparable tuples ("0.25.1" -> (0, 25, 1))."""

from __future__ import annotations

import re
from typing import Optional, Tuple

Release = Tuple[int, int, int]

_RELEASE = re.compile(r"^\s*v?(\d+)(?:\.(\d+))?(?:\.(\d+))?")


def parse_release(text: Optional[str]) -> Optional[Release]:
    """Leading numeric part of a release string; pre-release and local tags are ignored
    ("0.25.1rc1" and "0.25.1+cu128" both give (0, 25, 1)). None when there is no number."""
    if not text:
        return None
    match = _RELEASE.match(str(text))
    if match is None:
        return None
    major, minor, patch = (int(g) if g is not None else 0 for g in match.groups())
    return (major, minor, patch)


def format_release(release: Release) -> str:
    return ".".join(str(part) for part in release)
