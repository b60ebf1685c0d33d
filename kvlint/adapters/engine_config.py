"""Engine configuration files: vLLM `--config` YAML, SGLang `--config` YAML, TensorRT-LLM
`--config` / `--extra_llm_api_options` YAML.

vLLM and SGLang files are flag lists in YAML form: each key becomes `--<key>` and the engine's own
argument parser reads the result, so they are turned into synthetic `Arg`s (flag = the key's
span, value = the value's span) and parsed by the same engine parsers as command lines — unknown
keys, abbreviations and bad values are reported exactly as for flags.

* vLLM `FlexibleArgumentParser.load_config_file`: `true` → `--key`; `false` → dropped before
  0.28.0, from 0.28.0 `--no-key` when that option exists (an underscore key never matches, so it
  is still dropped); list → `--key v1 v2` (empty list dropped); mapping → JSON string (0.16+);
  scalar → `--key str(value)`.
  https://github.com/vllm-project/vllm/blob/v0.19.1/vllm/utils/argparse_utils.py#L454 ,
  https://github.com/vllm-project/vllm/blob/v0.28.0/vllm/utils/argparse_utils.py#L525
* SGLang `ConfigArgumentMerger`: keys as written (dash spelling), store_true keys emit the bare
  flag when true and nothing when false, lists `--key v1 v2`, mappings JSON.
  https://github.com/sgl-project/sglang/blob/v0.5.9/python/sglang/srt/server_args_config_parser.py
* TensorRT-LLM: keys are `LlmArgs` fields (snake_case, nested `kv_cache_config`), read by
  `update_llm_args_with_extra_dict`; fields map directly (`kv_cache_config.dtype`,
  `kv_cache_config.free_gpu_memory_fraction`, `kv_cache_config.tokens_per_block`,
  `tensor_parallel_size`, `max_batch_size`, `max_seq_len`, …), everything else is kept in
  `engine.options`.
  https://github.com/NVIDIA/TensorRT-LLM/blob/0004396720054fd8e205cbf616f21f0b57c6b412/tensorrt_llm/llmapi/llm_args.py
"""

from __future__ import annotations

import json
import math
from typing import Any, Dict, List, Optional, Tuple

from kvlint.findings import Span
from kvlint.load import Document
from kvlint.pointer import escape as escape_pointer_token

from kvlint.adapters import flags as flag_table
from kvlint.adapters.cmdline import Arg, Invocation, Setting, arg_from_located, parse_command
from kvlint.adapters.result import Adapted, Problem
from kvlint.adapters.source import FixedLocator, LineLocator, Located, scalar_locator
from kvlint.adapters.workload import Draft, Fact, assemble, comment_statements, problem

# Top-level keys that identify each kind of file (any two of them, or the marker alone).
_VLLM_MARKERS = frozenset({
    "model", "kv-cache-dtype", "kv_cache_dtype", "tensor-parallel-size", "tensor_parallel_size",
    "max-model-len", "max_model_len", "gpu-memory-utilization", "gpu_memory_utilization",
    "served-model-name", "attention-backend", "block-size", "enable-prefix-caching",
    "max-num-seqs", "max_num_seqs", "kv-cache-dtype-skip-layers", "attention-config",
})
_SGLANG_MARKERS = frozenset({
    "model-path", "tp-size", "mem-fraction-static", "context-length", "max-running-requests",
    "page-size", "attention-backend", "kv-cache-dtype",
})
_TRTLLM_MARKERS = frozenset({
    "kv_cache_config", "cuda_graph_config", "attn_backend", "enable_attention_dp",
    "moe_expert_parallel_size", "build_config", "speculative_config", "max_batch_size",
    "max_num_tokens", "max_seq_len", "scheduler_config", "enable_chunked_prefill",
})

# TensorRT-LLM LlmArgs paths → manifest pointer and type
_TRTLLM_FIELDS: Dict[Tuple[str, ...], Tuple[str, str]] = {
    ("model",): ("/model/name", "str"),
    ("dtype",): ("/model/dtype", "dtype"),
    ("tensor_parallel_size",): ("/parallelism/tensor", "int"),
    ("pipeline_parallel_size",): ("/parallelism/pipeline", "int"),
    ("max_batch_size",): ("/serving/max_num_seqs", "int"),
    ("max_num_tokens",): ("/serving/max_num_batched_tokens", "int"),
    ("max_seq_len",): ("/serving/max_model_len", "int"),
    ("attn_backend",): ("/engine/attention_backend", "str"),
    ("kv_cache_config", "dtype"): ("/kv_cache/dtype", "str"),
    ("kv_cache_config", "free_gpu_memory_fraction"): ("/memory/free_gpu_memory_fraction", "float"),
    ("kv_cache_config", "tokens_per_block"): ("/kv_cache/block_size", "int"),
}
_DTYPES = {"auto": "auto", "float16": "float16", "fp16": "float16", "half": "float16",
           "bfloat16": "bfloat16", "bf16": "bfloat16", "float32": "float32", "float": "float32"}


def detect(data: Any) -> Optional[str]:
    """'vllm-config', 'sglang-config', 'trtllm-options' or None for one YAML document."""
    if not isinstance(data, dict) or "apiVersion" in data or "kind" in data:
        return None
    keys = {str(k) for k in data}
    trt = len(keys & _TRTLLM_MARKERS) + (2 if "kv_cache_config" in keys else 0)
    sgl = len(keys & _SGLANG_MARKERS) + (2 if "model-path" in keys else 0)
    vll = len(keys & _VLLM_MARKERS) + (1 if "model" in keys and "model-path" not in keys else 0)
    best = max(trt, sgl, vll)
    if best < 2:
        return None
    if best == trt:
        return "trtllm-options"
    if best == sgl and sgl > vll:
        return "sglang-config"
    return "vllm-config"


def adapt_document(path: str, text: str, document: Document, kind: str) -> Tuple[List[Adapted], List[Problem]]:
    lines = LineLocator(text)
    root = document.span("")
    draft = Draft(
        file=path, format=kind, name=f"{kind}:{path}", index=document.index, root=root,
        meta_name=_stem(path),
    )
    engine = {"vllm-config": "vllm", "sglang-config": "sglang", "trtllm-options": "tensorrt-llm"}[kind]
    draft.engine = Fact(engine, root, f"file kind ({kind})")
    statements = comment_statements(text)
    draft.statements = statements
    release = None
    if "engine-version" in statements:
        release = str(statements["engine-version"].value).lstrip("v")
    draft.hints = {
        "/engine/version": "the engine release: a `# kvlint: engine-version=…` comment in this file "
        "(an engine config file does not name its release)",
        "/hardware/gpu": "the GPU model: a `# kvlint: gpu=…` comment in this file",
    }
    if kind == "trtllm-options":
        draft.settings.extend(_trtllm_settings(document, text, lines, draft.problems))
        draft.hints["/model/name"] = (
            "the model: trtllm-serve takes it on the command line; add a `# kvlint: model=…` comment"
        )
    else:
        argv, problems = _flag_argv(document, text, lines, engine, release)
        draft.problems.extend(problems)
        if argv:
            invocation = Invocation(engine, "config", 0, 0)
            draft.command = parse_command(argv, invocation, release, {})
    return [assemble(draft)], []


def _stem(path: str) -> str:
    base = path.replace("\\", "/").rsplit("/", 1)[-1]
    return base.rsplit(".", 1)[0] or "config"


def _flag_argv(
    document: Document, text: str, lines: LineLocator, engine: str, release: Optional[str]
) -> Tuple[List[Arg], List[Problem]]:
    data = document.data
    argv: List[Arg] = []
    problems: List[Problem] = []
    for key, value in data.items():
        kptr = "/" + escape_pointer_token(str(key))
        key_span = document.key_spans.get(kptr) or document.span(kptr)
        value_span = document.span(kptr)
        flag = Arg("--" + str(key), (), FixedLocator(key_span), key_span, f"key {key!r}")
        origin = f"key {key!r}"
        if isinstance(value, bool):
            spec = flag_table.lookup(engine, "--" + str(key).replace("_", "-") if engine == "vllm" else "--" + str(key))
            if value:
                argv.append(flag)
            elif engine == "vllm" and spec is not None and spec.takes == "bool":
                newer = release is not None and flag_table.version_key(release) >= flag_table.version_key("0.28.0")
                underscore = "_" in str(key)
                if newer and not underscore:
                    argv.append(Arg("--no-" + str(key), (), FixedLocator(key_span), key_span, origin))
                elif release is None and not underscore:
                    argv.append(Arg("--no-" + str(key), (), FixedLocator(key_span), key_span, origin))
                    problems.append(problem(
                        "ignored-config",
                        f"`{key}: false` turns the option off only from vLLM 0.28.0 on; earlier "
                        "releases drop the key and keep the default",
                        value_span, "info", "",
                    ))
                else:
                    problems.append(problem(
                        "ignored-config",
                        f"`{key}: false` is dropped by vLLM"
                        + (" (the `--no-` form is looked up with the key as written, and this key "
                           "uses underscores)" if underscore else f" {release} (before 0.28.0)")
                        + f"; the default applies. Remove the key or use the CLI flag --no-{str(key).replace('_', '-')}",
                        value_span, "warning", "",
                    ))
            elif engine == "sglang" and spec is not None and spec.takes not in ("flag",):
                argv.append(flag)
                argv.append(Arg("false", (), FixedLocator(value_span), value_span, origin))
            continue
        if isinstance(value, list):
            if not value:
                continue
            argv.append(flag)
            for i, item in enumerate(value):
                argv.append(_value_arg(document, text, lines, f"{kptr}/{i}", item, f"{origin}[{i}]"))
            continue
        argv.append(flag)
        if isinstance(value, dict):
            argv.append(Arg(json.dumps(value), (), FixedLocator(value_span), value_span, origin))
        else:
            argv.append(_value_arg(document, text, lines, kptr, value, origin))
    return argv, problems


def _value_arg(document: Document, text: str, lines: LineLocator, ptr: str, value: Any, origin: str) -> Arg:
    span = document.span(ptr)
    if isinstance(value, str):
        return arg_from_located(scalar_locator(text, lines, span, value), span, origin)
    rendered = "None" if value is None else str(value)  # vLLM: str(value), so null becomes "None"
    return arg_from_located(Located(rendered, FixedLocator(span), False), span, origin)


def _trtllm_settings(document: Document, text: str, lines: LineLocator, problems: List[Problem]) -> List[Setting]:
    data = document.data
    settings: List[Setting] = []
    for path, (ptr, kind) in _TRTLLM_FIELDS.items():
        node: Any = data
        for part in path:
            node = node.get(part) if isinstance(node, dict) else None
        if node is None:
            continue
        yptr = "".join("/" + escape_pointer_token(p) for p in path)
        span = document.span(yptr)
        key_span = document.key_spans.get(yptr)
        value = _convert(kind, node)
        if value is None:
            problems.append(problem(
                "invalid-flag-value", f"{'.'.join(path)}: {node!r} is not a valid {kind}", span, "warning", ptr,
            ))
            continue
        settings.append(Setting(ptr, value, span, key_span, f"key {'.'.join(path)}"))
    mapped_top = {path[0] for path in _TRTLLM_FIELDS if len(path) == 1}
    for key, value in data.items():
        if key in mapped_top:
            continue  # held by its manifest field
        kptr = "/" + escape_pointer_token(str(key))
        settings.append(Setting(
            f"/engine/options/{escape_pointer_token(str(key))}", value, document.span(kptr),
            document.key_spans.get(kptr), f"key {key}",
        ))
    return settings


def _convert(kind: str, value: Any) -> Any:
    if kind == "str":
        return str(value) if value is not None else None
    if kind == "dtype":
        return _DTYPES.get(str(value).lower())
    if kind == "int":
        if isinstance(value, bool):
            return None
        try:
            number = int(value)
        except (TypeError, ValueError, OverflowError):  # .inf, .nan, a 5,000-digit string
            return None
        return number if number >= 1 else None
    if kind == "float":
        if isinstance(value, bool):
            return None
        try:
            number = float(value)
        except (TypeError, ValueError, OverflowError):
            return None
        return number if math.isfinite(number) else None  # .inf and .nan are no fraction
    return value


def merge_config(workload: Adapted, config: Adapted, reference_span: Span) -> Adapted:
    """Fill a command-line workload with the fields of the config file it names.

    The command line wins over the file (vLLM inserts the file's arguments before the CLI's,
    argparse keeps the last; SGLang likewise). Fields taken from the file point at the `--config`
    argument in the workload's file (a finding cannot point into a second file) and their
    provenance names the file and the line in it.
    """
    merged = Adapted(
        file=workload.file, format=workload.format, name=workload.name, index=workload.index,
        manifest=json.loads(json.dumps(workload.manifest)),
        value_spans=dict(workload.value_spans), key_spans=dict(workload.key_spans),
        provenance=dict(workload.provenance), missing=dict(workload.missing),
        problems=list(workload.problems), references=list(workload.references),
        flags=list(workload.flags), start_line=workload.start_line,
    )
    skip = {"/metadata/name", "/metadata/description", "/engine/name", "/apiVersion", "/kind"}
    for ptr, origin in config.provenance.items():
        if ptr in skip or origin == "missing" or origin.startswith("default"):
            continue
        value = _get(config.manifest, ptr)
        if value is None:
            continue
        mine = workload.provenance.get(ptr)
        if mine is not None and mine != "missing" and not mine.startswith("default"):
            if workload.manifest.get("engine", {}).get("name") == "tensorrt-llm" and _get(workload.manifest, ptr) != value:
                merged.problems.append(problem(
                    "conflicting-facts",
                    f"{ptr[1:].replace('/', '.')} is set both on the command line ({_get(workload.manifest, ptr)!r}) "
                    f"and in {config.file} ({value!r}); which wins depends on the TensorRT-LLM release "
                    "(older releases let the YAML replace kv_cache_config)",
                    reference_span, "warning", ptr,
                ))
            continue
        _set(merged.manifest, ptr, value)
        merged.value_spans[ptr] = reference_span
        merged.key_spans.pop(ptr, None)
        line = config.value_spans.get(ptr)
        merged.provenance[ptr] = f"{config.file}" + (f" line {line.line}" if line else "") + f": {origin}"
        merged.missing.pop(ptr, None)
    return merged


def _get(data: Any, ptr: str) -> Any:
    node = data
    for token in ptr.split("/")[1:]:
        token = token.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, dict) or token not in node:
            return None
        node = node[token]
    return node


def _set(data: Dict[str, Any], ptr: str, value: Any) -> None:
    tokens = [t.replace("~1", "/").replace("~0", "~") for t in ptr.split("/")[1:]]
    node = data
    for token in tokens[:-1]:
        node = node.setdefault(token, {})
    node[tokens[-1]] = value
