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
import sys
from typing import Any

__all__ = ["main", "run"]


def __getattr__(name: str) -> Any:
    """`kvlint.cli.main`, the click group, imported on first use (PEP 562)."""
    if name == "main":
        from kvlint.cli.app import main

        return main
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def run() -> None:
    """The console script. A plain `kvlint check [--output-format NAME] [PATH...]` runs without
    click (kvlint.cli.lint); anything else goes through the click group.

    Garbage collection is tuned, not patched: a lint run allocates few cyclic objects, so the
    collector's early passes are pure cost (higher thresholds); and when the command is done,
    everything it built (the catalog, the rulebook, the parsed files) is moved to the permanent
    generation (`gc.freeze`), so the interpreter's final collection at exit does not walk it
    again, which on one manifest costs about a fifth of the run. The interpreter then exits as
    usual: atexit handlers, stream flushing and module teardown all run."""
    gc.set_threshold(100_000, 50, 50)
    try:
        # Imported on use: `import kvlint.cli` stays free of side effects and of click.
        from kvlint.cli.lint import plain_check_arguments, run_plain_check

        plain = plain_check_arguments(sys.argv[1:])
        if plain is not None:
            run_plain_check(*plain)
        from kvlint.cli.app import main

        main()
    finally:
        gc.freeze()
