"""`kvlint facts`: the facts document each manifest resolves to, as rule conditions read it."""

from __future__ import annotations

import json
import sys

import click

from kvlint.cli.options import EXIT_FINDINGS, EXIT_OK, network_policy, write_output
from kvlint.cli.params import config_option
from kvlint.config import load_config


@click.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("--output-file", "-o", type=click.Path(dir_okay=False), help="Write to a file instead of stdout.")
@config_option
def facts(paths, output_file, config_path):
    """Print each manifest's facts document as JSON (what rule conditions read; see docs/facts.md).

    One JSON list with one object per deployment or ablation variant. Exit 1 when a document has
    schema errors (its facts are still printed: resolve reads invalid values as unknown).
    """
    # Imported on use: only the commands that resolve deployments load the pipeline.
    from kvlint.pipeline.documents import deployment_analyses

    config = load_config(config_path)
    network_policy(config)
    analyses, problems = deployment_analyses(paths, config)
    for problem in problems:
        click.echo(f"kvlint facts: {problem}", err=True)
    documents = [analysis.facts for analysis in analyses]
    write_output(json.dumps(documents, indent=2, sort_keys=True, default=str) + "\n", output_file)
    sys.exit(EXIT_FINDINGS if problems else EXIT_OK)
