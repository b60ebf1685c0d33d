"""`kvlint smoke`: run the quantized KV kernels and prove nothing fell back."""

from __future__ import annotations

import sys

import click

from kvlint.cli.options import config_option, write_output
from kvlint.config import load_config


@click.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("--device", type=click.Choice(("auto", "cuda", "cpu")), default="auto", help="Where to run the kernels (default: CUDA when visible).")
@click.option("--format", "fmt", type=click.Choice(("text", "json")), default="text")
@click.option("--layers", type=click.IntRange(min=1), default=None, help="Attention-check at most N layers per layer group.")
@click.option("--output-file", "-o", type=click.Path(dir_okay=False))
@config_option
def smoke(paths, device, fmt, layers, output_file, config_path):
    """Run the quantized KV kernels on the device and prove nothing fell back.

    Exit 0 passed, 1 failed, 2 usage or internal error, 3 could not run here.
    """
    # Imported on use: the smoke test is the only command that may load torch.
    from kvlint.pipeline.documents import deployment_analyses
    from kvlint.smoke import run_smoke

    config = load_config(config_path)
    analyses, problems = deployment_analyses(paths, config)
    for problem in problems:
        click.echo(f"kvlint smoke: {problem}", err=True)
    deployments = [a.deployment for a in analyses if a.deployment is not None and a.deployment.layers]
    outcome = run_smoke(deployments, device=device, layers=layers, fmt=fmt)
    write_output(outcome.text.rstrip("\n") + "\n", output_file)
    sys.exit(outcome.exit_code)
