"""`kvlint check`: lint manifests (the options; the work is kvlint.cli.lint)."""

from __future__ import annotations

import click

from kvlint.cli.lint import lint
from kvlint.cli.params import config_option
from kvlint.report import CHECK_FORMATS


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
@click.option("--strict/--no-strict", default=None,
              help="Fail when a check could not run (KV201-KV203, KV207, KV208, KV609 count as failures; config: strict).")
@click.option("-q", "--quiet", is_flag=True, help="Print the findings and nothing else: no summary, nothing on success.")
@click.option("--statistics", is_flag=True, help="Print how many findings each rule has instead of the findings.")
@click.option("--show-files", is_flag=True, help="Print the files that would be checked, and exit.")
@click.option("--show-settings", is_flag=True,
              help="Print the configuration that applies to the first path named (its nearest kvlint.toml), and exit.")
@click.option("--respect-gitignore/--no-respect-gitignore", default=None,
              help="Skip what .gitignore files ignore when walking directories (default; config: respect-gitignore).")
@click.option("--offline", is_flag=True,
              help="Never fetch a model's config.json from the Hugging Face Hub (config: offline; also HF_HUB_OFFLINE=1).")
@config_option
@click.option("-v", "--verbose", is_flag=True, help="Show tracebacks for internal errors.")
@click.pass_context
def check(ctx, paths, select, extend_select, ignore, output_format, output_file, sarif_file, fail_on, exit_zero, strict,
          quiet, statistics, show_files, show_settings, respect_gitignore, offline, config_path, verbose):
    """Lint manifests: files, directories (recursing) or - for stdin."""
    lint(ctx.obj, paths, select, extend_select, ignore, output_format, output_file, sarif_file, fail_on, exit_zero,
         config_path, verbose, strict=strict, quiet=quiet, statistics=statistics, show_files=show_files,
         show_settings=show_settings, respect_gitignore=respect_gitignore, offline=offline)
