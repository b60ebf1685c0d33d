"""Shell scripts and Dockerfiles → kvlint/v1 manifests, one per engine invocation.

Shell scripts are tokenised whole (`shell.py`) with positions in the file; `export` and prefix
assignments feed `$VAR` resolution and `engine.env`. The engine release comes from a
`pip install vllm==X` / `sglang[all]==X` / `tensorrt_llm==X` pin in the script, a `FROM` image in a
Dockerfile, or a `# kvlint: engine-version=X` comment.

Dockerfiles (https://docs.docker.com/reference/dockerfile/): the last stage's `FROM` image gives
engine and release; `ENV` sets env; `ENTRYPOINT` / `CMD` in exec form (a JSON array, positions
of each string kept) or shell form (run by `/bin/sh -c`, tokenised like a script). With only a
`CMD` on an engine image, the arguments follow the image's ENTRYPOINT.
"""

from __future__ import annotations

import re
from typing import Dict, List, Optional, Tuple

from kvlint.findings import Span

from kvlint.adapters.cmdline import Arg
from kvlint.adapters.images import ImageEngine, engine_from_image
from kvlint.adapters.launch import LaunchResult, ReleaseFor, image_backend, image_launch, run_argv, run_script
from kvlint.adapters.result import Adapted, Problem
from kvlint.adapters.source import LineLocator, Locator, OffsetLocator
from kvlint.adapters.workload import Draft, Fact, assemble, comment_statements, is_engine_env, problem

_PIN = re.compile(
    r"\b(?P<pkg>vllm|sglang|tensorrt[-_]llm)(?:\[[^\]]*\])?==(?P<version>\d+(?:\.\d+){1,3}(?:(?:rc|post|\.post|dev|\.dev)\d*)?)"
)
_PKG_ENGINE = {"vllm": "vllm", "sglang": "sglang", "tensorrt-llm": "tensorrt-llm", "tensorrt_llm": "tensorrt-llm"}


def _pins(text: str, locator: LineLocator) -> Dict[str, Fact]:
    found: Dict[str, Fact] = {}
    for match in _PIN.finditer(text):
        engine = _PKG_ENGINE[match.group("pkg").lower()]
        span = locator.span(match.start("version"), match.end("version"))
        found[engine] = Fact(match.group("version"), span, f"pip pin {match.group(0)} (line {span.line})")
    return found


def adapt_shell(path: str, text: str) -> Tuple[List[Adapted], List[Problem]]:
    locator = LineLocator(text)
    pins = _pins(text, locator)
    comments = comment_statements(text, "shell")
    release_for = _ReleaseFromFacts(pins, comments)
    result = run_script(text, locator, "script", {}, release_for)
    return _drafts(path, "shell", result, pins, comments, None, None, locator), (
        result.problems if not result.launches else []
    )


class _ReleaseFromFacts(ReleaseFor):
    def __init__(self, pins: Dict[str, Fact], comments: Dict[str, Fact], image: Optional[ImageEngine] = None):
        super().__init__()
        self.pins = pins
        self.comments = comments
        self.image = image

    def __call__(self, engine: str) -> Optional[str]:
        stated = self.comments.get("engine-version")
        if stated is not None:
            return str(stated.value).lstrip("v")
        if engine in self.pins:
            return str(self.pins[engine].value)
        if self.image is not None and self.image.engine == engine:
            return self.image.release
        return None


def _drafts(
    path: str, fmt: str, result: LaunchResult, pins: Dict[str, Fact], comments: Dict[str, Fact],
    image: Optional[Tuple[ImageEngine, str, Span]], env: Optional[Dict[str, Fact]], locator: Locator,
) -> List[Adapted]:
    adapted: List[Adapted] = []
    for number, launch in enumerate(result.launches):
        parsed = launch.command
        line = parsed.span.line
        draft = Draft(
            file=path, format=fmt, name=f"{fmt}:{path}:{line}", index=0, root=parsed.span,
            meta_name=f"{_stem(path)}-{parsed.engine}-line-{line}",
        )
        draft.command = parsed
        if number == 0:
            draft.problems.extend(result.problems)
        draft.engine = Fact(parsed.engine, parsed.span, "command")
        launch_image = launch.image or image
        if launch_image is not None and launch_image[0].engine == parsed.engine:
            engine_image, raw, span = launch_image
            origin = f"FROM {raw}" if launch.image is None else f"docker run {raw}"
            draft.engine = Fact(parsed.engine, span, origin)
            draft.settings.extend(image_backend(engine_image, span, None, origin))
            if engine_image.release:
                draft.release = Fact(engine_image.release, span, f"{origin} (image tag)")
            else:
                draft.release_why = engine_image.why_unknown
                if engine_image.floating:
                    draft.problems.append(problem("unpinned-image", engine_image.why_unknown, span, "warning", "/engine/version"))
        elif parsed.engine in pins:
            draft.release = pins[parsed.engine]
        draft.env = dict(env or {})
        draft.env.update(launch.env)
        draft.statements = dict(comments)
        draft.hints["/hardware/gpu"] = "the GPU model: a `# kvlint: gpu=H100-SXM-80GB` comment"
        example = _EXAMPLE_RELEASE.get(parsed.engine, "X")
        pin = _PIN_HINT.get(parsed.engine)
        draft.hints["/engine/version"] = (
            f"the engine release: a `# kvlint: engine-version={example}` comment"
            + (" or a versioned FROM image" if fmt == "dockerfile" else f" or a {pin} pin" if pin else "")
        )
        adapted.append(assemble(draft))
    return adapted


# how a script pins each engine's release (matched by _PIN), and a release to show in a hint
_PIN_HINT = {"vllm": "`pip install vllm==X`", "sglang": "`pip install \"sglang[all]==X\"`",
             "tensorrt-llm": "`pip install tensorrt_llm==X`"}
_EXAMPLE_RELEASE = {"vllm": "0.19.1", "sglang": "0.5.2", "tensorrt-llm": "1.2.1", "llama.cpp": "b6840",
                    "ollama": "0.13.3"}


def _stem(path: str) -> str:
    base = path.replace("\\", "/").rsplit("/", 1)[-1]
    return base.rsplit(".", 1)[0] if "." in base else base


# --- Dockerfile ---------------------------------------------------------------------------------

_INSTRUCTION = re.compile(r"^[ \t]*(?P<name>[A-Za-z]+)(?P<gap>[ \t]+)", re.MULTILINE)


def _logical_lines(text: str) -> List[Tuple[str, int, int]]:
    """(instruction, start offset of its arguments, end offset) with `\\` continuations joined."""
    out: List[Tuple[str, int, int]] = []
    n = len(text)
    i = 0
    while i < n:
        end = text.find("\n", i)
        end = n if end < 0 else end
        line = text[i:end]
        stripped = line.lstrip()
        if not stripped or stripped.startswith("#"):
            i = end + 1
            continue
        match = _INSTRUCTION.match(text, i)
        if not match or match.start() != i:
            i = end + 1
            continue
        args_start = match.end()
        j = i
        while True:
            end = text.find("\n", j)
            end = n if end < 0 else end
            if text[j:end].rstrip().endswith("\\") and end < n:
                j = end + 1
                continue
            break
        out.append((match.group("name").upper(), args_start, end))
        i = end + 1
    return out


def _json_array(text: str, start: int, end: int, locator: Locator, origin: str) -> Optional[List[Arg]]:
    """Exec form `["a", "b"]` with each character's offset kept; None if not a JSON array."""
    i = start
    while i < end and text[i] in " \t":
        i += 1
    if i >= end or text[i] != "[":
        return None
    i += 1
    args: List[Arg] = []
    while i < end:
        ch = text[i]
        if ch in " \t\r\n,\\":
            i += 1
            continue
        if ch == "]":
            return args
        if ch != '"':
            return None
        chars: List[str] = []
        offsets: List[int] = []
        first = i
        i += 1
        while i < end and text[i] != '"':
            if text[i] == "\\" and i + 1 < end:
                escape = text[i + 1]
                decoded = {"n": "\n", "t": "\t", '"': '"', "\\": "\\", "/": "/"}.get(escape, escape)
                chars.append(decoded)
                offsets.append(i)
                i += 2
                continue
            chars.append(text[i])
            offsets.append(i)
            i += 1
        if i >= end:
            return None
        i += 1
        args.append(Arg("".join(chars), tuple(offsets), locator, locator.span(first, i), f"{origin}[{len(args)}]"))
    return None


def adapt_dockerfile(path: str, text: str) -> Tuple[List[Adapted], List[Problem]]:
    locator = LineLocator(text)
    comments = comment_statements(text, "line")
    pins = _pins(text, locator)
    image: Optional[Tuple[ImageEngine, str, Span]] = None
    entrypoint: Optional[Tuple[str, int, int]] = None
    cmd: Optional[Tuple[str, int, int]] = None
    env: Dict[str, Fact] = {}
    env_values: Dict[str, str] = {}
    for name, start, end in _logical_lines(text):
        body = text[start:end]
        if name == "FROM":
            words = body.split()
            raw = next((w for w in words if not w.startswith("--")), "")
            engine_image = engine_from_image(raw) if raw else None
            offset = start + body.find(raw) if raw else start
            image = (engine_image, raw, locator.span(offset, offset + len(raw))) if engine_image else None
            entrypoint = cmd = None
            env, env_values = {}, {}
        elif name == "ENTRYPOINT":
            entrypoint = (name, start, end)
            cmd = None  # setting ENTRYPOINT resets an inherited CMD
        elif name == "CMD":
            cmd = (name, start, end)
        elif name == "ENV":
            _env(text, start, end, locator, env, env_values)
    argv: List[Arg] = []
    problems: List[Problem] = []
    shell_form: Optional[Tuple[int, int, str]] = None
    for part in (entrypoint, cmd):
        if part is None:
            continue
        name, start, end = part
        parsed = _json_array(text, start, end, locator, name)
        if parsed is None:
            shell_form = (start, end, name)
            break
        argv.extend(parsed)
    engine_image = image[0] if image else None
    release_for = _ReleaseFromFacts(pins, comments, engine_image)
    if shell_form is not None:
        start, end, name = shell_form
        result = _shell_form(text, start, end, locator, name, env_values, release_for)
    else:
        # only a CMD on an engine image: its words follow the image's ENTRYPOINT
        ep = (engine_image.engine, 0) if engine_image is not None and entrypoint is None else None
        result = run_argv(argv, env_values, release_for, entrypoint=ep)
        if not result.recognised and engine_image is not None and engine_image.serves and not argv and image:
            result = image_launch(engine_image.engine, image[2])
    if not result.recognised:
        if image is not None:
            problems.append(problem(
                "not-checked",
                f"the image is built FROM {image[1]} but kvlint found no engine command in ENTRYPOINT/CMD",
                image[2], "info",
            ))
        return [], problems + result.problems
    return _drafts(path, "dockerfile", result, pins, comments, image, env, locator), problems


def _shell_form(
    text: str, start: int, end: int, locator: LineLocator, origin: str, env: Dict[str, str],
    release_for: ReleaseFor,
) -> LaunchResult:
    """A shell-form instruction: tokenise its slice, positions mapped back into the file."""
    body = text[start:end]

    return run_script(body, OffsetLocator(locator, start), origin, env, release_for)


def _env(text: str, start: int, end: int, locator: LineLocator, env: Dict[str, Fact], values: Dict[str, str]) -> None:
    body = text[start:end]
    pairs = re.finditer(r"(?P<key>[A-Za-z_][A-Za-z0-9_]*)=(?P<value>\"[^\"]*\"|'[^']*'|\S*)", body)
    found = False
    for match in pairs:
        found = True
        key = match.group("key")
        value = match.group("value").strip("\"'")
        values[key] = value
        if is_engine_env(key):
            vs = start + match.start("value")
            env[key] = Fact(value, locator.span(vs, start + match.end("value")), f"ENV {key} (line {locator.position(vs)[0]})",
                            locator.span(start + match.start("key"), start + match.end("key")))
    if not found:
        # legacy `ENV KEY value`
        parts = body.strip().split(None, 1)
        if len(parts) == 2:
            key, value = parts
            values[key] = value.strip()
            if is_engine_env(key):
                vs = start + body.find(value)
                env[key] = Fact(value.strip(), locator.span(vs, vs + len(value.strip())), f"ENV {key}")
