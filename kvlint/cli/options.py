"""What every command shares: exit codes, configuration with command-line overrides, the check
context, and writing a report to stdout or a file."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Optional, Sequence

import click

from kvlint.config import Config, load_config, split_csv
from kvlint.errors import UsageError

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR, EXIT_SKIPPED = 0, 1, 2, 3

config_option = click.option(
    "--config", "config_path", type=click.Path(dir_okay=False), help="Path to kvlint.toml or pyproject.toml."
)


def load_settings(
    config_path: Optional[str],
    select: Sequence[str] = (),
    extend_select: Sequence[str] = (),
    ignore: Sequence[str] = (),
    fail_on: Optional[str] = None,
    output_format: Optional[str] = None,
) -> Config:
    """The configuration file, then command-line overrides."""
    config = load_config(config_path)
    overrides = {}
    if select:
        overrides["select"] = split_csv(select)
    if extend_select:
        overrides["extend_select"] = config.extend_select + split_csv(extend_select)
    if ignore:
        overrides["ignore"] = config.ignore + split_csv(ignore)
    if fail_on:
        overrides["fail_on"] = fail_on
    if output_format:
        overrides["output_format"] = output_format
    return replace(config, **overrides)


def build_context(config: Config):
    """The rulebook and the enabled rules for a run; an unknown selector is a usage error."""
    # Imported on use: `kvlint schema`, `kvlint --help` and friends never load the pipeline.
    from kvlint.pipeline.check import CheckContext
    from kvlint.pipeline.selection import enabled_codes
    from kvlint.rulebook import load_rulebook

    rulebook = load_rulebook(tuple(config.rules_dirs))
    enabled, unknown = enabled_codes(rulebook, config)
    if unknown:
        raise UsageError("unknown rule selector(s): " + ", ".join(unknown) + " (KV902; see `kvlint rules`)")
    return CheckContext(config=config, rulebook=rulebook, enabled=enabled, display_root=Path.cwd())


def write_output(text: str, output_file: Optional[str]) -> None:
    """To stdout, or to a file (a write failure is a usage error, exit 2)."""
    if output_file:
        try:
            Path(output_file).write_text(text, encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"cannot write {output_file}: {exc.strerror}") from None
    else:
        click.echo(text, nl=False)
