"""systemd units and Ollama Modelfiles → kvlint/v1 manifests (llama.cpp and Ollama servers).

systemd (https://www.freedesktop.org/software/systemd/man/latest/systemd.exec.html#Environment=,
https://www.freedesktop.org/software/systemd/man/latest/systemd.service.html#ExecStart=): in the
`[Service]` section, `Environment=` holds space-separated `NAME=value` assignments, each possibly
quoted; `ExecStart=` the command line, after optional `-@:+!` prefixes (an empty `ExecStart=` in a
drop-in only resets the list). A line ending in a backslash continues on the next. Ollama's own
guide sets its variables this way, in the unit or in a drop-in such as
`/etc/systemd/system/ollama.service.d/override.conf`
(https://github.com/ollama/ollama/blob/v0.5.0/docs/faq.md#setting-environment-variables-on-linux).
A drop-in with only `Environment=` lines configures the server the main unit starts: `OLLAMA_*`
variables mean Ollama, `LLAMA_ARG_*` llama.cpp. `EnvironmentFile=` is not opened (adapters do no I/O).

Modelfile (https://github.com/ollama/ollama/blob/v0.5.0/docs/modelfile.md): `FROM` names the model
(a library name, or a `.gguf` file), `PARAMETER num_ctx N` its context window; instructions are
case-insensitive. It is one model's settings: the server's settings (cache type, flash attention,
parallel slots) are not in it.
"""

from __future__ import annotations

import os
import re
from typing import Dict, List, Optional, Tuple

from kvlint.findings import Span

from kvlint.adapters import shell
from kvlint.adapters.cmdline import ParsedCommand, Setting, arg_from_word
from kvlint.adapters.launch import Launch, LaunchResult, ReleaseFor, run_argv, shell_problems
from kvlint.adapters.result import Adapted, Problem
from kvlint.adapters.source import LineLocator, OffsetLocator
from kvlint.adapters.workload import Draft, Fact, assemble, comment_statements, is_engine_env, problem

_SECTION = re.compile(r"^\s*\[(?P<name>[^\]]+)\]\s*$")
_KEY = re.compile(r"^(?P<key>[A-Za-z][A-Za-z0-9]*)\s*=\s*")
_ENGINE_WORDS = re.compile(rb"ollama|llama-server|llama-cli|LLAMA_ARG_|OLLAMA_")
_MODELFILE_FROM = re.compile(rb"^\s*from\s+\S", re.IGNORECASE | re.MULTILINE)


def is_unit_name(path: str) -> bool:
    """A systemd service unit, or a `.conf` drop-in in a `<unit>.service.d` directory."""
    name = os.path.basename(path)
    if name.endswith(".service"):
        return True
    parent = os.path.basename(os.path.dirname(path.replace("\\", "/")))
    return name.endswith(".conf") and parent.endswith(".service.d")


def is_modelfile_name(path: str) -> bool:
    name = os.path.basename(path)
    return name == "Modelfile" or name.startswith("Modelfile.") or name.lower().endswith(".modelfile")


_SERVICE_HEADER = re.compile(rb"\[[ \t]*[Ss][Ee][Rr][Vv][Ii][Cc][Ee][ \t]*\]")


def sniff_unit(path: str, head: bytes) -> bool:
    # a near-miss header (`[Service ]`) is still a unit: the adapter says systemd ignores it
    return is_unit_name(path) and _SERVICE_HEADER.search(head) is not None and _ENGINE_WORDS.search(head) is not None


def sniff_modelfile(path: str, head: bytes) -> bool:
    return is_modelfile_name(path) and _MODELFILE_FROM.search(head) is not None


def _logical_lines(text: str) -> List[Tuple[int, int]]:
    """(start, end) offsets of each logical line, backslash continuations joined."""
    out: List[Tuple[int, int]] = []
    i, n = 0, len(text)
    while i < n:
        j = i
        while True:
            end = text.find("\n", j)
            end = n if end < 0 else end
            if text[j:end].rstrip("\r").endswith("\\") and end < n:
                j = end + 1
                continue
            break
        out.append((i, end))
        i = end + 1
    return out


def adapt_unit(path: str, text: str) -> Tuple[List[Adapted], List[Problem]]:
    lines = LineLocator(text)
    comments = comment_statements(text, "line")
    section = ""
    env: Dict[str, Fact] = {}
    env_values: Dict[str, str] = {}
    problems: List[Problem] = []
    exec_start: Optional[Tuple[int, int, str]] = None
    unset: List[str] = []
    for start, end in _logical_lines(text):
        line = text[start:end]
        stripped = line.strip()
        if not stripped or stripped[0] in "#;":
            continue
        match = _SECTION.match(line)
        if match:
            # systemd strips the line, then takes the text between the brackets as the section
            # name, unstripped, and compares it exactly (src/shared/conf-parser.c parse_line):
            # `[Service ]` or `[service]` is an unknown section, logged and ignored with its settings
            section = match.group("name")
            if section != "Service" and section.strip().lower() == "service":
                problems.append(problem(
                    "not-checked",
                    f"section [{section}] is not [Service]: systemd takes the name between the brackets "
                    f"exactly, logs \"Unknown section '{section}'. Ignoring.\" and ignores every setting "
                    "in it; kvlint ignores them too (write [Service])",
                    lines.span(start + match.start("name") - 1, start + match.end("name") + 1), "info",
                ))
            continue
        if section != "Service":
            continue
        key = _KEY.match(line)
        if not key:
            continue
        value_start = start + key.end()
        name = key.group("key")
        if name == "Environment":
            if not text[value_start:end].strip():
                # systemd.exec(5): "If the empty string is assigned to this option, the list of
                # environment variables is reset, all prior assignments have no effect."
                env.clear()
                env_values.clear()
                continue
            _environment(text, value_start, end, lines, env, env_values, problems)
        elif name == "UnsetEnvironment":
            if not text[value_start:end].strip():
                unset.clear()  # systemd.exec(5): the empty string resets the list to unset
                continue
            unset.extend(w.text for c in shell.parse(text[value_start:end]).commands
                         for w in c.assignments + c.words)
        elif name == "ExecStart":
            body = text[value_start:end]
            prefix = len(body) - len(body.lstrip("-@:+!"))
            exec_start = (value_start + prefix, end, name) if body[prefix:].strip() else None
        elif name == "EnvironmentFile":
            problems.append(problem(
                "unresolved-value",
                f"EnvironmentFile={text[value_start:end].strip()} is not read by kvlint; variables set "
                "there are not checked (move them to Environment= lines to have them checked)",
                lines.span(value_start, max(end, value_start + 1)), "info",
            ))
    _unset(unset, env, env_values)
    release_for = _Statements(comments)
    result = LaunchResult()
    if exec_start is not None:
        start, end, _ = exec_start
        locator = OffsetLocator(lines, start)
        script = shell.parse(text[start:end])
        problems.extend(shell_problems(script, locator))
        words = [w for command in script.commands for w in command.assignments + command.words]
        argv = [arg_from_word(w, locator, f"ExecStart (line {locator.position(w.start)[0]})") for w in words]
        result = run_argv(argv, env_values, release_for)
    if not result.recognised:
        engine = _engine_from_env(env)
        if engine is None:
            return [], problems
        first = min(env.values(), key=lambda f: (f.span.line, f.span.column))
        anchor = first.key_span or first.span
        result = LaunchResult(launches=[Launch(ParsedCommand(engine, "environment", anchor))], recognised=True)
    workloads: List[Adapted] = []
    for launch in result.launches:
        parsed = launch.command
        line = parsed.span.line
        draft = Draft(
            file=path, format="systemd", name=f"systemd:{path}:{line}", index=0, root=parsed.span,
            meta_name=f"{_stem(path)}-{parsed.engine}",
        )
        draft.command = parsed if parsed.form != "environment" else None
        draft.engine = Fact(parsed.engine, parsed.span,
                            "ExecStart" if parsed.form != "environment" else f"{parsed.engine} variables")
        draft.problems.extend(problems)
        draft.env = dict(env)
        # `ExecStart=env NAME=value ENGINE …` sets NAME for the engine, after Environment=
        draft.env.update({name: fact for name, fact in launch.env.items() if is_engine_env(name)})
        draft.statements = dict(comments)
        draft.hints.update(_HINTS)
        workloads.append(assemble(draft))
    return workloads, ([] if workloads else problems)


_HINTS = {
    "/hardware/gpu": "the GPU model: a `# kvlint: gpu=H100-SXM-80GB` comment in the unit",
    "/engine/version": "the engine release: a `# kvlint: engine-version=0.13.3` comment "
    "(Ollama's version, or llama.cpp's build tag such as b4747)",
    "/model/name": "the model: the server's model argument, or a `# kvlint: model=org/name` comment",
}


def _environment(
    text: str, start: int, end: int, lines: LineLocator, env: Dict[str, Fact], values: Dict[str, str],
    problems: List[Problem],
) -> None:
    locator = OffsetLocator(lines, start)
    script = shell.parse(text[start:end])
    problems.extend(shell_problems(script, locator))
    for command in script.commands:
        for word in command.assignments + command.words:
            name, eq, value = word.text.partition("=")
            if not eq or not name:
                continue
            values[name] = value
            if not is_engine_env(name):
                continue
            value_at = len(name) + 1
            span = (
                locator.span(word.offsets[value_at], word.offsets[-1] + 1)
                if value_at < len(word.offsets) else locator.span(word.start, word.end)
            )
            key_span = locator.span(word.offsets[0], word.offsets[len(name) - 1] + 1)
            env[name] = Fact(value, span, f"Environment= {name} (line {span.line})", key_span)


def _unset(names: List[str], env: Dict[str, Fact], values: Dict[str, str]) -> None:
    """UnsetEnvironment=, applied last whatever the order of the lines (systemd.exec(5)): a NAME
    removes any assignment of it, NAME=value only that exact assignment."""
    for item in names:
        name, eq, value = item.partition("=")
        if eq and values.get(name) != value:
            continue
        values.pop(name, None)
        env.pop(name, None)


def _engine_from_env(env: Dict[str, Fact]) -> Optional[str]:
    if any(name.startswith("OLLAMA_") for name in env):
        return "ollama"
    if any(name.startswith("LLAMA_ARG_") for name in env):
        return "llama.cpp"
    return None


class _Statements(ReleaseFor):
    """The release to parse with: only a `# kvlint: engine-version=` comment names it here."""

    def __init__(self, comments: Dict[str, Fact]):
        super().__init__()
        self.comments = comments

    def __call__(self, engine: str) -> Optional[str]:
        stated = self.comments.get("engine-version")
        return str(stated.value) if stated is not None else None


def _stem(path: str) -> str:
    base = os.path.basename(path.replace("\\", "/"))
    if base.endswith(".conf"):
        parent = os.path.basename(os.path.dirname(path.replace("\\", "/")))
        base = parent[: -len(".service.d")] + "-" + base[: -len(".conf")] if parent else base
    return base.rsplit(".", 1)[0] if base.endswith(".service") else base


# --- Modelfile ------------------------------------------------------------------------------------

_INSTRUCTION = re.compile(r"^[ \t]*(?P<name>[A-Za-z]+)[ \t]+(?P<rest>.*?)[ \t\r]*$")
_PARAMETER = re.compile(r"^(?P<key>\S+)[ \t]+(?P<value>.*)$")


def adapt_modelfile(path: str, text: str) -> Tuple[List[Adapted], List[Problem]]:
    lines = LineLocator(text)
    comments = comment_statements(text, "line")
    model: Optional[Fact] = None
    num_ctx: Optional[Tuple[str, Span, Span]] = None
    offset = 0
    for number, line in enumerate(text.split("\n"), start=1):
        line_start = offset
        offset += len(line) + 1
        match = _INSTRUCTION.match(line)
        if not match or line.lstrip().startswith("#"):
            continue
        name = match.group("name").upper()
        rest_start = line_start + match.start("rest")
        rest = match.group("rest")
        if name == "FROM" and rest:
            model = Fact(rest, lines.span(rest_start, rest_start + len(rest)), f"FROM (line {number})",
                         lines.span(line_start + match.start("name"), line_start + match.end("name")))
        elif name == "PARAMETER":
            parameter = _PARAMETER.match(rest)
            if parameter and parameter.group("key").lower() == "num_ctx":
                value_at = rest_start + parameter.start("value")
                value = parameter.group("value")
                num_ctx = (value, lines.span(value_at, value_at + len(value)),
                           lines.span(rest_start, rest_start + len(parameter.group("key"))))
    if model is None:
        return [], []
    draft = Draft(
        file=path, format="modelfile", name=f"modelfile:{path}", index=0, root=model.key_span or model.span,
        meta_name=f"{_stem(path)}-ollama",
    )
    draft.engine = Fact("ollama", model.key_span or model.span, "Modelfile")
    draft.settings.append(Setting("/model/name", model.value, model.span, model.key_span, model.provenance))
    if num_ctx is not None:
        value, span, key_span = num_ctx
        if value.isdigit() and int(value) >= 1:
            draft.settings.append(Setting("/serving/max_model_len", int(value), span, key_span,
                                          f"PARAMETER num_ctx (line {span.line})"))
        else:
            draft.problems.append(problem(
                "invalid-flag-value",
                f"PARAMETER num_ctx {value!r} is not a positive integer; `ollama create` refuses it",
                span, "error", "/serving/max_model_len",
            ))
    draft.statements = dict(comments)
    draft.hints.update(_HINTS)
    draft.hints["/hardware/gpu"] = "the GPU model: a `# kvlint: gpu=H100-SXM-80GB` comment in the Modelfile"
    draft.hints["/engine/version"] = (
        "the Ollama release that serves this model: a `# kvlint: engine-version=0.13.3` comment"
    )
    return [assemble(draft)], []
