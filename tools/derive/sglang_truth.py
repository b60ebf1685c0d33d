"""SGLang truth tables: run each release's own ServerArgs resolution over a grid.

    python tools/derive/sglang_truth.py [--releases 0.5.2,0.5.23] [--jobs 2]

For SGLang 0.4.10.post2 and every final 0.5.x release on the index, fetches the wheel's Python
source (tools/derive/wheels.py) and, in one child process per release x GPU (device facts are
read at import time and cached), builds `ServerArgs(...)` for every cell of
kv_cache_dtype x attention_backend x model, lets the release's own post-init / resolution run
(`__post_init__`, or `resolve_once` where construction no longer resolves), then, where the
release still chooses the backend in the model runner, the runner's own
`model_specific_adjustment`. Writes tools/derive/tables/sglang/<version>.json (format:
tools/derive/README_sglang.md). Stubs: tools/derive/sglang_stubs.py.
"""

from __future__ import annotations

import argparse
import hashlib
import inspect
import json
import logging
import os
import random
import subprocess
import sys
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Dict, List, Optional

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
OUT_DIR = HERE / "tables" / "sglang"
CACHE = HERE / ".cache"
FORMAT = "kvlint/derived/sglang-truth/v2"

# Fields whose every change during resolution is recorded (with the assigning line).
WATCHED = (
    "attention_backend", "prefill_attention_backend", "decode_attention_backend", "kv_cache_dtype",
    "page_size", "mem_fraction_static", "chunked_prefill_size", "max_running_requests",
    "cuda_graph_max_bs", "disable_cuda_graph", "disable_radix_cache", "disable_hybrid_swa_memory",
    "swa_full_tokens_ratio", "enable_dp_attention", "dp_size", "context_length", "max_total_tokens",
    "hicache_io_backend", "disable_chunked_prefix_cache", "speculative_algorithm",
)
# Default fills recorded in `defaults`, dropped from the per-cell rewrite lists.
DEFAULT_FIELDS = ("mem_fraction_static", "chunked_prefill_size", "cuda_graph_max_bs", "max_running_requests")
# Final values reported per cell.
REPORTED = ("attention_backend", "prefill_attention_backend", "decode_attention_backend",
            "kv_cache_dtype", "page_size", "disable_hybrid_swa_memory", "disable_cuda_graph",
            "disable_radix_cache", "enable_dp_attention")
# The CLI flags kvlint reads (by dest name) and their spellings per release.
FLAG_DESTS = ("kv_cache_dtype", "attention_backend", "prefill_attention_backend",
              "decode_attention_backend", "mem_fraction_static", "max_total_tokens", "page_size",
              "context_length", "tp_size", "pp_size", "dp_size", "chunked_prefill_size",
              "max_running_requests", "swa_full_tokens_ratio", "disable_hybrid_swa_memory",
              "quantization_param_path", "cuda_graph_max_bs", "config")
MEM_SIZES_GB = (24, 40, 48, 80, 141, 192)
# Real packages (tools/derive/requirements/sglang-deps.txt, installed by derive_env.py into
# .cache/sglang-deps) instead of placeholders: SGLang >= 0.5.2x builds its ServerArgs records on
# msgspec.Struct, whose field semantics a placeholder cannot imitate; gguf (and numpy under it)
# are imported for real on the config path, and a placeholder answers differently.


def ensure_deps(cache_dir: Path) -> Path:
    """.cache/sglang-deps as its lock file pins it (built when missing; refused when it differs)."""
    import derive_env

    target = Path(cache_dir) / "sglang-deps"
    if not target.is_dir():
        derive_env.setup(["sglang-deps"], Path(cache_dir))
    derive_env.check_tool()
    derive_env.check_dir("sglang-deps", Path(cache_dir))
    return target


MEM_TPS = (1, 2, 4, 8)


def rel(path: str, src_root: str) -> str:
    p = os.path.abspath(path)
    root = os.path.abspath(src_root)
    return os.path.relpath(p, root) if p.startswith(root + os.sep) else os.path.basename(p)


# ============================ child process ======================================================

class Recorder:
    """Wraps ServerArgs.__setattr__: every change of a WATCHED field after the field was first set
    is recorded as [field, old, new, where] (where = the SGLang line that assigned it)."""

    def __init__(self, src_root: str):
        self.src_root = os.path.abspath(src_root)
        self.events: List[list] = []
        self.active = False

    def where(self, depth: int = 2) -> str:
        f = sys._getframe(depth)
        while f is not None:
            co = f.f_code
            if (co.co_filename.startswith(self.src_root) and co.co_name not in ("__setattr__", "__init__")
                    and "arg_utils" not in co.co_filename):
                return f"{rel(co.co_filename, self.src_root)}:{co.co_name}:{f.f_lineno}"
            if co.co_filename.startswith(self.src_root) and co.co_name == "__init__" and \
                    os.path.basename(co.co_filename) == "model_runner.py":
                return f"{rel(co.co_filename, self.src_root)}:{co.co_name}:{f.f_lineno}"
            f = f.f_back
        return "?"

    def wrap(self, cls):
        original = cls.__setattr__
        rec = self

        def __setattr__(obj, name, value):
            if rec.active and name in WATCHED:
                d = getattr(obj, "__dict__", {})
                if name in d and d[name] != value:
                    rec.events.append([name, jsonable(d[name]), jsonable(value), rec.where()])
            original(obj, name, value)

        cls.__setattr__ = __setattr__


class LogCapture(logging.Handler):
    def __init__(self, src_root):
        super().__init__(logging.WARNING)
        self.src_root = src_root
        self.records: List[list] = []

    def emit(self, record):
        try:
            msg = record.getMessage()
        except Exception:  # noqa: BLE001
            msg = str(record.msg)
        self.records.append([msg[:300], f"{rel(record.pathname, self.src_root)}:{record.funcName}:{record.lineno}"])


def jsonable(v: Any) -> Any:
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        return round(v, 6)
    if isinstance(v, (list, tuple)):
        return [jsonable(x) for x in v]
    return str(v)


def error_where(exc: BaseException, src_root: str) -> str:
    tb = traceback.extract_tb(exc.__traceback__)
    root = os.path.abspath(src_root)
    for fr in reversed(tb):
        if os.path.abspath(fr.filename).startswith(root):
            return f"{rel(fr.filename, root)}:{fr.name}:{fr.lineno}"
    return "?"


def argparse_table(ServerArgs) -> Dict[str, Any]:
    parser = argparse.ArgumentParser(add_help=False)
    ServerArgs.add_cli_args(parser)
    flags: Dict[str, Any] = {}
    for action in parser._actions:  # noqa: SLF001 - the parser SGLang builds
        if action.dest in FLAG_DESTS or any(o == "--config" for o in action.option_strings):
            entry = {"options": sorted(action.option_strings)}
            if action.choices is not None:
                entry["choices"] = [jsonable(c) for c in action.choices]
            default = action.default
            if default is not argparse.SUPPRESS:
                entry["default"] = jsonable(default)
            if action.type is not None:
                entry["type"] = getattr(action.type, "__name__", str(action.type))
            flags.setdefault(action.dest, entry)
    return flags


def child(args) -> None:
    sys.path.insert(0, str(HERE))
    import sglang_stubs as stubs
    from sglang_models import GRID_MODELS, hf_config_fields, load_catalog

    random.seed(0)
    gpu = dict(stubs.GPUS[args.gpu])
    catalog = load_catalog()
    current = {"fields": None}

    def get_config(*a, **k):
        f = dict(current["fields"])
        f["torch_dtype"] = stubs.dtype_of(f.get("torch_dtype"))
        if "text_config" in f:
            f["text_config"] = dict(f["text_config"], torch_dtype=f["torch_dtype"])
        return stubs.FakeHFConfig(**f)

    import stubs as host_stubs  # tools/derive/stubs.py: the fixed host answers (nvcc, CUDA_HOME)
    host_stubs.install_host()
    stubs.install(args.src, gpu, get_config)
    if args.deps:
        sys.path.insert(1, args.deps)
    src_root = os.path.abspath(args.src)
    logging.disable(logging.NOTSET)
    cap = LogCapture(src_root)
    root_logger = logging.getLogger()
    root_logger.addHandler(cap)
    root_logger.setLevel(logging.WARNING)

    import sglang.srt.server_args as sa_mod  # noqa: E402
    stubs.patch_sglang_functions()
    ServerArgs = sa_mod.ServerArgs
    rec = Recorder(src_root)
    rec.wrap(ServerArgs)
    final_value = wrap_declarations(rec)

    result: Dict[str, Any] = {"gpu": args.gpu}
    flags = argparse_table(ServerArgs)
    if args.gpu == "sm90":
        result["flags"] = flags
    dtypes = list(flags["kv_cache_dtype"].get("choices") or ["auto"])
    backends = ["auto"] + list(flags["attention_backend"].get("choices") or [])

    runner_cls, runner_note = load_runner(src_root)
    result["runner"] = runner_note

    def make(model_key: str, kv: str, be: Optional[str], **extra):
        current["fields"] = hf_config_fields(GRID_MODELS[model_key], catalog)
        kwargs = dict(model_path=f"fake/{GRID_MODELS[model_key]}", kv_cache_dtype=kv,
                      attention_backend=be, random_seed=0)
        kwargs.update(extra)
        cap.records.clear()
        rec.events.clear()
        rec.active = True
        outcome: Dict[str, Any] = {}
        try:
            sa = ServerArgs(**kwargs)
            if hasattr(sa, "resolve_once"):
                sa.resolve_once()
            if runner_cls is not None:
                run_runner_adjustment(runner_cls, sa, outcome, stubs)
            outcome["accepted"] = True
            for name in REPORTED:
                if hasattr(sa, name):
                    outcome[name] = jsonable(final_value(sa, name))
            # The runner's own fraction as a factor of the resolved one (1.0, or aiter's 0.85):
            # the absolute value differs per GPU only and would make every cell's outcome unique.
            runner_mfs = outcome.pop("runner_mem_fraction_static", None)
            base_mfs = final_value(sa, "mem_fraction_static") if hasattr(sa, "mem_fraction_static") else None
            if isinstance(runner_mfs, (int, float)) and isinstance(base_mfs, (int, float)) and base_mfs:
                outcome["runner_mem_fraction_factor"] = round(runner_mfs / base_mfs, 4)
            outcome["_sa"] = {name: jsonable(final_value(sa, name)) for name in
                              ("mem_fraction_static", "chunked_prefill_size", "cuda_graph_max_bs",
                               "max_running_requests", "page_size") if hasattr(sa, name)}
        except BaseException as exc:  # noqa: BLE001 - any refusal is a result
            if isinstance(exc, KeyboardInterrupt):
                raise
            outcome["accepted"] = False
            outcome["error"] = {"type": type(exc).__name__, "message": str(exc)[:400],
                                "where": error_where(exc, src_root)}
        finally:
            rec.active = False
        outcome["rewrites"] = [e for e in rec.events if e[0] in WATCHED]
        outcome["warnings"] = sorted({tuple(r) for r in cap.records})
        return outcome

    if args.aiter_factor:
        Path(args.out).write_text(json.dumps(aiter_factor_cells(make), sort_keys=True, default=str))
        return

    cells: Dict[str, Any] = {}
    for model_key in GRID_MODELS:
        for be in backends:
            for kv in dtypes:
                o = make(model_key, kv, None if be == "auto" else be)
                o.pop("_sa", None)
                cells.setdefault(model_key, {}).setdefault(be, {})[kv] = o
    result["cells"] = cells
    result["axes"] = {"kv_cache_dtype": dtypes, "attention_backend": backends,
                      "model": {k: GRID_MODELS[k] for k in GRID_MODELS}}

    if args.gpu == "sm90":
        result["defaults"] = defaults_sweep(make, stubs, gpu)
    result["stubbed"] = sorted({m.split(".")[0] if not m.startswith("sglang") else m for m in stubs.STUBBED})
    Path(args.out).write_text(json.dumps(result, sort_keys=True, default=str))


AITER_ENV = "SGLANG_AITER_HONOR_EXPLICIT_MEM_FRACTION"


def aiter_factor_cells(make) -> Dict[str, Any]:
    """The fraction the release ends up with for aiter against triton (tools/derive/
    sglang_aiter_factor.py): per model (Llama-3.1-8B: 131072 tokens of context, gemma-2: 8192),
    default and explicit fraction, and the explicit one with AITER_ENV on; the fraction the
    arguments resolve to times the runner's own factor where the runner runs."""
    out: Dict[str, Any] = {}
    for model_key in ("llama", "gemma2"):
        for case, extra, env in (("default", {}, None), ("explicit", {"mem_fraction_static": 0.8}, None),
                                 ("explicit_env_on", {"mem_fraction_static": 0.8}, "1")):
            row: Dict[str, Any] = {}
            for be in ("aiter", "triton"):
                if env is None:
                    os.environ.pop(AITER_ENV, None)
                else:
                    os.environ[AITER_ENV] = env
                o = make(model_key, "auto", be, **extra)
                os.environ.pop(AITER_ENV, None)
                if not o.get("accepted"):
                    row[be] = {"error": o.get("error")}
                    continue
                mfs = o["_sa"]["mem_fraction_static"] * o.get("runner_mem_fraction_factor", 1.0)
                row[be] = {"attention_backend": o.get("attention_backend"), "mem_fraction_static": round(mfs, 6),
                           "set_at": [r[3] for r in o.get("rewrites", []) if r[0] == "mem_fraction_static"
                                      and "_handle_gpu_memory_settings" not in r[3]]}
                if "runner_mem_fraction_factor" in o:
                    row[be]["runner_factor"] = o["runner_mem_fraction_factor"]
            if "mem_fraction_static" in row.get("aiter", {}) and "mem_fraction_static" in row.get("triton", {}):
                row["factor"] = round(row["aiter"]["mem_fraction_static"] / row["triton"]["mem_fraction_static"], 4)
            out.setdefault(model_key, {})[case] = row
    return out


def wrap_declarations(rec: Recorder):
    """From ~0.5.2x SGLang no longer assigns resolved values to ServerArgs: handlers call
    `declare_resolution(server_args, source, **fields)` and readers use `resolution_result`.
    Record each declaration of a WATCHED field like an assignment (where = the declaring line,
    plus SGLang's own source label) and read final values through resolution_result."""
    ov = sys.modules.get("sglang.srt.arg_groups.overrides")
    if ov is None or not hasattr(ov, "declare_resolution"):
        return lambda sa, name: getattr(sa, name)
    original, result = ov.declare_resolution, ov.resolution_result

    def declare_resolution(server_args, source, **fields):
        if rec.active:
            for k, v in fields.items():
                if k in WATCHED:
                    try:
                        old = result(server_args, k)
                    except Exception:  # noqa: BLE001
                        old = None
                    if old != v:
                        rec.events.append([k, jsonable(old), jsonable(v), f"{rec.where()} [{source}]"])
        return original(server_args, source, **fields)

    for mod in list(sys.modules.values()):
        d = getattr(mod, "__dict__", None)
        if d and d.get("declare_resolution") is original:
            d["declare_resolution"] = declare_resolution
    return lambda sa, name: result(sa, name, getattr(sa, name))


def load_runner(src_root: str):
    """The ModelRunner class when this release still picks/validates the attention backend in
    ModelRunner.model_specific_adjustment (<= ~0.5.3); else None."""
    path = Path(src_root) / "sglang/srt/model_executor/model_runner.py"
    if not path.is_file():
        return None, "no model_runner.py"
    text = path.read_text()
    if "def model_specific_adjustment" not in text or "attention_backend" not in text.split(
            "def model_specific_adjustment", 1)[1].split("\n    def ", 1)[0]:
        return None, "backend resolved in server_args only"
    from sglang.srt.model_executor import model_runner as mr
    return mr.ModelRunner, "ModelRunner.model_specific_adjustment also run"


class _StopInit(Exception):
    pass


def run_runner_adjustment(runner_cls, sa, outcome, stubs) -> None:
    """Run ModelRunner.__init__ up to and including model_specific_adjustment (what a real
    start-up does before loading weights), then stop."""
    from sglang.srt.configs.model_config import ModelConfig
    stubs.patch_sglang_functions()
    mc = ModelConfig.from_server_args(sa)
    original = runner_cls.model_specific_adjustment

    def adjusted(self):
        original(self)
        outcome["runner_mem_fraction_static"] = jsonable(getattr(self, "mem_fraction_static", None))
        raise _StopInit

    runner_cls.model_specific_adjustment = adjusted
    try:
        params = inspect.signature(runner_cls.__init__).parameters
        values = dict(model_config=mc, mem_fraction_static=sa.mem_fraction_static, gpu_id=0,
                      tp_rank=0, tp_size=sa.tp_size, moe_ep_rank=0, moe_ep_size=getattr(sa, "ep_size", 1),
                      pp_rank=0, pp_size=sa.pp_size, nccl_port=0, server_args=sa, dp_rank=None,
                      is_draft_worker=False)
        kwargs = {k: values.get(k) for k in params if k != "self" and
                  (k in values or params[k].default is inspect.Parameter.empty)}
        try:
            runner_cls(**kwargs)
        except _StopInit:
            pass
    finally:
        runner_cls.model_specific_adjustment = original


def defaults_sweep(make, stubs, gpu) -> Dict[str, Any]:
    """mem_fraction_static / chunked_prefill_size / cuda_graph_max_bs / max_running_requests /
    page_size as the release defaults them: Llama-3.1-8B, kv auto, backend unset, per GPU memory
    size x tp (the release's own post-init on the fake GPU with that memory)."""
    out: Dict[str, Any] = {}
    for gb in MEM_SIZES_GB:
        for tp in MEM_TPS:
            stubs.set_memory_mib(gb * 1024)
            o = make("llama", "auto", None, tp_size=tp)
            sa = o.pop("_sa", None)
            key = f"{gb}GB_tp{tp}"
            if sa is None:
                out[key] = {"error": o.get("error")}
                continue
            out[key] = dict(sa)
            where = [e[3] for e in o["rewrites"] if e[0] == "mem_fraction_static"]
            out[key]["mem_fraction_static_set_at"] = where[-1] if where else None
    stubs.set_memory_mib(gpu["mem_mib"])
    return out


# ============================ parent process =====================================================

def releases(selected: Optional[str]) -> List[str]:
    sys.path.insert(0, str(HERE))
    import sglang_wheels
    return selected.split(",") if selected else sglang_wheels.releases()


def run_child(src: Path, gpu: str, out: Path) -> Dict[str, Any]:
    env = dict(os.environ, PYTHONHASHSEED="0", PYTHONDONTWRITEBYTECODE="1")
    proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", "--src", str(src),
                           "--gpu", gpu, "--out", str(out)], capture_output=True, text=True, env=env,
                          timeout=1800)
    if proc.returncode != 0 or not out.is_file():
        return {"gpu": gpu, "child_error": (proc.stderr or proc.stdout)[-3000:]}
    return json.loads(out.read_text())


def source_digest(src: Path, files: List[str]) -> Dict[str, str]:
    return {f: hashlib.sha256((src / f).read_bytes()).hexdigest()[:16] for f in files if (src / f).is_file()}


def assemble(version: str, src: Path, parts: List[Dict[str, Any]]) -> Dict[str, Any]:
    """One deterministic document per release: outcomes interned, cells indexed into them."""
    parts = json.loads(json.dumps(parts))  # compaction below edits the outcomes; keep the caller's
    outcomes: List[str] = []
    index: Dict[str, int] = {}

    def intern(o: Dict[str, Any]) -> int:
        key = json.dumps(o, sort_keys=True)
        if key not in index:
            index[key] = len(outcomes)
            outcomes.append(key)
        return index[key]

    doc: Dict[str, Any] = {"format": FORMAT, "engine": "sglang", "release": version}
    grid: Dict[str, Any] = {}
    # Compaction: default fills of memory knobs live in `defaults`, not in every cell; warnings
    # logged in at least a quarter of the cells (deprecations, environment notes) are listed once.
    from collections import Counter
    seen = Counter()
    total = 0
    for part in parts:
        for bes in part.get("cells", {}).values():
            for kv in bes.values():
                for o in kv.values():
                    total += 1
                    seen.update({tuple(w) for w in o.get("warnings", [])})
    common = sorted(w for w, n in seen.items() if total and n * 4 >= total)
    doc["common_warnings"] = [list(w) for w in common]
    for part in parts:
        for bes in part.get("cells", {}).values():
            for kv in bes.values():
                for o in kv.values():
                    o["rewrites"] = [r for r in o.get("rewrites", []) if r[0] not in DEFAULT_FIELDS]
                    o["warnings"] = [w for w in o.get("warnings", []) if tuple(w) not in set(common)]
    # Compaction (v2): the rewrite and warning records repeat across thousands of cells; each is
    # stored once, in first-seen order, and an outcome lists their indices.
    lists: Dict[str, List[str]] = {"rewrites": [], "warnings": []}
    seen_at: Dict[str, Dict[str, int]] = {"rewrites": {}, "warnings": {}}
    for part in parts:
        for bes in part.get("cells", {}).values():
            for kv in bes.values():
                for o in kv.values():
                    for field in ("rewrites", "warnings"):
                        refs = []
                        for item in o.get(field, []):
                            key = json.dumps(item, sort_keys=True)
                            if key not in seen_at[field]:
                                seen_at[field][key] = len(lists[field])
                                lists[field].append(key)
                            refs.append(seen_at[field][key])
                        o[field] = refs
    doc["rewrite_list"] = [json.loads(k) for k in lists["rewrites"]]
    doc["warning_list"] = [json.loads(k) for k in lists["warnings"]]
    errors = {}
    for part in parts:
        gpu = part["gpu"]
        if "child_error" in part:
            errors[gpu] = part["child_error"]
            continue
        grid[gpu] = {m: {b: {k: intern(o) for k, o in kv.items()} for b, kv in bes.items()}
                     for m, bes in part["cells"].items()}
        doc.setdefault("axes", dict(part["axes"], gpu={g: {k: v for k, v in __import__("sglang_stubs").GPUS[g].items()}
                                                       for g in sorted(p["gpu"] for p in parts)}))
        if "flags" in part:
            doc["flags"] = part["flags"]
            doc["defaults"] = part.get("defaults")
        doc["runner"] = part.get("runner")
        doc.setdefault("stubs", {})["auto_stubbed_modules"] = sorted(
            set(doc.get("stubs", {}).get("auto_stubbed_modules", [])) | set(part.get("stubbed", [])))
    doc["grid"] = grid
    doc["outcomes"] = [json.loads(o) for o in outcomes]
    if errors:
        doc["child_errors"] = errors
    import derive_env
    import stubs as host_stubs
    doc["environment"] = derive_env.record("sglang-deps", dict(
        host_stubs.HOST, torch_version_cuda=__import__("sglang_stubs").CUDA_VERSION,
        torch_version_hip=__import__("sglang_stubs").HIP_VERSION))
    doc["source"] = {"package": "sglang", "version": version,
                     "sha256_16": source_digest(src, ["sglang/srt/server_args.py",
                                                      "sglang/srt/model_executor/model_runner.py"])}
    return doc


def outcome(doc: Dict[str, Any], gpu: str, model: str, backend: str, dtype: str) -> Dict[str, Any]:
    """One cell's outcome with its rewrite and warning records expanded (v2 stores indices)."""
    o = dict(doc["outcomes"][doc["grid"][gpu][model][backend][dtype]])
    o["rewrites"] = [doc["rewrite_list"][i] for i in o.get("rewrites", [])]
    o["warnings"] = [doc["warning_list"][i] for i in o.get("warnings", [])]
    return o


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--src")
    ap.add_argument("--gpu")
    ap.add_argument("--out")
    ap.add_argument("--aiter-factor", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--deps", default=str(CACHE / "sglang-deps"))
    ap.add_argument("--releases", help="comma-separated versions (default: 0.4.10.post2 + every 0.5.x)")
    ap.add_argument("--gpus", default=",".join(["sm80", "sm86", "sm89", "sm90", "sm100", "sm120", "gfx942"]))
    ap.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 2)))
    ap.add_argument("--out-dir", default=str(OUT_DIR))
    ap.add_argument("--cache-dir", default=str(CACHE))
    ap.add_argument("--reassemble", action="store_true",
                    help="rebuild the documents from the cached child outputs only")
    args = ap.parse_args(argv)
    if args.child:
        child(args)
        return 0
    sys.path.insert(0, str(HERE))
    import sglang_wheels
    ensure_deps(Path(args.cache_dir))
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    tmp = Path(args.cache_dir) / "truth-parts"
    tmp.mkdir(parents=True, exist_ok=True)
    gpus = args.gpus.split(",")
    for version in releases(args.releases):
        src = sglang_wheels.fetch(version, Path(args.cache_dir))
        if args.reassemble:
            parts = [json.loads((tmp / f"{version}-{g}.json").read_text()) for g in gpus]
        else:
            with ThreadPoolExecutor(args.jobs) as pool:
                parts = list(pool.map(lambda g: run_child(src, g, tmp / f"{version}-{g}.json"), gpus))
        doc = assemble(version, src, parts)
        (out_dir / f"{version}.json").write_text(json.dumps(doc, sort_keys=True, separators=(",", ":")) + "\n")
        print(version, "cells", sum(1 for g in doc["grid"].values() for m in g.values() for b in m.values() for _ in b),
              "outcomes", len(doc["outcomes"]), "errors", list(doc.get("child_errors", {})), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
