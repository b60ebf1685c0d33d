"""vLLM production-stack Helm values (`servingEngineSpec.modelSpec[]`) → one manifest per model.

The chart's mapping from values to the vLLM command line is small and fixed, so the values file
is read directly (positions stay in the values file) instead of rendering the chart. The argv
below is rebuilt the way `helm/templates/deployment-vllm-multi.yaml` renders it and then parsed by
the vLLM parser, so `extraArgs` get the same flag checks as any command line:
https://github.com/vllm-project/production-stack/blob/010004eea56fa9ee522a4cf66d363a213fdc67ab/helm/templates/deployment-vllm-multi.yaml

* `vllm serve <modelURL>`; `vllmConfig.enableChunkedPrefill` → `--[no-]enable-chunked-prefill`
  (only when the key exists); whenever `vllmConfig` exists, `--enable-prefix-caching` if
  `enablePrefixCaching` is true, else `--no-enable-prefix-caching` (absent key ⇒ off);
  `maxModelLen`, `dtype`, `tensorParallelSize`, `maxNumSeqs`, `gpuMemoryUtilization`
  (as `--gpu_memory_utilization`), `maxLoras` (as `--max_loras`); then `extraArgs` verbatim
  (`range .extraArgs`: a list item by item, a map's values in key order; a string is not split,
  Go's `range` refuses it and Helm renders nothing, a KV005 error);
  `vllmConfig.v0: "1"` sets env `VLLM_USE_V1=0`.
* image `repository:tag`; GPUs `requestGPU` of `requestGPUType` (default `nvidia.com/gpu`);
  GPU model from `nodeSelectorTerms[].matchExpressions[]`; `annotations` / `podAnnotations`
  carry `kvlint.dev/*` statements; `env[]` as container env.

The chart version (which changed this mapping, e.g. `--no-enable-prefix-caching` appeared in
vllm-stack-0.1.3) is not in the values file; the mapping of the commit above is used. Values
merged from several `-f` files or `--set` are not seen.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from kvlint.findings import Span
from kvlint.load import Document
from kvlint.pointer import escape as pointer_escape

from kvlint.adapters import accelerators
from kvlint.adapters.cmdline import Arg, Invocation, arg_from_located, parse_command
from kvlint.adapters.images import engine_from_image
from kvlint.adapters.result import Adapted, Problem
from kvlint.adapters.source import FixedLocator, LineLocator, Located, scalar_locator
from kvlint.adapters.workload import Draft, Fact, assemble, comment_statements, is_engine_env, problem

# vllmConfig key → rendered flag (value-taking), in the template's order
_VALUE_FLAGS = (
    ("maxModelLen", "--max-model-len"),
    ("dtype", "--dtype"),
    ("tensorParallelSize", "--tensor-parallel-size"),
    ("maxNumSeqs", "--max-num-seqs"),
    ("gpuMemoryUtilization", "--gpu_memory_utilization"),
    ("maxLoras", "--max_loras"),
)


def detect(data: Any) -> bool:
    spec = data.get("servingEngineSpec") if isinstance(data, dict) else None
    return isinstance(spec, dict) and isinstance(spec.get("modelSpec"), list)


def adapt_document(path: str, text: str, document: Document) -> Tuple[List[Adapted], List[Problem]]:
    lines = LineLocator(text)
    specs = document.data["servingEngineSpec"]["modelSpec"]
    comments = comment_statements(text)
    workloads: List[Adapted] = []
    problems: List[Problem] = []
    for i, spec in enumerate(specs):
        if not isinstance(spec, dict):
            continue
        base = f"/servingEngineSpec/modelSpec/{i}"
        reader = _Reader(document, text, lines, base)
        name = str(spec.get("name") or f"model-{i}")
        if "raySpec" in spec:
            problems.append(problem(
                "not-checked",
                f"modelSpec[{i}] ({name}) uses raySpec: the chart renders a RayCluster whose head runs "
                "a generated bash script; kvlint does not read it",
                document.span(base), "info",
            ))
            continue
        workloads.append(_adapt_spec(path, document, reader, spec, i, name, comments))
    return workloads, problems


class _Reader:
    def __init__(self, document: Document, text: str, lines: LineLocator, base: str):
        self.document = document
        self.text = text
        self.lines = lines
        self.base = base

    def span(self, rel: str) -> Span:
        return self.document.span(self.base + rel)

    def key_span(self, rel: str) -> Span:
        return self.document.key_spans.get(self.base + rel) or self.span(rel)

    def value_arg(self, rel: str, value: Any, origin: str) -> Arg:
        span = self.span(rel)
        if isinstance(value, str):
            return arg_from_located(scalar_locator(self.text, self.lines, span, value), span, origin)
        rendered = str(value).lower() if isinstance(value, bool) else str(value)
        return arg_from_located(Located(rendered, FixedLocator(span), False), span, origin)

    def flag(self, text: str, rel: str, origin: str) -> Arg:
        span = self.key_span(rel)
        return Arg(text, (), FixedLocator(span), span, origin)


def _extra_args_not_a_list(extra: Any, span: Span, origin: str) -> Problem:
    """The chart renders `{{- if .extraArgs }}{{- range .extraArgs }} - {{ . | quote }}`: a value
    that is set but is not a list (or map) is not split into arguments. Go's text/template
    `range` refuses a string, a boolean or a float ("range can't iterate over …", text/template
    exec.go walkRange), so `helm install` fails; an integer N renders the arguments 0 … N-1
    (Go 1.22+) or fails (older Go). Either way the engine never gets the flags written."""
    kind = "a string" if isinstance(extra, str) else f"a {type(extra).__name__}"
    shown = extra if not isinstance(extra, str) or len(extra) <= 80 else extra[:77] + "..."
    return problem(
        "yaml-shape",
        f"{origin}.extraArgs is {kind} ({shown!r}), not a list: the chart ranges over it "
        + ("(`range .extraArgs`), which renders the arguments 0 … N-1 (Helm built with Go 1.22+) or "
           "fails to render (older Helm)" if isinstance(extra, int) and not isinstance(extra, bool) else
           "(`range .extraArgs`), which Go templates refuse (\"range can't iterate over …\"), so Helm "
           "does not render the deployment")
        + "; the flags in it are not checked. Write one list item per argument, e.g. "
        "extraArgs: [\"--kv-cache-dtype\", \"fp8\"]",
        span, "error",
    )


def _adapt_spec(
    path: str, document: Document, r: _Reader, spec: Dict[str, Any], i: int, name: str,
    comments: Dict[str, Fact],
) -> Adapted:
    where = f"modelSpec[{i}]"
    root = document.span(r.base)
    draft = Draft(
        file=path, format="helm-production-stack", name=f"production-stack/{name}", index=document.index,
        root=root, meta_name=name,
    )
    # image
    repository, tag = spec.get("repository"), spec.get("tag")
    image_raw: Optional[str] = None
    if isinstance(repository, str):
        image_raw = f"{repository}:{tag}" if tag is not None else repository
    image = engine_from_image(image_raw) if image_raw else None
    image_span = r.span("/tag") if tag is not None else (r.span("/repository") if repository is not None else root)
    draft.anchors["/engine"] = image_span
    if image_raw is None:
        draft.problems.append(problem(
            "missing-fact", f"{where} has no `repository`; the chart refuses to render", root, "error",
        ))
    release: Optional[str] = None
    if image is not None and image.engine == "vllm":
        if image.release:
            release = image.release
            draft.release = Fact(image.release, image_span, f"{where} tag", r.key_span("/tag") if tag is not None else None)
        else:
            draft.release_why = image.why_unknown
            if image.floating:
                draft.problems.append(problem(
                    "unpinned-image", f"{image.why_unknown}: the engine release can change on any pull",
                    image_span, "warning", "/engine/version",
                ))
    draft.engine = Fact("vllm", r.span("/repository") if repository is not None else root, f"{where} (production-stack runs vllm serve)")

    # argv, as the template renders it
    argv: List[Arg] = [
        Arg("vllm", (), FixedLocator(root), root, where),
        Arg("serve", (), FixedLocator(root), root, where),
    ]
    if "modelURL" in spec:
        argv.append(r.value_arg("/modelURL", spec["modelURL"], f"{where}.modelURL"))
    config = spec.get("vllmConfig")
    env: Dict[str, Fact] = {}
    if isinstance(config, dict):
        origin = f"{where}.vllmConfig"
        if "enableChunkedPrefill" in config:
            on = bool(config["enableChunkedPrefill"])
            argv.append(r.flag("--enable-chunked-prefill" if on else "--no-enable-chunked-prefill",
                               "/vllmConfig/enableChunkedPrefill", f"{origin}.enableChunkedPrefill"))
        if config.get("enablePrefixCaching"):
            argv.append(r.flag("--enable-prefix-caching", "/vllmConfig/enablePrefixCaching", f"{origin}.enablePrefixCaching"))
        elif "enablePrefixCaching" in config:
            argv.append(r.flag("--no-enable-prefix-caching", "/vllmConfig/enablePrefixCaching", f"{origin}.enablePrefixCaching"))
        else:
            argv.append(r.flag("--no-enable-prefix-caching", "/vllmConfig",
                               f"{origin} (no enablePrefixCaching: the chart turns prefix caching off)"))
        for key, flag in _VALUE_FLAGS:
            if key in config:
                argv.append(r.flag(flag, f"/vllmConfig/{key}", f"{origin}.{key}"))
                argv.append(r.value_arg(f"/vllmConfig/{key}", config[key], f"{origin}.{key}"))
        extra = config.get("extraArgs")
        if isinstance(extra, list):
            for j, item in enumerate(extra):
                argv.append(r.value_arg(f"/vllmConfig/extraArgs/{j}", item, f"{origin}.extraArgs[{j}]"))
        elif isinstance(extra, dict):
            # `range` over a map yields its values in sorted key order (Go text/template)
            for key in sorted(extra, key=str):
                argv.append(r.value_arg(f"/vllmConfig/extraArgs/{pointer_escape(str(key))}", extra[key], f"{origin}.extraArgs.{key}"))
        elif extra not in (None, False, "", 0):
            draft.problems.append(_extra_args_not_a_list(extra, r.span("/vllmConfig/extraArgs"), origin))
        if str(config.get("v0")) == "1":
            env["VLLM_USE_V1"] = Fact("0", r.span("/vllmConfig/v0"), f"{origin}.v0 (the chart sets VLLM_USE_V1=0)",
                                      r.key_span("/vllmConfig/v0"))
    lmcache = spec.get("lmcacheConfig")
    if isinstance(lmcache, dict) and lmcache.get("enabled"):
        argv.append(r.flag("--kv-transfer-config", "/lmcacheConfig/enabled", f"{where}.lmcacheConfig.enabled"))
        argv.append(Arg('{"kv_connector":"LMCacheConnectorV1","kv_role":"kv_both"}', (),
                        FixedLocator(r.span("/lmcacheConfig/enabled")), r.span("/lmcacheConfig/enabled"),
                        f"{where}.lmcacheConfig.enabled"))
    # env entries from the values
    env_values: Dict[str, str] = {}
    for j, entry in enumerate(spec.get("env") if isinstance(spec.get("env"), list) else []):
        if isinstance(entry, dict) and isinstance(entry.get("name"), str) and "value" in entry:
            value = str(entry["value"])
            env_values[entry["name"]] = value
            if is_engine_env(entry["name"]):
                env[entry["name"]] = Fact(value, r.span(f"/env/{j}/value"), f"{where}.env {entry['name']}",
                                          r.span(f"/env/{j}/name"))
    draft.command = parse_command(argv, Invocation("vllm", "vllm serve", 2, 0), release, env_values, kubernetes=True)
    draft.env = env

    # GPUs
    if "requestGPU" in spec:
        gpu_type = str(spec.get("requestGPUType") or "nvidia.com/gpu")
        kind = accelerators.gpu_resource(gpu_type)
        try:
            count = int(str(spec["requestGPU"]))
        except ValueError:
            count = 0
        if kind is not None and count >= 1:
            draft.gpu_count = Fact(count, r.span("/requestGPU"), f"{where}.requestGPU ({gpu_type})", r.key_span("/requestGPU"))
            draft.anchors["/hardware"] = r.span("/requestGPU")
            if kind == "mig":
                draft.problems.append(problem(
                    "missing-fact",
                    f"{where} requests MIG slices ({gpu_type}); state the slice memory (kvlint.dev/gpu-memory)",
                    r.span("/requestGPUType"), "warning", "/hardware/memory",
                ))
    draft.gpu = _gpu_from_terms(r, spec, draft)
    # statements: annotations, pod annotations, then file comments
    statements: Dict[str, Fact] = dict(comments)
    for section in ("annotations", "podAnnotations"):
        values = spec.get(section)
        if isinstance(values, dict):
            for key, value in values.items():
                if isinstance(key, str) and key.startswith("kvlint.dev/"):
                    rel = f"/{section}/{key.replace('~', '~0').replace('/', '~1')}"
                    statements[key[len("kvlint.dev/"):]] = Fact(str(value), r.span(rel), f"{where}.{section} {key}",
                                                                r.key_span(rel))
    draft.statements = statements
    draft.hints["/hardware/gpu"] = (
        "the GPU model: `nodeSelectorTerms` with `nvidia.com/gpu.product`, or `podAnnotations: "
        "{kvlint.dev/gpu: H100-SXM-80GB}`"
    )
    draft.hints["/engine/version"] = "the engine release: a versioned `tag`, or `podAnnotations: {kvlint.dev/engine-version: \"0.19.1\"}`"
    return assemble(draft)


def _gpu_from_terms(r: _Reader, spec: Dict[str, Any], draft: Draft) -> Optional[Fact]:
    terms = spec.get("nodeSelectorTerms")
    candidates: Dict[str, Fact] = {}
    for t, term in enumerate(terms if isinstance(terms, list) else []):
        expressions = term.get("matchExpressions") if isinstance(term, dict) else None
        for e, expression in enumerate(expressions if isinstance(expressions, list) else []):
            if not isinstance(expression, dict) or expression.get("key") not in accelerators.GPU_LABELS:
                continue
            if expression.get("operator") != "In":
                continue
            values = expression.get("values")
            for v, value in enumerate(values if isinstance(values, list) else []):
                guess = accelerators.gpu_from_label(str(expression["key"]), str(value))
                if guess is not None and guess.gpu:
                    rel = f"/nodeSelectorTerms/{t}/matchExpressions/{e}/values/{v}"
                    candidates.setdefault(guess.gpu, Fact(guess.gpu, r.span(rel), f"nodeSelectorTerms {expression['key']} In"))
    if len(candidates) == 1:
        return next(iter(candidates.values()))
    if len(candidates) > 1:
        first = next(iter(candidates.values()))
        draft.problems.append(problem(
            "conflicting-facts",
            "nodeSelectorTerms allow several GPU models (" + ", ".join(sorted(candidates)) + "); state one "
            "with podAnnotations kvlint.dev/gpu",
            first.span, "warning", "/hardware/gpu",
        ))
    return None
