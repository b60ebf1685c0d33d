"""Shell word expansion as far as a file decides it: parameters, positional parameters, arrays,
field splitting, with the source position of every character kept.

The shell turns each word of a command into zero or more arguments (XCU 2.6, "Word Expansions",
https://pubs.opengroup.org/onlinepubs/9699919799/utilities/V3_chap02.html#tag_18_06): parameter
expansion (`$NAME`, `${NAME:-word}`, `"$@"`, `${ARR[@]}`), then field splitting of what an
unquoted expansion produced. kvlint does the same with what the file itself says. What it cannot
know — a variable from the caller's environment, a value assigned on some paths only, a command
substitution, the arguments a script was started with — makes the word *unresolved*: it keeps its
text, names what it depends on, and the engine-argument parser reports it (KV208) instead of
reading it as a value.
"""

from __future__ import annotations

import re
from dataclasses import field
from typing import Dict, List, Optional, Set, Tuple, Union

from kvlint.adapters.cmdline import Arg
from kvlint.adapters.shell import Word
from kvlint.adapters.source import Locator
from kvlint.records import dataclass


class _Unknown:
    """A variable whose value the file does not decide (assigned on some paths only, a loop
    variable, read from a command)."""

    def __init__(self, why: str):
        self.why = why

    def __repr__(self) -> str:
        return f"<unknown: {self.why}>"


Value = Union[str, Tuple[Arg, ...], _Unknown]  # a scalar, an array, or not decided by the file


def unknown(why: str) -> _Unknown:
    return _Unknown(why)


def is_unknown(value: object) -> bool:
    return isinstance(value, _Unknown)


@dataclass
class Unresolved:
    what: str


@dataclass
class ShellState:
    """What a word's expansion sees: the variables and the positional parameters.

    `positional` is None when the script's arguments are not known (a script file, a `-c` string
    given no arguments is known to have none). `name` is `$0`.
    """

    variables: Dict[str, Value] = field(default_factory=dict)
    positional: Optional[Tuple[Arg, ...]] = ()
    name: str = "sh"
    exported: Set[str] = field(default_factory=set)  # what a child process (`bash -c`) inherits

    def environment(self) -> Dict[str, Value]:
        """The variables a child shell starts with: the exported scalars."""
        return {k: v for k, v in self.variables.items() if k in self.exported and not isinstance(v, tuple)}

    def scalar(self, name: str) -> Optional[Value]:
        value = self.variables.get(name)
        if isinstance(value, tuple):
            return value[0].text if value else ""
        return value

    def known_strings(self) -> Dict[str, str]:
        """The variables with a decided scalar value (for code that expands text by itself)."""
        out: Dict[str, str] = {}
        for name, value in self.variables.items():
            if isinstance(value, str):
                out[name] = value
            elif isinstance(value, tuple):
                out[name] = value[0].text if value else ""
        return out


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_BRACED = re.compile(
    r"^(?P<length>#)?(?P<name>[A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!0-])"
    r"(?:\[(?P<index>[^\]]*)\])?(?P<rest>.*)$",
    re.DOTALL,
)
_OPERATOR = re.compile(r"^(:?[-=+?])(.*)$", re.DOTALL)
_IFS = " \t\n"


def parameter(ref: str, state: ShellState) -> Union[str, Tuple[Arg, ...], Unresolved]:
    """The value of one expansion as the lexer kept it (`$X`, `${X:-d}`, `$(…)`, `` `…` ``).

    A tuple of Args is a list of whole arguments (`"$@"`, `"${ARR[@]}"`)."""
    if ref.startswith("$((") and ref.endswith("))"):
        return _arithmetic(ref[3:-2], state)
    if ref.startswith("$(") or ref.startswith("`"):
        return Unresolved(f"the command substitution {_short(ref)}")
    if ref == "$":
        return "$"
    if ref.startswith("${") and ref.endswith("}"):
        inner = ref[2:-1]
    else:
        inner = ref[1:]
    match = _BRACED.match(inner)
    if not match:
        return Unresolved(f"the expansion {_short(ref)}")
    name, index, rest = match.group("name"), match.group("index"), match.group("rest")
    if match.group("length"):
        if rest:
            return Unresolved(f"the expansion {_short(ref)}")
        value = _lookup(name, index, state, ref)
        if isinstance(value, Unresolved) or value is None:
            return value if value is not None else "0"
        return str(len(value)) if isinstance(value, tuple) else str(len(value))
    value = _lookup(name, index, state, ref)
    if isinstance(value, Unresolved):
        return value
    if not rest:
        if value is None:
            return Unresolved(f"${name}, which is not set in this file")
        return value
    operator = _OPERATOR.match(rest)
    if not operator:
        # ${X%pattern}, ${X/a/b}, ${X^^}: pattern operations are not evaluated
        return Unresolved(f"the expansion {_short(ref)}")
    op, word = operator.groups()
    is_set = value is not None
    is_null = not is_set or value == "" or value == ()
    use_word = (is_null if op.startswith(":") else not is_set)
    if op[-1] == "-":
        return _word(word, state) if use_word else value  # type: ignore[return-value]
    if op[-1] == "=":
        if use_word:
            new = _word(word, state)
            if isinstance(new, str) and _NAME.fullmatch(name):
                state.variables[name] = new
            return new
        return value  # type: ignore[return-value]
    if op[-1] == "+":
        return "" if use_word else _word(word, state)
    # `?`: the shell stops with an error when the value is missing
    if use_word:
        return Unresolved(f"${name}, which must be set by whoever runs this (`{_short(ref)}`)")
    return value  # type: ignore[return-value]


def _lookup(name: str, index: Optional[str], state: ShellState, ref: str
            ) -> Union[None, str, Tuple[Arg, ...], Unresolved]:
    if name in ("@", "*"):
        if state.positional is None:
            return Unresolved(f"{ref}, the arguments the script is started with")
        return state.positional
    if name == "#":
        if state.positional is None:
            return Unresolved("$#, the number of arguments the script is started with")
        return str(len(state.positional))
    if name == "0":
        return state.name
    if name.isdigit():
        if state.positional is None:
            return Unresolved(f"${name}, an argument the script is started with")
        i = int(name)
        return state.positional[i - 1].text if i <= len(state.positional) else None
    if name in ("?", "$", "!", "-"):
        return Unresolved(f"${name}, known only when the shell runs")
    value = state.variables.get(name)
    if is_unknown(value):
        return Unresolved(f"${name}, {value.why}")  # type: ignore[union-attr]
    if index is None:
        if isinstance(value, tuple):
            return value[0].text if value else ""
        return value  # type: ignore[return-value]
    if not isinstance(value, tuple):
        value = () if value is None else (value,)  # type: ignore[assignment]
    if index in ("@", "*"):
        return value  # type: ignore[return-value]
    if index.isdigit():
        i = int(index)
        items = value  # type: ignore[assignment]
        if i < len(items):
            item = items[i]
            return item.text if isinstance(item, Arg) else str(item)
        return None
    return Unresolved(f"{ref} (an array index kvlint does not evaluate)")


def _word(word: str, state: ShellState) -> Union[str, Unresolved]:
    """The `word` of `${X:-word}`: quotes removed, nested expansions evaluated."""
    out: List[str] = []
    i = 0
    n = len(word)
    quote = ""
    while i < n:
        ch = word[i]
        if quote != "'" and ch == "$":
            end = _reference_end(word, i)
            value = parameter(word[i:end], state)
            if isinstance(value, Unresolved):
                return value
            out.append(" ".join(a.text for a in value) if isinstance(value, tuple) else value)
            i = end
            continue
        if ch in "'\"" and (not quote or quote == ch):
            quote = "" if quote else ch
        elif ch == "\\" and i + 1 < n and quote != "'":
            out.append(word[i + 1])
            i += 2
            continue
        else:
            out.append(ch)
        i += 1
    return "".join(out)


def _reference_end(text: str, i: int) -> int:
    """Index just past the expansion starting at text[i] == '$'."""
    n = len(text)
    if i + 1 >= n:
        return n
    nxt = text[i + 1]
    if nxt in "{(":
        closing = "}" if nxt == "{" else ")"
        depth = 0
        j = i + 1
        while j < n:
            if text[j] == nxt:
                depth += 1
            elif text[j] == closing:
                depth -= 1
                if depth == 0:
                    return j + 1
            j += 1
        return n
    match = _NAME.match(text, i + 1)
    if match:
        return match.end()
    return i + 2


_ARITH = re.compile(r"^[\sA-Za-z0-9_+\-*/%()$]*$")


def _arithmetic(body: str, state: ShellState) -> Union[str, Unresolved]:
    """`$((…))` with integer constants and decided variables, + - * / % and parentheses."""
    if not _ARITH.match(body) or len(body) > 200:
        return Unresolved(f"the arithmetic $(({body}))")
    missing: List[str] = []

    def name(match: re.Match[str]) -> str:
        value = state.scalar(match.group(1))
        if isinstance(value, str) and re.fullmatch(r"-?\d+", value.strip()):
            return value.strip()
        if value is None or value == "":
            return "0"
        missing.append(match.group(1))
        return "0"

    expression = re.sub(r"\$?\b([A-Za-z_][A-Za-z0-9_]*)\b", name, body)
    if missing:
        return Unresolved(f"${missing[0]} in $(({body.strip()}))")
    try:
        value = _evaluate(expression)
    except (ValueError, ZeroDivisionError, IndexError):
        return Unresolved(f"the arithmetic $(({body}))")
    return str(value)


def _evaluate(expression: str) -> int:
    """A tiny integer expression evaluator (no eval): precedence climbing over + - * / %."""
    tokens = re.findall(r"\d+|[-+*/%()]", expression)
    if "".join(tokens) != re.sub(r"\s+", "", expression):
        raise ValueError(expression)
    position = 0

    def atom() -> int:
        nonlocal position
        token = tokens[position]
        position += 1
        if token == "(":
            value = sum_()
            if tokens[position] != ")":
                raise ValueError(expression)
            position += 1
            return value
        if token == "-":
            return -atom()
        if token == "+":
            return atom()
        return int(token)

    def product() -> int:
        nonlocal position
        value = atom()
        while position < len(tokens) and tokens[position] in "*/%":
            op = tokens[position]
            position += 1
            right = atom()
            if op == "*":
                value *= right
            elif op == "/":
                value = int(value / right)
            else:
                value = value % right
        return value

    def sum_() -> int:
        nonlocal position
        value = product()
        while position < len(tokens) and tokens[position] in "+-":
            op = tokens[position]
            position += 1
            right = product()
            value = value + right if op == "+" else value - right
        return value

    result = sum_()
    if position != len(tokens) or abs(result) > 10 ** 18:
        raise ValueError(expression)
    return result


def _short(text: str) -> str:
    return text if len(text) <= 40 else text[:37] + "..."


def expand_word(
    word: Word, locator: Locator, origin: str, state: ShellState, first: int = 0, split: bool = True
) -> List[Arg]:
    """The arguments one shell word becomes (`first`: expand `word.text[first:]` only, for the value
    of an assignment, which is never split). An unresolved word is one Arg with `unresolved` set."""
    text = word.text
    whole = locator.span(word.start, word.end)
    if not word.expansions:
        return [Arg(text[first:], word.offsets[first:], locator, whole, origin)]
    fields: List[Tuple[List[str], List[int]]] = [([], [])]
    missing: List[str] = []
    splits = False
    position = first

    def literal(start: int, end: int) -> None:
        chars, offsets = fields[-1]
        chars.extend(text[start:end])
        offsets.extend(word.offsets[start:end])

    for start, end, quoted in word.expansions:
        if end <= first:
            continue
        literal(position, start)
        position = end
        value = parameter(text[start:end], state)
        if isinstance(value, Unresolved):
            missing.append(value.what)
            splits = splits or not quoted
            continue
        if isinstance(value, tuple):
            joined = quoted and ("*" in text[start:end].rsplit("[", 1)[-1] or text[start:end] in ("$*", "${*}"))
            if start == first and end == len(text) and split and not joined:
                return list(value)  # "$@" / "${ARR[@]}": each element one argument
            value = " ".join(a.text for a in value)  # "$*" / "${ARR[*]}": one word
        span_offsets = word.offsets[start:end]
        for k, ch in enumerate(value):
            offset = span_offsets[0] if k == 0 else span_offsets[min(k, len(span_offsets) - 1)]
            if k == len(value) - 1:
                offset = span_offsets[-1]
            if split and not quoted and ch in _IFS:
                if fields[-1][0]:
                    fields.append(([], []))
                continue
            fields[-1][0].append(ch)
            fields[-1][1].append(offset)
    literal(position, len(text))
    if missing:
        return [Arg(text[first:], word.offsets[first:], locator, whole, origin, True, tuple(missing), splits)]
    args = [
        Arg("".join(chars), tuple(offsets), locator, whole, origin)
        for chars, offsets in fields if chars
    ]
    if not args and (word.quoted or not split):
        args = [Arg("", (), locator, whole, origin)]
    return args


def assignment_value(word: Word, locator: Locator, origin: str, state: ShellState) -> Tuple[str, bool, Value, Arg]:
    """`NAME=value` / `NAME+=value`: the name, whether it appends, the value (unknown when the file
    does not decide it) and the value as an Arg (for positions)."""
    eq = word.text.index("=")
    append = eq > 0 and word.text[eq - 1] == "+"
    name = word.text[: eq - 1] if append else word.text[:eq]
    args = expand_word(word, locator, origin, state, first=eq + 1, split=False)
    arg = args[0] if args else Arg("", (), locator, locator.span(word.start, word.end), origin)
    value: Value = unknown("assigned from " + "; ".join(arg.unresolved)) if arg.unresolved else arg.text
    return name, append, value, arg

