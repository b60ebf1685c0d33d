"""The model part of the catalog: KV-cache geometry as vLLM sees it, keyed by Hugging Face id.

Built-in data: `rules/catalog/models/*.yaml` (one file per family). A `catalog-dir` may add
`models.yaml` or `models/*.yaml`; an entry whose id matches an earlier one replaces it. Per-layer
attention is stored compactly (`attention.pattern`, repeated over the layers, or an explicit
`attention.layer_types`) and expanded by `ModelEntry.geometry()`.
"""

from __future__ import annotations

from dataclasses import field
from functools import lru_cache
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from kvlint.records import dataclass
from kvlint.catalog.gpus import (
    PathLike,
    Source,
    catalog_files,
    read_entry_file,
)
from kvlint.errors import CatalogError
from kvlint.catalog.hf_config import MAX_CONFIG_LAYERS, ConfigError, attention_kind, build_layers, expand_pattern
from kvlint.deployment import AttentionKind, ModelGeometry
from kvlint.resources import catalog_dir
from kvlint.catalog.index import build_alias_index

MODEL_SCHEMA = "catalog-model.json"

# Bytes per parameter of a weights dtype (manifest `model.weights.dtype` spellings).
WEIGHT_DTYPE_BYTES: Dict[str, float] = {
    "bf16": 2,
    "fp16": 2,
    "fp32": 4,
    "fp8": 1,
    "int8": 1,
    "int4": 0.5,
    "mxfp4": 4.25 / 8,  # E2M1 + one E8M0 scale per 32 values
    "nvfp4": 4.5 / 8,  # E2M1 + one FP8 scale per 16 values
}


@dataclass(frozen=True)
class MlaSpec:
    """The multi-head latent attention dimensions of a model (DeepSeek-style MLA)."""

    kv_lora_rank: int
    qk_rope_head_dim: int
    qk_nope_head_dim: Optional[int] = None
    v_head_dim: Optional[int] = None
    q_lora_rank: Optional[int] = None

    @property
    def latent_size(self) -> int:
        return self.kv_lora_rank + self.qk_rope_head_dim


# Weights formats a family member's checkpoint may carry (`family[].weights`): the WEIGHT_DTYPE_BYTES
# spellings of a quantized format, and `unknown` where the checkpoint's layout is not priced.
FAMILY_WEIGHTS = ("fp8", "int8", "int4", "nvfp4", "mxfp4", "unknown")


@dataclass(frozen=True)
class FamilyMember:
    """A Hugging Face id that is certainly the catalogued model's geometry under another name: its
    base or instruct twin, an old name, a re-upload, or a quantized repository. `source` is the
    evidence (the member's config.json, else its model card's "quantized version of X"; then
    `verified` is false). `weights` is the checkpoint's weights format when it differs from the
    catalogued model's (a pre-quantized repository loads like the model quantized online)."""

    id: str
    relation: str  # base | instruct | rename | reupload | quantized | checkpoint
    source: Source
    verified: bool
    weights: Optional[str] = None
    note: Optional[str] = None


@dataclass(frozen=True)
class ModelEntry:
    """One model of the catalog: the geometry that sizes its KV cache, layer by layer."""

    id: str
    aliases: Tuple[str, ...]
    model_type: Optional[str]
    num_layers: int
    num_attention_heads: int
    num_kv_heads: Optional[int]  # config value; vLLM uses 1 under MLA
    head_dim: Optional[int]  # None under MLA
    hidden_size: Optional[int]
    pattern: Tuple[AttentionKind, ...]  # repeated over num_layers
    layer_types: Optional[Tuple[AttentionKind, ...]]  # explicit list, wins over pattern
    window: Optional[int]
    chunk: Optional[int]
    attention_rule: Optional[str]
    mla: Optional[MlaSpec]
    sinks: bool
    max_position_embeddings: Optional[int]
    vllm_default_max_model_len: Optional[int]
    dtype: str  # what vLLM dtype=auto loads
    config_dtype: Optional[str]  # torch_dtype in config.json; None when absent
    weights_params: Optional[int]
    weights_dtype: Optional[str]
    weights_bytes_stated: Optional[int]
    weights_note: Optional[str]
    total_params: Optional[int]
    active_params: Optional[str]
    kv_bytes_per_token_bf16: Optional[int]
    verified: bool
    unverified_fields: Tuple[str, ...]
    notes: Optional[str]
    sources: Tuple[Source, ...]
    file: str
    architectures: Tuple[str, ...] = ()
    vocab_size: Optional[int] = None
    family: Tuple[FamilyMember, ...] = ()
    _geometry_cache: Dict[str, ModelGeometry] = field(default_factory=dict, compare=False, repr=False)

    def kinds(self) -> List[AttentionKind]:
        if self.layer_types is not None:
            return list(self.layer_types)
        return expand_pattern(self.pattern, self.num_layers)

    def geometry(self) -> ModelGeometry:
        """The per-layer geometry (`source="catalog"`); built once per entry."""
        cached = self._geometry_cache.get("geometry")
        if cached is not None:
            return cached
        if self.mla is not None:
            head_dim, num_kv_heads = self.mla.latent_size, 1
        else:
            assert self.head_dim is not None and self.num_kv_heads is not None
            head_dim, num_kv_heads = self.head_dim, self.num_kv_heads
        geometry = ModelGeometry(
            name=self.id,
            num_layers=self.num_layers,
            num_attention_heads=self.num_attention_heads,
            num_kv_heads=num_kv_heads,
            head_dim=head_dim,
            layers=build_layers(
                self.kinds(),
                window=self.window,
                chunk=self.chunk,
                num_kv_heads=num_kv_heads,
                head_dim=head_dim,
                mla=self.mla is not None,
                sinks=self.sinks,
            ),
            max_position_embeddings=self.max_position_embeddings,
            dtype=self.dtype,
            kv_lora_rank=self.mla.kv_lora_rank if self.mla else None,
            qk_rope_head_dim=self.mla.qk_rope_head_dim if self.mla else None,
            qk_nope_head_dim=self.mla.qk_nope_head_dim if self.mla else None,
            # the only sparse-MLA (index_topk) model type vLLM knows; none is catalogued today
            mla_sparse=(self.model_type == "deepseek_v32") if self.mla else None,
            has_sinks=self.sinks,
            source="catalog",
            architectures=self.architectures,
            vocab_size=self.vocab_size,
        )
        self._geometry_cache["geometry"] = geometry
        return geometry

    @property
    def weight_bytes(self) -> Optional[int]:
        """`weights_bytes()` as an attribute (what kvlint.resolve.fields reads)."""
        return self.weights_bytes()

    def weights_bytes(self) -> Optional[int]:
        """Weight memory of the whole model as loaded: the stated figure, else params x bytes of
        the weights dtype; None when the dtype is mixed and no figure is stated."""
        if self.weights_bytes_stated is not None:
            return self.weights_bytes_stated
        per_param = WEIGHT_DTYPE_BYTES.get(self.weights_dtype or "")
        if self.weights_params is None or per_param is None:
            return None
        return int(self.weights_params * per_param)


def normalize_model_name(name: str) -> str:
    """Hugging Face ids are case-insensitive on the Hub; also accept a pasted URL or hf:// form."""
    key = name.strip()
    for prefix in ("https://huggingface.co/", "http://huggingface.co/", "huggingface.co/", "hf://"):
        if key.lower().startswith(prefix):
            key = key[len(prefix):]
    return key.strip("/").lower()


class ModelCatalog:
    def __init__(self, entries: Iterable[ModelEntry]) -> None:
        self._entries, self._index = build_alias_index(entries, normalize_model_name)
        # "Llama-3.1-8B-Instruct" without the organisation, when that is unambiguous.
        by_base: Dict[str, List[str]] = {}
        for key, model_id in self._index.items():
            base = key.rsplit("/", 1)[-1]
            if model_id not in by_base.setdefault(base, []):
                by_base[base].append(model_id)
        self._by_base = {base: ids[0] for base, ids in by_base.items() if len(ids) == 1}

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self._entries.values())

    @property
    def ids(self) -> List[str]:
        return list(self._entries)

    def lookup(self, hf_id: str) -> Optional[ModelEntry]:
        return self.resolve(hf_id)[0]

    def resolve(self, hf_id: str) -> Tuple[Optional[ModelEntry], Optional[FamilyMember]]:
        """(the catalogued entry, the family member the name matched, or None when it matched
        the entry's id or a plain alias)."""
        if not isinstance(hf_id, str) or not hf_id.strip():
            return None, None
        key = normalize_model_name(hf_id)
        found = self._index.get(key)
        if found is None and "/" not in key:
            found = self._by_base.get(key)
        if found is None:
            return None, None
        entry = self._entries[found]
        if normalize_model_name(entry.id) == key:
            return entry, None
        member = next((m for m in entry.family if normalize_model_name(m.id) == key
                       or normalize_model_name(m.id).rsplit("/", 1)[-1] == key), None)
        return entry, member

    def suggest(self, name: str, n: int = 3) -> List[str]:
        """Catalog ids close to `name` (did-you-mean), best first."""
        if not isinstance(name, str) or not name.strip():
            return []
        import difflib  # only for a did-you-mean: difflib is a start-up cost of every run

        key = normalize_model_name(name)
        base = key.rsplit("/", 1)[-1]
        scored: Dict[str, float] = {}
        for indexed, model_id in self._index.items():
            indexed_base = indexed.rsplit("/", 1)[-1]
            ratio = max(
                difflib.SequenceMatcher(None, key, indexed).ratio(),
                difflib.SequenceMatcher(None, base, indexed_base).ratio(),
            )
            if indexed_base.startswith(base) or base.startswith(indexed_base):
                ratio += 0.2  # "gemma-3-27b" -> "gemma-3-27b-it" before "gemma-2-27b"
            if ratio >= 0.6 and ratio > scored.get(model_id, 0.0):
                scored[model_id] = ratio
        return [model_id for model_id, _ in sorted(scored.items(), key=lambda kv: -kv[1])][:n]


def _int_or_none(data: Mapping[str, Any], key: str, where: str) -> Optional[int]:
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise CatalogError(f"{where}: {key} must be a positive integer, got {value!r}")
    return value


def _entry(data: Mapping[str, Any], file: str) -> ModelEntry:
    model_id = data.get("id")
    if not isinstance(model_id, str) or not model_id:
        raise CatalogError("a model entry has no id", file)
    where = f"{file}: {model_id}"
    if not data.get("sources"):
        raise CatalogError(f"{model_id}: at least one source is required", file)
    num_layers = _int_or_none(data, "num_layers", where)
    if num_layers is not None and num_layers > MAX_CONFIG_LAYERS:  # bound before any per-layer list
        raise CatalogError(f"{model_id}: num_layers is {num_layers:,}, more than the {MAX_CONFIG_LAYERS:,} kvlint accepts", file)
    num_heads = _int_or_none(data, "num_attention_heads", where)
    if num_layers is None or num_heads is None:
        raise CatalogError(f"{model_id}: num_layers and num_attention_heads are required", file)
    mla_data = data.get("mla")
    mla = None
    if mla_data:
        mla = MlaSpec(**{k: mla_data.get(k) for k in MlaSpec.__dataclass_fields__})  # type: ignore[arg-type]
        if not mla.kv_lora_rank or not mla.qk_rope_head_dim:
            raise CatalogError(f"{model_id}: mla needs kv_lora_rank and qk_rope_head_dim", file)
    head_dim = _int_or_none(data, "head_dim", where)
    num_kv_heads = _int_or_none(data, "num_kv_heads", where)
    if mla is None and (head_dim is None or num_kv_heads is None):
        raise CatalogError(f"{model_id}: num_kv_heads and head_dim are required (or an mla block)", file)

    attention = data.get("attention") or {}
    try:
        pattern = tuple(attention_kind(k, model_id) for k in attention.get("pattern") or ["full"])
        explicit = attention.get("layer_types")
        layer_types = tuple(attention_kind(k, model_id) for k in explicit) if explicit else None
    except ConfigError as error:
        raise CatalogError(error.message, file) from None
    if layer_types is not None and len(layer_types) != num_layers:
        raise CatalogError(f"{model_id}: attention.layer_types has {len(layer_types)} entries for {num_layers} layers", file)
    kinds = set(layer_types or pattern)
    window = _int_or_none(attention, "window", where)
    chunk = _int_or_none(attention, "chunk", where)
    if "sliding" in kinds and window is None:
        raise CatalogError(f"{model_id}: sliding layers need attention.window", file)
    if "chunked" in kinds and chunk is None:
        raise CatalogError(f"{model_id}: chunked layers need attention.chunk", file)

    family = tuple(_family_member(m, model_id, file) for m in data.get("family") or ())
    weights = data.get("weights") or {}
    dtype = data.get("dtype") or "bfloat16"
    if dtype not in ("bfloat16", "float16", "float32"):
        raise CatalogError(f"{model_id}: dtype {dtype!r} is not bfloat16, float16 or float32", file)
    return ModelEntry(
        id=model_id,
        aliases=tuple(str(a) for a in data.get("aliases") or ()) + tuple(m.id for m in family),
        family=family,
        architectures=tuple(str(a) for a in data.get("architectures") or ()),
        vocab_size=data.get("vocab_size"),
        model_type=data.get("model_type"),
        num_layers=num_layers,
        num_attention_heads=num_heads,
        num_kv_heads=num_kv_heads,
        head_dim=head_dim,
        hidden_size=data.get("hidden_size"),
        pattern=pattern,
        layer_types=layer_types,
        window=window,
        chunk=chunk,
        attention_rule=attention.get("rule"),
        mla=mla,
        sinks=bool(data.get("sinks", False)),
        max_position_embeddings=data.get("max_position_embeddings"),
        vllm_default_max_model_len=data.get("vllm_default_max_model_len"),
        dtype=dtype,
        config_dtype=data.get("config_dtype"),
        weights_params=weights.get("params"),
        weights_dtype=weights.get("dtype"),
        weights_bytes_stated=weights.get("bytes"),
        weights_note=weights.get("note"),
        total_params=data.get("total_params"),
        active_params=data.get("active_params"),
        kv_bytes_per_token_bf16=data.get("kv_bytes_per_token_bf16"),
        verified=bool(data.get("verified", False)),
        unverified_fields=tuple(data.get("unverified_fields") or ()),
        notes=data.get("notes"),
        sources=tuple(Source.from_data(s) for s in data["sources"]),
        file=file,
    )


def _family_member(data: Any, model_id: str, file: str) -> FamilyMember:
    if not isinstance(data, Mapping) or not isinstance(data.get("id"), str) or not data.get("source"):
        raise CatalogError(f"{model_id}: a family member needs an id and a source", file)
    weights = data.get("weights")
    if weights is not None and weights not in FAMILY_WEIGHTS:
        raise CatalogError(f"{model_id}: family member {data['id']}: weights {weights!r} is not one of "
                           f"{', '.join(FAMILY_WEIGHTS)}", file)
    return FamilyMember(id=data["id"], relation=str(data.get("relation") or "reupload"),
                        source=Source.from_data(data["source"]), verified=bool(data.get("verified", False)),
                        weights=weights, note=data.get("note"))


def _load_file(path: Path, builtin: bool) -> List[ModelEntry]:
    return read_entry_file(path, builtin, MODEL_SCHEMA, "models", _entry)


@lru_cache(maxsize=8)
def _load_cached(dirs: Tuple[str, ...]) -> ModelCatalog:
    entries: List[ModelEntry] = []
    for path, builtin in catalog_files([Path(d) for d in dirs], "models"):
        entries.extend(_load_file(path, builtin))
    return ModelCatalog(entries)


def load_model_catalog(dirs: Optional[Sequence[PathLike]] = None) -> ModelCatalog:
    """Load `models.yaml` and `models/*.yaml` from each directory (built-in catalog when `dirs`
    is None). Cached per process and per directory list. Raises `CatalogError`."""
    if dirs is None:
        dirs = [catalog_dir()]
    return _load_cached(tuple(str(Path(d)) for d in dirs))
