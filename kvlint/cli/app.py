"""The `kvlint` command group: one line for every unexpected error, and each command's module
imported only when that command runs (or `kvlint --help` lists them).

Exit codes: 0 nothing at or above --fail-on; 1 findings at or above it; 2 usage, configuration or
internal error (one clean line, no traceback unless --verbose); `smoke` also 3 when it could not
run here.
"""

from __future__ import annotations

import importlib
from typing import Dict, List, Optional, Tuple

import click

from kvlint import __version__
from kvlint.cli.options import exit_on_error
from kvlint.inputs import forget_reads

__all__ = ["COMMANDS", "main"]

# name -> (module, attribute). `kvlint check` imports kvlint.cli.check and nothing of the other
# commands (capacity, diff, smoke, ablate, convert, facts, rules): start-up time is most of a
# one-file check.
COMMANDS: Dict[str, Tuple[str, str]] = {
    "check": ("kvlint.cli.check", "check"),
    "rule": ("kvlint.cli.rules", "rule"),
    "rules": ("kvlint.cli.rules", "rules"),
    "schema": ("kvlint.cli.rules", "schema"),
    "facts": ("kvlint.cli.facts", "facts"),
    "convert": ("kvlint.cli.convert", "convert"),
    "capacity": ("kvlint.cli.capacity", "capacity"),
    "smoke": ("kvlint.cli.smoke", "smoke"),
    "diff": ("kvlint.cli.diff", "diff"),
    "ablate": ("kvlint.cli.ablate", "ablate"),
    "plan": ("kvlint.cli.plan", "plan"),
}


class KvlintGroup(click.Group):
    """Commands loaded on use (click's lazy-group pattern); every unexpected exception becomes
    one line and exit 2."""

    def list_commands(self, ctx: click.Context) -> List[str]:
        return sorted(set(self.commands) | set(COMMANDS))

    def get_command(self, ctx: click.Context, cmd_name: str) -> Optional[click.Command]:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            module, attribute = COMMANDS[cmd_name]
            self.add_command(getattr(importlib.import_module(module), attribute), cmd_name)
        return self.commands.get(cmd_name)

    def invoke(self, ctx: click.Context):  # type: ignore[override]
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException, SystemExit):
            raise
        except (KeyboardInterrupt, Exception) as exc:  # noqa: BLE001 - the last line of defence
            exit_on_error(exc, bool(ctx.obj and ctx.obj.get("verbose")))


@click.group(cls=KvlintGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", "-V", prog_name="kvlint")
@click.option("-v", "--verbose", is_flag=True, help="Show tracebacks for internal errors.")
@click.pass_context
def main(ctx: click.Context, verbose: bool) -> None:
    """Lint LLM-serving deployments that use a quantized KV cache."""
    ctx.ensure_object(dict)
    ctx.obj["verbose"] = verbose
    forget_reads()  # the files this command reads, which its outputs may not overwrite
