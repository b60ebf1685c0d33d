"""`kvlint capacity` and `kvlint smoke`: commands that need the resolved deployments."""

from __future__ import annotations

import json
import sys
from typing import Any, List, Sequence, Tuple

import click


def _deployments(paths: Sequence[str], config) -> Tuple[List[Any], List[str]]:
    """(analyses, problems) for every Deployment document under paths.

    Documents that do not load get a one-line problem; `kvlint check` explains them in full.
    """
    from pathlib import Path

    from kvlint.analyze import analyze_deployment, manifest_path
    from kvlint.check import _display_path, discover_files, read_input
    from kvlint.load import load_bytes

    analyses: List[Any] = []
    problems: List[str] = []
    for path in discover_files(list(paths), config):
        display, raw = read_input(path)
        display = _display_path(display, Path.cwd())
        loaded = load_bytes(raw, display)
        for finding in loaded.findings:
            if finding.code in ("KV001", "KV004"):
                problems.append(f"{finding.file}:{finding.line}:{finding.column}: {finding.code} {finding.message}")
        for document in loaded.documents:
            data = document.data
            if not isinstance(data, dict) or data.get("apiVersion") != "kvlint/v1":
                continue
            from kvlint.schema import validate_document

            # The figures still come out (resolve reads invalid values as unknown), but a document
            # `kvlint check` rejects makes the command exit 1, as the exit-code contract says.
            for finding in validate_document(document):
                problems.append(f"{finding.file}:{finding.line}:{finding.column}: {finding.code} {finding.message}")
            if data.get("kind") == "Ablation":
                from kvlint.ablation import expand_for_capacity

                analyses.extend(expand_for_capacity(document, config))
                continue
            analyses.append(
                analyze_deployment(data, document.file, manifest_path(document), config.catalog_dirs, config.max_scale_overhead)
            )
    return analyses, problems


def register(group: click.Group) -> None:
    @group.command()
    @click.argument("paths", nargs=-1, required=True, type=click.Path())
    @click.option("--format", "fmt", type=click.Choice(("text", "json")), default="text", help="Readable table or JSON (docs/capacity.md).")
    @click.option("--output-file", "-o", type=click.Path(dir_okay=False), help="Write to a file instead of stdout.")
    @click.option("--config", "config_path", type=click.Path(dir_okay=False))
    def capacity(paths, fmt, output_file, config_path):
        """Print the corrected KV capacity of each manifest."""
        from kvlint.cli import EXIT_FINDINGS, EXIT_OK, _write
        from kvlint.config import load_config

        config = load_config(config_path)
        analyses, problems = _deployments(paths, config)
        for problem in problems:
            click.echo(f"kvlint capacity: {problem}", err=True)
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
            _write(json.dumps(documents, indent=2) + "\n", output_file)
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
            _write("\n".join(blocks), output_file)
        sys.exit(EXIT_FINDINGS if problems else EXIT_OK)

    @group.command()
    @click.argument("paths", nargs=-1, required=True, type=click.Path())
    @click.option("--device", type=click.Choice(("auto", "cuda", "cpu")), default="auto", help="Where to run the kernels (default: CUDA when visible).")
    @click.option("--format", "fmt", type=click.Choice(("text", "json")), default="text")
    @click.option("--layers", type=click.IntRange(min=1), default=None, help="Attention-check at most N layers per layer group.")
    @click.option("--output-file", "-o", type=click.Path(dir_okay=False))
    @click.option("--config", "config_path", type=click.Path(dir_okay=False))
    def smoke(paths, device, fmt, layers, output_file, config_path):
        """Run the quantized KV kernels on the device and prove nothing fell back.

        Exit 0 passed, 1 failed, 2 usage or internal error, 3 could not run here.
        """
        from kvlint.cli import _write
        from kvlint.config import load_config
        from kvlint.smoke import run_smoke

        config = load_config(config_path)
        analyses, problems = _deployments(paths, config)
        for problem in problems:
            click.echo(f"kvlint smoke: {problem}", err=True)
        deployments = [a.deployment for a in analyses if a.deployment is not None and a.deployment.layers]
        outcome = run_smoke(deployments, device=device, layers=layers, fmt=fmt)
        _write(outcome.text.rstrip("\n") + "\n", output_file)
        sys.exit(outcome.exit_code)

    @group.command()
    @click.argument("paths", nargs=-1, type=click.Path())
    @click.option("--base", "base_ref", required=True, help="Git ref to compare against (branch, tag, commit; e.g. origin/main).")
    @click.option("--format", "fmt", type=click.Choice(("text", "markdown", "json")), default="text", help="text (default), markdown (job summary, PR comment) or json.")
    @click.option("--output-file", "-o", type=click.Path(dir_okay=False), help="Write to a file instead of stdout.")
    @click.option("--max-capacity-regression", type=click.FloatRange(min=0), default=None, help="Fail when KV tokens or max concurrency of a deployment drop by more than this percent (config: max-capacity-regression).")
    @click.option("--fail-on", type=click.Choice(("error", "warning", "info")), default=None, help="Lowest severity of a new finding that fails (default error).")
    @click.option("--exit-zero", is_flag=True, help="Exit 0 even when the gate fails.")
    @click.option("--config", "config_path", type=click.Path(dir_okay=False))
    def diff(paths, base_ref, fmt, output_file, max_capacity_regression, fail_on, exit_zero, config_path):
        """Compare manifests between a git ref and the working tree: capacity and new findings.

        Exit 1 when a new finding is at or above --fail-on, or when KV tokens or max concurrency
        of a deployment drop by more than --max-capacity-regression percent.
        """
        from kvlint.cli import EXIT_FINDINGS, EXIT_OK, _setup, _write, build_context
        from kvlint.diff import compare
        from kvlint.report.diff_report import render_diff

        config = _setup(config_path, (), (), (), fail_on, None)
        context = build_context(config)
        limit = max_capacity_regression if max_capacity_regression is not None else config.max_capacity_regression
        result = compare(base_ref, list(paths) or ["."], context, max_capacity_regression=limit, fail_on=config.fail_on)
        _write(render_diff(result, fmt), output_file)
        if exit_zero:
            sys.exit(EXIT_OK)
        sys.exit(EXIT_FINDINGS if result.fails() else EXIT_OK)

    @group.command()
    @click.argument("path", type=click.Path(dir_okay=False))
    @click.option("--out", "-o", "out", type=click.Path(dir_okay=False), help="Write the ablation here (default: stdout).")
    @click.option("--force", is_flag=True, help="Overwrite --out when it exists.")
    @click.option("--config", "config_path", type=click.Path(dir_okay=False))
    def ablate(path, out, force, config_path):
        """Write the recommended four-step KV-cache ablation for a deployment.

        BF16 -> FP8 uncalibrated per-tensor -> FP8 calibrated per-head -> the same with the
        suspected layer group skipped, with empty result placeholders. Never overwrites --out
        without --force, and never the deployment it reads.
        """
        from pathlib import Path

        from kvlint.ablate import ablation_for_file
        from kvlint.check import UsageError
        from kvlint.cli import EXIT_OK, _write
        from kvlint.config import load_config

        config = load_config(config_path)
        if out is not None:
            if path != "-" and Path(out).resolve() == Path(path).resolve():
                raise UsageError(f"--out {out} is the deployment being read; kvlint never modifies its input")
            if Path(out).exists() and not force:
                raise UsageError(f"{out} exists; pass --force to overwrite it")
        text = ablation_for_file(path, out, config.catalog_dirs, config.max_scale_overhead)
        _write(text, out)
        if out is not None:
            click.echo(f"kvlint ablate: wrote {out}; fill in each step's results, then run kvlint check {out}", err=True)
        sys.exit(EXIT_OK)
