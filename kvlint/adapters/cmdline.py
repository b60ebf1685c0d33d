"""Engine command lines: recognise `vllm serve …`, `python -m sglang.launch_server …`,
`trtllm-serve …` and parse their arguments with each engine's own rules into manifest fields.

Input is a list of `Arg` (one argv element each, with a map from its characters to native
positions), so the same parser serves YAML exec-form lists, shell strings inside YAML, compose
commands, shell scripts and Dockerfiles. The per-engine flag table is data (`flags.py`); the
tokenising rules are those of the engines' parsers:

* vLLM — `FlexibleArgumentParser.parse_args`: `_`→`-` in the option name before the first `.`,
  `-O<n>`/`-O=<n>`/`-O <n>` rewrites, dotted keys (`-ac.backend=X`, `--compilation-config.mode 3`)
  gathered into one JSON value per option and appended after all other arguments, the exact token
  `--config` read as a YAML file; then plain argparse with `allow_abbrev` left at its default
  (unique prefixes accepted), `BooleanOptionalAction` booleans (`--x` / `--no-x`, no value),
  `nargs="+"` lists, last occurrence wins.
  https://github.com/vllm-project/vllm/blob/v0.19.1/vllm/utils/argparse_utils.py (parse_args)
* SGLang — plain argparse: no underscore normalisation, unique prefixes accepted, `store_true`
  booleans. https://github.com/sgl-project/sglang/blob/v0.5.9/python/sglang/srt/server_args.py
* TensorRT-LLM — click: exact option names (underscores), `is_flag` booleans, no prefixes.
  https://github.com/NVIDIA/TensorRT-LLM/blob/00209af149e7774406881a37283dce303571eb11/tensorrt_llm/commands/serve.py
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from kvlint.findings import Span
from kvlint.records import dataclass

from kvlint.adapters import flags as flag_table
from kvlint.adapters.result import FlagUse, Problem, Reference, problem_code
from kvlint.adapters.shell import Word
from kvlint.adapters.source import Located, Locator

# --- argv elements with positions ---------------------------------------------------------------


@dataclass(frozen=True)
class Arg:
    """One argv element: its text and where each character sits in the native file."""

    text: str
    offsets: Tuple[int, ...]  # locator offset of each character of text
    locator: Locator
    whole: Span  # the element as written (quotes included)
    origin: str  # "args[3]", "command[0]", "line 12"
    expansion: bool = False  # holds `$…` / `` `…` `` (shell) or `$(…)` (Kubernetes)
    # what the shell could not resolve in it (`$MODEL` from the caller's environment, a command
    # substitution, `"$@"` of a script run with unknown arguments): the text is as written
    unresolved: Tuple[str, ...] = ()
    # an unquoted unresolved expansion: at run time it may be zero, one or several arguments
    splits: bool = False

    def span(self, start: int = 0, end: Optional[int] = None) -> Span:
        end = len(self.text) if end is None else end
        if start >= end or not self.offsets:
            return self.whole
        first = self.offsets[start]
        last = self.offsets[end - 1]
        line, column = self.locator.position(first)
        end_line, end_column = self.locator.position(last)
        return Span(line, column, end_line, end_column + 1)


def arg_from_word(word: Word, locator: Locator, origin: str) -> Arg:
    return Arg(
        word.text, word.offsets, locator, locator.span(word.start, word.end), origin,
        word.expansion,
    )


def arg_from_located(located: Located, whole: Span, origin: str) -> Arg:
    text = located.text
    return Arg(
        text, tuple(range(len(text))), located.locator, whole, origin,
        "$(" in text or "${" in text or "{{" in text,
    )


# --- expansions -----------------------------------------------------------------------------------

_K8S_REF = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")
_SHELL_REF = re.compile(
    r"\$(?:\{(?P<braced>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?[-=+?])(?P<word>[^}]*))?\}"
    r"|(?P<plain>[A-Za-z_][A-Za-z0-9_]*))"
)


def expand(
    text: str, env: Mapping[str, str], kubernetes: bool = False, shell: bool = True
) -> Tuple[str, List[str]]:
    """Resolve `$(VAR)` (Kubernetes) and `$VAR`/`${VAR}`/`${VAR:-default}` (shell) from `env`.

    Returns the expanded text and the names that could not be resolved (the text is then not
    trustworthy and the caller leaves the field unknown). Command substitution and `{{ }}`
    templates are never resolved.
    """
    unresolved: List[str] = []
    if kubernetes and "$(" in text:
        # https://kubernetes.io/docs/tasks/inject-data-application/define-command-argument-container/
        # `$(VAR)` from the container's env; `$$` escapes; an unknown reference stays as written.
        def k8s(match: re.Match[str]) -> str:
            if match.group(0) == "$$":
                return "$"
            name = match.group(1)
            if name in env:
                return env[name]
            unresolved.append(name)
            return match.group(0)

        text = _K8S_REF.sub(k8s, text)
    if shell and "$" in text:
        def sh(match: re.Match[str]) -> str:
            name = match.group("braced") or match.group("plain")
            op = match.group("op")
            value = env.get(name)
            if op in (":-", ":="):
                return value if value else (match.group("word") or "")
            if op in ("-", "="):
                return value if value is not None else (match.group("word") or "")
            if op in (":+", "+"):
                return (match.group("word") or "") if value else ""
            if value is None:
                unresolved.append(name)
                return match.group(0)
            return value

        text = _SHELL_REF.sub(sh, text)
        if "$(" in text or "`" in text:
            unresolved.append("command substitution")
    if "{{" in text:
        unresolved.append("template")
    return text, unresolved


# --- recognising the engine command ---------------------------------------------------------------

_PYTHON = re.compile(r"^python(\d+(\.\d+)?)?$")
_MODULES = {
    "vllm.entrypoints.openai.api_server": ("vllm", "api_server"),
    "sglang.launch_server": ("sglang", "launch_server"),
}


# llama.cpp's programs that build a context from common/arg.cpp options and serve or run it
# (the image ENTRYPOINTs are /app/llama-server and /app/llama-cli: .devops/cpu.Dockerfile)
LLAMA_PROGRAMS = frozenset({"llama-server", "llama-cli"})


@dataclass(frozen=True)
class Invocation:
    """Where an engine's command starts in an argv: the engine, the form it was called by, the indices."""

    engine: str  # "vllm", "sglang", "tensorrt-llm", "llama.cpp", "ollama"
    form: str  # "vllm serve", "api_server", "sglang serve", "launch_server", "trtllm-serve", "entrypoint",
    #            "llama-server", "llama-cli", "ollama serve"
    first: int  # index of the first engine argument in argv
    command_start: int  # index of the command word


def find_invocation(argv: Sequence[Arg]) -> Optional[Invocation]:
    """The first engine invocation in argv (wrappers such as `exec`, `env`, `uv run` skipped)."""
    n = len(argv)
    for i, arg in enumerate(argv):
        base = os.path.basename(arg.text)
        nxt = argv[i + 1].text if i + 1 < n else ""
        if base == "vllm" and nxt == "serve":
            return Invocation("vllm", "vllm serve", i + 2, i)
        if base == "sglang" and nxt == "serve":
            # console script since 0.5.9 (python/sglang/cli/serve.py)
            return Invocation("sglang", "sglang serve", i + 2, i)
        if base in LLAMA_PROGRAMS:
            return Invocation("llama.cpp", base, i + 1, i)
        if base == "ollama" and nxt == "serve":
            # the server reads its settings from OLLAMA_* variables
            # (https://github.com/ollama/ollama/blob/v0.13.3/envconfig/config.go)
            return Invocation("ollama", "ollama serve", i + 2, i)
        if base == "trtllm-serve":
            # a click group whose default command is `serve`
            if nxt == "serve":
                return Invocation("tensorrt-llm", "trtllm-serve", i + 2, i)
            if nxt in ("disaggregated", "mm_embedding_serve", "grpc", "disaggregated_mpi_worker"):
                return None
            return Invocation("tensorrt-llm", "trtllm-serve", i + 1, i)
        if _PYTHON.match(base):
            j = i + 1
            while j < n and argv[j].text.startswith("-") and argv[j].text != "-m":
                # python's own options; -X and -W take a value
                j += 2 if argv[j].text in ("-X", "-W") else 1
            if j + 1 < n and argv[j].text == "-m":
                module = argv[j + 1].text
                if module in _MODULES:
                    engine, form = _MODULES[module]
                    return Invocation(engine, form, j + 2, i)
                if module == "vllm.entrypoints.cli.main" and j + 2 < n and argv[j + 2].text == "serve":
                    return Invocation("vllm", "vllm serve", j + 3, i)
    return None


def mentions_engine(text: str) -> bool:
    """Cheap test: could this text hold an engine command line?"""
    return any(
        token in text
        for token in ("vllm", "sglang", "trtllm-serve", "launch_server", "llama-server", "llama-cli", "ollama")
    )


# --- parsing the engine's arguments ---------------------------------------------------------------


@dataclass(frozen=True)
class Setting:
    """One manifest setting read from the engine's arguments, with the spans it came from."""

    pointer: str
    value: Any
    span: Span  # the value as written
    key_span: Optional[Span]  # the flag as written
    provenance: str


@dataclass
class ParsedCommand:
    """An engine command line parsed: its settings, the flags as used, the problems found."""

    engine: str
    form: str
    span: Span  # from the command word to the last argument
    settings: List[Setting] = field(default_factory=list)
    problems: List[Problem] = field(default_factory=list)
    flags: List[FlagUse] = field(default_factory=list)
    references: List[Reference] = field(default_factory=list)
    model_given: bool = False


_NUMBER = re.compile(r"^-\d+(\.\d+)?$")
_HUMAN_INT = re.compile(r"^(\d+(?:\.\d+)?)([kKmMgGtT])$")
_DTYPE = {
    # vLLM ModelDType / SGLang --dtype spellings onto kvlint's model.dtype enum
    "auto": "auto", "half": "float16", "float16": "float16", "fp16": "float16",
    "bfloat16": "bfloat16", "bf16": "bfloat16", "float": "float32", "float32": "float32",
}


def _looks_like_option(text: str) -> bool:
    return text.startswith("-") and len(text) > 1 and not _NUMBER.match(text)


def human_readable_int(value: str, allow_auto: bool = False) -> Optional[int]:
    """vLLM's `human_readable_int`: `32k` = 32 000, `32K` = 32 768, `25.6k` = 25 600.

    https://github.com/vllm-project/vllm/blob/v0.19.1/vllm/engine/arg_utils.py#L2286 ;
    `auto`/`-1` (0.14.0+, `human_readable_int_or_auto`) returns -1.
    """
    value = value.strip()
    if allow_auto and (value == "-1" or value.lower() == "auto"):
        return -1
    match = _HUMAN_INT.match(value)
    if match:
        number, suffix = match.groups()
        if suffix.islower():
            return int(float(number) * {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}[suffix])
        if "." in number:
            return None
        return int(number) * {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}[suffix]
    try:
        return int(value)
    except ValueError:
        return None


# Bounds on one engine command (hostile input: 20k unknown flags, 220k repeated flags): past
# MAX_ARGUMENTS the rest is not read (a not-checked info says so), and did-you-mean (difflib over
# the flag table) runs for the first MAX_SUGGESTIONS unknown flags only.
MAX_ARGUMENTS = 25_000
MAX_SUGGESTIONS = 100


class _Parser:
    def __init__(
        self,
        engine: str,
        form: str,
        argv: Sequence[Arg],
        invocation_start: int,
        first: int,
        release: Optional[str],
        env: Mapping[str, str],
        kubernetes: bool,
    ):
        self.engine = engine
        self.form = form
        self.argv = argv
        self.args = list(argv[first:MAX_ARGUMENTS + first])
        self.cut = max(len(argv) - first - MAX_ARGUMENTS, 0)  # arguments past the bound, not read
        self.unknown = 0  # unknown flags so far: did-you-mean only for the first MAX_SUGGESTIONS
        self.release = release
        self.env = env
        self.kubernetes = kubernetes
        self.rules = flag_table.parser_rules(engine)
        start = argv[invocation_start].whole if invocation_start < len(argv) else argv[-1].whole
        end = argv[-1].whole if argv else start
        self.out = ParsedCommand(
            engine, form, Span(start.line, start.column, end.end_line, end.end_column)
        )
        self.seen: Dict[str, Tuple[Arg, str]] = {}
        self.options: Dict[str, Any] = {}
        self.dotted: Dict[str, Tuple[Dict[str, Any], Arg, flag_table.FlagSpec]] = {}
        self.positionals: List[Arg] = []

    # -- problems ------------------------------------------------------------------------------
    def problem(self, kind: str, message: str, span: Span, severity: str = "error", ptr: str = "") -> None:
        self.out.problems.append(
            Problem(problem_code(kind), kind, message, span, severity, ptr)
        )

    # -- main loop -----------------------------------------------------------------------------
    def run(self) -> ParsedCommand:
        args = self.args
        i = 0
        while i < len(args):
            arg = args[i]
            text = arg.text
            if text == "--":
                self.positionals.extend(args[i + 1:])
                break
            if self.engine == "vllm" and text.startswith("-O") and not text.startswith("--"):
                i = self._optimization_level(i)
                continue
            if _looks_like_option(text):
                i = self._option(i)
                continue
            self.positionals.append(arg)
            i += 1
        self._apply_dotted()
        self._positionals()
        return self.out

    def _optimization_level(self, i: int) -> int:
        # 0.12.0+: -O3 / -O=3 / -O 3 / -Odecode → --optimization-level; 0.11.x: -O is the
        # compilation-config alias and -O3 means {"level": 3}
        # (https://github.com/vllm-project/vllm/blob/v0.19.1/vllm/utils/argparse_utils.py#L256,
        #  https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/utils/__init__.py#L1891)
        arg = self.args[i]
        text = arg.text
        if text == "-O":
            if i + 1 < len(self.args) and self.args[i + 1].text in ("0", "1", "2", "3"):
                value_arg, value_start, nxt = self.args[i + 1], 0, i + 2
            else:
                return self._option(i)
        else:
            value_start = 3 if text[2:3] == "=" else 2
            value_arg, nxt = arg, i + 1
        value = value_arg.text[value_start:]
        span = value_arg.span(value_start)
        old = self.release is not None and flag_table.version_key(self.release) < flag_table.version_key("0.12.0")
        self.out.flags.append(FlagUse(text, "-O", arg.span(0, 2), arg.origin))
        if old:
            level = int(value) if value.isdigit() else value
            self._option_value("compilation_config", {"level": level}, span, arg.span(0, 2), arg.origin, "-O")
        else:
            self._option_value("optimization_level", value, span, arg.span(0, 2), arg.origin, "-O")
        return nxt

    def _resolve(self, written: str, arg: Arg, name_end: int) -> Optional[flag_table.FlagSpec]:
        """The flag spec a written option name means, reporting unknown/ambiguous/abbreviated."""
        span = arg.span(0, name_end)
        spec = flag_table.lookup(self.engine, written, self.release)
        if (spec is not None and self.release is not None and self.rules.abbrev and written.startswith("--")
                and flag_table.release_problem(spec, self.release) is not None
                and any(m != written and flag_table.release_problem(flag_table.lookup(self.engine, m), self.release) is None
                        for m in flag_table.prefix_matches(self.engine, written))):
            # a spelling this release lacks is, to its argparse, a prefix of the ones it has
            # (SGLang 0.5.1 reads --speculative-draft-model as --speculative-draft-model-path)
            spec = None
        if spec is None and self.rules.abbrev and written.startswith("--"):
            matches = [
                m for m in flag_table.prefix_matches(self.engine, written)
                if self.release is None
                or flag_table.release_problem(flag_table.lookup(self.engine, m), self.release) is None
            ]
            if len(matches) == 1:
                spec = flag_table.lookup(self.engine, matches[0], self.release)
                self.problem(
                    "abbreviated-flag",
                    f"{written!r} is an abbreviation of {matches[0]!r}; {flag_table.display(self.engine)} "
                    "accepts unique prefixes, but a later release that adds a flag with the same "
                    "prefix makes it ambiguous: spell it out",
                    span, "info",
                )
            elif len(matches) > 1:
                shown = ", ".join(matches[:6]) + (", …" if len(matches) > 6 else "")
                self.problem(
                    "ambiguous-flag",
                    f"{written!r} is ambiguous: it could be {shown}; "
                    f"{flag_table.display(self.engine)} refuses to start",
                    span,
                )
                return None
        if spec is None and not self.rules.equals and "=" in written:
            option, _, value = written.partition("=")
            if flag_table.lookup(self.engine, option) is not None:
                self.problem(
                    "unknown-flag",
                    f"{flag_table.display(self.engine)} does not read {written!r} as {option} with a value: "
                    f"it looks up the whole word and refuses to start (`invalid argument`); write "
                    f"'{option} {value}'",
                    span,
                )
                return None
        if spec is None:
            self.unknown += 1
            hint = flag_table.suggest(self.engine, written) if self.unknown <= MAX_SUGGESTIONS else None
            certain = flag_table.unknown_is_certain(self.engine, self.release)
            self.problem(
                "unknown-flag",
                f"unknown {flag_table.display(self.engine)} flag {written!r}"
                + (f" (did you mean {hint!r}?)" if hint else "")
                + (f"; {flag_table.display(self.engine)} refuses to start" if certain else
                   f"; no {flag_table.display(self.engine)} release kvlint read registers it, and "
                   + (f"{self.release} is newer than all of them" if self.release else
                      "the release is not known, so it may be a newer one")
                   + ": check that it does"),
                # an unknown release cannot be checked against a newer build's flags: info only
                span, "error" if certain else "warning" if self.release else "info",
            )
            return None
        reason = flag_table.release_problem(spec, self.release)
        if reason:
            self.problem("flag-not-in-release", reason, span, ptr=spec.field or "")
        return spec

    def _option(self, i: int) -> int:
        args = self.args
        arg = args[i]
        text = arg.text
        name, eq, _ = text.partition("=") if self.rules.equals else (text, "", "")
        name_end = len(name)
        value_start = name_end + 1 if eq else -1
        written = name
        dotted_key: Optional[str] = None
        if self.rules.dotted and "." in name:
            written, _, dotted_key = name.partition(".")
        if self.rules.underscores and written.startswith("--"):
            written = "--" + written[2:].replace("_", "-")
        spec = self._resolve(written, arg, len(name) if dotted_key is None else len(name.partition(".")[0]))
        self.out.flags.append(
            FlagUse(name, spec.spelling if spec else None, arg.span(0, name_end), arg.origin)
        )
        if spec is None:
            # keep the parse aligned: an unknown flag followed by a non-option word probably
            # takes it as its value
            if not eq and i + 1 < len(args) and not _looks_like_option(args[i + 1].text):
                return i + 2
            return i + 1
        if dotted_key is not None:
            return self._dotted(i, spec, dotted_key, value_start)
        if spec.takes == "fa":
            return self._flash_attn(i, spec, name_end)
        if spec.takes == "value2":  # llama.cpp handler_str_str: the next two argv elements
            pair = args[i + 1:i + 3]
            if len(pair) < 2:
                self.problem(
                    "invalid-flag-value",
                    f"{spec.spelling} expects two values; {flag_table.display(self.engine)} refuses to start",
                    arg.span(0, name_end), ptr=spec.field or "",
                )
                return len(args)
            texts = [p.text for p in pair]
            self._store(spec, texts, arg, span_union(pair[0].span(), pair[1].span()), arg.span(0, name_end))
            return i + 3
        if spec.takes in ("bool", "flag"):
            if eq:
                self.problem(
                    "invalid-flag-value",
                    f"{spec.spelling} is a switch and takes no value ('{text}'); "
                    + ("use --" + spec.spelling[2:] + " or --no-" + spec.spelling[2:]
                       if spec.takes == "bool" and not spec.negated else "remove '=…'"),
                    arg.span(), ptr=spec.field or "",
                )
                return i + 1
            self._store(spec, not spec.negated, arg, arg.span(0, name_end), arg.span(0, name_end))
            return i + 1
        values: List[Tuple[Arg, int]] = []
        if eq:
            values.append((arg, value_start))
            nxt = i + 1
        else:
            nxt = i + 1
            if nxt < len(args) and not _looks_like_option(args[nxt].text):
                values.append((args[nxt], 0))
                nxt += 1
        if spec.takes == "list" and not eq:  # `--x=a b`: argparse gives --x only "a"
            while nxt < len(args) and not _looks_like_option(args[nxt].text) and args[nxt].text != "--":
                values.append((args[nxt], 0))
                nxt += 1
        if not values:
            if spec.takes == "optional":
                self._store(spec, True, arg, arg.span(0, name_end), arg.span(0, name_end))
                return nxt
            self.problem(
                "invalid-flag-value",
                f"{spec.spelling} expects a value; {flag_table.display(self.engine)} refuses to start",
                arg.span(0, name_end), ptr=spec.field or "",
            )
            return nxt
        key_span = arg.span(0, name_end)
        if spec.takes == "list":
            texts = []
            for value_arg, start in values:
                resolved = self._text(value_arg, start, spec)
                if resolved is None:
                    return nxt
                texts.append(resolved)
            first_arg, first_start = values[0]
            last_arg, _ = values[-1]
            first_span = first_arg.span(first_start)
            last_span = last_arg.span()
            span = Span(first_span.line, first_span.column, last_span.end_line, last_span.end_column)
            self._store(spec, texts, arg, span, key_span, value_args=values)
        else:
            value_arg, start = values[0]
            resolved = self._text(value_arg, start, spec)
            if resolved is None:
                return nxt
            self._store(spec, resolved, arg, value_arg.span(start), key_span)
        return nxt

    def _flash_attn(self, i: int, spec: flag_table.FlagSpec, name_end: int) -> int:
        """llama.cpp `-fa`: a switch (on) in the old builds, `on|off|auto` from about b6327.

        b4747 registers `{"-fa", "--flash-attn"}` without a value
        (https://github.com/ggml-org/llama.cpp/blob/b4747/common/arg.cpp#L807-L813); the new
        builds take a value, read with is_truthy / is_falsey / is_autoy
        (https://github.com/ggml-org/llama.cpp/blob/0c1e57098bba43ac29e6e3b677cdceebdd22334f/common/arg.cpp#L1754).
        Between b4747 and b6327 the boundary is not pinned, so both forms are read there.
        """
        arg = self.args[i]
        key_span = arg.span(0, name_end)
        build = llama_build(self.release)
        nxt = self.args[i + 1] if i + 1 < len(self.args) else None
        value_like = nxt is not None and (nxt.text in FA_VALUES or not _looks_like_option(nxt.text))
        tri_state = build is not None and build >= FA_TRI_STATE_BUILD
        switch = build is not None and build <= FA_SWITCH_BUILD
        if switch or (not tri_state and not (nxt is not None and nxt.text in FA_VALUES)):
            self._store(spec, "on", arg, key_span, key_span)
            return i + 1
        if nxt is None or not value_like:
            self.problem(
                "invalid-flag-value",
                f"{spec.spelling} expects on, off or auto in llama.cpp {self.release}; llama.cpp "
                "refuses to start (`expected value for argument`)",
                key_span, ptr=spec.field or "",
            )
            return i + 1
        text = self._text(nxt, 0, spec)
        if text is None:
            return i + 2
        value = FA_VALUES.get(text)
        if value is None:
            self.problem(
                "invalid-flag-value",
                f"{spec.spelling} {text!r}: llama.cpp accepts on|off|auto (or 1|0|-1, true|false, "
                "enabled|disabled) and refuses to start (`unknown value for --flash-attn`)",
                nxt.span(), ptr=spec.field or "",
            )
            return i + 2
        self._store(spec, value, arg, nxt.span(), key_span)
        return i + 2

    def _text(self, arg: Arg, start: int, spec: flag_table.FlagSpec) -> Optional[str]:
        text = arg.text[start:]
        if arg.unresolved:
            expanded, unresolved = text, list(arg.unresolved)
        elif not arg.expansion and "$" not in text and "{{" not in text:
            return text
        else:
            expanded, unresolved = expand(text, self.env, kubernetes=self.kubernetes, shell=not self.kubernetes)
        if unresolved:
            what = ", ".join(sorted(set(unresolved)))
            self.problem(
                "unresolved-value",
                f"the value of {spec.spelling} ({text!r}) depends on {what}, which kvlint cannot "
                "resolve here; the field is left unknown",
                arg.span(start), "info", spec.field or "",
            )
            return None
        return expanded

    def _dotted(self, i: int, spec: flag_table.FlagSpec, key: str, value_start: int) -> int:
        # vLLM gathers `--x.a.b v` into {"a": {"b": v}} per option and re-emits it as JSON after
        # all other arguments (0.19.1 argparse_utils.py L323–357)
        args = self.args
        arg = args[i]
        if spec.takes not in ("json",):
            self.problem(
                "invalid-flag-value",
                f"{spec.spelling} does not take dotted keys ('{arg.text}'); only JSON-valued options do",
                arg.span(), ptr=spec.field or "",
            )
        if value_start >= 0:
            value_arg, start, nxt = arg, value_start, i + 1
        elif i + 1 < len(args):
            value_arg, start, nxt = args[i + 1], 0, i + 2
        else:
            self.problem("invalid-flag-value", f"{arg.text} expects a value", arg.span())
            return i + 1
        raw = self._text(value_arg, start, spec)
        if raw is None:
            return nxt
        append = key.endswith("+")
        keys = key.rstrip("+").split(".")
        value: Any
        if append:
            value = raw.split(",")
        else:
            try:
                value = json.loads(raw)
            except ValueError:
                value = raw
        nested: Any = value
        for k in reversed(keys):
            nested = {k: nested}
        current = self.dotted.get(spec.dest)
        merged = _merge_dotted(current[0] if current else {}, nested)
        self.dotted[spec.dest] = (merged, arg, spec)
        self._note_field_from_json(spec, nested, value_arg.span(start), arg.span(0, len(arg.text.partition("=")[0])), arg)
        return nxt

    def _apply_dotted(self) -> None:
        for dest, (value, arg, spec) in self.dotted.items():
            self._option_value(dest, value, arg.span(), arg.span(), arg.origin, spec.spelling)

    def _note_field_from_json(
        self, spec: flag_table.FlagSpec, value: Any, span: Span, key_span: Span, arg: Arg
    ) -> None:
        """JSON options that carry a manifest field (attention_config.backend)."""
        if not isinstance(value, dict):
            return
        for json_path, ptr in flag_table.json_fields(self.engine, spec.dest):
            node: Any = value
            for part in json_path:
                node = node.get(part) if isinstance(node, dict) else None
            if isinstance(node, str) and node:
                self.out.settings.append(
                    Setting(ptr, node, span, key_span, f"{arg.origin}: {spec.spelling} ({'.'.join(json_path)})")
                )

    # -- storing -------------------------------------------------------------------------------
    def _store(
        self, spec: flag_table.FlagSpec, raw: Any, arg: Arg, span: Span, key_span: Span,
        value_args: Optional[List[Tuple[Arg, int]]] = None,
    ) -> None:
        previous = self.seen.get(spec.dest)
        if previous is not None:
            before, spelling = previous
            where = before.span()
            self.problem(
                "repeated-flag",
                f"{spec.spelling} is given again (first as {spelling} at line {where.line}, "
                f"column {where.column}); the last value wins",
                key_span, "info", spec.field or "",
            )
        self.seen[spec.dest] = (arg, spec.spelling)
        provenance = f"{arg.origin}: {arg.text.partition('=')[0] if arg.text.startswith('-') else spec.spelling}"
        value, ok = self._convert(spec, raw, span)
        if not ok:
            return
        if spec.takes == "json":
            if isinstance(value, dict):
                self._note_field_from_json(spec, value, span, key_span, arg)
            self._option_value(spec.dest, value, span, key_span, arg.origin, spec.spelling)
            return
        if spec.field is None:
            self._option_value(spec.dest, value, span, key_span, arg.origin, spec.spelling)
            return
        if spec.field == "/model/name":
            self.out.model_given = True
            if self.form == "vllm serve" and spec.dest == "model":
                self._serve_model_option(arg, key_span)
        if spec.type == "layers" and value_args is not None:
            self._check_layer_list(value, value_args)
        self.out.settings.append(Setting(spec.field, value, span, key_span, provenance))

    def _option_value(
        self, dest: str, value: Any, span: Span, key_span: Span, origin: str, spelling: str,
    ) -> None:
        self.out.settings.append(
            Setting(f"/engine/options/{dest}", value, span, key_span, f"{origin}: {spelling}")
        )

    def _serve_model_option(self, arg: Arg, key_span: Span) -> None:
        # 0.11.0 raises for the exact token `--model` after `vllm serve`; 0.12.0+ warns and moves
        # the value (https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/utils/__init__.py#L1862,
        #  https://github.com/vllm-project/vllm/blob/v0.19.1/vllm/utils/argparse_utils.py#L192)
        exact = arg.text == "--model"
        fatal = exact and self.release is not None and flag_table.version_key(self.release) < flag_table.version_key("0.12.0")
        self.problem(
            "deprecated-spelling",
            "`vllm serve` takes the model as its first positional argument; "
            + ("vLLM 0.11 refuses `--model` here" if fatal
               else "`--model` is deprecated there (vLLM warns and will remove it)"),
            key_span, "error" if fatal else "warning", "/model/name",
        )

    def _check_layer_list(self, value: List[Any], value_args: List[Tuple[Arg, int]]) -> None:
        # nargs="+": `--kv-cache-dtype-skip-layers 0,1` is ONE element "0,1", which names no
        # layer (https://github.com/vllm-project/vllm/blob/v0.19.1/vllm/config/cache.py#L89)
        for (arg, start), element in zip(value_args, value):
            if isinstance(element, str) and "," in element:
                self.problem(
                    "invalid-flag-value",
                    f"{element!r} is one list element, not several: vLLM takes skip layers "
                    "space-separated (`0 1 sliding_window`); this entry matches no layer",
                    arg.span(start), "warning", "/kv_cache/skip_layers",
                )

    def _convert(self, spec: flag_table.FlagSpec, raw: Any, span: Span) -> Tuple[Any, bool]:
        kind = spec.type
        if kind in ("str", "bool") or raw is True or raw is False:
            return raw, True
        if kind == "json":
            if isinstance(raw, (dict, list)):
                return raw, True
            try:
                value = json.loads(raw)
            except ValueError as exc:
                self.problem(
                    "invalid-flag-value",
                    f"{spec.spelling} expects JSON, and {raw!r} is not valid JSON ({exc.msg} at "
                    f"character {exc.pos}); {flag_table.display(self.engine)} refuses to start",
                    span, ptr=spec.field or "",
                )
                return None, False
            return value, True
        if kind == "dtype":
            mapped = _DTYPE.get(str(raw))
            if mapped is None:
                return self._keep_in_options(spec, raw, span, "a model dtype kvlint knows")
            return mapped, True
        if kind in ("stoi", "stoi0"):
            number, rest = stoi(str(raw))
            if number is None:
                self.problem(
                    "invalid-flag-value",
                    f"{spec.spelling} expects an integer, not {raw!r}; llama.cpp refuses to start "
                    "(std::stoi: invalid argument)",
                    span, ptr=spec.field or "",
                )
                return None, False
            if rest:
                self.problem(
                    "invalid-flag-value",
                    f"llama.cpp reads {spec.spelling} {raw!r} as {number} (std::stoi stops at "
                    f"{rest[0]!r}); write the whole number",
                    span, "warning", spec.field or "",
                )
            if number < (0 if kind == "stoi0" else 1):
                return self._keep_in_options(spec, number, span, "a positive integer")
            return number, True
        if kind in ("int", "int-or-off", "hint", "hint-auto", "bytes"):
            plain = kind in ("int", "int-or-off")
            number = _int(raw) if plain else human_readable_int(str(raw), allow_auto=kind == "hint-auto")
            if number is None:
                self.problem(
                    "invalid-flag-value",
                    f"{spec.spelling} expects an integer, not {raw!r}; "
                    f"{flag_table.display(self.engine)} refuses to start",
                    span, ptr=spec.field or "",
                )
                return None, False
            if kind == "int-or-off" and number in (-1, 0):
                return number, True  # SGLang: -1 and 0 both turn chunked prefill off
            if number < 1:
                return self._keep_in_options(spec, raw, span, "a positive integer")
            return number, True
        if kind == "float":
            try:
                return float(raw), True
            except ValueError:
                self.problem(
                    "invalid-flag-value",
                    f"{spec.spelling} expects a number, not {raw!r}", span, ptr=spec.field or "",
                )
                return None, False
        if kind == "layers":
            return [int(x) if re.fullmatch(r"\d+", x) else x for x in raw], True
        return raw, True

    def _keep_in_options(self, spec: flag_table.FlagSpec, raw: Any, span: Span, what: str) -> Tuple[Any, bool]:
        """A value the manifest field cannot hold (`--max-model-len auto`) goes to engine.options."""
        self.out.settings.append(
            Setting(f"/engine/options/{spec.dest}", raw, span, None, f"{spec.spelling} (not {what})")
        )
        return None, False

    def _positionals(self) -> None:
        stray = [arg for arg in self.positionals if not self._run_time_arguments(arg)]
        takes_model = self.form in ("vllm serve", "trtllm-serve", "entrypoint") or (
            self.form == "sglang serve"
        )
        if takes_model and stray:
            model = stray.pop(0)
            text = self._text(model, 0, flag_table.MODEL_POSITIONAL)
            if text is not None:
                if self.out.model_given and self.form == "vllm serve":
                    pass  # vLLM moves `--model X` to the front; the option value already won
                self.out.settings.insert(
                    0, Setting("/model/name", text, model.span(), None, f"{model.origin}: model (positional)")
                )
                self.out.model_given = True
            if self.form == "sglang serve" and self.release is not None and flag_table.version_key(self.release) < flag_table.version_key("0.5.23"):
                self.problem(
                    "unexpected-argument",
                    "`sglang serve` takes the model as a positional argument only from 0.5.23 on; "
                    "use --model-path",
                    model.span(), "warning", "/model/name",
                )
        if self.form == "api_server" and stray:
            # make_arg_parser declares an optional positional `model_tag`, but only `vllm serve`
            # reads it (vllm/entrypoints/cli/serve.py L45); the module serves --model
            # (https://github.com/vllm-project/vllm/blob/v0.19.1/vllm/entrypoints/openai/cli_args.py)
            ignored = stray.pop(0)
            self.problem(
                "unexpected-argument",
                f"{ignored.text!r} is ignored: `python -m vllm.entrypoints.openai.api_server` reads the "
                "model only from --model, so vLLM serves its default model",
                ignored.span(), "warning", "/model/name",
            )
        for arg in stray:
            if arg.unresolved or (arg.expansion and expand(arg.text, self.env, kubernetes=self.kubernetes, shell=not self.kubernetes)[1]):
                self.problem(
                    "unresolved-value",
                    f"argument {arg.text!r} is decided when the container or script runs "
                    f"({', '.join(arg.unresolved) or 'a variable kvlint cannot resolve'}); the settings "
                    "it may carry are not checked",
                    arg.span(), "info",
                )
                continue
            self.problem(
                "unexpected-argument",
                f"unexpected argument {arg.text!r}: {flag_table.display(self.engine)} takes no further "
                "positional arguments and refuses to start"
                + (" (a switch such as --enable-x takes no true/false value)"
                   if arg.text.lower() in ("true", "false") else ""),
                arg.span(),
            )


    def _run_time_arguments(self, arg: Arg) -> bool:
        """An unquoted unresolved expansion (`$EXTRA_ARGS`, `"$@"` of a script whose arguments are
        not known) standing where an argument starts: the engine may see none, one or several
        arguments there. Reported once as not resolved; never taken for the model or a stray."""
        if not (arg.unresolved and arg.splits):
            return False
        self.problem(
            "unresolved-value",
            f"{arg.text!r} expands to arguments decided when the command runs "
            f"({', '.join(arg.unresolved)}); the engine settings they may carry are not checked",
            arg.span(), "info",
        )
        return True


# -fa values: is_truthy / is_falsey / is_autoy in common/arg.cpp
FA_VALUES = {
    "on": "on", "enabled": "on", "true": "on", "1": "on",
    "off": "off", "disabled": "off", "false": "off", "0": "off",
    "auto": "auto", "-1": "auto",
}
FA_SWITCH_BUILD = 4747  # read at this tag: a switch
FA_TRI_STATE_BUILD = 6327  # on|off|auto by this build (downstream bumps record it)
_BUILD = re.compile(r"^b(\d+)$")
_STOI = re.compile(r"^[ \t\n\r\f\v]*([+-]?\d+)")


def llama_build(release: Optional[str]) -> Optional[int]:
    """4747 for llama.cpp's build tag "b4747"; None for anything else."""
    match = _BUILD.match(release or "")
    return int(match.group(1)) if match else None


def stoi(text: str) -> Tuple[Optional[int], str]:
    """C++ std::stoi: leading blanks, a sign and digits; the rest is ignored (returned)."""
    match = _STOI.match(text)
    if not match:
        return None, text
    number = int(match.group(1))
    if not -(2**31) <= number < 2**31:
        return None, text  # std::out_of_range
    return number, text[match.end():]


def span_union(first: Span, last: Span) -> Span:
    return Span(first.line, first.column, last.end_line, last.end_column)


def _int(raw: Any) -> Optional[int]:
    try:
        return int(str(raw).strip())
    except ValueError:
        return None


def _merge_dotted(base: Dict[str, Any], update: Dict[str, Any]) -> Dict[str, Any]:
    out = dict(base)
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge_dotted(out[key], value)
        elif isinstance(value, list) and isinstance(out.get(key), list):
            out[key] = out[key] + value
        else:
            out[key] = value
    return out


def parse_command(
    argv: Sequence[Arg],
    invocation: Invocation,
    release: Optional[str] = None,
    env: Optional[Mapping[str, str]] = None,
    kubernetes: bool = False,
) -> ParsedCommand:
    """Parse the engine arguments of `argv` (from `invocation.first` on)."""
    parser = _Parser(
        invocation.engine, invocation.form, argv, invocation.command_start, invocation.first,
        release, env or {}, kubernetes,
    )
    result = parser.run()
    if parser.cut:
        last = argv[-1].whole
        result.problems.append(Problem(
            problem_code("not-checked"), "not-checked",
            f"kvlint stopped reading this command after {MAX_ARGUMENTS:,} arguments; the other "
            f"{parser.cut:,} are not checked", last, "info",
        ))
    _config_references(result, argv[invocation.first:], invocation.engine)
    return result


def _config_references(result: ParsedCommand, args: Sequence[Arg], engine: str) -> None:
    kind = {"vllm": "vllm-config", "sglang": "sglang-config", "tensorrt-llm": "trtllm-options"}.get(engine)
    if kind is None:
        return  # llama.cpp / Ollama: no engine config file kvlint reads
    for setting in result.settings:
        if setting.pointer == "/engine/options/config" or setting.pointer == "/engine/options/extra_llm_api_options":
            if isinstance(setting.value, str):
                result.references.append(Reference(kind, setting.value, setting.span, engine))
    if engine == "vllm":
        # only the exact token `--config` makes vLLM read the file
        # (https://github.com/vllm-project/vllm/blob/v0.19.1/vllm/utils/argparse_utils.py#L232)
        for arg in args:
            if arg.text.startswith("--config="):
                result.problems.append(
                    Problem(
                        problem_code("ignored-config"), "ignored-config",
                        f"vLLM only reads a config file given as two words (`--config FILE`); "
                        f"'{arg.text}' is accepted but the file is NOT read",
                        arg.span(), "warning",
                    )
                )

