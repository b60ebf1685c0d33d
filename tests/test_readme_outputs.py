"""The outputs pasted into the README are what kvlint prints today.

README.md shows `kvlint check` in the `full` and `github` formats as "screenshots in text";
each `$ kvlint ...` line in a ```text block is re-run from the repository root and its output
must equal what follows it (the diff example is covered by tests/test_ci.py, which builds its
git repository).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
BLOCKS = re.findall(r"```text\n(\$ kvlint check[^\n]*)\n(.*?)```", (REPO / "README.md").read_text(encoding="utf-8"), flags=re.S)


@pytest.mark.parametrize("command, expected", BLOCKS, ids=[c for c, _ in BLOCKS])
def test_readme_output_is_current(command: str, expected: str) -> None:
    argv = shlex.split(command[2:])
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"}
    result = subprocess.run(
        [sys.executable, "-m", "kvlint", *argv[1:]], cwd=REPO, capture_output=True, text=True, env=env, timeout=60
    )
    assert result.stdout == expected


def test_the_readme_shows_full_and_github_output() -> None:
    commands = " ".join(c for c, _ in BLOCKS)
    assert "--output-format github" in commands
    assert any("--output-format" not in c for c, _ in BLOCKS)
