"""Where the data that ships with kvlint lives (schemas/, rules/).

In a wheel, `schemas/` and `rules/` are copied to `kvlint/_data/`; in a source checkout or an
editable install they sit at the repository's top level.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


@cache
def data_root() -> Path:
    installed = _PACKAGE / "_data"
    if (installed / "schemas").is_dir():
        return installed
    return _PACKAGE.parent


def schemas_dir() -> Path:
    return data_root() / "schemas"


def rules_dir() -> Path:
    return data_root() / "rules"


def catalog_dir() -> Path:
    return rules_dir() / "catalog"
