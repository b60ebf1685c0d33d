"""Regular expressions searched in time linear in the input, for organisation rule conditions.

An organisation's rule files come from the repository's `rules-dir`, so a pull request can
bring its own `pattern`. Python's `re` backtracks: `(a+)+$` against forty `a`s and a `!` takes
longer than the age of the universe, and even `.*x` is quadratic (a four-megabyte value, which
the loader admits, keeps it busy for hours); `re` cannot be interrupted inside such a loop. So a
rule condition's `pattern` is parsed with Python's own parser (the same syntax and character
classes as `re`) and searched by a lazily built DFA over the pattern's Thompson automaton:
every input character costs one dictionary lookup once its transition is known, and building a
transition costs at most the size of the automaton. That is linear in the input whatever the
pattern, and a work budget per pattern bounds the building too.

The subset is what a boolean search needs and a DFA can do: literals, `.`, classes (`[a-z]`,
`\\d`, `\\w`, `\\s` and their negations), groups, alternation, greedy and lazy repetition
(bounded counts up to MAX_COUNT), and the anchors `^`, `$`, `\\A`, `\\Z`. Back-references,
look-around, word boundaries, atomic groups, possessive repetition and flags raise
UnsafePattern: they either need backtracking or change the answer, and a rule that needs one
can almost always say the same with two conditions.
"""

from __future__ import annotations

import re
from typing import Callable, Dict, FrozenSet, List, Optional, Tuple

try:  # Python 3.11 moved the parser
    from re import _constants as _sre_constants  # type: ignore[attr-defined]
    from re import _parser as _sre_parse  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - Python 3.9, 3.10
    import sre_constants as _sre_constants  # type: ignore[no-redef]
    import sre_parse as _sre_parse  # type: ignore[no-redef]

MAX_COUNT = 100  # the largest m or n in {m,n}
MAX_NODES = 2000  # automaton size after {m,n} expansion
WORK_BUDGET = 2_000_000  # automaton steps one pattern may spend building its DFA in one run

_UNBOUNDED = _sre_constants.MAXREPEAT

# automaton node kinds
_CHAR, _SPLIT, _BOL, _EOL, _EOS, _MATCH = range(6)
# position contexts (bits): at the start; where `$` holds; at the very end
_AT_START, _AT_DOLLAR, _AT_END = 1, 2, 4


class UnsafePattern(ValueError):
    """A pattern outside the subset that can be searched in linear time (the reason is the text)."""


class PatternBudgetExceeded(RuntimeError):
    """Building the pattern's DFA for this input took more than WORK_BUDGET steps."""


_CATEGORIES: Dict[str, Callable[[str], bool]] = {
    "CATEGORY_DIGIT": str.isdecimal,
    "CATEGORY_NOT_DIGIT": lambda c: not c.isdecimal(),
    "CATEGORY_SPACE": str.isspace,
    "CATEGORY_NOT_SPACE": lambda c: not c.isspace(),
    "CATEGORY_WORD": lambda c: c.isalnum() or c == "_",
    "CATEGORY_NOT_WORD": lambda c: not (c.isalnum() or c == "_"),
}


def _class_test(items: list) -> Callable[[str], bool]:
    negate = False
    tests: List[Callable[[str], bool]] = []
    for op, arg in items:
        name = str(op)
        if name == "NEGATE":
            negate = True
        elif name == "LITERAL":
            literal = chr(arg)
            tests.append(lambda c, ch=literal: c == ch)
        elif name == "RANGE":
            tests.append(lambda c, lo=arg[0], hi=arg[1]: lo <= ord(c) <= hi)
        elif name == "CATEGORY" and str(arg) in _CATEGORIES:
            tests.append(_CATEGORIES[str(arg)])
        else:
            raise UnsafePattern(f"the character class item {name} {arg} is not supported")
    if negate:
        return lambda c: not any(test(c) for test in tests)
    return lambda c: any(test(c) for test in tests)


class LinearPattern:
    """`LinearPattern(source).search(text)` is `re.search(source, text) is not None`, in linear time."""

    def __init__(self, source: str):
        if not isinstance(source, str):
            raise UnsafePattern("a pattern must be a string")
        self.source = source
        try:
            parsed = _sre_parse.parse(source)
        except (re.error, RecursionError, OverflowError) as exc:
            raise UnsafePattern(f"pattern {source!r} is not a valid regular expression: {exc}") from None
        if parsed.state.flags & ~re.UNICODE:
            raise UnsafePattern(f"pattern {source!r}: inline flags such as (?i) are not supported")
        self._kind: List[int] = []
        self._arg: List[object] = []  # _CHAR: predicate index; _SPLIT: list of outs
        self._out: List[int] = []
        self._tests: List[Callable[[str], bool]] = []
        self._test_ids: Dict[object, int] = {}
        try:
            self._start = self._sequence(list(parsed), self._node(_MATCH))
        except UnsafePattern as exc:
            raise UnsafePattern(f"pattern {source!r}: {exc}") from None
        # the DFA, built as the input asks for it
        self._states: Dict[FrozenSet[int], int] = {}
        self._kernels: List[FrozenSet[int]] = []
        self._closures: Dict[Tuple[int, int], Tuple[Tuple[int, ...], bool]] = {}
        self._moves: Dict[Tuple[int, int, int], int] = {}
        self._middle: List[Dict[int, int]] = []  # per state: signature -> next state, mid-input
        self._middle_accepts: List[Optional[bool]] = []
        self._signatures: Dict[str, int] = {}
        self._work = 0

    # --- the automaton ----------------------------------------------------------------------

    def _node(self, kind: int, arg: object = None, out: int = -1) -> int:
        if len(self._kind) >= MAX_NODES:
            raise UnsafePattern(f"the pattern is too large (more than {MAX_NODES} automaton states)")
        self._kind.append(kind)
        self._arg.append(arg)
        self._out.append(out)
        return len(self._kind) - 1

    def _char(self, key: object, test: Callable[[str], bool], out: int) -> int:
        index = self._test_ids.get(key)
        if index is None:
            index = self._test_ids[key] = len(self._tests)
            self._tests.append(test)
        return self._node(_CHAR, index, out)

    def _sequence(self, items: list, out: int) -> int:
        for op, arg in reversed(items):
            out = self._item(str(op), arg, out)
        return out

    def _item(self, name: str, arg, out: int) -> int:
        if name in ("LITERAL", "NOT_LITERAL"):
            literal = chr(arg)
            if name == "LITERAL":
                return self._char(("=", arg), lambda c: c == literal, out)
            return self._char(("!=", arg), lambda c: c != literal, out)
        if name == "ANY":
            return self._char("any", lambda c: c != "\n", out)
        if name == "IN":
            return self._char(("in", repr(arg)), _class_test(arg), out)
        if name == "SUBPATTERN":
            _group, add_flags, del_flags, items = arg
            if add_flags or del_flags:
                raise UnsafePattern("inline flags such as (?i:...) are not supported")
            return self._sequence(list(items), out)
        if name == "BRANCH":
            return self._node(_SPLIT, [self._sequence(list(branch), out) for branch in arg[1]])
        if name in ("MAX_REPEAT", "MIN_REPEAT"):  # greedy or lazy: the same answer to "is there a match"
            low, high, items = arg
            return self._repeat(low, high, list(items), out)
        if name == "AT":
            at = str(arg)
            if at in ("AT_BEGINNING", "AT_BEGINNING_STRING"):
                return self._node(_BOL, None, out)
            if at == "AT_END":
                return self._node(_EOL, None, out)
            if at == "AT_END_STRING":
                return self._node(_EOS, None, out)
            raise UnsafePattern("word boundaries (\\b, \\B) are not supported")
        described = {
            "GROUPREF": "back-references", "GROUPREF_EXISTS": "conditional groups",
            "ASSERT": "look-ahead and look-behind", "ASSERT_NOT": "look-ahead and look-behind",
            "ATOMIC_GROUP": "atomic groups", "POSSESSIVE_REPEAT": "possessive repetition",
        }
        raise UnsafePattern(f"not supported: {described.get(name, name)}")

    def _repeat(self, low: int, high, items: list, out: int) -> int:
        if low > MAX_COUNT or (high is not _UNBOUNDED and high > MAX_COUNT):
            raise UnsafePattern(f"a repetition count above {MAX_COUNT} is not supported")
        if high is _UNBOUNDED:
            loop = self._node(_SPLIT, [])
            body = self._sequence(items, loop)
            self._arg[loop] = [body, out]  # type: ignore[assignment]
            tail = loop
        else:
            tail = out
            for _ in range(high - low):
                tail = self._node(_SPLIT, [self._sequence(items, tail), out])
        for _ in range(low):
            tail = self._sequence(items, tail)
        return tail

    # --- the lazily built DFA ---------------------------------------------------------------

    def _spend(self, steps: int) -> None:
        self._work += steps
        if self._work > WORK_BUDGET:
            raise PatternBudgetExceeded(
                f"the pattern {self.source!r} needed more than {WORK_BUDGET:,} automaton steps on this input")

    def _state(self, kernel: FrozenSet[int]) -> int:
        state = self._states.get(kernel)
        if state is None:
            state = self._states[kernel] = len(self._kernels)
            self._kernels.append(kernel)
            self._middle.append({})
            self._middle_accepts.append(None)
        return state

    def _closure(self, state: int, context: int) -> Tuple[Tuple[int, ...], bool]:
        """The character nodes reachable without input from the state (plus a new start, since
        a search may begin anywhere), and whether the match node is."""
        key = (state, context)
        known = self._closures.get(key)
        if known is not None:
            return known
        seen = set()
        stack = [self._start, *self._kernels[state]]
        chars: List[int] = []
        accept = False
        kinds, args, outs = self._kind, self._arg, self._out
        while stack:
            node = stack.pop()
            if node in seen:
                continue
            seen.add(node)
            kind = kinds[node]
            if kind == _CHAR:
                chars.append(node)
            elif kind == _SPLIT:
                stack.extend(args[node])  # type: ignore[arg-type]
            elif kind == _MATCH:
                accept = True
            elif (kind == _BOL and context & _AT_START) or (kind == _EOL and context & _AT_DOLLAR) or (
                kind == _EOS and context & _AT_END
            ):
                stack.append(outs[node])
        self._spend(len(seen))
        known = self._closures[key] = (tuple(sorted(chars)), accept)
        return known

    def _signature(self, char: str) -> int:
        """Which of the pattern's character tests accept this character, as a bit mask."""
        self._spend(len(self._tests))
        signature = 0
        for index, test in enumerate(self._tests):
            if test(char):
                signature |= 1 << index
        self._signatures[char] = signature
        return signature

    def _move(self, state: int, context: int, signature: int) -> int:
        key = (state, context, signature)
        target = self._moves.get(key)
        if target is None:
            chars, _ = self._closure(state, context)
            args, outs = self._arg, self._out
            kernel = frozenset(outs[node] for node in chars if signature >> args[node] & 1)  # type: ignore[operator]
            self._spend(len(chars) + 1)
            target = self._moves[key] = self._state(kernel)
        return target

    def search(self, text: str) -> bool:
        """Whether the pattern matches somewhere in text (re.search semantics, no flags)."""
        length = len(text)
        state = self._state(frozenset())
        signatures, middle, accepts = self._signatures, self._middle, self._middle_accepts
        for position, char in enumerate(text):
            if 0 < position < length - 1:  # the common case: no anchor can hold here
                accept = accepts[state]
                if accept is None:
                    accept = accepts[state] = self._closure(state, 0)[1]
                if accept:
                    return True
                signature = signatures.get(char)
                if signature is None:
                    signature = self._signature(char)
                target = middle[state].get(signature)
                if target is None:
                    target = middle[state][signature] = self._move(state, 0, signature)
                state = target
                continue
            context = self._context(text, position, length)
            if self._closure(state, context)[1]:
                return True
            signature = signatures.get(char)
            if signature is None:
                signature = self._signature(char)
            state = self._move(state, context, signature)
        return self._closure(state, self._context(text, length, length))[1]

    @staticmethod
    def _context(text: str, position: int, length: int) -> int:
        context = _AT_START if position == 0 else 0
        if position == length or (position == length - 1 and text[position] == "\n"):
            context |= _AT_DOLLAR
        if position == length:
            context |= _AT_END
        return context
