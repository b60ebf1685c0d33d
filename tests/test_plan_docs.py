"""docs/plan.md shows `kvlint plan` as it runs today: each `$ kvlint plan ...` line in a ```text
block is re-run from the repository root and its output must equal what follows it."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PAGE = (REPO / "docs" / "plan.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"```text\n(\$ kvlint plan[^\n]*)\n(.*?)```", PAGE, flags=re.S)


@pytest.mark.parametrize("command, expected", BLOCKS, ids=[c[:60] for c, _ in BLOCKS])
def test_plan_page_output_is_current(command: str, expected: str) -> None:
    argv = shlex.split(command[2:])
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"}
    result = subprocess.run([sys.executable, "-m", "kvlint", *argv[1:]], cwd=REPO, capture_output=True,
                            text=True, env=env, timeout=300)
    assert result.stdout == expected


def test_the_page_has_its_examples_and_is_linked() -> None:
    assert len(BLOCKS) >= 3
    assert "--emit vllm" in " ".join(c for c, _ in BLOCKS)
    assert "docs/plan.md" in (REPO / "README.md").read_text(encoding="utf-8")
