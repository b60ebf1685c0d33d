"""Command-line options that several click commands share."""

from __future__ import annotations

import click

config_option = click.option(
    "--config", "config_path", type=click.Path(dir_okay=False), help="Path to kvlint.toml or pyproject.toml."
)
