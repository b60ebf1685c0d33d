"""`kvlint ablate`: the recommended four-step ablation (docs/ablations.md) for a deployment.

BF16 baseline -> FP8 with uncalibrated per-tensor scales -> FP8 with calibrated per-head scales ->
the same with the suspected layer group kept at the model dtype. The base is the deployment itself
with an unquantized cache (so every step shares engine, backend, GPU, memory and serving limits);
each step overrides only what it changes, and carries empty result placeholders to fill in.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Dict, List, Optional

import yaml

from kvlint.ablation.check import rebase_model_config
from kvlint.analysis import analyze_deployment, manifest_kind
from kvlint.errors import UsageError
from kvlint.load import load_bytes, read_input

_BASE_SECTIONS = ("engine", "hardware", "parallelism", "model", "kv_cache", "memory", "serving")
_FIRST_BUCKET = 8192


def _context_label(tokens: int) -> str:
    if tokens % 1024 == 0:
        return f"{tokens // 1024}k"
    return f"{tokens:,}"


def result_placeholders(max_model_len: Optional[int]) -> Dict[str, Any]:
    """Empty results: context buckets 0-8k, 8k-32k, ... up to max_model_len, nothing measured."""
    limit = max_model_len if isinstance(max_model_len, int) and max_model_len > 0 else 131072
    bounds: List[int] = []
    bound = _FIRST_BUCKET
    while bound < limit:
        bounds.append(bound)
        bound *= 4
    bounds.append(limit)
    buckets = []
    low = 0
    for high in bounds:
        buckets.append({
            "context": f"{_context_label(low) if low else '0'}-{_context_label(high)}",
            "max_tokens": high,
            "quality": {},
            "ttft_ms": None,
            "itl_ms": None,
            "throughput_tok_s": None,
        })
        low = high
    return {"date": None, "workload": None, "buckets": buckets}


def suspected_skip_set(facts: Dict[str, Any]) -> List[Any]:
    """Sliding-window layers when the model has them (docs/capacity.md: they retain only their
    window, so keeping them at BF16 costs almost nothing); otherwise the first and last layers,
    the usual outlier-heavy suspects."""
    model = facts.get("model") or {}
    if model.get("has_sliding_layers"):
        return ["sliding_window"]
    layers = model.get("num_layers")
    if isinstance(layers, int) and layers >= 2:
        return [0, layers - 1]
    return [0]


def _literal(accepted: List[str], *preferred: str) -> str:
    for name in preferred:
        if name in accepted:
            return name
    return preferred[-1]


def recommended_ablation(data: Dict[str, Any], facts: Dict[str, Any], source_dir: Path, out_dir: Path) -> Dict[str, Any]:
    """The ablation document for one Deployment manifest and its facts."""
    base: Dict[str, Any] = {k: copy.deepcopy(data[k]) for k in _BASE_SECTIONS if isinstance(data.get(k), dict)}
    rebase_model_config(base, source_dir, out_dir)
    engine = base.setdefault("engine", {})
    if engine.get("name") == "vllm" and engine.get("attention_backend", "auto") == "auto":
        # Static per-head scales need FLASH_ATTN (KV302); fixing it in the base keeps the
        # backend off the axes that change.
        engine["attention_backend"] = "FLASH_ATTN"
    model = base.setdefault("model", {})
    model.pop("kv_scales", None)
    calibration = None
    cache = base.setdefault("kv_cache", {})
    scales = cache.get("scales")
    if isinstance(scales, dict) and isinstance(scales.get("calibration"), dict):
        calibration = scales["calibration"]
    accepted = list((facts.get("kv_cache") or {}).get("accepted") or [])
    model_dtype = (facts.get("model") or {}).get("dtype") or "bfloat16"
    baseline = _literal(accepted, "float16" if model_dtype in ("float16", "fp16") else "bfloat16", "auto")
    fp8 = _literal(accepted, "fp8_e4m3", "fp8")
    base["kv_cache"] = {"dtype": baseline, **({"block_size": cache["block_size"]} if "block_size" in cache else {})}

    per_head_scales: Dict[str, Any] = {"granularity": "per-head", "source": "checkpoint"}
    if calibration:
        per_head_scales["calibration"] = copy.deepcopy(calibration)
    skip = suspected_skip_set(facts)
    max_model_len = (facts.get("serving") or {}).get("max_model_len")

    def step(name: str, description: str, overrides: Dict[str, Any]) -> Dict[str, Any]:
        entry: Dict[str, Any] = {"name": name, "description": description}
        if overrides:
            entry["overrides"] = overrides
        entry["results"] = result_placeholders(max_model_len)
        return entry

    variants = [
        step("bf16", "Step 1: the baseline, cache at the model dtype.", {}),
        step("fp8-per-tensor-unit", "Step 2: the cost of FP8 itself (uncalibrated per-tensor scales of 1.0).",
             {"kv_cache": {"dtype": fp8, "scales": {"granularity": "per-tensor", "source": "unit"}}}),
        step("fp8-per-head-calibrated",
             "Step 3: what calibration and granularity buy (per-head scales from a calibrated checkpoint, "
             "e.g. llm-compressor kv_cache_scheme).",
             {"model": {"kv_scales": "per-head"},
              "kv_cache": {"dtype": fp8, "scales": copy.deepcopy(per_head_scales)}}),
    ]
    kept = "the sliding-window layers" if skip == ["sliding_window"] else "layers " + ", ".join(str(s) for s in skip)
    variants.append(
        step("fp8-per-head-skip",
             f"Step 4: whether one layer group is the problem ({kept} kept at the model dtype).",
             {"model": {"kv_scales": "per-head"},
              "kv_cache": {"dtype": fp8, "scales": copy.deepcopy(per_head_scales), "skip_layers": list(skip)}}))
    name = str((data.get("metadata") or {}).get("name") or "deployment")
    ablation_name = (name[: 253 - len("-kv-ablation")] + "-kv-ablation")
    return {
        "apiVersion": "kvlint/v1",
        "kind": "Ablation",
        "metadata": {"name": ablation_name,
                     "description": f"Four-step KV-cache ablation of {name} (docs/ablations.md), one axis per step."},
        "base": base,
        "variants": variants,
    }


HEADER = """\
# The recommended KV-cache ablation, written by `kvlint ablate {source}`.
# One axis per step (KV701): BF16 -> FP8 uncalibrated per-tensor -> FP8 calibrated per-head ->
# the same with the suspected layer group kept at the model dtype. Keep the batch shape and the
# context-length distribution fixed across all steps, and record each step's results per context
# bucket: quality as {{task: score}}, ttft_ms, itl_ms, throughput_tok_s (null = not measured).
# The deployment's targets are left out: the steps are measurement configurations.
# Overrides deep-merge onto base: mappings merge, lists replace, null deletes a key.
"""


class _Quoted(str):
    """A string written in double quotes (engine versions: "0.20" must not read back as 0.2)."""


class _Dumper(yaml.SafeDumper):
    pass


_Dumper.add_representer(_Quoted, lambda dumper, value: dumper.represent_scalar("tag:yaml.org,2002:str", str(value), style='"'))


def render_ablation_yaml(document: Dict[str, Any], source: str) -> str:
    engine = (document.get("base") or {}).get("engine")
    if isinstance(engine, dict) and isinstance(engine.get("version"), str):
        engine["version"] = _Quoted(engine["version"])
    body = yaml.dump(document, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=100, allow_unicode=True)
    return HEADER.format(source=source) + body


def ablation_for_file(path: str, out: Optional[str], catalog_dirs=(), max_scale_overhead: float = 0.03) -> str:
    """The ablation YAML for the (single) Deployment in `path`; raises UsageError when there is none."""
    display, raw = read_input(path)
    loaded = load_bytes(raw, display)
    fatal = [f for f in loaded.findings if f.code in ("KV001", "KV004")]
    if fatal:
        raise UsageError(f"{path}:{fatal[0].line}: {fatal[0].code} {fatal[0].message}")
    deployments = [
        d for d in loaded.documents
        if manifest_kind(d.data) == "Deployment"
    ]
    if len(deployments) != 1:
        raise UsageError(f"{path}: holds {len(deployments)} kind: Deployment documents; kvlint ablate needs exactly one")
    data = deployments[0].data
    source_path = None if display == "<stdin>" else Path(display)
    analysis = analyze_deployment(data, display, source_path, catalog_dirs, max_scale_overhead)
    source_dir = source_path.parent if source_path is not None else Path.cwd()
    out_dir = Path(out).parent if out else Path.cwd()
    document = recommended_ablation(data, analysis.facts, source_dir, out_dir)
    return render_ablation_yaml(document, path)
