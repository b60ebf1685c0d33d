"""docker-compose services → kvlint/v1 manifests, one per engine service.

Compose file reference (https://docs.docker.com/reference/compose-file/services/): `image`,
`entrypoint` and `command` (a list, or a string split like a shell word list — no shell runs),
`environment` (map or `KEY=VALUE` list), GPUs in
`deploy.resources.reservations.devices[] {driver: nvidia, count | device_ids, capabilities: [gpu]}`
(https://docs.docker.com/compose/how-tos/gpu-support/). `${VAR:-default}` / `${VAR-default}` are
resolved to their defaults; a bare `${VAR}` comes from the caller's `.env` and stays unknown.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from kvlint.load import Document

from kvlint.adapters import shell
from kvlint.adapters.cmdline import Arg, arg_from_located, arg_from_word
from kvlint.adapters.images import engine_from_image
from kvlint.adapters.launch import ReleaseFor, image_backend, image_launch, run_argv, shell_problems
from kvlint.adapters.result import Adapted, Problem, pointer
from kvlint.adapters.source import LineLocator, scalar_locator
from kvlint.adapters.workload import Draft, Fact, assemble, comment_statements, is_engine_env, problem


def detect(data: Any, path: str = "") -> bool:
    services = data.get("services") if isinstance(data, dict) else None
    if not isinstance(services, dict) or not services:
        return False
    if "apiVersion" in data or "kind" in data:
        return False
    return any(isinstance(s, dict) and ("image" in s or "build" in s or "command" in s) for s in services.values())


def adapt_document(path: str, text: str, document: Document) -> Tuple[List[Adapted], List[Problem]]:
    lines = LineLocator(text)
    comments = comment_statements(text)
    workloads: List[Adapted] = []
    problems: List[Problem] = []
    for name, service in document.data["services"].items():
        if not isinstance(service, dict):
            continue
        base = f"/services{pointer(str(name))}"
        adapted, note = _adapt_service(path, text, lines, document, base, str(name), service, comments)
        workloads.extend(adapted)
        if note is not None:
            problems.append(note)
    return workloads, problems


def _argv(
    text: str, lines: LineLocator, document: Document, ptr: str, value: Any, origin: str
) -> Tuple[List[Arg], List[Problem]]:
    span = document.span(ptr)
    if isinstance(value, list):
        args = []
        for i, item in enumerate(value):
            item_span = document.span(f"{ptr}/{i}")
            item_text = item if isinstance(item, str) else str(item)
            args.append(arg_from_located(scalar_locator(text, lines, item_span, item_text), item_span, f"{origin}[{i}]"))
        return args, []
    if isinstance(value, str):
        located = scalar_locator(text, lines, span, value)
        script = shell.parse(value)
        words = [w for command in script.commands for w in command.assignments + command.words]
        return [arg_from_word(w, located.locator, origin) for w in words], shell_problems(script, located.locator)
    return [], []


def _adapt_service(
    path: str, text: str, lines: LineLocator, document: Document, base: str, name: str,
    service: Dict[str, Any], comments: Dict[str, Fact],
) -> Tuple[List[Adapted], Optional[Problem]]:
    where = f"service {name!r}"
    image_raw = service.get("image")
    image = engine_from_image(image_raw) if isinstance(image_raw, str) else None
    env_values, env_facts = _environment(document, base, service, where)
    entry, entry_problems = _argv(text, lines, document, f"{base}/entrypoint", service.get("entrypoint"), f"{where} entrypoint")
    command, command_problems = _argv(text, lines, document, f"{base}/command", service.get("command"), f"{where} command")
    release_for = ReleaseFor(image.engine if image else None, image.release if image else None)
    entrypoint = (image.engine, len(entry)) if image is not None and not entry else None
    result = run_argv(entry + command, env_values, release_for, entrypoint=entrypoint)
    if not result.recognised and image is not None and image.serves and not entry and not command:
        result = image_launch(image.engine, document.span(f"{base}/image"))
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
        image_span = document.span(f"{base}/image") if image_raw is not None else root
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
            draft.engine = Fact(engine, image_span, f"{where} image", document.key_spans.get(f"{base}/image"))
            draft.settings.extend(image_backend(image, image_span, document.key_spans.get(f"{base}/image"), where))
            if image.release:
                draft.release = Fact(image.release, image_span, f"{where} image tag")
            else:
                draft.release_why = image.why_unknown
                if image.floating:
                    draft.problems.append(problem("unpinned-image", image.why_unknown, image_span, "warning", "/engine/version"))
        else:
            draft.engine = Fact(engine, launch.command.span, f"{where} command")
        count = _gpu_count(document, base, service, where, draft)
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
    document: Document, base: str, service: Dict[str, Any], where: str
) -> Tuple[Dict[str, str], Dict[str, Fact]]:
    values: Dict[str, str] = {}
    facts: Dict[str, Fact] = {}
    environment = service.get("environment")
    if isinstance(environment, dict):
        for key, value in environment.items():
            if value is None:
                continue
            vptr = f"{base}/environment{pointer(str(key))}"
            values[str(key)] = str(value)
            if is_engine_env(str(key)):
                facts[str(key)] = Fact(str(value), document.span(vptr), f"{where} environment {key}",
                                       document.key_spans.get(vptr))
    elif isinstance(environment, list):
        for i, item in enumerate(environment):
            if not isinstance(item, str) or "=" not in item:
                continue
            key, _, value = item.partition("=")
            values[key] = value
            if is_engine_env(key):
                span = document.span(f"{base}/environment/{i}")
                facts[key] = Fact(value, span, f"{where} environment[{i}] {key}")
    return values, facts


def _gpu_count(document: Document, base: str, service: Dict[str, Any], where: str, draft: Draft) -> Optional[Fact]:
    devices_ptr = f"{base}/deploy/resources/reservations/devices"
    node: Any = service
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
        if count == "all":
            draft.problems.append(problem(
                "missing-fact",
                f"{where} reserves `count: all` GPUs: the number depends on the host; set a number "
                "(or a `# kvlint: gpu-count=N` comment)",
                document.span(f"{dptr}/count"), "info", "/hardware/count",
            ))
    return None
