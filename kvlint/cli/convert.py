"""`kvlint convert`: the kvlint/v1 manifest kvlint reads from a native deployment file."""

from __future__ import annotations

import json
import math
import re
import sys
from pathlib import Path
from typing import Any, Dict, List

import click

from kvlint.cli.options import EXIT_FINDINGS, EXIT_OK, write_output
from kvlint.cli.params import config_option
from kvlint.config import load_config
from kvlint.errors import UsageError
from kvlint.load import read_input
from kvlint.pointer import escape
from kvlint.text import printable


def _scalar(value: Any) -> str:
    """One YAML scalar that reads back as exactly `value`, on one line whatever it holds.

    Strings are JSON strings (valid YAML double-quoted scalars: every control character and line
    break escaped, so input can add no key, line or comment); numbers as YAML 1.1 reads them back
    (a float always with a dot, infinities and NaN as `.inf`, `.nan`)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return ".nan"
        if math.isinf(value):
            return ".inf" if value > 0 else "-.inf"
        text = repr(value)
        mantissa, _, exponent = text.partition("e")
        if "." not in mantissa:
            mantissa += ".0"
        return mantissa + ("e" + exponent if exponent else "")
    return json.dumps(str(value))


_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")
# YAML 1.1 reads these plain words as booleans or null, not as the key's string
_RESERVED = frozenset({"y", "n", "yes", "no", "on", "off", "true", "false", "null", "~"})


def _key(key: Any) -> str:
    """A mapping key: plain when it is a plain identifier YAML reads back as that string
    (`max_model_len`, `VLLM_USE_V1`), else a quoted scalar."""
    if isinstance(key, str) and _PLAIN_KEY.fullmatch(key) and key.lower() not in _RESERVED:
        return key
    return _scalar(key)


def _comment(text: str) -> str:
    """A YAML comment's text: one line (input such as a variable name with a newline escaped)."""
    return printable(text)


def render_manifest(data: Any, provenance: Dict[str, str], pointer: str = "", indent: int = 0) -> List[str]:
    """YAML for a manifest, each value followed by a comment saying where kvlint read it.

    Every key and value is a quoted scalar (`_scalar`) and every comment escaped, so the output
    re-reads as exactly the data kvlint read, whatever the native file's names and values hold."""
    pad = "  " * indent
    lines: List[str] = []
    items = data.items() if isinstance(data, dict) else enumerate(data)
    for key, value in items:
        child = f"{pointer}/{escape(key)}"
        label = f"{pad}{_key(key)}:" if isinstance(data, dict) else f"{pad}-"
        note = f"  # {_comment(provenance[child])}" if child in provenance else ""
        if isinstance(value, (dict, list)) and value:
            lines.append(label + note)
            lines.extend(render_manifest(value, provenance, child, indent + 1))
        else:
            shown = "{}" if value == {} else "[]" if value == [] else _scalar(value)
            lines.append(f"{label} {shown}{note}")
    return lines


@click.command()
@click.argument("path", type=click.Path(dir_okay=False))
@click.option("--output-file", "-o", type=click.Path(dir_okay=False), help="Write to a file instead of stdout.")
@config_option
def convert(path, output_file, config_path):
    """Print the kvlint/v1 manifest(s) read from a native deployment file (Kubernetes, Helm
    values, compose, engine config, shell script, Dockerfile), each value with a comment saying
    where it came from. Exit 1 when a fact is missing (the manifest then lacks it)."""
    # Imported on use: only this command and the check pipeline read native files.
    from kvlint.pipeline.native import load_source

    config = load_config(config_path)
    display, raw = read_input(path)
    source = load_source(raw, display, path, config)
    if source.format == "kvlint":
        raise UsageError(f"{path} is already a kvlint/v1 manifest (or no native deployment file kvlint reads)")
    if source.format == "helm-template":  # detected as `kvlint check` does (pipeline/native.py)
        raise UsageError(f"{display} is a Helm chart template (Go template actions such as `{{{{ .Values… }}}}`), "
                         "not YAML until rendered: render it first, `helm template RELEASE CHART | kvlint convert -`")
    if not source.documents:
        click.echo(f"kvlint convert: {printable(path)}: no engine workload found", err=True)
        sys.exit(EXIT_OK)
    blocks = []
    for document in source.documents:
        header = [f"# Read by kvlint from {_comment(Path(display).as_posix())} ({source.format})."]
        header += [f"# missing: {_comment(pointer)} (kvlint check says how to give it)"
                   for pointer in source.missing.get(document.index, ())]
        blocks.append("\n".join(header + render_manifest(document.data, source.provenance.get(document.index, {}))))
    write_output("\n---\n".join(blocks) + "\n", output_file)
    sys.exit(EXIT_FINDINGS if any(source.missing.values()) else EXIT_OK)
