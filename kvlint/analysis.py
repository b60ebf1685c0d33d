"""Semantic analysis of one loaded document: resolve, capacity, facts, rules.

Schema findings are produced before this runs; resolve copes with documents that failed the
schema (wrong types read as unknown), so one typo does not hide every other finding.
"""

from __future__ import annotations

import functools
from dataclasses import field
from pathlib import Path
from typing import Any, Dict, List, Optional, Set, Tuple

from kvlint.capacity import CapacityResult, compute
from kvlint.catalog import load_catalogs
from kvlint.catalog.engines import ENGINE_DISPLAY
from kvlint.config import Config
from kvlint.deployment import Deployment
from kvlint.findings import Finding
from kvlint.load import Document
from kvlint.records import dataclass, replace
from kvlint.resolve import resolve
from kvlint.resolve.fields import get
from kvlint.rulebook import Rulebook, defect_data, defect_releases, rule_from_defect


API_VERSION = "kvlint/v1"
KINDS = ("Deployment", "Ablation")


def manifest_kind(data: Any) -> Optional[str]:
    """"Deployment" or "Ablation" for a kvlint/v1 manifest; None for anything else."""
    if not isinstance(data, dict) or data.get("apiVersion") != API_VERSION:
        return None
    kind = data.get("kind")
    return kind if kind in KINDS else None



@dataclass
class CheckContext:
    """What checking a document needs besides the document: configuration, the rules, and which
    of them are enabled; `display_root` is where reported paths are relative to."""

    config: Config
    rulebook: Rulebook
    enabled: Set[str]
    display_root: Path = field(default_factory=Path.cwd)


@dataclass
class Analysis:
    """One document analyzed: its resolved Deployment, its capacity result and its facts."""

    deployment: Optional[Deployment]
    capacity: Optional[CapacityResult]
    facts: Dict[str, Any]


def manifest_path(document: Document) -> Optional[Path]:
    return None if document.file == "<stdin>" else Path(document.file)


def analyze_deployment(data: Dict[str, Any], file: str, path: Optional[Path], catalog_dirs=(), max_scale_overhead: float = 0.03) -> Analysis:
    """Resolve a Deployment manifest and compute its capacity and facts (no findings yet)."""
    resolution = resolve(data, file, path, load_catalogs(tuple(catalog_dirs)))
    capacity = compute(resolution.deployment) if resolution.deployment is not None else None
    if capacity is not None and resolution.notes:
        # How resolve filled gaps (e.g. weight bytes from a parameter count) is an assumption too.
        capacity = replace(capacity, assumptions=tuple(resolution.notes) + capacity.assumptions)
    facts = resolution.facts
    facts["capacity"] = capacity_facts(capacity, facts, data, max_scale_overhead)
    stand_in = capacity_stand_in(resolution.deployment, capacity, facts)
    if stand_in:
        facts["capacity"]["stand_in"] = stand_in  # KV210, when engine.stand_in did not say it
    if capacity is not None:
        notes = defect_capacity_notes(facts)
        spec = facts.get("speculative") or {}
        if spec.get("given") and capacity.engine is not None:
            # vLLM's proposers (EAGLE, MTP, draft models) register their attention layers in the
            # same KV-cache spec, so they take blocks from the same pool; kvlint does not size them.
            notes = (f"the speculative-decoding draft ({spec.get('method') or 'method not given'}) keeps "
                     "its own KV layers in the same pool; kvlint does not count them, so the figures "
                     "above are upper bounds",) + notes
        if notes:
            capacity = replace(capacity, assumptions=capacity.assumptions + notes)
    return Analysis(resolution.deployment, capacity, facts)


@functools.lru_cache(maxsize=1)
def _capacity_defects() -> Tuple[Rulebook, Tuple[Tuple[str, str], ...]]:
    """The known defects (rules/defects/*.yaml) whose file has a `capacity_note`: they change what
    the engine allocates or logs. Their rules, and (code, note) pairs."""
    book = Rulebook()
    notes: List[Tuple[str, str]] = []
    for path, data in defect_data():  # parsed once per release of the files (kvlint.datacache)
        if not isinstance(data, dict) or not isinstance(data.get("capacity_note"), str):
            continue
        rule = rule_from_defect(data, str(path))
        book.add(rule)
        notes.append((rule.code, f"known defect {data['id']} ({rule.code}): "
                                 f"{data['capacity_note'].strip().rstrip('.')}; {defect_releases(data)}"))
    return book, tuple(notes)


def defect_capacity_notes(facts: Dict[str, Any]) -> Tuple[str, ...]:
    """What `kvlint capacity` lists among its assumptions for each known defect that fires on these
    facts and changes the engine's figures (V4, V1, V5), naming the defect and its fixed release."""
    book, notes = _capacity_defects()
    fired = {rule.code for rule, _, _ in book.evaluate(facts)}
    return tuple(note for code, note in notes if code in fired)


def capacity_stand_in(deployment: Optional[Deployment], capacity: Optional[CapacityResult],
                      facts: Dict[str, Any]) -> Optional[str]:
    """The sentence KV210 says when the capacity figures, and so the KV60x gate, were computed
    with a catalogued release standing in for the deployment's (the version is missing, not
    understood, or not catalogued) and engine.stand_in has not said so already."""
    if (deployment is None or capacity is None or capacity.engine is None or not deployment.release_note
            or (facts.get("engine") or {}).get("stand_in")):
        return None
    modelled = f"{ENGINE_DISPLAY.get(deployment.engine, deployment.engine)} {deployment.modelled_release}"
    if not deployment.engine_version:
        return (f"the engine release is not stated: the capacity figures (KV60x) use {modelled}'s "
                "defaults and accounting, the newest release kvlint knows")
    return f"the capacity figures (KV60x) use {modelled}'s defaults and accounting: {deployment.release_note}"


def capacity_facts(capacity, facts: Dict[str, Any], data: Dict[str, Any], default_threshold: float) -> Dict[str, Any]:
    if capacity is None:
        return {"available": False, "below_targets": []}
    checks = capacity.checks()
    threshold = get(data, "targets", "max_scale_overhead", kind=(int, float))
    threshold = float(threshold) if threshold is not None else default_threshold
    ratio = checks.get("scale_overhead_ratio")
    engine = capacity.engine
    out: Dict[str, Any] = {
        "available": engine is not None,
        "max_concurrency": checks.get("max_concurrency"),
        "kv_cache_tokens": checks.get("kv_cache_tokens"),
        "fits_one_sequence": checks.get("fits_one_sequence"),
        "pool_exhausted": checks.get("pool_exhausted"),
        "kv_heads_replicated": checks.get("kv_heads_replicated"),
        "startup_error": checks.get("startup_error"),
        "scale_overhead_ratio": ratio,
        "scale_overhead_pct": round(ratio * 100, 2) if ratio is not None else None,
        "scale_overhead_threshold_pct": round(threshold * 100, 2),
        "scale_overhead_exceeded": bool(ratio is not None and ratio > threshold),
        "tensor_parallel": capacity.tensor_parallel,
        "differences": "; ".join(d.text for d in capacity.differences),
    }
    gated = [key for key in ("min_concurrency", "min_kv_tokens", "planned_kv_tokens") if key in (facts.get("targets") or {})]
    if engine is None and gated:
        # The gate cannot run: say so rather than pass the targets silently (KV609).
        out["targets_unchecked"] = {
            "targets": gated,
            "pointer": f"/targets/{gated[0]}",
            "reason": "; ".join(a for a in capacity.assumptions if "cannot be computed" in a or "unknown" in a)
            or "the KV pool cannot be computed",
        }
    if engine is not None:
        out.update(
            pool_bytes=engine.pool_bytes_per_gpu,
            pool_gib=round(engine.pool_bytes_per_gpu / 2**30, 2),
            num_blocks=engine.num_blocks,
            block_size=engine.block_size,
            bytes_per_block=engine.bytes_per_block,
        )
    if capacity.sequence is not None:
        out["sequence_gib"] = round(capacity.sequence.bytes / 2**30, 2)
    band = engine.band if engine is not None else None
    below: List[Dict[str, Any]] = []
    uncertain: List[Dict[str, Any]] = []
    targets = facts.get("targets") or {}
    if out["startup_error"]:  # the engine would not start: KV608 says so, targets are moot
        out["below_targets"] = below
        return out
    conc, tokens = out["max_concurrency"], out["kv_cache_tokens"]
    max_len = engine.max_model_len if engine is not None else None
    # The band's ends: (low, high) of concurrency and tokens; the central figure twice without one.
    conc_ends = (band.concurrency_low, band.concurrency_high) if band else (conc, conc)
    token_ends = (band.tokens_low, band.tokens_high) if band else (tokens, tokens)
    if conc is not None and max_len:
        # Gate on what the pool really holds: max_model_len-token sequences times their length.
        # vLLM >= 0.21 logs exactly this; before 0.21 its "GPU KV cache size" line undercounts
        # hybrid sliding-window models (vllm issue #40691), so the logged figure is not a plan.
        tokens = int(conc * max_len)
        token_ends = tuple(int(c * max_len) for c in conc_ends)
        out["effective_tokens"] = tokens
        # Only several KV-cache groups make the logged line under-report (it divides the blocks by
        # the group count); with one group the two figures differ by block rounding alone.
        out["logged_tokens_differ"] = tokens != out["kv_cache_tokens"] and len(engine.groups) > 1
    _gate_pool(out, engine, band, facts, uncertain)
    if band is not None:
        out["band"] = {
            "pool_low_gib": round(band.pool_low / 2**30, 2),
            "pool_high_gib": round(band.pool_high / 2**30, 2),
            "max_concurrency_low": round(band.concurrency_low, 2),
            "max_concurrency_high": round(band.concurrency_high, 2),
            "tokens_low": token_ends[0],
            "tokens_high": token_ends[1],
            "terms": "; ".join(band.terms),
            "removed_by": band.removed_by,
        }

    def gate(target: str, want: Any, want_text: str, ends: Any, text: Any, **extra: str) -> None:
        """Below target only when even the favourable end misses; inside the band: uncertain."""
        low, high = ends
        if low is None or high is None or low >= want:
            return
        item = {"target": target, "pointer": f"/targets/{target}", "want": want_text, **extra}
        if high < want:
            item["have"] = text(high)
            item["band_note"] = (f" even at the favourable end of the estimated pool (set "
                                 f"{band.removed_by} to remove the band)") if band else ""
            below.append(item)
        else:
            item.update(low=text(low), high=text(high), terms="; ".join(band.terms) if band else "",
                        removed_by=band.removed_by if band else "")
            uncertain.append(item)

    want_conc = targets.get("min_concurrency")
    # Figures are formatted here, as the text shows them; the sentences are KV601's templates.
    if isinstance(want_conc, (int, float)) and not isinstance(want_conc, bool) and conc is not None:
        gate("min_concurrency", want_conc, str(want_conc), conc_ends, lambda v: f"{v:.2f}",
             max_model_len=f"{facts['serving'].get('max_model_len'):,}")
    want_tokens = targets.get("min_kv_tokens")
    if isinstance(want_tokens, int) and not isinstance(want_tokens, bool) and tokens is not None:
        gate("min_kv_tokens", want_tokens, f"{want_tokens:,}", token_ends, lambda v: f"{v:,}")
    planned = targets.get("planned_kv_tokens")
    if isinstance(planned, int) and not isinstance(planned, bool) and tokens is not None:
        low, high = token_ends
        if planned > high:
            over = planned - high
            out["overstated"] = {
                "planned": planned,
                "tokens": high,
                "by": over,
                "pct": round(100.0 * over / planned, 1),
                "band_note": (f" even at the favourable end of the estimated pool (set "
                              f"{band.removed_by} to remove the band)") if band else "",
            }
        elif planned > low:
            uncertain.append({"target": "planned_kv_tokens", "pointer": "/targets/planned_kv_tokens",
                              "want": f"{planned:,}", "low": f"{low:,}", "high": f"{high:,}",
                              "terms": "; ".join(band.terms) if band else "",
                              "removed_by": band.removed_by if band else ""})
    out["below_targets"] = below
    out["uncertain_targets"] = uncertain
    return out


def _band_note(band: Any) -> str:
    """What a KV60x message adds when its verdict holds across the estimated pool's whole band."""
    return (f" even at the favourable end of the estimated pool (set {band.removed_by} to remove "
            "the band)") if band is not None else ""


def _gate_pool(out: Dict[str, Any], engine: Any, band: Any, facts: Dict[str, Any],
               uncertain: List[Dict[str, Any]]) -> None:
    """KV606 (no pool) and KV603 (one sequence does not fit) on the band as KV601 reads it: an error
    only when even the favourable end fails, an uncertain item (KV610) when the two ends disagree.
    Without a band both ends are the central figure. KV603 defers to KV606, as without a band."""
    if engine is None:
        return
    if band is None:
        fits = (engine.fits_one_sequence, engine.fits_one_sequence)
        pool_ends, token_ends = (engine.pool_bytes_per_gpu,) * 2, (engine.kv_cache_tokens,) * 2
    else:
        fits = (band.fits_low, band.fits_high)
        pool_ends, token_ends = (band.pool_low, band.pool_high), (band.tokens_low, band.tokens_high)
    terms = "; ".join(band.terms) if band is not None else ""
    removed_by = band.removed_by if band is not None else ""
    serving = facts.get("serving") or {}
    if pool_ends[1] <= 0:
        out["no_pool"] = {"pool_gib": round(pool_ends[1] / 2**30, 2), "band_note": _band_note(band)}
    elif fits[1] is False:
        out["sequence_does_not_fit"] = {"pool_gib": round(pool_ends[1] / 2**30, 2),
                                        "tokens": token_ends[1], "band_note": _band_note(band)}
    elif pool_ends[0] <= 0:
        uncertain.append({"target": "pool", "pointer": "/hardware/gpu", "want": "0",
                          "low": f"{pool_ends[0] / 2**30:.2f}", "high": f"{pool_ends[1] / 2**30:.2f}",
                          "terms": terms, "removed_by": removed_by})
    elif fits[0] is False and serving.get("max_model_len_pointer"):
        uncertain.append({"target": "max_model_len", "pointer": serving["max_model_len_pointer"],
                          "want": f"{engine.max_model_len:,}", "low": f"{token_ends[0]:,}",
                          "high": f"{token_ends[1]:,}", "terms": terms, "removed_by": removed_by})


def rule_finding(rule: Any, message: str, pointer: str, document: Document, prefer_key: bool = False) -> Finding:
    """A finding of a facts rule, located in the document by its pointer."""
    finding = Finding(
        code=rule.code,
        name=rule.name,
        severity=rule.severity,
        message=message,
        file=document.file,
        pointer=pointer,
        document=document.index,
        url=rule.url,
    )
    return finding.with_location(document.span(pointer, prefer_key=prefer_key))


def findings_from_facts(facts: Dict[str, Any], document: Document, context: CheckContext) -> List[Finding]:
    return [
        rule_finding(rule, message, pointer, document)
        for rule, message, pointer in context.rulebook.evaluate(facts, enabled=context.enabled)
    ]
