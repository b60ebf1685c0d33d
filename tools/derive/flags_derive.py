"""Engine flag tables from each release's own argument parser.

    python tools/derive/flags_derive.py                       # vLLM >= 0.11.0 and kvlint's SGLang releases
    python tools/derive/flags_derive.py --engine vllm --releases 0.33.0,0.32.0
    python tools/derive/flags_derive.py --reassemble          # rebuild the JSON from cached parts only

For every vLLM release on the package index from 0.11.0 (final and post releases,
wheels.list_releases) and every SGLang release kvlint's catalog knows (the releases with a truth
table in tools/derive/tables/sglang/, i.e. rules/catalog/engines/sglang.yaml `releases`), fetch
the wheel's Python source (wheels.py / sglang_wheels.py; the wheel is deleted), then, in a fresh
child process per release, BUILD THAT RELEASE'S OWN PARSER the way its launcher does and read
every option spelling it registers (`parser._option_string_actions`):

* vLLM: `vllm serve`'s parser: a FlexibleArgumentParser with subparsers, then
  `ServeSubcommand().subparser_init(subparsers)` (vllm/entrypoints/cli/serve.py), which calls
  `make_arg_parser` (vllm/entrypoints/openai/cli_args.py; vllm/entrypoints/common/cli_args.py in
  later releases) and `AsyncEngineArgs.add_cli_args`. The imports run under tools/derive/stubs.py
  (compiled extensions, GPU kernel packages; torch is the real CPU build), as vllm_probe.py does.
* SGLang: `prepare_server_args([])` (python/sglang/srt/server_args.py) with
  `ArgumentParser.parse_args` intercepted: the parser exactly as `python -m sglang.launch_server`
  / `sglang serve` build it (`ServerArgs.add_cli_args`), under tools/derive/sglang_stubs.py.

Per spelling: `dest`, `takes` (the argparse Action's arity: `bool` BooleanOptionalAction and
subclasses, `flag` nargs=0 (store_true/store_false/store_const), `list` nargs +/*, `optional`
nargs ?, `json` one value whose type converter is a strict JSON parser (asked: it turns '{}' into
a non-string and refuses 'x'), `value` one value; nargs=N>1: `valueN`), `dict` (a `value` whose converter also
reads a JSON object: vLLM's union_dict_and_str), `neg` (the spelling sets
the destination to False: `--no-x`, vLLM 0.33's `--disable-x` of EnableDisableAction, store_false),
`choices` (when at most 64), `deprecated` (argparse/vLLM `deprecated=`), `hidden` (help=SUPPRESS).

A release whose parser cannot be built even under the stubs is written as
`{"status": "not-built", "error": ...}`; nothing is filled in for it.

Output (deterministic, sorted): kvlint/adapters/flag_data/<engine>.json:

    {"format": "kvlint/flag-table/v1", "engine": "vllm", "generated_by": "tools/derive/flags_derive.py",
     "releases": ["0.11.0", ...],                       # derived releases, ascending
     "not_built": {"X": "error"},                       # releases tried and not built
     "sources": {"0.11.0": "vllm==0.11.0 wheel: vllm/engine/arg_utils.py, ..."},
     "signatures": [{"takes": "value", "dest": "block_size", "choices": [...]}, ...],
     "options": {"--block-size": [[first, last, sig], ...]}}

An interval [first, last, sig] says the spelling exists with signature `signatures[sig]` in every
derived release from `releases[first]` to `releases[last]` (indices, inclusive); outside the
intervals the derived releases do not register it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Dict, List, Optional

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
CACHE = HERE / ".cache"
PARTS = CACHE / "flag-parts"
OUT_DIR = REPO / "kvlint" / "adapters" / "flag_data"
FORMAT = "kvlint/flag-table/v1"
VLLM_FIRST = "0.11.0"
MAX_CHOICES = 64


# ============================ child process ======================================================

def _rel(path: str, root: str) -> Optional[str]:
    path = os.path.abspath(path)
    return os.path.relpath(path, root) if path.startswith(root + os.sep) else None


def _record_registrations(root: str) -> Dict[int, str]:
    """Wrap argparse's add_argument: for each action, the release file that registered it."""
    where: Dict[int, str] = {}
    original = argparse._ActionsContainer.add_argument  # noqa: SLF001

    def add_argument(self, *args, **kwargs):
        action = original(self, *args, **kwargs)
        f = sys._getframe(1)
        while f is not None:
            rel = _rel(f.f_code.co_filename, root)
            # the first release frame that is not a parser class's own add_argument override
            if rel is not None and f.f_code.co_name != "add_argument":
                where[id(action)] = rel
                break
            f = f.f_back
        return action

    argparse._ActionsContainer.add_argument = add_argument  # noqa: SLF001
    return where


def _strict_json(convert) -> bool:
    """The release's own type converter parses JSON and nothing else."""
    if convert is None or convert is str:
        return False
    try:
        parsed = convert("{}")
    except Exception:  # noqa: BLE001 - e.g. a dataclass with required fields: look deeper
        parsed = _JSONISH
    if isinstance(parsed, str) or parsed is None:
        return False
    if parsed is _JSONISH and not _mentions_json(convert):
        return False
    try:
        convert("x")
    except Exception:  # noqa: BLE001 - refusing a non-JSON word is what a JSON type does
        return True
    return False


_JSONISH = object()


def _mentions_json(fn, depth: int = 0) -> bool:
    import json as _json

    if fn is _json.loads:
        return True
    if depth > 3:
        return False
    code = getattr(fn, "__code__", None)
    if code is not None and "json" in " ".join(code.co_names + code.co_varnames):
        return True
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            if callable(cell.cell_contents) and _mentions_json(cell.cell_contents, depth + 1):
                return True
        except ValueError:
            continue
    return False


def _takes(action) -> str:
    if isinstance(action, argparse.BooleanOptionalAction):
        return "bool"
    nargs = action.nargs
    if nargs == 0:
        return "flag"
    if nargs in ("+", "*"):
        return "list"
    if nargs == "?":
        return "optional"
    if nargs == argparse.REMAINDER:
        return "remainder"
    if isinstance(nargs, int) and nargs > 1:
        return f"value{nargs}"
    if _strict_json(action.type):
        return "json"
    return "value"


def _json_or_str(convert) -> bool:
    """The converter turns a JSON object into a mapping but keeps any other word as a string
    (vLLM's union_dict_and_str: `--hf-overrides`, `--additional-config`); vLLM's dotted keys
    (`--x.key v`, re-emitted as one JSON object) work for these too."""
    if convert is None or convert is str:
        return False
    try:
        parsed = convert('{"a": 1}')
        other = convert("x")
    except Exception:  # noqa: BLE001
        return False
    return not isinstance(parsed, str) and isinstance(other, str)


def _negated(parser, action, spelling: str, takes: str) -> bool:
    if isinstance(action, argparse._StoreFalseAction):  # noqa: SLF001
        return True
    if takes != "bool":
        return False
    ns = argparse.Namespace()
    action(parser, ns, None, spelling)  # the release's own __call__ decides
    return getattr(ns, action.dest) is False


def _jsonable(v: Any) -> Any:
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    return str(getattr(v, "value", v)) if hasattr(v, "value") and not callable(v.value) else str(v)


def describe(parser, where: Dict[int, str]) -> Dict[str, Any]:
    deprecated = set(getattr(parser, "_deprecated", ()) or ())
    options: Dict[str, Any] = {}
    files = set()
    for spelling, action in sorted(parser._option_string_actions.items()):  # noqa: SLF001
        if action.dest == "help" or isinstance(action, (argparse._HelpAction, argparse._VersionAction)):  # noqa: SLF001
            takes = "flag"
        else:
            takes = _takes(action)
        entry: Dict[str, Any] = {"dest": action.dest, "takes": takes}
        if _negated(parser, action, spelling, takes):
            entry["neg"] = True
        if takes == "value" and _json_or_str(action.type):
            entry["dict"] = True
        if action.choices is not None:
            try:
                choices = [_jsonable(c) for c in action.choices]
            except TypeError:
                choices = None
            if choices is not None and len(choices) <= MAX_CHOICES:
                entry["choices"] = sorted({str(c) for c in choices if c is not None})
        if getattr(action, "deprecated", False) or action in deprecated:
            entry["deprecated"] = True
        if action.help == argparse.SUPPRESS:
            entry["hidden"] = True
        if id(action) in where:
            files.add(where[id(action)])
        options[spelling] = entry
    return {"options": options, "files": sorted(files)}


class _Built(Exception):
    def __init__(self, parser):
        super().__init__("parser built")
        self.parser = parser


def _stub_names(modules, package: str) -> List[str]:
    """Stubbed modules: third-party ones by top-level package, the release's own in full."""
    return sorted({m if m.startswith(package) else m.split(".")[0] for m in modules})


def build_vllm(root: str) -> Dict[str, Any]:
    import stubs  # tools/derive/stubs.py

    device = stubs.DEVICES["sm90"]
    stubs.install(Path(root), device)
    stubs.set_platform(device)
    where = _record_registrations(root)
    try:
        from vllm.utils.argparse_utils import FlexibleArgumentParser
    except ImportError:
        from vllm.utils import FlexibleArgumentParser
    errors = []
    try:
        from vllm.entrypoints.cli.serve import ServeSubcommand

        top = FlexibleArgumentParser(description="vLLM CLI")
        subparsers = top.add_subparsers(required=False, dest="subparser")
        parser = ServeSubcommand().subparser_init(subparsers)
        builder = "vllm/entrypoints/cli/serve.py ServeSubcommand.subparser_init"
    except Exception as exc:  # noqa: BLE001
        raise RuntimeError("vllm serve parser: " + "".join(traceback.format_exception_only(exc)).strip()) from exc
    out = describe(parser, where)
    out["builder"] = builder
    out["stubbed"] = _stub_names(stubs.STUB_LOG, "vllm")
    out["errors"] = errors
    return out


def build_sglang(root: str) -> Dict[str, Any]:
    import sglang_stubs as stubs  # tools/derive/sglang_stubs.py

    stubs.install(root, dict(stubs.GPUS["sm90"]), stubs.hf_config_factory({}))
    where = _record_registrations(os.path.abspath(root))
    import sglang.srt.server_args as sa_mod

    stubs.patch_sglang_functions()
    original = argparse.ArgumentParser.parse_args

    def intercept(self, *a, **k):
        raise _Built(self)

    argparse.ArgumentParser.parse_args = intercept
    try:
        sa_mod.prepare_server_args([])
        raise RuntimeError("prepare_server_args returned without parsing")
    except _Built as built:
        parser = built.parser
    finally:
        argparse.ArgumentParser.parse_args = original
    out = describe(parser, where)
    out["builder"] = "sglang/srt/server_args.py prepare_server_args"
    out["stubbed"] = _stub_names(stubs.STUBBED, "sglang")
    return out


def child(args) -> None:
    out = Path(args.out)
    result: Dict[str, Any]
    try:
        if args.child == "vllm":
            # same interpreter layout as vllm_probe.py: release root, tools/derive, deps, torch, stdlib
            stdlib = [p for p in sys.path if p and p.startswith(sys.base_prefix) and "site-packages" not in p]
            sys.path[:] = [str(Path(args.root).resolve()), str(HERE)] + [p for p in args.path.split(":") if p] + stdlib
            result = build_vllm(str(Path(args.root).resolve()))
        else:
            sys.path.insert(0, str(HERE))
            if args.path:
                sys.path[1:1] = [p for p in args.path.split(":") if p]
            result = build_sglang(str(Path(args.root).resolve()))
        result["status"] = "ok"
    except BaseException as exc:  # noqa: BLE001 - a release we cannot build is recorded, not guessed
        if isinstance(exc, KeyboardInterrupt):
            raise
        result = {"status": "not-built",
                  "error": "".join(traceback.format_exception_only(exc)).strip()[-600:],
                  "trace": traceback.format_exc()[-3000:]}
    out.write_text(json.dumps(result, sort_keys=True))


# ============================ parent process =====================================================

def _version_key(v: str):
    sys.path.insert(0, str(HERE))
    import wheels
    return wheels.version_key(v)


def vllm_releases() -> List[str]:
    import wheels
    return [v for v in wheels.list_releases("vllm") if wheels.version_key(v) >= wheels.version_key(VLLM_FIRST)]


def sglang_releases() -> List[str]:
    """The SGLang releases kvlint derives (one truth table each, tools/derive/tables/sglang/)."""
    return sorted((p.stem for p in (HERE / "tables" / "sglang").glob("*.json")), key=_version_key)


def _torch_site() -> List[str]:
    import importlib.util
    spec = importlib.util.find_spec("torch")
    return [str(Path(spec.origin).parent.parent)] if spec and spec.origin else []


def run_release(engine: str, version: str, timeout: int) -> Dict[str, Any]:
    import sglang_wheels
    import wheels

    part = PARTS / engine / f"{version}.json"
    part.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    try:
        if engine == "vllm":
            root = wheels.fetch_release_source("vllm", version, CACHE)
        else:
            root = sglang_wheels.fetch(version, CACHE)
    except Exception as exc:  # noqa: BLE001
        doc = {"status": "not-built", "error": f"source not fetched: {str(exc)[-600:]}"}
        part.write_text(json.dumps(doc, sort_keys=True))
        return doc
    if engine == "vllm":
        import vllm_derive
        path = vllm_derive.deps_for(root) + _torch_site()
        cmd = [sys.executable, "-I", str(Path(__file__).resolve()), "--child", "vllm"]
    else:
        import sglang_truth
        path = [str(sglang_truth.ensure_deps(CACHE))]
        cmd = [sys.executable, str(Path(__file__).resolve()), "--child", "sglang"]
    cmd += ["--root", str(root), "--out", str(part), "--path", ":".join(path)]
    env = dict(os.environ, PYTHONHASHSEED="0", PYTHONDONTWRITEBYTECODE="1")
    if part.exists():
        part.unlink()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=str(CACHE))
        tail = (proc.stderr or proc.stdout)[-2000:]
    except subprocess.TimeoutExpired:
        tail = f"child timed out after {timeout}s"
    if not part.is_file():
        part.write_text(json.dumps({"status": "not-built", "error": "child wrote nothing: " + tail[-600:]}))
    doc = json.loads(part.read_text())
    print(f"{engine} {version}: {doc['status']} ({len(doc.get('options', {}))} spellings, "
          f"{time.time() - t0:.0f}s){'  ' + doc.get('error', '')[-200:] if doc['status'] != 'ok' else ''}",
          flush=True)
    return doc


def signature(entry: Dict[str, Any]) -> Dict[str, Any]:
    return {k: entry[k] for k in ("takes", "dest", "neg", "dict", "choices", "deprecated", "hidden") if k in entry}


def assemble(engine: str, versions: List[str], parts: Dict[str, Dict[str, Any]]) -> Dict[str, Any]:
    ok = [v for v in versions if parts[v].get("status") == "ok"]
    not_built = {v: parts[v].get("error", "?") for v in versions if parts[v].get("status") != "ok"}
    sigs: List[str] = []
    sig_index: Dict[str, int] = {}
    options: Dict[str, List[List[int]]] = {}
    spellings = sorted({s for v in ok for s in parts[v]["options"]})
    for spelling in spellings:
        intervals: List[List[int]] = []
        for i, v in enumerate(ok):
            entry = parts[v]["options"].get(spelling)
            if entry is None:
                continue
            key = json.dumps(signature(entry), sort_keys=True)
            if key not in sig_index:
                sig_index[key] = len(sigs)
                sigs.append(key)
            s = sig_index[key]
            if intervals and intervals[-1][1] == i - 1 and intervals[-1][2] == s:
                intervals[-1][1] = i
            else:
                intervals.append([i, i, s])
        options[spelling] = intervals
    package = "vllm" if engine == "vllm" else "sglang"
    sources = {}
    for v in ok:
        files = parts[v].get("files", [])
        sources[v] = f"{package}=={v} wheel: {parts[v].get('builder', '?')}; registered in " + ", ".join(files)
    return {
        "format": FORMAT, "engine": engine, "generated_by": "tools/derive/flags_derive.py",
        "releases": ok, "not_built": not_built, "sources": sources,
        "stubbed": sorted({m for v in ok for m in parts[v].get("stubbed", [])}),
        "signatures": [json.loads(s) for s in sigs], "options": options,
    }


def write(doc: Dict[str, Any], out_dir: Path) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{doc['engine']}.json"
    # one option a line: compact, deterministic, and a diff shows which spellings changed
    lines = []
    for key in ("format", "engine", "generated_by", "releases", "not_built", "sources", "stubbed", "signatures"):
        lines.append(f"{json.dumps(key)}: {json.dumps(doc[key], sort_keys=True, separators=(',', ':'))}")
    opts = ",\n".join(f"  {json.dumps(k)}: {json.dumps(v, separators=(',', ':'))}" for k, v in sorted(doc["options"].items()))
    text = "{\n" + ",\n".join(lines) + ',\n"options": {\n' + opts + "\n}}\n"
    json.loads(text)  # well-formed
    path.write_text(text)
    return path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--child", choices=("vllm", "sglang"), help=argparse.SUPPRESS)
    ap.add_argument("--root")
    ap.add_argument("--out")
    ap.add_argument("--path", default="")
    ap.add_argument("--engine", choices=("vllm", "sglang", "all"), default="all")
    ap.add_argument("--releases", help="comma-separated versions (default: every release, see above)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=int, default=900)
    ap.add_argument("--reassemble", action="store_true", help="only rebuild the JSON from cached parts")
    ap.add_argument("--missing", action="store_true", help="only derive releases without a cached part")
    ap.add_argument("--out-dir", default=str(OUT_DIR))
    args = ap.parse_args(argv)
    if args.child:
        child(args)
        return 0
    sys.path.insert(0, str(HERE))
    engines = ("vllm", "sglang") if args.engine == "all" else (args.engine,)
    for engine in engines:
        everything = vllm_releases() if engine == "vllm" else sglang_releases()
        todo = args.releases.split(",") if args.releases else everything
        if args.missing:
            todo = [v for v in todo if not (PARTS / engine / f"{v}.json").is_file()]
        if not args.reassemble:
            with ThreadPoolExecutor(args.jobs) as pool:
                list(pool.map(lambda v: run_release(engine, v, args.timeout), todo))
        # the document always covers every release with a cached part (a partial run adds to it)
        known = sorted({*everything, *(p.stem for p in (PARTS / engine).glob("*.json"))}, key=_version_key)
        parts = {v: json.loads((PARTS / engine / f"{v}.json").read_text()) for v in known
                 if (PARTS / engine / f"{v}.json").is_file()}
        doc = assemble(engine, [v for v in known if v in parts], parts)
        path = write(doc, Path(args.out_dir))
        print(f"{engine}: {len(doc['releases'])} releases derived, {len(doc['not_built'])} not built, "
              f"{len(doc['options'])} spellings -> {path} ({path.stat().st_size} bytes)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
