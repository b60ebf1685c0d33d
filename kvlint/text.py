"""Plain-text and Markdown helpers shared by every reporter: one table renderer, one escaper."""

from __future__ import annotations

from typing import List, Sequence


def aligned_table(header: Sequence[str], rows: Sequence[Sequence[str]], indent: str = "", rule: bool = True) -> List[str]:
    """Columns padded to their widest cell, two spaces apart, trailing blanks stripped; a dashed
    line under the header when `rule`."""
    header = [printable(h) for h in header]  # cells may quote the input (a variant's name)
    rows = [[printable(c) for c in row] for row in rows]
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
    """Text safe inside one Markdown table cell: one line, pipes escaped, no control characters."""
    return printable(" ".join(str(text).split())).replace("|", "\\|")


# Characters that must never reach a terminal or a CI log as they are: C0 and C1 controls (ESC
# starts terminal escape sequences, CR and NL start a new line, which in a CI log can start a
# workflow command), DEL, and the bidirectional overrides and isolates ("Trojan Source").
_UNSAFE = frozenset(
    [chr(c) for c in range(0x20)] + [chr(0x7F)] + [chr(c) for c in range(0x80, 0xA0)]
    + ["\u061c", "\u200e", "\u200f", "\u2028", "\u2029"]
    + [chr(c) for c in range(0x202A, 0x202F)] + [chr(c) for c in range(0x2066, 0x206A)] + ["\ufeff"]
)


def escape_char(char: str) -> str:
    """One character as printed in a report: itself, or a visible escape (\\n, \\x1b, \\u202e)."""
    if char not in _UNSAFE:
        return char
    named = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
    if char in named:
        return named[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """Text from the input made safe to echo on one line of a terminal or CI log: control
    characters, line breaks and bidi overrides become visible escapes."""
    text = str(text)
    if not any(char in _UNSAFE for char in text):
        return text
    return "".join(escape_char(char) for char in text)


def safe_line(line: str) -> str:
    """A report line that cannot start a CI workflow command (GitHub Actions reads `::name ...::`
    at the start of a log line, leading whitespace ignored): a leading `::` is escaped."""
    stripped = line.lstrip()
    if stripped.startswith("::"):
        return line[: len(line) - len(stripped)] + "\\x3a" + stripped[1:]
    return line


def printable_block(text: str) -> str:
    """A human-readable report (several lines) made safe to print as a whole: in every line the
    characters `printable` escapes become visible escapes (tabs and the line breaks themselves
    stay), and no line can start a workflow command (`safe_line`). Renderers escape each value
    from the input where they put it on a line (so a newline in a value stays one line); this
    is the last pass over the rendered text."""
    text = str(text)
    lines = text.split("\n")
    out = []
    for line in lines:
        if any(char in _UNSAFE and char != "\t" for char in line):
            line = "".join(char if char == "\t" else escape_char(char) for char in line)
        out.append(safe_line(line))
    return "\n".join(out)


def json_text(document: object, indent: int = 2) -> str:
    """JSON with non-ASCII text kept readable but nothing a terminal acts on: json.dumps escapes
    C0 controls, and the other characters `printable` escapes (DEL, C1 controls such as the
    8-bit CSI, bidirectional overrides, U+2028) become `\\uXXXX` escapes too. They occur only
    inside strings, so the data read back is the same."""
    import json  # only the JSON reporters need it

    text = json.dumps(document, indent=indent, ensure_ascii=False)
    if not any(char in _UNSAFE and char != "\n" for char in text):
        return text  # the line breaks of the indentation are json.dumps's own
    return "".join(f"\\u{ord(char):04x}" if char in _UNSAFE and char != "\n" else char for char in text)
