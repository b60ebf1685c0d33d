"""`kvlint capacity`: the corrected KV capacity of each manifest."""

from __future__ import annotations

import json
import sys
from typing import Any, List

import click

from kvlint.cli.options import EXIT_FINDINGS, EXIT_OK, network_policy, write_output
from kvlint.cli.params import config_option, output_file_option, output_format_option
from kvlint.config import load_config
from kvlint.text import printable


@click.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@output_format_option(("text", "json"), "text", "Readable table or JSON")
@output_file_option()
@click.option("--from-log", "from_log", type=click.Path(dir_okay=False),
              help="A vLLM or SGLang start-up log: show the prediction against what the engine logged, term by term.")
@click.option("--fail-on", type=click.Choice(("error", "warning", "info")), default=None,
              help="Lowest severity of a capacity-gate finding (KV6xx) that fails (default error).")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when the capacity gate fails.")
@config_option
def capacity(paths, fmt, output_file, config_path, from_log, fail_on, exit_zero):
    """Print the corrected KV capacity of each manifest.

    Exit 1 when a manifest has a schema or syntax error, or when a capacity-gate finding (KV6xx:
    a sequence of max_model_len that does not fit, no pool, a target missed) is at or above
    --fail-on, as `kvlint check` would fail on it. With --from-log only the former.
    """
    # Imported on use: only the capacity-like commands resolve deployments.
    from kvlint.pipeline.documents import deployment_analyses

    config = load_config(config_path)
    network_policy(config)
    analyses, problems = deployment_analyses(paths, config)
    for problem in problems:
        click.echo(f"kvlint capacity: {problem}", err=True)
    if from_log is not None:  # a comparison with what the engine logged, not the gate
        _from_log(analyses, from_log, fmt, output_file)
        sys.exit(EXIT_FINDINGS if problems and not exit_zero else EXIT_OK)
    _report(analyses, fmt, output_file)
    gate = _capacity_gate(paths, config_path, fail_on)
    for finding in gate:
        click.echo(f"kvlint capacity: {printable(finding.one_line())}", err=True)
    sys.exit(EXIT_FINDINGS if (problems or gate) and not exit_zero else EXIT_OK)


def _capacity_gate(paths, config_path, fail_on) -> List[Any]:
    """The capacity-gate findings (KV6xx) at or above fail-on that `kvlint check` reports on the
    same paths with the same configuration (selection, per-file ignores and suppressions apply)."""
    from kvlint.cli.options import build_context, load_settings
    from kvlint.findings import severity_rank
    from kvlint.pipeline.check import run_check

    files = [path for path in paths if path != "-"]  # stdin was read once, for the figures
    if not files:
        return []
    config = load_settings(config_path, fail_on=fail_on)
    threshold = severity_rank(config.fail_on)
    result = run_check(files, build_context(config))
    return [f for f in result.findings if f.code.startswith("KV6") and severity_rank(f.severity) >= threshold]


def _report(analyses: List[Any], fmt: str, output_file) -> None:
    """The capacity table (text) or JSON of every analysis."""
    if fmt == "json":
        documents = []
        for analysis in analyses:
            if analysis.capacity is None:
                continue
            entry = analysis.capacity.to_json()
            variant = analysis.facts.get("variant")
            if variant:
                entry["variant"] = variant
            documents.append(entry)
        write_output(json.dumps(documents, indent=2) + "\n", output_file)
    else:
        from kvlint.report.ablation_table import render_ablation_table
        from kvlint.report.capacity_table import render_capacity_text

        # Consecutive variants of one ablation go side by side; deployments stay one block each.
        blocks: List[str] = []
        group: List[Any] = []
        for analysis in analyses + [None]:
            key = analysis.facts.get("ablation_id") if analysis is not None else None
            if group and key != group[0].facts.get("ablation_id"):
                blocks.append(render_ablation_table(group))
                group = []
            if key is not None:
                group.append(analysis)
            elif analysis is not None and analysis.capacity is not None:
                blocks.append(render_capacity_text([analysis.capacity]))
        write_output("\n".join(blocks), output_file)


MAX_LOG_BYTES = 64 * 1024 * 1024  # a server's start-up log; the figures are in its first lines


def _from_log(analyses: List[Any], log_path: str, fmt: str, output_file) -> None:
    """Each manifest's prediction beside the start-up log's figures (`--from-log`)."""
    from kvlint.capacity.startup_log import parse_startup_log
    from kvlint.errors import UsageError
    from kvlint.report.log_compare import compare_with_log, render_log_comparison

    from kvlint.inputs import InputError, read_bounded

    try:  # bounded and non-blocking, and recorded: -o may not overwrite the log
        raw = read_bounded(log_path, MAX_LOG_BYTES)
    except InputError as exc:
        raise UsageError(f"--from-log {log_path}: {exc.message}") from None
    if len(raw) > MAX_LOG_BYTES:
        raise UsageError(f"--from-log {log_path}: larger than {MAX_LOG_BYTES:,} bytes; pass the start-up part of the log")
    log = parse_startup_log(raw.decode("utf-8", errors="replace"))
    results = [compare_with_log(a.capacity, a.deployment, log)
               for a in analyses if a.capacity is not None]
    if fmt == "json":
        write_output(json.dumps(results, indent=2) + "\n", output_file)
    else:
        write_output("\n".join(render_log_comparison(r) for r in results), output_file)
