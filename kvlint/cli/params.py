"""Command-line options that several click commands share.

Every command that prints a report takes `--output-format` and `-o/--output-file`, as ruff's
commands do. The spellings they replaced (`--format` on capacity, diff, smoke, rule and rules;
`--output` on schema; `--out` on ablate) are still accepted, hidden from --help.
"""

from __future__ import annotations

import functools
from typing import Callable, Optional, Sequence

import click

config_option = click.option(
    "--config", "config_path", type=click.Path(dir_okay=False), help="Path to kvlint.toml or pyproject.toml."
)


def _merged(new: str, old: str, value, legacy, default):
    if value is not None and legacy is not None and value != legacy:
        raise click.UsageError(f"{new} {value} and {old} {legacy} disagree; give {new} alone")
    chosen = value if value is not None else legacy
    return default if chosen is None else chosen


def output_format_option(choices: Sequence[str], default: str, help: str) -> Callable:
    """`--output-format` (parameter `fmt`), with the hidden alias `--format`."""

    def decorator(func: Callable) -> Callable:
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            legacy = kwargs.pop("legacy_format", None)
            kwargs["fmt"] = _merged("--output-format", "--format", kwargs.get("fmt"), legacy, default)
            return func(*args, **kwargs)

        wrapper = click.option("--format", "legacy_format", type=click.Choice(tuple(choices)), default=None,
                               hidden=True)(wrapper)
        return click.option("--output-format", "fmt", type=click.Choice(tuple(choices)), default=None,
                            help=f"{help} (default {default}).")(wrapper)

    return decorator


def output_file_option(legacy: Optional[str] = None, help: str = "Write to a file instead of stdout.") -> Callable:
    """`-o/--output-file` (parameter `output_file`), with an optional hidden alias (`--output`)."""

    def decorator(func: Callable) -> Callable:
        target = func
        if legacy is not None:
            @functools.wraps(func)
            def target(*args, **kwargs):
                old = kwargs.pop("legacy_output_file", None)
                kwargs["output_file"] = _merged("--output-file", legacy, kwargs.get("output_file"), old, None)
                return func(*args, **kwargs)

            target = click.option(legacy, "legacy_output_file", type=click.Path(dir_okay=False), default=None,
                                  hidden=True)(target)
        return click.option("--output-file", "-o", "output_file", type=click.Path(dir_okay=False), default=None,
                            help=help)(target)

    return decorator
