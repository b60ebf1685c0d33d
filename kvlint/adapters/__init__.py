"""Adapters: native deployment files → kvlint/v1 manifests with spans in the NATIVE file.

Entry points
============

``adapt(path, text, documents=None) -> Adaptation``
    Reads one file. ``text`` is the decoded file; ``documents`` are the ``load.Document``s that
    ``kvlint.load.load_text(text, path)`` produced for it (pass them to avoid parsing twice;
    None makes the adapter load YAML itself). Pure: no I/O, no network, never raises for any
    input (a bug inside an adapter becomes an ``internal-error`` problem, not a traceback).

``sniff(path, head) -> format | None``
    Cheap test for directory walks, from the file name and its bytes (the whole file within the
    input size limit: a compose file's ``services:`` may come after pages of comments and
    ``x-`` anchors): which format ``adapt`` would read, or None (kvlint/v1 manifests, unrelated
    files). Every pattern is linear in the bytes given.

``FORMATS`` — the format names both return.

Data shapes (``result.py``)
===========================

``Adaptation(file, format, workloads: list[Adapted], problems: list[Problem])`` — ``problems``
are file-level (an engine container kvlint cannot read, a YAML error in a values file…).

``Adapted`` — one engine workload (one container, compose service, script command, …):

* ``manifest``: a kvlint/v1 ``Deployment`` dict (``apiVersion``, ``kind``, ``metadata.name``
  = workload name + container, ``engine``, ``hardware``, ``model``, ``parallelism``,
  ``kv_cache``, ``memory``, ``serving``, ``targets``; unknown engine options verbatim in
  ``engine.options``, engine variables in ``engine.env``);
* ``value_spans`` / ``key_spans``: JSON pointer → ``findings.Span`` in the native file, the same
  form ``load.Document`` uses (``Adapted.document()`` returns a ``Document``, so schema, resolve
  and rules run unchanged and every finding lands on the native line and column — e.g. the
  value part of ``--kv-cache-dtype=fp8_e5m2`` inside a ``bash -c`` block scalar);
* ``provenance``: pointer → where the value came from (``"container 'vllm' args[2]:
  --kv-cache-dtype"``, ``"container 'vllm' image tag"``, ``"annotation kvlint.dev/gpu"``,
  ``"nodeSelector nvidia.com/gpu.product"``, ``"default (…)"``) or ``"missing"``;
* ``missing``: pointer → how to supply the fact (``/engine/version``, ``/hardware/gpu``,
  ``/model/name``), for facts the file does not give — they are left out of the manifest;
* ``problems``: ``Problem(code, kind, message, span, severity, pointer)``;
* ``references``: engine config files named by ``--config`` (``engine_config.merge_config``
  folds one in, command line winning); ``flags``: every engine flag as written, with the
  spelling it resolved to (for unknown / dead-flag rules); ``name``: a stable address
  ``<Kind>/<name>[/<role>]/<container>``, ``compose/<service>``, ``production-stack/<name>``,
  ``shell:<path>:<line>``.

Formats
=======

``kubernetes`` (Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, CronJob, Pod, List,
LeaderWorkerSet, KServe InferenceService / ServingRuntime / ClusterServingRuntime,
LLMInferenceService), ``helm-production-stack`` (vLLM production-stack values),
``compose``, ``vllm-config`` / ``sglang-config`` / ``trtllm-options`` (engine config YAML),
``shell`` (scripts), ``dockerfile``.

Not handled (yet)
=================

Helm charts other than production-stack (render with ``helm template`` first), llm-d
modelservice values, Kustomize overlays and patches, KServe LLMInferenceService ``baseRefs``
(only its own template is read), RayService ``serveConfigV2`` / Ray Serve ``engine_kwargs``,
SkyPilot / dstack task files, NIM profiles and ``NIM_PASSTHROUGH_ARGS``, Markdown code fences,
values merged from several files, `.env` files for compose interpolation, `envFrom` Secrets
(never read), the TensorRT-LLM image tag → release for Triton containers, and any command that
only a script outside the file runs. Engine config files named by ``--config`` are not opened
here (adapters do no I/O): ``Adapted.references`` lists them, and the check pipeline
(``kvlint.pipeline.native``) reads one that lies next to the file inside the project, or (in a
Kubernetes file) the ConfigMap entry mounted at its path (``kubernetes.config_mount``), and merges
it with ``engine_config.merge_config``; one it cannot read is a KV208, and the checks that need
its settings do not run.

Problem codes (``result.PROBLEM_CODES``, the one table)
========================================================

KV005 shell-syntax / yaml-shape / internal-error · KV206 unpinned-image · KV207 missing-fact
(what ``Adapted.missing`` becomes) · KV208 unresolved-value / not-checked · KV319 unknown-flag /
flag-not-in-release / ambiguous-flag · KV320 invalid-flag-value / unexpected-argument · KV321
abbreviated-flag / repeated-flag / deprecated-spelling / ignored-config · KV322 conflicting-facts.
"""

from __future__ import annotations

import os
import re
from typing import Any, List, Optional, Sequence, Union

from kvlint.findings import Span
from kvlint.load import NATIVE_FORMATS, SHELL_SUFFIXES, Document, LoadedFile, is_dockerfile_name, load_text

from kvlint.adapters import compose, engine_config, helm_values, kubernetes, ollama_chart, scripts, units
from kvlint.adapters.result import Adaptation, Adapted, FlagUse, Problem, Reference, problem_code

__all__ = [
    "FORMATS",
    "Adaptation",
    "Adapted",
    "FlagUse",
    "Problem",
    "Reference",
    "adapt",
    "sniff",
]

FORMATS = NATIVE_FORMATS

_YAML_EXT = (".yaml", ".yml", ".json")
_SHELL_EXT = SHELL_SUFFIXES
_SHEBANG = re.compile(rb"^#![^\n]*\b(ba|da|z|k)?sh\b")
_ENGINE_WORDS = re.compile(rb"vllm|sglang|trtllm-serve|tensorrt|llama-server|llama-cli|ollama|LLAMA_ARG_")
_K8S = re.compile(rb"^apiVersion:\s*(?!kvlint/)\S+", re.MULTILINE)
_KIND = re.compile(rb"^kind:\s*\S+", re.MULTILINE)
_COMPOSE_NAME = re.compile(r"^(docker-)?compose(\.[\w-]+)?\.ya?ml$")
_MODELFILE_WINDOW = 8 * 1024


_HELM_ACTION = re.compile(rb"\{\{-?\s*(\.Values|\.Release|\.Chart|\.Capabilities|include\s|template\s|toYaml\s|tpl\s|if\s|range\s|with\s|define\s)")


def is_helm_template(path: str, head: bytes) -> bool:
    """A Helm chart template (Go template actions such as `{{ .Values.x }}`, or `{{` in a file under
    a `templates/` directory): not YAML until `helm template` renders it, so a walk leaves it to
    the rendered output instead of reporting its template syntax as YAML errors."""
    if b"{{" not in head:
        return False
    parents = path.replace("\\", "/").split("/")[:-1]
    return "templates" in parents or _HELM_ACTION.search(head) is not None


def sniff(path: str, head: bytes) -> Optional[str]:
    """The format `adapt` would read, from the name and the first bytes; None if none."""
    name = os.path.basename(path)
    if units.is_modelfile_name(path):
        # units' FROM pattern (`^\s*from`) backtracks over blank lines: its first bytes suffice
        return "modelfile" if units.sniff_modelfile(path, head[:_MODELFILE_WINDOW]) else None
    if units.is_unit_name(path):
        return "systemd" if units.sniff_unit(path, head) else None
    if is_dockerfile_name(name):
        return "dockerfile" if _ENGINE_WORDS.search(head) or b"FROM" in head else None
    lowered = name.lower()
    if lowered.endswith(_SHELL_EXT) or _SHEBANG.match(head):
        return "shell" if _ENGINE_WORDS.search(head) else None
    if not lowered.endswith(_YAML_EXT):
        return None
    if re.search(rb"^apiVersion:\s*[\"']?kvlint/", head, re.MULTILINE):
        return None
    if is_helm_template(path, head):
        return None  # not YAML until rendered: `helm template … | kvlint check -`
    if b"servingEngineSpec" in head:
        return "helm-production-stack"
    if re.search(rb"^[ \t]*ollama:[ \t]*\r?$", head, re.MULTILINE) and (
            re.search(rb"^[ \t]*(gpu|models|defaultModel):", head, re.MULTILINE)):
        return "helm-ollama"
    if _K8S.search(head) and _KIND.search(head):
        return "kubernetes"
    if _COMPOSE_NAME.match(lowered) or re.search(rb"^services:[ \t]*(#[^\n]*)?\r?$", head, re.MULTILINE):
        return "compose"
    if re.search(rb"^(kv_cache_config|attn_backend|cuda_graph_config)\s*:", head, re.MULTILINE):
        return "trtllm-options"
    if re.search(rb"^(model-path|tp-size|mem-fraction-static)\s*:", head, re.MULTILINE):
        return "sglang-config"
    if re.search(rb"^(kv[-_]cache[-_]dtype|tensor[-_]parallel[-_]size|gpu[-_]memory[-_]utilization|max[-_]model[-_]len)\s*:",
                 head, re.MULTILINE):
        return "vllm-config"
    return None


def adapt(
    path: str, text: str, documents: Union[Sequence[Document], LoadedFile, None] = None
) -> Adaptation:
    """Every engine workload in one native file (see the module docstring)."""
    if isinstance(documents, LoadedFile):
        documents = documents.documents
    try:
        return _adapt(path, text, documents)
    except Exception as exc:  # never a traceback for the user; the bug surfaces as a problem
        return Adaptation(
            file=path,
            format=None,
            problems=[
                Problem(
                    problem_code("internal-error"), "internal-error",
                    f"kvlint could not adapt this file ({type(exc).__name__}: {exc}); please report it",
                    Span(1, 1, 1, 1), "error",
                )
            ],
        )


def _adapt(path: str, text: str, documents: Optional[Sequence[Document]]) -> Adaptation:
    name = os.path.basename(path)
    if units.is_modelfile_name(path):
        workloads, problems = units.adapt_modelfile(path, text)
        return Adaptation(path, "modelfile", workloads, problems)
    if units.is_unit_name(path):
        workloads, problems = units.adapt_unit(path, text)
        return Adaptation(path, "systemd", workloads, problems)
    if is_dockerfile_name(name):
        workloads, problems = scripts.adapt_dockerfile(path, text)
        return Adaptation(path, "dockerfile", workloads, problems)
    lowered = name.lower()
    if lowered.endswith(_SHELL_EXT) or text.startswith("#!"):
        if not lowered.endswith(_YAML_EXT):
            workloads, problems = scripts.adapt_shell(path, text)
            return Adaptation(path, "shell", workloads, problems)
    if documents is None:
        documents = load_text(text, path).documents
    return _adapt_yaml(path, text, list(documents))


def _adapt_yaml(path: str, text: str, documents: List[Document]) -> Adaptation:
    result = Adaptation(path, None)
    k8s_docs = [
        d for d in documents
        if kubernetes.is_kubernetes(d.data) and not _is_kvlint(d.data) and ollama_chart.values_of(d.data) is None
    ]
    if k8s_docs:
        workloads, problems = kubernetes.adapt_documents(path, text, k8s_docs)
        result.format = "kubernetes"
        result.workloads.extend(workloads)
        result.problems.extend(problems)
    for document in documents:
        data: Any = document.data
        if _is_kvlint(data):
            continue
        if ollama_chart.values_of(data) is not None:
            workloads, problems = ollama_chart.adapt_document(path, text, document)
            fmt = "helm-ollama"
        elif kubernetes.is_kubernetes(data):
            continue
        elif helm_values.detect(data):
            workloads, problems = helm_values.adapt_document(path, text, document)
            fmt = "helm-production-stack"
        elif compose.detect(data, path):
            workloads, problems = compose.adapt_document(path, text, document)
            fmt = "compose"
        else:
            kind = engine_config.detect(data)
            if kind is None:
                continue
            workloads, problems = engine_config.adapt_document(path, text, document, kind)
            fmt = kind
        result.format = result.format or fmt
        result.workloads.extend(workloads)
        result.problems.extend(problems)
    return result


def _is_kvlint(data: Any) -> bool:
    return isinstance(data, dict) and str(data.get("apiVersion", "")).startswith("kvlint/")
