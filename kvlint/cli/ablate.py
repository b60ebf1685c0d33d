"""`kvlint ablate`: write the recommended KV-cache ablation for a deployment."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from kvlint.cli.options import EXIT_OK, write_output
from kvlint.cli.params import config_option, output_file_option
from kvlint.config import load_config
from kvlint.errors import UsageError


@click.command()
@click.argument("path", type=click.Path(dir_okay=False))
@output_file_option(legacy="--out", help="Write the ablation here (default: stdout).")
@click.option("--force", is_flag=True, help="Overwrite --output-file when it exists.")
@config_option
def ablate(path, output_file, force, config_path):
    """Write the recommended four-step KV-cache ablation for a deployment.

    BF16 -> FP8 uncalibrated per-tensor -> FP8 calibrated per-head -> the same with the
    suspected layer group skipped, with empty result placeholders. Never overwrites
    --output-file without --force, and never the deployment it reads.
    """
    out = output_file
    # Imported on use: only this command resolves one deployment into an ablation.
    from kvlint.ablation.recommend import ablation_for_file

    config = load_config(config_path)
    if out is not None:
        if path != "-" and Path(out).resolve() == Path(path).resolve():
            raise UsageError(f"--output-file {out} is the deployment being read; kvlint never modifies its input")
        if Path(out).exists() and not force:
            raise UsageError(f"{out} exists; pass --force to overwrite it")
    text = ablation_for_file(path, out, config.catalog_dirs, config.max_scale_overhead)
    write_output(text, out)
    if out is not None:
        click.echo(f"kvlint ablate: wrote {out}; fill in each step's results, then run kvlint check {out}", err=True)
    sys.exit(EXIT_OK)
