"""The errors that end a run with exit 2 and one line (usage, configuration, rule and catalog
files). Findings are not errors: a bad manifest is reported, never raised."""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Union


class KvlintError(Exception):
    """Base class: the CLI prints `kvlint: error: <prefix><message>` and exits 2."""

    prefix = ""

    def __init__(self, message: str, file: Optional[Union[str, Path]] = None) -> None:
        self.message = message
        self.file = str(file) if file is not None else None
        super().__init__(f"{self.file}: {message}" if self.file else message)

    def one_line(self) -> str:
        return self.prefix + str(self)


class UsageError(KvlintError):
    """Bad paths or command-line options."""


class ConfigError(KvlintError):
    """A configuration file (kvlint.toml, [tool.kvlint]) that cannot be used."""


class RuleError(KvlintError):
    """A rule file that cannot be used (bad YAML, fails schemas/rule.json, duplicate code)."""


class CatalogError(KvlintError):
    """A catalog file that cannot be used (bad YAML, schema violation, duplicate id)."""

    prefix = "invalid catalog: "
