"""Write the chosen configuration in the user's form: a kvlint/v1 manifest, an engine command line
(flags spelled for the target release), or a minimal unified diff against the planned file.

Each form says the same thing to `kvlint check` as the manifest the plan judged: the flags are
the ones kvlint's own adapters read back into those manifest fields (kvlint.adapters.flags), and
the facts a command line cannot say (GPU, engine release, what the checkpoint carries) go in a
`# kvlint:` statement comment, the form docs/native.md documents.
"""

from __future__ import annotations

import shlex
from typing import Any, Dict, List, Optional, Tuple

import yaml

from kvlint.adapters.flags import spelling_for
from kvlint.errors import UsageError
from kvlint.load import Document

FORMS = ("manifest", "vllm", "sglang", "llama-server", "patch")


class _Quoted(str):
    """A string written in double quotes (engine versions: "0.20" must not read back as 0.2)."""


class _Dumper(yaml.SafeDumper):
    pass


_Dumper.add_representer(_Quoted, lambda d, v: d.represent_scalar("tag:yaml.org,2002:str", str(v), style='"'))


def manifest_text(data: Dict[str, Any], header: str) -> str:
    """The manifest as YAML, with the engine version quoted and a comment header."""
    data = dict(data)
    engine = dict(data.get("engine") or {})
    if isinstance(engine.get("version"), str):
        engine["version"] = _Quoted(engine["version"])
    data["engine"] = engine
    body = yaml.dump(data, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=100, allow_unicode=True)
    return "".join(f"# {line}\n" if line else "#\n" for line in header.splitlines()) + body


# Manifest fields a command line sets, in the order they are written.
_FLAG_FIELDS = (
    "/model/dtype", "/parallelism/tensor", "/parallelism/pipeline", "/kv_cache/dtype",
    "/kv_cache/skip_layers", "/kv_cache/block_size", "/engine/attention_backend",
    "/memory/gpu_memory_utilization", "/memory/mem_fraction_static", "/serving/max_model_len",
    "/serving/max_num_seqs", "/serving/max_num_batched_tokens",
    # llama.cpp
    "/kv_cache/key_dtype", "/kv_cache/value_dtype", "/engine/flash_attention", "/serving/context_size",
)
# llama-server: the fields its flags set, in the order written (K and V always both spelled out).
_LLAMA_FIELDS = ("/engine/flash_attention", "/kv_cache/key_dtype", "/kv_cache/value_dtype",
                 "/serving/context_size", "/serving/max_num_seqs")


def _dig(data: Dict[str, Any], pointer: str) -> Any:
    node: Any = data
    for part in pointer.strip("/").split("/"):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def _value_words(value: Any) -> List[str]:
    if isinstance(value, list):
        return [str(v) for v in value]
    if isinstance(value, bool):
        return []
    return [str(value)]


def statement_line(data: Dict[str, Any]) -> str:
    """The facts a command line cannot carry, as a `# kvlint:` statement comment."""
    facts = [("engine", _dig(data, "/engine/name")), ("engine-version", _dig(data, "/engine/version")),
             ("gpu", _dig(data, "/hardware/gpu")), ("gpu-count", _dig(data, "/hardware/count")),
             ("model-config", _dig(data, "/model/config")), ("model-kv-scales", _dig(data, "/model/kv_scales"))]
    return "# kvlint: " + " ".join(f"{k}={v}" for k, v in facts if v not in (None, ""))


def command_words(data: Dict[str, Any], engine: str, release: str) -> Tuple[List[str], Dict[str, str]]:
    """(the engine's command line as words, its environment) for the manifest `data`; a field no
    flag of this release sets is a UsageError naming it."""
    model = str(_dig(data, "/model/name"))
    if engine == "llama.cpp":
        return _llama_words(data, release), {}
    if engine == "vllm":
        words = ["vllm", "serve", model]
    elif engine == "sglang":
        words = ["python", "-m", "sglang.launch_server", spelling_for(engine, "/model/name", release) or "--model-path", model]
    else:
        raise UsageError(f"kvlint plan writes command lines for vllm and sglang, not {engine}; use --emit manifest")
    env: Dict[str, str] = {}
    for pointer in _FLAG_FIELDS:
        value = _dig(data, pointer)
        if value is None:
            continue
        if pointer == "/engine/attention_backend" and value == "auto":
            continue
        flag = spelling_for(engine, pointer, release)
        if flag is None:
            if pointer == "/engine/attention_backend" and engine == "vllm":
                env["VLLM_ATTENTION_BACKEND"] = str(value)  # before --attention-backend existed
                continue
            raise UsageError(f"{engine} {release} has no command-line flag for {pointer.lstrip('/').replace('/', '.')}; "
                             "use --emit manifest")
        words.append(flag)
        words.extend(_value_words(value))
    options = _dig(data, "/engine/options") or {}
    if options.get("calculate_kv_scales") and engine == "vllm":
        words.append("--calculate-kv-scales")
    return words, env


def _llama_words(data: Dict[str, Any], release: str) -> List[str]:
    """llama-server's argv: the model as the input gave it (-m for a .gguf path, --hf-repo for a
    Hugging Face id), then each field with the long spelling this build registers (`-fa` only:
    a switch before the tri-state, left out for off)."""
    from kvlint.catalog.ggml import load_ggml_catalog  # on use: only llama.cpp plans need it

    model = str(_dig(data, "/model/name"))
    gguf = model.lower().endswith(".gguf")
    words = ["llama-server", "--model" if gguf else "--hf-repo", model]
    shared = _dig(data, "/kv_cache/dtype")
    values = {"/kv_cache/key_dtype": _dig(data, "/kv_cache/key_dtype") or shared,
              "/kv_cache/value_dtype": _dig(data, "/kv_cache/value_dtype") or shared}
    fa_flag = load_ggml_catalog().setting("llama.cpp", "fa_flag", release)
    tristate = fa_flag is not None and fa_flag.value == "tristate"
    for pointer in _LLAMA_FIELDS:
        value = values.get(pointer, _dig(data, pointer))
        if value is None:
            continue
        flag = spelling_for("llama.cpp", pointer, release)
        if flag is None:
            raise UsageError(f"llama.cpp {release} has no command-line flag for {pointer.lstrip('/').replace('/', '.')}; "
                             "use --emit manifest")
        if pointer == "/engine/flash_attention" and not tristate:
            if value == "on":
                words.append(flag)  # the old switch: present is on
            continue
        words.extend([flag, str(value)])
    return words


def command_text(data: Dict[str, Any], engine: str, release: str, header: str) -> str:
    """A shell script that runs the engine with the plan's flags, its facts in a statement."""
    words, env = command_words(data, engine, release)
    lines = ["#!/bin/sh"]
    lines.extend(f"# {line}" if line else "#" for line in header.splitlines())
    lines.append(statement_line(data))
    prefix = "".join(f"{k}={shlex.quote(v)} " for k, v in env.items())
    head = {"vllm": 3, "llama.cpp": 3}.get(engine, 5)
    body = prefix + "exec " + " ".join(shlex.quote(w) for w in words[:head])
    rest = words[head:]
    chunks: List[str] = []
    for word in rest:
        if word.startswith("-") and not word[1:2].isdigit() or not chunks:
            chunks.append(shlex.quote(word))
        else:
            chunks[-1] += " " + shlex.quote(word)
    lines.append(" \\\n  ".join([body] + chunks))
    return "\n".join(lines) + "\n"


# --- patch --------------------------------------------------------------------------------------

def _changed_fields(old: Dict[str, Any], new: Dict[str, Any]) -> List[Tuple[str, Any]]:
    changed = []
    for pointer in _FLAG_FIELDS:
        before, after = _dig(old, pointer), _dig(new, pointer)
        if after is not None and after != before:
            changed.append((pointer, after))
    options_old = (_dig(old, "/engine/options") or {}).get("calculate_kv_scales")
    options_new = (_dig(new, "/engine/options") or {}).get("calculate_kv_scales")
    if options_new and not options_old:
        changed.append(("/engine/options/calculate_kv_scales", True))
    return changed


def _offset(lines: List[str], line: int, column: int) -> int:
    return sum(len(text) for text in lines[: line - 1]) + column - 1


def _written_span(lines: List[str], document: Document, pointer: str, value: Any) -> Optional[Any]:
    """The span of `pointer`'s value when the file writes it there as one word (the text at the
    span is the value, quoted or not); None for a default the adapter filled in or a value spread
    over several words or lines."""
    span = document.value_spans.get(pointer)
    if span is None or value is None or isinstance(value, (list, dict)) or span.line != span.end_line:
        return None
    if span.line > len(lines):
        return None
    text = lines[span.line - 1][span.column - 1: span.end_column - 1].strip("'\"")
    written = str(value).lower() if isinstance(value, bool) else str(value)
    try:
        same = text == written or float(text) == float(written)
    except ValueError:
        same = False
    return span if same else None


def patch_text(text: str, document: Document, old: Dict[str, Any], new: Dict[str, Any], engine: str,
               release: str, path: str) -> str:
    """A unified diff that turns the file `text` (whose document `document` the plan read as `old`)
    into one that reads as `new`: a changed value is replaced where it is written; a setting the
    file does not have is added as a flag after the engine's last argument, in the file's own
    layout (a YAML list item, a continued shell line, or inline)."""
    import difflib  # on use: only a patch needs it

    lines = text.splitlines(keepends=True)
    edits: List[Tuple[int, int, str]] = []  # (start offset, end offset, replacement)
    added: List[Tuple[str, List[str]]] = []
    for pointer, value in _changed_fields(old, new):
        written = _dig(old, pointer)
        span = _written_span(lines, document, pointer, written)
        if span is not None and not isinstance(value, list):
            start = _offset(lines, span.line, span.column)
            end = _offset(lines, span.end_line, span.end_column)
            original = "".join(lines)[start:end]
            quote = original[0] if original[:1] in ("'", '"') and original[-1:] == original[:1] else ""
            edits.append((start, end, f"{quote}{value}{quote}"))
            continue
        if pointer == "/engine/options/calculate_kv_scales":
            added.append(("--calculate-kv-scales", []))
            continue
        flag = spelling_for(engine, pointer, release)
        if flag is None:
            raise UsageError(f"{engine} {release} has no flag for {pointer.lstrip('/').replace('/', '.')}; "
                             "the plan cannot be written as a patch to this file (use --emit manifest)")
        if written is not None and pointer in document.value_spans and pointer != "/kv_cache/dtype":
            # written, but not as one word kvlint can replace (a list, a JSON option, a variable)
            raise UsageError(f"{path}: {pointer.lstrip('/').replace('/', '.')} is set where kvlint cannot rewrite it "
                             "in place; use --emit manifest")
        added.append((flag, _value_words(value)))
    if added:
        edits.append(_insertion(lines, document, added))
    joined = "".join(lines)
    for start, end, replacement in sorted(edits, key=lambda e: e[0], reverse=True):
        joined = joined[:start] + replacement + joined[end:]
    diff = difflib.unified_diff(text.splitlines(keepends=True), joined.splitlines(keepends=True),
                                fromfile=f"a/{path}", tofile=f"b/{path}")
    return "".join(diff)


def _insertion(lines: List[str], document: Document, added: List[Tuple[str, List[str]]]) -> Tuple[int, int, str]:
    """Where and how new flags go: after the last engine argument kvlint located in the file."""
    spans = [span for pointer, span in document.value_spans.items()
             if pointer.split("/")[1:2] and pointer.split("/")[1] in ("kv_cache", "serving", "memory", "parallelism", "model")
             and _written_span(lines, document, pointer, _dig(document.data, pointer)) is not None]
    if not spans:
        raise UsageError("the file has no engine argument kvlint can place new flags after; use --emit manifest")
    last = max(spans, key=lambda s: (s.end_line, s.end_column))
    line_text = lines[last.end_line - 1]
    stripped = line_text.lstrip()
    indent = line_text[: len(line_text) - len(stripped)]
    end_of_line = _offset(lines, last.end_line, 1) + len(line_text.rstrip("\r\n"))
    if stripped.startswith("- "):  # a YAML list of arguments: one item per word
        words = [w for flag, values in added for w in [flag] + values]
        insert = "".join(f"\n{indent}- {_yaml_word(w)}" for w in words)
        return end_of_line, end_of_line, insert
    if line_text.rstrip("\r\n").endswith("\\"):  # a continued shell line
        at = _offset(lines, last.end_line + 1, 1)
        insert = "".join(f"{indent}{' '.join(shlex.quote(w) for w in [flag] + values)} \\\n" for flag, values in added)
        return at, at, insert
    at = _offset(lines, last.end_line, last.end_column)
    # inline, after the value (a quoted value's closing quote stays before the new words)
    while at < end_of_line and "".join(lines)[at] in "'\"":
        at += 1
    insert = "".join(" " + " ".join(shlex.quote(w) for w in [flag] + values) for flag, values in added)
    return at, at, insert


def _yaml_word(word: str) -> str:
    if word.replace(".", "", 1).isdigit() or word in ("true", "false", "null", "yes", "no", "on", "off"):
        return f'"{word}"'
    return word


_COMMAND_ENGINE = {"vllm": "vllm", "sglang": "sglang", "llama-server": "llama.cpp"}


def emit(form: str, data: Dict[str, Any], engine: str, release: str, header: str,
         source_text: Optional[str] = None, document: Optional[Document] = None,
         baseline: Optional[Dict[str, Any]] = None, path: str = "") -> str:
    if form == "manifest":
        return manifest_text(data, header)
    if form in ("vllm", "sglang", "llama-server"):
        if _COMMAND_ENGINE[form] != engine:
            other = {v: k for k, v in _COMMAND_ENGINE.items()}.get(engine)
            other = f"--emit {other} or " if other else ""
            raise UsageError(f"--emit {form}: the plan is for {engine}; use {other}--emit manifest")
        return command_text(data, engine, release, header)
    if form == "patch":
        if source_text is None or document is None or baseline is None:
            raise UsageError("--emit patch needs a planned file: kvlint plan FILE")
        return patch_text(source_text, document, baseline, data, engine, release, path)
    raise UsageError(f"--emit {form}: one of {', '.join(FORMS)}")


__all__ = ["FORMS", "command_text", "emit", "manifest_text", "patch_text", "statement_line"]
