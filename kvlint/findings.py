"""Findings: what every stage emits and every reporter prints."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Optional, Tuple

SEVERITIES = ("info", "warning", "error")
_RANK = {name: rank for rank, name in enumerate(SEVERITIES)}


def severity_rank(severity: str) -> int:
    return _RANK[severity]


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
