"""`kvlint diff`: capacity and new findings between a git ref and the working tree."""

from __future__ import annotations

import sys

import click

from kvlint.cli.options import EXIT_FINDINGS, EXIT_OK, build_context, load_settings, write_output
from kvlint.cli.params import config_option, output_file_option, output_format_option


@click.command()
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--base", "base_ref", required=True, help="Git ref to compare against (branch, tag, commit; e.g. origin/main).")
@output_format_option(("text", "markdown", "json"), "text", "text, markdown (job summary, PR comment) or json")
@output_file_option()
@click.option("--max-capacity-regression", type=click.FloatRange(min=0), default=None, help="Fail when KV tokens or max concurrency of a deployment drop by more than this percent (config: max-capacity-regression).")
@click.option("--fail-on", type=click.Choice(("error", "warning", "info")), default=None, help="Lowest severity of a new finding that fails (default error).")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when the gate fails.")
@config_option
def diff(paths, base_ref, fmt, output_file, max_capacity_regression, fail_on, exit_zero, config_path):
    """Compare manifests between a git ref and the working tree: capacity and new findings.

    Exit 1 when a new finding is at or above --fail-on, or when KV tokens or max concurrency
    of a deployment drop by more than --max-capacity-regression percent.
    """
    # Imported on use: only this command runs git.
    from kvlint.diff.compare import compare
    from kvlint.report.diff_report import render_diff

    config = load_settings(config_path, fail_on=fail_on)
    context = build_context(config)
    limit = max_capacity_regression if max_capacity_regression is not None else config.max_capacity_regression
    result = compare(base_ref, list(paths) or ["."], context, max_capacity_regression=limit, fail_on=config.fail_on)
    write_output(render_diff(result, fmt), output_file)
    if exit_zero:
        sys.exit(EXIT_OK)
    sys.exit(EXIT_FINDINGS if result.fails() else EXIT_OK)
