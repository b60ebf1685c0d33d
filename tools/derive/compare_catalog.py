"""Compare kvlint's vLLM engine catalog with the derived truth tables.

    python tools/derive/compare_catalog.py [--tables tools/derive/tables/vllm] [--out FILE]

Loads the catalog through kvlint's public loader (kvlint.catalog.engines.load_engine_catalog,
EngineCatalog.release, EngineRelease.backend(...).accepts(...), and
kvlint.catalog.selection.predict_backend) and asks it, for every release table and grid cell,
the same questions the release's code answered:

* accept: would backend B take (kv dtype, head size, GPU, sinks | per-head scales)? Code:
  validate_configuration returned no reason (block-size reasons are compared separately, since
  the selector validates with block_size=None from 0.12 on). Catalog: no `select`-stage problem
  in `accepts(...)` (the stage the catalog says validate_configuration checks).
* block: supports_block_size(b) vs the catalog's block rule.
* select: which backend auto-selection picks (or that it fails) vs predict_backend.

Backends present: every backend of the release's registry must be in the catalog, and every
catalogued backend in the registry. A backend the catalog lists with `checks: unknown` (device and
attention kind only) is compared for presence alone. The tables hold only what runs on a CUDA or
ROCm GPU; the names of the others (CPU, TPU, XPU backends, placeholders) come from
tables/vllm_registry.json (vllm_registry.py: the release's enum read from its wheel) and are
compared the same way.

Not compared: the sliding-window variant (accepts() has no such input) and MLA with attention
sinks (no such model).

Prints per release the agreeing/disagreeing cell counts, then the distinct disagreements,
grouped over releases, devices and values, with the code location that proves each.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO))

import table as T  # noqa: E402
from kvlint.catalog.engines import guess_quantized, load_engine_catalog  # noqa: E402
from kvlint.catalog.selection import predict_backend  # noqa: E402

REASON_PRED = {
    "head_size not supported": "supports_head_size",
    "kv_cache_dtype not supported": "supports_kv_cache_dtype",
    "block_size not supported": "supports_block_size",
    "sink setting not supported": "supports_sink",
    "compute capability not supported": "supports_compute_capability",
    "per-head quant scales not supported": "supports_per_head_quant_scales",
    "MLA not supported": "is_mla",
    "non-MLA not supported": "is_mla",
    "sparse not supported": "is_sparse",
    "non-sparse not supported": "is_sparse",
    "dtype not supported": "supports_dtype",
}
VARIANT_KW = {"plain": {}, "has_sink": {"has_sinks": True}, "use_per_head_quant_scales": {"per_head_scales": True}}


def vkey(v: str):
    from packaging.version import Version
    return Version(v)


def dev_args(table: dict, dev: str) -> dict:
    g = table["grid"]["devices"][dev]
    major, minor = (int(x) for x in g["cc"].split("."))
    if g["platform"] == "cuda":
        return {"platform": "cuda", "cc": (major, minor), "vendor": "nvidia", "aiter": False}
    return {"platform": "rocm", "cc": None, "vendor": "amd", "aiter": bool(g["aiter"])}


def loc(table: dict, ref) -> str:
    """A provenance reference (qualname, resolved by the table's "sources") as "file:line qualname"."""
    if not ref:
        return "?"
    src = (table.get("sources") or {}).get(ref)
    return f"{src} {ref}" if src else str(ref)


def reason_where(table: dict, backend: str, reason: str) -> str:
    b = table["backends"].get(backend, {})
    pred = REASON_PRED.get(reason)
    w = None
    if pred:
        w = (b.get("predicates", {}).get(pred) or {}).get("where")
    if w is None:
        w = (b.get("validate") or {}).get("supports_combination") or (b.get("validate") or {}).get("where")
    return loc(table, w)


# The release from which a platform sizes blocks by the backend's get_preferred_block_size when
# --block-size is unset (update_block_size_for_backend, vllm/platforms/interface.py v0.18.0 L427).
# ROCm 0.18 overrides it with a no-op (vllm/platforms/rocm.py v0.18.0 L713-716: check_and_update_config
# sets 64 only under VLLM_ROCM_USE_AITER_UNIFIED_ATTENTION=1 and VLLM_ROCM_USE_AITER=1, else 16,
# which the grid does not vary) and takes the shared one from 0.19.0.
PREFERRED_BLOCK_FROM = {"cuda": "0.18.0", "rocm": "0.19.0"}


def compare_release(cat, table: dict, groups: dict) -> dict:
    version = table["version"]
    counts = {"accept": [0, 0], "block": [0, 0], "select": [0, 0], "facts": [0, 0]}
    rel = cat.release("vllm", version)
    proxy = None
    if rel is None:
        # kvlint checks nothing for a release it does not know; to show what adding it to the
        # catalog would mean, compare it with the catalog's facts for the nearest lower release
        groups[("release", "catalog does not know this release", "", "")].append((version,) + ("-",) * 5)
        lower = [k for k in cat.known_versions("vllm") if vkey(k) < vkey(version)]
        if not lower:
            return {"known": False, "proxy": None, **counts}
        proxy = lower[-1]
        rel = cat.release("vllm", proxy)
    devices = list(table["grid"]["devices"])
    dtypes = table["grid"].get("kv_cache_dtype") or []
    heads = table["grid"]["head_size"]
    blocks = table["grid"]["block_size"]
    catalog_names = set(rel.backend_names())

    compare_facts(rel, table, groups, counts)

    # ---- backends present / absent
    code_names = {n for n, b in table.get("backends", {}).items() if "class" in b}
    for n in sorted(catalog_names - code_names):
        listed = rel.backend(n)
        if listed is not None and listed.platforms and not {"cuda", "rocm"} & set(listed.platforms):
            continue  # another device's backend: the probe never asks it; compare_registry does
        if n in table.get("backends", {}):
            ie = table["backends"][n].get("import_error")
            if isinstance(ie, dict):  # a tree over devices: show one message
                ie = next((x for x in json.dumps(ie).split('"') if "Error" in x), str(ie))
            groups[("backend", n, "the release has it, but its module does not import on a default "
                    "install (its package is not a requirement of the wheel)", f"code: {ie}")].append(
                (version,) + ("-",) * 5)
            continue
        groups[("backend", n, "catalog lists it, the release has no such backend", "")].append((version,) + ("-",) * 5)
    # the other direction: every backend of the release's registry (importable or not) must be in
    # the catalog, or kvlint calls a real backend unknown (KV204)
    for n in sorted(set(table.get("backends", {})) - catalog_names):
        groups[("backend", n, "the release's registry has it, the catalog does not list it",
                "")].append((version,) + ("-",) * 5)

    # ---- accept cells
    for name, b in sorted(table.get("backends", {}).items()):
        v = b.get("validate") or {}
        if "reasons" not in v:
            continue
        is_mla = bool(v["fixed"].get("use_mla"))
        is_sparse = bool(v["fixed"].get("use_sparse")) if is_mla else None  # validated with is_sparse()
        for dev in devices:
            da = dev_args(table, dev)
            cb = rel.backend(name, platform=da["platform"], is_mla=is_mla)
            if (cb is None or cb.name != name or (cb.platforms and da["platform"] not in cb.platforms)
                    or not cb.checks_known):  # listed by device and kind only: nothing to compare
                continue  # (backend() also answers by reported_name: ROCm FLASH_ATTN -> ROCM_AITER_FA)
            for variant in v["variants"]:
                if variant not in VARIANT_KW or (is_mla and variant == "has_sink"):
                    continue  # sliding window: the catalog's accepts() takes no such fact; no MLA model has sinks
                for d in dtypes:
                    for h in heads:
                        if (h == 576) != is_mla:
                            continue
                        pt = {"device": dev, "variant": variant, "kv_cache_dtype": d, "head_size": h,
                              "block_size": blocks[0]}
                        reasons = [r for r, tree in v["reasons"].items()
                                   if "block_size" not in r and T.lookup(tree, pt)]
                        code_ok = not reasons
                        verdict = cb.accepts(d, da["cc"], h, None, platform=da["platform"], is_mla=is_mla,
                                             aiter=da["aiter"], sparse=is_sparse, **VARIANT_KW[variant])
                        # gates (dtype list, head size, GPU, sinks, per-head scales, MLA, platform) are
                        # what validate_configuration checks, whatever stage the catalog files them
                        # under (0.11 has no validated selector: "init"); constraints only when the
                        # catalog says the selector checks them ("select")
                        sel_probs = [p for p in verdict.problems
                                     if p.kind != "block_size" and (not p.kind.startswith("constraint:")
                                                                    or p.stage == "select")]
                        cat_ok = not sel_probs
                        if cat_ok == code_ok:
                            counts["accept"][0] += 1
                            continue
                        counts["accept"][1] += 1
                        cell = (version, dev, variant, d, h, "-")
                        if cat_ok:
                            for r in sorted(reasons):
                                groups[("accept", name, "catalog accepts, code rejects",
                                        f"code: {r!r} ({reason_where(table, name, r)})")].append(cell)
                        else:
                            for p in sel_probs:
                                groups[("accept", name, "catalog rejects, code accepts",
                                        f"catalog: {p.kind} [{p.stage}]; code: {loc(table, v['where'])} returns []")].append(cell)
        # ---- block sizes (supports_block_size, where answered)
        pb = (b.get("predicates") or {}).get("supports_block_size")
        if pb and not isinstance(pb.get("answer"), dict) or (pb and "by" in pb.get("answer", {})):
            for dev in devices:
                da = dev_args(table, dev)
                cb = rel.backend(name, platform=da["platform"], is_mla=is_mla)
                if (cb is None or cb.name != name or (cb.platforms and da["platform"] not in cb.platforms)
                        or not cb.checks_known):  # listed by device and kind only: nothing to compare
                    continue
                for bs in blocks:
                    code_ok = T.lookup(pb["answer"], {"device": dev, "block_size": bs})
                    if not isinstance(code_ok, bool):
                        continue
                    cat_ok = cb.supports_block_size(bs, da["cc"], 576 if is_mla else 128)
                    if cat_ok == code_ok:
                        counts["block"][0] += 1
                        continue
                    counts["block"][1] += 1
                    what = "catalog accepts, code rejects" if cat_ok else "catalog rejects, code accepts"
                    groups[("block", name, what, f"supports_block_size ({loc(table, pb['where'])})")
                           ].append((version, dev, "-", "-", "-", bs))
        # ---- the block size without --block-size: the backend's get_preferred_block_size(16)
        # where the platform uses it (PREFERRED_BLOCK_FROM); kvlint's is the catalog's
        # preferred_block_size, else 16
        pp = (b.get("predicates") or {}).get("get_preferred_block_size")
        if pp:
            for dev in devices:
                da = dev_args(table, dev)
                if vkey(version) < vkey(PREFERRED_BLOCK_FROM[da["platform"]]):
                    continue
                cb = rel.backend(name, platform=da["platform"], is_mla=is_mla)
                if (cb is None or cb.name != name or (cb.platforms and da["platform"] not in cb.platforms)
                        or not cb.checks_known):  # listed by device and kind only: nothing to compare
                    continue
                for d in dtypes:
                    for h in heads:
                        if (h == 576) != is_mla:
                            continue
                        code = T.lookup(pp["answer"], {"device": dev, "kv_cache_dtype": d, "head_size": h,
                                                       "block_size": 16, "variant": "plain"})
                        if not isinstance(code, int) or isinstance(code, bool):
                            continue
                        mine = cb.preferred_block_size(da["cc"], h, d) or 16
                        counts["block"][0 if mine == code else 1] += 1
                        if mine != code:
                            groups[("block", name, f"default block size: catalog {mine}, code {code}",
                                    f"get_preferred_block_size ({loc(table, pp['where'])})")
                                   ].append((version, dev, "-", d, h, "-"))

    # ---- auto-selection
    sel = table.get("selection") or {}
    tree = sel.get("tree")
    predicted: dict = {}
    if tree is not None:
        pw = sel.get("priorities_where") or sel.get("platform_where") or {}
        for dev in devices:
            da = dev_args(table, dev)
            where = pw.get(da["platform"]) or (sel.get("platform_where") or {}).get(da["platform"]) or sel.get("where")
            wtxt = loc(table, where)
            for mla in (False, True):
                for variant in sel.get("variants") or ["plain"]:
                    if variant not in VARIANT_KW or (mla and variant == "has_sink"):
                        continue
                    for d in dtypes:
                        for h in heads:
                            if (h == 576) != mla:
                                continue
                            for bs in sel.get("block_sizes") or blocks:
                                pt = {"device": dev, "use_mla": mla, "variant": variant, "kv_cache_dtype": d,
                                      "head_size": h, "block_size": bs}
                                code = T.lookup(tree, pt)
                                if code is None:
                                    continue
                                kw = VARIANT_KW[variant]
                                # devices the catalog cannot tell apart (ROCm: no compute
                                # capability) ask the same question once, and so do block
                                # sizes that every backend of the release takes or refuses alike
                                pkey = (da["cc"], da["vendor"], da["aiter"], d, h, mla, variant,
                                        block_class(rel, da, mla, d, h, bs))
                                if pkey not in predicted:
                                    predicted[pkey] = predict_backend(
                                        rel, da["cc"], da["vendor"], d, h, mla,
                                        has_sinks=kw.get("has_sinks", False),
                                        block_size=None if bs == "default" else bs,
                                        per_head_scales=kw.get("per_head_scales", False),
                                        aiter=da["aiter"], sparse=False if mla else None)  # the probe selects with use_sparse False
                                s = predicted[pkey]
                                code_b = None if code.startswith("error") else code
                                if s is None:
                                    cat_b = "<no catalog rule>"
                                else:
                                    cat_b = s.backend
                                if s is not None and code_b and cat_b and cat_b != code_b:
                                    # ROCm AITER FA reports itself as FLASH_ATTN (get_name); so does the
                                    # catalog's ROCM_AITER_FA (reported_name)
                                    cb = rel.backend(cat_b, platform=da["platform"], is_mla=mla)
                                    if cb is not None and cb.reported_name == code_b:
                                        code_b = cat_b
                                if cat_b == code_b:
                                    counts["select"][0] += 1
                                    continue
                                counts["select"][1] += 1
                                what = f"catalog picks {cat_b or 'nothing (error)'}, code picks {code_b or 'nothing'}"
                                detail = re.sub(r"\b\d+\b", "#", code[:160]) + " " if code_b is None else ""
                                groups[("select", "MLA" if mla else "non-MLA", what,
                                        f"{detail}({wtxt})")].append((version, dev, variant, d, h, bs))
    return {"known": True, "proxy": proxy, **counts}


def block_class(rel, da: dict, mla: bool, dtype: str, head: int, bs) -> tuple:
    """What the catalog can see of a block size for one cell: whether each backend of the
    release takes it. predict_backend's answer depends on the block size only through that,
    unless a selection guard or a backend condition names block sizes (then the size itself)."""
    memo = rel.__dict__.setdefault("_compare_block_class", {})
    key = (da["cc"], da["platform"], mla, dtype, head, bs)
    if key not in memo:
        if bs == "default":
            memo[key] = ("default",)
        else:
            rule = rel.selection_rule(da["platform"], mla, da["cc"] if da["platform"] == "cuda" else None)
            # the backends predict_backend may ask: the rule's candidates
            cands = [rel.backend(i if isinstance(i, str) else i["backend"], platform=da["platform"], is_mla=mla)
                     for i in (rule.order if rule is not None else ())]
            cands = [b for b in cands if b is not None]
            by_size = rule is not None and "block_sizes" in json.dumps(rule.order, default=str)
            if by_size or any(b._conditions_ask_block_size() for b in cands):
                memo[key] = ("size", bs)
            else:
                info = rel.dtype(dtype)  # the quantized flag predict_backend hands accepts()
                q = info.quantized if info else guess_quantized(dtype)
                memo[key] = tuple(b.supports_block_size(bs, da["cc"], head, dtype, q) for b in cands)
    return memo[key]


def _fact(groups, counts, version, ok, subject, what, where):
    if ok:
        counts["facts"][0] += 1
    else:
        counts["facts"][1] += 1
        groups[("fact", subject, what, where)].append((version,) + ("-",) * 5)


def _tier(tiers, mem_gib: float, gpu: str):
    for t in tiers:
        if "min_memory_gib" in t and mem_gib < t["min_memory_gib"]:
            continue
        if any(x.lower() in gpu.lower() for x in t.get("exclude_gpus", ())):
            continue
        return t
    return None


def compare_facts(rel, table: dict, groups: dict, counts: dict) -> None:
    """Cache dtype literals, flags (features) and defaults."""
    import stubs

    version = table["version"]
    code_dt = list(table["grid"].get("kv_cache_dtype") or [])
    where_dt = loc(table, (table.get("cache_dtypes") or {}).get("where"))
    if code_dt:
        for d in code_dt:
            _fact(groups, counts, version, d in rel.dtypes, f"kv_cache_dtype {d}",
                  "the release's CacheDType has it; the catalog does not list it", where_dt)
        for d in rel.dtypes:
            if d not in code_dt:
                _fact(groups, counts, version, False, f"kv_cache_dtype {d}",
                      "the catalog lists it; the release's CacheDType has no such literal", where_dt)
    fl = table.get("flags") or {}
    flags = fl.get("flags") or {}
    fwhere = loc(table, fl.get("where"))
    if flags:
        def present(dest):
            return not flags.get(dest, {}).get("absent")

        for feat, dest in (("attention_backend_cli", "attention_backend"),
                           ("kv_cache_dtype_skip_layers", "kv_cache_dtype_skip_layers"),
                           ("calculate_kv_scales", "calculate_kv_scales")):
            info = rel.feature(feat)
            if info.status == "unknown":
                continue
            code = present(dest)
            spell = " / ".join(flags.get(dest, {}).get("options", [])) or dest
            _fact(groups, counts, version, info.available == code, f"flag {spell}",
                  f"catalog says {info.status}, the release's parser {'has' if code else 'has no'} it", fwhere)
            if code and info.status == "deprecated":
                dep = flags[dest].get("deprecated") or flags[dest].get("help_says_deprecated")
                _fact(groups, counts, version, bool(dep), f"flag {spell}",
                      "catalog says deprecated; the release's parser/help does not say so", fwhere)
        defaults = fl.get("defaults") or {}
        gmu = (defaults.get("gpu_memory_utilization") or {}).get("value")
        if gmu is not None and rel.default("gpu_memory_utilization") is not None:
            _fact(groups, counts, version, abs(gmu - rel.default("gpu_memory_utilization")) < 1e-9,
                  "default gpu_memory_utilization",
                  f"catalog {rel.default('gpu_memory_utilization')}, code {gmu}", loc(table, fl.get("engine_args")))
        dbs = (defaults.get("CacheConfig.DEFAULT_BLOCK_SIZE") or {}).get("value")
        if dbs is not None and rel.default("block_size") is not None:
            _fact(groups, counts, version, dbs == rel.default("block_size"), "default block_size",
                  f"catalog {rel.default('block_size')}, code CacheConfig.DEFAULT_BLOCK_SIZE {dbs}", "vllm/config/cache.py")
    bd = table.get("batch_defaults")
    tiers = (rel.default("max_num_batched_tokens") or {}).get("tiers") if isinstance(
        rel.default("max_num_batched_tokens"), dict) else None
    if bd and tiers:
        for dev, g in table["grid"]["devices"].items():
            if g["platform"] != "cuda":
                continue
            ans = T.lookup(bd, {"device": dev})
            if not isinstance(ans, dict) or "max_num_batched_tokens" not in ans:
                continue
            code = ans["max_num_batched_tokens"]
            dinfo = stubs.DEVICES[dev]
            t = _tier(tiers, dinfo["mem_gib"], dinfo["name"])
            if t is None:
                continue
            for ctx, key in (("UsageContext.OPENAI_API_SERVER", "serve"), ("UsageContext.LLM_CLASS", "llm")):
                if ctx in code:
                    _fact(groups, counts, version, code[ctx] == t[key],
                          f"default max_num_batched_tokens ({key}) on {dev} {dinfo['name']} {dinfo['mem_gib']} GiB",
                          f"catalog {t[key]}, code {code[ctx]}", loc(table, ans.get("where")))


def ranges(versions: list[str], order: list[str]) -> str:
    idx = sorted({order.index(v) for v in versions})
    out, start, prev = [], None, None
    for i in idx:
        if start is None:
            start = prev = i
        elif i == prev + 1:
            prev = i
        else:
            out.append((start, prev))
            start = prev = i
    if start is not None:
        out.append((start, prev))
    return ", ".join(order[a] if a == b else f"{order[a]}–{order[b]}" for a, b in out)


def summarize(values: list[str], limit: int = 12) -> str:
    uniq = list(dict.fromkeys(values))
    return ", ".join(uniq[:limit]) + (f" … (+{len(uniq) - limit})" if len(uniq) > limit else "")


_STRIP = {"where", "sources", "version", "wheel", "class", "platform_where", "priorities_where",
          "supports_combination", "stubs_used"}


def _content(o):
    """A table without its provenance and version: equal content = the code answered the same."""
    if isinstance(o, dict):
        return {k: _content(v) for k, v in o.items() if k not in _STRIP}
    if isinstance(o, list):
        return [_content(x) for x in o]
    return o


def _spec_strings(o, out: set) -> set:
    if isinstance(o, dict):
        for k, v in o.items():
            if k == "versions" and isinstance(v, str):
                out.add(v)
            else:
                _spec_strings(v, out)
    elif isinstance(o, list):
        for x in o:
            _spec_strings(x, out)
    return out


def catalog_signature(cat, version: str) -> tuple:
    """Which of the catalog's version ranges hold for `version` (and whether it is catalogued):
    two releases with the same signature get the same answers from every catalog question."""
    from kvlint.versions import version_matches
    specs = sorted(_spec_strings(cat.data.get("vllm") or {}, set()))
    return (version in cat.known_versions("vllm"),) + tuple(version_matches(version, s) for s in specs)


def merge_key(kind: str, subject: str, what: str, detail: str) -> tuple:
    """Groups whose detail differs only in line numbers (code moves between releases) merge."""
    return (kind, subject, what, re.sub(r"\.py:\d+", ".py", re.sub(r"\((vllm/[^()]*)\)", "(…)", detail)))


_WORKER_CAT = None


def _compare_one(path: str) -> tuple:
    """One release in a worker process (the catalog is the parent's, inherited by fork)."""
    groups: dict = defaultdict(list)
    counts = compare_release(_WORKER_CAT, json.loads(Path(path).read_text()), groups)
    return counts, dict(groups)


def compare_all(cat, tables_dir: Path, jobs: int = 0) -> tuple:
    """Compare every table; releases whose table content and catalog signature equal an
    already-compared release's reuse its answer (the same questions get the same answers).
    `jobs` > 1 compares releases in that many forked processes (0: one per CPU, at most 4).
    Returns (order, counts {version: counts}, groups {(kind, subject, what, detail): cells},
    same_as {version: representative})."""
    import multiprocessing
    import os

    global _WORKER_CAT
    paths = sorted(Path(tables_dir).glob("*.json"), key=lambda p: vkey(p.stem))
    order, counts, same_as = [], {}, {}
    groups: dict = defaultdict(list)
    seen: dict = {}
    todo = []
    probed: dict = {}
    for p in paths:
        t = json.loads(p.read_text())
        v = t["version"]
        order.append(v)
        probed[v] = set(t.get("backends", {}))
        sig = (json.dumps(_content(t), sort_keys=True), catalog_signature(cat, v))
        if sig in seen:
            same_as[v] = seen[sig]
            continue
        seen[sig] = v
        todo.append((v, str(p)))
    jobs = jobs or min(4, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1)
    if jobs > 1 and "fork" in multiprocessing.get_all_start_methods():
        _WORKER_CAT = cat
        with multiprocessing.get_context("fork").Pool(jobs) as pool:
            results = pool.map(_compare_one, [p for _, p in todo], chunksize=1)
        _WORKER_CAT = None
    else:
        results = []
        for _, p in todo:
            g: dict = defaultdict(list)
            results.append((compare_release(cat, json.loads(Path(p).read_text()), g), dict(g)))
    for (v, _), (c, g) in zip(todo, results):
        counts[v] = c
        for key, cells in g.items():
            groups[key].extend(cells)
    for v, rep in same_as.items():
        counts[v] = counts[rep]
        for key, cells in list(groups.items()):
            cells.extend([(v,) + c[1:] for c in cells if c[0] == rep])
    compare_registry(cat, order, probed, groups)
    return order, counts, groups, same_as


REGISTRY = HERE / "tables" / "vllm_registry.json"


def compare_registry(cat, order: list, probed: dict, groups: dict, registry: Path = REGISTRY) -> None:
    """Backend names of the release's enum that the probe did not ask (other devices,
    placeholders) against the catalog, both ways; per release, not per table signature (two
    releases with equal tables may name different backends)."""
    if not registry.is_file():
        return
    enums = json.loads(registry.read_text())["releases"]
    for v in order:
        rel, names = cat.release("vllm", v), enums.get(v)
        if rel is None or names is None:
            continue
        known, catalogued = set(names["names"]), set(rel.backend_names())
        for n in sorted(known - catalogued - probed.get(v, set())):
            groups[("backend", n, "the release's enum has it (a backend the probe does not ask), the catalog "
                    "does not list it", "")].append((v,) + ("-",) * 5)
        for n in sorted(catalogued - known - probed.get(v, set())):
            groups[("backend", n, "catalog lists it, the release's enum has no such name", "")].append(
                (v,) + ("-",) * 5)


def merged_groups(groups: dict) -> tuple:
    """Groups merged over releases; grid disagreements are split by platform and variant, so
    one reason covers each group."""
    merged: dict = defaultdict(list)
    shown: dict = defaultdict(dict)
    for (kind, subject, what, detail), cells in groups.items():
        for c in cells:
            sub = subject
            if kind in ("accept", "select", "block"):
                plat = "rocm" if str(c[1]).startswith("gfx") else "cuda"
                sub = f"{subject} [{plat}" + (f", {c[2]}]" if c[2] != "-" else "]")
            key = merge_key(kind, sub, what, detail)
            merged[key].append(c)
            shown[key][c[0]] = detail
    return merged, shown


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tables", default=str(REPO / "tools" / "derive" / "tables" / "vllm"))
    ap.add_argument("--out")
    a = ap.parse_args()
    cat = load_engine_catalog()
    text = report(*compare_all(cat, Path(a.tables)))
    if a.out:
        Path(a.out).write_text(text)
    sys.stdout.write(text)


def report(order, counts, groups, same_as) -> str:
    """The text of catalog_disagreements.txt."""
    lines = ["kvlint vLLM catalog vs. derived truth tables (tools/derive/compare_catalog.py)", ""]
    lines.append("per release: agree/disagree cells  [accept = explicit backend takes the config; "
                 "block = supports_block_size; select = auto-selection; facts = dtype literals, flags, defaults]")
    for v in order:
        c = counts[v]
        if not c["known"]:
            lines.append(f"  {v:>8}: catalog has no entry for this release (nothing compared)")
            continue
        note = f"   (unknown to the catalog: compared with its {c['proxy']} facts)" if c["proxy"] else ""
        if v in same_as:
            note += f"   (same code answers and catalog ranges as {same_as[v]})"
        lines.append(f"  {v:>8}: accept {c['accept'][0]}/{c['accept'][1]}  block {c['block'][0]}/"
                     f"{c['block'][1]}  select {c['select'][0]}/{c['select'][1]}  facts {c['facts'][0]}/"
                     f"{c['facts'][1]}{note}")
    lines += ["", "distinct disagreements (most cells first):", ""]
    merged, shown = merged_groups(groups)
    ranked = sorted(merged.items(), key=lambda kv: (-len({c[0] for c in kv[1]}) * len(kv[1]), kv[0]))
    for key, cells in ranked:
        kind, subject, what, _ = key
        vers = [c[0] for c in cells]
        head = f"- {kind} {subject}: {what}" if what else f"- {kind}: {subject}"
        lines.append(f"{head} — releases {ranges(vers, order)} ({len(cells)} cells)")
        details = list(dict.fromkeys(shown[key][v] for v in sorted(shown[key], key=vkey)))
        for d in (details if len(details) <= 2 else [details[0], details[-1]]):
            if d:
                lines.append(f"    {d}")
        if kind in ("accept", "block", "select"):
            dims = []
            for i, label in ((1, "devices"), (2, "variants"), (3, "kv dtypes"), (4, "heads"), (5, "blocks")):
                vals = [str(c[i]) for c in cells if c[i] != "-"]
                if vals:
                    dims.append(f"{label}: {summarize(vals, 14)}")
            lines.append("    " + "; ".join(dims))
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
