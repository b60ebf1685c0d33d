"""Kubernetes workloads → kvlint/v1 manifests, one per engine container.

Where the pod template sits per kind (apps/v1, batch/v1, LeaderWorkerSet, KServe):
https://kubernetes.io/docs/reference/kubernetes-api/workload-resources/ ,
https://github.com/kubernetes-sigs/lws/blob/0e2e095a2ff54715b95b8c78c0afe3a0d2f94380/docs/examples/vllm/GPU/lws.yaml ,
https://github.com/kserve/kserve/blob/v0.20.0/config/runtimes/kserve-huggingfaceserver.yaml .

Per container: engine and release from the image (`images.py`) or from the command; the command
line from `command` + `args` (exec form, or the script of `sh -c`/`bash -lc`, positions inside the
string kept); `$(VAR)` expanded from the container's env as Kubernetes does
(https://kubernetes.io/docs/tasks/inject-data-application/define-command-argument-container/);
`configMapKeyRef` resolved from ConfigMaps in the same file (never Secrets); GPU count from
`resources.limits` (`nvidia.com/gpu`, `amd.com/gpu`, MIG slices), times the group size for a
LeaderWorkerSet leader; GPU model from `nodeSelector` / required node affinity; `kvlint.dev/*`
annotations and labels on the object or the pod template as explicit statements. Native sidecars
(`initContainers` with `restartPolicy: Always`) are read like `containers`; other init containers
and containers that neither run an engine image nor an engine command are ignored, so Services,
ConfigMaps and an nginx Deployment yield nothing.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

from kvlint.findings import Span
from kvlint.load import Document
from kvlint.records import dataclass

from kvlint.adapters import accelerators, kserve_hf
from kvlint.adapters.cmdline import Arg, arg_from_located, expand
from kvlint.adapters.images import ImageEngine, engine_from_image
from kvlint.adapters.launch import LaunchResult, ReleaseFor, image_backend, image_launch, run_argv
from kvlint.adapters.result import Adapted, Problem, pointer, problem_code
from kvlint.adapters.source import FixedLocator, LineLocator, scalar_locator
from kvlint.adapters.workload import Draft, Fact, assemble, is_engine_env, problem

STATEMENT_PREFIX = "kvlint.dev/"

_TEMPLATE_KINDS = {"Deployment", "StatefulSet", "ReplicaSet", "DaemonSet", "Job"}
WORKLOAD_KINDS = frozenset(
    _TEMPLATE_KINDS
    | {"CronJob", "Pod", "LeaderWorkerSet", "InferenceService", "ServingRuntime",
       "ClusterServingRuntime", "LLMInferenceService", "List"}
)


@dataclass(frozen=True)
class PodSpec:
    """Where one pod template of a workload keeps its containers and scheduling fields."""

    role: str  # "" or "leader"/"worker"/"prefill"
    spec: str  # pointer of the object holding containers / nodeSelector / affinity
    meta: Optional[str]  # pointer of the pod template's metadata
    containers: Tuple[str, ...]  # pointers of the containers
    group_size: Optional[Tuple[int, str]] = None  # (pods per replica, pointer) — LWS


class _Doc:
    """Typed access to one loaded YAML document."""

    def __init__(self, document: Document, text: str, lines: LineLocator, path: str):
        self.document = document
        self.text = text
        self.lines = lines
        self.path = path

    def get(self, ptr: str) -> Any:
        node: Any = self.document.data
        for token in ptr.split("/")[1:]:
            token = token.replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict):
                node = node.get(token)
            elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
                node = node[int(token)]
            else:
                return None
        return node

    def span(self, ptr: str) -> Span:
        return self.document.span(ptr)

    def key_span(self, ptr: str) -> Optional[Span]:
        return self.document.key_spans.get(ptr)

    def arg(self, ptr: str, origin: str) -> Arg:
        value = self.get(ptr)
        span = self.span(ptr)
        if not isinstance(value, str):
            value = "" if value is None else str(value).lower() if isinstance(value, bool) else str(value)
        located = scalar_locator(self.text, self.lines, span, value)
        return arg_from_located(located, span, origin)


def adapt_documents(path: str, text: str, documents: Sequence[Document]) -> Tuple[List[Adapted], List[Problem]]:
    lines = LineLocator(text)
    docs = [_Doc(d, text, lines, path) for d in documents]
    config_maps = _config_maps(docs)
    workloads: List[Adapted] = []
    problems: List[Problem] = []
    for doc in docs:
        for base, obj in _objects(doc):
            kind = obj.get("kind")
            if kind not in WORKLOAD_KINDS or kind == "List":
                continue
            found, skipped = _adapt_object(doc, base, obj, config_maps)
            workloads.extend(found)
            problems.extend(skipped)
    return workloads, problems


def is_kubernetes(data: Any) -> bool:
    return isinstance(data, dict) and isinstance(data.get("apiVersion"), str) and isinstance(data.get("kind"), str)


def _objects(doc: _Doc) -> Iterator[Tuple[str, Dict[str, Any]]]:
    data = doc.document.data
    if not is_kubernetes(data):
        return
    yield "", data
    if data.get("kind") == "List" and isinstance(data.get("items"), list):
        # `kubectl get -o yaml` dumps wrap objects in a List
        for i, item in enumerate(data["items"]):
            if is_kubernetes(item):
                yield f"/items/{i}", item


def _config_maps(docs: Sequence[_Doc]) -> Dict[str, Tuple[_Doc, str]]:
    found: Dict[str, Tuple[_Doc, str]] = {}
    for doc in docs:
        for base, obj in _objects(doc):
            if obj.get("kind") == "ConfigMap" and isinstance(obj.get("data"), dict):
                name = (obj.get("metadata") or {}).get("name")
                if isinstance(name, str):
                    found[name] = (doc, f"{base}/data")
    return found


def _pod_specs(doc: _Doc, base: str, obj: Dict[str, Any]) -> List[PodSpec]:
    kind = obj.get("kind")
    specs: List[PodSpec] = []

    def containers_at(spec_ptr: str) -> Tuple[str, ...]:
        # Native sidecars: an init container with `restartPolicy: Always` keeps running for the
        # pod's life beside the app containers (Kubernetes 1.29+ default,
        # https://kubernetes.io/docs/concepts/workloads/pods/sidecar-containers/), so an engine in
        # one serves like one in `containers`; other init containers run to completion first.
        found: List[str] = []
        for key in ("initContainers", "containers"):
            items = doc.get(f"{spec_ptr}/{key}")
            if not isinstance(items, list):
                continue
            for i, item in enumerate(items):
                if not isinstance(item, dict):
                    continue
                if key == "initContainers" and item.get("restartPolicy") != "Always":
                    continue
                found.append(f"{spec_ptr}/{key}/{i}")
        return tuple(found)

    if kind in _TEMPLATE_KINDS:
        spec = f"{base}/spec/template/spec"
        specs.append(PodSpec("", spec, f"{base}/spec/template/metadata", containers_at(spec)))
    elif kind == "CronJob":
        spec = f"{base}/spec/jobTemplate/spec/template/spec"
        specs.append(PodSpec("", spec, f"{base}/spec/jobTemplate/spec/template/metadata", containers_at(spec)))
    elif kind == "Pod":
        specs.append(PodSpec("", f"{base}/spec", None, containers_at(f"{base}/spec")))
    elif kind == "LeaderWorkerSet":
        lwt = f"{base}/spec/leaderWorkerTemplate"
        size = doc.get(f"{lwt}/size")
        group = (size, f"{lwt}/size") if isinstance(size, int) and size >= 1 else None
        leader = f"{lwt}/leaderTemplate"
        worker = f"{lwt}/workerTemplate"
        if isinstance(doc.get(leader), dict):
            specs.append(PodSpec("leader", f"{leader}/spec", f"{leader}/metadata", containers_at(f"{leader}/spec"), group))
            specs.append(PodSpec("worker", f"{worker}/spec", f"{worker}/metadata", containers_at(f"{worker}/spec"), group))
        else:
            # without a leaderTemplate the workerTemplate is used for the leader as well
            specs.append(PodSpec("", f"{worker}/spec", f"{worker}/metadata", containers_at(f"{worker}/spec"), group))
    elif kind in ("ServingRuntime", "ClusterServingRuntime"):
        specs.append(PodSpec("", f"{base}/spec", None, containers_at(f"{base}/spec")))
    elif kind == "InferenceService":
        predictor = f"{base}/spec/predictor"
        model = doc.get(f"{predictor}/model")
        containers = containers_at(predictor)
        if isinstance(model, dict):
            containers = (f"{predictor}/model",) + containers
        specs.append(PodSpec("", predictor, None, containers))
    elif kind == "LLMInferenceService":
        spec = f"{base}/spec/template"
        specs.append(PodSpec("", spec, None, containers_at(spec)))
        prefill = f"{base}/spec/prefill/template"
        if isinstance(doc.get(prefill), dict):
            specs.append(PodSpec("prefill", prefill, None, containers_at(prefill)))
    return specs


def _statements(doc: _Doc, meta_ptrs: Sequence[Optional[str]]) -> Dict[str, Fact]:
    """`kvlint.dev/*` labels and annotations; later metadata (the pod template) wins."""
    found: Dict[str, Fact] = {}
    for meta in meta_ptrs:
        if meta is None:
            continue
        for section in ("labels", "annotations"):
            values = doc.get(f"{meta}/{section}")
            if not isinstance(values, dict):
                continue
            for key, value in values.items():
                if not isinstance(key, str) or not key.startswith(STATEMENT_PREFIX):
                    continue
                ptr = f"{meta}/{section}/{key.replace('~', '~0').replace('/', '~1')}"
                found[key[len(STATEMENT_PREFIX):]] = Fact(
                    "" if value is None else str(value),
                    doc.span(ptr),
                    f"{section[:-1]} {key}",
                    doc.key_span(ptr),
                )
    return found


def _adapt_object(
    doc: _Doc, base: str, obj: Dict[str, Any], config_maps: Dict[str, Tuple[_Doc, str]]
) -> Tuple[List[Adapted], List[Problem]]:
    kind = str(obj.get("kind"))
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    object_name = str(meta.get("name") or kind.lower())
    results: List[Adapted] = []
    skipped: List[Problem] = []
    for pod in _pod_specs(doc, base, obj):
        statements = _statements(doc, [f"{base}/metadata", pod.meta])
        chosen = statements.get("container")
        gpu, gpu_problems = _gpu_model(doc, pod.spec)
        for container_ptr in pod.containers:
            container = doc.get(container_ptr) or {}
            cname = str(container.get("name") or ("kserve-container" if container_ptr.endswith("/model") else "container"))
            if chosen is not None and cname != chosen.value:
                continue
            adapted, note = _adapt_container(
                doc, kind, object_name, pod, container_ptr, container, cname, statements, gpu,
                gpu_problems, config_maps,
            )
            results.extend(adapted)
            if note is not None:
                skipped.append(note)
    return results, skipped


def _adapt_container(
    doc: _Doc,
    kind: str,
    object_name: str,
    pod: PodSpec,
    ptr: str,
    container: Dict[str, Any],
    cname: str,
    statements: Dict[str, Fact],
    gpu: Optional[Fact],
    gpu_problems: List[Problem],
    config_maps: Dict[str, Tuple[_Doc, str]],
) -> Tuple[List[Adapted], Optional[Problem]]:
    where = f"container {cname!r}"
    image_raw = container.get("image")
    image = engine_from_image(image_raw) if isinstance(image_raw, str) else None
    env_values, env_facts, env_problems = _env(doc, ptr, container, config_maps, where)

    command = [doc.arg(f"{ptr}/command/{i}", f"{where} command[{i}]") for i, _ in enumerate(_list(container.get("command")))]
    args = [doc.arg(f"{ptr}/args/{i}", f"{where} args[{i}]") for i, _ in enumerate(_list(container.get("args")))]
    shape_problems = [
        problem(
            "yaml-shape",
            f"{where} {section}[{i}] is not a string; Kubernetes rejects the manifest (quote it)",
            doc.span(f"{ptr}/{section}/{i}"), "error",
        )
        for section in ("command", "args")
        for i, item in enumerate(_list(container.get(section)))
        if not isinstance(item, str)
    ]
    release_for = ReleaseFor(image.engine if image else None, image.release if image else None)
    container_span = doc.span(ptr)
    hf_engine: Optional[Fact] = None
    if _kserve_hf(doc, kind, ptr, image_raw, command):
        launch, hf_engine, note = _kserve_hf_launch(doc, ptr, command, args, env_values, release_for, where,
                                                    container_span)
        if launch is None:
            return [], note
        result = launch
    else:
        entrypoint = (image.engine, len(command)) if image is not None and not command else None
        result = run_argv(command + args, env_values, release_for, kubernetes=True, entrypoint=entrypoint)
        if not result.recognised and image is not None and image.serves and not command and not args:
            result = image_launch(image.engine, doc.span(f"{ptr}/image"))
    if not result.recognised:
        if image is None or pod.role == "worker":
            return [], None
        if not command and not args:
            reason = "it has no command or args, so the image's default command runs with no model"
        else:
            reason = "its command does not start the engine (a custom script?)"
        return [], problem(
            "not-checked",
            f"{where} of {kind}/{object_name} runs the engine image {image_raw!r} but {reason}; "
            f"kvlint cannot read its settings (give the command in command/args to have it checked)",
            container_span, "info",
        )

    adapted: List[Adapted] = []
    for number, launch in enumerate(result.launches):
        parsed = launch.command
        role = f"/{pod.role}" if pod.role else ""
        suffix = f"#{number + 1}" if len(result.launches) > 1 else ""
        name = f"{kind}/{object_name}{role}/{cname}{suffix}"
        draft = Draft(
            file=doc.path, format="kubernetes", name=name, index=doc.document.index,
            root=container_span,
            meta_name="-".join(p for p in (object_name, pod.role, cname, str(number + 1) if suffix else "") if p),
        )
        draft.command = parsed
        draft.problems.extend(shape_problems + result.problems + env_problems + gpu_problems)
        image_span = doc.span(f"{ptr}/image") if image_raw is not None else container_span
        draft.anchors["/engine"] = image_span
        _engine_facts(draft, parsed.engine, image, image_raw, image_span, doc.key_span(f"{ptr}/image"), where)
        if hf_engine is not None:
            draft.engine = hf_engine if image is None else draft.engine
            if image is None:
                draft.anchors["/engine"] = hf_engine.span
                draft.release_why = (
                    "KServe's Hugging Face runtime runs the vLLM release of the installed KServe release "
                    "(its ClusterServingRuntime's image), which this file does not name"
                )
        if (
            image is not None and image.engine == "vllm" and not command and args
            and args[0].text in ("vllm", "serve") and parsed.form == "vllm serve"
        ):
            draft.problems.append(problem(
                "unexpected-argument",
                f"{where}: `args` are appended to the image's ENTRYPOINT; current vllm/vllm-openai "
                "images already run `vllm serve`, so repeating it passes `vllm serve` as arguments "
                "(move it to `command`, or drop it)",
                args[0].whole, "warning",
            ))
        if gpu is not None:
            draft.gpu = gpu
        count = _gpu_count(doc, ptr, container, pod, where, draft)
        if count is not None:
            draft.gpu_count = count
        draft.env = dict(env_facts)
        draft.env.update(launch.env)
        draft.statements = dict(statements)
        adapted.append(assemble(draft))
    return adapted, None


def _engine_facts(
    draft: Draft, engine: str, image: Optional[ImageEngine], image_raw: Any, image_span: Span,
    image_key: Optional[Span], where: str,
) -> None:
    command_span = draft.command.span if draft.command else draft.root
    if image is not None and image.engine == engine:
        draft.engine = Fact(engine, image_span, f"{where} image", image_key)
        draft.settings.extend(image_backend(image, image_span, image_key, where))
        if image.release:
            draft.release = Fact(image.release, image_span, f"{where} image tag", image_key)
        else:
            draft.release_why = image.why_unknown
            if image.floating:
                draft.problems.append(
                    problem(
                        "unpinned-image",
                        f"{image.why_unknown}: the engine release can change on any pull, and "
                        "kvlint cannot tell which release's rules apply",
                        image_span, "warning", "/engine/version",
                    )
                )
        return
    draft.engine = Fact(engine, command_span, f"{where} command")
    if image is not None:
        draft.problems.append(
            problem(
                "conflicting-facts",
                f"{where} runs the {engine} command in a {image.engine} image ({image_raw!r}); "
                "the image tag does not give this engine's release",
                image_span, "warning", "/engine/name",
            )
        )
    elif isinstance(image_raw, str):
        draft.release_why = f"image {image_raw!r} is not an image kvlint knows the {engine} release of"


def _gpu_count(
    doc: _Doc, ptr: str, container: Dict[str, Any], pod: PodSpec, where: str, draft: Draft
) -> Optional[Fact]:
    resources = container.get("resources") if isinstance(container.get("resources"), dict) else {}
    for section in ("limits", "requests"):
        values = resources.get(section)
        if not isinstance(values, dict):
            continue
        for name, raw in values.items():
            kind = accelerators.gpu_resource(str(name))
            if kind is None:
                continue
            rptr = f"{ptr}/resources/{section}/{pointer(str(name))[1:]}"
            try:
                count = int(str(raw).strip())
            except ValueError:
                draft.problems.append(
                    problem("invalid-flag-value", f"{where} {section}[{name}] = {raw!r} is not a GPU count",
                            doc.span(rptr), "warning", "/hardware/count")
                )
                return None
            draft.anchors["/hardware"] = doc.span(f"{ptr}/resources")
            provenance = f"{where} resources.{section}[{name}]"
            if kind == "mig":
                draft.problems.append(
                    problem(
                        "missing-fact",
                        f"{where} requests MIG slices ({name}): each slice has only part of the GPU's "
                        "memory; state it (annotation kvlint.dev/gpu-memory) so the capacity is right",
                        doc.span(rptr), "warning", "/hardware/memory",
                    )
                )
            if pod.group_size is not None and pod.role in ("leader", ""):
                size, size_ptr = pod.group_size
                if size > 1:
                    return Fact(
                        count * size, doc.span(rptr),
                        f"{provenance} × leaderWorkerTemplate.size ({count} × {size})",
                        doc.key_span(rptr),
                    )
            return Fact(count, doc.span(rptr), provenance, doc.key_span(rptr))
    return None


def _gpu_model(doc: _Doc, spec_ptr: str) -> Tuple[Optional[Fact], List[Problem]]:
    """GPU model from nodeSelector, else from required node affinity `In` terms."""
    problems: List[Problem] = []
    selector = doc.get(f"{spec_ptr}/nodeSelector")
    if isinstance(selector, dict):
        for key in accelerators.GPU_LABELS:
            if key in selector:
                kptr = f"{spec_ptr}/nodeSelector/{pointer(key)[1:]}"
                guess = accelerators.gpu_from_label(key, str(selector[key]))
                if guess is None:
                    continue
                if guess.note:
                    problems.append(problem("conflicting-facts" if guess.gpu is None else "missing-fact",
                                            guess.note, doc.span(kptr), "warning", "/hardware/gpu"))
                if guess.gpu:
                    return Fact(guess.gpu, doc.span(kptr), f"nodeSelector {key}", doc.key_span(kptr)), problems
    terms_ptr = f"{spec_ptr}/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms"
    terms = doc.get(terms_ptr)
    candidates: Dict[str, Fact] = {}
    if isinstance(terms, list):
        for t, term in enumerate(terms):
            expressions = term.get("matchExpressions") if isinstance(term, dict) else None
            if not isinstance(expressions, list):
                continue
            for e, expression in enumerate(expressions):
                if not isinstance(expression, dict):
                    continue
                key = expression.get("key")
                if key not in accelerators.GPU_LABELS or expression.get("operator") != "In":
                    continue
                values = expression.get("values")
                for v, value in enumerate(values if isinstance(values, list) else []):
                    vptr = f"{terms_ptr}/{t}/matchExpressions/{e}/values/{v}"
                    guess = accelerators.gpu_from_label(str(key), str(value))
                    if guess is not None and guess.gpu:
                        candidates.setdefault(
                            guess.gpu, Fact(guess.gpu, doc.span(vptr), f"node affinity {key} In", None)
                        )
    if len(candidates) == 1:
        return next(iter(candidates.values())), problems
    if len(candidates) > 1:
        first = next(iter(candidates.values()))
        problems.append(
            problem(
                "conflicting-facts",
                "node affinity allows several GPU models (" + ", ".join(sorted(candidates)) + "); "
                "kvlint checks one GPU: state it with annotation kvlint.dev/gpu",
                first.span, "warning", "/hardware/gpu",
            )
        )
    return None, problems


def _env(
    doc: _Doc, ptr: str, container: Dict[str, Any], config_maps: Dict[str, Tuple[_Doc, str]], where: str
) -> Tuple[Dict[str, str], Dict[str, Fact], List[Problem]]:
    """Container env: all resolved values (for `$(VAR)`), and the engine's variables as facts."""
    values: Dict[str, str] = {}
    facts: Dict[str, Fact] = {}
    problems: List[Problem] = []
    for i, source in enumerate(_list(container.get("envFrom"))):
        ref = source.get("configMapRef") if isinstance(source, dict) else None
        name = ref.get("name") if isinstance(ref, dict) else None
        if isinstance(name, str) and name in config_maps:
            cm_doc, data_ptr = config_maps[name]
            data = cm_doc.get(data_ptr) or {}
            prefix = str(source.get("prefix") or "")
            for key, value in data.items():
                vptr = f"{data_ptr}/{pointer(str(key))[1:]}"
                full = prefix + str(key)
                values[full] = str(value)
                if is_engine_env(full):
                    facts[full] = Fact(str(value), cm_doc.span(vptr), f"ConfigMap {name} data.{key} (envFrom)",
                                       cm_doc.key_span(vptr))
    for i, entry in enumerate(_list(container.get("env"))):
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            continue
        name = entry["name"]
        eptr = f"{ptr}/env/{i}"
        if "value" in entry:
            value = "" if entry["value"] is None else str(entry["value"])
            # `$(VAR)` inside env values refers to earlier entries
            if "$(" in value:
                value, _ = expand(value, values, kubernetes=True, shell=False)
            values[name] = value
            if is_engine_env(name):
                facts[name] = Fact(value, doc.span(f"{eptr}/value"), f"{where} env {name}", doc.span(f"{eptr}/name"))
            continue
        value_from = entry.get("valueFrom")
        ref = value_from.get("configMapKeyRef") if isinstance(value_from, dict) else None
        if isinstance(ref, dict) and ref.get("name") in config_maps:
            cm_doc, data_ptr = config_maps[ref["name"]]
            data = cm_doc.get(data_ptr) or {}
            key = ref.get("key")
            if key in data:
                vptr = f"{data_ptr}/{pointer(str(key))[1:]}"
                values[name] = str(data[key])
                if is_engine_env(name):
                    facts[name] = Fact(
                        str(data[key]), cm_doc.span(vptr),
                        f"{where} env {name} from ConfigMap {ref['name']} key {key}", cm_doc.key_span(vptr),
                    )
                continue
        if is_engine_env(name):
            problems.append(
                problem(
                    "unresolved-value",
                    f"{where} env {name} comes from {_describe_value_from(value_from)}, which kvlint "
                    "does not read; engine.env leaves it out",
                    doc.span(eptr), "info", f"/engine/env/{name}",
                )
            )
    return values, facts, problems


def _describe_value_from(value_from: Any) -> str:
    if isinstance(value_from, dict):
        for key in ("configMapKeyRef", "secretKeyRef", "fieldRef", "resourceFieldRef"):
            if key in value_from:
                ref = value_from[key]
                name = ref.get("name") if isinstance(ref, dict) else None
                return f"{key} {name}" if name else key
    return "an unknown source"


def _list(value: Any) -> List[Any]:
    return value if isinstance(value, list) else []


# --- engine config files mounted from ConfigMaps --------------------------------------------------


@dataclass(frozen=True)
class ConfigMount:
    """Where an engine config file named on a container's command line comes from, when its path
    lies under a `volumeMounts[].mountPath` whose volume is a ConfigMap.

    `config_map` and `key` name the ConfigMap entry that the kubelet writes at the path;
    `found` is (document, pointer of the entry's value) when that ConfigMap is in the same file;
    `problem` says why the path names no entry of the ConfigMap (an `items` list without it)."""

    config_map: str
    key: Optional[str]
    volume: str
    mount_path: str
    found: Optional[Tuple[Document, str]] = None
    problem: str = ""


def config_mount(path: str, text: str, documents: Sequence[Document], reference: Span, written: str) -> Optional[ConfigMount]:
    """The ConfigMap volume behind the config file `written` (an absolute path in the container)
    that a command line names at `reference`, or None when no ConfigMap volume is mounted there.

    The kubelet projects each `data` key of a ConfigMap volume as a file named by the key under
    the mountPath, or only the listed `items[].key` at `items[].path`; a `subPath` mounts one
    entry of the volume at the mountPath itself
    (https://kubernetes.io/docs/concepts/storage/volumes/#configmap,
    https://kubernetes.io/docs/tasks/configure-pod-container/configure-pod-configmap/#add-configmap-data-to-a-specific-path-in-the-volume,
    https://kubernetes.io/docs/concepts/storage/volumes/#using-subpath)."""
    import posixpath

    if not written.startswith("/"):
        return None  # relative to the container's workingDir: no mount to follow
    target = posixpath.normpath(written)
    lines = LineLocator(text)
    docs = [_Doc(d, text, lines, path) for d in documents]
    config_maps = _config_maps(docs)
    for doc in docs:
        for base, obj in _objects(doc):
            if obj.get("kind") not in WORKLOAD_KINDS:
                continue
            for pod in _pod_specs(doc, base, obj):
                for ptr in pod.containers:
                    if not _contains(doc.span(ptr), reference):
                        continue
                    return _mount_of(doc, pod.spec, ptr, target, config_maps)
    return None


def _contains(outer: Span, inner: Span) -> bool:
    return (outer.line, outer.column) <= (inner.line, inner.column) and (
        (inner.end_line, inner.end_column) <= (outer.end_line, outer.end_column))


def _mount_of(
    doc: _Doc, spec_ptr: str, container_ptr: str, target: str, config_maps: Dict[str, Tuple[_Doc, str]]
) -> Optional[ConfigMount]:
    import posixpath

    best: Optional[Tuple[str, Dict[str, Any]]] = None
    for mount in _list(doc.get(f"{container_ptr}/volumeMounts")):
        if not isinstance(mount, dict) or not isinstance(mount.get("mountPath"), str) or not mount.get("name"):
            continue
        mount_path = posixpath.normpath(mount["mountPath"])
        if target == mount_path or target.startswith(mount_path.rstrip("/") + "/"):
            if best is None or len(mount_path) > len(best[0]):
                best = (mount_path, mount)
    if best is None:
        return None
    mount_path, mount = best
    volume = next(
        (v for v in _list(doc.get(f"{spec_ptr}/volumes")) if isinstance(v, dict) and v.get("name") == mount["name"]),
        None,
    )
    sources: List[Dict[str, Any]] = []
    if isinstance(volume, dict) and isinstance(volume.get("configMap"), dict):
        sources = [volume["configMap"]]
    elif isinstance(volume, dict) and isinstance(volume.get("projected"), dict):
        sources = [s["configMap"] for s in _list(volume["projected"].get("sources"))
                   if isinstance(s, dict) and isinstance(s.get("configMap"), dict)]
    if not sources:
        return None  # an emptyDir, a PVC, a Secret…: not a file kvlint can read
    rest = target[len(mount_path):].lstrip("/")
    sub_path = mount.get("subPath")
    entry = "/".join(p for p in (str(sub_path).strip("/") if sub_path else "", rest) if p)
    for source in sources:
        name = source.get("name")
        if not isinstance(name, str):
            continue
        items = source.get("items")
        key: Optional[str] = None
        problem_text = ""
        if isinstance(items, list):
            for item in items:
                if isinstance(item, dict) and posixpath.normpath(str(item.get("path", ""))) == entry:
                    key = str(item.get("key"))
            if key is None:
                problem_text = (f"ConfigMap {name!r} is mounted with an items list that does not project "
                                f"{entry!r}, so the file does not exist in the container")
        elif entry and "/" not in entry:
            key = entry
        if key is None and not problem_text and len(sources) > 1:
            continue
        found = None
        if key is not None and name in config_maps:
            cm_doc, data_ptr = config_maps[name]
            data = cm_doc.get(data_ptr) or {}
            if key in data:
                found = (cm_doc.document, f"{data_ptr}/{pointer(key)[1:]}")
            elif not problem_text:
                problem_text = f"ConfigMap {name!r} in this file has no key {key!r}"
        return ConfigMount(name, key, str(mount["name"]), mount_path, found, problem_text)
    return None


# --- KServe's Hugging Face runtime -----------------------------------------------------------------


def _kserve_hf(doc: _Doc, kind: str, ptr: str, image_raw: Any, command: Sequence[Arg]) -> bool:
    """The container runs KServe's Hugging Face server: an InferenceService `model` of format
    huggingface (served by the kserve-huggingfaceserver runtime,
    https://github.com/kserve/kserve/blob/v0.15.0/config/runtimes/kserve-huggingfaceserver.yaml),
    the kserve/huggingfaceserver image, or `python -m huggingfaceserver`."""
    if kind == "InferenceService" and ptr.endswith("/model"):
        name = doc.get(f"{ptr}/modelFormat/name")
        if isinstance(name, str) and name.strip().lower() == "huggingface":
            return True
    if isinstance(image_raw, str):
        from kvlint.adapters.images import parse_image

        if parse_image(image_raw).repository.lower() == "kserve/huggingfaceserver":
            return True
    return any(a.text == "huggingfaceserver" for a in command) and any(a.text == "-m" for a in command)


def _kserve_hf_launch(
    doc: _Doc, ptr: str, command: List[Arg], args: List[Arg], env_values: Dict[str, str], release_for: ReleaseFor,
    where: str, container_span: Span,
) -> Tuple[Optional[LaunchResult], Optional[Fact], Optional[Problem]]:
    """(the vLLM launch, the engine fact, None), or (None, None, why it is not checked)."""
    words = list(command)
    if any(a.text == "huggingfaceserver" for a in words):
        words = words[[a.text for a in words].index("huggingfaceserver") + 1:]
    else:
        words = []
    split = kserve_hf.split_args(words + args)
    backend_arg = split.value("backend")
    backend = backend_arg.text.strip() if backend_arg is not None else "auto"
    format_ptr = f"{ptr}/modelFormat/name"
    engine_span = (backend_arg.span() if backend_arg is not None
                   else doc.span(format_ptr) if doc.get(format_ptr) is not None else container_span)
    if backend not in ("auto", "vllm"):
        what = ("serves the model with Hugging Face transformers" if backend == "huggingface"
                else "serves an encoder model with Triton" if backend == "triton"
                else f"refuses the backend {backend!r} (KServe knows {', '.join(kserve_hf.BACKENDS)})")
        return None, None, problem(
            "not-checked",
            f"{where} runs KServe's Hugging Face server with --backend={backend}, which {what}, not vLLM; "
            "kvlint checks the serving engines it knows, so nothing in it is checked",
            engine_span, "info",
        )
    model: Optional[Arg] = None
    model_id = split.value("model_id")
    if model_id is not None:
        model = kserve_hf.value_arg(model_id, 0, f"{model_id.origin} --model_id")
    else:
        uri_ptr = f"{ptr}/storageUri"
        uri = doc.get(uri_ptr)
        if isinstance(uri, str) and uri.startswith("hf://") and len(uri) > 5:
            model = kserve_hf.value_arg(doc.arg(uri_ptr, f"{where} storageUri"), 5)
        elif split.value("model_dir") is not None:
            model = split.value("model_dir")
    if model is None:
        # KServe serves what its storage initializer put in --model_dir's default
        model = Arg("/mnt/models", tuple(range(11)), FixedLocator(container_span), container_span,
                    f"{where} --model_dir default")
    vllm_release = ReleaseFor("vllm", release_for("vllm"))
    result = run_argv([model] + split.engine, env_values, vllm_release, kubernetes=True, entrypoint=("vllm", 0))
    for launch in result.launches:
        parsed = launch.command
        # parse_known_args: an argument neither parser knows is dropped, not refused
        parsed.problems[:] = [
            replace(p, kind="ignored-config", code=problem_code("ignored-config"), severity="warning",
                    message=p.message.split("; vLLM refuses to start")[0] + "; KServe's huggingfaceserver reads "
                    "its arguments with parse_known_args, so it is ignored and the setting has no effect")
            if p.kind == "unknown-flag" else p
            for p in parsed.problems
        ]
        for name in ("max_length",):
            given = split.own.get(name)
            if given is not None:
                parsed.problems.append(problem(
                    "unresolved-value",
                    f"{where}: --{name} is KServe's older spelling of --max_model_len; whether it reaches vLLM "
                    "depends on the KServe release's parser, so kvlint does not use it (write --max_model_len)",
                    given[0].span(), "info", "/serving/max_model_len",
                ))
    provenance = (f"{where} KServe Hugging Face server, --backend {backend}"
                  + (" (vLLM for the architectures vLLM supports)" if backend == "auto" else ""))
    return result, Fact("vllm", engine_span, provenance), None
