"""`kvlint rule`, `kvlint rules` and `kvlint schema`: what kvlint checks, and its schemas."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Optional

import click

from kvlint.cli.options import EXIT_ERROR, write_output
from kvlint.cli.params import config_option, output_file_option, output_format_option
from kvlint.config import load_config
from kvlint.errors import UsageError
from kvlint.resources import schemas_dir
from kvlint.rulebook import Rule, load_rulebook


def rule_as_json(found: Rule) -> dict:
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


@click.command()
@click.argument("code_or_name")
@config_option
@output_format_option(("text", "json"), "text", "Markdown-like text or JSON")
@output_file_option()
def rule(code_or_name: str, config_path: Optional[str], fmt: str, output_file: Optional[str]):
    """Explain one rule (code or name)."""
    from kvlint.report.text import format_rule_doc

    config = load_config(config_path)
    found = load_rulebook(tuple(config.rules_dirs)).get(code_or_name)
    if found is None:
        click.echo(f"kvlint: error: no rule {code_or_name!r} (see `kvlint rules`)", err=True)
        sys.exit(EXIT_ERROR)
    if fmt == "json":
        write_output(json.dumps(rule_as_json(found), indent=2) + "\n", output_file)
    else:
        write_output(format_rule_doc(found), output_file)


@click.command()
@config_option
@output_format_option(("text", "json"), "text", "A table or JSON")
@output_file_option()
@click.option("--write-docs", "docs_dir", type=click.Path(file_okay=False),
              help="Write one Markdown page per rule ({CODE}.md) and an index README.md into DIR.")
def rules(config_path: Optional[str], fmt: str, output_file: Optional[str], docs_dir: Optional[str]):
    """List every rule."""
    from kvlint.report.text import format_rules_table

    config = load_config(config_path)
    book = list(load_rulebook(tuple(config.rules_dirs)))
    if docs_dir:
        from kvlint.report.rule_docs import write_rule_docs

        try:
            changed = write_rule_docs(book, Path(docs_dir))
        except OSError as exc:
            raise UsageError(f"cannot write {docs_dir}: {exc.strerror}") from None
        click.echo(f"{len(changed)} page(s) written to {docs_dir} ({len(book)} rules)")
        return
    if fmt == "json":
        write_output(json.dumps([rule_as_json(r) for r in book], indent=2) + "\n", output_file)
    else:
        write_output(format_rules_table(book), output_file)


SCHEMA_FILES = {"manifest": "manifest.v1.json", "rule": "rule.json", "config": "config.json", "facts": "facts.json"}


@click.command()
@output_file_option(legacy="--output", help="Write the schema to a file.")
@click.option("--name", type=click.Choice(tuple(SCHEMA_FILES)), default="manifest")
def schema(output_file: Optional[str], name: str):
    """Print the manifest JSON Schema (for editors: yaml-language-server)."""
    text = (schemas_dir() / SCHEMA_FILES[name]).read_text(encoding="utf-8")
    write_output(text, output_file)
