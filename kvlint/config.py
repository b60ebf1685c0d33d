"""Configuration: `.kvlint.toml`, `kvlint.toml` or `[tool.kvlint]` in pyproject.toml, found
from a directory upward.

Unknown keys are a configuration error (exit 2), as in yamllint and ruff. Paths in the file are
relative to the file. Command-line options override it.

As in ruff (hierarchical configuration), each checked file uses the nearest configuration in its
own directory or above (`ConfigResolver`); the one found from the current directory settles the
run-wide settings (output-format, fail-on, strict). Configurations are not merged: the nearest
one wins whole. `--config FILE` is used for every file.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple
from kvlint.errors import ConfigError
from kvlint.findings import shorten
from kvlint.inputs import InputError, note_data_directory, read_capped
from kvlint.load import NATIVE_FORMATS
from kvlint.records import dataclass
from kvlint.schema import is_valid, non_finite, validator_for
from kvlint.text import printable

# In one directory, the first of these that holds kvlint settings wins (ruff: .ruff.toml, ruff.toml,
# pyproject.toml).
CONFIG_FILES = (".kvlint.toml", "kvlint.toml", "pyproject.toml")

@dataclass(frozen=True)
class Config:
    """kvlint's settings from kvlint.toml or pyproject.toml and the command line."""

    path: Optional[Path] = None
    select: Tuple[str, ...] = ("ALL",)
    extend_select: Tuple[str, ...] = ()
    ignore: Tuple[str, ...] = ()
    fail_on: str = "error"
    # `strict`: a check that could not run (kvlint.findings.COULD_NOT_RUN) fails the run.
    strict: bool = False
    # `offline`: never ask the Hugging Face Hub for a model's config.json (kvlint.hub); run-wide,
    # like strict: the configuration found from the current directory (or --config) decides.
    offline: bool = False
    output_format: str = "full"
    per_file_ignores: Tuple[Tuple[str, Tuple[str, ...]], ...] = ()
    exclude: Tuple[str, ...] = ()
    # `respect-gitignore`: a directory walk skips what .gitignore files ignore (kvlint.pipeline.gitignore).
    respect_gitignore: bool = True
    rules_dirs: Tuple[str, ...] = ()
    catalog_dirs: Tuple[str, ...] = ()
    max_scale_overhead: float = 0.03
    max_capacity_regression: Optional[float] = None
    # Native deployment files read besides kvlint/v1 manifests (`native-formats`; [] reads none).
    native_formats: Tuple[str, ...] = NATIVE_FORMATS
    # Directories besides the project root that paths in manifests (model.config, an ablation's
    # base) may point into (`allowed-roots`; KV209).
    allowed_roots: Tuple[str, ...] = ()
    # `[defaults]`: facts for native files that do not state them, by path glob (relative to
    # the configuration's directory), first match wins: (glob, {"gpu": ..., "engine-version": ...}).
    defaults: Tuple[Tuple[str, Tuple[Tuple[str, str], ...]], ...] = ()

    @property
    def root(self) -> Path:
        return self.path.parent if self.path else Path.cwd()


def _table(path: Path) -> Optional[Dict[str, Any]]:
    # The TOML parser is imported here, on use (start-up time): a run with no kvlint.toml or
    # pyproject.toml above it never needs it.
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on Python < 3.11
        import tomli as tomllib
    try:  # bounded and non-blocking: a FIFO or /dev/zero named as the configuration is refused
        raw = read_capped(path)
    except InputError as exc:
        raise ConfigError(f"cannot read {path}: {exc.message}") from None
    try:
        document = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not valid UTF-8: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    if path.name == "pyproject.toml":
        return document.get("tool", {}).get("kvlint")
    return document


def config_in(folder: Path) -> Optional[Path]:
    """The configuration file of one directory: .kvlint.toml, kvlint.toml, or a pyproject.toml
    with a [tool.kvlint] table; None when it has none."""
    for name in CONFIG_FILES:
        candidate = folder / name
        if not candidate.is_file():
            continue
        if name == "pyproject.toml":
            try:
                if _table(candidate) is None:
                    continue
            except ConfigError:
                continue  # a broken pyproject without our table is not ours to judge
        return candidate
    return None


def discover(start: Path) -> Optional[Path]:
    """The nearest configuration file (see config_in) from start upward."""
    directory = start.resolve()
    for folder in (directory, *directory.parents):
        found = config_in(folder)
        if found is not None:
            return found
    return None


def load_config(explicit: Optional[str] = None, start: Optional[Path] = None) -> Config:
    path = Path(explicit) if explicit else discover(start or Path.cwd())
    if path is None:
        return Config()
    if explicit:
        try:
            os.stat(path)
        except (OSError, ValueError) as exc:  # missing, a link loop, a name too long, a NUL
            reason = "does not exist" if isinstance(exc, FileNotFoundError) else (
                f"cannot be read: {getattr(exc, 'strerror', None) or exc}")
            raise ConfigError(f"config file {shorten(printable(explicit), 200)} {reason}") from None
    return load_file(path, explicit=bool(explicit))


def load_file(path: Path, explicit: bool = False) -> Config:
    """The settings of one configuration file."""
    table = _table(path)
    if table is None:
        if explicit and path.name == "pyproject.toml":
            raise ConfigError(f"{path} has no [tool.kvlint] table")
        return Config(path=path)
    config = from_table(table, path)
    for directory in (*config.rules_dirs, *config.catalog_dirs):
        note_data_directory(directory)  # inputs of the run: no output may land in them
    return config


class ConfigResolver:
    """The configuration of each file: the nearest configuration file in the file's directory or
    above, with the command line's overrides applied (`apply`); `base` (found from the current
    directory, or named by --config) when none is nearer. With --config (`fixed`), `base` for
    every file. Which file a directory uses, and each file's settings, are cached, so a walk of
    thousands of files reads each configuration once."""

    def __init__(self, base: Config, apply: Callable[[Config], Config] = lambda c: c, fixed: bool = False):
        self.base = base
        self.fixed = fixed
        self._apply = apply
        self._by_directory: Dict[str, Optional[Path]] = {}
        self._by_file: Dict[Path, Config] = {}
        if base.path is not None:
            self._by_file[Path(base.path).resolve()] = base

    def config_file(self, directory: Path) -> Optional[Path]:
        """The nearest configuration file from directory upward (cached per directory)."""
        key = str(directory)
        if key in self._by_directory:
            return self._by_directory[key]
        try:
            real = directory.resolve()
        except (OSError, RuntimeError):
            real = directory
        visited: List[str] = [key]
        found: Optional[Path] = None
        for folder in (real, *real.parents):
            folder_key = str(folder)
            if folder_key in self._by_directory:
                found = self._by_directory[folder_key]
                break
            visited.append(folder_key)
            found = config_in(folder)
            if found is not None:
                break
        for folder_key in visited:
            self._by_directory.setdefault(folder_key, found)
        return found

    def for_directory(self, directory: Path) -> Config:
        if self.fixed:
            return self.base
        found = self.config_file(directory)
        if found is None:
            return self.base
        found = found.resolve()
        if found not in self._by_file:
            self._by_file[found] = self._apply(load_file(found))
        return self._by_file[found]

    def for_path(self, path: str) -> Config:
        """The configuration of a file (or a directory's own) to check; stdin uses `base`."""
        if self.fixed or path in ("-", "<stdin>"):
            return self.base
        candidate = Path(path)
        try:
            directory = candidate if candidate.is_dir() else candidate.parent
        except (OSError, ValueError):
            return self.base
        return self.for_directory(directory)


def from_table(table: Dict[str, Any], path: Path) -> Config:
    for pointer, value in non_finite(table):  # TOML has nan and inf; no setting takes them
        raise ConfigError(f"{path}: {printable(pointer.lstrip('/').replace('/', '.'))}: {value!r} is not a finite number")
    problems = [] if is_valid(table, "config.json") else sorted(
        validator_for("config.json").iter_errors(table), key=lambda e: list(e.path)
    )
    if problems:
        error = problems[0]
        where = printable(".".join(str(p) for p in error.absolute_path))  # keys are input: escape them
        if error.validator == "additionalProperties":
            allowed = ", ".join(sorted(error.schema.get("properties", {})))
            extras = printable(", ".join(sorted(set(table) - set(error.schema.get("properties", {})))))
            raise ConfigError(f"{path}: unknown configuration key(s) {extras} (allowed: {allowed})")
        raise ConfigError(f"{path}: {where or 'config'}: {printable(error.message)}")
    base = path.parent

    def paths(key: str) -> Tuple[str, ...]:
        return tuple(str((base / entry).resolve()) for entry in table.get(key, ()))

    return Config(
        path=path,
        select=tuple(table.get("select", ("ALL",))),
        extend_select=tuple(table.get("extend-select", ())),
        ignore=tuple(table.get("ignore", ())),
        fail_on=table.get("fail-on", "error"),
        strict=bool(table.get("strict", False)),
        offline=bool(table.get("offline", False)),
        output_format=table.get("output-format", "full"),
        per_file_ignores=tuple(
            (pattern, tuple(codes)) for pattern, codes in table.get("per-file-ignores", {}).items()
        ),
        exclude=tuple(table.get("exclude", ())),
        respect_gitignore=bool(table.get("respect-gitignore", True)),
        rules_dirs=paths("rules-dir"),
        catalog_dirs=paths("catalog-dir"),
        max_scale_overhead=float(table.get("max-scale-overhead", 0.03)),
        max_capacity_regression=table.get("max-capacity-regression"),
        native_formats=tuple(table.get("native-formats", NATIVE_FORMATS)),
        allowed_roots=paths("allowed-roots"),
        defaults=tuple(
            (pattern, tuple(sorted((str(k), str(v)) for k, v in facts.items())))
            for pattern, facts in table.get("defaults", {}).items()
        ),
    )


def split_csv(values: Optional[List[str]]) -> Tuple[str, ...]:
    """`--select KV1,KV2 --select KV3` -> (KV1, KV2, KV3)."""
    out: List[str] = []
    for value in values or ():
        out.extend(part.strip() for part in value.split(",") if part.strip())
    return tuple(out)
