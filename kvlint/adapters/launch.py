"""From an argv (exec form, or a shell script inside it) to parsed engine invocations.

Shared by every format that carries a process launch: Kubernetes containers, compose services,
Dockerfiles and shell scripts. Shell text is tokenised with positions (`shell.py`); `export` and
`NAME=value` prefix assignments feed the environment used to resolve `$VAR` in later commands and
are recorded as engine env when they are engine variables (`VLLM_*`, …).
"""

from __future__ import annotations

import os
import re
from dataclasses import field
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from kvlint.findings import Span
from kvlint.records import dataclass

from kvlint.adapters import shell
from kvlint.adapters.cmdline import (
    Arg, Invocation, ParsedCommand, Setting, find_invocation, parse_command,
)
from kvlint.adapters.images import ImageEngine, engine_from_image
from kvlint.adapters.result import Problem, problem_code
from kvlint.adapters.expansion import ShellState, Value, assignment_value, expand_word, is_unknown, unknown
from kvlint.adapters.source import FixedLocator, Locator, OffsetLocator
from kvlint.adapters.workload import Fact, is_engine_env

SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ash", "ksh"})
# the program an engine image's ENTRYPOINT runs, when it is not the vLLM-style "entrypoint"
ENTRYPOINT_FORMS = {"llama.cpp": "llama-server", "ollama": "ollama serve"}

_SHELL_PROBLEM = {
    "unterminated-quote": "an unterminated quote",
    "unterminated-expansion": "an unterminated expansion",
    "unterminated-heredoc": "an unterminated here-document",
}


class SubLocator(Locator):
    """Positions of the characters of one Arg's text (a script inside an argv element)."""

    def __init__(self, arg: Arg):
        self._arg = arg

    def position(self, offset: int) -> Tuple[int, int]:
        offsets = self._arg.offsets
        if not offsets:
            return (self._arg.whole.line, self._arg.whole.column)
        if offset >= len(offsets):
            line, column = self._arg.locator.position(offsets[-1])
            return (line, column + 1)
        return self._arg.locator.position(offsets[max(offset, 0)])


@dataclass
class Launch:
    """One engine invocation found in a launch, with the env it sees."""

    command: ParsedCommand
    env: Dict[str, Fact] = field(default_factory=dict)  # engine env set by the script itself
    in_shell: bool = False
    # `docker run IMAGE …` in a script: (the image's engine, the image as written, its span)
    image: Optional[Tuple[ImageEngine, str, Span]] = None


@dataclass
class LaunchResult:
    """The engine launches found in a container's command, and the problems found reading it."""

    launches: List[Launch] = field(default_factory=list)
    problems: List[Problem] = field(default_factory=list)
    shell_script: bool = False  # the argv ran a shell script
    recognised: bool = False  # some engine invocation was found


_SHELL_VALUE_OPTIONS = frozenset({"-o", "+o", "-O", "+O", "--rcfile", "--init-file"})


@dataclass(frozen=True)
class ShellCall:
    """`sh [options] -c SCRIPT [NAME [ARG…]]`, or `sh [-s] [ARG…]` reading its script from stdin."""

    script: Optional[Arg]  # None: the script comes from standard input
    name: Optional[Arg]
    arguments: Tuple[Arg, ...]


def shell_call(argv: Sequence[Arg]) -> Optional[ShellCall]:
    """Read a shell's own command line (bash(1) INVOCATION, XCU sh OPTIONS): option clusters
    (`-euxc`, `-lc`), `-o NAME`, `--login`, `--` before the script; None if argv[0] is no shell
    or it runs a script file."""
    if not argv or os.path.basename(argv[0].text) not in SHELLS:
        return None
    command_mode = False
    i = 1
    while i < len(argv):
        text = argv[i].text
        if text == "--" or text == "-":
            i += 1
            break
        if text in _SHELL_VALUE_OPTIONS:
            i += 2
            continue
        if text.startswith("--"):
            if text == "--command":
                command_mode = True
            i += 1
            continue
        if len(text) > 1 and text[0] in "-+":
            if "c" in text[1:] and text[0] == "-":
                command_mode = True
            if text[0] == "-" and text[1:].endswith("o") or text[0] == "+" and text[1:].endswith("o"):
                i += 1  # `-euo pipefail`: the cluster's last option takes the next word
            i += 1
            continue
        break
    rest = tuple(argv[i:])
    if command_mode:
        if not rest:
            return None
        return ShellCall(rest[0], rest[1] if len(rest) > 1 else None, rest[2:])
    if rest:
        return None  # `bash script.sh`: a file kvlint does not follow
    return ShellCall(None, None, ())


def shell_problems(script: shell.Script, locator: Locator) -> List[Problem]:
    return [
        Problem(
            problem_code("shell-syntax"),
            "shell-syntax",
            f"shell syntax: {_SHELL_PROBLEM.get(p.code, p.code)} ({p.message}); the shell refuses "
            "to run this script, and kvlint reads the command up to the end of the text",
            locator.span(p.start, p.end if p.end > p.start else p.start + 1),
            "error",
        )
        for p in script.problems
    ]


# Bounds on the work one file can cause (nested `sh -c` / `eval` levels, commands interpreted).
MAX_NESTING = 8
MAX_COMMANDS = 20_000
MAX_LAUNCHES = 256  # engine commands of one file checked (60k made a run of ~40 s)

# Programs that run their arguments as a command after some options of their own: name -> options
# that take a value. (tini: https://github.com/krallin/tini#options; dumb-init --help; GNU
# coreutils nohup, nice, timeout, stdbuf, setsid, taskset, chrt; numactl(8); sudo(8); gosu; su-exec)
_WRAPPERS: Dict[str, frozenset] = {
    "exec": frozenset({"-a"}),
    "command": frozenset(),
    "builtin": frozenset(),
    "nohup": frozenset(),
    "setsid": frozenset(),
    "time": frozenset({"-f", "-o"}),
    "nice": frozenset({"-n"}),
    "ionice": frozenset({"-c", "-n", "-p"}),
    "stdbuf": frozenset({"-i", "-o", "-e"}),
    "taskset": frozenset(),
    "chrt": frozenset(),
    "tini": frozenset({"-p", "-e", "-l"}),
    "tini-static": frozenset({"-p", "-e", "-l"}),
    "dumb-init": frozenset({"-r", "--rewrite"}),
    "catatonit": frozenset(),
    "sudo": frozenset({"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T"}),
    "numactl": frozenset({"-N", "-m", "-C", "-i", "-p", "-P"}),
    "timeout": frozenset({"-s", "-k", "--signal", "--kill-after"}),
    "accelerate": frozenset(),
}
# wrappers whose first operand is not the command (timeout DURATION, taskset MASK, gosu USER, chrt PRIO)
_OPERANDS_BEFORE_COMMAND = {"timeout": 1, "taskset": 1, "chrt": 1, "gosu": 1, "su-exec": 1}
_XARGS_VALUE_OPTIONS = frozenset({"-n", "-I", "-d", "-L", "-P", "-s", "-E", "-a", "-i", "-l", "-e"})


class ShellRunner:
    """Walks a shell script as the shell would run it, far enough to find each engine command,
    the arguments it gets and the environment it sees (module docstring of `expansion.py`).

    Variables assigned inside an `if`, `case`, loop, function body or `a && b` list hold their value
    inside it and are unknown after it when the branches can disagree; a subshell's assignments
    are dropped after it.
    """

    def __init__(self, release_for: ReleaseFor):
        self.release_for = release_for
        self.result = LaunchResult(shell_script=True)
        self.exported: Dict[str, Fact] = {}
        self.commands = 0
        # functions the scripts define: name -> (body items, text, locator, origin)
        self.functions: Dict[str, Tuple[List[object], str, Locator, str]] = {}
        self.called: set = set()
        self.commands_cut = False  # the MAX_COMMANDS note was made
        self.launches_cut = False  # the MAX_LAUNCHES note was made

    # -- scripts -------------------------------------------------------------------------------
    def run(self, text: str, locator: Locator, origin: str, state: ShellState, depth: int = 0) -> None:
        script = shell.parse(text)
        self.result.problems.extend(shell_problems(script, locator))
        self._items(script.items, text, locator, origin, state, depth)
        if depth == 0:
            # a function the script defines but kvlint did not see called (it may be called from
            # elsewhere): its commands, with arguments unknown
            for name in [n for n in self.functions if n not in self.called]:
                self.called.add(name)
                items, body_text, body_locator, body_origin = self.functions[name]
                self._items(items, body_text, body_locator, body_origin,
                            ShellState(dict(state.variables), None, state.name, set(state.exported)), 1)

    def _items(self, items: Sequence[object], text: str, locator: Locator, origin: str, state: ShellState,
               depth: int) -> None:
        frames: List[_Frame] = []
        andor: Optional[_Frame] = None
        index = 0
        while index < len(items):
            item = items[index]
            index += 1
            if isinstance(item, shell.Block) and item.kind == "open" and item.compound == "function":
                end = _block_end(items, index)
                self.functions[item.function] = (list(items[index:end]), text, locator, origin)
                index = end + 1
                continue
            if self.commands >= MAX_COMMANDS:
                if self.commands_cut:
                    return
                self.commands_cut = True
                self.result.problems.append(Problem(
                    problem_code("not-checked"), "not-checked",
                    f"kvlint stopped reading this script after {MAX_COMMANDS} commands; the rest is not checked",
                    locator.span(0, 1), "info",
                ))
                return
            if isinstance(item, shell.Block) or not item.conditional:
                if andor is not None:
                    andor.close(state)
                    frames.remove(andor)
                    andor = None
            if isinstance(item, shell.Block):
                if item.kind == "open":
                    frames.append(_Frame(item.compound, frames))
                    if item.loop_variable:
                        frames[-1].assign(state, item.loop_variable, unknown("a loop variable"))
                elif item.kind == "branch" and frames:
                    frames[-1].branch(state)
                elif item.kind == "close" and frames:
                    frames.pop().close(state)
                continue
            if item.conditional and andor is None:
                andor = _Frame("list", frames)
                frames.append(andor)
            self.commands += 1
            self._command(item, text, locator, origin, state, frames, depth)
        while frames:
            frames.pop().close(state)

    def _assign(self, state: ShellState, frames: List[_Frame], name: str, value: Value, piped: bool) -> None:
        if piped:
            return  # a pipeline element runs in a subshell
        if frames:
            frames[-1].assign(state, name, value)
        else:
            state.variables[name] = value

    def _command(
        self, command: shell.Command, text: str, locator: Locator, origin: str, state: ShellState,
        frames: List[_Frame], depth: int,
    ) -> None:
        line = locator.position(command.start)[0]
        where = f"{origin} (shell, line {line})"
        for array in command.arrays:
            elements: List[Arg] = []
            for word in array.elements:
                elements.extend(expand_word(word, locator, where, state))
            if any(e.unresolved for e in elements):
                value: Value = unknown("an array built from values decided at run time")
            else:
                prior = state.variables.get(array.name) if array.append else ()
                value = (prior if isinstance(prior, tuple) else ()) + tuple(elements)
            self._assign(state, frames, array.name, value, command.piped)
        prefix: Dict[str, Fact] = {}
        prefix_values: Dict[str, Value] = {}
        for word in command.assignments:
            name, value, fact = self._assignment(word, locator, where, state)
            prefix[name] = fact
            prefix_values[name] = value
            if not command.words:
                self._assign(state, frames, name, value, command.piped)
        words = command.words
        if not words:
            for name, fact in prefix.items():
                if is_engine_env(name):
                    self.exported[name] = fact
            return
        head = words[0].text if not words[0].quoted else ""
        if head in ("export", "declare", "typeset", "local", "readonly"):
            exports = head == "export" or any(w.text.startswith("-") and "x" in w.text for w in words[1:])
            for word in words[1:]:
                if "=" in word.text and not word.text.startswith("-") and shell._is_assignment(word):
                    name, value, fact = self._assignment(word, locator, where, state)
                    self._assign(state, frames, name, value, command.piped)
                    if is_engine_env(name) and head != "local":
                        self.exported[name] = fact
                elif _NAME_RE.fullmatch(word.text):
                    name = word.text
                else:
                    continue
                if exports and not command.piped:
                    state.exported.add(name)
            return
        if head == "unset":
            for word in words[1:]:
                if not word.text.startswith("-"):
                    self._assign(state, frames, word.text, unknown("unset") if frames else "", command.piped)
                    if not frames:
                        state.variables.pop(word.text, None)
            return
        if head in ("read", "mapfile", "readarray", "getopts"):
            for word in words[1:]:
                if _NAME_RE.fullmatch(word.text):
                    self._assign(state, frames, word.text, unknown(f"read by `{head}`"), command.piped)
            return
        argv: List[Arg] = []
        for word in words:
            argv.extend(expand_word(word, locator, where, state))
        if head == "set":
            self._set(argv[1:], state)
            return
        if head == "shift":
            count = int(argv[1].text) if len(argv) > 1 and argv[1].text.isdigit() else 1
            if state.positional is not None:
                state.positional = state.positional[count:]
            return
        local = dict(state.variables)
        local.update(prefix_values)
        env = dict(prefix)
        self._launch(argv, env, ShellState(local, state.positional, state.name, state.exported | set(prefix)),
                     command, text, locator, where, depth)

    def _set(self, args: Sequence[Arg], state: ShellState) -> None:
        """`set -- a b c` (or `set a b`) replaces the positional parameters; options only otherwise."""
        i = 0
        while i < len(args) and args[i].text[:1] in "-+" and args[i].text != "--":
            i += 2 if args[i].text in ("-o", "+o") else 1
        if i < len(args) and args[i].text == "--":
            state.positional = tuple(args[i + 1:])
        elif i < len(args):
            state.positional = tuple(args[i:])

    def _assignment(self, word: shell.Word, locator: Locator, where: str, state: ShellState) -> Tuple[str, Value, Fact]:
        name, append, value, arg = assignment_value(word, locator, where, state)
        if append and isinstance(value, str):
            prior = state.scalar(name)
            value = (prior + value) if isinstance(prior, str) else unknown("appended to a value decided at run time")
        key_span = locator.span(word.offsets[0], word.offsets[max(len(name) - 1, 0)] + 1) if name else arg.whole
        span = arg.span() if arg.text else locator.span(word.start, word.end)
        fact_value = value if isinstance(value, str) else arg.text
        return name, value, Fact(fact_value, span, f"{where}: {name}=", key_span)

    # -- one command ---------------------------------------------------------------------------
    def _launch(
        self, argv: List[Arg], env: Dict[str, Fact], state: ShellState, command: Optional[shell.Command],
        text: str, locator: Locator, where: str, depth: int,
    ) -> None:
        if depth > MAX_NESTING or not argv:
            return
        argv = self._unwrap(argv, env, state, where)
        if not argv:
            return
        base = os.path.basename(argv[0].text)
        if argv[0].text in self.functions:
            # a call: the body runs with the call's arguments as $1…
            self.called.add(argv[0].text)
            items, body_text, body_locator, body_origin = self.functions[argv[0].text]
            inner = ShellState(state.variables, tuple(argv[1:]), state.name, state.exported)
            self._items(items, body_text, body_locator, body_origin, inner, depth + 1)
            return
        if base == "eval":
            self._eval(argv[1:], state, where, depth)
            return
        if base in ("su", "runuser"):
            script = _su_command(argv)
            if script is not None:
                self._nested(script, None, (), state, depth)
            return
        call = shell_call(argv)
        if call is not None:
            if call.script is not None:
                self._nested(call.script, call.name, call.arguments, state, depth)
            elif command is not None and command.stdin is not None:
                body = command.stdin
                # an unquoted delimiter: this shell expands the body first, with all its variables
                variables = dict(state.variables) if body.expands else state.environment()
                inner = ShellState(variables, (), os.path.basename(argv[0].text), set(state.exported))
                self.run(text[body.start:body.end], OffsetLocator(locator, body.start), where, inner, depth + 1)
            elif command is not None and command.here_string is not None:
                for arg in expand_word(command.here_string, locator, where, state, split=False):
                    self._nested(arg, None, (), state, depth)
            return
        variables = state.known_strings()
        docker = docker_run(argv, variables, self.release_for)
        if docker is not None:
            for launch in docker.launches:
                engine_env = dict(self.exported)
                engine_env.update(launch.env)
                launch.env = engine_env
            self.result.launches.extend(docker.launches)
            self.result.problems.extend(docker.problems)
            self.result.recognised = self.result.recognised or docker.recognised
            return
        invocation = find_invocation(argv)
        if invocation is None:
            nested = next((i for i in range(1, len(argv)) if shell_call(argv[i:]) is not None
                           and shell_call(argv[i:]).script is not None), None)  # type: ignore[union-attr]
            if nested is not None:  # an unknown wrapper in front of `sh -c …`
                self._launch(list(argv[nested:]), env, state, command, text, locator, where, depth + 1)
            return
        if len(self.result.launches) >= MAX_LAUNCHES:  # each is a workload checked in full
            if not self.launches_cut:
                self.launches_cut = True
                self.result.problems.append(Problem(
                    problem_code("not-checked"), "not-checked",
                    f"kvlint checks the first {MAX_LAUNCHES} engine commands of a file; the others are not checked",
                    argv[0].whole, "info",
                ))
            return
        parsed = parse_command(argv, invocation, self.release_for(invocation.engine), variables)
        engine_env = dict(self.exported)
        engine_env.update({n: f for n, f in env.items() if is_engine_env(n)})
        self.result.launches.append(Launch(parsed, engine_env, True))
        self.result.recognised = True

    def _unwrap(self, argv: List[Arg], env: Dict[str, Fact], state: ShellState, where: str) -> List[Arg]:
        """Strip the programs that run the rest of the line as a command (`exec`, `env`, `tini --`,
        `nohup`, `xargs`, …), recording `env NAME=value` settings."""
        for _ in range(16):
            if not argv:
                return argv
            base = os.path.basename(argv[0].text)
            if base == "env":
                argv = self._env(argv, env, state, where)
                continue
            if base == "xargs":
                i = 1
                while i < len(argv) and argv[i].text.startswith("-"):
                    i += 2 if argv[i].text in _XARGS_VALUE_OPTIONS else 1
                tail = argv[-1] if len(argv) > 1 else argv[0]
                stdin_args = Arg("(standard input)", (), tail.locator, tail.whole, tail.origin, True,
                                 ("the arguments xargs reads from standard input",), True)
                argv = list(argv[i:]) + [stdin_args] if i < len(argv) else []
                continue
            if base in _WRAPPERS or base in _OPERANDS_BEFORE_COMMAND:
                takes_value = _WRAPPERS.get(base, frozenset())
                i = 1
                while i < len(argv):
                    text = argv[i].text
                    if text == "--":
                        i += 1
                        break
                    if not text.startswith("-") or text == "-":
                        break
                    i += 2 if text in takes_value else 1
                i += _OPERANDS_BEFORE_COMMAND.get(base, 0)
                if base == "exec" and i >= len(argv):
                    return []
                argv = list(argv[i:])
                continue
            return argv
        return argv

    def _env(self, argv: List[Arg], env: Dict[str, Fact], state: ShellState, where: str) -> List[Arg]:
        """`env [-i] [-u NAME] [-C DIR] [-S STRING] [NAME=VALUE]… COMMAND` (GNU coreutils env)."""
        i = 1
        while i < len(argv):
            text = argv[i].text
            if text == "--":
                i += 1
                break
            if text in ("-u", "--unset", "-C", "--chdir"):
                i += 2
                continue
            if text in ("-S", "--split-string") or text.startswith("-S") or text.startswith("--split-string="):
                if text in ("-S", "--split-string"):
                    string = argv[i + 1] if i + 1 < len(argv) else None
                    rest = argv[i + 2:]
                else:
                    cut = 2 if text.startswith("-S") else len("--split-string=")
                    arg = argv[i]
                    string = Arg(arg.text[cut:], arg.offsets[cut:], arg.locator, arg.whole, arg.origin,
                                 arg.expansion, arg.unresolved, arg.splits)
                    rest = argv[i + 1:]
                if string is None:
                    return []
                words = [w for c in shell.parse(string.text).commands for w in c.assignments + c.words]
                sub = SubLocator(string)
                split: List[Arg] = []
                for word in words:
                    split.extend(expand_word(word, sub, string.origin, state))
                # the split words take the place of the string; `env` reads them as its own arguments
                return [Arg("env", (), string.locator, string.whole, string.origin)] + split + list(rest)
            if text.startswith("-") and len(text) > 1:
                i += 1
                continue
            if "=" in text and _NAME_RE.fullmatch(text.partition("=")[0]):
                name, _, value = text.partition("=")
                arg = argv[i]
                start = len(name) + 1
                state.variables[name] = value
                state.exported.add(name)
                env[name] = Fact(value, arg.span(start) if start < len(text) else arg.span(), f"{where}: env {name}=",
                                 arg.span(0, len(name)))
                i += 1
                continue
            break
        return list(argv[i:])

    def _eval(self, args: Sequence[Arg], state: ShellState, where: str, depth: int) -> None:
        """`eval ARG…`: the arguments joined by spaces are read again as a script, in this shell."""
        if not args:
            return
        if any(a.unresolved for a in args):
            arg = next(a for a in args if a.unresolved)
            self.result.problems.append(Problem(
                problem_code("unresolved-value"), "unresolved-value",
                f"`eval` runs text decided when the script runs ({', '.join(arg.unresolved)}); "
                "the command it runs is not checked",
                arg.span(), "info",
            ))
            return
        joined = _join(args)
        self.run(joined.text, SubLocator(joined), where, state, depth + 1)

    def _nested(
        self, script: Arg, name: Optional[Arg], arguments: Sequence[Arg], state: ShellState, depth: int,
    ) -> None:
        """`sh -c SCRIPT NAME ARG…`: a new shell whose `$0` is NAME and `$1…` the ARGs."""
        if script.unresolved:
            self.result.problems.append(Problem(
                problem_code("unresolved-value"), "unresolved-value",
                f"the shell runs a script decided at run time ({', '.join(script.unresolved)}); "
                "the command it runs is not checked",
                script.span(), "info",
            ))
            return
        inner = ShellState(state.environment(), tuple(arguments), name.text if name is not None else "sh",
                           set(state.exported))
        self.run(script.text, SubLocator(script), script.origin, inner, depth + 1)


_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _su_command(argv: Sequence[Arg]) -> Optional[Arg]:
    """The command string of `su [-] [-l] [USER] -c CMD` / `runuser … -c CMD` / `--command=CMD`."""
    for i, arg in enumerate(argv[1:], start=1):
        if arg.text in ("-c", "--command") and i + 1 < len(argv):
            return argv[i + 1]
        if arg.text.startswith("--command="):
            cut = len("--command=")
            return Arg(arg.text[cut:], arg.offsets[cut:], arg.locator, arg.whole, arg.origin, arg.expansion,
                       arg.unresolved, arg.splits)
    return None


def _join(args: Sequence[Arg]) -> Arg:
    """Arguments joined by single spaces, positions kept when they share a locator."""
    first = args[0]
    if len(args) == 1:
        return first
    if any(a.locator is not first.locator for a in args):
        text = " ".join(a.text for a in args)
        return Arg(text, (), first.locator, first.whole, first.origin)
    chars: List[str] = []
    offsets: List[int] = []
    for k, arg in enumerate(args):
        if k:
            chars.append(" ")
            offsets.append(offsets[-1] if offsets else 0)
        chars.extend(arg.text)
        offsets.extend(arg.offsets if len(arg.offsets) == len(arg.text) else [arg.offsets[0] if arg.offsets else 0] * len(arg.text))
    last = args[-1].whole
    whole = Span(first.whole.line, first.whole.column, last.end_line, last.end_column)
    return Arg("".join(chars), tuple(offsets), first.locator, whole, first.origin)


def _block_end(items: Sequence[object], start: int) -> int:
    """Index of the "close" that matches the "open" just before `start` (len(items) if none)."""
    depth = 1
    for index in range(start, len(items)):
        item = items[index]
        if isinstance(item, shell.Block):
            if item.kind == "open":
                depth += 1
            elif item.kind == "close":
                depth -= 1
                if depth == 0:
                    return index
    return len(items)


class _Frame:
    """A compound command's effect on variables (see ShellRunner)."""

    def __init__(self, compound: str, outer: Sequence[_Frame]):
        self.compound = compound
        self.outer = list(outer)
        self.saved: Dict[str, object] = {}
        self.differs: set = set()

    def assign(self, state: ShellState, name: str, value: Value) -> None:
        for frame in self.outer + [self]:
            if name not in frame.saved:
                frame.saved[name] = state.variables.get(name, _UNSET)
        state.variables[name] = value

    def branch(self, state: ShellState) -> None:
        for name, prior in self.saved.items():
            if not _same(state.variables.get(name, _UNSET), prior):
                self.differs.add(name)
            _restore(state, name, prior)

    def close(self, state: ShellState) -> None:
        for name, prior in self.saved.items():
            current = state.variables.get(name, _UNSET)
            if self.compound == "subshell":
                _restore(state, name, prior)
            elif name in self.differs or not _same(current, prior):
                state.variables[name] = unknown(
                    "assigned on some paths only (inside an if, case, loop, function or `&&` list)"
                )


_UNSET = object()


def _same(a: object, b: object) -> bool:
    if isinstance(a, tuple) and isinstance(b, tuple):
        return [x.text for x in a] == [y.text for y in b]
    if is_unknown(a) or is_unknown(b):
        return False
    return a == b


def _restore(state: ShellState, name: str, prior: object) -> None:
    if prior is _UNSET:
        state.variables.pop(name, None)
    else:
        state.variables[name] = prior  # type: ignore[assignment]


def run_script(
    text: str,
    locator: Locator,
    origin: str,
    env: Mapping[str, str],
    release_for: ReleaseFor,
    positional: Optional[Sequence[Arg]] = None,
    name: str = "sh",
) -> LaunchResult:
    """Every engine invocation in a shell script, in order. `positional`: the script's arguments
    (`"$@"`), None when not known (a script file run by someone)."""
    runner = ShellRunner(release_for)
    state = ShellState(dict(env), None if positional is None else tuple(positional), name, set(env))
    runner.run(text, locator, origin, state)
    return runner.result


class ReleaseFor:
    """The engine release to parse with, per engine (known only for the image's engine)."""

    def __init__(self, engine: Optional[str] = None, release: Optional[str] = None):
        self.engine = engine
        self.release = release

    def __call__(self, engine: str) -> Optional[str]:
        return self.release if engine == self.engine else None


_K8S_REFERENCE = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")


def kubelet_expand(arg: Arg, env: Mapping[str, str]) -> Arg:
    """`$(VAR)` in a container's command/args replaced by the kubelet from the container's env
    (`$$` is a literal `$`; an undefined reference stays as written), positions kept
    (https://kubernetes.io/docs/tasks/inject-data-application/define-command-argument-container/)."""
    if "$" not in arg.text:
        return arg
    chars: List[str] = []
    offsets: List[int] = []
    position = 0
    text = arg.text
    have = len(arg.offsets) == len(text)
    for match in _K8S_REFERENCE.finditer(text):
        chars.extend(text[position:match.start()])
        if have:
            offsets.extend(arg.offsets[position:match.start()])
        if match.group(0) == "$$":
            value = "$"
        else:
            value = env.get(match.group(1), match.group(0))
        chars.extend(value)
        if have:
            span = arg.offsets[match.start():match.end()]
            offsets.extend(span[min(k, len(span) - 1)] for k in range(len(value)))
        position = match.end()
    chars.extend(text[position:])
    if have:
        offsets.extend(arg.offsets[position:])
    new = "".join(chars)
    return Arg(new, tuple(offsets) if have else (), arg.locator, arg.whole, arg.origin,
               "$" in new, arg.unresolved, arg.splits)


def run_argv(
    argv: Sequence[Arg],
    env: Mapping[str, str],
    release_for: ReleaseFor,
    kubernetes: bool = False,
    entrypoint: Optional[Tuple[str, int]] = None,
) -> LaunchResult:
    """Exec-form argv (no shell word splitting): a shell script (`bash -c …`, behind any wrapper), or
    a direct engine invocation.

    `entrypoint=(engine, first)`: the argv runs after an engine image's ENTRYPOINT, so when no
    engine command is found, argv[first:] are the engine's arguments.
    """
    # a shell in the container sees the arguments after the kubelet expanded them; a direct engine
    # command is expanded value by value by the argument parser (cmdline.expand)
    shell_argv = [kubelet_expand(arg, env) for arg in argv] if kubernetes else list(argv)
    runner = ShellRunner(release_for)
    runner.result.shell_script = False
    state = ShellState(dict(env), (), "sh", set(env))
    wrapper_env: Dict[str, Fact] = {}  # `env NAME=value … ENGINE`: set for the engine (GNU env)
    unwrapped = runner._unwrap(shell_argv, wrapper_env, state, argv[0].origin if argv else "")
    call = shell_call(unwrapped)
    if unwrapped and (call is not None or os.path.basename(unwrapped[0].text) in ("su", "runuser", "eval")):
        runner.result.shell_script = True
        runner._launch(unwrapped, {}, state, None, "", FixedLocator(unwrapped[0].whole), unwrapped[0].origin, 0)
        if runner.result.recognised or call is not None:
            return runner.result
    result = LaunchResult()
    invocation = find_invocation(argv)
    if invocation is None and entrypoint is not None and entrypoint[1] <= len(argv):
        engine, first = entrypoint
        form = ENTRYPOINT_FORMS.get(engine, "entrypoint")
        if engine == "llama.cpp" and first < len(argv) and argv[first].text in ("--server", "-s", "--run", "-r"):
            # the `full` images run /app/tools.sh, which starts llama-server (--server) or
            # llama-cli (--run) with the remaining arguments (.devops/tools.sh)
            first += 1
        if engine == "ollama" and first < len(argv) and argv[first].text == "serve":
            first += 1  # the image's ENTRYPOINT is `ollama` and its CMD `serve`
        invocation = Invocation(engine, form, first, min(first, max(len(argv) - 1, 0)))
    if invocation is None or not argv:
        return result
    parsed = parse_command(argv, invocation, release_for(invocation.engine), env, kubernetes=kubernetes)
    result.launches.append(Launch(parsed, env=dict(wrapper_env)))
    result.recognised = True
    return result


# `docker run` options that take a value (https://docs.docker.com/reference/cli/docker/container/run/)
_DOCKER_VALUE_OPTIONS = frozenset({
    "-e", "--env", "--env-file", "-v", "--volume", "-p", "--publish", "--name", "--gpus", "--device",
    "-w", "--workdir", "--network", "--net", "--ipc", "--shm-size", "--runtime", "--restart", "-u",
    "--user", "--entrypoint", "--platform", "--mount", "-l", "--label", "--label-file", "--add-host",
    "--cpus", "-m", "--memory", "--memory-swap", "--ulimit", "--security-opt", "--cap-add", "--cap-drop",
    "--hostname", "-h", "--log-driver", "--log-opt", "--pull", "--group-add", "--tmpfs", "--cidfile",
    "--pid", "--userns", "--dns", "--expose", "--stop-signal", "--stop-timeout", "--cgroupns",
    "--cpuset-cpus", "--device-cgroup-rule", "--health-cmd", "--uts", "--volumes-from", "-a", "--attach",
})
_CONTAINER_CLIS = frozenset({"docker", "podman", "nerdctl"})


def docker_run(argv: Sequence[Arg], variables: Mapping[str, str], release_for: ReleaseFor) -> Optional[LaunchResult]:
    """`docker run [OPTIONS] IMAGE [ARG...]` of a llama.cpp or Ollama image: the engine the image
    runs, configured by `-e NAME=value` and the arguments after the image; None for anything else
    (other images keep the generic engine-command search)."""
    if len(argv) < 3 or os.path.basename(argv[0].text) not in _CONTAINER_CLIS:
        return None
    i = 1
    if argv[i].text == "container":
        i += 1
    if i >= len(argv) or argv[i].text != "run":
        return None
    i += 1
    env_args: List[Tuple[Arg, int]] = []  # (argument, offset of NAME=value in it)
    entrypoint: Optional[Arg] = None
    while i < len(argv):
        text = argv[i].text
        if text == "--":
            i += 1
            break
        if not text.startswith("-") or text == "-":
            break
        name, eq, _ = text.partition("=")
        takes_value = name in _DOCKER_VALUE_OPTIONS and not eq
        if name in ("-e", "--env"):
            if eq:
                env_args.append((argv[i], len(name) + 1))
            elif i + 1 < len(argv):
                env_args.append((argv[i + 1], 0))
        elif text.startswith("-e") and not text.startswith("--") and len(text) > 2 and "=" in text:
            env_args.append((argv[i], 2))  # -eNAME=value
        if name == "--entrypoint":
            entrypoint = argv[i + 1] if takes_value and i + 1 < len(argv) else None
        i += 2 if takes_value else 1
    if i >= len(argv):
        return None
    image_arg = argv[i]
    image = engine_from_image(image_arg.text)
    if image is None or image.engine not in ENTRYPOINT_FORMS:
        return None
    env_values: Dict[str, str] = dict(variables)
    env_facts: Dict[str, Fact] = {}
    for arg, start in env_args:
        key, eq, value = arg.text[start:].partition("=")
        if not eq:
            continue  # `-e NAME`: the value comes from the caller's environment
        env_values[key] = value
        if is_engine_env(key):
            value_start = start + len(key) + 1
            span = arg.span(value_start) if value_start < len(arg.text) else arg.span(start)
            env_facts[key] = Fact(value, span, f"{arg.origin}: docker run -e {key}=",
                                  arg.span(start, start + len(key)) if key else None)
    rest = list(argv[i + 1:])
    release = ReleaseFor(image.engine, image.release)
    if entrypoint is not None:
        result = run_argv([entrypoint] + rest, env_values, release)
    else:
        result = run_argv(rest, env_values, release, entrypoint=(image.engine, 0))
        if not result.recognised and image.serves and not rest:
            result = image_launch(image.engine, image_arg.whole)
    for launch in result.launches:
        launch.image = (image, image_arg.text, image_arg.whole)
        launch.env = dict(env_facts)
    return result


def image_launch(engine: str, span: Span) -> LaunchResult:
    """An image whose default command starts the server (ollama/ollama, llama.cpp `server`
    images): one launch with no arguments, configured by its environment only."""
    return LaunchResult(launches=[Launch(ParsedCommand(engine, "image", span))], recognised=True)


def image_backend(image: Optional[ImageEngine], span: Span, key_span: Optional[Span], where: str) -> List[Setting]:
    """engine.build.backend from an image variant (`server-cuda`, `:rocm`)."""
    if image is None or image.backend is None:
        return []
    return [Setting("/engine/build/backend", image.backend, span, key_span, f"{where} image variant")]


def span_union(first: Span, last: Span) -> Span:
    return Span(first.line, first.column, last.end_line, last.end_column)
