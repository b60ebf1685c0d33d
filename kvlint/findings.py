"""Findings: what every stage emits and every reporter prints."""

from __future__ import annotations

import re
from dataclasses import field, replace
from typing import Optional, Tuple

from kvlint.records import dataclass

SEVERITIES = ("info", "warning", "error")

# A message quotes the input (a model name, a flag value, a key), and the input may be megabytes
# long: a run of more than MAX_WORD non-blank characters, then a message of more than MAX_MESSAGE
# characters, keeps its head and tail and says how much was cut, in every output format.
MAX_WORD = 200
MAX_MESSAGE = 2000
_LONG_WORD = re.compile(rf"\S{{{MAX_WORD + 1},}}")


def shorten(text: str, limit: int) -> str:
    """text, or its first and last characters around "...[N characters cut]..." when longer than limit."""
    if len(text) <= limit:
        return text
    keep = max(limit - 30, 2)  # room for the marker
    head, tail = text[: keep - keep // 3], text[len(text) - keep // 3:]
    return f"{head}...[{len(text) - len(head) - len(tail):,} characters cut]...{tail}"


def bounded_message(message: str) -> str:
    """A finding's message with every over-long word, then the whole, cut in the middle."""
    if len(message) <= MAX_WORD:
        return message
    return shorten(_LONG_WORD.sub(lambda word: shorten(word.group(0), MAX_WORD), message), MAX_MESSAGE)
_RANK = {name: rank for rank, name in enumerate(SEVERITIES)}


def severity_rank(severity: str) -> int:
    return _RANK[severity]


# Findings that say a check could not run because kvlint lacked a fact: an engine release, GPU or
# model the catalog does not know (KV201-KV203), a fact a native file does not state (KV207), a
# value it cannot resolve (KV208), targets the capacity gate cannot check (KV609). `--strict`
# (`strict = true`) makes each of them fail the run, whatever its severity.
COULD_NOT_RUN = ("KV201", "KV202", "KV203", "KV207", "KV208", "KV609")


@dataclass(frozen=True)
class Span:
    """A 1-based source region; `end_*` is exclusive of nothing (it points at the last char + 1)."""

    line: int
    column: int
    end_line: int
    end_column: int


@dataclass(frozen=True)
class Related:
    """A second location a finding refers to (the first occurrence of a duplicate key)."""

    message: str
    line: int
    column: int


@dataclass(frozen=True)
class Finding:
    """One finding: the rule, its message, and the file position it points at."""

    code: str
    name: str
    severity: str
    message: str
    file: str
    pointer: str = ""
    line: int = 1
    column: int = 1
    end_line: Optional[int] = None
    end_column: Optional[int] = None
    url: str = ""
    document: int = 0  # index of the YAML document within the file
    related: Tuple[Related, ...] = field(default=())

    def __post_init__(self) -> None:
        if isinstance(self.message, str) and len(self.message) > MAX_WORD:
            object.__setattr__(self, "message", bounded_message(self.message))

    def sort_key(self) -> tuple:
        return (self.file, self.line, self.column, self.code, self.message)

    def one_line(self) -> str:
        """file:line:column: CODE message"""
        return f"{self.file}:{self.line}:{self.column}: {self.code} {self.message}"

    def with_location(self, span: Optional[Span]) -> Finding:
        if span is None:
            return self
        return replace(
            self,
            line=span.line,
            column=span.column,
            end_line=span.end_line,
            end_column=span.end_column,
        )
