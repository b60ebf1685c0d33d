"""What every command shares: exit codes, configuration with command-line overrides, the check
context, writing a report to stdout or a file, and how a run ends on an error. Without click:
a plain `kvlint check` runs without importing it (kvlint.cli.lint)."""

from __future__ import annotations

import codecs
import errno
import io
import os
import re
import stat
import sys
from dataclasses import replace
from pathlib import Path
from typing import NoReturn, Optional, Sequence

from kvlint.config import Config, ConfigResolver, load_config, split_csv
from kvlint.errors import KvlintError, UsageError
from kvlint.inputs import data_directories, file_in_tree, files_read, special_kind
from kvlint.text import printable

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR, EXIT_SKIPPED = 0, 1, 2, 3


def echo(message: str, err: bool = False, nl: bool = True, colour: bool = False) -> None:
    """click.echo(message, err=err, nl=nl), without importing click where it writes the text
    unchanged: to a text stream (not the Windows console) whose encoding is not ASCII, a text
    without ESC (click strips ANSI sequences when the stream is not a terminal). Any other case
    is click.echo's own. `colour`: the text's ANSI colours are kept (click.echo's color=True)."""
    stream = sys.stderr if err else sys.stdout
    text = message + "\n" if nl else message
    if colour:
        import click

        click.echo(text, err=err, nl=False, color=True)
        return
    encoding = getattr(stream, "encoding", None)
    plain = (
        isinstance(stream, io.TextIOBase) and sys.platform != "win32" and "\x1b" not in text
        and encoding is not None and getattr(stream, "errors", None) is not None
    )
    if plain:
        try:
            plain = codecs.lookup(encoding).name != "ascii"
        except LookupError:
            pass
    if not plain:
        import click  # the cases click.echo treats specially

        click.echo(text, err=err, nl=False)
        return
    if text:
        stream.write(text)
    stream.flush()


def one_line(message: str) -> str:
    """Errors are one line: PyYAML's errors in a rule or catalog file span several
    ('while parsing ...\\n  in "<unicode string>", line 4, column 10\\ndid not find ...')."""
    message = re.sub(r'\s*in "<[^>]*>",', " at", message)
    parts = [part.strip() for part in message.splitlines() if part.strip()]
    return "; ".join(parts)


def exit_on_error(exc: BaseException, verbose: bool) -> NoReturn:
    """How a command ends on an exception that is not an exit (call it in the `except` block):
    interrupted, a closed pipe, or one line (a kvlint error's own, else "internal error") and
    exit 2; --verbose adds the traceback."""
    if isinstance(exc, KeyboardInterrupt):
        echo("kvlint: interrupted", err=True)
        sys.exit(EXIT_ERROR)
    if isinstance(exc, BrokenPipeError):
        sys.exit(EXIT_ERROR)
    if verbose:
        import traceback  # only for --verbose

        traceback.print_exc()
    message = one_line(exc.one_line() if isinstance(exc, KvlintError) else
                       f"internal error: {type(exc).__name__}: {exc} (run with --verbose for the traceback)")
    echo(f"kvlint: error: {printable(message)}", err=True)  # messages quote paths and input
    sys.exit(EXIT_ERROR)


def load_settings(
    config_path: Optional[str],
    select: Sequence[str] = (),
    extend_select: Sequence[str] = (),
    ignore: Sequence[str] = (),
    fail_on: Optional[str] = None,
    output_format: Optional[str] = None,
    strict: Optional[bool] = None,
) -> Config:
    """The configuration file, then command-line overrides."""
    return load_resolver(config_path, select, extend_select, ignore, fail_on, output_format, strict).base


def load_resolver(
    config_path: Optional[str],
    select: Sequence[str] = (),
    extend_select: Sequence[str] = (),
    ignore: Sequence[str] = (),
    fail_on: Optional[str] = None,
    output_format: Optional[str] = None,
    strict: Optional[bool] = None,
    respect_gitignore: Optional[bool] = None,
    offline: Optional[bool] = None,
) -> ConfigResolver:
    """Each file's configuration (the nearest file, or --config for all), with the command line's
    overrides applied to every one; `.base` is the one found from the current directory."""

    def apply(config: Config) -> Config:
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
        if strict is not None:
            overrides["strict"] = strict
        if respect_gitignore is not None:
            overrides["respect_gitignore"] = respect_gitignore
        if offline:
            overrides["offline"] = True
        return replace(config, **overrides)

    resolver = ConfigResolver(apply(load_config(config_path)), apply, fixed=bool(config_path))
    network_policy(resolver.base)
    return resolver


def network_policy(config: Config) -> None:
    """The run-wide `offline` setting (--offline, `offline = true`): kvlint.hub then asks the
    Hugging Face Hub for nothing. Imported only when it is on or already loaded (start-up time)."""
    if config.offline or "kvlint.hub" in sys.modules:
        from kvlint.hub import set_offline

        set_offline(config.offline)


def build_context(config: Config):
    """The rulebook and the enabled rules for a run; an unknown selector is a usage error."""
    # Imported on use: `kvlint schema`, `kvlint --help` and friends never load the pipeline.
    from kvlint.pipeline.check import CheckContext
    from kvlint.pipeline.selection import enabled_codes
    from kvlint.rulebook import load_rulebook

    rulebook = load_rulebook(tuple(config.rules_dirs))
    enabled, unknown = enabled_codes(rulebook, config)
    if unknown:
        raise UsageError("unknown rule selector(s): " + ", ".join(unknown) + " (KV902; see `kvlint rules`)")
    if not enabled:  # `--select ""`, `select = []`, or an ignore that covers the selection
        raise UsageError(
            f"the rule selection enables no rule (select: {', '.join(config.select + config.extend_select) or 'nothing'}; "
            f"ignore: {', '.join(config.ignore) or 'nothing'}), so nothing would be checked; select at least one "
            "rule (the default is ALL)"
        )
    silenced = [rule.code for rule in rulebook if rule.stage == "load" and rule.code not in enabled]
    if silenced:  # ruff reports syntax errors whatever the selection; kvlint at least says so
        echo(
            f"kvlint: warning: the rule selection turns off {', '.join(silenced)}: a file kvlint cannot read, "
            "parse or accept then passes without a finding",
            err=True,
        )
    return CheckContext(config=config, rulebook=rulebook, enabled=enabled, display_root=Path.cwd())


def _refuse_if_input(output_file: str) -> None:
    """Exit 2 with one line when output_file is (by device and inode, so through hard links and
    symbolic links too) a file this run read: a manifest, the configuration, an ablation base, a
    model config, an organisation rule; or lies in a rules-dir or catalog-dir, or is a link to a
    file in one (their parsed data may come from the cache, unread)."""
    try:
        info: Optional[os.stat_result] = os.stat(output_file)
    except OSError:
        info = None  # not there yet (or unreachable: the write reports why)
    if info is not None:
        read = files_read().get((info.st_dev, info.st_ino))
        if read is not None:
            if read == "<stdin>":
                same = " (through standard input)"
            else:
                same = "" if os.path.abspath(read) == os.path.abspath(output_file) else f" (the same file as {read})"
            raise UsageError(f"{output_file} is a file this run reads{same}; kvlint never writes onto its input")
    target = os.path.realpath(output_file)
    for directory, configured in data_directories().items():
        if target == directory or target.startswith(directory.rstrip(os.sep) + os.sep):
            raise UsageError(f"{output_file} is inside {configured}, a rules-dir or catalog-dir this run reads; "
                             "kvlint never writes onto its input")
        if info is not None and stat.S_ISREG(info.st_mode):
            same = file_in_tree(directory, (info.st_dev, info.st_ino))
            if same is not None:
                raise UsageError(f"{output_file} is a file this run reads (the same file as {same}); "
                                 "kvlint never writes onto its input")


def write_output(text: str, output_file: Optional[str]) -> None:
    """To stdout, or to a file (a write failure is a usage error, exit 2).

    Never onto an input of the run (see _refuse_if_input). A regular file is written atomically:
    a temporary file in the same directory, then os.replace, so a reader never sees half a
    report and a failed write leaves the old file whole. An existing FIFO or device (`-o
    /dev/stdout`) is written in place."""
    if not output_file:
        echo(text, nl=False)
        return
    _refuse_if_input(output_file)
    data = text.encode("utf-8")
    try:
        try:
            existing = os.stat(output_file)
        except FileNotFoundError:
            existing = None
        if existing is not None and special_kind(existing.st_mode) not in (None, "a directory"):
            with open(output_file, "wb") as handle:
                handle.write(data)
            return
        if existing is not None and stat.S_ISDIR(existing.st_mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), output_file)
        _atomic_write(output_file, data, existing)
    except OSError as exc:
        raise UsageError(f"cannot write {output_file}: {exc.strerror or exc}") from None


def _atomic_write(output_file: str, data: bytes, existing: Optional[os.stat_result]) -> None:
    import tempfile  # only when writing a file: tempfile (with shutil, random) is a start-up cost

    directory = os.path.dirname(os.path.abspath(output_file))
    fd, temporary = tempfile.mkstemp(prefix=f".{os.path.basename(output_file)}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        if existing is not None:
            mode = stat.S_IMODE(existing.st_mode)
        else:  # what open() would have created: 0o666 less the umask
            umask = os.umask(0o022)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(temporary, mode)
        os.replace(temporary, output_file)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise
