"""A POSIX-shell-ish tokenizer that keeps the source offset of every character of every word.

Deployment files hide engine command lines in shell text: `bash -c "…"` arguments in Kubernetes,
compose `command:` strings, `run:` scripts, Dockerfile shell-form `CMD`. `shlex` drops positions,
so this module re-implements the subset of the POSIX token rules (XCU 2.3, "Token Recognition",
https://pubs.opengroup.org/onlinepubs/9699919799/utilities/V3_chap02.html#tag_18_03) that such
command lines use:

* words separated by blanks; `'…'` (literal), `"…"` (with `\\$`, `\\\\`, `\\"`, `` \\` `` and
  `\\<newline>` escapes), `\\c` outside quotes;
* `\\<newline>` line continuation (removed, the word goes on);
* `#` comments at the start of a word;
* control operators `;` `&` `&&` `|` `||` `|&` `(` `)` and newline, which separate commands;
* redirections (`>`, `2>&1`, `<<EOF` here-documents, whose bodies are skipped);
* expansions (`$VAR`, `${VAR:-x}`, `$(…)`, `$((…))`, `` `…` ``) are kept verbatim in the word text
  and flagged, never evaluated.

It never raises and never loops: one left-to-right pass, each character looked at a bounded
number of times. Problems (an unterminated quote, an unclosed `$(`) are returned as data, with
offsets, for the caller to turn into findings.
"""

from __future__ import annotations

import re
from dataclasses import field
from typing import List, Optional, Tuple

from kvlint.records import dataclass

# Reserved words that may precede a simple command (XCU 2.4); stripped so that
# `then vllm serve …` or `do exec vllm serve …` still shows the engine command first.
_LEADING_RESERVED = frozenset(
    {"if", "then", "else", "elif", "fi", "do", "done", "while", "until", "!", "{", "}", "time"}
)
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=")

SEPARATORS = frozenset({";", "&", "&&", "|", "||", "|&", "(", ")", "\n", ";;"})
_REDIRECTIONS = frozenset({"<", ">", ">>", "<<", "<<-", "<&", ">&", "<>", ">|", "&>", "&>>", "<<<"})
# Longest first, so `&&` wins over `&`.
_OPERATORS = (
    "<<-", "&>>", "<<<", "&&", "||", "|&", ";;", "<<", ">>", "<&", ">&", "<>", ">|", "&>",
    ";", "&", "|", "(", ")", "<", ">",
)


@dataclass(frozen=True)
class Word:
    """One shell word after quote removal; `offsets[i]` is the source offset of `text[i]`."""

    text: str
    offsets: Tuple[int, ...]
    start: int  # offset of the word's first source character (an opening quote included)
    end: int  # offset just past its last source character
    quoted: bool = False  # some part was quoted or escaped
    expansion: bool = False  # holds `$…` or `` `…` `` outside single quotes (kept verbatim)
    # each expansion as (first index in text, index past it, inside double quotes): where the
    # shell substitutes a value, and whether it then splits the value into fields (unquoted only)
    expansions: Tuple[Tuple[int, int, bool], ...] = ()


@dataclass(frozen=True)
class Operator:
    """A shell control operator (`;`, `&&`, `|`, a newline) with its source offsets."""

    text: str
    start: int
    end: int


@dataclass(frozen=True)
class ShellProblem:
    """Why a shell script could not be read to its end, and where."""

    code: str  # "unterminated-quote", "unterminated-expansion", "unterminated-heredoc"
    message: str
    start: int
    end: int


@dataclass(frozen=True)
class HereDoc:
    """The body of a here-document (`<<EOF`), as offsets into the script text."""

    start: int
    end: int
    expands: bool  # an unquoted delimiter: the shell expands `$…` in the body


@dataclass(frozen=True)
class ArrayAssignment:
    """`NAME=(word …)` or `NAME+=(word …)`."""

    name: str
    append: bool
    elements: Tuple[Word, ...]
    word: Word  # the `NAME=` word


@dataclass(frozen=True)
class Command:
    """A simple command: leading `NAME=value` assignments, then the argv words."""

    assignments: Tuple[Word, ...]
    words: Tuple[Word, ...]
    start: int
    end: int
    # runs only if the command before it in an `a && b` / `a || b` list succeeded / failed
    conditional: bool = False
    piped: bool = False  # a later element of a pipeline (`… | xargs vllm serve`): a subshell
    stdin: Optional[HereDoc] = None  # `<<EOF` body fed to the command
    here_string: Optional[Word] = None  # `<<< word`
    arrays: Tuple[ArrayAssignment, ...] = ()


@dataclass(frozen=True)
class Block:
    """Where a compound command opens, changes branch or closes, in command order.

    kind: "open" (if, while/until/for, case, `{ … }`, a function body, a `( … )` subshell),
    "branch" (else, elif, `;;`) or "close"; `compound` names the compound for "open";
    `loop_variable` is the name a `for` loop assigns.
    """

    kind: str
    compound: str = ""
    loop_variable: str = ""
    function: str = ""  # the name of a function whose body this "open" starts


@dataclass
class Script:
    """A shell script read into simple commands, with the problems found.

    `items` holds the commands and the Blocks around them in order; `commands` only the commands.
    """

    commands: List[Command] = field(default_factory=list)
    problems: List[ShellProblem] = field(default_factory=list)
    items: List[object] = field(default_factory=list)


class _Lexer:
    def __init__(self, text: str):
        self.text = text
        self.n = len(text)
        self.i = 0
        self.tokens: List[object] = []
        self.problems: List[ShellProblem] = []
        # (delimiter, strip_tabs, start, delimiter quoted)
        self.pending_heredocs: List[Tuple[str, bool, int, bool]] = []
        self.expect_heredoc_word: Optional[Tuple[bool, int]] = None
        # word under construction
        self.chars: List[str] = []
        self.offs: List[int] = []
        self.word_start = -1
        self.quoted = False
        self.expansion = False
        self.expansions: List[Tuple[int, int, bool]] = []
        self.heredocs: List[HereDoc] = []  # bodies in the order their operators appear
        self.comments: List[int] = []  # offsets of the `#` of each comment

    # -- word buffer -------------------------------------------------------------------------
    def _begin(self, at: int) -> None:
        if self.word_start < 0:
            self.word_start = at

    def _add(self, ch: str, at: int) -> None:
        self.chars.append(ch)
        self.offs.append(at)

    def _finish_word(self, end: int) -> None:
        if self.word_start < 0:
            return
        word = Word(
            "".join(self.chars), tuple(self.offs), self.word_start, end, self.quoted, self.expansion,
            tuple(self.expansions),
        )
        self.chars, self.offs = [], []
        self.word_start = -1
        self.quoted = self.expansion = False
        self.expansions = []
        if self.expect_heredoc_word is not None:
            strip_tabs, op_start = self.expect_heredoc_word
            self.expect_heredoc_word = None
            self.pending_heredocs.append((word.text, strip_tabs, op_start, word.quoted))
        self.tokens.append(word)

    # -- main loop ---------------------------------------------------------------------------
    def run(self) -> None:
        text, n = self.text, self.n
        while self.i < n:
            ch = text[self.i]
            if ch == "\\":
                self._backslash()
            elif ch == "'":
                self._single_quote()
            elif ch == '"':
                self._double_quote()
            elif ch == "$" or ch == "`":
                self._begin(self.i)
                self.expansion = True
                self._expansion(self.i, False)
            elif ch == "\n":
                self._finish_word(self.i)
                self.tokens.append(Operator("\n", self.i, self.i + 1))
                self.i += 1
                self._heredoc_bodies()
            elif ch in " \t\r\f\v":
                self._finish_word(self.i)
                self.i += 1
            elif ch == "#" and self.word_start < 0:
                self.comments.append(self.i)
                end = text.find("\n", self.i)
                self.i = n if end < 0 else end
            elif ch in ";&|()<>":
                self._operator()
            else:
                self._begin(self.i)
                self._add(ch, self.i)
                self.i += 1
        self._finish_word(self.n)
        if self.pending_heredocs:
            delim, _, start, _ = self.pending_heredocs[0]
            self._problem(
                "unterminated-heredoc", f"here-document ends at end of input without {delim!r}",
                start, self.n,
            )

    def _problem(self, code: str, message: str, start: int, end: int) -> None:
        self.problems.append(ShellProblem(code, message, start, max(start, end)))

    def _backslash(self) -> None:
        i, text = self.i, self.text
        if i + 1 < self.n and text[i + 1] == "\n":
            self.i += 2  # line continuation: removed, the current word (if any) goes on
            return
        self._begin(i)
        self.quoted = True
        if i + 1 < self.n:
            self._add(text[i + 1], i + 1)
            self.i += 2
        else:
            self.i += 1  # a lone trailing backslash: dropped

    def _single_quote(self) -> None:
        start = self.i
        self._begin(start)
        self.quoted = True
        end = self.text.find("'", start + 1)
        stop = self.n if end < 0 else end
        for j in range(start + 1, stop):
            self._add(self.text[j], j)
        if end < 0:
            self._problem("unterminated-quote", "single quote is never closed", start, self.n)
            self.i = self.n
        else:
            self.i = end + 1

    def _double_quote(self) -> None:
        start = self.i
        self._begin(start)
        self.quoted = True
        text, n = self.text, self.n
        j = start + 1
        while j < n:
            ch = text[j]
            if ch == '"':
                self.i = j + 1
                return
            if ch == "\\" and j + 1 < n:
                nxt = text[j + 1]
                if nxt == "\n":
                    j += 2
                    continue
                if nxt in '$`"\\':
                    self._add(nxt, j + 1)
                    j += 2
                    continue
                self._add(ch, j)
                j += 1
                continue
            if ch == "$" or ch == "`":
                self.expansion = True
                self.i = j
                self._expansion(j, True)
                j = self.i
                continue
            self._add(ch, j)
            j += 1
        self._problem("unterminated-quote", "double quote is never closed", start, n)
        self.i = n

    def _expansion(self, start: int, in_double_quotes: bool) -> None:
        """Copy `$name`, `${…}`, `$(…)`, `$((…))` or `` `…` `` verbatim; leaves self.i past it."""
        first = len(self.chars)
        self._expansion_text(start)
        if len(self.chars) > first:
            self.expansions.append((first, len(self.chars), in_double_quotes))

    def _expansion_text(self, start: int) -> None:
        text, n = self.text, self.n
        if text[start] == "`":
            j = start + 1
            while j < n and text[j] != "`":
                j += 2 if text[j] == "\\" else 1
            if j >= n:
                self._copy(start, n)
                self._problem("unterminated-expansion", "backquote is never closed", start, n)
                self.i = n
            else:
                self._copy(start, j + 1)
                self.i = j + 1
            return
        if start + 1 >= n:
            self._copy(start, start + 1)
            self.i = start + 1
            return
        nxt = text[start + 1]
        if nxt == "{":
            end = self._balanced(start + 2, "{", "}")
            if end < 0:
                self._copy(start, n)
                self._problem("unterminated-expansion", "'${' is never closed", start, n)
                self.i = n
            else:
                self._copy(start, end + 1)
                self.i = end + 1
            return
        if nxt == "(":
            end = self._balanced(start + 2, "(", ")")
            if end < 0:
                self._copy(start, n)
                self._problem("unterminated-expansion", "'$(' is never closed", start, n)
                self.i = n
            else:
                self._copy(start, end + 1)
                self.i = end + 1
            return
        j = start + 1
        if nxt.isalpha() or nxt == "_":
            while j < n and (text[j].isalnum() or text[j] == "_"):
                j += 1
        elif nxt.isdigit() or nxt in "@*#?$!-":
            j += 1
        self._copy(start, j)
        self.i = j

    def _balanced(self, j: int, opening: str, closing: str) -> int:
        """Offset of the `closing` that matches an already-open `opening`, or -1.

        Quotes inside are skipped so `$(echo ")")` closes at the right place. Linear: every
        character is visited once.
        """
        text, n = self.text, self.n
        depth = 1
        while j < n:
            ch = text[j]
            if ch == "\\":
                j += 2
                continue
            if ch == "'":
                k = text.find("'", j + 1)
                if k < 0:
                    return -1
                j = k + 1
                continue
            if ch == '"':
                k = j + 1
                while k < n and text[k] != '"':
                    k += 2 if text[k] == "\\" else 1
                if k >= n:
                    return -1
                j = k + 1
                continue
            if ch == opening:
                depth += 1
            elif ch == closing:
                depth -= 1
                if depth == 0:
                    return j
            j += 1
        return -1

    def _copy(self, start: int, end: int) -> None:
        for j in range(start, min(end, self.n)):
            self._add(self.text[j], j)

    def _operator(self) -> None:
        text, i = self.text, self.i
        for op in _OPERATORS:
            if text.startswith(op, i):
                break
        else:  # pragma: no cover - the caller only calls on an operator character
            op = text[i]
        start = i
        if op[0] in "<>" and self.word_start >= 0 and self.chars and "".join(self.chars).isdigit():
            # `2>&1`: the digits are a file descriptor, not a word
            start = self.word_start
            self.chars, self.offs = [], []
            self.word_start = -1
            self.quoted = self.expansion = False
        else:
            self._finish_word(i)
        self.tokens.append(Operator(op, start, i + len(op)))
        self.i = i + len(op)
        if op in ("<<", "<<-"):
            self.expect_heredoc_word = (op == "<<-", start)

    def _heredoc_bodies(self) -> None:
        """After a newline, skip the bodies of here-documents opened on the line just ended."""
        text, n = self.text, self.n
        while self.pending_heredocs:
            delimiter, strip_tabs, start, quoted = self.pending_heredocs.pop(0)
            delimiter = delimiter.strip()
            body_start = self.i
            while self.i < n:
                end = text.find("\n", self.i)
                line_end = n if end < 0 else end
                line = text[self.i:line_end]
                line_start = self.i
                self.i = n if end < 0 else end + 1
                if (line.lstrip("\t") if strip_tabs else line) == delimiter:
                    self.heredocs.append(HereDoc(body_start, line_start, not quoted))
                    break
            else:
                self.heredocs.append(HereDoc(body_start, n, not quoted))
                self._problem(
                    "unterminated-heredoc",
                    f"here-document ends at end of input without {delimiter!r}",
                    start, n,
                )


_ARRAY_START = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(\+?)=$")
_OPENERS = {"if": "if", "while": "loop", "until": "loop", "{": "group"}
_CLOSERS = frozenset({"fi", "done", "esac", "}"})


def _is_assignment(word: Word) -> bool:
    """`NAME=value` (or `NAME+=value`) is an assignment only when `NAME=` is written unquoted
    (XCU 2.10.2 rule 7)."""
    match = _ASSIGNMENT.match(word.text)
    if not match:
        return False
    eq = match.end() - 1
    return word.offsets[eq] == word.start + eq


def _lex(text: str) -> _Lexer:
    lexer = _Lexer(text)
    lexer.run()
    return lexer


def comment_offsets(text: str) -> List[int]:
    """Offsets of the `#` of every comment (a `#` that starts a word outside quotes, XCU 2.3 rule
    9); a `#` inside a quoted string or a word is text."""
    return _lex(text).comments


def tokenize(text: str) -> Tuple[List[object], List[ShellProblem]]:
    """Words and operators of `text`, in order, plus any problems found."""
    lexer = _lex(text)
    return lexer.tokens, lexer.problems


class _Parser:
    """Tokens → simple commands and the compound structure around them (XCU 2.9).

    Only as much grammar as finding a command line and the variables it sees needs: which words
    open and close a compound command, branch points, `&&`/`||` lists, pipelines, here-documents,
    array assignments. Reserved words are recognised only where they start a command.
    """

    def __init__(self, text: str):
        lexer = _lex(text)
        self.tokens = lexer.tokens
        self.heredocs = lexer.heredocs
        self.script = Script(problems=list(lexer.problems))
        self.current: List[Word] = []
        self.stack: List[str] = []  # compounds open: "if", "loop", "case", "group", "subshell"
        self.conditional = False
        self.piped = False
        self.stdin: Optional[HereDoc] = None
        self.here_string: Optional[Word] = None
        self.arrays: List[ArrayAssignment] = []
        self.function = ""  # `name()` or `function name` seen: the next `{` opens its body

    def _emit(self, item: object) -> None:
        self.script.items.append(item)
        if isinstance(item, Command):
            self.script.commands.append(item)

    def _open(self, compound: str, loop_variable: str = "") -> None:
        function = ""
        if compound == "group" and self.function:
            compound, function, self.function = "function", self.function, ""
        self.stack.append(compound)
        self._emit(Block("open", compound, loop_variable, function))

    def _close(self) -> None:
        if self.stack:
            self.stack.pop()
            self._emit(Block("close"))

    def flush(self) -> None:
        words = list(self.current)
        self.current.clear()
        while words and not words[0].quoted:
            head = words[0].text
            if head in _OPENERS:
                self._open(_OPENERS[head])
            elif head in ("then", "do", "!", "time", "in"):
                pass
            elif head in ("else", "elif"):
                self._emit(Block("branch"))
            elif head in _CLOSERS:
                self._close()
            elif head == "for":
                variable = words[1].text if len(words) > 1 else ""
                self._open("loop", variable)
                words = []
                break
            elif head == "case":
                self._open("case")
                words = []
                break
            elif head == "function":
                self.function = words[1].text if len(words) > 1 else ""
                words = [w for w in words[2:] if w.text == "{"]  # `function name [()] {`
                continue
            else:
                break
            words.pop(0)
        assignments: List[Word] = []
        while words and _is_assignment(words[0]):
            assignments.append(words.pop(0))
        if words or assignments or self.arrays:
            first = (assignments or words or [self.arrays[0].word])[0]
            last = (words or assignments or [self.arrays[-1].word])[-1]
            self._emit(Command(
                tuple(assignments), tuple(words), first.start, last.end, self.conditional, self.piped,
                self.stdin, self.here_string, tuple(self.arrays),
            ))
        self.stdin = None
        self.here_string = None
        self.arrays = []

    def run(self) -> Script:
        tokens = self.tokens
        n = len(tokens)
        k = 0
        heredoc = 0
        while k < n:
            token = tokens[k]
            k += 1
            if isinstance(token, Word):
                self.current.append(token)
                continue
            assert isinstance(token, Operator)
            op = token.text
            if op in _REDIRECTIONS:
                target = tokens[k] if k < n and isinstance(tokens[k], Word) else None
                if target is not None:
                    k += 1  # the redirection's target word is not an argument
                if op in ("<<", "<<-") and heredoc < len(self.heredocs):
                    self.stdin = self.heredocs[heredoc]
                    heredoc += 1
                elif op == "<<<" and target is not None:
                    self.here_string = target
                continue
            if op == "(":
                last = self.current[-1] if self.current else None
                match = _ARRAY_START.match(last.text) if last is not None and not last.quoted else None
                if match and last is not None and last.end == token.start:
                    k = self._array(match, last, k)
                    continue
                if len(self.current) == 1 and k < n and isinstance(tokens[k], Operator) and tokens[k].text == ")":
                    # `name() { … }`: a function definition; its body opens next
                    self.function = self.current[0].text if not self.current[0].quoted else ""
                    self.current.clear()
                    k += 1
                    continue
                self.flush()
                self._open("subshell")
                continue
            if op == ")":
                if self.stack and self.stack[-1] == "case":
                    self.current.clear()  # the end of a case pattern
                    self.conditional = self.piped = False
                    continue
                self.flush()
                if self.stack and self.stack[-1] == "subshell":
                    self._close()
                continue
            self.flush()
            if op == ";;":
                self._emit(Block("branch"))
            self.conditional = op in ("&&", "||") or (self.conditional and op in ("|", "|&"))
            self.piped = op in ("|", "|&")
        self.flush()
        return self.script

    def _array(self, match: re.Match[str], word: Word, k: int) -> int:
        """`NAME=( … )`: the words up to the closing parenthesis are the elements."""
        self.current.pop()
        elements: List[Word] = []
        tokens = self.tokens
        while k < len(tokens):
            token = tokens[k]
            k += 1
            if isinstance(token, Word):
                elements.append(token)
            elif token.text == ")":
                break
            elif token.text != "\n":
                break
        self.arrays.append(ArrayAssignment(match.group(1), bool(match.group(2)), tuple(elements), word))
        return k


def parse(text: str) -> Script:
    """Split `text` into simple commands (redirections and reserved words removed), with the
    compound structure around them in `items`."""
    return _Parser(text).run()
