"""Derive vLLM truth tables by running each release's own code.

    python tools/derive/vllm_derive.py 0.17.0            # one release
    python tools/derive/vllm_derive.py --all             # every final release >= 0.11.0 on the index
    python tools/derive/vllm_derive.py --root DIR --version X --out-dir D   # an already-extracted tree

For each release: fetch the wheel's Python source (wheels.py), then run vllm_probe.py once
per device of the grid (stubs.DEVICES; ROCm twice: VLLM_ROCM_USE_AITER=0 and =1) in a fresh
interpreter, and merge the answers into tools/derive/tables/vllm/<version>.json
(format: tools/derive/README.md). Deterministic: sorted keys, no timestamps.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE))

import derive_env  # noqa: E402
import stubs  # noqa: E402
import table as T  # noqa: E402
import wheels  # noqa: E402

CACHE = HERE / ".cache"
OUT_DIR = REPO / "tools" / "derive" / "tables" / "vllm"
FIRST = "0.11.0"
SCHEMA = "kvlint-derived-vllm/1"
# (run name, device, aiter)
RUNS = [(d, d, False) for d in stubs.DEVICES] + [
    (d + "+aiter", d, True) for d, v in stubs.DEVICES.items() if v["platform"] == "rocm"]


# ----------------------------------------------------------------------------- environment

def torch_site() -> list[str]:
    """torch's site-packages (the real CPU torch the releases import); [] if not installed."""
    import importlib.util
    spec = importlib.util.find_spec("torch")
    return [str(Path(spec.origin).parent.parent)] if spec and spec.origin else []


def deps_dir_for(root: Path, cache: Path | None = None) -> str | None:
    """The pinned dependency dir (derive_env.LOCKS: `deps`, `deps-tf5`) whose transformers
    satisfies the release's Requires-Dist; None when neither is set up."""
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version

    cache = CACHE if cache is None else cache
    spec = SpecifierSet("")
    for meta in root.glob("*.dist-info/METADATA"):
        for line in meta.read_text(errors="replace").splitlines():
            if line.startswith("Requires-Dist: transformers") and "extra ==" not in line:
                spec = SpecifierSet(line.split("transformers", 1)[1].split(";")[0].strip().strip("()"))
    for name in ("deps", "deps-tf5"):
        versions = derive_env.installed(cache / name).get("transformers", [])
        if len(versions) == 1 and Version(versions[0]) in spec:
            return name
    return "deps" if (cache / "deps").is_dir() else None


def deps_for(root: Path) -> list[str]:
    name = deps_dir_for(root)
    return [str(CACHE / name)] if name else []


def run_chunk(root: Path, runs: list, extra_path: list[str], tmp: Path, timeout: int, sections: str) -> dict:
    """Several device runs in one probe process: it imports the device-independent packages once,
    then forks a fresh child per run (each child sets up its stubs and imports vLLM itself)."""
    spec = ",".join(f"{n}:{d}:{int(a)}" for n, d, a in runs)
    cmd = [sys.executable, "-I", str(HERE / "vllm_probe.py"), "--root", str(root), "--multi", spec,
           "--out-dir", str(tmp), "--path", ":".join(extra_path), "--sections", sections]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout * len(runs), cwd=str(tmp))
        tail = proc.stderr[-2000:]
    except subprocess.TimeoutExpired:
        tail = f"probe timed out after {timeout * len(runs)}s"
    out = {}
    for n, _, _ in runs:
        f = tmp / f"{n}.json"
        out[n] = json.loads(f.read_text()) if f.is_file() else {"fatal": "no output", "stderr": tail}
    return out


def run_probe(root: Path, run: tuple, extra_path: list[str], tmp: Path, timeout: int, sections: str) -> dict:
    name, device, aiter = run
    out = tmp / f"{name}.json"
    cmd = [sys.executable, "-I", str(HERE / "vllm_probe.py"), "--root", str(root), "--device", device,
           "--out", str(out), "--path", ":".join(extra_path), "--sections", sections]
    if aiter:
        cmd.append("--aiter")
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=str(tmp))
    except subprocess.TimeoutExpired:
        return {"fatal": f"probe timed out after {timeout}s"}
    if not out.is_file():
        return {"fatal": f"probe exited {proc.returncode} without output", "stderr": proc.stderr[-2000:]}
    return json.loads(out.read_text())


# ----------------------------------------------------------------------------- merging

def by_device(values: dict, order: list[str]):
    """{device: value-or-tree} -> one tree with `device` on top (identical branches merged)."""
    present = [d for d in order if d in values]
    keys = {d: json.dumps(values[d], sort_keys=True) for d in present}
    if len(set(keys.values())) == 1 and len(present) == len(order):
        return values[present[0]]
    groups: dict = {}
    for d in present:
        groups.setdefault(keys[d], []).append(d)
    return {"by": "device", "cases": {",".join(ds): values[ds[0]] for _, ds in
                                      sorted(groups.items(), key=lambda kv: order.index(kv[1][0]))}}


def arg_tree(entry: dict):
    """A predicate's answers on one device as a tree over its argument."""
    if "value" in entry:
        return entry["value"]
    if "error" in entry:
        return {"error": entry["error"]}
    if "unknown" in entry:
        return {"unknown": entry["unknown"]}
    pairs = entry["values"]  # [[arg, answer], ...] in grid order
    arg = entry["arg"]
    answers = [v for _, v in pairs]
    if all(isinstance(v, bool) for v in answers):
        if all(answers):
            return True
        if not any(answers):
            return False
        return {"by": arg, "true": [k for k, v in pairs if v]}
    groups: dict = {}
    first: dict = {}
    for k, v in pairs:
        key = json.dumps(v, sort_keys=True)
        groups.setdefault(key, []).append(str(k))
        first.setdefault(key, v)
    if len(groups) == 1:
        return answers[0]
    return {"by": arg, "cases": {",".join(ks): first[key] for key, ks in groups.items()}}


def merge(version: str, root: Path, raws: dict, wheel_names: list[str]) -> dict:
    order = [r[0] for r in RUNS if r[0] in raws]
    ok = [r for r in order if "fatal" not in raws[r]]
    table: dict = {"schema": SCHEMA, "engine": "vllm", "version": version, "wheel": wheel_names}
    table["grid"] = {
        "devices": {r[0]: {"platform": stubs.DEVICES[r[1]]["platform"], "cc": "{}.{}".format(*stubs.DEVICES[r[1]]["cc"]),
                           "gpu": stubs.DEVICES[r[1]]["name"], "aiter": r[2]} for r in RUNS if r[0] in raws},
        "head_size": list(_probe_consts()["HEAD_SIZES"]),
        "block_size": list(_probe_consts()["BLOCK_SIZES"]),
        "model_dtype": "bfloat16",
    }
    unknown = []
    for r in order:
        if "fatal" in raws[r]:
            unknown.append({"device": r, "what": "whole probe", "reason": raws[r]["fatal"]})
    if not ok:
        table["unknown"] = unknown
        return table
    first = raws[ok[0]]
    table["cache_dtypes"] = first.get("cache_dtypes")
    table["grid"]["kv_cache_dtype"] = (first.get("cache_dtypes") or {}).get("values")
    table["registry"] = first.get("registry")
    stubs_used = sorted({s for r in ok for s in raws[r].get("stubs_used", [])})
    table["stubs_used"] = stubs_used

    # backends
    names = sorted({n for r in ok for n in raws[r].get("backends", {})})
    bout = {}
    for n in names:
        ent: dict = {}
        per = {r: raws[r]["backends"].get(n) for r in ok}
        imp = {r: (v or {}).get("import_error") for r, v in per.items()}
        if any(imp.values()):
            ent["import_error"] = by_device({r: imp[r] or None for r in ok}, ok)
            unknown.append({"backend": n, "what": "import", "reason": sorted({v for v in imp.values() if v})})
        live = {r: v for r, v in per.items() if v and not v.get("import_error")}
        if not live:
            bout[n] = ent
            continue
        anyv = next(iter(live.values()))
        ent["class"] = anyv.get("class")
        preds = sorted({p for v in live.values() for p in v.get("predicates", {})})
        pout = {}
        for p in preds:
            entries = {r: v["predicates"][p] for r, v in live.items() if p in v.get("predicates", {})}
            w = next(iter(entries.values()))["where"]
            pout[p] = {"where": w, "answer": by_device({r: arg_tree(e) for r, e in entries.items()}, list(live))}
        ent["predicates"] = pout
        vals = {r: v.get("validate") for r, v in live.items() if v.get("validate")}
        if vals:
            v0 = next(iter(vals.values()))
            if "unknown" in v0:
                ent["validate"] = {"unknown": v0["unknown"], "where": v0.get("where")}
            else:
                reasons = sorted({x for v in vals.values() for x in v.get("reasons", {})})
                ent["validate"] = {
                    "where": v0["where"], "fixed": v0["fixed"], "variants": v0["variants"],
                    "supports_combination": v0.get("supports_combination"),
                    "reasons": {x: by_device({r: v.get("reasons", {}).get(x, False) for r, v in vals.items()},
                                             list(vals)) for x in reasons},
                }
        bout[n] = ent
    table["backends"] = bout

    # selection
    sels = {r: raws[r].get("selection") for r in ok if raws[r].get("selection")}
    if sels:
        s0 = next(iter(sels.values()))
        if any("tree" not in s for s in sels.values()):
            table["selection"] = {"unknown": {r: s.get("unknown") for r, s in sels.items() if "tree" not in s},
                                  "where": s0.get("where")}
            unknown.append({"what": "selection", "reason": sorted({str(s.get("unknown")) for s in sels.values()
                                                                   if "tree" not in s})})
        table["selection"] = dict(table.get("selection", {}), **{
            "where": s0.get("where"), "platform_where": {r: s.get("platform_where") for r, s in sels.items()
                                                         if s.get("platform_where")},
            "priorities_where": {r: s.get("priorities_where") for r, s in sels.items() if s.get("priorities_where")},
            "config": s0.get("config"), "dims": ["device"] + s0.get("dims", []),
            "block_sizes": s0.get("block_sizes"),
            "variants": s0.get("variants"),
            "tree": by_device({r: s["tree"] for r, s in sels.items() if "tree" in s}, [r for r in ok if r in sels
                                                                                         and "tree" in sels[r]]),
        })
        for key in ("platform_where", "priorities_where"):
            vals2 = table["selection"][key]
            uniq = {json.dumps(v, sort_keys=True) for v in vals2.values()}
            if len(uniq) <= 2:  # cuda + rocm files: keep one per platform
                per_plat = {}
                for r, v in vals2.items():
                    per_plat.setdefault(table["grid"]["devices"][r]["platform"], v)
                table["selection"][key] = per_plat
    # flags/defaults: device independent (taken from the first device that answered)
    for r in ok:
        if raws[r].get("flags"):
            table["flags"] = raws[r]["flags"]
            break
    bd = {r: raws[r].get("batch_defaults") for r in ok if raws[r].get("batch_defaults")}
    if bd:
        table["batch_defaults"] = by_device(bd, list(bd))
    table["unknown"] = unknown
    return finalize(table)


_ERR_TAIL = [
    # the selector's error repeats the whole query ("... for cuda with head_size: 128, dtype: ...");
    # the query is the cell's own coordinates, so it is dropped
    (re.compile(r"(No valid attention backend found for \w+)\b.*"), r"\1"),
    (re.compile(r"(is not valid for this configuration)\. Reason: (.*)"), r"\1. Reason: \2"),
]


def _norm_error(v):
    if isinstance(v, str) and v.startswith("error:"):
        for rx, rep in _ERR_TAIL:
            v = rx.sub(rep, v)
        return v[:240]
    return v


def normalize_selection(tab: dict) -> None:
    """Shorten selector error leaves and re-compress the selection tree (in place)."""
    sel = tab.get("selection") or {}
    tree = sel.get("tree")
    if tree is None:
        return
    g = tab["grid"]
    variants = sel.get("variants") or ["plain"]
    dtypes = g.get("kv_cache_dtype") or []
    blocks = sel.get("block_sizes") or g["block_size"]
    per_dev = {}
    for dev in g["devices"]:
        t2 = {"by": "use_mla", "cases": {}}
        if T.lookup(tree, {"device": dev, "use_mla": False, "variant": "plain", "kv_cache_dtype": dtypes[0],
                           "head_size": 128, "block_size": 16}) is None:
            continue  # this device did not answer
        for mla in (False, True):
            heads = [h for h in g["head_size"] if (h == 576) == mla]
            cells = {}
            for var in variants:
                for d in dtypes:
                    for h in heads:
                        for b in blocks:
                            pt = {"device": dev, "use_mla": mla, "variant": var, "kv_cache_dtype": d,
                                  "head_size": h, "block_size": b}
                            cells[(var, d, h, b)] = _norm_error(T.lookup(tree, pt))
            t2["cases"][str(mla)] = T.compress(cells, ["variant", "kv_cache_dtype", "head_size", "block_size"],
                                               {"variant": variants, "kv_cache_dtype": dtypes, "head_size": heads,
                                                "block_size": blocks})
        if t2["cases"]["False"] == t2["cases"]["True"]:
            t2 = t2["cases"]["False"]
        per_dev[dev] = t2
    # devices in sorted order, not the grid dict's: a table read back from its sorted-keys JSON
    # lists them sorted, so this keeps finalize() idempotent across a write and a re-read
    sel["tree"] = by_device(per_dev, sorted(per_dev))


# Backend methods kept in the table: the ones kvlint's catalog models. (The probe asks every
# supports_*/is_*/get_supported_* method; the rest -- alibi, mm-prefix, DCP, batch invariance ...
# -- are dropped here to keep the file small.)
KEEP_PREDICATES = {
    "get_name", "is_mla", "is_sparse", "supports_kv_cache_dtype", "supports_head_size", "get_supported_head_sizes",
    "supports_block_size", "get_supported_kernel_block_sizes", "get_preferred_block_size",
    "supports_compute_capability", "supports_sink", "supports_per_head_quant_scales", "supports_sliding_window",
}


def _compact_where(obj):
    if isinstance(obj, dict):
        if set(obj) == {"file", "line", "qualname"}:
            return f"{obj['file']}:{obj['line']} {obj['qualname']}" if obj["file"] else obj["qualname"]
        return {k: _compact_where(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_compact_where(v) for v in obj]
    return obj


_WHERE_RX = re.compile(r"^(\S+\.py):(\d+) (\S+)$")


def _factor_sources(obj, sources: dict):
    """Replace each "file:line qualname" by "qualname" and collect sources[qualname] = "file:line"
    (many backends share inherited methods; the file path is written once)."""
    if isinstance(obj, dict):
        return {k: _factor_sources(v, sources) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_factor_sources(v, sources) for v in obj]
    if isinstance(obj, str):
        m = _WHERE_RX.match(obj)
        if m:
            loc = f"{m.group(1)}:{m.group(2)}"
            if sources.setdefault(m.group(3), loc) == loc:
                return m.group(3)
    return obj


def finalize(tab: dict) -> dict:
    """Normalize selector errors, drop predicates kvlint does not model, write provenance as
    qualnames resolved by the top-level "sources" {qualname: "file:line"}. Idempotent."""
    normalize_selection(tab)
    for name, b in (tab.get("backends") or {}).items():
        if "predicates" in b:
            b["predicates"] = {k: v for k, v in b["predicates"].items() if k in KEEP_PREDICATES
                               and not (k == "get_name" and v.get("answer") == name)}
    sources = dict(tab.get("sources") or {})
    tab.pop("sources", None)
    tab = _factor_sources(_compact_where(tab), sources)
    tab["sources"] = dict(sorted(sources.items()))
    return tab


def _probe_consts() -> dict:
    ns: dict = {}
    src = (HERE / "vllm_probe.py").read_text()
    for line in src.splitlines():
        if line.startswith(("HEAD_SIZES =", "BLOCK_SIZES =")):
            exec(line, ns)  # noqa: S102 - our own constant lines
    return ns


# ----------------------------------------------------------------------------- driver

def derive(version: str, root: Path | None = None, out_dir: Path = OUT_DIR, jobs: int = 2,
           timeout: int = 900, runs: list | None = None, extra_path: list[str] | None = None,
           sections: str = "dtypes,backends,validate,selection,flags,batch") -> Path:
    t0 = time.time()
    if root is None:
        root = wheels.fetch_release_source("vllm", version, CACHE)
    root = Path(root).resolve()
    marker = root / ".derive-complete"
    wheel_names = [ln for ln in marker.read_text().splitlines()[1:] if ln] if marker.is_file() else []
    dep_dir = None
    if extra_path is None:
        # the pinned environment (tools/derive/requirements/): refuse anything else, the table
        # would silently differ from one derived elsewhere
        dep_dir = deps_dir_for(root)
        if dep_dir is None:
            raise derive_env.EnvironmentMismatch("no dependency dir: run python tools/derive/derive_env.py setup")
        derive_env.check_tool()
        derive_env.check_dir(dep_dir)
    path = (extra_path if extra_path is not None else [str(CACHE / dep_dir)]) + torch_site()
    runs = runs or RUNS
    raws = {}
    with tempfile.TemporaryDirectory(prefix=f"derive-{version}-") as tmp:
        chunks = [runs[i::jobs] for i in range(jobs) if runs[i::jobs]]
        with ThreadPoolExecutor(max_workers=jobs) as ex:
            futs = [ex.submit(run_chunk, root, c, path, Path(tmp), timeout, sections) for c in chunks]
            for f in futs:
                raws.update(f.result())
        raws = {r[0]: raws[r[0]] for r in runs}
    table = merge(version, root, raws, wheel_names)
    table["environment"] = dict(derive_env.record(dep_dir, stubs.HOST), host_asked=sorted(
        {q for r in raws.values() for q in r.get("host_asked", [])}))
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / f"{version}.json"
    out.write_text(json.dumps(table, sort_keys=True, separators=(",", ":")) + "\n")
    if out_dir.resolve() == OUT_DIR.resolve():
        import vllm_registry  # the backend names the probe does not ask (other devices): compare_catalog

        vllm_registry.record(version, vllm_registry.read_tree(root))
    print(f"vllm {version}: {out} ({out.stat().st_size // 1024} KiB, {time.time() - t0:.0f}s)", flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("versions", nargs="*")
    ap.add_argument("--all", action="store_true", help="every final release >= 0.11.0 on the index")
    ap.add_argument("--missing", action="store_true", help="with --all: skip releases that have a table")
    ap.add_argument("--root", help="an extracted release tree (skips the download)")
    ap.add_argument("--version", help="version label for --root")
    ap.add_argument("--out-dir", default=str(OUT_DIR))
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--devices", help="comma-separated run names (default: all)")
    ap.add_argument("--compare", action="store_true",
                    help="afterwards compare kvlint's catalog with every table (tools/derive/update_known.py)")
    ap.add_argument("--renormalize", action="store_true",
                    help="only re-apply finalize() to the tables already in --out-dir")
    a = ap.parse_args()
    if a.renormalize:
        for p in sorted(Path(a.out_dir).glob("*.json")):
            tab = finalize(json.loads(p.read_text()))
            p.write_text(json.dumps(tab, sort_keys=True, separators=(",", ":")) + "\n")
            print(f"{p.name}: {p.stat().st_size // 1024} KiB")
        return
    runs = [r for r in RUNS if not a.devices or r[0] in a.devices.split(",")]
    out_dir = Path(a.out_dir)
    if a.root:
        derive(a.version or "unknown", Path(a.root), out_dir, a.jobs, runs=runs)
        if a.compare:  # as for a downloaded release (the README's one command, with --root)
            import update_known
            update_known.main()
        return
    versions = list(a.versions)
    if a.all:
        from packaging.version import Version
        versions = [v for v in wheels.list_releases("vllm") if Version(v) >= Version(FIRST)]
    failed = []
    for v in versions:
        if a.missing and (out_dir / f"{v}.json").is_file():
            continue
        try:
            derive(v, None, out_dir, a.jobs, runs=runs)
        except Exception as exc:  # noqa: BLE001  one release failing must not stop the rest
            failed.append(v)
            print(f"vllm {v}: FAILED {type(exc).__name__}: {exc}", flush=True)
    if a.compare:
        import update_known
        update_known.main()
    if failed:
        print("failed:", ", ".join(failed))
        sys.exit(1)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
