"""The configuration snippet in the README must be a configuration kvlint accepts."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from kvlint.config import from_table

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

README = Path(__file__).resolve().parent.parent / "README.md"


def test_readme_configuration_snippet_is_valid(tmp_path) -> None:
    blocks = re.findall(r"```toml\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)
    assert blocks, "the README documents the configuration in a ```toml block"
    table = tomllib.loads(blocks[0])
    config = from_table(table, tmp_path / "kvlint.toml")
    assert config.ignore == ("KV501",)
    assert config.max_capacity_regression == 10
    assert dict(config.per_file_ignores) == {"staging/*.yaml": ("KV601",)}
