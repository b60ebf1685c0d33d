"""Plain-text and Markdown helpers shared by every reporter: one table renderer, one escaper."""

from __future__ import annotations

from typing import List, Sequence


def aligned_table(header: Sequence[str], rows: Sequence[Sequence[str]], indent: str = "", rule: bool = True) -> List[str]:
    """Columns padded to their widest cell, two spaces apart, trailing blanks stripped; a dashed
    line under the header when `rule`."""
    widths = [len(h) for h in header]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))

    def line(cells: Sequence[str]) -> str:
        return (indent + "  ".join(c.ljust(w) for c, w in zip(cells, widths))).rstrip()

    out = [line(header)]
    if rule:
        out.append(indent + "  ".join("-" * w for w in widths))
    out.extend(line(row) for row in rows)
    return out


def markdown_cell(text: str) -> str:
    """Text safe inside one Markdown table cell: one line, pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")
