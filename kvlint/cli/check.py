"""`kvlint check`: lint manifests."""

from __future__ import annotations

import os
import sys

import click

from kvlint.cli.options import EXIT_FINDINGS, EXIT_OK, build_context, config_option, load_settings, write_output
from kvlint.report import CHECK_FORMATS, check_reporter


@click.command()
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--select", multiple=True, help="Rules to enable (codes, prefixes, names, ALL); replaces the config's.")
@click.option("--extend-select", multiple=True, help="Rules to enable in addition.")
@click.option("--ignore", multiple=True, help="Rules to disable.")
@click.option("--output-format", type=click.Choice(tuple(CHECK_FORMATS)), default=None, help="Output format (default full).")
@click.option("--output-file", "-o", type=click.Path(dir_okay=False), help="Write the report to a file instead of stdout.")
@click.option("--sarif-file", type=click.Path(dir_okay=False), help="Also write a SARIF 2.1.0 report to this file.")
@click.option("--fail-on", type=click.Choice(("error", "warning", "info")), default=None, help="Lowest severity that fails (default error).")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when findings fail the run.")
@config_option
@click.option("-v", "--verbose", is_flag=True, help="Show tracebacks for internal errors.")
@click.pass_context
def check(ctx, paths, select, extend_select, ignore, output_format, output_file, sarif_file, fail_on, exit_zero, config_path, verbose):
    """Lint manifests: files, directories (recursing) or - for stdin."""
    # Imported on use: the pipeline is the heaviest part of kvlint and only check-like commands need it.
    from kvlint.pipeline.check import run_check

    if verbose:
        ctx.obj["verbose"] = True
    config = load_settings(config_path, select, extend_select, ignore, fail_on, output_format)
    context = build_context(config)
    result = run_check(list(paths) or ["."], context)
    if not result.files:
        click.echo(
            "kvlint: warning: no manifests found (a file in a directory counts when it declares "
            "`apiVersion: kvlint/v1`; name a file to check it regardless)",
            err=True,
        )
    fmt = config.output_format
    write_output(check_reporter(fmt)(result, context.rulebook), output_file)
    if sarif_file:
        write_output(check_reporter("sarif")(result, context.rulebook), sarif_file)
    if fmt == "github" and os.environ.get("GITHUB_STEP_SUMMARY"):
        from kvlint.report.github import markdown_summary

        with open(os.environ["GITHUB_STEP_SUMMARY"], "a", encoding="utf-8") as handle:
            handle.write(markdown_summary(result))
    if exit_zero:
        sys.exit(EXIT_OK)
    sys.exit(EXIT_FINDINGS if result.fails(config.fail_on) else EXIT_OK)
