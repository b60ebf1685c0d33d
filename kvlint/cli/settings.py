"""What `kvlint check` prints besides a report: --show-settings, --show-files, --statistics, and
the colour of the `full` and `concise` formats on a terminal."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, List, Optional, Sequence

from kvlint.config import Config, ConfigResolver
from kvlint.findings import Finding
from kvlint.text import printable

if TYPE_CHECKING:  # type-only
    from kvlint.pipeline.check import CheckResult

# Config fields whose configuration key is not the field name in kebab case.
_KEYS = {"rules_dirs": "rules-dir", "catalog_dirs": "catalog-dir"}


def _toml(value: Any) -> str:
    """A TOML value: strings and arrays as JSON writes them (valid TOML), tables inline."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {_toml(v)}" for k, v in value.items()) + " }" if value else "{}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return json.dumps(value)


def settings_text(config: Config) -> str:
    """The resolved configuration as TOML: the file's settings with command-line overrides and
    defaults filled in (paths absolute), headed by the file it came from."""
    source = f"configuration: {config.path}" if config.path else "no configuration file: the defaults"
    lines = [f"# kvlint settings ({source})"]
    for field in fields(Config):
        if field.name == "path":
            continue
        key = _KEYS.get(field.name, field.name.replace("_", "-"))
        value = getattr(config, field.name)
        if field.name == "per_file_ignores":
            value = {pattern: list(codes) for pattern, codes in value}
        elif field.name == "defaults":
            value = {pattern: dict(facts) for pattern, facts in value}
        if value is None:
            lines.append(f"# {key}: not set")
            continue
        lines.append(f"{key} = {_toml(value)}")
    return "\n".join(lines) + "\n"


def files_text(paths: Sequence[str], config: Config, resolver: Optional[ConfigResolver] = None) -> str:
    """The files `kvlint check PATHS` would read, one a line, as its findings name them."""
    from kvlint.pipeline.discovery import discover_files, display_path

    root = Path.cwd()
    configs = resolver.for_directory if resolver is not None else None
    return "".join(printable(display_path(str(path), root) if path != "-" else "-") + "\n"
                   for path in discover_files(list(paths), config, configs))


def statistics_text(result: CheckResult, fmt: str) -> str:
    """How many findings each rule has, most first (`--statistics`); JSON for `json`."""
    counts = Counter((f.code, f.name, f.severity) for f in result.findings)
    rows = sorted(counts.items(), key=lambda item: (-item[1], item[0][0]))
    if fmt == "json":
        return json.dumps([{"code": c, "name": n, "severity": s, "count": k} for (c, n, s), k in rows], indent=2) + "\n"
    width = max((len(str(k)) for _, k in rows), default=1)
    lines = [f"{k:>{width}}  {c}  [{s}] {n}" for (c, n, s), k in rows]
    from kvlint.report.text import summary_line

    lines.append(summary_line(result))
    return "\n".join(lines) + "\n"


_SGR = {"error": "31", "warning": "33", "info": "36", "bold": "1"}


def _paint(text: str, *styles: str) -> str:
    return f"\x1b[{';'.join(_SGR[s] for s in styles)}m{text}\x1b[0m"


def colourize(report: str, findings: List[Finding]) -> str:
    """The `full` / `concise` report with each finding's location in bold and its code and
    severity in the severity's colour. Only lines that begin with a finding's own header are
    touched, so source excerpts and messages (input) are never reinterpreted."""
    headers = {}
    for f in findings:
        location = f"{printable(f.file)}:{f.line}:{f.column}:"
        headers[f"{location} {f.code} [{f.severity}]"] = (location, f.code, f.severity)
    out: List[str] = []
    for line in report.split("\n"):
        for header, (location, code, severity) in headers.items():
            if line.startswith(header):
                line = (f"{_paint(location, 'bold')} {_paint(code, severity, 'bold')} "
                        f"{_paint('[' + severity + ']', severity)}{line[len(header):]}")
                break
        out.append(line)
    return "\n".join(out)
