"""Helm values of the otwld/ollama-helm chart → one Ollama manifest per values file.

The chart renders one Deployment whose container runs `ollama/ollama` with the values' `extraEnv`
as its environment; what kvlint reads, as templates/deployment.yaml renders it
(https://github.com/otwld/ollama-helm/blob/bf05e98b02dc7d9f1becd193f02b813166761b7a/templates/deployment.yaml):

* `image.repository` / `image.tag` — an empty tag means the chart's appVersion, which the values
  file does not hold (the release is then asked for), with `-rocm` appended when
  `ollama.gpu.type` is `amd` (backend HIP); a tag that is set is used as written;
* `ollama.gpu.enabled` / `ollama.gpu.number` — the GPU count, as `nvidia.com/gpu` (type `nvidia`
  or unset: the CUDA backend) or `amd.com/gpu` (type `amd`);
* `extraEnv[]` — `OLLAMA_*` variables (`OLLAMA_KV_CACHE_TYPE`, `OLLAMA_FLASH_ATTENTION`, …);
* `ollama.models.pull` / `ollama.models.run` — with exactly one model listed, the model checked;
* `nodeSelector` — the GPU model (`nvidia.com/gpu.product`, …); `podAnnotations` may carry
  `kvlint.dev/*` statements.

The same values nested under a Flux `HelmRelease`'s `spec.values` are read the same way.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from kvlint.findings import Span
from kvlint.load import Document

from kvlint.adapters import accelerators
from kvlint.adapters.cmdline import ParsedCommand, Setting
from kvlint.adapters.images import engine_from_image
from kvlint.adapters.result import Adapted, Problem, pointer
from kvlint.adapters.workload import Draft, Fact, assemble, comment_statements, is_engine_env, problem


def values_of(data: Any) -> Optional[Tuple[str, Dict[str, Any]]]:
    """(pointer, values) when `data` is the chart's values (or a HelmRelease holding them)."""
    if not isinstance(data, dict):
        return None
    if data.get("kind") == "HelmRelease" and isinstance(data.get("spec"), dict):
        values = data["spec"].get("values")
        if isinstance(values, dict) and _looks_like_values(values):
            return "/spec/values", values
        return None
    if "apiVersion" in data or "kind" in data:
        return None
    return ("", data) if _looks_like_values(data) else None


def _looks_like_values(values: Dict[str, Any]) -> bool:
    ollama = values.get("ollama")
    if not isinstance(ollama, dict) or not any(k in ollama for k in ("gpu", "models", "defaultModel", "port")):
        return False
    image = values.get("image")
    repository = image.get("repository") if isinstance(image, dict) else None
    return repository is None or "ollama" in str(repository)


def adapt_document(path: str, text: str, document: Document) -> Tuple[List[Adapted], List[Problem]]:
    found = values_of(document.data)
    if found is None:
        return [], []
    base, values = found

    def span(rel: str) -> Span:
        return document.span(base + rel)

    def key_span(rel: str) -> Optional[Span]:
        return document.key_spans.get(base + rel)

    root = span("")
    name = "ollama"
    if base:
        meta = document.data.get("metadata")
        name = str(meta.get("name") or name) if isinstance(meta, dict) else name
    draft = Draft(file=path, format="helm-ollama", name=f"ollama-helm/{name}", index=document.index,
                  root=root, meta_name=name)
    ollama = values.get("ollama") if isinstance(values.get("ollama"), dict) else {}
    gpu = ollama.get("gpu") if isinstance(ollama.get("gpu"), dict) else {}
    image = values.get("image") if isinstance(values.get("image"), dict) else {}
    repository = str(image.get("repository") or "ollama/ollama")
    tag = image.get("tag")
    amd = str(gpu.get("type", "")).lower() == "amd" and bool(gpu.get("enabled"))
    where = "values"
    image_span = span("/image/tag") if tag not in (None, "") else (span("/image") if "image" in values else root)
    draft.anchors["/engine"] = image_span
    draft.engine = Fact("ollama", image_span, f"{where} image (the chart runs {repository})")
    if tag in (None, ""):
        draft.release_why = (
            "`image.tag` is empty, so the chart's appVersion picks the Ollama release, and the values "
            "file does not say which; set `image.tag` (e.g. \"0.13.3\")"
        )
    else:
        engine = engine_from_image(f"{repository}:{tag}")
        if engine is not None and engine.engine == "ollama":
            if engine.release:
                draft.release = Fact(engine.release, image_span, f"{where} image.tag", key_span("/image/tag"))
            else:
                draft.release_why = engine.why_unknown
                if engine.floating:
                    draft.problems.append(problem("unpinned-image", engine.why_unknown, image_span, "warning",
                                                  "/engine/version"))
            if engine.backend:
                draft.settings.append(Setting("/engine/build/backend", engine.backend, image_span,
                                              key_span("/image/tag"), f"{where} image.tag variant"))
    if gpu.get("enabled") is True and tag in (None, "") and amd:
        draft.settings.append(Setting("/engine/build/backend", "hip", span("/ollama/gpu/type"),
                                      key_span("/ollama/gpu/type"),
                                      f"{where} ollama.gpu.type: amd (the chart runs the appVersion-rocm image)"))
    elif gpu.get("enabled") is True and str(gpu.get("type") or "nvidia").lower() == "nvidia" and not any(
            s.pointer == "/engine/build/backend" for s in draft.settings):
        rel = "/ollama/gpu/type" if "type" in gpu else "/ollama/gpu/enabled"
        draft.settings.append(Setting("/engine/build/backend", "cuda", span(rel), key_span(rel),
                                      f"{where} ollama.gpu (the chart requests nvidia.com/gpu)"))
    if gpu.get("enabled") is True:
        number = gpu.get("number", 1)
        if isinstance(number, int) and not isinstance(number, bool) and number >= 1:
            rel = "/ollama/gpu/number" if "number" in gpu else "/ollama/gpu/enabled"
            draft.gpu_count = Fact(number, span(rel), f"{where} ollama.gpu.number", key_span(rel))
            draft.anchors["/hardware"] = span("/ollama/gpu")
    env: Dict[str, Fact] = {}
    for i, entry in enumerate(values.get("extraEnv") if isinstance(values.get("extraEnv"), list) else []):
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str) or "value" not in entry:
            continue
        env_name = entry["name"]
        if is_engine_env(env_name):
            value = "" if entry["value"] is None else str(entry["value"]).lower() if isinstance(entry["value"], bool) \
                else str(entry["value"])
            env[env_name] = Fact(value, span(f"/extraEnv/{i}/value"), f"{where} extraEnv {env_name}",
                                 span(f"/extraEnv/{i}/name"))
    draft.env = env
    models = ollama.get("models") if isinstance(ollama.get("models"), dict) else {}
    listed: List[Tuple[str, str]] = []
    for key in ("pull", "run"):
        items = models.get(key)
        for i, item in enumerate(items if isinstance(items, list) else []):
            if isinstance(item, str) and item not in [m for m, _ in listed]:
                listed.append((item, f"/ollama/models/{key}/{i}"))
    if len(listed) == 1:
        model, rel = listed[0]
        draft.settings.append(Setting("/model/name", model, span(rel), None, f"{where} ollama.models ({model})"))
    draft.gpu = _gpu_model(values, span)
    draft.statements = _statements(values, span, key_span)
    draft.statements = {**comment_statements(text), **draft.statements}
    draft.command = ParsedCommand("ollama", "image", image_span)
    draft.hints["/engine/version"] = (
        "the Ollama release: a versioned `image.tag`, or `podAnnotations: {kvlint.dev/engine-version: \"0.13.3\"}`"
    )
    draft.hints["/hardware/gpu"] = (
        "the GPU model: `nodeSelector: {nvidia.com/gpu.product: …}`, or `podAnnotations: {kvlint.dev/gpu: H100-SXM-80GB}`"
    )
    if len(listed) > 1:
        draft.hints["/model/name"] = (
            "the model to check: `ollama.models` lists several; state one with "
            "`podAnnotations: {kvlint.dev/model: org/name}`"
        )
    return [assemble(draft)], []


def _gpu_model(values: Dict[str, Any], span) -> Optional[Fact]:
    selector = values.get("nodeSelector")
    if not isinstance(selector, dict):
        return None
    for key in accelerators.GPU_LABELS:
        if key in selector:
            guess = accelerators.gpu_from_label(key, str(selector[key]))
            if guess is not None and guess.gpu:
                return Fact(guess.gpu, span(f"/nodeSelector{pointer(key)}"), f"nodeSelector {key}")
    return None


def _statements(values: Dict[str, Any], span, key_span) -> Dict[str, Fact]:
    found: Dict[str, Fact] = {}
    annotations = values.get("podAnnotations")
    if isinstance(annotations, dict):
        for key, value in annotations.items():
            if isinstance(key, str) and key.startswith("kvlint.dev/"):
                rel = f"/podAnnotations{pointer(key)}"
                found[key[len("kvlint.dev/"):]] = Fact(str(value), span(rel), f"podAnnotations {key}", key_span(rel))
    return found
