"""Which rules a run reports: --select / --ignore / per-file-ignores over the rulebook."""

from __future__ import annotations

import fnmatch
from pathlib import Path
from typing import List, Set, Tuple

from kvlint.config import Config
from kvlint.rulebook import Rulebook


def enabled_codes(rulebook: Rulebook, config: Config) -> Tuple[Set[str], List[str]]:
    selected, unknown_select = rulebook.expand(config.select + config.extend_select)
    ignored, unknown_ignore = rulebook.expand(config.ignore)
    return set(selected) - set(ignored), unknown_select + unknown_ignore


def per_file_ignored(path: str, config: Config, rulebook: Rulebook) -> Set[str]:
    if not config.per_file_ignores or path == "<stdin>":
        return set()
    try:
        relative = Path(path).resolve().relative_to(config.root.resolve()).as_posix()
    except (ValueError, RuntimeError, OSError):  # outside; or a link loop (3.11)
        relative = Path(path).as_posix()
    ignored: Set[str] = set()
    for pattern, selectors in config.per_file_ignores:
        if fnmatch.fnmatch(relative, pattern) or fnmatch.fnmatch(Path(path).name, pattern):
            ignored.update(rulebook.expand(selectors)[0])
    return ignored
