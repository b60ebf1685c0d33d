"""The command line: one module per command, all thin (parse options, call the pipeline or a
feature, pick a reporter, set the exit code). The click group is in `kvlint.cli.app`; this
module holds the console script (`run`) and hands out `main` on first use, so that importing
`kvlint.cli` costs nothing.

Exit codes: 0 nothing at or above --fail-on; 1 findings at or above it; 2 usage, configuration or
internal error (one clean line, no traceback unless --verbose); `smoke` also 3 when it could not
run here.
"""

from __future__ import annotations

import gc
import os
import sys
from typing import Any

__all__ = ["main", "run"]


def __getattr__(name: str) -> Any:
    """`kvlint.cli.main`, the click group, imported on first use (PEP 562)."""
    if name == "main":
        # Imported on use: the console script (`run`) first turns on the compiled-method cache.
        from kvlint.cli.app import main

        return main
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def run() -> None:
    """The console script: `main`, then a fast exit.

    Start-up is most of a one-file check, so: dataclass methods come compiled from the previous
    run (kvlint.cli.codecache); a plain `kvlint check [PATH...]` does not import click; a lint run allocates few cyclic objects, so the collector's
    start-up passes are pure cost; and tearing down the interpreter module by module costs more
    than the run's own work on one file. Output is flushed, then the process exits with click's
    code. (`python -m kvlint` and the tests call `main` and exit normally.)
    """
    gc.set_threshold(100_000, 50, 50)
    # Imported on use: `import kvlint.cli` stays free of side effects and of click.
    from kvlint.cli.codecache import cached_dataclass_methods

    with cached_dataclass_methods():
        try:
            # Imported here, while the methods' table is active; a plain `kvlint check [PATH...]`
            # runs without click (kvlint.cli.lint), anything else through the click group.
            from kvlint.cli.lint import plain_check_paths, run_plain_check

            paths = plain_check_paths(sys.argv[1:])
            if paths is not None:
                run_plain_check(paths)
            from kvlint.cli.app import main

            main()
            code = 0
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
            if exit_.code is not None and not isinstance(exit_.code, int):
                print(exit_.code, file=sys.stderr)
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:  # None when the descriptor was closed (`kvlint check >&-`)
                stream.flush()
    except (BrokenPipeError, ValueError):
        code = code or 2
    os._exit(code)
