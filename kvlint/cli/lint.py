"""`kvlint check`'s work, without click: the click command (kvlint.cli.check) calls `lint`, and
so does the console script for a plain `kvlint check [--output-format NAME] [PATH...]`
(`plain_check_arguments`), which then never imports click: on one manifest, click's import and
parsing are a tenth of the run.

The plain path is taken only when click would parse the arguments into exactly those paths, that
output format and the defaults: the first argument `check`; at most one `--output-format NAME` or
`--output-format=NAME` whose NAME is one of the formats (click.Choice, case-sensitive); every
other argument a path that does not start with `-` (so no other option, no `--`, no `-` for
stdin), each readable or missing (click.Path refuses an unreadable one with a usage error of its
own); and no shell-completion request in the environment. Anything else goes through click.
Output is written as click.echo writes it (kvlint.cli.options.echo) and errors end as the command
group ends them (kvlint.cli.options.exit_on_error), so both ways print the same bytes and exit
with the same code.
"""

from __future__ import annotations

import os
import sys
from typing import List, NoReturn, Optional, Sequence, Tuple

from kvlint.cli.options import EXIT_FINDINGS, EXIT_OK, build_context, echo, exit_on_error, load_resolver, write_output
from kvlint.errors import UsageError
from kvlint.findings import Finding
from kvlint.inputs import forget_reads
from kvlint.report import CHECK_FORMATS, check_reporter


def lint(
    obj: dict,
    paths: Sequence[str],
    select: Sequence[str] = (),
    extend_select: Sequence[str] = (),
    ignore: Sequence[str] = (),
    output_format: Optional[str] = None,
    output_file: Optional[str] = None,
    sarif_file: Optional[str] = None,
    fail_on: Optional[str] = None,
    exit_zero: bool = False,
    config_path: Optional[str] = None,
    verbose: bool = False,
    strict: Optional[bool] = None,
    quiet: bool = False,
    statistics: bool = False,
    show_files: bool = False,
    show_settings: bool = False,
    respect_gitignore: Optional[bool] = None,
    offline: bool = False,
) -> NoReturn:
    """Lint `paths` (files, directories, - for stdin; none: the current directory), write the
    report and exit with the run's code. `obj` is the command group's state (verbose)."""
    # Imported on use: the pipeline is the heaviest part of kvlint and only check-like commands need it.
    from kvlint.pipeline.check import Contexts, run_check

    if verbose:
        obj["verbose"] = True
    resolver = load_resolver(config_path, select, extend_select, ignore, fail_on, output_format, strict,
                             respect_gitignore, offline)
    # Run-wide settings (output-format, fail-on, strict) come from the configuration found from
    # the current directory (or --config); each file's checks from its nearest one.
    config = resolver.base
    if show_settings:
        from kvlint.cli.settings import settings_text

        # As ruff: the settings of the first path named (the current directory's when none).
        shown = resolver.for_path(paths[0]) if paths else config
        write_output(settings_text(shown), output_file)
        sys.exit(EXIT_OK)
    if show_files:
        from kvlint.cli.settings import files_text

        write_output(files_text(list(paths) or ["."], config, resolver), output_file)
        sys.exit(EXIT_OK)
    fmt = config.output_format
    if statistics and fmt not in TEXT_FORMATS + ("json",):
        raise UsageError(f"--statistics prints text or json, not --output-format {fmt}")
    context = build_context(config)
    contexts = Contexts(resolver, build_context, context)
    result = run_check(list(paths) or ["."], context, contexts)
    rulebook = contexts.rulebook()
    if not result.files and not quiet:
        echo(
            "kvlint: warning: no manifests found: nothing to check (kvlint reads `apiVersion: kvlint/v1` "
            "manifests and, unless `native-formats` narrows them, Kubernetes workloads, compose files, "
            "Helm values, engine configs, serve scripts, Dockerfiles, systemd units and Modelfiles; "
            "Services and ConfigMaps alone hold no workload)",
            err=True,
        )
    if statistics:
        from kvlint.cli.settings import statistics_text

        report = statistics_text(result, fmt)
    else:
        report = check_reporter(fmt)(result, rulebook)
    if quiet and fmt not in ("json", "sarif"):
        from kvlint.report.text import summary_line

        summary = summary_line(result) + "\n"
        if report.endswith(summary):  # only the findings: no summary, nothing on success
            report = report[: -len(summary)]
    could_not_run = could_not_run_line(result.could_not_run()) if config.strict else None
    if could_not_run and fmt in TEXT_FORMATS and not statistics:
        report += could_not_run + "\n"  # the text formats' summary names them
    if fmt in TEXT_FORMATS and not statistics and not output_file and colour_wanted(sys.stdout):
        from kvlint.cli.settings import colourize

        echo(colourize(report, result.findings), nl=False, colour=True)
    else:
        write_output(report, output_file)
    if could_not_run and (fmt not in TEXT_FORMATS or statistics):
        echo(f"kvlint: {could_not_run}", err=True)  # machine formats stay as documented
    if sarif_file:
        write_output(check_reporter("sarif")(result, rulebook), sarif_file)
    if fmt == "github" and os.environ.get("GITHUB_STEP_SUMMARY"):
        from kvlint.report.github import markdown_summary

        with open(os.environ["GITHUB_STEP_SUMMARY"], "a", encoding="utf-8") as handle:
            handle.write(markdown_summary(result))
    if exit_zero:
        sys.exit(EXIT_OK)
    sys.exit(EXIT_FINDINGS if result.fails(config.fail_on, config.strict) else EXIT_OK)


TEXT_FORMATS = ("full", "concise")  # for people: a summary line, colour on a terminal


def colour_wanted(stream) -> bool:
    """Colour for a terminal: NO_COLOR (set and not empty) turns it off, FORCE_COLOR (set and not
    empty) on even when the stream is not a terminal; else only a terminal that is not `dumb`."""
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    try:
        return bool(stream.isatty()) and os.environ.get("TERM") != "dumb"
    except (AttributeError, ValueError):
        return False


SHOWN = 10  # could-not-run findings named in the strict summary line; the rest are counted


def could_not_run_line(findings: Sequence[Finding]) -> Optional[str]:
    """`--strict`'s summary line: how many checks could not run, and which (None: all ran)."""
    if not findings:
        return None
    named = [f"{f.code} {f.name} ({f.file}:{f.line}:{f.column})" for f in findings[:SHOWN]]
    if len(findings) > SHOWN:
        named.append(f"and {len(findings) - SHOWN} more")
    count = len(findings)
    return f"{count} check{'s' if count != 1 else ''} could not run (--strict fails on them): {', '.join(named)}"


def plain_check_arguments(argv: Sequence[str]) -> Optional[Tuple[List[str], Optional[str]]]:
    """(paths, output format) of a plain `kvlint check [PATH...]`, which may also name one
    `--output-format NAME` (or `--output-format=NAME`) that click would accept, else None (see
    the module's docstring)."""
    if not argv or argv[0] != "check" or any(name.endswith("_COMPLETE") for name in os.environ):
        return None
    paths: List[str] = []
    output_format: Optional[str] = None
    words = iter(argv[1:])
    for word in words:
        if word == "--output-format" or word.startswith("--output-format="):
            value = word.partition("=")[2] if "=" in word else next(words, None)
            if output_format is not None or value not in CHECK_FORMATS:
                return None  # repeated, missing or unknown: click's own handling and message
            output_format = value
        elif not word or word.startswith("-"):
            return None
        else:
            paths.append(word)
    for path in paths:
        try:
            os.stat(path)
        except OSError:
            continue  # click passes a missing path on; the pipeline reports it
        except ValueError:  # a NUL in the name: whatever click makes of it
            return None
        if not os.access(path, os.R_OK):
            return None
    return paths, output_format


def plain_check_paths(argv: Sequence[str]) -> Optional[List[str]]:
    """The paths of a plain `kvlint check [PATH...]` without any option, else None."""
    plain = plain_check_arguments(argv)
    return plain[0] if plain is not None and plain[1] is None else None


def run_plain_check(paths: Sequence[str], output_format: Optional[str] = None) -> NoReturn:
    """`kvlint check [--output-format NAME] PATHS` as the command group runs it, without click."""
    obj = {"verbose": False}
    forget_reads()  # as the group does: the files this command reads, which its outputs may not overwrite
    try:
        lint(obj, paths, output_format=output_format)
    except (KeyboardInterrupt, Exception) as exc:  # noqa: BLE001 - as the command group
        exit_on_error(exc, bool(obj.get("verbose")))
