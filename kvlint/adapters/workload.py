"""Assemble one engine workload's facts into a kvlint/v1 manifest with spans and provenance.

Every format adapter gathers the same kinds of facts (engine, release, GPU, GPU count, the
parsed command line, env, `kvlint.dev/*` statements) into a `Draft`; `assemble` applies them in
one precedence order so all formats behave alike:

1. inferred facts — engine and release from the image, GPU model from node labels / instance
   type, GPU count from resource limits;
2. native configuration — the engine's flags (and config-file or values keys mapped to flags),
   which replace inferred values;
3. explicit statements for kvlint — `kvlint.dev/*` annotations or labels and `# kvlint: key=value`
   comments. They fill what is missing and replace *inferred* facts; they do not replace a native
   flag (a disagreement is reported as `conflicting-facts`), except the model name when the flag
   gives a local path (`/mnt/models`), which only the statement can name.

Facts still missing afterwards (model, engine release, GPU model) are left out of the manifest and
listed in `Adapted.missing` with how to supply them; the engine default `kv_cache.dtype: auto`
is filled in (provenance "default") because the schema requires the field and every engine's
default is `auto`.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import field
from typing import Any, Dict, List, Optional, Set, Tuple

from kvlint.deployment import GGML_ENGINES
from kvlint.findings import Span
from kvlint.load import yaml_comment_columns
from kvlint.records import dataclass

from kvlint.adapters import ggml, shell
from kvlint.adapters.cmdline import ParsedCommand, Setting
from kvlint.adapters.result import Adapted, ManifestBuilder, Problem, problem_code

# `kvlint.dev/<key>` annotation / label / comment keys → (manifest pointer, converter)
STATEMENT_KEYS: Dict[str, Tuple[str, str]] = {
    "gpu": ("/hardware/gpu", "str"),
    "gpu-count": ("/hardware/count", "int"),
    "gpu-memory": ("/hardware/memory", "size"),
    # for a GPU the catalog does not know: with gpu-memory, the GPU checks run on it
    "gpu-compute-capability": ("/hardware/compute_capability", "cc"),
    "engine": ("/engine/name", "engine"),
    "engine-version": ("/engine/version", "version"),
    # llama.cpp / Ollama: the ggml backend that holds the KV cache (metal on Apple silicon, cpu)
    "backend": ("/engine/build/backend", "backend"),
    "model": ("/model/name", "str"),
    "model-config": ("/model/config", "str"),
    "model-kv-scales": ("/model/kv_scales", "str"),
    "min-concurrency": ("/targets/min_concurrency", "number"),
    "min-kv-tokens": ("/targets/min_kv_tokens", "int"),
    "planned-kv-tokens": ("/targets/planned_kv_tokens", "int"),
    "max-scale-overhead": ("/targets/max_scale_overhead", "number"),
}
# keys that steer the adapter rather than fill a field
CONTROL_KEYS = frozenset({"container", "ignore"})

ENGINE_ENV_PREFIXES = ("VLLM_", "SGLANG_", "SGL_", "TRTLLM_", "TLLM_", "TRT_LLM_") + ggml.ENV_PREFIXES
# warm-up scale divisors read by vLLM until 0.27 (vllm/envs.py)
ENGINE_ENV_NAMES = frozenset({"Q_SCALE_CONSTANT", "K_SCALE_CONSTANT", "V_SCALE_CONSTANT"})

_NAME_BAD = re.compile(r"[^a-z0-9.-]+")
_PATHLIKE = re.compile(r"^(/|\./|\.\./|~|pvc://|s3://|gs://|file://)")


def is_engine_env(name: str) -> bool:
    return name.startswith(ENGINE_ENV_PREFIXES) or name in ENGINE_ENV_NAMES


@dataclass(frozen=True)
class Fact:
    """One value read from a native file, with where it was written and how it was found."""

    value: Any
    span: Span
    provenance: str
    key_span: Optional[Span] = None


@dataclass
class Draft:
    """What one native workload or command says, gathered before it becomes a kvlint/v1 manifest."""

    file: str
    format: str
    name: str  # Adapted.name
    index: int
    root: Span  # the workload / command as a whole
    meta_name: str  # basis for metadata.name
    engine: Optional[Fact] = None
    release: Optional[Fact] = None
    release_why: str = ""
    gpu: Optional[Fact] = None
    gpu_count: Optional[Fact] = None
    gpu_memory: Optional[Fact] = None
    command: Optional[ParsedCommand] = None
    settings: List[Setting] = field(default_factory=list)  # native settings besides the command
    env: Dict[str, Fact] = field(default_factory=dict)
    statements: Dict[str, Fact] = field(default_factory=dict)  # kvlint.dev/<key> → value
    problems: List[Problem] = field(default_factory=list)
    hints: Dict[str, str] = field(default_factory=dict)  # pointer → how to supply it here
    anchors: Dict[str, Span] = field(default_factory=dict)


def manifest_name(*parts: str) -> str:
    """A kvlint metadata.name (`^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$`) from workload names."""
    joined = "-".join(p for p in parts if p)
    name = _NAME_BAD.sub("-", joined.lower()).strip("-.")
    name = re.sub(r"-{2,}", "-", name)[:253].strip("-.")
    return name or "workload"


def problem(kind: str, message: str, span: Span, severity: str = "warning", ptr: str = "",
            values: Tuple[Any, ...] = ()) -> Problem:
    return Problem(problem_code(kind), kind, message, span, severity, ptr, values)


_DEFAULT_HINTS = {
    "/engine/version": "the engine release: pin a versioned image tag, or state it "
    "(annotation `kvlint.dev/engine-version: \"0.19.1\"`, or a `# kvlint: engine-version=0.19.1` comment)",
    "/hardware/gpu": "the GPU model: a node selector such as `nvidia.com/gpu.product`, or a statement "
    "(annotation `kvlint.dev/gpu: H100-SXM-80GB`, or a `# kvlint: gpu=H100-SXM-80GB` comment)",
    "/model/name": "the model: the engine's model argument, or a statement "
    "(annotation `kvlint.dev/model: org/name`, or a `# kvlint: model=org/name` comment)",
}


# a release of each engine to show in a hint (vLLM's is the hint's own)
_EXAMPLE_RELEASE = {"sglang": "0.5.2", "tensorrt-llm": "1.2.1", "llama.cpp": "b6840", "ollama": "0.13.3"}

# Ollama's server takes no model argument: clients name the model per request
_OLLAMA_MODEL_HINT = (
    "the model this Ollama server is checked for (its clients name it per request): a statement "
    "(annotation `kvlint.dev/model: org/name`, or a `# kvlint: model=org/name` comment)"
)


def assemble(draft: Draft) -> Adapted:
    b = ManifestBuilder(draft.file, draft.root)
    problems: List[Problem] = list(draft.problems)
    b.put("/metadata/name", manifest_name(draft.meta_name), draft.root, "workload name")
    b.put(
        "/metadata/description",
        f"adapted by kvlint from {draft.name} ({draft.format})",
        draft.root,
        "workload name",
    )
    for ptr, span in draft.anchors.items():
        b.anchor(ptr, span)

    # 1. inferred facts
    if draft.engine is not None:
        b.put("/engine/name", draft.engine.value, draft.engine.span, draft.engine.provenance, draft.engine.key_span)
    if draft.release is not None:
        b.put("/engine/version", draft.release.value, draft.release.span, draft.release.provenance, draft.release.key_span)
    for ptr, fact in (
        ("/hardware/gpu", draft.gpu),
        ("/hardware/count", draft.gpu_count),
        ("/hardware/memory", draft.gpu_memory),
    ):
        if fact is not None:
            b.put(ptr, fact.value, fact.span, fact.provenance, fact.key_span)

    # 2. native configuration
    native: Dict[str, Setting] = {}
    settings = list(draft.settings) + (list(draft.command.settings) if draft.command else [])
    engine = draft.engine.value if draft.engine is not None else None
    if engine in GGML_ENGINES:
        # LLAMA_ARG_* / OLLAMA_* variables (the command line wins) and the f16 cache default
        added, env_problems = ggml.finish(str(engine), settings, draft.env)
        settings.extend(added)
        problems.extend(env_problems)
    for setting in settings:
        if setting.pointer.startswith("/engine/options/") and isinstance(setting.value, dict):
            b.put_nested(setting.pointer, setting.value, setting.span, setting.provenance, setting.key_span)
        else:
            b.put(setting.pointer, setting.value, setting.span, setting.provenance, setting.key_span)
        native[setting.pointer] = setting
    for name, fact in sorted(draft.env.items()):
        b.put(f"/engine/env/{name}", fact.value, fact.span, fact.provenance, fact.key_span)

    # 3. explicit statements for kvlint
    for key, fact in sorted(draft.statements.items()):
        _apply_statement(b, key, fact, native, problems)

    if not b.has("/kv_cache/dtype") and b.has("/engine/name"):
        span = draft.command.span if draft.command else draft.root
        if engine in GGML_ENGINES:
            b.put("/kv_cache/dtype", ggml.DEFAULT_CACHE_TYPE, span,
                  f"default ({engine}'s K and V cache type is f16)")
        else:
            b.put("/kv_cache/dtype", "auto", span, "default (the engine's default KV cache dtype is auto)")

    if engine == "llama.cpp" and not b.has("/engine/build/backend"):
        layers = b.get("/engine/options/gpu_layers")
        if str(layers).strip() == "0":
            # -ngl 0: every layer, and so its KV cache, stays on the CPU (llama_model_params.n_gpu_layers)
            span = b.value_spans.get("/engine/options/gpu_layers", draft.root)
            b.put("/engine/build/backend", "cpu", span, "-ngl 0 (no layer on a GPU: the KV cache is on the CPU)")
    if not b.has("/hardware/gpu") and b.has("/hardware/compute_capability") and b.has("/hardware/memory"):
        # a GPU the catalog need not know, described by what the checks use
        cc_span = b.value_spans.get("/hardware/compute_capability", draft.root)
        b.put("/hardware/gpu", f"sm_{str(b.get('/hardware/compute_capability')).replace('.', '')}-"
              f"{b.get('/hardware/memory')}", cc_span, "gpu-compute-capability and gpu-memory statements")
    for ptr in ("/engine/version", "/hardware/gpu", "/model/name"):
        if ptr == "/hardware/gpu" and _no_gpu_needed(b, engine):
            continue
        if not b.has(ptr):
            how = draft.hints.get(ptr) or (_OLLAMA_MODEL_HINT if engine == "ollama" and ptr == "/model/name"
                                           else _DEFAULT_HINTS[ptr])
            if ptr == "/engine/version" and engine in _EXAMPLE_RELEASE:
                how = how.replace("0.19.1", _EXAMPLE_RELEASE[engine])  # an example of this engine's releases
            if ptr == "/engine/version" and draft.release_why:
                how = f"{draft.release_why}; {how}"
            b.set_missing(ptr, how)
    if draft.command is not None:
        problems.extend(draft.command.problems)
    return b.finish(
        file=draft.file,
        format=draft.format,
        name=draft.name,
        index=draft.index,
        problems=problems,
        references=list(draft.command.references) if draft.command else [],
        flags=list(draft.command.flags) if draft.command else [],
    )


def _no_gpu_needed(b: ManifestBuilder, engine: Optional[str]) -> bool:
    """No GPU model to ask for: a llama.cpp/Ollama cache on the CPU or Apple's Metal (not GPU
    catalog entries)."""
    return engine in GGML_ENGINES and b.get("/engine/build/backend") in ("cpu", "metal")


def _apply_statement(
    b: ManifestBuilder, key: str, fact: Fact, native: Dict[str, Setting], problems: List[Problem]
) -> None:
    if key in CONTROL_KEYS:
        return
    if key not in STATEMENT_KEYS:
        problems.append(
            problem(
                "unresolved-value",
                f"unknown kvlint statement {key!r} ({fact.provenance}); known keys: "
                + ", ".join(sorted(STATEMENT_KEYS)),
                fact.key_span or fact.span, "info",
            )
        )
        return
    ptr, kind = STATEMENT_KEYS[key]
    value = _convert_statement(kind, fact.value)
    if value is None:
        problems.append(
            problem(
                "invalid-flag-value",
                f"{fact.provenance}: {fact.value!r} is not a valid {kind} for {ptr}",
                fact.span, "warning", ptr,
            )
        )
        return
    current = b.get(ptr)
    if ptr in native:
        given = native[ptr]
        if ptr == "/model/name" and isinstance(given.value, str) and (
                _PATHLIKE.match(given.value) or given.value.lower().endswith(".gguf")):
            b.put(ptr, value, fact.span, fact.provenance, fact.key_span)
            return
        if current is not None and str(current) != str(value):
            problems.append(
                problem(
                    "conflicting-facts",
                    f"{fact.provenance} says {value!r} but the engine configuration says "
                    f"{current!r} ({given.provenance}); the engine configuration is what runs",
                    fact.span, "warning", ptr, (value, current),
                )
            )
        return
    if current is not None and str(current) != str(value):
        problems.append(
            problem(
                "conflicting-facts",
                f"{fact.provenance} says {value!r}, replacing {current!r} inferred from "
                f"{b.provenance.get(ptr, 'elsewhere')}",
                fact.span, "info", ptr, (value, current),
            )
        )
    b.put(ptr, value, fact.span, fact.provenance, fact.key_span)


_VERSION = re.compile(r"^(b\d{1,6}|v?(\d+(?:\.\d+){0,3}(?:[.-]?(?:rc|post|dev|a|b)\d*)?))$")


_CC = re.compile(r"^(?:(\d{1,2})\.(\d)|sm_?(\d{2,3}))$")


def _convert_statement(kind: str, raw: Any) -> Any:
    text = str(raw).strip()
    if kind == "str" or kind == "size":
        return text or None
    if kind == "engine":
        lowered = text.lower()
        lowered = {"trtllm": "tensorrt-llm", "tensorrt_llm": "tensorrt-llm", "trt-llm": "tensorrt-llm"}.get(lowered, lowered)
        lowered = {"llamacpp": "llama.cpp", "llama-cpp": "llama.cpp", "llama-server": "llama.cpp"}.get(lowered, lowered)
        return lowered if lowered in ("vllm", "sglang", "tensorrt-llm", "llama.cpp", "ollama") else None
    if kind == "backend":
        lowered = {"rocm": "hip", "apple": "metal", "mps": "metal"}.get(text.lower(), text.lower())
        return lowered if lowered in ("cuda", "hip", "musa", "metal", "vulkan", "sycl", "cpu") else None
    if kind == "version":
        match = _VERSION.match(text)  # a llama.cpp build tag (b4747) or a version
        return (match.group(2) or match.group(1)) if match else None
    if kind == "cc":  # "8.6", or the sm_86 / sm86 spelling of the same thing
        match = _CC.match(text.lower())
        if not match:
            return None
        return f"{match.group(1)}.{match.group(2)}" if match.group(1) else f"{match.group(3)[:-1]}.{match.group(3)[-1]}"
    if kind == "int":
        try:
            return int(text)
        except ValueError:
            return None
    if kind == "number":
        try:
            number = float(text)
        except ValueError:
            return None
        return int(number) if number.is_integer() and "." not in text else number
    return text


# --- `# kvlint: key=value` comments ---------------------------------------------------------------

_COMMENT_FACTS = re.compile(r"#\s*kvlint:\s*(?!ignore\[)(?P<body>[a-z][a-z0-9-]*=.*)$")
_PAIR = re.compile(r"(?P<key>[a-z][a-z0-9-]*)=(?P<value>\"[^\"]*\"|'[^']*'|\S+)")


def comment_statements(text: str, syntax: str = "yaml") -> Dict[str, Fact]:
    """`# kvlint: gpu=H100-SXM-80GB engine-version=0.19.1` comments anywhere in a file.

    Same grammar family as the suppression comment `# kvlint: ignore[...]` (`kvlint/load.py`),
    for files that cannot carry annotations (scripts, compose, values, Dockerfiles). Only a real
    comment of the file's syntax counts (`yaml`, `shell`, or `line` for Dockerfiles, systemd units
    and Modelfiles, where a comment is a whole line): the same text inside a
    string (a compose environment value, a shell `echo`, a Dockerfile LABEL) is the file's
    content, and content must not restate the facts kvlint checks.
    """
    found: Dict[str, Fact] = {}
    if "kvlint:" not in text:
        return found
    lines = text.split("\n")
    candidates = {n for n, line in enumerate(lines) if "kvlint:" in line and "#" in line}
    if not candidates:
        return found
    comments = _comment_columns(text, lines, candidates, syntax)
    for index in sorted(candidates):
        line = lines[index]
        number = index + 1
        for column in comments.get(index, ()):
            match = _COMMENT_FACTS.match(line, column)
            if not match:
                continue
            body_start = match.start("body")
            for pair in _PAIR.finditer(match.group("body")):
                value = pair.group("value").strip("\"'")
                col = body_start + pair.start() + 1
                value_col = body_start + pair.start("value") + 1
                found[pair.group("key")] = Fact(
                    value,
                    Span(number, value_col, number, value_col + len(pair.group("value"))),
                    f"comment `# kvlint: {pair.group('key')}=…` (line {number})",
                    Span(number, col, number, col + len(pair.group("key"))),
                )
            break
    return found


def _comment_columns(text: str, lines: List[str], candidates: Set[int], syntax: str) -> Dict[int, List[int]]:
    """0-based line -> columns where a comment starts, for the candidate lines."""
    if syntax == "yaml":
        return yaml_comment_columns(text, candidates)
    if syntax == "line":
        # a line whose first non-blank character is `#` (https://docs.docker.com/reference/dockerfile/#format,
        # systemd.syntax(7), Ollama's Modelfile)
        return {n: [len(lines[n]) - len(lines[n].lstrip())] for n in candidates if lines[n].lstrip().startswith("#")}
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    found: Dict[int, List[int]] = {}
    for offset in shell.comment_offsets(text):
        index = bisect.bisect_right(starts, offset) - 1
        if index in candidates:
            found.setdefault(index, []).append(offset - starts[index])
    return found
