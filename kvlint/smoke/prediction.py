"""Layer groups and the capacity stage's prediction of their bytes per block (no torch).

The smoke test measures bytes per block on the tensors it allocates and compares them with what
`kvlint capacity` predicts. The prediction must come from the capacity stage's own formulas
(`kvlint.capacity.layout.format_token_bytes`, per GPU, per layer), never from a second copy kept
here: a manifest whose capacity figure forgot the per-token scales must show up as a mismatch.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Dict, List, Optional, Tuple

from kvlint.deployment import Deployment, LayerPlan
from kvlint.capacity import layout
from kvlint import capacity
from kvlint.records import dataclass

DEFAULT_BLOCK_SIZE = 16  # vLLM CacheConfig.DEFAULT_BLOCK_SIZE


@dataclass(frozen=True)
class LayerGroup:
    """Layers that share geometry and storage format on one GPU; the smoke test's unit of work."""

    name: str
    kind: str  # full | sliding | chunked
    window: Optional[int]
    cache_format: str  # the effective storage format id (a skipped layer's is the model dtype)
    skipped: bool
    kv_heads: int  # per GPU
    head_dim: int
    v_head_dim: int
    is_mla: bool
    block_size: int  # tokens per block, as the capacity stage sizes this layer's pages
    plans: Tuple[LayerPlan, ...]

    @property
    def layer_indices(self) -> List[int]:
        return [p.geometry.index for p in self.plans]


def _effective_format(plan: LayerPlan, model_dtype: Optional[str]) -> str:
    return layout.effective_format(plan, model_dtype)


def layer_groups(deployment: Deployment) -> List[LayerGroup]:
    model_dtype = deployment.model.dtype if deployment.model else None
    sizes = layer_block_sizes(deployment)
    default_size = block_size(deployment)
    buckets: Dict[tuple, List[LayerPlan]] = {}
    for plan in deployment.layers:
        g = plan.geometry
        key = (
            sizes.get(g.index, default_size),
            g.kind,
            g.window if g.kind != "full" else None,
            _effective_format(plan, model_dtype),
            plan.skipped,
            deployment.kv_heads_per_gpu(g),
            g.head_dim,
            g.v_head_dim,
            g.is_mla,
        )
        buckets.setdefault(key, []).append(plan)
    groups = []
    for key, plans in buckets.items():
        size, kind, window, fmt, skipped, heads, d, dv, mla = key
        label = kind if window is None else f"{kind}({window})"
        name = f"{label}/{fmt}" + ("/skipped" if skipped else "")
        groups.append(LayerGroup(name, kind, window, fmt, skipped, heads, d, dv, mla, size, tuple(plans)))
    names = [g.name for g in groups]
    if len(set(names)) != len(names):  # same layers at different block sizes or head counts
        groups = [replace(g, name=f"{g.name}#{i}") for i, g in enumerate(groups)]
    return groups


def layer_block_sizes(deployment: Deployment) -> Dict[int, int]:
    """Layer index -> tokens per block of its KV-cache group in the capacity stage's engine model
    (vLLM raises the quantized layers' block size beside BF16 skip layers, for example)."""
    engine = _engine_capacity(deployment)
    sizes: Dict[int, int] = {}
    for group in getattr(engine, "groups", ()) or ():
        for index in group.layers:
            sizes[index] = group.block_size
    return sizes


def engine_summary(deployment: Deployment) -> Optional[Dict[str, object]]:
    """The capacity stage's engine figures the smoke report shows beside its own measurement."""
    engine = _engine_capacity(deployment)
    if engine is None:
        return None
    return {
        "engine": engine.engine,
        "version": engine.version,
        "block_size": engine.block_size,
        "bytes_per_block": engine.bytes_per_block,
        "groups": [
            {"kind": g.kind, "window": g.window, "layers": list(g.layers), "cache_format": g.cache_format,
             "block_size": g.block_size, "bytes_per_token": g.bytes_per_token, "page_bytes": g.page_bytes,
             "page_padded": g.page_padded}
            for g in engine.groups
        ],
    }


def block_size(deployment: Deployment) -> int:
    """The primary block size the capacity stage uses for this deployment's pool."""
    engine = _engine_capacity(deployment)
    size = getattr(engine, "block_size", None) if engine is not None else None
    if isinstance(size, int) and size > 0:
        return size
    return deployment.block_size or deployment.backend_block_size or DEFAULT_BLOCK_SIZE


def _engine_capacity(deployment: Deployment):
    """`kvlint.capacity.compute(deployment).engine`, or None where it cannot be had (then the
    layout formula alone, at the manifest's block size, is the prediction)."""
    try:
        return capacity.compute(deployment).engine
    except Exception:  # the capacity stage reports its own problems; the smoke test needs the layout
        return None


def group_token_bytes(deployment: Deployment, group: LayerGroup) -> int:
    """Predicted bytes of one token in every layer of the group, on one GPU (capacity's formula)."""
    total = 0
    for plan in group.plans:
        tb = layout.format_token_bytes(group.cache_format, plan.geometry, group.kv_heads)
        total += tb.payload + tb.scale
    return total


def predicted_bytes_per_block(deployment: Deployment) -> Dict[str, int]:
    """Group name -> predicted bytes of one block summed over the group's layers, on one GPU."""
    return {g.name: g.block_size * group_token_bytes(deployment, g) for g in layer_groups(deployment)}


def prediction_source() -> str:
    return "kvlint.capacity.layout.format_token_bytes"
