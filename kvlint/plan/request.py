"""What a plan starts from: the fixed facts (model, GPU, engine release) as a base manifest, the
targets, and for `kvlint plan FILE` the file's own deployment as the baseline."""

from __future__ import annotations

import copy
import os
from kvlint.records import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from kvlint.analysis import manifest_kind
from kvlint.catalog import load_catalogs
from kvlint.config import Config
from kvlint.errors import UsageError
from kvlint.load import Document, InputError, read_input
from kvlint.pipeline.native import load_source
from kvlint.plan.search import Targets
from kvlint.plan.space import GGML_ENGINES

# The sections of a deployment the plan keeps from a file: the facts it may not change (the model,
# the GPU, the engine release) and the settings it does not search (serving limits, environment).
_KEPT = ("metadata", "engine", "hardware", "parallelism", "model", "kv_cache", "speculative", "memory", "serving")


@dataclass
class PlanRequest:
    """The fixed inputs of a plan: the base manifest (facts the plan may not change), the targets,
    and the source file for `plan FILE` (its format decides what the plan writes)."""

    base: Dict[str, Any]
    engine: str
    release: str
    targets: Targets
    gpu_count: int
    fixed_parallel: Optional[Tuple[int, int]] = None
    source: Optional[str] = None  # the file planned (kvlint plan FILE)
    source_format: str = "kvlint"  # "kvlint" or the native format name
    document: Optional[Document] = None  # the file's document (spans, for a patch)
    manifest_path: Optional[Path] = None  # where model.config paths resolve from
    notes: List[str] = field(default_factory=list)
    # The file's targets besides those the plan ranks on (planned_kv_tokens, max_scale_overhead).
    kept_targets: Dict[str, Any] = field(default_factory=dict)


def resolve_release(engine: str, release: str, catalog_dirs=()) -> str:
    """`newest` is the newest catalogued release; any other value must be catalogued."""
    if engine in GGML_ENGINES:
        return _resolve_ggml_build(engine, release)
    catalogs = load_catalogs(tuple(catalog_dirs))
    if engine not in catalogs.engines.engines():
        raise UsageError(f"--engine {engine}: kvlint plans {', '.join(sorted(catalogs.engines.engines()) + list(GGML_ENGINES))} "
                         "deployments")
    known = catalogs.engines.known_versions(engine)
    if release == "newest":
        return known[-1]
    if catalogs.engines.release(engine, release) is None:
        raise UsageError(f"--release {release}: {engine} releases kvlint knows run from {known[0]} to "
                         f"{known[-1]}; plan for one of them (or `newest`)")
    return release


def _resolve_ggml_build(engine: str, release: str) -> str:
    """A llama.cpp build (bNNNN) the ggml catalog covers; `newest` is the newest it covers."""
    from kvlint.catalog.ggml import load_ggml_catalog  # on use: only llama.cpp plans need it

    catalog = load_ggml_catalog()
    low, high = catalog.known_range(engine) or ("", "")
    if release == "newest":
        return high
    if not catalog.known(engine, release):
        raise UsageError(f"--release {release}: {engine} builds kvlint knows run from {low} to {high}; "
                         "plan for one of them (or `newest`)")
    return release


def request_from_options(model: Optional[str], model_config: Optional[str], gpu: str, gpu_count: int,
                         engine: str, release: str, targets: Targets, checkpoint_kv_scales: Optional[str],
                         config: Config, weights: Optional[str] = None) -> PlanRequest:
    """A new deployment: the base manifest from the command line's facts."""
    if not model and not model_config:
        raise UsageError("give the model: --model ID (a Hugging Face id) and/or --model-config config.json")
    version = resolve_release(engine, release, config.catalog_dirs)
    base: Dict[str, Any] = {
        "apiVersion": "kvlint/v1",
        "kind": "Deployment",
        "metadata": {"name": "plan"},
        "engine": {"name": engine, "version": version},
        "hardware": {"gpu": gpu, "count": gpu_count},
        "model": {"name": model or Path(model_config).parent.name or "model"},  # type: ignore[arg-type]
        "kv_cache": {"dtype": "auto"},
    }
    path = None
    if model_config:
        resolved = Path(model_config).resolve()
        if not resolved.is_file():
            raise UsageError(f"--model-config {model_config}: no such file")
        base["model"]["config"] = os.path.relpath(resolved, Path.cwd())
        path = Path.cwd() / "plan.yaml"
    if checkpoint_kv_scales:
        base["model"]["kv_scales"] = checkpoint_kv_scales
    if weights:
        base["model"]["weights"] = {"bytes": weights}
    if targets.context and engine not in GGML_ENGINES:  # llama.cpp: -c is the context axis x slots
        base["serving"] = {"max_model_len": targets.context}
    return PlanRequest(base, engine, version, targets, gpu_count, source=None, manifest_path=path)


def request_from_file(path: str, targets: Targets, checkpoint_kv_scales: Optional[str], config: Config,
                      release: Optional[str] = None) -> PlanRequest:
    """`kvlint plan FILE`: the file's one deployment is the base and the baseline row."""
    try:
        display, raw = read_input(path)
    except InputError as error:
        raise UsageError(f"{path}: {error.message}") from None
    source = load_source(raw, display, path, config)
    documents = source.documents if source.format != "kvlint" else source.loaded.documents
    deployments = [d for d in documents if manifest_kind(d.data) == "Deployment"]
    if len(deployments) != 1:
        problems = [f.one_line() for f in source.loaded.findings + source.findings if f.severity == "error"]
        detail = f" ({problems[0]})" if problems else ""
        raise UsageError(f"{path}: holds {len(deployments)} deployments kvlint reads; kvlint plan FILE needs "
                         f"exactly one{detail}")
    document = deployments[0]
    data = document.data
    missing = source.missing.get(document.index, ())
    if missing:
        raise UsageError(f"{path}: the file does not state {', '.join(m.lstrip('/').replace('/', '.') for m in missing)}; "
                         "state it (a `# kvlint: key=value` comment, kvlint.toml [defaults]) before planning")
    base = {k: copy.deepcopy(data[k]) for k in _KEPT if isinstance(data.get(k), dict)}
    base = {"apiVersion": "kvlint/v1", "kind": "Deployment", **base}
    engine = str((base.get("engine") or {}).get("name") or "")
    version = str((base.get("engine") or {}).get("version") or "")
    if release:
        version = resolve_release(engine, release, config.catalog_dirs)
        base["engine"]["version"] = version
    else:
        resolve_release(engine, version, config.catalog_dirs)
    if checkpoint_kv_scales:
        base.setdefault("model", {})["kv_scales"] = checkpoint_kv_scales
    hardware = base.get("hardware") or {}
    parallel = base.get("parallelism") or {}
    count = hardware.get("count")
    if not isinstance(count, int):
        count = int(parallel.get("tensor") or 1) * int(parallel.get("pipeline") or 1)
    serving = base.get("serving") or {}
    written_context = serving.get("max_model_len")
    if engine in GGML_ENGINES and isinstance(serving.get("context_size"), int) and serving["context_size"] > 0:
        written_context = serving["context_size"] // max(1, int(serving.get("max_num_seqs") or 1))
    merged = Targets(
        context=targets.context or written_context,
        concurrency=targets.concurrency if targets.concurrency is not None else (data.get("targets") or {}).get("min_concurrency"),
        kv_tokens=targets.kv_tokens if targets.kv_tokens is not None else (data.get("targets") or {}).get("min_kv_tokens"),
    )
    manifest_path = None if display == "<stdin>" else Path(display)
    written = data.get("targets") if isinstance(data.get("targets"), dict) else {}
    kept_targets = {k: written[k] for k in ("planned_kv_tokens", "max_scale_overhead") if k in written}
    if "max_scale_overhead" in kept_targets:  # it moves KV605's threshold: judge with it
        base["targets"] = {"max_scale_overhead": kept_targets["max_scale_overhead"]}
    return PlanRequest(base, engine, version, merged, count, source=path, source_format=source.format,
                       document=document, manifest_path=manifest_path, kept_targets=kept_targets)
