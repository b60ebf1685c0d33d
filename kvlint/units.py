"""Size strings as the manifest spells them (docs/manifest.md, "Sizes")."""

from __future__ import annotations

import math
import re
from typing import Optional, Union

_UNITS = {
    "": 1,
    "B": 1,
    "KiB": 1 << 10,
    "MiB": 1 << 20,
    "GiB": 1 << 30,
    "TiB": 1 << 40,
    "KB": 10**3,
    "MB": 10**6,
    "GB": 10**9,
    "TB": 10**12,
}
# Matched against the stripped string: one `\s*` between number and unit, never two adjacent
# ones, so a long run of blanks cannot make the pattern backtrack quadratically (nor can the
# schema's pattern for sizes, written the same way).
_SIZE = re.compile(r"(?P<number>[0-9]+(?:\.[0-9]+)?)\s*(?P<unit>[A-Za-z]*)")
# Spellings people reach for that are ambiguous between powers of 2 and 10.
_AMBIGUOUS = {"k": "K", "m": "M", "g": "G", "t": "T"}


def parse_size(value: Union[int, float, str, None]) -> Optional[int]:
    """Bytes for a valid size, None for anything else (the schema stage reports it)."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, float):
        return int(value) if value >= 0 else None
    match = _SIZE.fullmatch(str(value).strip())
    if not match or match.group("unit") not in _UNITS:
        return None
    size = float(match.group("number")) * _UNITS[match.group("unit")]
    return int(size) if math.isfinite(size) else None  # 400 digits: the schema stage reports it


def size_hint(value: str) -> Optional[str]:
    """A remediation for a size string with an ambiguous or unknown unit, else None."""
    match = _SIZE.fullmatch(value.strip())
    if not match:
        return None
    number, unit = match.group("number"), match.group("unit")
    if unit in _UNITS:
        return None
    letter = unit[:1].lower()
    if letter in _AMBIGUOUS and unit.lower() in (letter, letter + "i", letter + "ib", letter + "b"):
        big = _AMBIGUOUS[letter]
        return (
            f"'{value}' has an ambiguous unit {unit!r}: write {number}{big}iB "
            f"(powers of 2) or {number}{big}B (powers of 10)"
        )
    return f"'{value}' has an unknown unit {unit!r}: use KiB, MiB, GiB, TiB, KB, MB, GB or TB"
