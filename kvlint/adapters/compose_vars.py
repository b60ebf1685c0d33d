"""Compose variable interpolation, with positions.

Compose replaces `${VAR}`, `$VAR`, `${VAR:-default}`, `${VAR-default}`, `${VAR:?error}`,
`${VAR?error}`, `${VAR:+replacement}`, `${VAR+replacement}` in every string value of the file
before anything else reads it, and `$$` stands for a literal `$` (left for the container's shell)
(https://github.com/compose-spec/compose-spec/blob/main/12-interpolation.md). Values come from the
shell that runs `docker compose` and from the `.env` file in the project directory.

kvlint reads the `.env` file beside the compose file and takes no value from its own environment:
a variable the files do not set uses its default when there is one, and is otherwise unresolved
(KV208) — the result depends on whoever runs `docker compose`.
"""

from __future__ import annotations

import os
import re
from typing import Dict, List, Mapping, Optional, Tuple

from kvlint.adapters.source import Locator
from kvlint.records import dataclass

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class Interpolated:
    """A string after interpolation; `offsets[i]` is where text[i] came from in the original."""

    text: str
    offsets: Tuple[int, ...]
    unresolved: Tuple[str, ...]
    changed: bool


def interpolate(value: str, variables: Mapping[str, str], depth: int = 0) -> Interpolated:
    """`value` with Compose's interpolation applied (bounded nesting for `${A:-${B}}`)."""
    if "$" not in value:
        return Interpolated(value, tuple(range(len(value))), (), False)
    chars: List[str] = []
    offsets: List[int] = []
    missing: List[str] = []
    i = 0
    n = len(value)
    while i < n:
        ch = value[i]
        if ch != "$" or i + 1 >= n:
            chars.append(ch)
            offsets.append(i)
            i += 1
            continue
        nxt = value[i + 1]
        if nxt == "$":
            chars.append("$")
            offsets.append(i)
            i += 2
            continue
        if nxt == "{":
            end = _closing(value, i + 2)
            if end < 0:
                missing.append(f"an unclosed `${{` at character {i + 1}")
                chars.extend(value[i:])
                offsets.extend(range(i, n))
                break
            result, why = _braced(value[i + 2:end], variables, depth)
            stop = end + 1
        else:
            match = _NAME.match(value, i + 1)
            if not match:
                chars.append(ch)
                offsets.append(i)
                i += 1
                continue
            name = match.group(0)
            result, why = (variables[name], None) if name in variables else (None, f"${name}")
            stop = match.end()
        if result is None:
            missing.append(why or value[i:stop])
            result = value[i:stop]
        chars.extend(result)
        offsets.extend(min(i + k, stop - 1) for k in range(len(result)))
        i = stop
    return Interpolated("".join(chars), tuple(offsets), tuple(missing), True)


def _closing(value: str, start: int) -> int:
    depth = 1
    for j in range(start, len(value)):
        if value[j] == "{":
            depth += 1
        elif value[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    return -1


def _braced(inner: str, variables: Mapping[str, str], depth: int) -> Tuple[Optional[str], Optional[str]]:
    match = _NAME.match(inner)
    if not match:
        return None, f"${{{inner}}}"
    name = match.group(0)
    rest = inner[match.end():]
    value = variables.get(name)
    if not rest:
        return (value, None) if value is not None else (None, f"${{{name}}}")
    operator = re.match(r"^(:?[-?+])", rest)
    if not operator:
        return None, f"${{{inner}}}"
    op = operator.group(1)
    word = rest[len(op):]
    use_word = (not value) if op.startswith(":") else value is None
    if op.endswith("?"):
        if use_word:
            return None, f"${{{name}}}, which must be set when the stack is started ({word or 'required'})"
        return value, None
    if op.endswith("+"):
        if use_word:
            return "", None
        return _nested(word, variables, depth)
    if not use_word:
        return value, None
    return _nested(word, variables, depth)


def _nested(word: str, variables: Mapping[str, str], depth: int) -> Tuple[Optional[str], Optional[str]]:
    if "$" not in word:
        return word, None
    if depth >= 4:
        return None, "a default nested too deeply"
    inner = interpolate(word, variables, depth + 1)
    if inner.unresolved:
        return None, inner.unresolved[0]
    return inner.text, None


class MappedLocator(Locator):
    """Positions of an interpolated string's characters, through the original string's locator."""

    def __init__(self, base: Locator, offsets: Tuple[int, ...]):
        self._base = base
        self._offsets = offsets

    def position(self, offset: int) -> Tuple[int, int]:
        if not self._offsets:
            return self._base.position(0)
        return self._base.position(self._offsets[min(max(offset, 0), len(self._offsets) - 1)])


_DOTENV_LINE = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_.-]*)\s*=\s*(.*?)\s*$")
MAX_DOTENV_BYTES = 256 * 1024


def read_dotenv(compose_path: str, name: str = ".env") -> Tuple[Dict[str, str], Optional[str]]:
    """The variables of a dotenv file beside `compose_path` (Compose's `.env` / `env_file` syntax:
    `NAME=value`, quotes, `#` comments; https://docs.docker.com/compose/how-tos/environment-variables/variable-interpolation/#env-file-syntax),
    and why it was not read when it exists but cannot be. Only a regular file inside the
    compose file's directory tree is read: never a link, never a path that climbs out."""
    if not compose_path or compose_path == "-":
        return {}, None
    base = os.path.dirname(os.path.abspath(compose_path))
    target = os.path.normpath(os.path.join(base, name))
    if os.path.isabs(name) or not (target == base or target.startswith(base + os.sep)):
        return {}, f"{name} is outside the compose file's directory, which kvlint does not read"
    if not os.path.lexists(target):
        return {}, None
    if os.path.islink(target) or not os.path.isfile(target):
        return {}, f"{name} is not a regular file"
    try:
        with open(target, "rb") as handle:
            raw = handle.read(MAX_DOTENV_BYTES + 1)
    except OSError as exc:
        return {}, f"{name} cannot be read ({exc.strerror or type(exc).__name__})"
    if len(raw) > MAX_DOTENV_BYTES:
        return {}, f"{name} is larger than {MAX_DOTENV_BYTES:,} bytes"
    values: Dict[str, str] = {}
    for line in raw.decode("utf-8", errors="replace").splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = _DOTENV_LINE.match(line)
        if not match:
            continue
        key, value = match.groups()
        if value[:1] in ("'", '"') and value.rfind(value[0]) > 0:
            value = value[1:value.rfind(value[0])]
        elif " #" in value:
            value = value.split(" #", 1)[0].rstrip()
        values[key] = value
    return values, None
