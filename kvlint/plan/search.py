"""Judge every candidate with `kvlint check`'s own code, then rank what is left.

Each candidate manifest goes through `analyze_deployment` (resolve, capacity, the facts) and the
rulebook's `evaluate` (every rule and known defect `check` runs with the same selection), exactly
as `kvlint check` judges a file. A candidate with an error is dropped and counted against its
family; the rest are ranked on capacity against the targets and on risk, and the Pareto front of
(KV tokens, risk) is what the plan proposes.
"""

from __future__ import annotations

import json
import math
import re
from kvlint.records import dataclass, field, replace
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from kvlint.analysis import analyze_deployment
from kvlint.load import Document
from kvlint.schema import validate_document
from kvlint.plan.space import Axes, Candidate, apply

# What makes a configuration riskier, in points (the sentence says why). Warnings from the rules
# and known defects count on their own; these are the judgement calls a reviewer would raise.
RISK_UNCALIBRATED = 3   # static scales of 1.0 or warm-up scales from a few batches
RISK_PER_TENSOR = 1     # one scale per layer where per-head scales exist
RISK_E5M2 = 1           # 2 mantissa bits where e4m3 has 3
RISK_SUB_8BIT = 2       # 4-bit payloads
RISK_WARNING = 2
RISK_DEFECT = 3
RISK_WIDE_BAND = 1      # the estimated pool's band wider than 10% of the figure
RISK_MEMORY_ABOVE_DEFAULT = 1  # per started MEMORY_STEP above the release's default
MEMORY_STEP = 0.03
# Payload bits per element of llama.cpp's quantized cache types (ggml/src/ggml-common.h block
# layouts: q8_0 8-bit, q5_0/q5_1 5-bit, q4_0/q4_1/iq4_nl 4-bit quants, each block with its scale).
_GGML_PAYLOAD_BITS = {"q8_0": 8, "q5_0": 5, "q5_1": 5, "q4_0": 4, "q4_1": 4, "iq4_nl": 4}
WIDE_BAND = 0.10


@dataclass
class Outcome:
    """One candidate judged: its findings (code, severity, message) and capacity facts."""

    candidate: Candidate
    findings: List[Tuple[str, str, str]]
    capacity: Dict[str, Any]
    facts: Dict[str, Any]
    risk: int = 0
    risk_reasons: List[str] = field(default_factory=list)
    meets: Optional[str] = None  # "yes", "band" (inside the estimate's band), "no", None (no target)
    assumptions: Tuple[str, ...] = ()  # the capacity model's, to say why a figure is missing
    order: int = 0  # position in the enumeration: the last tie-breaker (a planned file's values come first)

    @property
    def errors(self) -> List[Tuple[str, str, str]]:
        return [f for f in self.findings if f[1] == "error"]

    @property
    def warnings(self) -> List[Tuple[str, str, str]]:
        return [f for f in self.findings if f[1] == "warning"]

    @property
    def tokens(self) -> Optional[int]:
        value = self.capacity.get("kv_cache_tokens")
        return value if isinstance(value, int) else None

    @property
    def tokens_low(self) -> Optional[int]:
        band = self.capacity.get("band")
        return band["tokens_low"] if isinstance(band, dict) else self.tokens

    @property
    def concurrency(self) -> Optional[float]:
        value = self.capacity.get("max_concurrency")
        return float(value) if isinstance(value, (int, float)) else None

    def to_json(self) -> Dict[str, Any]:
        band = self.capacity.get("band") if isinstance(self.capacity.get("band"), dict) else None
        return {
            "configuration": self.candidate.to_json(),
            "label": self.candidate.label(),
            "backend_selected": (self.facts.get("backend") or {}).get("name"),
            "kv_cache_tokens": self.tokens,
            "kv_cache_tokens_low": band["tokens_low"] if band else self.tokens,
            "kv_cache_tokens_high": band["tokens_high"] if band else self.tokens,
            "max_concurrency": round(self.concurrency, 2) if self.concurrency is not None else None,
            "max_model_len": (self.facts.get("serving") or {}).get("max_model_len"),
            "meets_targets": self.meets,
            "risk": self.risk,
            "risk_reasons": list(self.risk_reasons),
            "findings": [{"code": c, "severity": s, "message": m} for c, s, m in self.findings],
        }


@dataclass
class Targets:
    context: Optional[int] = None
    concurrency: Optional[float] = None
    kv_tokens: Optional[int] = None

    def any(self) -> bool:
        return self.concurrency is not None or self.kv_tokens is not None

    def to_json(self) -> Dict[str, Any]:
        return {"context": self.context, "concurrency": self.concurrency, "kv_tokens": self.kv_tokens}


@dataclass
class PlanResult:
    engine: str
    release: str
    considered: int
    evaluated: int
    kept: List[Outcome]
    front: List[Outcome]
    excluded: List[Dict[str, Any]]
    baseline: Optional[Outcome]
    targets: Targets
    unknown_capacity: Optional[str] = None  # why capacity cannot be ranked (the missing input)
    notes: List[str] = field(default_factory=list)

    unranked: int = 0  # candidates without an error whose capacity is unknown
    floor_tokens: Optional[int] = None  # plan FILE without targets: hold at least the baseline's tokens

    @property
    def chosen_index(self) -> Optional[int]:
        """The proposal: with targets, the least risky row that meets them for certain; with a
        baseline and no targets, the least risky row holding at least the baseline's KV tokens;
        otherwise (or when no row qualifies) the row with the most KV tokens."""
        if not self.front:
            return None
        qualifying = []
        if self.targets.any():
            qualifying = [i for i, o in enumerate(self.front) if o.meets == "yes"]
        elif self.floor_tokens is not None:
            qualifying = [i for i, o in enumerate(self.front) if (o.tokens or 0) >= self.floor_tokens]
        return qualifying[-1] if qualifying else 0

    @property
    def chosen(self) -> Optional[Outcome]:
        index = self.chosen_index
        return self.front[index] if index is not None else None

    def reasons(self) -> List[str]:
        """Why each Pareto row is there, in front order."""
        reasons = [win_reason(o, self.front, i) for i, o in enumerate(self.front)]
        index = self.chosen_index
        if index is not None:
            if self.targets.any() and self.front[index].meets == "yes" and index > 0:
                why = "chosen: the least risky configuration that meets every target"
            elif self.floor_tokens is not None and not self.targets.any() and index > 0:
                why = "chosen: the least risky configuration holding at least the baseline's KV tokens"
            else:
                why = "chosen"
            reasons[index] = f"{why}; {reasons[index]}"
        return reasons


# Facts sections that change with the sizing axes (memory fraction, context, block size through
# capacity). A rule that names none of them reads the same facts for every sizing of a
# configuration, so its verdict is kept per value of the other sections (Judge).
SIZING_SECTIONS = ("capacity", "serving", "memory")
# Keywords through which a condition could read facts it does not name.
_OPEN_KEYWORDS = ("additionalProperties", "patternProperties", "propertyNames", "minProperties",
                  "maxProperties", "unevaluatedProperties", "dependentSchemas", "$ref", "$dynamicRef")


def _names_only(schema: Any) -> bool:
    """Whether the top level of a condition reads only the properties it names."""
    if not isinstance(schema, dict):
        return isinstance(schema, bool)
    if any(k in schema for k in _OPEN_KEYWORDS):
        return False
    for key in ("allOf", "anyOf", "oneOf"):
        if not all(_names_only(s) for s in schema.get(key, [])):
            return False
    return all(_names_only(schema[k]) for k in ("not", "if", "then", "else") if k in schema)


def _reads_sizing(rule: Any) -> bool:
    """Whether a rule may read a sizing section: its condition or `for_each` names one (as a
    quoted key anywhere in the schema), a `{path}` of its message or pointer starts with one, or
    its condition could read properties it does not name."""
    structure = json.dumps([rule.condition, rule.for_each], default=str)
    if any(f'"{section}"' in structure or f"/{section}" in structure for section in SIZING_SECTIONS):
        return True
    templates = json.dumps([rule.message, rule.pointer], default=str)
    paths = re.findall(r"\{([^{}]+)\}", templates)
    if any(path.split(".")[0] in SIZING_SECTIONS for path in paths):
        return True
    return not _names_only(rule.condition)


def split_rulebook(rulebook: Any, enabled: Any) -> Tuple[Any, Any]:
    """(rules that may read the sizing sections, rules that cannot), as two rulebooks of the same
    rules: each is evaluated by Rulebook.evaluate, as `check` evaluates it."""
    sizing, fixed = type(rulebook)(), type(rulebook)()
    for rule in rulebook:
        if enabled is not None and rule.code not in enabled:
            continue
        (sizing if _reads_sizing(rule) else fixed).add(rule)
    return sizing, fixed


_FACTS_KEY = json.JSONEncoder(default=str)


class Judge:
    """`kvlint check`'s judgement of one manifest dict, without a file: schema, resolve, capacity,
    rules. The rules that read no sizing section (SIZING_SECTIONS) are evaluated once per value of
    the facts they can read; the result is the same list `Rulebook.evaluate` returns on the whole
    rulebook, in the same order (tests/test_plan.py compares the two)."""

    def __init__(self, rulebook: Any, enabled: Any, catalog_dirs: Sequence[str] = (),
                 max_scale_overhead: float = 0.03, manifest_path: Optional[Path] = None):
        self.rulebook = rulebook
        self.enabled = enabled
        self.catalog_dirs = tuple(catalog_dirs)
        self.max_scale_overhead = max_scale_overhead
        self.manifest_path = manifest_path
        self.sizing, self.fixed = split_rulebook(rulebook, enabled)
        self.order = {rule.code: i for i, rule in enumerate(rulebook)}
        # Codes whose verdict cannot change with the sizing axes (they read no sizing section).
        self.fixed_codes = {rule.code for rule in self.fixed if rule.stage == "facts" and rule.condition is not None}
        self._fixed: Dict[str, List[Tuple[Any, str, str]]] = {}

    def evaluate(self, facts: Dict[str, Any]) -> List[Tuple[Any, str, str]]:
        # Keys in the order the resolve stage wrote them (it writes them in one order for one
        # configuration; facts equal but written in another order only miss the memo).
        key = _FACTS_KEY.encode({k: v for k, v in facts.items() if k not in SIZING_SECTIONS})
        fixed = self._fixed.get(key)
        if fixed is None:
            fixed = self._fixed[key] = self.fixed.evaluate(facts)
        fired = fixed + self.sizing.evaluate(facts)
        return sorted(fired, key=lambda item: self.order[item[0].code])

    def judge(self, data: Dict[str, Any], candidate: Candidate) -> Outcome:
        # The schema stage first, as `check` runs it (its fast path accepts a valid manifest cheaply).
        findings = [(f.code, f.severity or "error", f.message)
                    for f in validate_document(Document("<plan>", 0, data, {}, {}, 1)) if f.code in self.enabled]
        analysis = analyze_deployment(data, "<plan>", self.manifest_path, self.catalog_dirs, self.max_scale_overhead)
        facts = analysis.facts
        findings += [(rule.code, rule.severity, message) for rule, message, _ in self.evaluate(facts)]
        outcome = Outcome(candidate, findings, facts.get("capacity") or {}, facts)
        if analysis.capacity is not None and outcome.tokens is None:
            outcome.assumptions = tuple(analysis.capacity.assumptions)
        return outcome


def score_risk(outcome: Outcome, engine_default_memory: Optional[float]) -> None:
    """Risk points and their reasons (kvlint.plan.search's RISK_* constants)."""
    reasons: List[str] = []
    points = 0
    cache = outcome.facts.get("kv_cache") or {}
    scales = outcome.facts.get("scales") or {}
    candidate = outcome.candidate
    fmt = str(cache.get("format") or "")
    if candidate.is_ggml():
        # llama.cpp's block types carry their scale in every block (nothing to calibrate); what
        # costs accuracy is a payload under 8 bits (q4_0, q4_1, iq4_nl, q5_0, q5_1)
        for side, name in (("K", candidate.dtype), ("V", candidate.value_dtype or candidate.dtype)):
            bits = _GGML_PAYLOAD_BITS.get(name)
            if bits is not None and bits < 8:
                points += RISK_SUB_8BIT
                reasons.append(f"{bits}-bit {side} cache ({name})")
    elif cache.get("quantized"):
        source = (candidate.scales or (None, None))[1] or scales.get("source")
        granularity = (candidate.scales or (None, None))[0] or scales.get("granularity")
        if source in ("unit", "warmup"):
            points += RISK_UNCALIBRATED
            reasons.append(f"uncalibrated scales ({source})")
        if granularity == "per-tensor":
            points += RISK_PER_TENSOR
            reasons.append("per-tensor scales only")
        if "e5m2" in fmt:
            points += RISK_E5M2
            reasons.append("fp8_e5m2 (2 mantissa bits) rather than e4m3")
        if "fp4" in fmt or "int4" in fmt:
            points += RISK_SUB_8BIT
            reasons.append("4-bit cache payload")
    for code, severity, _ in outcome.findings:
        if code.startswith("KV8"):
            points += RISK_DEFECT
            reasons.append(f"known defect {code}")
        elif severity == "warning":
            points += RISK_WARNING
            reasons.append(f"warning {code}")
    band = outcome.capacity.get("band")
    tokens = outcome.tokens
    if isinstance(band, dict) and tokens:
        width = (band["tokens_high"] - band["tokens_low"]) / tokens
        if width > WIDE_BAND:
            points += RISK_WIDE_BAND
            reasons.append(f"capacity band {width:.0%} wide")
    if (candidate.memory is not None and engine_default_memory is not None
            and candidate.memory > engine_default_memory + 1e-9):
        # less headroom for activations and fragmentation: a point per started 0.03 above the default
        steps = math.ceil(round((candidate.memory - engine_default_memory) / MEMORY_STEP, 6))
        points += RISK_MEMORY_ABOVE_DEFAULT * steps
        reasons.append(f"memory fraction {candidate.memory:.2f} above the default {engine_default_memory:.2f}")
    outcome.risk = points
    outcome.risk_reasons = reasons


def target_verdict(outcome: Outcome, targets: Targets) -> Optional[str]:
    """"yes" when even the low end of the capacity meets every target, "band" when only the
    favourable end does, "no" otherwise; None without targets."""
    if not targets.any():
        return None
    band = outcome.capacity.get("band") if isinstance(outcome.capacity.get("band"), dict) else None
    verdicts = []
    if targets.kv_tokens is not None and outcome.tokens is not None:
        low = band["tokens_low"] if band else outcome.tokens
        high = band["tokens_high"] if band else outcome.tokens
        verdicts.append("yes" if low >= targets.kv_tokens else "band" if high >= targets.kv_tokens else "no")
    if targets.concurrency is not None and outcome.concurrency is not None:
        low = band["max_concurrency_low"] if band else outcome.concurrency
        high = band["max_concurrency_high"] if band else outcome.concurrency
        verdicts.append("yes" if low >= targets.concurrency else "band" if high >= targets.concurrency else "no")
    if not verdicts:
        return None
    return "no" if "no" in verdicts else "band" if "band" in verdicts else "yes"


_MEETS_RANK = {"yes": 0, None: 0, "band": 1, "no": 2}


def sort_key(outcome: Outcome) -> Tuple[Any, ...]:
    """Targets met first, then more KV tokens, then less risk; ties: the simpler configuration."""
    c = outcome.candidate
    # llama.cpp: -c fixes the tokens, so of equal tokens and risk the smaller cache wins
    pool = outcome.capacity.get("pool_bytes") if c.is_ggml() else None
    return (_MEETS_RANK[outcome.meets], -(outcome.tokens or 0), outcome.risk,
            pool if isinstance(pool, int) else 0, c.backend != "auto", c.block_size is not None, c.memory is not None, c.skip is not None,
            c.pipeline, outcome.order)


def pareto_front(outcomes: Sequence[Outcome]) -> List[Outcome]:
    """The outcomes no other outcome beats on both KV tokens (more) and risk (less), best first;
    of several with the same (tokens, risk), the simplest (sort_key)."""
    ordered = sorted(outcomes, key=sort_key)
    front: List[Outcome] = []
    best_risk: Optional[int] = None
    for outcome in ordered:
        if best_risk is not None and outcome.risk >= best_risk:
            continue
        front.append(outcome)
        best_risk = outcome.risk
    return front


def win_reason(outcome: Outcome, front: Sequence[Outcome], index: int) -> str:
    """Why a front member is on the front: what it has that every cheaper-risk option lacks."""
    tokens = outcome.tokens or 0
    if index == 0:
        reason = "most KV tokens"
        if outcome.meets == "yes":
            reason += ", meets every target"
        elif outcome.meets == "band":
            reason += ", meets the targets only at the favourable end of the estimate"
        elif outcome.meets == "no":
            reason += ", but below the targets"
        return reason
    previous = front[index - 1]
    lost = (previous.tokens or 0) - tokens
    share = lost / (previous.tokens or 1)
    return (f"{previous.risk - outcome.risk} risk point(s) fewer than the row above for "
            f"{lost:,} fewer KV tokens ({share:.0%})")


def family_exclusions(rejected: Sequence[Outcome], kept: Sequence[Outcome]) -> List[Dict[str, Any]]:
    """Per dtype family and per backend that has no surviving candidate: the error that excluded
    it most often, with its rule code."""
    out: List[Dict[str, Any]] = []
    keys: List[Tuple[Any, str]] = [(lambda c: c.dtype, ""), (lambda c: c.backend, "backend ")]
    if any(o.candidate.is_ggml() for o in list(rejected) + list(kept)):
        # llama.cpp: K and V are separate axes, and flash attention decides what V may be (KV330)
        keys = [(lambda c: f"K {c.dtype}", ""), (lambda c: f"V {c.value_dtype or c.dtype}", ""),
                (lambda c: f"V {c.value_dtype or c.dtype} with fa {c.flash_attention}", "")]
    if not kept:
        keys = keys[:1]  # nothing passes: the first axis says why, once per value
    for number, (key_of, label) in enumerate(keys):
        if number == 2:  # llama.cpp's "V x with fa y": only where V x itself is not excluded already
            said = {e["family"] for e in out}
            rejected = [o for o in rejected if f"V {o.candidate.value_dtype or o.candidate.dtype}" not in said]
        kept_values = {key_of(o.candidate) for o in kept}
        counts: Dict[str, Dict[Tuple[str, str], int]] = {}
        totals: Dict[str, int] = {}
        for outcome in rejected:
            value = key_of(outcome.candidate)
            if value in kept_values:
                continue
            totals[value] = totals.get(value, 0) + 1
            for code, _, message in outcome.errors[:1] or [("unknown", "", _unknown_reason(outcome))]:
                key = (code, message)
                counts.setdefault(value, {})[key] = counts.setdefault(value, {}).get(key, 0) + 1
        for value, reasons in counts.items():
            (code, message), hits = max(reasons.items(), key=lambda kv: (kv[1], kv[0]))
            out.append({"family": f"{label}{value}", "code": code, "reason": message,
                        "candidates": totals[value], "share": round(hits / totals[value], 2)})
    return out


def _unknown_reason(outcome: Outcome) -> str:
    return capacity_unknown_reason(outcome) or "no capacity figure"


def capacity_unknown_reason(outcome: Outcome) -> Optional[str]:
    """Why the capacity of a candidate without errors is unknown, naming the missing input."""
    if outcome.tokens is not None:
        return None
    model = outcome.facts.get("model") or {}
    cache = outcome.facts.get("kv_cache") or {}
    if not model.get("known") and not model.get("num_layers"):
        return (f"the model geometry of {model.get('name') or 'the model'} is unknown: give --model-config "
                "(its config.json) so the KV bytes per token can be computed")
    if any("weight size unknown" in a for a in outcome.assumptions):
        return ("the model's weight size is unknown, so the KV pool cannot be computed: give --weights "
                "(the checkpoint's size, e.g. 15GB)")
    if cache.get("known") is False or not cache.get("format"):
        return f"kvlint has no storage format for {cache.get('dtype')}, so its bytes per token are unknown"
    gpu = outcome.facts.get("gpu") or {}
    if not gpu.get("memory_bytes"):
        return "the GPU memory is unknown: give a catalogued --gpu"
    said = [a for a in outcome.assumptions if "cannot be computed" in a or "unknown" in a]
    return said[0] if said else "the capacity cannot be computed for this configuration"


def search(base: Dict[str, Any], axes: Axes, judge: Judge, engine: str, release: str, targets: Targets,
           baseline: Optional[Outcome] = None, engine_default_memory: Optional[float] = None,
           limit: Optional[int] = None) -> PlanResult:
    """Judge every candidate of `axes` on `base`, and rank what passes."""
    kept: List[Outcome] = []
    rejected: List[Outcome] = []
    unknown: List[Outcome] = []
    considered = 0
    seen: set = set()
    judged = 0
    # Per configuration without its sizing (context, memory fraction): the findings of a judged
    # sizing that has an error from a rule reading no sizing section. Every other sizing of the
    # configuration has the same facts outside those sections (tests/test_plan.py checks it), so
    # the same error: it is counted against the candidate without judging it again.
    screened: Dict[Candidate, List[Tuple[str, str, str]]] = {}
    for candidate in axes.candidates():
        if limit is not None and considered >= limit:
            break
        considered += 1
        group = replace(candidate, max_model_len=None, memory=None)
        if group in screened:
            rejected.append(Outcome(candidate, screened[group], {}, {}))
            continue
        if candidate in seen:
            continue
        seen.add(candidate)
        data = apply(base, candidate, engine)
        judged += 1
        outcome = judge.judge(data, candidate)
        outcome.order = considered
        if outcome.errors:
            rejected.append(outcome)
            if any(code in judge.fixed_codes for code, _, _ in outcome.errors):
                screened[group] = [f for f in outcome.findings if f[0] in judge.fixed_codes]
            continue
        if outcome.tokens is None:
            unknown.append(outcome)
            continue
        score_risk(outcome, engine_default_memory)
        outcome.meets = target_verdict(outcome, targets)
        kept.append(outcome)
    excluded = list(axes.left_out)
    excluded.extend(family_exclusions(rejected, kept + unknown))  # unknown capacity: said once, below
    result = PlanResult(engine, release, considered, judged, kept, [], excluded, baseline, targets)
    result.unranked = len(unknown)
    if unknown and not kept:
        result.unknown_capacity = capacity_unknown_reason(unknown[0])
        return result
    if unknown:
        families = sorted({o.candidate.dtype for o in unknown})
        result.notes.append(f"{len(unknown)} candidate(s) without a capacity figure left unranked "
                            f"({', '.join(families)}): {capacity_unknown_reason(unknown[0])}")
    result.front = pareto_front(kept)
    return result
