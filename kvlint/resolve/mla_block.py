"""The block size vLLM 0.11.0-0.17.1 force on MLA models (the catalog's `mla_block_size_override`).

On those releases `CudaPlatformBase.check_and_update_config` sets an unset block size to 16, then,
for an MLA model, picks the MLA backend it plans for (the one the user named, else its default
for the GPU) and replaces a block size that backend cannot use with the size it forces, logging
"Forcing kv cache block size to N for ... backend." (vllm/platforms/cuda.py, v0.11.0 L167-184,
v0.14.0 L211-233, v0.17.1 L248-281). Selection and the KV cache then see the forced size: a size
the engine replaces is ignored, not refused. The rule data, with its citations, is in
rules/catalog/engines/vllm-backends.yaml; this module only evaluates it.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Tuple

from kvlint.records import dataclass

UNSET_BLOCK_SIZE = 16  # check_and_update_config: `if cache_config.block_size is None: ... = 16`


@dataclass(frozen=True)
class ForcedBlock:
    size: int  # the block size vLLM runs with
    backend: str  # the MLA backend check_and_update_config planned for (the forcing entry)
    sparse: bool  # forced by the sparse-MLA (index_topk) branch


def _keeps(rule: Mapping[str, Any], size: int) -> bool:
    if size in (rule.get("keeps") or ()):
        return True
    multiple = rule.get("keeps_multiple_of")
    return bool(multiple) and size % int(multiple) == 0


def _holds(cond: Mapping[str, Any], cc: Tuple[int, int], dense: Optional[bool],
           qk_nope: Optional[int]) -> Optional[bool]:
    """All-of over a default_backend entry's conditions; None when a needed fact is unknown."""
    unknown = False
    for key, want in cond.items():
        if key == "backend":
            continue
        if key == "cc":
            hit: Optional[bool] = f"{cc[0]}.{cc[1]}" == str(want)
        elif key == "cc_major":
            hit = cc[0] in want
        elif key == "dense":
            hit = None if dense is None else dense == want
        elif key == "qk_nope_head_dim":
            hit = None if qk_nope is None else qk_nope == want
        else:  # a condition this evaluator does not know: undecidable, never guessed
            hit = None
        if hit is False:
            return False
        unknown = unknown or hit is None
    return None if unknown else True


def forced_block(rule: Any, *, explicit: Optional[str], cc: Optional[Tuple[int, int]],
                 sparse: Optional[bool], qk_nope: Optional[int],
                 block: Optional[int]) -> Tuple[bool, Optional[ForcedBlock]]:
    """(decided, forced): forced is None when the engine keeps the block size (the written one,
    or 16 when unset); decided is False when a fact the rule needs is unknown (no GPU capability,
    an undecidable default backend), and the caller then keeps its own answer."""
    if not isinstance(rule, Mapping) or cc is None:
        return False, None
    size = block if block is not None else UNSET_BLOCK_SIZE
    plan: Optional[str] = explicit.upper() if explicit else None
    if plan is None:
        dense = None if sparse is None else not sparse
        for entry in rule.get("default_backend") or ():
            hit = _holds(entry, cc, dense, qk_nope)
            if hit is None:
                return False, None
            if hit:
                plan = str(entry["backend"])
                break
    new, by, by_sparse = size, plan, False
    force = (rule.get("forces") or {}).get(plan) if plan else None
    if force and (not force.get("cc_major") or cc[0] in force["cc_major"]) and not _keeps(force, new):
        new = int(force["to"])
    sparse_rules = rule.get("sparse") or {}
    if sparse_rules:
        if sparse is None:
            return False, None
        if sparse:
            srule = sparse_rules.get(plan) if plan else None
            srule = srule or sparse_rules.get("default")
            if srule and not _keeps(srule, new):
                # the log names FlashMLASparse unless FLASHINFER_MLA_SPARSE was named
                new, by_sparse = int(srule["to"]), True
                by = plan if plan in sparse_rules else "FLASHMLA_SPARSE"
    if new == size:
        return True, None
    return True, ForcedBlock(size=new, backend=str(by), sparse=by_sparse)
