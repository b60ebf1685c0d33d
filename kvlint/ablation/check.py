"""`kind: Ablation`: expand every variant into a full deployment, check it, and check the sequence.

An ablation is a `base` deployment (inline, or a path to a Deployment manifest relative to the
ablation file) and ordered `variants`, each a `name` plus `overrides` deep-merged onto the base:

* mappings merge key by key, recursively;
* a list REPLACES the base's list whole (`skip_layers: [0]` is the whole skip set, not an append);
* any other value replaces the base's value;
* `null` deletes the key from the base.

Each expanded variant goes through the same schema, resolve, capacity and rule stages as a
Deployment. Its findings are moved onto the ablation file: a field the variant overrides points at
the override, an inherited field at the base's line (or, for a base given as a path, at the
variant's name). The sequence itself is checked by KV701 (one axis per step) and KV702 (the
recommended steps of docs/ablations.md, results recorded in order) over an ablation facts document.
"""

from __future__ import annotations

import copy
import os
from dataclasses import field, replace
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from kvlint.analysis import Analysis, CheckContext, analyze_deployment, manifest_path, rule_finding
from kvlint.findings import Finding
from kvlint import pointer as json_pointer
from kvlint.load import Document
from kvlint.records import dataclass
from kvlint.schema import MANIFEST_SCHEMA, schema_findings, validate_document

BASE_UNAVAILABLE = "KV703"

# The recommended sequence (docs/ablations.md), in order: (key, label).
RECOMMENDED_STEPS: Tuple[Tuple[str, str], ...] = (
    ("baseline", "the BF16 (unquantized) baseline"),
    ("fp8-per-tensor-uncalibrated", "uncalibrated per-tensor FP8 (unit scales, no skip set)"),
    ("fp8-per-head-calibrated", "calibrated per-head FP8 (checkpoint scales, no skip set)"),
    ("fp8-per-head-skip", "calibrated per-head FP8 with the suspected layer group skipped"),
)
STEP_LABELS = dict(RECOMMENDED_STEPS)

_TOP_LEVEL = ("engine", "hardware", "parallelism", "model", "kv_cache", "memory", "serving", "targets")


# --- the merge --------------------------------------------------------------------------------


def deep_merge(base: Any, overrides: Any) -> Any:
    """base with overrides applied: mappings merge, lists and scalars replace, None deletes."""
    if not isinstance(overrides, dict):
        return copy.deepcopy(overrides)
    merged = copy.deepcopy(base) if isinstance(base, dict) else {}
    for key, value in overrides.items():
        if value is None:
            merged.pop(key, None)
        elif isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


# --- expansion --------------------------------------------------------------------------------


def _reach(data: Any, tokens: Sequence[str]) -> Tuple[int, Any]:
    """How many leading tokens exist in data, and the value reached."""
    current = data
    depth = 0
    for token in tokens:
        if isinstance(current, dict) and token in current:
            current = current[token]
        elif isinstance(current, list) and token.isdigit() and int(token) < len(current):
            current = current[int(token)]
        else:
            break
        depth += 1
    return depth, current


@dataclass
class Variant:
    """One expanded variant of an Ablation: its overrides applied to the base, and where each came from."""

    index: int
    name: str
    overrides: Dict[str, Any]
    results: Any
    data: Dict[str, Any]  # the expanded Deployment manifest
    base_inline: bool

    @property
    def pointer(self) -> str:
        return f"/variants/{self.index}"

    @property
    def name_pointer(self) -> str:
        return f"/variants/{self.index}/name"

    def source_pointer(self, pointer: str) -> str:
        """The ablation-file pointer a pointer into the expanded deployment comes from."""
        tokens = json_pointer.split(pointer)
        if not tokens:
            return self.name_pointer
        prefix = f"{self.pointer}/overrides"
        depth_o, reached_o = _reach(self.overrides, tokens)
        if depth_o == len(tokens) or (depth_o > 0 and not isinstance(reached_o, dict)):
            # set by the variant (a replaced list or scalar owns everything below it)
            return prefix + json_pointer.join(tokens)
        if not self.base_inline:
            return prefix + json_pointer.join(tokens) if depth_o > 0 else self.name_pointer
        depth_b, _ = _reach(self.data_base, tokens)
        if depth_b == len(tokens) or depth_b > depth_o:
            return "/base" + json_pointer.join(tokens)
        if depth_o > 0:  # absent from both: the variant's own section is the closer place
            return prefix + json_pointer.join(tokens)
        return self.name_pointer

    data_base: Dict[str, Any] = field(default_factory=dict)


@dataclass
class Expansion:
    """An Ablation document expanded: its base, its variants, and the problems found on the way."""

    name: Optional[str]
    base: Optional[Dict[str, Any]]
    base_inline: bool
    base_file: Optional[str]  # the path as written, for a base given as a path
    problems: List[Tuple[str, str]]  # (pointer, message) for KV703
    base_schema_errors: List[Tuple[str, str]] = field(default_factory=list)  # of a path base
    outside: List[Tuple[str, str]] = field(default_factory=list)  # (pointer, message) for KV209
    variants: List[Variant] = field(default_factory=list)


def rebase_model_config(base: Dict[str, Any], base_dir: Path, ablation_dir: Path) -> None:
    """model.config of a base loaded from another file is relative to that file: re-anchor it."""
    model = base.get("model")
    if isinstance(model, dict) and isinstance(model.get("config"), str) and not os.path.isabs(model["config"]):
        try:  # realpath, not Path.resolve(): a symbolic-link loop raises no RuntimeError there
            target = os.path.realpath(base_dir / model["config"])
        except (OSError, ValueError):  # a NUL in the path: left as written, KV209 says why
            return
        try:
            model["config"] = os.path.relpath(target, os.path.realpath(ablation_dir))
        except ValueError:  # another drive (Windows)
            model["config"] = str(target)


# Why a path written in a manifest at the given path may not be read (None: it may): the
# pipeline's KV209 check (kvlint.pipeline.paths.path_problem) with the run's configuration.
PathCheck = Callable[[str, Optional[Path]], Optional[str]]


def _contain_base_config(base: Dict[str, Any], written: str, path: Path, expansion: Expansion,
                         contain: Optional[PathCheck]) -> None:
    """The base file's own model.config resolves relative to the base file and must stay inside
    the project like the ablation's: one that leaves it is a KV209 and is taken out, never read."""
    model = base.get("model")
    if contain is None or not isinstance(model, dict):
        return
    config = model.get("config")
    if not isinstance(config, str) or not config.strip():
        return
    reason = contain(config, path)
    if reason is not None:
        del model["config"]
        expansion.outside.append(("/base", f"model.config of the ablation's base {written!r}: {reason}"))


def _load_base_file(written: str, document: Document, expansion: Expansion,
                    contain: Optional[PathCheck] = None) -> Optional[Dict[str, Any]]:
    from kvlint.inputs import InputError, read_bounded
    from kvlint.load import load_bytes
    here = manifest_path(document)
    ablation_dir = here.parent if here is not None else Path.cwd()
    path = Path(written) if os.path.isabs(written) else ablation_dir / written
    try:  # bounded and non-blocking: a FIFO or device as the base is refused
        raw = read_bounded(path)
    except InputError as exc:
        expansion.problems.append(("/base", f"base {written!r} cannot be read: {exc.message}"))
        return None
    loaded = load_bytes(raw, str(path))
    fatal = [f for f in loaded.findings if f.code in ("KV001", "KV004")]
    if fatal:
        first = fatal[0]
        expansion.problems.append(
            ("/base", f"base {written!r} does not load ({first.code} at line {first.line}: {first.message})")
        )
        return None
    deployments = [
        d for d in loaded.documents
        if isinstance(d.data, dict) and d.data.get("apiVersion") == "kvlint/v1" and d.data.get("kind") == "Deployment"
    ]
    if not deployments:
        expansion.problems.append(("/base", f"base {written!r} holds no kind: Deployment manifest"))
        return None
    if len(deployments) > 1:
        expansion.problems.append(
            ("/base", f"base {written!r} holds {len(deployments)} Deployment documents; an ablation needs exactly one")
        )
        return None
    source = deployments[0]
    for finding in validate_document(source):
        expansion.base_schema_errors.append((finding.pointer, finding.message))
    base = {k: copy.deepcopy(v) for k, v in source.data.items() if k not in ("apiVersion", "kind")}
    _contain_base_config(base, written, path, expansion, contain)
    rebase_model_config(base, path.parent, ablation_dir)
    return base


def expand(document: Document, contain: Optional[PathCheck] = None) -> Expansion:
    """The ablation's variants as full Deployment manifests (never raises on malformed input).
    `contain` checks the paths a base file names (KV209), as the pipeline checks the ablation's."""
    data = document.data if isinstance(document.data, dict) else {}
    metadata = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
    name = metadata.get("name") if isinstance(metadata.get("name"), str) else None
    raw_base = data.get("base")
    expansion = Expansion(name=name, base=None, base_inline=isinstance(raw_base, dict), base_file=None, problems=[])
    if isinstance(raw_base, dict):
        expansion.base = copy.deepcopy(raw_base)
    elif isinstance(raw_base, str) and raw_base.strip():
        expansion.base_file = raw_base
        expansion.base = _load_base_file(raw_base, document, expansion, contain)
    elif isinstance(raw_base, str) and raw_base:
        # whitespace only: not "no base" (that would check no variant and pass) but an empty one
        expansion.problems.append(
            ("/base", "the base is empty (only whitespace): no variant can be expanded or checked; "
                      "name a Deployment manifest or write the base inline")
        )
    if expansion.base is None:
        return expansion
    variants = data.get("variants") if isinstance(data.get("variants"), list) else []
    for index, entry in enumerate(variants):
        if not isinstance(entry, dict):
            continue
        variant_name = entry.get("name") if isinstance(entry.get("name"), str) else f"variant-{index + 1}"
        overrides = entry.get("overrides") if isinstance(entry.get("overrides"), dict) else {}
        merged = deep_merge(expansion.base, overrides)
        base_metadata = expansion.base.get("metadata") if isinstance(expansion.base.get("metadata"), dict) else {}
        deployment_metadata = {k: v for k, v in base_metadata.items() if k != "name"}
        deployment_metadata["name"] = name or variant_name
        deployment: Dict[str, Any] = {"apiVersion": "kvlint/v1", "kind": "Deployment", "metadata": deployment_metadata}
        deployment.update({k: v for k, v in merged.items() if k != "metadata"})
        expansion.variants.append(
            Variant(
                index=index,
                name=variant_name,
                overrides=overrides,
                results=entry.get("results"),
                data=deployment,
                base_inline=expansion.base_inline,
                data_base=expansion.base,
            )
        )
    return expansion


# --- axes -------------------------------------------------------------------------------------


def _get(data: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data


def _show(value: Any) -> str:
    if value is None:
        return "unset"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_show(v) for v in value) + "]" if value else "none"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_show(v)}" for k, v in value.items()) + "}"
    return str(value)


@dataclass(frozen=True)
class AxisValue:
    """One variant's value on one ablation axis: what is compared, and how a message shows it."""

    compare: Any  # what is compared
    shown: str  # how the message shows it


def _scales_value(data: Dict[str, Any], facts: Dict[str, Any]) -> AxisValue:
    if not _get(facts, "kv_cache", "quantized"):
        # An unquantized cache has no scales; it equals the plain (per-tensor, unit) layout.
        return AxisValue(None, "none (unquantized)")
    granularity = _get(facts, "scales", "granularity")
    source = _get(facts, "scales", "source")
    checkpoint = _get(facts, "model", "kv_scales") or _get(data, "model", "kv_scales") or "none"
    calibration = _get(data, "kv_cache", "scales", "calibration")
    compare = (granularity, source, checkpoint, repr(sorted(calibration.items())) if isinstance(calibration, dict) else None)
    shown = f"{granularity or '?'}/{source or '?'}"
    if checkpoint != "none":
        shown += f", checkpoint {checkpoint}"
    return AxisValue(compare, shown)


def _scales_equal(a: AxisValue, b: AxisValue) -> bool:
    if a.compare is None or b.compare is None:
        other = b if a.compare is None else a
        return other.compare is None or tuple(other.compare[:2]) == ("per-tensor", "unit")
    return a.compare == b.compare


def _skip_value(data: Dict[str, Any], facts: Dict[str, Any]) -> AxisValue:
    written = _get(data, "kv_cache", "skip_layers")
    entries = written if isinstance(written, list) else []
    if not _get(facts, "kv_cache", "quantized"):
        entries = []  # nothing to keep at the model dtype
    effective = _get(facts, "skip", "effective")
    if entries and isinstance(effective, list) and effective:
        compare: Any = tuple(sorted(str(e) for e in effective))
    else:
        compare = tuple(sorted(str(e) for e in entries))
    return AxisValue(compare, _show(entries))


def _simple(*values: Any) -> AxisValue:
    compare = tuple(repr(v) for v in values)
    shown_parts = [_show(v) for v in values if v is not None]
    return AxisValue(compare, ", ".join(shown_parts) if shown_parts else "default")


def axis_values(data: Dict[str, Any], facts: Dict[str, Any]) -> Dict[str, AxisValue]:
    """Every axis of an expanded variant, in a fixed order."""
    cache_format = _get(facts, "kv_cache", "format")
    written_dtype = _get(data, "kv_cache", "dtype")
    dtype = AxisValue(cache_format or written_dtype, f"{written_dtype}" + (f" ({cache_format})" if cache_format and cache_format != written_dtype else ""))
    backend = _get(facts, "backend", "name") or _get(data, "engine", "attention_backend") or "auto"
    model = _get(data, "model") if isinstance(_get(data, "model"), dict) else {}
    model_identity = {k: v for k, v in model.items() if k != "kv_scales"}
    gpu = _get(facts, "gpu", "id") or _get(data, "hardware", "gpu")
    return {
        "cache dtype": dtype,
        "scales": _scales_value(data, facts),
        "skip set": _skip_value(data, facts),
        "engine": _simple(_get(data, "engine", "name"), _get(data, "engine", "version")),
        "backend": AxisValue(backend, str(backend)),
        "block size": _simple(_get(data, "kv_cache", "block_size")),
        "model": AxisValue(repr(sorted((k, repr(v)) for k, v in model_identity.items())), str(model.get("name"))),
        "GPU": AxisValue(gpu, str(gpu)),
        "parallelism": _simple(_get(data, "parallelism", "tensor"), _get(data, "parallelism", "pipeline"), _get(data, "hardware", "count")),
        "memory limit": _simple(_get(data, "memory"), _get(data, "hardware", "memory")),
        "max_model_len": AxisValue(_get(facts, "serving", "max_model_len") or _get(data, "serving", "max_model_len"), _show(_get(facts, "serving", "max_model_len") or _get(data, "serving", "max_model_len"))),
        "batch shape": _simple(_get(data, "serving", "max_num_seqs"), _get(data, "serving", "max_num_batched_tokens")),
    }


def changed_axes(before: Mapping[str, AxisValue], after: Mapping[str, AxisValue]) -> List[Tuple[str, AxisValue, AxisValue]]:
    changed = []
    for axis, old in before.items():
        new = after[axis]
        same = _scales_equal(old, new) if axis == "scales" else old.compare == new.compare
        if not same:
            changed.append((axis, old, new))
    return changed


def classify_step(data: Dict[str, Any], facts: Dict[str, Any]) -> Optional[str]:
    """Which step of the recommended sequence a variant is, if any."""
    cache = facts.get("kv_cache") or {}
    if cache.get("quantized") is False and (cache.get("format") or cache.get("dtype")):
        return "baseline"
    if not cache.get("fp8") or cache.get("per_token_head"):
        return None
    granularity = _get(facts, "scales", "granularity")
    source = _get(facts, "scales", "source")
    skip = _skip_value(data, facts).compare
    if granularity == "per-tensor" and source == "unit" and not skip:
        return "fp8-per-tensor-uncalibrated"
    if granularity == "per-head" and source == "checkpoint":
        return "fp8-per-head-skip" if skip else "fp8-per-head-calibrated"
    return None


def has_results(results: Any) -> bool:
    """Whether any number was recorded (placeholders of null or {} do not count)."""
    if not isinstance(results, dict):
        return False
    for bucket in results.get("buckets") or ():
        if not isinstance(bucket, dict):
            continue
        quality = bucket.get("quality")
        if isinstance(quality, dict) and any(isinstance(v, (int, float)) and not isinstance(v, bool) for v in quality.values()):
            return True
        if any(isinstance(bucket.get(k), (int, float)) for k in ("ttft_ms", "itl_ms", "throughput_tok_s")):
            return True
    return False


# --- ablation facts ---------------------------------------------------------------------------


@dataclass
class AnalyzedVariant:
    """A variant with its analysis, its values on each axis and the ablation step it takes."""

    variant: Variant
    analysis: Analysis
    axes: Dict[str, AxisValue]
    step: Optional[str]


def ablation_facts(expansion: Expansion, analyzed: Sequence[AnalyzedVariant], file: str) -> Dict[str, Any]:
    """The facts document KV701/KV702 read (kind: Ablation)."""
    steps: List[Dict[str, Any]] = []
    for previous, current in zip(analyzed, analyzed[1:]):
        changes = changed_axes(previous.axes, current.axes)
        described = [f"{axis} ({old.shown} -> {new.shown})" for axis, old, new in changes]
        steps.append({
            "variant": current.variant.name,
            "predecessor": previous.variant.name,
            "axes": [axis for axis, _, _ in changes],
            "axis_count": len(changes),
            "changes": "; ".join(described),
            "pointer": current.variant.name_pointer,
        })
    gaps: List[Dict[str, Any]] = []
    present = {a.step for a in analyzed if a.step}
    for key, label in RECOMMENDED_STEPS:
        if key not in present:
            gaps.append({
                "kind": "missing-step",
                "step": key,
                "pointer": "/variants",
                "lacks": "its BF16 baseline" if key == "baseline" else f"the step {label}",
            })
    recorded = [has_results(a.variant.results) for a in analyzed]
    for position, item in enumerate(analyzed):
        later = [a.variant.name for a, done in zip(analyzed[position + 1:], recorded[position + 1:]) if done]
        if not recorded[position] and later:
            gaps.append({
                "kind": "missing-results",
                "step": item.step,
                "pointer": item.variant.name_pointer,
                "variant": item.variant.name,
                "later": [repr(n) for n in later],
            })
    return {
        "kind": "Ablation",
        "file": file,
        "name": expansion.name,
        "ablation": {
            "base": "inline" if expansion.base_inline else expansion.base_file,
            "variants": [
                {"name": a.variant.name, "step": a.step, "has_results": recorded[i], "pointer": a.variant.name_pointer}
                for i, a in enumerate(analyzed)
            ],
            "steps": steps,
            "gaps": gaps,
        },
    }


# --- analysis ---------------------------------------------------------------------------------


def analyze_variants(document: Document, expansion: Expansion, catalog_dirs, max_scale_overhead: float) -> List[AnalyzedVariant]:
    out: List[AnalyzedVariant] = []
    for variant in expansion.variants:
        analysis = analyze_deployment(variant.data, document.file, manifest_path(document), catalog_dirs, max_scale_overhead)
        analysis.facts["variant"] = variant.name
        analysis.facts["ablation"] = expansion.name
        analysis.facts["ablation_id"] = f"{document.file}#{document.index}"  # groups the side-by-side table
        analysis.facts["results"] = variant.results if isinstance(variant.results, dict) else None
        step = classify_step(variant.data, analysis.facts)
        analysis.facts["ablation_step"] = step
        out.append(AnalyzedVariant(variant, analysis, axis_values(variant.data, analysis.facts), step))
    return out


class _VariantSource:
    """Looks like a Document to the schema stage; spans come from the ablation file."""

    def __init__(self, document: Document, variant: Variant):
        self.file = document.file
        self.index = document.index
        self.data = variant.data
        self._document = document
        self._variant = variant

    def span(self, pointer: str, prefer_key: bool = False):
        return self._document.span(self._variant.source_pointer(pointer), prefer_key=prefer_key)


def _deployment_schema_errors(data: Dict[str, Any], source: Any) -> List[Finding]:
    return schema_findings(data, source, MANIFEST_SCHEMA)


def _variant_schema_findings(
    document: Document, expansion: Expansion, variant: Variant, reported: Sequence[str]
) -> List[Tuple[Finding, str]]:
    """(finding located in the ablation file, message without the variant prefix).

    Problems the ablation's own schema check already reports (the inline base, a mistyped
    override section) or that the base has by itself are not repeated for every variant.
    """
    source = _VariantSource(document, variant)
    base_problems = set(expansion.base_schema_errors)
    if expansion.base_inline and expansion.base is not None:
        as_deployment = {"apiVersion": "kvlint/v1", "kind": "Deployment", "metadata": {"name": "base"}, **expansion.base}
        base_problems |= {(f.pointer, f.message) for f in _deployment_schema_errors(as_deployment, source)}
    out: List[Tuple[Finding, str]] = []
    for finding in _deployment_schema_errors(variant.data, source):
        if finding.pointer == "/metadata" or finding.pointer.startswith("/metadata/"):
            continue  # the ablation's own metadata is checked by the ablation schema
        mapped = variant.source_pointer(finding.pointer)
        if expansion.base_inline and (mapped == "/base" or mapped.startswith("/base/")):
            continue  # the inline base is validated where it stands
        if (finding.pointer, finding.message) in base_problems or mapped in reported:
            continue
        out.append((replace(finding, pointer=mapped), finding.message))
    return out


def _rule_findings(document: Document, context: CheckContext, analyzed: AnalyzedVariant) -> List[Tuple[Finding, str]]:
    variant = analyzed.variant
    out: List[Tuple[Finding, str]] = []
    for rule, message, pointer in context.rulebook.evaluate(analyzed.analysis.facts, enabled=context.enabled):
        out.append((rule_finding(rule, message, variant.source_pointer(pointer), document), message))
    return out


def _merge_per_variant(located: List[Tuple[Variant, Finding, str]]) -> List[Finding]:
    """Prefix each message with its variant; one finding for the same problem on the same line."""
    groups: Dict[Tuple[str, str, int, int, str], List[Tuple[Variant, Finding]]] = {}
    for variant, finding, message in located:
        groups.setdefault((finding.code, finding.pointer, finding.line, finding.column, message), []).append((variant, finding))
    merged: List[Finding] = []
    for (_, _, _, _, message), members in groups.items():
        names = []
        for variant, _ in members:
            if variant.name not in names:
                names.append(variant.name)
        who = f"variant {names[0]!r}" if len(names) == 1 else "variants " + ", ".join(repr(n) for n in names)
        merged.append(replace(members[0][1], message=f"{who}: {message}"))
    return merged


def _ablation_rule_findings(facts: Dict[str, Any], document: Document, context: CheckContext) -> List[Finding]:
    enabled = {code for code in context.enabled if "Ablation" in (context.rulebook.rules[code].kinds if code in context.rulebook.rules else ())}
    findings: List[Finding] = []
    for rule, message, pointer in context.rulebook.evaluate(facts, enabled=enabled):
        findings.append(rule_finding(rule, message, pointer, document, prefer_key=pointer == "/variants"))
    return findings


def _problem(document: Document, pointer: str, message: str) -> Finding:
    finding = Finding(code=BASE_UNAVAILABLE, name="", severity="error", message=message, file=document.file,
                      pointer=pointer, document=document.index)
    return finding.with_location(document.span(pointer))


def outside_findings(document: Document, expansion: Expansion) -> List[Finding]:
    """KV209 for each path a base file names that leads outside the project (not read)."""
    return [
        Finding(code="KV209", name="", severity="error", file=document.file, pointer=pointer, document=document.index,
                message=f"{message}; kvlint does not read it (a directory listed in `allowed-roots` in the "
                        "configuration may be read)").with_location(document.span(pointer))
        for pointer, message in expansion.outside
    ]


def _base_findings(document: Document, expansion: Expansion) -> List[Finding]:
    """KV703 for a base that cannot be used or is not a valid deployment, KV209 for its paths."""
    findings: List[Finding] = [_problem(document, p, m) for p, m in expansion.problems]
    findings.extend(outside_findings(document, expansion))
    if expansion.base_schema_errors:
        first_pointer, first_message = expansion.base_schema_errors[0]
        count = len(expansion.base_schema_errors)
        findings.append(_problem(
            document, "/base",
            f"base {expansion.base_file!r} is not a valid deployment ({count} schema error{'s' if count > 1 else ''}; "
            f"first at {first_pointer or 'the top level'}: {first_message}); run kvlint check on it",
        ))
    return findings


def analyze_ablation(document: Document, context: CheckContext, contain: Optional[PathCheck] = None) -> List[Finding]:
    """Findings of an Ablation document: every variant's, located in the ablation file, plus KV70x."""
    expansion = expand(document, contain)
    findings = _base_findings(document, expansion)
    if expansion.base is None:
        return findings
    analyzed = analyze_variants(document, expansion, context.config.catalog_dirs, context.config.max_scale_overhead)
    reported = {f.pointer for f in validate_document(document)}
    located: List[Tuple[Variant, Finding, str]] = []
    for item in analyzed:
        for finding, message in _variant_schema_findings(document, expansion, item.variant, reported):
            located.append((item.variant, finding, message))
        for finding, message in _rule_findings(document, context, item):
            located.append((item.variant, finding, message))
    findings.extend(_merge_per_variant(located))
    if analyzed:
        facts = ablation_facts(expansion, analyzed, document.file)
        findings.extend(_ablation_rule_findings(facts, document, context))
    return findings


def expand_for_capacity(document: Document, config, contain: Optional[PathCheck] = None,
                        problems: Optional[List[Finding]] = None) -> List[Analysis]:
    """One Analysis per variant, in order, with facts["variant"] (and ["ablation"]) set; a path
    the base file names outside the project is added to `problems` (KV209)."""
    expansion = expand(document, contain)
    if problems is not None:  # what `kvlint check` reports on the base, so capacity exits 1 too
        problems.extend(_base_findings(document, expansion))
    if expansion.base is None:
        return []
    analyzed = analyze_variants(document, expansion, config.catalog_dirs, config.max_scale_overhead)
    return [item.analysis for item in analyzed]
