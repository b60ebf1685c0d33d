"""From an argv (exec form, or a shell script inside it) to parsed engine invocations.

Shared by every format that carries a process launch: Kubernetes containers, compose services,
Dockerfiles and shell scripts. Shell text is tokenised with positions (`shell.py`); `export` and
`NAME=value` prefix assignments feed the environment used to resolve `$VAR` in later commands and
are recorded as engine env when they are engine variables (`VLLM_*`, …).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from kvlint.findings import Span

from kvlint.adapters import shell
from kvlint.adapters.cmdline import (
    Arg, Invocation, ParsedCommand, Setting, arg_from_word, expand, find_invocation, parse_command,
)
from kvlint.adapters.images import ImageEngine, engine_from_image
from kvlint.adapters.result import Problem, problem_code
from kvlint.adapters.source import Locator
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


def shell_script_index(argv: Sequence[Arg]) -> Optional[int]:
    """Index of the script in `sh -c SCRIPT` / `bash -lc SCRIPT` / `/bin/bash -ec SCRIPT`."""
    if not argv or os.path.basename(argv[0].text) not in SHELLS:
        return None
    for i in range(1, len(argv)):
        text = argv[i].text
        if text.startswith("-") and not text.startswith("--") and "c" in text[1:]:
            return i + 1 if i + 1 < len(argv) else None
        if not text.startswith("-"):
            return None
    return None


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


def run_script(
    text: str,
    locator: Locator,
    origin: str,
    env: Mapping[str, str],
    release_for: ReleaseFor,
    kubernetes: bool = False,
) -> LaunchResult:
    """Every engine invocation in a shell script, in order."""
    result = LaunchResult(shell_script=True)
    script = shell.parse(text)
    result.problems.extend(shell_problems(script, locator))
    variables: Dict[str, str] = dict(env)
    exported: Dict[str, Fact] = {}
    for command in script.commands:
        words = list(command.words)
        prefix: Dict[str, Fact] = {}
        for word in command.assignments:
            name, value, fact = _assignment(word, locator, origin, variables, kubernetes)
            prefix[name] = fact
            if not words:
                variables[name] = value  # a plain assignment sets a shell variable
        if words and words[0].text in ("export", "declare", "typeset") and not words[0].quoted:
            for word in words[1:]:
                if "=" in word.text and not word.text.startswith("-"):
                    name, value, fact = _assignment(word, locator, origin, variables, kubernetes)
                    variables[name] = value
                    if is_engine_env(name):
                        exported[name] = fact
            continue
        if not words:
            for name, fact in prefix.items():
                if is_engine_env(name):
                    exported[name] = fact
            continue
        argv = [
            arg_from_word(word, locator, f"{origin} (shell, line {locator.position(word.start)[0]})")
            for word in words
        ]
        docker = docker_run(argv, variables, release_for)
        if docker is not None:
            for launch in docker.launches:
                engine_env = dict(exported)
                engine_env.update(launch.env)
                launch.env = engine_env
            result.launches.extend(docker.launches)
            result.problems.extend(docker.problems)
            result.recognised = result.recognised or docker.recognised
            continue
        invocation = find_invocation(argv)
        if invocation is None:
            continue
        local = dict(variables)
        local.update({name: str(fact.value) for name, fact in prefix.items()})
        parsed = parse_command(
            argv, invocation, release_for(invocation.engine), local, kubernetes=kubernetes
        )
        engine_env = dict(exported)
        engine_env.update({n: f for n, f in prefix.items() if is_engine_env(n)})
        result.launches.append(Launch(parsed, engine_env, True))
        result.recognised = True
    return result


def _assignment(
    word: shell.Word, locator: Locator, origin: str, variables: Mapping[str, str], kubernetes: bool
) -> Tuple[str, str, Fact]:
    name, _, raw = word.text.partition("=")
    value, _ = expand(raw, variables, kubernetes=kubernetes)
    eq = len(name)
    value_start = word.offsets[eq + 1] if eq + 1 < len(word.offsets) else word.end
    span = locator.span(value_start, word.end) if eq + 1 < len(word.offsets) else locator.span(word.start, word.end)
    key_span = locator.span(word.offsets[0], word.offsets[eq - 1] + 1) if eq > 0 else span
    line = locator.position(word.start)[0]
    return name, value, Fact(value, span, f"{origin} (shell, line {line}): {name}=", key_span)


class ReleaseFor:
    """The engine release to parse with, per engine (known only for the image's engine)."""

    def __init__(self, engine: Optional[str] = None, release: Optional[str] = None):
        self.engine = engine
        self.release = release

    def __call__(self, engine: str) -> Optional[str]:
        return self.release if engine == self.engine else None


def run_argv(
    argv: Sequence[Arg],
    env: Mapping[str, str],
    release_for: ReleaseFor,
    kubernetes: bool = False,
    entrypoint: Optional[Tuple[str, int]] = None,
) -> LaunchResult:
    """Exec-form argv: a shell script (`bash -c …`) or a direct engine invocation.

    `entrypoint=(engine, first)`: the argv runs after an engine image's ENTRYPOINT, so when no
    engine command is found, argv[first:] are the engine's arguments.
    """
    index = shell_script_index(argv)
    if index is not None:
        script = argv[index]
        return run_script(
            script.text, SubLocator(script), script.origin, env, release_for, kubernetes=kubernetes
        )
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
    result.launches.append(Launch(parsed))
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
