"""Runs inside ONE subprocess per (release, device): imports that release's vLLM under the
stubs of stubs.py and asks its own code, printing raw answers as JSON.

    python -I vllm_probe.py --root EXTRACTED_ROOT --device sm90 [--aiter] --path P1:P2 --out raw.json

Not meant to be run by hand; vllm_derive.py starts it with a clean interpreter
(`-I`: no PYTHONPATH, no user site) and an explicit sys.path:
[extracted release root, tools/derive (stubs), dependency dir, torch's site-packages, stdlib].
Nothing here guesses: a question the release cannot answer is recorded as
{"unknown": reason}.
"""

from __future__ import annotations

import argparse
import enum
import importlib
import inspect
import json
import re
import sys
import traceback
from pathlib import Path

HEAD_SIZES = (64, 80, 96, 128, 192, 256, 576)
BLOCK_SIZES = (16, 32, 64, 128, 256)
MLA_HEAD = 576
# Backends that never run on a CUDA/ROCm GPU (CPU, TPU, XPU, ...) or are placeholders.
SKIP_BACKEND = re.compile(r"^(CUSTOM|NO_ATTENTION|CPU_.*|TORCH_SDPA|PALLAS.*|IPEX.*|XPU.*|ZENTORCH.*|AMX.*|HPU.*|"
                          r".*_VLLM_V1_CPU)$")
# Flags kvlint cares about (dest names of EngineArgs); their spellings are read from the parser.
FLAG_DESTS = ("kv_cache_dtype", "kv_cache_dtype_skip_layers", "attention_backend", "calculate_kv_scales",
              "block_size", "gpu_memory_utilization", "kv_cache_memory_bytes", "kv_cache_memory",
              "max_model_len", "max_num_batched_tokens", "max_num_seqs", "tensor_parallel_size",
              "pipeline_parallel_size", "data_parallel_size", "enable_prefix_caching", "swap_space",
              "cpu_offload_gb", "kv_offloading_size", "num_gpu_blocks_override", "enforce_eager",
              "dtype", "quantization", "attention_config", "kv_cache_metrics")
DEFAULT_FIELDS = ("block_size", "gpu_memory_utilization", "max_num_batched_tokens", "max_num_seqs",
                  "kv_cache_dtype", "calculate_kv_scales", "kv_cache_memory_bytes", "max_model_len",
                  "enable_prefix_caching", "swap_space")

ROOT: Path = Path(".")


# ----------------------------------------------------------------------------- helpers

def where(obj) -> dict:
    """Provenance of a function/class: file (relative to the release root), qualname, line."""
    fn = inspect.unwrap(getattr(obj, "__func__", obj))
    try:
        file = inspect.getsourcefile(fn)
        lines, line = inspect.getsourcelines(fn)
        for off, text in enumerate(lines):  # the `def`/`class` line, not a decorator's
            if text.lstrip().startswith(("def ", "async def ", "class ")):
                line += off
                break
    except (TypeError, OSError):
        return {"qualname": getattr(fn, "__qualname__", repr(fn)), "file": None, "line": None}
    try:
        rel = str(Path(file).resolve().relative_to(ROOT.resolve()))
    except ValueError:
        rel = "<outside release>:" + Path(file).name
    return {"file": rel, "line": line, "qualname": getattr(fn, "__qualname__", "")}


def err(exc: BaseException) -> str:
    msg = str(exc).split("\n")[0]
    msg = re.sub(r"AttentionSelectorConfig\(.*?\)", "AttentionSelectorConfig(...)", msg)
    msg = re.sub(r"0x[0-9a-f]+", "0x?", msg)
    return f"{type(exc).__name__}: {msg[:300]}"


def jsonable(v):
    if isinstance(v, (bool, int, float, str)) or v is None:
        return v
    if isinstance(v, enum.Enum):
        return v.name
    if isinstance(v, (list, tuple, set, frozenset)):
        out = [jsonable(x) for x in v]
        return sorted(out, key=repr) if isinstance(v, (set, frozenset)) else out
    if isinstance(v, dict):
        return {str(jsonable(k)): jsonable(x) for k, x in v.items()}
    if type(v).__name__ == "MultipleOf":
        return {"multiple_of": v.base}
    if hasattr(v, "__name__"):
        return v.__name__
    return repr(v)


def source_line(module, pattern: str):
    try:
        lines, _ = inspect.findsource(module)
    except (OSError, TypeError):
        return None
    rx = re.compile(pattern)
    for i, line in enumerate(lines):
        if rx.search(line):
            return i + 1
    return None


def rel(path) -> str:
    try:
        return str(Path(path).resolve().relative_to(ROOT.resolve()))
    except ValueError:
        return str(path)


# ----------------------------------------------------------------------------- discovery

def cache_dtypes() -> dict:
    from typing import get_args

    for modname in ("vllm.config.cache", "vllm.config"):
        try:
            mod = importlib.import_module(modname)
        except Exception as exc:  # noqa: BLE001
            last = err(exc)
            continue
        lit = getattr(mod, "CacheDType", None)
        if lit is None:
            last = f"{modname} has no CacheDType"
            continue
        real = importlib.import_module(getattr(lit, "__module__", modname)) if hasattr(lit, "__module__") else mod
        if not hasattr(real, "CacheDType"):
            real = mod
        return {"values": list(get_args(lit)),
                "where": {"file": rel(real.__file__), "line": source_line(real, r"^CacheDType\b"),
                          "qualname": "CacheDType"}}
    return {"unknown": last}


def _base_backend_class():
    for modname, attr in (("vllm.v1.attention.backend", "AttentionBackend"),
                          ("vllm.attention.backends.abstract", "AttentionBackend")):
        try:
            return getattr(importlib.import_module(modname), attr)
        except Exception:  # noqa: BLE001
            continue
    return None


def backends() -> tuple[dict, dict]:
    """name -> class (or error string); plus the registry's provenance."""
    out: dict = {}
    info: dict = {}
    for modname in ("vllm.v1.attention.backends.registry", "vllm.attention.backends.registry"):
        try:
            reg = importlib.import_module(modname)
        except ImportError:
            continue
        enum_cls = getattr(reg, "AttentionBackendEnum", None)
        if enum_cls is None:
            continue
        info = {"registry": {"file": rel(reg.__file__), "line": source_line(reg, r"^class AttentionBackendEnum"),
                             "qualname": "AttentionBackendEnum"}}
        for name, member in enum_cls.__members__.items():
            if SKIP_BACKEND.match(name):
                continue
            try:
                out[name] = member.get_class()
            except Exception as exc:  # noqa: BLE001
                out[name] = err(exc)
        return out, info
    # Older layout (0.11): no registry of paths; the backend classes are found by scanning the
    # release's attention backend modules for AttentionBackend subclasses; name = get_name().
    base = _base_backend_class()
    info = {"registry": "none (scanned vllm/v1/attention/backends for AttentionBackend subclasses)"}
    renamed: dict = {}
    enum_names: set = set()
    try:
        enum_names = set(importlib.import_module("vllm.platforms.interface")._Backend.__members__)
    except Exception:  # noqa: BLE001
        pass
    pkg = ROOT / "vllm" / "v1" / "attention" / "backends"
    for path in sorted(pkg.rglob("*.py")):
        modname = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        if modname.endswith("__init__"):
            continue
        try:
            mod = importlib.import_module(modname)
        except Exception as exc:  # noqa: BLE001
            alt = modname.rsplit(".", 1)[1].upper()  # flashinfer.py -> FLASHINFER, if _Backend has it
            if not SKIP_BACKEND.match(alt):
                out[alt if alt in enum_names else "<module " + modname + ">"] = err(exc)
            continue
        for obj in vars(mod).values():
            if (inspect.isclass(obj) and base is not None and issubclass(obj, base) and obj is not base
                    and obj.__module__ == modname and not inspect.isabstract(obj)):
                try:
                    name = obj.get_name()
                except Exception:  # noqa: BLE001
                    continue
                name = name.removesuffix("_VLLM_V1")
                if name in out and out[name] is not obj:
                    # get_name() collides (0.11: rocm_aiter_fa.py answers "FLASH_ATTN"): name it by
                    # the _Backend member spelled like its module, if there is one
                    alt = modname.rsplit(".", 1)[1].upper()
                    if alt in enum_names and alt not in out:
                        renamed[alt] = f"get_name() returns {name!r}; named after its module"
                        name = alt
                if SKIP_BACKEND.match(name) or name in out:
                    continue
                out[name] = obj
    if renamed:
        info["renamed"] = renamed
    for k in [k for k in out if k.startswith("<module ") and ("mamba" in k or "linear_attn" in k or "gdn" in k
                                                                or "short_conv" in k or "cpu" in k or "pallas" in k)]:
        del out[k]
    return out, info


# ----------------------------------------------------------------------------- asking a backend

PRED_RX = re.compile(r"^(supports_.*|is_.*|get_supported_.*|get_preferred_block_size|get_name)$")
SKIP_PRED = {"supports_combination", "is_quantized_kv_cache"}


def grid_args(param: str, ctx: dict):
    if param == "head_size":
        return list(HEAD_SIZES)
    if param in ("kv_cache_dtype", "cache_dtype"):
        return list(ctx["dtypes"])
    if param == "block_size":
        return list(BLOCK_SIZES)
    if param in ("capability", "device_capability"):
        return ["<device>"]
    if param == "dtype":
        return ["float16", "bfloat16", "float32"]
    if param == "attn_type":
        return list(ctx["attn_types"])
    if param == "default_block_size":
        return [16]
    return None


def model_dtype(name: str = "bfloat16"):
    """torch.<name>; the plain string where torch is absent (only the offline test's fake release)."""
    try:
        import torch
    except ImportError:
        return name
    return getattr(torch, name)


def arg_value(param: str, v, ctx: dict):
    if v == "<device>":
        return ctx["cap"]
    if param == "dtype":
        return model_dtype(v)
    return v


def ask_predicates(cls, ctx: dict) -> dict:
    out = {}
    for name in sorted(dir(cls)):
        if not PRED_RX.match(name) or name in SKIP_PRED:
            continue
        fn = getattr(cls, name)
        if not callable(fn):
            continue
        try:
            sig = inspect.signature(fn)
        except (TypeError, ValueError):
            continue
        required = [p for p in sig.parameters.values()
                    if p.default is inspect.Parameter.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        entry = {"where": where(fn)}
        if not required:
            try:
                entry["value"] = jsonable(fn())
            except Exception as exc:  # noqa: BLE001
                entry["error"] = err(exc)
        elif len(required) == 1:
            p = required[0].name
            values = grid_args(p, ctx)
            if values is None:
                entry["unknown"] = f"needs argument {p!r}, not on the grid"
            else:
                entry["arg"] = p
                res = []  # [[arg, answer], ...] in grid order
                for v in values:
                    try:
                        res.append([jsonable(v) if v != "<device>" else v, jsonable(fn(arg_value(p, v, ctx)))])
                    except Exception as exc:  # noqa: BLE001
                        res.append([v, {"error": err(exc)}])
                entry["values"] = res
        else:
            entry["unknown"] = "needs arguments " + ", ".join(p.name for p in required)
        out[name] = entry
    return out


FEATURES = ("has_sink", "use_per_head_quant_scales", "has_sliding_window")


def variants(params) -> list:
    """Boolean features are toggled one at a time (plain, then each alone), to keep the grid
    small; a feature the function does not take is not on the grid."""
    out = ["plain"]
    out += [f for f in FEATURES if f in params]
    return out


def ask_validate(cls, ctx: dict) -> dict:
    """validate_configuration over variant x kv_cache_dtype x head_size x block_size, with
    use_mla = the backend's own is_mla() and use_sparse = is_sparse() (a mismatch only adds the
    fixed reason "MLA not supported"/"non-MLA not supported"). Compressed per reason."""
    fn = getattr(cls, "validate_configuration", None)
    if fn is None:
        return {"unknown": "no validate_configuration in this release"}
    import table

    params = inspect.signature(fn).parameters
    try:
        sparse = bool(cls.is_sparse())
    except Exception:  # noqa: BLE001
        sparse = False
    try:
        mla = bool(cls.is_mla())
    except Exception:  # noqa: BLE001
        mla = False
    fixed = {"dtype": model_dtype(), "use_sparse": sparse, "use_mla": mla, "use_mm_prefix": False,
             "device_capability": ctx["cap"], "attn_type": ctx.get("decoder", "decoder")}
    grid = ("kv_cache_dtype", "head_size", "block_size")
    unfilled = [p for p in params if p not in grid and p not in fixed and p not in FEATURES
                and params[p].default is inspect.Parameter.empty]
    if unfilled:
        return {"unknown": "validate_configuration needs " + ", ".join(unfilled), "where": where(fn)}
    kw_fixed = {k: v for k, v in fixed.items() if k in params}
    kw_fixed.update({f: False for f in FEATURES if f in params})
    domains = {"variant": variants(params), "kv_cache_dtype": list(ctx["dtypes"]),
               "head_size": list(HEAD_SIZES), "block_size": list(BLOCK_SIZES)}
    dims = ["variant", "kv_cache_dtype", "head_size", "block_size"]
    results = {}
    for var in domains["variant"]:
        for d in domains["kv_cache_dtype"]:
            for h in HEAD_SIZES:
                for b in BLOCK_SIZES:
                    kw = dict(kw_fixed, kv_cache_dtype=d, head_size=h, block_size=b)
                    if var != "plain":
                        kw[var] = True
                    try:
                        reasons = sorted({str(r) for r in fn(**kw)})
                    except Exception as exc:  # noqa: BLE001
                        reasons = ["raised " + err(exc)]
                    results[(var, d, h, b)] = reasons
    all_reasons = sorted({r for rs in results.values() for r in rs})
    reasons = {r: table.compress({k: (r in v) for k, v in results.items()}, dims, domains)
               for r in all_reasons}
    out = {"where": where(fn), "dims": dims, "reasons": reasons,
           "fixed": {"dtype": "bfloat16", "use_sparse": sparse, "use_mla": mla, "use_mm_prefix": False,
                     "attn_type": "decoder"},
           "variants": domains["variant"]}
    comb = getattr(cls, "supports_combination", None)
    if comb is not None:
        out["supports_combination"] = where(comb)
    return out


# ----------------------------------------------------------------------------- selection

def selector():
    for modname in ("vllm.v1.attention.selector", "vllm.attention.selector"):
        try:
            mod = importlib.import_module(modname)
        except ImportError:
            continue
        fn = getattr(mod, "get_attn_backend", None)
        if fn is not None:
            return mod, fn
    return None, None


def ask_selection(ctx: dict, names_by_cls: dict) -> dict:
    mod, fn = selector()
    if fn is None:
        return {"unknown": "no get_attn_backend selector found"}
    params = inspect.signature(fn).parameters
    dims = {"use_mla": [False, True], "variant": variants(params), "kv_cache_dtype": list(ctx["dtypes"]),
            "head_size": list(HEAD_SIZES)}
    if "block_size" in params:
        dims["block_size"] = list(BLOCK_SIZES)
    fixed = {"dtype": model_dtype(), "use_sparse": False}
    missing = [p for p in params if p not in dims and p not in fixed and params[p].default is inspect.Parameter.empty]
    if missing:
        return {"unknown": "selector needs " + ", ".join(missing), "where": where(fn)}
    # From 0.12 the selector reads the current VllmConfig (attention_config.backend = auto;
    # later releases also take the block size from cache_config). A default VllmConfig()
    # with CacheConfig(block_size=b) is set around each call; if a release cannot build
    # one here, the selector runs without it and its error is recorded.
    configs = {}
    config_note = "none"
    try:
        from vllm.config import CacheConfig, VllmConfig, set_current_vllm_config
        for b in BLOCK_SIZES:
            configs[b] = VllmConfig(cache_config=CacheConfig(block_size=b))
        config_note = "VllmConfig(cache_config=CacheConfig(block_size=<grid>))"
        if "block_size" not in dims:
            # the selector reads the block size from the config: also ask with none given
            # ("default": CacheConfig() unset, as without --block-size)
            configs["default"] = VllmConfig()
            dims["block_size"] = ["default"] + list(BLOCK_SIZES)
    except Exception as exc:  # noqa: BLE001
        configs = {}
        config_note = "no VllmConfig: " + err(exc)
    names = list(dims)
    cells = {}
    plat = ctx["platform"]
    platform_fn = getattr(type(plat), "get_attn_backend_cls", None)
    prio = None
    pmod = sys.modules.get(type(plat).__mro__[1].__module__)
    if pmod is not None and hasattr(pmod, "_get_backend_priorities"):
        prio = where(pmod._get_backend_priorities)

    def clear():
        for f in (getattr(mod, "_cached_get_attn_backend", None),):
            if f is not None and hasattr(f, "cache_clear"):
                f.cache_clear()

    def call(cur):
        kw = {k: v for k, v in cur.items() if k in params}
        kw.update({f: False for f in FEATURES if f in params})
        if cur["variant"] != "plain":
            kw[cur["variant"]] = True
        kw.update({k: v for k, v in fixed.items() if k in params})
        cfg = configs.get(cur.get("block_size"))
        if cfg is None:
            return fn(**kw)
        with set_current_vllm_config(cfg):
            return fn(**kw)

    def rec(i, cur):
        if i == len(names):
            clear()
            try:
                cls = call(cur)
                key = (cls.__module__, cls.__qualname__)
                res = names_by_cls.get(key) or cls.get_name()
            except Exception as exc:  # noqa: BLE001
                res = "error: " + err(exc).split(" Reasons:")[0]
            cells[tuple(cur[n] for n in names)] = res
            return
        for v in dims[names[i]]:
            # MLA models have the 576-wide latent head (DeepSeek-style); non-MLA models don't
            if names[i] == "head_size" and (v == MLA_HEAD) != bool(cur.get("use_mla")):
                continue
            cur[names[i]] = v
            rec(i + 1, cur)

    rec(0, {})
    import table
    # the grid is not a full product (head 576 only with use_mla): compress each half
    tree = {"by": "use_mla", "cases": {}}
    for m in (False, True):
        part = {k[1:]: v for k, v in cells.items() if k[0] == m}
        sub = dict(dims)
        sub["head_size"] = [h for h in dims["head_size"] if (h == MLA_HEAD) == m]
        tree["cases"][str(m)] = table.compress(part, names[1:], sub)
    out = {"where": where(fn), "dims": names, "tree": tree, "config": config_note,
           "block_sizes": dims["block_size"],
           "variants": dims["variant"]}
    if platform_fn is not None:
        out["platform_where"] = where(platform_fn)
    if prio:
        out["priorities_where"] = prio
    return out


# ----------------------------------------------------------------------------- flags and defaults

def ask_flags() -> dict:
    try:
        from vllm.engine.arg_utils import EngineArgs
    except Exception as exc:  # noqa: BLE001
        return {"unknown": "cannot import vllm.engine.arg_utils: " + err(exc)}
    parser = None
    for modname, attr in (("vllm.utils.argparse_utils", "FlexibleArgumentParser"),
                          ("vllm.utils", "FlexibleArgumentParser")):
        try:
            parser = getattr(importlib.import_module(modname), attr)()
            break
        except Exception:  # noqa: BLE001
            continue
    if parser is None:
        return {"unknown": "no FlexibleArgumentParser"}
    try:
        EngineArgs.add_cli_args(parser)
    except Exception as exc:  # noqa: BLE001
        return {"unknown": "EngineArgs.add_cli_args raised " + err(exc), "where": where(EngineArgs.add_cli_args)}
    flags = {}
    for action in parser._actions:
        dest = action.dest
        if dest not in FLAG_DESTS:
            continue
        ent = {"options": sorted(action.option_strings)}
        if action.choices is not None:
            ent["choices"] = sorted(str(c) for c in action.choices)
        if getattr(action, "deprecated", False):
            ent["deprecated"] = True
        h = action.help or ""
        if "deprecated" in h.lower():
            ent["help_says_deprecated"] = True
        flags[dest] = ent
    for d in FLAG_DESTS:
        flags.setdefault(d, {"absent": True})
    defaults = {}
    import dataclasses
    fields = {f.name: f for f in dataclasses.fields(EngineArgs)} if dataclasses.is_dataclass(EngineArgs) else {}
    for name in DEFAULT_FIELDS:
        f = fields.get(name)
        if f is None:
            defaults[name] = {"absent": True}
            continue
        if f.default is not dataclasses.MISSING:
            defaults[name] = {"value": jsonable(f.default)}
        elif f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
            try:
                defaults[name] = {"value": jsonable(f.default_factory())}  # type: ignore[misc]
            except Exception as exc:  # noqa: BLE001
                defaults[name] = {"unknown": err(exc)}
    # CacheConfig's own defaults (EngineArgs often defers to them)
    try:
        from vllm.config.cache import CacheConfig
        cf = {f.name: f for f in dataclasses.fields(CacheConfig)}
        for name in ("block_size", "gpu_memory_utilization", "cache_dtype", "calculate_kv_scales",
                     "kv_cache_memory_bytes", "kv_cache_dtype_skip_layers"):
            f = cf.get(name)
            if f is not None and f.default is not dataclasses.MISSING:
                defaults["CacheConfig." + name] = {"value": jsonable(f.default)}
        for c in ("DEFAULT_BLOCK_SIZE",):
            if hasattr(CacheConfig, c):
                defaults["CacheConfig." + c] = {"value": jsonable(getattr(CacheConfig, c))}
    except Exception as exc:  # noqa: BLE001
        defaults["CacheConfig"] = {"unknown": err(exc)}
    return {"flags": flags, "defaults": defaults,
            "where": where(EngineArgs.add_cli_args), "engine_args": where(EngineArgs)}


def ask_batch_defaults() -> dict:
    try:
        from vllm.engine.arg_utils import EngineArgs
    except Exception as exc:  # noqa: BLE001
        return {"unknown": err(exc)}
    fn = getattr(EngineArgs, "get_batch_defaults", None)
    if fn is None:
        return {"unknown": "no EngineArgs.get_batch_defaults in this release (defaults set inside "
                           "_set_default_args, which needs a model config)"}
    try:
        tokens, seqs = fn(world_size=1)
    except Exception as exc:  # noqa: BLE001
        return {"unknown": err(exc), "where": where(fn)}
    return {"max_num_batched_tokens": jsonable(tokens), "max_num_seqs": jsonable(seqs), "where": where(fn)}


# ----------------------------------------------------------------------------- main

# Third-party packages that do not depend on the device: imported once in the parent of
# --multi, before the per-device fork (vllm itself is imported only after the fork, once the
# device's stubs and fake platform are in place).
PREIMPORT = ("torch", "numpy", "pydantic", "transformers", "huggingface_hub", "tokenizers", "safetensors",
             "aiohttp", "fastapi", "openai", "msgspec", "zmq", "psutil", "cachetools", "regex", "gguf",
             "mistral_common", "cbor2", "blake3", "PIL", "tiktoken", "prometheus_client", "uvloop")


def main() -> None:
    global ROOT
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    ap.add_argument("--device", help="one run: a stubs.DEVICES name")
    ap.add_argument("--aiter", action="store_true")
    ap.add_argument("--out", help="one run: output file")
    ap.add_argument("--multi", help="several runs, forked one after another: name:device:aiter(0|1),...")
    ap.add_argument("--out-dir", help="with --multi: <name>.json files go here")
    ap.add_argument("--sections", default="dtypes,backends,validate,selection,flags,batch")
    ap.add_argument("--path", default="")
    a = ap.parse_args()
    ROOT = Path(a.root).resolve()
    here = str(Path(__file__).resolve().parent)
    stdlib = [p for p in sys.path if p and p.startswith(sys.base_prefix) and "site-packages" not in p]
    sys.path[:] = [str(ROOT), here] + [p for p in a.path.split(":") if p] + stdlib
    import stubs  # noqa: E402  (tools/derive/stubs.py)

    stubs.install_host()  # before torch is imported: its CUDA_HOME lookup sees the fixed answer
    if not a.multi:
        run_one(a.device, a.aiter, Path(a.out), a.sections)
        return
    import os

    for mod in PREIMPORT:
        try:
            importlib.import_module(mod)
        except Exception:  # noqa: BLE001  (absent here: the release imports it itself, or fails)
            pass
    for spec in a.multi.split(","):
        name, dev, aiter = spec.split(":")
        pid = os.fork()
        if pid == 0:
            try:
                run_one(dev, aiter == "1", Path(a.out_dir) / f"{name}.json", a.sections)
            finally:
                os._exit(0)
        os.waitpid(pid, 0)


def run_one(device_name: str, aiter: bool, out: Path, sections_arg: str) -> None:
    import stubs  # noqa: E402  (tools/derive/stubs.py)

    device = stubs.DEVICES[device_name]
    sections = set(sections_arg.split(","))
    result: dict = {"device": device_name, "aiter": aiter}
    try:
        stubs.install(ROOT, device, aiter=aiter)
        plat = stubs.set_platform(device)
        from vllm.platforms.interface import DeviceCapability
        ctx = {"cap": DeviceCapability(*device["cc"]), "platform": plat, "attn_types": ["decoder"]}
        try:
            from vllm.v1.attention.backend import AttentionType
            ctx["attn_types"] = [AttentionType.DECODER]
            ctx["decoder"] = AttentionType.DECODER
        except Exception:  # noqa: BLE001
            pass
        dt = cache_dtypes()
        result["cache_dtypes"] = dt
        ctx["dtypes"] = dt.get("values") or ["auto", "bfloat16", "fp8"]
        # Backend class methods of recent releases read the current VllmConfig (e.g.
        # get_supported_kernel_block_sizes); answer them under a default VllmConfig() when this
        # release can build one without a model (recorded in "config").
        import contextlib
        cfg_cm = contextlib.nullcontext()
        try:
            from vllm.config import VllmConfig, set_current_vllm_config
            cfg_cm = set_current_vllm_config(VllmConfig())
            result["config"] = "default VllmConfig()"
        except Exception as exc:  # noqa: BLE001
            result["config"] = "none: " + err(exc)
        cfg_cm.__enter__()
        if "backends" in sections:
            found, info = backends()
            result["registry"] = info
            names_by_cls = {}
            bres = {}
            for name, cls in sorted(found.items()):
                if isinstance(cls, str):
                    bres[name] = {"import_error": cls}
                    continue
                names_by_cls[(cls.__module__, cls.__qualname__)] = name
                ent = {"class": where(cls)}
                try:
                    ent["predicates"] = ask_predicates(cls, ctx)
                except Exception as exc:  # noqa: BLE001
                    ent["predicates_error"] = err(exc)
                if "validate" in sections:
                    try:
                        ent["validate"] = ask_validate(cls, ctx)
                    except Exception as exc:  # noqa: BLE001
                        ent["validate"] = {"unknown": err(exc)}
                bres[name] = ent
            result["backends"] = bres
            if "selection" in sections:
                try:
                    result["selection"] = ask_selection(ctx, names_by_cls)
                except Exception as exc:  # noqa: BLE001
                    result["selection"] = {"unknown": err(exc), "trace": traceback.format_exc()[-1500:]}
        if "flags" in sections:
            result["flags"] = ask_flags()
        if "batch" in sections:
            result["batch_defaults"] = ask_batch_defaults()
        result["stubs_used"] = sorted(set(stubs.STUB_LOG))
        result["host_asked"] = sorted(stubs.HOST_ASKED)
    except Exception as exc:  # noqa: BLE001
        result["fatal"] = err(exc)
        result["trace"] = traceback.format_exc()[-3000:]
    out.write_text(json.dumps(result, sort_keys=True, default=str))


if __name__ == "__main__":
    main()
