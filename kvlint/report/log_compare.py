"""`kvlint capacity FILE --from-log LOG`: the prediction beside what the engine logged, term by term.

Each row is one term of the pool formula (docs/capacity.md "The pool") or one figure the engine
prints; the last lines say which manifest fields carry the logged values, so the next run needs no
estimate at all.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Dict, List, Optional

from kvlint.capacity import CapacityResult, compute
from kvlint.capacity.startup_log import StartupLog
from kvlint.deployment import Deployment
from kvlint.text import aligned_table, printable, printable_block

GiB = 1 << 30


def _gib(value: Optional[float]) -> Optional[float]:
    return None if value is None else round(value / GiB, 2)


def _row(term: str, predicted: Optional[float], logged: Optional[float], note: str = "") -> Dict[str, Any]:
    delta = pct = None
    if predicted is not None and logged is not None:
        delta = round(predicted - logged, 2)
        if logged:
            pct = round(100.0 * (predicted - logged) / logged, 1)
    return {"term": term, "predicted": predicted, "logged": logged, "delta": delta,
            "delta_pct": pct, "note": note}


def compare_with_log(capacity: CapacityResult, deployment: Optional[Deployment],
                     log: StartupLog) -> Dict[str, Any]:
    """The comparison as plain data (also the `--format json` output)."""
    engine = capacity.engine
    terms = dict(engine.pool_terms) if engine is not None else {}
    rows: List[Dict[str, Any]] = []
    rows.append(_row("device memory (GiB)", _gib(terms.get("device")), log.device_gib,
                     "CUDA runtime total; set hardware.memory if it differs"))
    rows.append(_row("weights per GPU (GiB)", _gib(terms.get("weights")), log.weights_gib,
                     "params x dtype against what the engine loaded"))
    logged_non_kv = None
    if log.non_kv_gib is not None and log.weights_gib is not None:
        logged_non_kv = round(log.non_kv_gib - log.weights_gib, 2)
    predicted_profiled = None
    if "non_kv" in terms:
        predicted_profiled = terms["non_kv"] - terms.get("cuda_graphs", 0)
    if capacity.engine_name == "sglang":
        rows.append(_row("memory before the first reading (GiB)", _gib(terms.get("non_kv")), None,
                         "CUDA context and distributed init; SGLang scales it by mem_fraction_static"))
    else:
        rows.append(_row("non-KV memory, profiled (GiB)", _gib(predicted_profiled), logged_non_kv,
                         "activation peak + non-torch memory (vLLM's 'Total non KV cache memory' - weights)"))
    rows.append(_row("  activation peak (GiB)", _gib(terms.get("activation")), log.torch_peak_gib,
                     "'torch peak memory increase'; grows with max_num_batched_tokens"))
    rows.append(_row("  non-torch memory (GiB)", _gib(terms.get("non_torch")), log.non_torch_gib,
                     "NCCL buffers under tensor parallelism"))
    if log.avail_before_weights_gib is not None or capacity.engine_name == "sglang":
        before = None
        if "device" in terms and "non_kv" in terms:
            before = terms["device"] - terms["non_kv"]
        rows.append(_row("free at 'Load weight begin' (GiB)", _gib(before), log.avail_before_weights_gib,
                         "SGLang's first reading: device - CUDA context and distributed init"))
    remainder = None
    if (log.device_gib is not None and log.non_kv_gib is not None and log.pool_gib is not None
            and engine is not None and engine.fraction is not None):
        remainder = round(log.device_gib * engine.fraction - log.non_kv_gib - log.pool_gib, 2)
    rows.append(_row("CUDA graphs and rest (GiB)", _gib(terms.get("cuda_graphs", 0) if terms else None),
                     remainder, "device x fraction - non-KV - pool, from the log's own figures"))
    pool = engine.pool_bytes_per_gpu if engine is not None else None
    band = engine.band if engine is not None else None
    rows.append(_row("KV pool per GPU (GiB)", _gib(pool), log.pool_gib,
                     "vLLM 'Available KV cache memory'; SGLang K size + V size"))
    rows.append(_row("KV tokens", engine.kv_cache_tokens if engine else None, log.kv_tokens,
                     "vLLM 'GPU KV cache size'; SGLang '#tokens'"))
    conc_note = "'Maximum concurrency'"
    if log.concurrency_tokens and engine is not None and engine.max_model_len \
            and log.concurrency_tokens != engine.max_model_len:
        conc_note += (f" (the log's requests are {log.concurrency_tokens:,} tokens, the manifest's "
                      f"max_model_len {engine.max_model_len:,})")
    rows.append(_row("max concurrency", round(engine.max_concurrency, 2) if engine else None,
                     log.max_concurrency, conc_note))
    with_pool = None
    if deployment is not None and log.pool_gib is not None and log.pool_gib > 0:
        given = replace(deployment, memory=replace(deployment.memory,
                                                   kv_cache_memory=int(round(log.pool_gib * GiB))))
        layout = compute(given).engine
        if layout is not None:
            with_pool = layout.kv_cache_tokens
            rows.append(_row("KV tokens with the logged pool", with_pool, log.kv_tokens,
                             "the layout arithmetic alone (blocks, grouping, the token formula)"))
    in_band = None
    if band is not None and log.pool_gib is not None:
        in_band = band.pool_low / GiB <= log.pool_gib <= band.pool_high / GiB
    calibrate: Dict[str, Any] = {}
    if log.pool_gib is not None:
        calibrate["memory.kv_cache_memory"] = int(round(log.pool_gib * GiB))
    if logged_non_kv is not None:
        calibrate["memory.non_kv_memory"] = int(round((logged_non_kv + (remainder or 0)) * GiB))
    if (logged_non_kv is None and log.avail_before_weights_gib is not None and log.device_gib is None
            and "device" in terms):
        # SGLang: memory held before its first reading, against the device total kvlint used
        calibrate["memory.non_kv_memory"] = max(0, terms["device"] - int(round(log.avail_before_weights_gib * GiB)))
    if log.device_gib is not None:
        calibrate["hardware.memory"] = int(round(log.device_gib * GiB))
    return {
        "file": capacity.file,
        "name": capacity.name,
        "log_engine": log.engine,
        "engine": capacity.engine_name,
        "rows": rows,
        "band": None if band is None else {
            "pool_low_gib": _gib(band.pool_low), "pool_high_gib": _gib(band.pool_high),
            "tokens_low": band.tokens_low, "tokens_high": band.tokens_high,
            "terms": list(band.terms), "logged_pool_inside": in_band},
        "logged": log.to_json(),
        "calibrate": calibrate,
    }


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, int):
        return f"{value:,}"
    return f"{value:,.2f}"


def render_log_comparison(result: Dict[str, Any]) -> str:
    lines = [f"{printable(result['file'])} ({printable(result['name'])}): predicted against the start-up log"]
    if result["log_engine"] and result["log_engine"] != result["engine"]:
        lines.append(f"  note: the log looks like {printable(result['log_engine'])}, the manifest says {printable(result['engine'])}")
    table = []
    for row in result["rows"]:
        if row["predicted"] is None and row["logged"] is None:
            continue
        pct = "-" if row["delta_pct"] is None else f"{row['delta_pct']:+.1f}%"
        delta = "-" if row["delta"] is None else (f"{row['delta']:+,}" if isinstance(row["delta"], int)
                                                  else f"{row['delta']:+,.2f}")
        table.append([row["term"], _cell(row["predicted"]), _cell(row["logged"]), delta, pct])
    lines.extend(aligned_table(["term", "predicted", "logged", "delta", "delta %"], table, indent="  "))
    band = result["band"]
    if band is not None:
        inside = band["logged_pool_inside"]
        verdict = "" if inside is None else (" - the logged pool is inside" if inside
                                             else " - the logged pool is OUTSIDE")
        lines.append(f"  band: pool {band['pool_low_gib']:.2f}..{band['pool_high_gib']:.2f} GiB, "
                     f"{band['tokens_low']:,}..{band['tokens_high']:,} tokens{verdict}")
    if result["calibrate"]:
        lines.append("  calibrate: put the logged figures in the manifest (memory.kv_cache_memory alone "
                     "removes every pool estimate and the band):")
        for key, value in result["calibrate"].items():
            lines.append(f"    {printable(key)}: {printable(value)}")
    else:
        lines.append("  the log has none of the capacity lines kvlint reads "
                     "(e.g. 'Available KV cache memory', 'KV Cache is allocated')")
    return printable_block("\n".join(lines) + "\n")
