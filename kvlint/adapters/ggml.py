"""llama.cpp and Ollama: their environment variables and defaults onto manifest fields.

Shared by every format (a command line, Kubernetes env, compose `environment`, Dockerfile `ENV`,
`docker run -e`, systemd `Environment=`): `workload.assemble` calls `finish` with the settings the
command line gave and the engine variables of the workload.

llama.cpp — every option registered with `.set_env("LLAMA_ARG_…")` reads that variable first;
argv then overrides it (llama.cpp prints `warn: … environment variable is set, but will be
overwritten by command line argument`); a switch pair also reads `LLAMA_ARG_NO_…` as "off"; a
switch without a value applies when the value is truthy (`on`, `enabled`, `true`, `1`); a pair
needs a truthy or falsey value, anything else refuses to start; integers go through `std::stoi`
(https://github.com/ggml-org/llama.cpp/blob/0c1e57098bba43ac29e6e3b677cdceebdd22334f/common/arg.cpp#L125-L155
and #L780-L805). K and V default to f16 (`-ctk`/`-ctv`, common/common.h).

Ollama — `envconfig` trims blanks and quotes from each value (`Var`); `OLLAMA_FLASH_ATTENTION` is a
Go `strconv.ParseBool` where an unparsable value counts as true; `OLLAMA_CONTEXT_LENGTH` and
`OLLAMA_NUM_PARALLEL` are unsigned integers, and an unparsable one is ignored (the default
applies); `OLLAMA_KV_CACHE_TYPE` is a string, default f16
(https://github.com/ollama/ollama/blob/v0.13.3/envconfig/config.go). Every `OLLAMA_*` variable is
also kept verbatim in `engine.env`, so a misspelt one (`OLLAMA_FLASH_ATTN`) stays visible.
"""

from __future__ import annotations

import difflib
import re
from typing import Dict, List, Sequence, Tuple

from kvlint.adapters import flags as flag_table
from kvlint.adapters.cmdline import FA_VALUES, Setting, stoi
from kvlint.adapters.llamacpp_flags import KNOWN as LLAMACPP_KNOWN
from kvlint.adapters.result import Problem, problem_code

ENV_PREFIXES = ("LLAMA_ARG_", "OLLAMA_")
DEFAULT_CACHE_TYPE = "f16"

# LLAMA_ARG_* name -> a spelling of the option that reads it
_LLAMA_ENV: Dict[str, str] = {}
for _spelling, (_takes, _dest, _env, _builds) in sorted(LLAMACPP_KNOWN.items()):
    if _env and _takes != "bool-neg" and (_env not in _LLAMA_ENV or _spelling.startswith("--")):
        _LLAMA_ENV[_env] = _spelling

_TRUTHY = ("on", "enabled", "true", "1")
_FALSEY = ("off", "disabled", "false", "0")

# Ollama's server variables kvlint maps onto fields: name -> (pointer, kind)
_OLLAMA_FIELDS = {
    "OLLAMA_KV_CACHE_TYPE": ("/kv_cache/dtype", "str"),
    "OLLAMA_FLASH_ATTENTION": ("/engine/flash_attention", "gobool"),
    "OLLAMA_CONTEXT_LENGTH": ("/serving/max_model_len", "uint"),
    "OLLAMA_NUM_PARALLEL": ("/serving/max_num_seqs", "uint"),
}
_GO_TRUE = ("1", "t", "T", "TRUE", "true", "True")
_GO_FALSE = ("0", "f", "F", "FALSE", "false", "False")
_GGUF = re.compile(r"\.gguf$", re.IGNORECASE)
_ABSOLUTE = re.compile(r"^(/|~|[A-Za-z]:[\\/]|[a-z]+://)")


def _problem(kind: str, message: str, fact, severity: str = "warning", ptr: str = "") -> Problem:
    # a variable llama.cpp does not read: its name; otherwise the value
    span = (fact.key_span or fact.span) if kind == "unknown-flag" else fact.span
    return Problem(problem_code(kind), kind, message, span, severity, ptr)


def finish(engine: str, settings: Sequence[Setting], env: Dict[str, object]) -> Tuple[List[Setting], List[Problem]]:
    """Settings the environment and the engine's defaults add to `settings` (the command's)."""
    given = {s.pointer: s for s in settings}
    extra: List[Setting] = []
    problems: List[Problem] = []
    if engine == "llama.cpp":
        _llama_env(env, given, extra, problems)
    elif engine == "ollama":
        _ollama_env(env, given, extra, problems)
    for setting in extra:
        given.setdefault(setting.pointer, setting)
    extra.extend(_cache_types(given))
    extra.extend(_gguf_config(given))
    return extra, problems


def _llama_env(env, given, extra: List[Setting], problems: List[Problem]) -> None:
    for name, fact in sorted(env.items()):
        if not name.startswith("LLAMA_ARG_"):
            continue
        negative = False
        spelling = _LLAMA_ENV.get(name)
        if spelling is None and name.startswith("LLAMA_ARG_NO_"):
            positive = "LLAMA_ARG_" + name[len("LLAMA_ARG_NO_"):]
            candidate = _LLAMA_ENV.get(positive)
            if candidate is not None and LLAMACPP_KNOWN[candidate][0] in ("bool", "bool-neg"):
                spelling, negative = candidate, True
        if spelling is None:
            close = difflib.get_close_matches(name, list(_LLAMA_ENV), n=1, cutoff=0.8)
            problems.append(_problem(
                "unknown-flag",
                f"{name} is not a variable llama.cpp reads" + (f" (did you mean {close[0]}?)" if close else "")
                + "; it has no effect",
                fact, "warning", f"/engine/env/{name}",
            ))
            continue
        spec = flag_table.lookup("llama.cpp", spelling)
        if spec is None:
            continue
        takes = LLAMACPP_KNOWN[spelling][0]
        raw = str(fact.value)
        value: object
        if negative:
            value = False
        elif takes == "flag":
            if raw not in _TRUTHY:
                continue  # handler_void runs only for a truthy value
            value = True
        elif takes in ("bool", "bool-neg"):
            if raw in _TRUTHY:
                value = True
            elif raw in _FALSEY:
                value = False
            else:
                problems.append(_problem(
                    "invalid-flag-value",
                    f"{name}={raw!r} is not a boolean llama.cpp reads (on/off, true/false, 1/0, "
                    "enabled/disabled); llama.cpp refuses to start (`invalid boolean value`)",
                    fact, "error", spec.field or "",
                ))
                continue
        elif takes == "fa":
            found = FA_VALUES.get(raw)
            if found is None:
                # the switch builds apply a truthy variable; the tri-state builds refuse others
                problems.append(_problem(
                    "invalid-flag-value",
                    f"{name}={raw!r}: llama.cpp accepts on|off|auto (1|0|-1) here and refuses to "
                    "start on other values",
                    fact, "error", spec.field or "",
                ))
                continue
            value = found
        elif spec.type in ("stoi", "stoi0"):
            number, rest = stoi(raw)
            if number is None:
                problems.append(_problem(
                    "invalid-flag-value",
                    f"{name}={raw!r} is not an integer; llama.cpp refuses to start "
                    f"(`error while handling environment variable \"{name}\"`)",
                    fact, "error", spec.field or "",
                ))
                continue
            if rest:
                problems.append(_problem(
                    "invalid-flag-value",
                    f"llama.cpp reads {name}={raw!r} as {number} (std::stoi stops at {rest[0]!r})",
                    fact, "warning", spec.field or "",
                ))
            value = number
            if number < (0 if spec.type == "stoi0" else 1):
                _option(extra, spec.dest, number, fact, name)
                continue
        else:
            value = raw
        pointer = spec.field or f"/engine/options/{spec.dest}"
        flag = given.get(pointer)
        if flag is not None:
            if str(flag.value) != str(value) and not isinstance(flag.value, dict):
                problems.append(_problem(
                    "conflicting-facts",
                    f"{name}={raw!r} is overridden by the command line ({flag.provenance}): llama.cpp "
                    "lets the flag win and warns that the variable is overwritten",
                    fact, "info", pointer,
                ))
            continue
        extra.append(Setting(pointer, value, fact.span, fact.key_span, f"{fact.provenance} ({spelling})"))


def _option(extra: List[Setting], dest: str, value: object, fact, name: str) -> None:
    extra.append(Setting(f"/engine/options/{dest}", value, fact.span, fact.key_span, f"{fact.provenance} ({name})"))


def _ollama_env(env, given, extra: List[Setting], problems: List[Problem]) -> None:
    for name, (pointer, kind) in _OLLAMA_FIELDS.items():
        fact = env.get(name)
        if fact is None or pointer in given:
            continue
        raw = str(fact.value).strip().strip("\"' ")  # envconfig.Var
        if not raw:
            continue
        value: object
        if kind == "gobool":
            if raw in _GO_TRUE:
                value = "on"
            elif raw in _GO_FALSE:
                value = "off"
            else:
                value = "on"
                problems.append(_problem(
                    "invalid-flag-value",
                    f"{name}={raw!r} is not a Go boolean (1/0, true/false, t/f); Ollama counts an "
                    "unparsable value as true",
                    fact, "info", pointer,
                ))
        elif kind == "uint":
            if not raw.isdigit() or not raw.isascii():
                problems.append(_problem(
                    "invalid-flag-value",
                    f"{name}={raw!r} is not an unsigned integer; Ollama ignores it and uses its default",
                    fact, "warning", pointer,
                ))
                continue
            value = int(raw)
            if value < 1:
                continue  # 0 = Ollama's automatic choice
        else:
            value = raw
        extra.append(Setting(pointer, value, fact.span, fact.key_span, fact.provenance))


def _cache_types(given: Dict[str, Setting]) -> List[Setting]:
    """kv_cache.dtype (required) from -ctk / -ctv: the shared type, or the f16 default."""
    if "/kv_cache/dtype" in given:
        return []
    key = given.get("/kv_cache/key_dtype")
    value = given.get("/kv_cache/value_dtype")
    if key is not None and value is not None and key.value == value.value:
        return [Setting("/kv_cache/dtype", key.value, key.span, key.key_span, key.provenance)]
    anchor = key or value
    span = anchor.span if anchor is not None else None
    if span is None:
        return []  # the caller's default (placed on the command) applies
    return [Setting("/kv_cache/dtype", DEFAULT_CACHE_TYPE, span, None,
                    "default (llama.cpp's K and V cache type is f16 unless -ctk / -ctv say otherwise)")]


def _gguf_config(given: Dict[str, Setting]) -> List[Setting]:
    """A model given as a relative .gguf path: also model.config, so its header gives geometry."""
    model = given.get("/model/name")
    if model is None or not isinstance(model.value, str) or "/model/config" in given:
        return []
    if _GGUF.search(model.value) and not _ABSOLUTE.match(model.value):
        return [Setting("/model/config", model.value, model.span, model.key_span,
                        f"{model.provenance} (a GGUF file: its header gives the geometry)")]
    return []

