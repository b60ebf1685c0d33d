"""Source positions for adapters: offsets in a file, and characters of a YAML scalar's value.

`load` gives the span of every YAML node but not where each character of a string value sits.
A shell command inside `args: ["…"]` or a `|`/`>` block scalar must be tokenised on the *parsed*
value (that is what the container runs) while findings must point at the *native* column, so
`scalar_locator` rebuilds the value from the raw source slice with a per-character map (YAML 1.2
§7.3 flow scalars: escapes and line folding; §8.1 block scalars: indentation, chomping, folding,
https://yaml.org/spec/1.2.2/). The rebuilt value is compared with what the YAML parser produced;
when they differ (an exotic indentation indicator, a tab-indented fold) the map degrades to
"every character at the scalar's start" rather than pointing at a wrong column.
"""

from __future__ import annotations

import bisect
from typing import List, Optional, Sequence, Tuple

from kvlint.findings import Span
from kvlint.records import dataclass

Position = Tuple[int, int]  # 1-based line, 1-based column


class Locator:
    """Maps an offset of some text to a (line, column) in the native file."""

    def position(self, offset: int) -> Position:  # pragma: no cover - interface
        raise NotImplementedError

    def span(self, start: int, end: int) -> Span:
        """The span of characters [start, end) (end exclusive, as `Span.end_column`)."""
        line, column = self.position(start)
        if end <= start:
            return Span(line, column, line, column)
        end_line, end_column = self.position(end - 1)
        return Span(line, column, end_line, end_column + 1)


class LineLocator(Locator):
    """Offsets of a whole file (a shell script, a Dockerfile)."""

    def __init__(self, text: str, first_line: int = 1, first_column: int = 1):
        self._starts = [0]
        index = text.find("\n")
        while index >= 0:
            self._starts.append(index + 1)
            index = text.find("\n", index + 1)
        self._first_line = first_line
        self._first_column = first_column

    def position(self, offset: int) -> Position:
        row = bisect.bisect_right(self._starts, offset) - 1
        column = offset - self._starts[row] + 1
        if row == 0:
            column += self._first_column - 1
        return (row + self._first_line, column)

    def offset(self, line: int, column: int) -> int:
        """Offset of a 1-based (line, column) of this text (clamped to its bounds)."""
        row = min(max(line - self._first_line, 0), len(self._starts) - 1)
        return self._starts[row] + max(column - 1, 0)


class TableLocator(Locator):
    """Offsets of a rebuilt string value, each mapped through a table of native positions."""

    def __init__(self, positions: Sequence[Position], fallback: Position):
        self._positions = positions
        self._fallback = fallback

    def position(self, offset: int) -> Position:
        if 0 <= offset < len(self._positions):
            return self._positions[offset]
        if self._positions and offset >= len(self._positions):
            line, column = self._positions[-1]
            return (line, column + 1)
        return self._fallback


class RunLocator(Locator):
    """A value written as-is on one line (a plain scalar): offset i is `length` columns on from
    its first character. The same map TableLocator would hold, without building the table."""

    def __init__(self, first: Position, length: int, fallback: Position):
        self._line, self._column = first
        self._length = length
        self._fallback = fallback

    def position(self, offset: int) -> Position:
        if offset < 0 or (self._length == 0):
            return self._fallback
        return (self._line, self._column + min(offset, self._length))


class FixedLocator(Locator):
    """Every offset at one place: the degraded map."""

    def __init__(self, span: Span):
        self._span = span

    def position(self, offset: int) -> Position:
        return (self._span.line, self._span.column)

    def span(self, start: int, end: int) -> Span:
        return self._span


class OffsetLocator(Locator):
    """Positions of a slice of another locator's text: offset 0 is the base's offset `shift` (a
    here-document body, a Dockerfile instruction, a systemd ExecStart= value)."""

    def __init__(self, base: Locator, shift: int):
        self._base = base
        self._shift = shift

    def position(self, offset: int) -> Position:
        return self._base.position(self._shift + offset)


@dataclass(frozen=True)
class Located:
    """A string value plus the locator of its characters."""

    text: str
    locator: Locator
    exact: bool  # False when positions degraded to the scalar start


def scalar_locator(file_text: str, lines: LineLocator, span: Span, value: str) -> Located:
    """Character map of the YAML string scalar whose node spans `span` and parses to `value`."""
    start = lines.offset(span.line, span.column)
    end = lines.offset(span.end_line, span.end_column)
    end = max(start, min(end, len(file_text)))
    raw = file_text[start:end]
    if raw == value and raw and raw[0] not in "'\"|>&!*" and "\n" not in raw and "\r" not in raw:
        # a plain scalar on one line: its characters are the value's, column by column
        return Located(value, RunLocator(lines.position(start), len(value), (span.line, span.column)), True)
    rebuilt: Optional[Tuple[str, List[int]]] = None
    try:
        rebuilt = _rebuild(raw, start, file_text)
    except (ValueError, IndexError):  # a form the rebuild does not know: degrade, never fail
        rebuilt = None
    if rebuilt is not None and rebuilt[0] == value:
        positions = [lines.position(offset) for offset in rebuilt[1]]
        return Located(value, TableLocator(positions, (span.line, span.column)), True)
    return Located(value, FixedLocator(span), False)


# --- rebuilding a scalar's value with source offsets ------------------------------------------


def _rebuild(raw: str, base: int, file_text: str) -> Optional[Tuple[str, List[int]]]:
    if not raw:
        return ("", [])
    head = raw[0]
    if head == "'":
        return _flow(raw, base, quote="'")
    if head == '"':
        return _flow(raw, base, quote='"')
    if head in "|>":
        return _block(raw, base, folded=head == ">", file_text=file_text)
    if head in "&!":
        return None  # anchors and tags before the scalar: not rebuilt
    return _flow(raw, base, quote="")


def _flow(raw: str, base: int, quote: str) -> Tuple[str, List[int]]:
    """Plain, single- or double-quoted scalar: escapes and line folding (YAML 1.2 §7.3)."""
    if quote:
        body_start = 1
        body_end = len(raw) - 1 if raw.endswith(quote) and len(raw) >= 2 else len(raw)
    else:
        body_start, body_end = 0, len(raw)
    # split the body into physical lines, each a list of (char, offset)
    lines: List[List[Tuple[str, int]]] = [[]]
    escaped_break: List[bool] = []
    j = body_start
    while j < body_end:
        ch = raw[j]
        if ch == "\r" and j + 1 < body_end and raw[j + 1] == "\n":
            j += 1
            continue
        if ch == "\n":
            escaped_break.append(False)
            lines.append([])
            j += 1
            continue
        if quote == "'" and ch == "'" and j + 1 < body_end and raw[j + 1] == "'":
            lines[-1].append(("'", base + j))
            j += 2
            continue
        if quote == '"' and ch == "\\":
            if j + 1 < body_end and raw[j + 1] in "\r\n":
                escaped_break.append(True)
                lines.append([])
                j += 2 if raw[j + 1] == "\n" else 3
                continue
            decoded, width = _escape(raw, j + 1)
            for c in decoded:
                lines[-1].append((c, base + j))
            j += 1 + width
            continue
        lines[-1].append((ch, base + j))
        j += 1
    escaped_break.append(False)

    out: List[str] = []
    offsets: List[int] = []
    count = len(lines)
    blank_run = 0
    joined_escaped = False
    for index, line in enumerate(lines):
        if index > 0 and not escaped_break[index - 1]:
            line = _lstrip(line, escaped=False)
        if index < count - 1 and not escaped_break[index]:
            line = _rstrip(line)
        if index == 0:
            out.extend(c for c, _ in line)
            offsets.extend(o for _, o in line)
            joined_escaped = escaped_break[0]
            continue
        if joined_escaped:
            line = _lstrip(line, escaped=False)
            joined_escaped = escaped_break[index]
            out.extend(c for c, _ in line)
            offsets.extend(o for _, o in line)
            continue
        if not line and index < count - 1:
            blank_run += 1
            continue
        at = offsets[-1] if offsets else base
        if blank_run == 0:
            out.append(" ")
            offsets.append(at)
        else:
            out.extend("\n" * blank_run)
            offsets.extend([at] * blank_run)
        blank_run = 0
        out.extend(c for c, _ in line)
        offsets.extend(o for _, o in line)
        joined_escaped = escaped_break[index]
    return ("".join(out), offsets)


def _lstrip(line: List[Tuple[str, int]], escaped: bool) -> List[Tuple[str, int]]:
    k = 0
    while k < len(line) and line[k][0] in " \t":
        k += 1
    return line[k:]


def _rstrip(line: List[Tuple[str, int]]) -> List[Tuple[str, int]]:
    k = len(line)
    while k > 0 and line[k - 1][0] in " \t":
        k -= 1
    return line[:k]


_SIMPLE_ESCAPES = {
    "0": "\0", "a": "\a", "b": "\b", "t": "\t", "\t": "\t", "n": "\n", "v": "\v", "f": "\f",
    "r": "\r", "e": "\x1b", " ": " ", '"': '"', "/": "/", "\\": "\\", "N": "\x85", "_": "\xa0",
    "L": "\u2028", "P": "\u2029",
}


def _escape(raw: str, j: int) -> Tuple[str, int]:
    """Decode the escape whose letter is at raw[j]; returns (text, characters consumed)."""
    letter = raw[j]
    if letter in _SIMPLE_ESCAPES:
        return _SIMPLE_ESCAPES[letter], 1
    digits = {"x": 2, "u": 4, "U": 8}.get(letter)
    if digits is None:
        raise ValueError("unknown escape")
    return chr(int(raw[j + 1:j + 1 + digits], 16)), 1 + digits


def _block(raw: str, base: int, folded: bool, file_text: str) -> Optional[Tuple[str, List[int]]]:
    """Literal `|` or folded `>` block scalar (YAML 1.2 §8.1)."""
    header_end = raw.find("\n")
    if header_end < 0:
        return ("", [])
    header = raw[1:header_end].split("#", 1)[0].strip()
    chomp = "clip"
    explicit_indent = 0
    for ch in header:
        if ch == "-":
            chomp = "strip"
        elif ch == "+":
            chomp = "keep"
        elif ch.isdigit():
            explicit_indent = int(ch)
    body_start = header_end + 1
    physical: List[Tuple[str, int]] = []  # (line text without break, offset of its first char)
    j = body_start
    while j < len(raw):
        end = raw.find("\n", j)
        if end < 0:
            end = len(raw)
        physical.append((raw[j:end].rstrip("\r"), base + j))
        j = end + 1
    if explicit_indent:
        # the indentation indicator is relative to the parent node's indentation, which is
        # the indentation of the line holding the block header
        line_start = file_text.rfind("\n", 0, base) + 1
        parent = len(file_text[line_start:base]) - len(file_text[line_start:base].lstrip(" "))
        indent = parent + explicit_indent
    else:
        indent = 0
        for text, _ in physical:
            if text.strip(" "):
                indent = len(text) - len(text.lstrip(" "))
                break
    # content lines: indentation removed; a line with less indentation ends the scalar
    content: List[Tuple[str, int]] = []
    for text, offset in physical:
        if text.strip(" ") == "":
            content.append(("", offset + len(text)))
            continue
        if len(text) - len(text.lstrip(" ")) < indent:
            break
        content.append((text[indent:], offset + indent))
    # trailing empty lines belong to chomping
    last = len(content)
    while last > 0 and content[last - 1][0] == "":
        last -= 1
    body, trailing = content[:last], content[last:]
    out: List[str] = []
    offsets: List[int] = []
    previous_kind = ""  # "", "normal", "more" (more-indented or starting with a tab/space)
    pending_blank = 0
    for index, (text, offset) in enumerate(body):
        if text == "":
            pending_blank += 1
            continue
        kind = "more" if text[0] in " \t" else "normal"
        if index > 0 and previous_kind:
            break_at = offsets[-1] + 1 if offsets else offset
            if folded and previous_kind == "normal" and kind == "normal":
                if pending_blank == 0:
                    out.append(" ")
                    offsets.append(break_at)
                else:
                    out.extend("\n" * pending_blank)
                    offsets.extend([break_at] * pending_blank)
            else:
                out.extend("\n" * (pending_blank + 1))
                offsets.extend([break_at] * (pending_blank + 1))
        elif pending_blank:
            out.extend("\n" * pending_blank)
            offsets.extend([offset] * pending_blank)
        pending_blank = 0
        out.extend(text)
        offsets.extend(range(offset, offset + len(text)))
        previous_kind = kind
    end_at = offsets[-1] + 1 if offsets else base
    if chomp != "strip" and body:
        out.append("\n")
        offsets.append(end_at)
    if chomp == "keep":
        extra = len(trailing) + pending_blank
        if not body:
            extra = len(trailing)
        out.extend("\n" * extra)
        offsets.extend([end_at] * extra)
    return ("".join(out), offsets)
