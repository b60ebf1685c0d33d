"""kvlint's vLLM flag table against the option strings each release's own parser registers.

tools/derive/tables/vllm/<release>.json records, for the engine flags kvlint reads, the option
strings that release's `EngineArgs.add_cli_args` registers (or that the flag is absent), by
running the release's code. Every spelling a release registers must be one kvlint accepts for
that release, and a flag the release lacks must not be accepted under its plain spelling.
Offline: the tables are committed.
"""

from __future__ import annotations

import json
from pathlib import Path

from kvlint.adapters import flags
from kvlint.adapters.cmdline import arg_from_word, find_invocation, parse_command
from kvlint.adapters.shell import parse
from kvlint.adapters.source import LineLocator

TABLES = Path(__file__).resolve().parent.parent / "tools" / "derive" / "tables" / "vllm"


def _disagreements() -> list:
    out = []
    for path in sorted(TABLES.glob("*.json")):
        release = path.stem
        for dest, info in json.loads(path.read_text(encoding="utf-8"))["flags"]["flags"].items():
            if info.get("absent"):
                spelling = "--" + dest.replace("_", "-")
                spec = flags.lookup("vllm", spelling)
                if spec is not None and flags.release_problem(spec, release) is None:
                    out.append((release, spelling, "the release has no such flag; kvlint accepts it"))
                continue
            for spelling in info["options"]:
                spec = flags.lookup("vllm", spelling)
                if spec is None:
                    out.append((release, spelling, "the release registers it; kvlint does not know it"))
                elif flags.release_problem(spec, release) is not None:
                    out.append((release, spelling, flags.release_problem(spec, release)))
    return out


def test_every_derived_spelling_is_accepted_for_its_release() -> None:
    assert len(list(TABLES.glob("*.json"))) >= 35
    assert _disagreements() == []


def _run(text: str, release: str):
    locator = LineLocator(text)
    command = parse(text).commands[0]
    argv = [arg_from_word(w, locator, f"word {i}") for i, w in enumerate(command.words)]
    return parse_command(argv, find_invocation(argv), release, {})


def test_disable_prefix_caching_from_vllm_0_33() -> None:
    """0.33.0's EnableDisableAction pairs --enable-x with --disable-x (the table's option list for
    enable_prefix_caching is ['--disable-prefix-caching', '--enable-prefix-caching']); 0.32.0 has
    only --enable-/--no-enable-prefix-caching."""
    on_033 = _run("vllm serve m --disable-prefix-caching", "0.33.0")
    assert [p.kind for p in on_033.problems] == []
    settings = {s.pointer: s.value for s in on_033.settings}
    assert settings["/engine/options/enable_prefix_caching"] is False
    on_032 = _run("vllm serve m --disable-prefix-caching", "0.32.0")
    assert [p.kind for p in on_032.problems] == ["flag-not-in-release"]
    assert "added in 0.33.0" in on_032.problems[0].message
    # only BooleanOptionalAction flags get the inverse: --disable-log-stats is store_true
    # (vllm/engine/arg_utils.py v0.33.0 L1920-1923), so --enable-log-stats stays unknown
    assert flags.lookup("vllm", "--disable-log-stats").takes == "flag"
    assert flags.lookup("vllm", "--enable-log-stats") is None
