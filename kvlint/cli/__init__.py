"""The command line: one module per command, all thin (parse options, call the pipeline or a
feature, pick a reporter, set the exit code).

Exit codes: 0 nothing at or above --fail-on; 1 findings at or above it; 2 usage, configuration or
internal error (one clean line, no traceback unless --verbose); `smoke` also 3 when it could not
run here.
"""

from __future__ import annotations

import gc
import os
import re
import sys

import click

from kvlint import __version__
from kvlint.cli import ablate, capacity, check, convert, diff, facts, rules, smoke
from kvlint.cli.options import EXIT_ERROR
from kvlint.errors import KvlintError
from kvlint.inputs import forget_reads

__all__ = ["main", "run"]


class KvlintGroup(click.Group):
    """Turns every unexpected exception into one line and exit 2."""

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
                import traceback  # only for --verbose

                traceback.print_exc()
            message = one_line(exc.one_line() if isinstance(exc, KvlintError) else
                               f"internal error: {type(exc).__name__}: {exc} (run with --verbose for the traceback)")
            click.echo(f"kvlint: error: {message}", err=True)
            sys.exit(EXIT_ERROR)


def one_line(message: str) -> str:
    """Errors are one line: PyYAML's errors in a rule or catalog file span several
    ('while parsing ...\\n  in "<unicode string>", line 4, column 10\\ndid not find ...')."""
    message = re.sub(r'\s*in "<[^>]*>",', " at", message)
    parts = [part.strip() for part in message.splitlines() if part.strip()]
    return "; ".join(parts)


@click.group(cls=KvlintGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", "-V", prog_name="kvlint")
@click.option("-v", "--verbose", is_flag=True, help="Show tracebacks for internal errors.")
@click.pass_context
def main(ctx: click.Context, verbose: bool) -> None:
    """Lint LLM-serving deployments that use a quantized KV cache."""
    ctx.ensure_object(dict)
    ctx.obj["verbose"] = verbose
    forget_reads()  # the files this command reads, which its outputs may not overwrite


for _command in (
    check.check,
    rules.rule,
    rules.rules,
    rules.schema,
    facts.facts,
    convert.convert,
    capacity.capacity,
    smoke.smoke,
    diff.diff,
    ablate.ablate,
):
    main.add_command(_command)


def run() -> None:
    """The console script: `main`, then a fast exit.

    A lint run allocates few cyclic objects, so the collector's start-up passes are pure cost;
    and tearing down the interpreter module by module costs more than the run's own work on one
    file. Output is flushed, then the process exits with click's code. (`python -m kvlint` and
    the tests call `main` and exit normally.)
    """
    gc.set_threshold(100_000, 50, 50)
    try:
        main()
        code = 0
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
        if exit_.code is not None and not isinstance(exit_.code, int):
            print(exit_.code, file=sys.stderr)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (BrokenPipeError, ValueError):
        code = code or 2
    os._exit(code)
