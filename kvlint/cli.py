"""The command line. Thin: parse options, call the pipeline, pick a reporter, set the exit code.

Exit codes (README.md): 0 nothing at or above --fail-on; 1 findings at or above it;
2 usage, configuration or internal error (one clean line, no traceback unless --verbose);
`smoke` also 3 when it could not run here.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Optional

import click

from kvlint import __version__

OUTPUT_FORMATS = ("full", "concise", "json", "github", "sarif")
EXIT_OK, EXIT_FINDINGS, EXIT_ERROR, EXIT_SKIPPED = 0, 1, 2, 3


class KvlintGroup(click.Group):
    """Turns every unexpected exception into one line and exit 2 (README.md, exit codes)."""

    def invoke(self, ctx: click.Context):  # type: ignore[override]
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException, SystemExit):
            raise
        except KeyboardInterrupt:
            click.echo("kvlint: interrupted", err=True)
            sys.exit(EXIT_ERROR)
        except BrokenPipeError:
            sys.exit(EXIT_ERROR)
        except Exception as exc:  # noqa: BLE001 - the last line of defence
            if ctx.obj and ctx.obj.get("verbose"):
                import traceback

                traceback.print_exc()
            message = _one_line(_known_error_message(exc))
            click.echo(f"kvlint: error: {message}", err=True)
            sys.exit(EXIT_ERROR)


def _one_line(message: str) -> str:
    """The exit-code contract promises one line: PyYAML's errors in a rule or catalog file span several
    ('while parsing ...\n  in "<unicode string>", line 4, column 10\ndid not find ...')."""
    message = re.sub(r'\s*in "<[^>]*>",', " at", message)
    parts = [part.strip() for part in message.splitlines() if part.strip()]
    return "; ".join(parts)


def _known_error_message(exc: Exception) -> str:
    from kvlint.check import UsageError
    from kvlint.config import ConfigError

    if isinstance(exc, (UsageError, ConfigError)):
        return str(exc)
    try:
        from kvlint.rulebook import RuleError

        if isinstance(exc, RuleError):
            return str(exc)
    except ImportError:  # pragma: no cover
        pass
    from kvlint.catalog.engines import CatalogError as EngineCatalogError
    from kvlint.catalog.gpus import CatalogError

    if isinstance(exc, (CatalogError, EngineCatalogError)):  # models.py raises gpus' class
        return f"invalid catalog: {exc}"
    return f"internal error: {type(exc).__name__}: {exc} (run with --verbose for the traceback)"


@click.group(cls=KvlintGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", "-V", prog_name="kvlint")
@click.option("-v", "--verbose", is_flag=True, help="Show tracebacks for internal errors.")
@click.pass_context
def main(ctx: click.Context, verbose: bool) -> None:
    """Lint LLM-serving deployments that use a quantized KV cache."""
    ctx.ensure_object(dict)
    ctx.obj["verbose"] = verbose


def _write(text: str, output_file: Optional[str]) -> None:
    if output_file:
        try:
            Path(output_file).write_text(text, encoding="utf-8")
        except OSError as exc:
            from kvlint.check import UsageError

            raise UsageError(f"cannot write {output_file}: {exc.strerror}") from None
    else:
        click.echo(text, nl=False)


def _setup(config_path: Optional[str], select, extend_select, ignore, fail_on, output_format):
    """Config file, then command-line overrides."""
    from dataclasses import replace

    from kvlint.config import load_config, split_csv

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


def build_context(config):
    from kvlint.analyze import semantic_analyzer
    from kvlint.check import CheckContext, UsageError, enabled_codes
    from kvlint.rulebook import load_rulebook

    rulebook = load_rulebook(tuple(config.rules_dirs))
    enabled, unknown = enabled_codes(rulebook, config)
    if unknown:
        raise UsageError(
            "unknown rule selector(s): " + ", ".join(unknown) + " (KV902; see `kvlint rules`)"
        )
    return CheckContext(
        config=config,
        rulebook=rulebook,
        enabled=enabled,
        analyzers=(semantic_analyzer,),
        display_root=Path.cwd(),
    )


@main.command()
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--select", multiple=True, help="Rules to enable (codes, prefixes, names, ALL); replaces the config's.")
@click.option("--extend-select", multiple=True, help="Rules to enable in addition.")
@click.option("--ignore", multiple=True, help="Rules to disable.")
@click.option("--output-format", type=click.Choice(OUTPUT_FORMATS), default=None, help="Output format (default full).")
@click.option("--output-file", "-o", type=click.Path(dir_okay=False), help="Write the report to a file instead of stdout.")
@click.option("--sarif-file", type=click.Path(dir_okay=False), help="Also write a SARIF 2.1.0 report to this file.")
@click.option("--fail-on", type=click.Choice(("error", "warning", "info")), default=None, help="Lowest severity that fails (default error).")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when findings fail the run.")
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help="Path to kvlint.toml or pyproject.toml.")
@click.option("-v", "--verbose", is_flag=True, help="Show tracebacks for internal errors.")
@click.pass_context
def check(ctx, paths, select, extend_select, ignore, output_format, output_file, sarif_file, fail_on, exit_zero, config_path, verbose):
    """Lint manifests: files, directories (recursing) or - for stdin."""
    from kvlint.check import run_check

    if verbose:
        ctx.obj["verbose"] = True

    config = _setup(config_path, select, extend_select, ignore, fail_on, output_format)
    context = build_context(config)
    result = run_check(list(paths) or ["."], context)
    if not result.files:
        click.echo(
            "kvlint: warning: no manifests found (a file in a directory counts when it declares "
            "`apiVersion: kvlint/v1`; name a file to check it regardless)",
            err=True,
        )
    fmt = config.output_format
    _write(render_check(result, context, fmt), output_file)
    if sarif_file:
        _write(render_check(result, context, "sarif"), sarif_file)
    if fmt == "github" and os.environ.get("GITHUB_STEP_SUMMARY"):
        from kvlint.report.github import markdown_summary

        with open(os.environ["GITHUB_STEP_SUMMARY"], "a", encoding="utf-8") as handle:
            handle.write(markdown_summary(result))
    if exit_zero:
        sys.exit(EXIT_OK)
    sys.exit(EXIT_FINDINGS if result.fails(config.fail_on) else EXIT_OK)


def render_check(result, context, fmt: str) -> str:
    if fmt == "json":
        from kvlint.report.json_report import format_json

        return format_json(result)
    if fmt == "sarif":
        from kvlint.report.sarif import format_sarif

        return format_sarif(result, context.rulebook)
    if fmt == "github":
        from kvlint.report.github import format_github

        return format_github(result)
    if fmt == "concise":
        from kvlint.report.text import format_concise

        return format_concise(result)
    from kvlint.report.text import format_full

    return format_full(result, context.rulebook)


@main.command()
@click.argument("code_or_name")
@click.option("--config", "config_path", type=click.Path(dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(("text", "json")), default="text")
def rule(code_or_name: str, config_path: Optional[str], fmt: str):
    """Explain one rule (code or name)."""
    from kvlint.config import load_config
    from kvlint.rulebook import load_rulebook
    from kvlint.report.text import format_rule_doc

    config = load_config(config_path)
    found = load_rulebook(tuple(config.rules_dirs)).get(code_or_name)
    if found is None:
        click.echo(f"kvlint: error: no rule {code_or_name!r} (see `kvlint rules`)", err=True)
        sys.exit(EXIT_ERROR)
    if fmt == "json":
        import json

        click.echo(json.dumps(rule_as_json(found), indent=2))
    else:
        click.echo(format_rule_doc(found), nl=False)


def rule_as_json(found) -> dict:
    return {
        "code": found.code,
        "name": found.name,
        "severity": found.severity,
        "summary": found.summary,
        "rationale": found.rationale,
        "remediation": found.remediation,
        "sources": [dict(s) for s in found.sources],
        "engines": list(found.engines),
        "versions": found.versions,
        "stage": found.stage,
        "url": found.url,
    }


@main.command()
@click.option("--config", "config_path", type=click.Path(dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(("text", "json")), default="text")
@click.option("--write-docs", "docs_dir", type=click.Path(file_okay=False),
              help="Write one Markdown page per rule ({CODE}.md) and an index README.md into DIR.")
def rules(config_path: Optional[str], fmt: str, docs_dir: Optional[str]):
    """List every rule."""
    from kvlint.config import load_config
    from kvlint.rulebook import load_rulebook
    from kvlint.report.text import format_rules_table

    config = load_config(config_path)
    book = list(load_rulebook(tuple(config.rules_dirs)))
    if docs_dir:
        from kvlint.docs import write_rule_docs

        try:
            changed = write_rule_docs(book, Path(docs_dir))
        except OSError as exc:
            from kvlint.check import UsageError

            raise UsageError(f"cannot write {docs_dir}: {exc.strerror}") from None
        click.echo(f"{len(changed)} page(s) written to {docs_dir} ({len(book)} rules)")
        return
    if fmt == "json":
        import json

        click.echo(json.dumps([rule_as_json(r) for r in book], indent=2))
    else:
        click.echo(format_rules_table(book), nl=False)


@main.command()
@click.option("--output", "-o", type=click.Path(dir_okay=False), help="Write the schema to a file.")
@click.option("--name", type=click.Choice(("manifest", "rule", "config")), default="manifest")
def schema(output: Optional[str], name: str):
    """Print the manifest JSON Schema (for editors: yaml-language-server)."""
    from kvlint.resources import schemas_dir

    files = {"manifest": "manifest.v1.json", "rule": "rule.json", "config": "config.json"}
    text = (schemas_dir() / files[name]).read_text(encoding="utf-8")
    _write(text, output)


def _register_optional_commands() -> None:
    """Commands defined in their own modules (capacity, smoke, diff, ablate)."""
    from kvlint import commands

    commands.register(main)


_register_optional_commands()
