#!/usr/bin/env python3
"""How close is `kvlint capacity` to what real engines logged at start-up?

Reads every benchmarks/capacity_logs/*.yaml (real, cited start-up logs; format in that folder's
README.md), runs the venv's `kvlint capacity --format json` on each file's `manifest:` twice and
compares with the `logged:` figures:

* as written (no memory.kv_cache_memory): the pool model (device memory x fraction - weights -
  non-KV estimate) plus the layout arithmetic;
* with the logged pool given as memory.kv_cache_memory: the layout arithmetic alone (blocks,
  grouping, the engine's token formula).

Prints one row per log and, per split (fit / holdout / all), the median and maximum absolute
percentage error of the pool and of the KV token count, and the largest pool miss in GiB per device
memory class. Only the scored set counts there (at most five logs of one source); a larger source's
other logs (`set: extra`) are summarised on their own row. `--json` prints the same as JSON.
Output is deterministic (logs sorted by id, fixed rounding). Accuracy is reported, not asserted.

    .venv/bin/python benchmarks/capacity_accuracy.py [--json] [--split fit|holdout] [--fit-band]

Band coverage: how often the logged pool and tokens lie inside kvlint's low..high band, per split.
`--fit-band` prints the fit split's error ranges that size the band (kvlint/capacity/pool.py).
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, List, Optional

import yaml

GiB = 1 << 30
HERE = Path(__file__).resolve().parent
LOGS = HERE / "capacity_logs"



def load_logs(directory: Path) -> List[dict]:
    logs = []
    for path in sorted(directory.glob("*.yaml")):
        with open(path, encoding="utf-8") as f:
            doc = yaml.safe_load(f)
        doc["_path"] = path
        logs.append(doc)
    return sorted(logs, key=lambda d: d["id"])


def full_manifest(doc: dict) -> dict:
    """The data file's `manifest:` body as a kvlint/v1 Deployment. apiVersion and kind are implied in
    the data files so that `kvlint check DIR` does not take them for manifests."""
    return {"apiVersion": "kvlint/v1", "kind": "Deployment", **doc["manifest"]}


def find_kvlint(explicit: Optional[str]) -> List[str]:
    if explicit:
        return shlex.split(explicit)
    venv = Path(sys.executable).parent / "kvlint"
    if venv.exists():
        return [str(venv)]
    found = shutil.which("kvlint")
    if found:
        return [found]
    return [sys.executable, "-m", "kvlint"]


def run_capacity(kvlint: List[str], manifests: Dict[str, dict]) -> Dict[str, dict]:
    """Write each manifest to <tmp>/<id>.yaml, run one `kvlint capacity --format json` over all of
    them (from the temp dir, so no project kvlint.toml applies) and return the entries by id."""
    if not manifests:
        return {}
    with tempfile.TemporaryDirectory(prefix="kvlint-capacity-logs-") as tmp:
        files = []
        for log_id, manifest in sorted(manifests.items()):
            path = Path(tmp) / f"{log_id}.yaml"
            path.write_text(yaml.safe_dump(manifest, sort_keys=False), encoding="utf-8")
            files.append(path.name)
        proc = subprocess.run(kvlint + ["capacity", "--format", "json", *files], cwd=tmp,
                              capture_output=True, text=True)
        if proc.returncode not in (0, 1) or not proc.stdout.strip():
            raise SystemExit(f"kvlint capacity failed (exit {proc.returncode}):\n{proc.stderr}")
        entries = json.loads(proc.stdout)
    return {Path(e["file"]).stem: e for e in entries}


def pool_terms(entry: dict) -> Optional[dict]:
    """Device bytes, fraction, weights and non-KV bytes kvlint used (its JSON `engine.pool_terms`
    and `engine.memory_fraction`; for SGLang `non_kv` is the memory before its first reading)."""
    engine = entry.get("engine") or {}
    terms, fraction = engine.get("pool_terms") or {}, engine.get("memory_fraction")
    if not all(k in terms for k in ("device", "weights", "non_kv")) or fraction is None:
        return None
    return {"device": terms["device"], "fraction": fraction, "weights": terms["weights"],
            "non_kv": terms["non_kv"]}


def pct(predicted: Optional[float], logged: Optional[float]) -> Optional[float]:
    if predicted is None or logged in (None, 0):
        return None
    return round((predicted - logged) / logged * 100.0, 2)


def gib(value: Optional[float]) -> Optional[float]:
    return None if value is None else round(value / GiB, 3)


def compare(logs: List[dict], kvlint: List[str]) -> List[dict]:
    plain = {d["id"]: full_manifest(d) for d in logs}
    given = {}
    for d in logs:
        pool = d["logged"].get("pool_gib")
        if pool is not None and pool > 0:
            manifest = json.loads(json.dumps(full_manifest(d)))
            manifest.setdefault("memory", {})["kv_cache_memory"] = int(round(pool * GiB))
            given[d["id"]] = manifest
    predicted = run_capacity(kvlint, plain)
    with_pool = run_capacity(kvlint, given)

    rows = []
    for d in logs:
        logged = d["logged"]
        entry = predicted.get(d["id"], {})
        engine = entry.get("engine") or {}
        pred_pool = engine.get("pool_bytes_per_gpu")
        pred_tokens = engine.get("kv_cache_tokens")
        tokens_given = ((with_pool.get(d["id"]) or {}).get("engine") or {}).get("kv_cache_tokens")
        log_pool = logged.get("pool_gib")
        log_tokens = logged.get("kv_tokens")
        terms = pool_terms(entry) if entry else None
        band = engine.get("band") or {}
        row = {
            "deployment": deployment_key(d["manifest"]),
            "id": d["id"], "split": d["split"], "set": d.get("set", "scored"),
            "source": d["source"].get("id"), "outcome": d.get("outcome", "started"),
            "engine": d["manifest"]["engine"]["name"],
            "release": d["manifest"]["engine"]["version"], "gpu": d["manifest"]["hardware"]["gpu"],
            "tp": (d["manifest"].get("parallelism") or {}).get("tensor", 1),
            "logged_pool_gib": log_pool, "predicted_pool_gib": gib(pred_pool),
            "pool_error_pct": pct(gib(pred_pool), log_pool),
            "logged_tokens": log_tokens, "predicted_tokens": pred_tokens,
            "tokens_error_pct": pct(pred_tokens, log_tokens),
            "tokens_with_logged_pool": tokens_given,
            "tokens_error_pct_with_logged_pool": pct(tokens_given, log_tokens),
            "band_pool_low_gib": gib(band.get("pool_low_bytes")),
            "band_pool_high_gib": gib(band.get("pool_high_bytes")),
            "band_tokens_low": band.get("kv_cache_tokens_low"),
            "band_tokens_high": band.get("kv_cache_tokens_high"),
            "band_sized_gib": [gib(v) for v in band.get("pool_sized_terms_bytes") or (0, 0)],
            # a predicted start-up failure: not even one max_model_len request fits (vLLM raises)
            "predicted_fits_one_sequence": engine.get("fits_one_sequence"),
            "max_model_len": engine.get("max_model_len"),
        }
        if band and log_pool is not None:
            row["pool_in_band"] = band["pool_low_bytes"] / GiB <= log_pool <= band["pool_high_bytes"] / GiB
        if band and log_tokens is not None:
            row["tokens_in_band"] = band["kv_cache_tokens_low"] <= log_tokens <= band["kv_cache_tokens_high"]
        if terms:
            row["kvlint_fraction"] = terms["fraction"]
            row["kvlint_device_gib"] = gib(terms["device"])
            row["kvlint_weights_gib"] = gib(terms["weights"])
            row["kvlint_non_kv_gib"] = gib(terms["non_kv"])
            if log_pool is not None and pred_pool is not None:
                d_pool = round(gib(pred_pool) - log_pool, 3)
                row["pool_delta_gib"] = d_pool
                if logged.get("weights_gib") is not None:
                    # + means kvlint counts more weight bytes than the engine loaded (its pool shrinks)
                    d_w = round(gib(terms["weights"]) - logged["weights_gib"], 3)
                    row["weights_delta_gib"] = d_w
                    # what the weights do not explain: device total x fraction and non-KV memory
                    row["other_delta_gib"] = round(d_pool + d_w, 3)
                if logged.get("total_gpu_memory_gib") is not None:
                    row["device_delta_gib"] = round(
                        (gib(terms["device"]) - logged["total_gpu_memory_gib"]) * terms["fraction"], 3)
        rows.append(row)
    return rows


def deployment_key(manifest: dict) -> str:
    """The deployment a log measures, with max_model_len left out: several logs of one sweep differ
    only there, and vLLM sizes the same pool for each (the 'distinct' summary counts them once)."""
    body = {k: v for k, v in manifest.items() if k != "metadata"}
    serving = {k: v for k, v in (body.get("serving") or {}).items() if k != "max_model_len"}
    body["serving"] = serving
    return json.dumps(body, sort_keys=True, default=str)


def distinct_stats(rows: List[dict], key: str) -> dict:
    """Median and maximum absolute error with each deployment counted once (its logs' median)."""
    groups: Dict[str, List[float]] = {}
    for r in rows:
        if r.get(key) is not None:
            groups.setdefault(r["deployment"], []).append(abs(r[key]))
    if not groups:
        return {"n": 0, "median_abs_pct": None, "max_abs_pct": None}
    per = [statistics.median(v) for v in groups.values()]
    return {"n": len(per), "median_abs_pct": round(statistics.median(per), 2), "max_abs_pct": round(max(per), 2)}


def summarize(rows: List[dict]) -> Dict[str, dict]:
    def stats(values):
        values = [abs(v) for v in values if v is not None]
        if not values:
            return {"n": 0, "median_abs_pct": None, "max_abs_pct": None}
        return {"n": len(values), "median_abs_pct": round(statistics.median(values), 2),
                "max_abs_pct": round(max(values), 2)}

    out = {}
    for split in ("fit", "holdout", "all", "extra"):
        # A log whose engine failed to start is not a capacity figure to score: the question it
        # answers is whether kvlint predicts the failure (start_up_failures below). The scored
        # splits hold at most five logs of one source; the rest of a larger source is `set: extra`,
        # reported apart so that one sweep does not make the figures.
        if split == "extra":
            chosen = [r for r in rows if r["set"] == "extra" and r["outcome"] == "started"]
        else:
            chosen = [r for r in rows if r["set"] == "scored" and (split == "all" or r["split"] == split)
                      and r["outcome"] == "started"]
        out[split] = {
            "logs": len(chosen),
            "pool": stats(r["pool_error_pct"] for r in chosen),
            "tokens": stats(r["tokens_error_pct"] for r in chosen),
            "tokens_with_logged_pool": stats(r["tokens_error_pct_with_logged_pool"] for r in chosen),
            "band_coverage": {key: coverage(r.get(f"{key}_in_band") for r in chosen)
                              for key in ("pool", "tokens")},
            "distinct_deployments": {"pool": distinct_stats(chosen, "pool_error_pct"),
                                     "tokens": distinct_stats(chosen, "tokens_error_pct")},
            "sources": len({r["source"] for r in chosen}),
            "pool_gib_by_device": pool_gib_by_device(chosen),
        }
    failed = [r for r in rows if r["outcome"] == "startup_failed"]
    out["start_up_failures"] = {
        "logs": len(failed),
        "predicted": sum(1 for r in failed if r["predicted_fits_one_sequence"] is False),
        "ids": {r["id"]: {"split": r["split"], "predicted_failure": r["predicted_fits_one_sequence"] is False,
                          "predicted_tokens": r["predicted_tokens"], "max_model_len": r["max_model_len"]}
                for r in failed},
    }
    return out


DEVICE_CLASSES = ((26, "<=24 GB"), (50, "32-48 GB"), (90, "80 GB"), (150, "94-141 GB"), (None, ">=180 GB"))


def device_class(device_gib: Optional[float]) -> str:
    for limit, name in DEVICE_CLASSES:
        if limit is None or (device_gib is not None and device_gib < limit):
            return name
    return DEVICE_CLASSES[-1][1]


def pool_gib_by_device(rows: List[dict]) -> Dict[str, dict]:
    """The largest absolute pool miss in GiB, per device memory class: a relative error hides that a
    0.5 GiB miss is 10% of a 24 GB card's pool and 1% of an H200's."""
    out: Dict[str, dict] = {}
    for r in rows:
        if r.get("pool_delta_gib") is None:
            continue
        name = device_class(r.get("kvlint_device_gib"))
        cell = out.setdefault(name, {"n": 0, "max_abs_gib": 0.0, "worst": None})
        cell["n"] += 1
        if abs(r["pool_delta_gib"]) >= cell["max_abs_gib"]:
            cell["max_abs_gib"], cell["worst"] = abs(r["pool_delta_gib"]), r["id"]
    return {name: out[name] for _, name in DEVICE_CLASSES if name in out}


def coverage(flags) -> dict:
    flags = [f for f in flags if f is not None]
    return {"n": len(flags), "inside": sum(flags),
            "pct": round(100.0 * sum(flags) / len(flags), 1) if flags else None}


def fit_band(rows: List[dict], logs: List[dict]) -> dict:
    """The error ranges the pool band in kvlint/capacity/pool.py rounds outwards, from the FIT split
    only: the weights' relative error (logged weights against kvlint's) and what is left of the pool
    error once the weights are accounted for (GiB)."""
    logged = {d["id"]: d["logged"] for d in logs}
    # A log whose error comes from a term kvlint does not model at all says so in its data file
    # (`band_excluded: <the unmodelled term>`); it stays scored, and is listed, but does not size
    # the band (which is for the terms kvlint does model).
    excluded = {d["id"]: d["band_excluded"] for d in logs if d.get("band_excluded")}
    weights, other = [], []
    for r in rows:
        if (r["split"] != "fit" or r["set"] != "scored" or r["outcome"] != "started" or r.get("kvlint_weights_gib") in (None, 0)
                or r["predicted_pool_gib"] is None or r["logged_pool_gib"] is None):
            continue
        log_w = logged[r["id"]].get("weights_gib")
        if log_w is None or r["id"] in excluded:
            continue
        weights.append((log_w - r["kvlint_weights_gib"]) / r["kvlint_weights_gib"])
        residual = r["logged_pool_gib"] - r["predicted_pool_gib"] + (log_w - r["kvlint_weights_gib"])
        # what the band's code-sized terms (kvlint/capacity/pool.py: a sampler path that depends on
        # an optional package, a release's distributed init) already span is not the constants' to cover
        s_low, s_high = r.get("band_sized_gib") or (0.0, 0.0)
        other.append(residual - min(max(residual, s_low), s_high))
    if not weights:
        return {"n": 0}
    return {"n": len(weights), "excluded": excluded,
            "weights_rel": [round(min(weights), 4), round(max(weights), 4)],
            "other_gib": [round(min(other), 3), round(max(other), 3)]}


def fmt(value, spec):
    if value is None:
        width = re.match(r"[+]?(\d*)", spec).group(1)
        return "-".rjust(int(width or 1))
    return format(value, spec)


def print_table(rows: List[dict], summary: Dict[str, dict]) -> None:
    head = (f"{'id':<38} {'split':<7} {'pool log':>9} {'pred':>9} {'err%':>8} {'dW':>7} {'dOther':>7} "
            f"{'tokens log':>11} {'pred':>11} {'err%':>8} {'err% w/ pool':>12}")
    print(head)
    print("-" * len(head))
    for r in rows:
        mark = "!" if r["outcome"] != "started" else ("x" if r["set"] == "extra" else " ")
        print(f"{r['id']:<37}{mark} {r['split']:<7} {fmt(r['logged_pool_gib'], '9.2f')} "
              f"{fmt(r['predicted_pool_gib'], '9.2f')} {fmt(r['pool_error_pct'], '+8.1f')} "
              f"{fmt(r.get('weights_delta_gib'), '+7.2f')} {fmt(r.get('other_delta_gib'), '+7.2f')} "
              f"{fmt(r['logged_tokens'], '11,d')} {fmt(r['predicted_tokens'], '11,d')} "
              f"{fmt(r['tokens_error_pct'], '+8.1f')} {fmt(r['tokens_error_pct_with_logged_pool'], '+12.1f')}")
    print()
    print("pool and tokens: absolute % error of kvlint's prediction against the logged figure;")
    print("dW = kvlint weights - logged weights (GiB); dOther = pool error (GiB) + dW: device x fraction"
          " and non-KV memory; 'w/ pool' = tokens with the logged pool given as memory.kv_cache_memory")
    print()
    print("! = the engine failed to start (not scored; see start-up failures below); x = set: extra (a source's"
          " logs beyond five, reported apart)")
    print()
    print(f"{'split':<8} {'logs':>4}  {'pool n / median / max':>24}  {'tokens n / median / max':>24}  "
          f"{'tokens w/ logged pool':>24}")
    for split, s in summary.items():
        if split not in ("fit", "holdout", "all", "extra"):
            continue
        cells = []
        for key in ("pool", "tokens", "tokens_with_logged_pool"):
            st = s[key]
            cells.append(f"{st['n']:>3} / {fmt(st['median_abs_pct'], '6.2f')}% / {fmt(st['max_abs_pct'], '7.2f')}%")
        print(f"{split:<8} {s['logs']:>4}  {cells[0]:>24}  {cells[1]:>24}  {cells[2]:>24}")
    print()
    print("distinct deployments (logs that differ only in max_model_len counted once):")
    for split in ("fit", "holdout", "all"):
        dd = summary[split]["distinct_deployments"]
        cells = [f"{dd[k]['n']:>3} / {fmt(dd[k]['median_abs_pct'], '6.2f')}% / {fmt(dd[k]['max_abs_pct'], '7.2f')}%"
                 for k in ("pool", "tokens")]
        print(f"{split:<8} {'':>4}  {cells[0]:>24}  {cells[1]:>24}")
    print()
    print("largest pool miss (GiB) by device memory, scored logs:")
    for split in ("fit", "holdout", "all"):
        cells = [f"{name} {c['max_abs_gib']:.2f} (n={c['n']}, {c['worst']})"
                 for name, c in summary[split]["pool_gib_by_device"].items()]
        print(f"{split:<8} " + "; ".join(cells))
    print()
    print("band coverage (logged value inside kvlint's low..high band):")
    for split in ("fit", "holdout", "all", "extra"):
        cov = summary[split]["band_coverage"]
        print(f"{split:<8} pool {cov['pool']['inside']:>2}/{cov['pool']['n']:<2} "
              f"({fmt(cov['pool']['pct'], '5.1f')}%)   tokens {cov['tokens']['inside']:>2}/{cov['tokens']['n']:<2} "
              f"({fmt(cov['tokens']['pct'], '5.1f')}%)")
    failed = summary["start_up_failures"]
    print()
    print(f"start-up failures: kvlint predicts {failed['predicted']} of {failed['logs']} "
          "(not even one max_model_len request fits the predicted pool)")
    for log_id, f in failed["ids"].items():
        print(f"  {log_id:<38} {f['split']:<7} predicted {fmt(f['predicted_tokens'], ',d')} tokens for "
              f"max_model_len {fmt(f['max_model_len'], ',d')}: "
              f"{'failure predicted' if f['predicted_failure'] else 'MISSED (kvlint says it starts)'}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print rows and summary as JSON")
    parser.add_argument("--split", choices=("fit", "holdout"), help="only this split")
    parser.add_argument("--logs-dir", type=Path, default=LOGS)
    parser.add_argument("--fit-band", action="store_true",
                        help="print the FIT split's error ranges the pool band is sized from")
    parser.add_argument("--kvlint", help="kvlint command, e.g. 'python -m kvlint' (default: the kvlint beside "
                        "this Python)")
    args = parser.parse_args(argv)

    logs = load_logs(args.logs_dir)
    if args.split:
        logs = [d for d in logs if d["split"] == args.split]
    rows = compare(logs, find_kvlint(args.kvlint))
    if args.fit_band:
        print(json.dumps(fit_band(rows, logs), indent=2))
        return 0
    summary = summarize(rows)
    if args.json:
        print(json.dumps({"rows": rows, "summary": summary}, indent=2, sort_keys=True))
    else:
        print_table(rows, summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
