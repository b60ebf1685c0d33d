"""JSON Pointers (RFC 6901): the one place that builds, splits and follows them.

Pointers address manifest values (findings point at them), facts (rule messages and `for_each`
read through them) and schema nodes (`$ref`).
"""

from __future__ import annotations

from typing import Any, Iterable, List, Mapping


def escape(token: Any) -> str:
    return str(token).replace("~", "~0").replace("/", "~1")


def unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def join(tokens: Iterable[Any]) -> str:
    """["kv_cache", "skip_layers", 0] -> "/kv_cache/skip_layers/0"."""
    return "".join("/" + escape(token) for token in tokens)


def split(pointer: str) -> List[str]:
    """"/kv_cache/skip_layers/0" -> ["kv_cache", "skip_layers", "0"]; "" -> []."""
    if not pointer:
        return []
    return [unescape(token) for token in pointer.split("/")[1:]]


def resolve(data: Any, pointer: str, default: Any = None) -> Any:
    """The value at pointer, or default when a step is missing."""
    current = data
    for token in split(pointer):
        if type(current) is dict or isinstance(current, Mapping):  # a dict first: typing's check is slow
            if token not in current:
                return default
            current = current[token]
        elif isinstance(current, list) and token.isdigit() and int(token) < len(current):
            current = current[int(token)]
        else:
            return default
    return current


def under(pointer: str, prefix: str) -> bool:
    """True when pointer is prefix or lies below it."""
    return pointer == prefix or pointer.startswith(prefix + "/")
