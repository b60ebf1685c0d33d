"""docker-compose services → kvlint/v1 manifests, one per engine service.

Compose file reference (https://docs.docker.com/reference/compose-file/services/): `image`,
`entrypoint` and `command` (a list, or a string split like a shell word list — no shell runs),
`environment` (map or `KEY=VALUE` list), GPUs in
`deploy.resources.reservations.devices[] {driver: nvidia, count | device_ids, capabilities: [gpu]}`
(https://docs.docker.com/compose/how-tos/gpu-support/). Variables are interpolated as Compose does
(`compose_vars.py`: `.env` beside the file, defaults, `$$`); `env_file` files beside the compose
file add to the container environment; `extends` of a service in the same file is followed.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any, Dict, List, Optional, Tuple

from kvlint.load import Document

from kvlint.adapters import shell
from kvlint.adapters.cmdline import Arg, arg_from_word
from kvlint.adapters.compose_vars import Interpolated, MappedLocator, interpolate, read_dotenv
from kvlint.adapters.images import ImageEngine, engine_from_image
from kvlint.adapters.launch import ReleaseFor, image_backend, image_launch, run_argv, shell_problems
from kvlint.adapters.result import Adapted, Problem, pointer
from kvlint.adapters.source import LineLocator, Locator, scalar_locator
from kvlint.adapters.workload import Draft, Fact, assemble, comment_statements, is_engine_env, problem


def detect(data: Any, path: str = "") -> bool:
    services = data.get("services") if isinstance(data, dict) else None
    if not isinstance(services, dict) or not services:
        return False
    if "apiVersion" in data or "kind" in data:
        return False
    return any(isinstance(s, dict) and ("image" in s or "build" in s or "command" in s) for s in services.values())


class _Compose:
    """One compose document with its interpolation variables."""

    def __init__(self, path: str, text: str, document: Document, variables: Dict[str, str]):
        self.path = path
        self.text = text
        self.lines = LineLocator(text)
        self.document = document
        self.variables = variables
        self.problems: List[Problem] = []

    def interpolate(self, value: str, ptr: str, what: str) -> Interpolated:
        result = interpolate(value, self.variables)
        for missing in dict.fromkeys(result.unresolved):
            self.problems.append(problem(
                "unresolved-value",
                f"{what} depends on {missing}, which neither the file nor the `.env` beside it sets; "
                "its value is decided by whoever runs `docker compose`, so what depends on it is not checked",
                self.document.span(ptr), "info",
            ))
        return result

    def located(self, ptr: str, value: str) -> Tuple[str, Locator, Tuple[str, ...]]:
        """A string value interpolated, with the locator of its characters in the file."""
        span = self.document.span(ptr)
        located = scalar_locator(self.text, self.lines, span, value)
        result = interpolate(value, self.variables)
        if not result.changed:
            return value, located.locator, ()
        return result.text, MappedLocator(located.locator, result.offsets), result.unresolved


def adapt_document(path: str, text: str, document: Document) -> Tuple[List[Adapted], List[Problem]]:
    variables, why = read_dotenv(path)
    compose = _Compose(path, text, document, variables)
    comments = comment_statements(text)
    workloads: List[Adapted] = []
    problems: List[Problem] = []
    if why is not None:
        problems.append(problem(
            "not-checked", f"{why}; the variables it sets are not interpolated", document.span("/services"), "info",
        ))
    services = document.data["services"]
    for name, service in services.items():
        if not isinstance(service, dict):
            continue
        base = f"/services{pointer(str(name))}"
        compose.problems = []
        adapted, note = _adapt_service(compose, base, str(name), _extended(services, str(name)), comments)
        workloads.extend(adapted)
        if note is not None:
            problems.append(note)
    return workloads, problems


def _partial_image(raw: str) -> Optional[ImageEngine]:
    """The engine of an image whose tag holds a variable nobody set (`llama.cpp:server-cuda-${B}`):
    the repository still names the engine; the release stays unknown (not an unpinned image)."""
    slash = raw.rfind("/", 0, raw.find("$") if "$" in raw else len(raw))
    repository, colon, tag = raw[slash + 1:].partition(":")
    repository = raw[:slash + 1] + repository
    if not colon or "$" in repository:
        return None
    known = re.sub(r"[-_.]?\$\{[^}]*\}|[-_.]?\$[A-Za-z_][A-Za-z0-9_]*", "", tag)
    image = engine_from_image(f"{repository}:{known}" if known else repository)
    if image is None:
        return None
    return replace(image, release=None, floating=False,
                   why_unknown=f"the image tag {tag!r} depends on a variable nobody set; give the release "
                   "in `.env`, or a `# kvlint: engine-version=…` comment")


def _extended(services: Dict[str, Any], name: str) -> Dict[str, Tuple[Any, str]]:
    """The service's keys, each with the pointer it is read from, following `extends` of services
    in the same file (the service's own keys win; `environment` maps merge)."""
    chain: List[str] = []
    current: Optional[str] = name
    while current is not None and current not in chain and len(chain) < 8:
        chain.append(current)
        service = services.get(current)
        extends = service.get("extends") if isinstance(service, dict) else None
        if isinstance(extends, str):
            current = extends
        elif isinstance(extends, dict) and "file" not in extends and isinstance(extends.get("service"), str):
            current = extends["service"]
        else:
            current = None
    fields: Dict[str, Tuple[Any, str]] = {}
    for service_name in reversed(chain):
        service = services.get(service_name)
        if not isinstance(service, dict):
            continue
        for key, value in service.items():
            fields[str(key)] = (value, f"/services{pointer(service_name)}/{pointer(str(key))[1:]}")
    return fields


def _argv(compose: _Compose, ptr: str, value: Any, origin: str) -> Tuple[List[Arg], List[Problem]]:
    document = compose.document
    if isinstance(value, list):
        args = []
        for i, item in enumerate(value):
            item_ptr = f"{ptr}/{i}"
            item_span = document.span(item_ptr)
            item_text = item if isinstance(item, str) else str(item)
            text, locator, missing = compose.located(item_ptr, item_text)
            args.append(Arg(text, tuple(range(len(text))), locator, item_span, f"{origin}[{i}]",
                            "$" in text, missing))
        return args, []
    if isinstance(value, str):
        text, locator, missing = compose.located(ptr, value)
        script = shell.parse(text)
        words = [w for command in script.commands for w in command.assignments + command.words]
        args = [arg_from_word(w, locator, origin) for w in words]
        if missing:
            # Compose splits the interpolated string; a value it could not decide may be any words
            args = [Arg(a.text, a.offsets, a.locator, a.whole, a.origin, True, missing, True)
                    if "${" in a.text or "$" in a.text else a for a in args]
        return args, shell_problems(script, locator)
    return [], []


def _adapt_service(
    compose: _Compose, base: str, name: str, fields: Dict[str, Tuple[Any, str]], comments: Dict[str, Fact],
) -> Tuple[List[Adapted], Optional[Problem]]:
    path, document = compose.path, compose.document
    where = f"service {name!r}"
    image_raw, image_ptr = fields.get("image", (None, f"{base}/image"))
    image = None
    if isinstance(image_raw, str):
        interpolated = compose.interpolate(image_raw, image_ptr, f"{where} image {image_raw!r}")
        image_raw = interpolated.text
        image = engine_from_image(image_raw) if not interpolated.unresolved else _partial_image(image_raw)
    env_values, env_facts = _environment(compose, fields, where)
    entry_value, entry_ptr = fields.get("entrypoint", (None, f"{base}/entrypoint"))
    command_value, command_ptr = fields.get("command", (None, f"{base}/command"))
    entry, entry_problems = _argv(compose, entry_ptr, entry_value, f"{where} entrypoint")
    command, command_problems = _argv(compose, command_ptr, command_value, f"{where} command")
    entry_problems = compose.problems + entry_problems
    release_for = ReleaseFor(image.engine if image else None, image.release if image else None)
    entrypoint = (image.engine, len(entry)) if image is not None and not entry else None
    result = run_argv(entry + command, env_values, release_for, entrypoint=entrypoint)
    if not result.recognised and image is not None and image.serves and not entry and not command:
        result = image_launch(image.engine, document.span(image_ptr))
    root = document.span(base)
    if not result.recognised:
        if image is None:
            return [], None
        return [], problem(
            "not-checked",
            f"{where} runs the engine image {image_raw!r} but kvlint found no engine command in it",
            root, "info",
        )
    adapted: List[Adapted] = []
    for number, launch in enumerate(result.launches):
        suffix = f"#{number + 1}" if len(result.launches) > 1 else ""
        draft = Draft(file=path, format="compose", name=f"compose/{name}{suffix}", index=document.index,
                      root=root, meta_name=name)
        draft.command = launch.command
        draft.problems.extend(entry_problems + command_problems + result.problems)
        image_span = document.span(image_ptr) if image_raw is not None else root
        draft.anchors["/engine"] = image_span
        if (
            image is not None and image.engine == "vllm" and not entry and command
            and launch.command.form == "vllm serve" and launch.command.span.line == command[0].whole.line
            and command[0].text in ("vllm", "serve")
        ):
            draft.problems.append(problem(
                "unexpected-argument",
                f"{where}: `command` replaces the image's CMD and is appended to its ENTRYPOINT; current "
                "vllm/vllm-openai images already run `vllm serve`, so repeating it passes `vllm serve` "
                "as arguments (set `entrypoint` instead, or drop it from `command`)",
                command[0].whole, "warning",
            ))
        engine = launch.command.engine
        if image is not None and image.engine == engine:
            draft.engine = Fact(engine, image_span, f"{where} image", document.key_spans.get(image_ptr))
            draft.settings.extend(image_backend(image, image_span, document.key_spans.get(image_ptr), where))
            if image.release:
                draft.release = Fact(image.release, image_span, f"{where} image tag")
            else:
                draft.release_why = image.why_unknown
                if image.floating:
                    draft.problems.append(problem("unpinned-image", image.why_unknown, image_span, "warning", "/engine/version"))
        else:
            draft.engine = Fact(engine, launch.command.span, f"{where} command")
        count = _gpu_count(document, fields, where, draft, "gpu-count" in comments)
        if count is not None:
            draft.gpu_count = count
        draft.env = dict(env_facts)
        draft.env.update(launch.env)
        draft.statements = dict(comments)
        draft.hints["/hardware/gpu"] = "the GPU model: a `# kvlint: gpu=H100-SXM-80GB` comment in the compose file"
        draft.hints["/engine/version"] = (
            "the engine release: a versioned image tag, or a `# kvlint: engine-version=0.19.1` comment"
        )
        adapted.append(assemble(draft))
    return adapted, None


def _environment(
    compose: _Compose, fields: Dict[str, Tuple[Any, str]], where: str
) -> Tuple[Dict[str, str], Dict[str, Fact]]:
    """The container environment: `env_file` files (in order), then `environment`, which wins."""
    document = compose.document
    values: Dict[str, str] = {}
    facts: Dict[str, Fact] = {}
    env_files, env_files_ptr = fields.get("env_file", (None, ""))
    for i, entry in enumerate(env_files if isinstance(env_files, list) else [env_files]):
        name = entry.get("path") if isinstance(entry, dict) else entry
        if not isinstance(name, str) or not name:
            continue
        ptr = f"{env_files_ptr}/{i}" if isinstance(env_files, list) else env_files_ptr
        found, why = read_dotenv(compose.path, compose.interpolate(name, ptr, f"{where} env_file").text)
        if why is not None:
            compose.problems.append(problem(
                "not-checked", f"{where} env_file: {why}; the variables it sets are not checked",
                document.span(ptr), "info",
            ))
        for key, value in found.items():
            values[key] = value
            if is_engine_env(key):
                facts[key] = Fact(value, document.span(ptr), f"{where} env_file {name} {key}")
    environment, env_ptr = fields.get("environment", (None, ""))
    items: List[Tuple[str, Any, str]] = []
    if isinstance(environment, dict):
        items = [(str(k), v, f"{env_ptr}{pointer(str(k))}") for k, v in environment.items()]
    elif isinstance(environment, list):
        for i, item in enumerate(environment):
            if isinstance(item, str) and "=" in item:
                key, _, value = item.partition("=")
                items.append((key, value, f"{env_ptr}/{i}"))
    for key, value, vptr in items:
        if value is None:
            continue  # `NAME` alone: the value comes from the shell running compose
        raw = value if isinstance(value, str) else str(value).lower() if isinstance(value, bool) else str(value)
        interpolated = compose.interpolate(raw, vptr, f"{where} environment {key}")
        if interpolated.unresolved:
            values.pop(key, None)
            facts.pop(key, None)
            continue
        values[key] = interpolated.text
        if is_engine_env(key):
            facts[key] = Fact(interpolated.text, document.span(vptr), f"{where} environment {key}",
                              document.key_spans.get(vptr))
    return values, facts


def _gpu_count(document: Document, fields: Dict[str, Tuple[Any, str]], where: str, draft: Draft,
               stated: bool = False) -> Optional[Fact]:
    deploy, deploy_ptr = fields.get("deploy", (None, ""))
    devices_ptr = f"{deploy_ptr}/resources/reservations/devices"
    node: Any = {"deploy": deploy}
    for part in ("deploy", "resources", "reservations", "devices"):
        node = node.get(part) if isinstance(node, dict) else None
    for i, device in enumerate(node if isinstance(node, list) else []):
        if not isinstance(device, dict):
            continue
        capabilities = device.get("capabilities") or []
        if "gpu" not in capabilities and device.get("driver") not in ("nvidia", "amd"):
            continue
        dptr = f"{devices_ptr}/{i}"
        draft.anchors["/hardware"] = document.span(dptr)
        if "device_ids" in device and isinstance(device["device_ids"], list):
            return Fact(len(device["device_ids"]), document.span(f"{dptr}/device_ids"),
                        f"{where} deploy.resources.reservations.devices[{i}].device_ids")
        count = device.get("count")
        if isinstance(count, int) and count >= 1:
            return Fact(count, document.span(f"{dptr}/count"), f"{where} deploy.resources.reservations.devices[{i}].count",
                        document.key_spans.get(f"{dptr}/count"))
        if count == "all" and not stated:
            draft.problems.append(problem(
                "missing-fact",
                f"{where} reserves `count: all` GPUs: the number depends on the host; set a number "
                "(or a `# kvlint: gpu-count=N` comment)",
                document.span(f"{dptr}/count"), "info", "/hardware/count",
            ))
    return None
