"""Reading a manifest defensively, and the pieces of a `Deployment` that come straight from it.

Resolve reads the manifest defensively (a document that failed the schema still resolves as far
as it can: wrong types read as unknown), looks everything up in the catalog, and computes the
predicates the rules test ("does this backend accept this dtype on this GPU at this release?").
Rules never call the catalog; they read the facts document built here (kvlint/facts.py).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Dict, Optional, Tuple

from kvlint.catalog import Catalogs
from kvlint.catalog.models import WEIGHT_DTYPE_BYTES
from kvlint.catalog.hf_config import (
    LINEAR_LAYER_TYPES,
    ConfigError,
    cached_config,
    checkpoint_kv_scales,
    checkpoint_quant_method,
    checkpoint_quantization,
    linear_layer_count,
    manifest_geometry_overrides,
    geometry_from_config,
    read_config,
    read_config_json,
)
from kvlint.deployment import (
    Deployment,
    GpuInfo,
    LayerPlan,
    MemoryPlan,
    ModelGeometry,
    ScaleLayout,
    Targets,
)
from kvlint.units import parse_size

MAX_SUGGESTED_NAME = 256  # longer model names get no did-you-mean (see model_geometry)
_MODEL_DTYPES = {"bfloat16": "bfloat16", "bf16": "bfloat16", "float16": "float16", "fp16": "float16", "float32": "float32"}


def _swa_ratio(value: Optional[float]) -> Optional[float]:
    """SGLang's --swa-full-tokens-ratio as read: (0, 1], else unknown (the schema says why)."""
    return float(value) if value is not None and value > 0 else None


def get(data: Any, *path: str, kind: Any = None, lo: Optional[float] = None, hi: Optional[float] = None) -> Any:
    """data[path...] when every step exists and the leaf has the expected type (and lies within
    [lo, hi] for numbers), else None: a value the schema stage rejected reads as unknown here."""
    current = data
    for part in path:
        if not isinstance(current, dict):
            return None
        current = current.get(part)
    if current is None:  # missing (the common case): None whatever the kind
        return None
    if kind is not None and not isinstance(current, kind):
        return None
    if isinstance(current, bool) and kind in (int, float, (int, float)):
        return None
    if isinstance(current, (int, float)) and not isinstance(current, bool):
        if (lo is not None and current < lo) or (hi is not None and current > hi):
            return None
    return current


# hf_config's messages for a config it read and understood but whose model kvlint does not size
_UNSIZED_MODEL = ("which kvlint does not size", "is not an attention layer kvlint can size")


def model_geometry(
    data: Dict[str, Any], manifest_path: Optional[Path], catalogs: Catalogs, facts: Dict[str, Any],
    checkpoint: Optional[Dict[str, Any]] = None,
) -> Optional[ModelGeometry]:
    """The model's geometry: model.geometry over model.config, else the catalog (the name, or a
    family member's), else the local Hugging Face cache. `checkpoint`, when given, receives the
    weights format of a pre-quantized checkpoint as `weights_bytes` takes it: the config.json's
    quantization_config (model.config, or the cached config of an uncatalogued name), else the
    family member's `weights`."""
    name = get(data, "model", "name", kind=str) or ""
    model_facts = facts["model"]
    checkpoint = checkpoint if checkpoint is not None else {}
    base: Optional[ModelGeometry] = None
    config_path = get(data, "model", "config", kind=str)
    if config_path:
        resolved = (manifest_path.parent if manifest_path else Path.cwd()) / config_path
        base, exc = _read_config_file(resolved, name, "config", f"model.config {config_path}", model_facts, checkpoint)
        # stated by the user (model.config, -m FILE, a model-config statement) and unreadable or
        # broken: an error (KV211), even when the catalog knows the model (docs/security.md). A
        # file read whole whose model kvlint cannot size (a hybrid) is kvlint's limit, not the
        # file's fault: that stays KV203's warning.
        if exc is not None and not any(marker in str(exc) for marker in _UNSIZED_MODEL):
            model_facts["config_unreadable"] = model_facts["config_error"]
    entry, member = catalogs.models.resolve(name) if name else (None, None)
    lookup_name = name
    if entry is None and name and get(data, "engine", "name", kind=str) == "ollama":
        lookup_name = _ollama_library(name, model_facts)
        entry = catalogs.models.lookup(lookup_name) if lookup_name != name else None
        if lookup_name != name:
            model_facts["ollama_case"] = "mapped" if entry is not None else "uncatalogued"
    if base is None and lookup_name:
        # the model's own config.json in the local Hugging Face cache comes before the catalog:
        # it is the checkpoint itself, where the catalog (or a family member) stands in for it
        cached = cached_config(lookup_name, revision=hub_revision(data))
        if cached is not None:
            base, _ = _read_config_file(cached, name, "hf-cache", f"{lookup_name} in the Hugging Face cache",
                                        model_facts, checkpoint, shown=str(cached))
    if entry is not None:
        model_facts["catalog_id"] = getattr(entry, "id", name)
        if member is not None and model_facts.get("source") != "hf-cache":
            model_facts["alias_of"] = entry.id
            model_facts["alias_note"] = family_note(name, entry.id, member)
            if member.weights and "format" not in checkpoint:
                model_facts["checkpoint_weights"] = member.weights
                model_facts["checkpoint_weights_source"] = f"{member.id} (family member of {entry.id})"
                checkpoint.update(format=member.weights, source=model_facts["checkpoint_weights_source"], scale=None)
        if base is None:
            base = entry.geometry()
            model_facts["source"] = "catalog"
            if "config_unreadable" in model_facts:  # said, never silently replaced
                model_facts["config_unreadable"] += (f"; the figures use the catalog's geometry for "
                                                     f"{model_facts['catalog_id']} instead, which may not be the file's")
        weights = getattr(entry, "weight_bytes", None)
        if weights:
            model_facts["catalog_weight_bytes"] = weights
            model_facts["catalog_weight_dtype"] = getattr(entry, "weights_dtype", None)
        if getattr(entry, "hidden_size", None):
            model_facts["catalog_hidden_size"] = entry.hidden_size
    elif name:
        # did-you-mean runs difflib against every catalog id, superlinear in the name's length; no
        # id is near this long, so a longer name (a hostile multi-megabyte one) gets no suggestion
        model_facts["suggestions"] = catalogs.models.suggest(name) if len(name) <= MAX_SUGGESTED_NAME else []
        if base is None:  # a base model or re-quantized repository: its config.json on the Hub
            base = _hub_geometry(data, name, lookup_name, model_facts, checkpoint)
    geometry = get(data, "model", "geometry", kind=dict)
    if geometry:
        try:
            base = manifest_geometry_overrides(base, geometry, name)
            model_facts["source"] = "manifest" if model_facts.get("source") is None else model_facts["source"] + "+manifest"
        except (ConfigError, ValueError) as exc:
            model_facts.setdefault("config_error", f"model.geometry is incomplete: {_reason(exc)}")
    return base


def _read_config_file(path: Path, name: Optional[str], source: str, label: str, model_facts: Dict[str, Any],
                      checkpoint: Dict[str, Any], shown: Optional[str] = None,
                      ) -> Tuple[Optional[ModelGeometry], Optional[BaseException]]:
    """The geometry of a config file on disk (the manifest's model.config, or the model's own
    config.json in the Hugging Face cache) with its weights format recorded; on failure None and
    the exception, with `config_error` saying why (naming `shown`, else the label)."""
    try:
        base = read_config(path, name=name)
    except (ConfigError, OSError, ValueError) as exc:
        model_facts["config_error"] = f"cannot use {shown or label}: {_reason(exc)}"
        return None, exc
    model_facts["source"] = source
    _config_quantization(path, label, model_facts, checkpoint)
    return base, None


def _config_quantization(path: Path, label: str, model_facts: Dict[str, Any], checkpoint: Dict[str, Any]) -> None:
    """Record the weights format a config.json's quantization_config states (a GGUF file has none)."""
    if str(path).lower().endswith(".gguf"):
        return
    try:
        config = read_config_json(path)
    except (ConfigError, OSError, ValueError):
        return
    _record_quantization(config, label, model_facts, checkpoint)


def _record_quantization(config: Any, label: str, model_facts: Dict[str, Any], checkpoint: Dict[str, Any]) -> None:
    """Record what a config.json's quantization_config states: the KV scales the checkpoint
    carries (model.kv_scales when the manifest does not say) and the weights format."""
    try:
        kv = checkpoint_kv_scales(config)
    except (ConfigError, ValueError):
        kv = None
    if kv is not None:
        model_facts["checkpoint_kv_scales"], model_facts["checkpoint_kv_scheme"], where = kv
        model_facts["checkpoint_kv_scales_source"] = f"{label}: {where}"
    method = checkpoint_quant_method(config)
    if method:
        model_facts["checkpoint_quant_method"] = method
    try:
        found = checkpoint_quantization(config)
    except (ConfigError, ValueError):
        return
    if found is None:
        return
    fmt, where, scale = found
    model_facts["checkpoint_weights"] = fmt
    model_facts["checkpoint_weights_source"] = f"{label}: {where}"
    vocab = config.get("vocab_size") if isinstance(config, dict) else None
    checkpoint.update(format=fmt, source=model_facts["checkpoint_weights_source"], scale=scale,
                      vocab=vocab if type(vocab) is int and vocab > 0 else None)


def hub_revision(data: Dict[str, Any]) -> Optional[str]:
    """The Hub revision the deployment pins: model.revision, else the engine's --revision
    (engine.options.revision, as the native adapters keep vLLM's, SGLang's and TensorRT-LLM's
    flag). --code-revision and --tokenizer-revision name other files' revisions, not config.json's."""
    written = get(data, "model", "revision", kind=str)
    if written and written.strip():
        return written.strip()
    options = get(data, "engine", "options", kind=dict) or {}
    value = options.get("revision")
    return value.strip() if isinstance(value, str) and value.strip() else None


def _hub_geometry(data: Dict[str, Any], name: str, lookup_name: str, model_facts: Dict[str, Any],
                  checkpoint: Dict[str, Any]) -> Optional[ModelGeometry]:
    """The geometry of the model's config.json on the Hugging Face Hub (kvlint.hub: its disk
    cache, or a fetch unless offline), with its quantization_config; None, with the reason in
    model.config_error (KV203 quotes it), when there is none."""
    from kvlint.hub import hub_config  # on use: only a model nothing else knows asks the Hub

    found = hub_config(lookup_name, hub_revision(data))
    if found is None:
        return None
    if found.config is None:
        model_facts["config_error"] = found.error or f"cannot fetch {found.url}"
        return None
    where = found.url + (f" (commit {found.commit[:12]})" if found.commit else "")
    try:
        geometry = geometry_from_config(found.config, name)
    except (ConfigError, ValueError) as exc:
        model_facts["config_error"] = f"cannot use {where}: {_reason(exc)}"
        return None
    model_facts["source"] = "hub"
    checkpoint["geometry_note"] = (f"model geometry from {where}"
                                   + (", fetched now" if found.origin == "fetched" else ", as kvlint cached it"))
    _record_quantization(found.config, f"{lookup_name}'s config.json on the Hub", model_facts, checkpoint)
    return geometry


_RELATION = {
    "base": "the base model of the same architecture and dims",
    "instruct": "the instruct model of the same architecture and dims",
    "rename": "the same repository under its earlier name",
    "reupload": "a re-upload of the same checkpoint",
    "quantized": "a quantized checkpoint of it",
    "checkpoint": "a checkpoint of the same architecture and dims",
}


def family_note(name: str, entry_id: str, member: Any) -> str:
    """KV212's sentence: which catalogued model a family member's name was read as, and why."""
    evidence = "its config.json" if member.verified else "its model card (config.json not verified)"
    weights = ""
    if member.weights == "unknown":
        weights = "; its weights format is not priced, so the weights are unknown"
    elif member.weights:
        weights = f"; weights priced as its {member.weights} checkpoint"
    return (f"model {name} read as the catalogued {entry_id}: {_RELATION.get(member.relation, member.relation)}, "
            f"same KV geometry per {evidence}: {member.source}{weights}")


def _ollama_library(name: str, model_facts: Dict[str, Any]) -> str:
    """The Hugging Face id an Ollama library tag pulls (the ggml catalog's `library` table), else
    the name as written; model.ollama_case says which (KV203's message: mapped, uncatalogued,
    unmapped). The ggml catalog is loaded only here, for an Ollama deployment."""
    from kvlint.catalog.ggml import load_ggml_catalog  # on use: only Ollama deployments need it

    catalog = load_ggml_catalog()
    tag = catalog.ollama_library_model(name)
    if tag is None:
        return name
    model_facts["ollama_tags"] = (", ".join(f"{tag.family}:{t}" for t in tag.sizes) if tag.family
                                  else "families " + ", ".join(catalog.ollama_families()))
    if tag.hf_id is None:
        model_facts["ollama_case"] = "unmapped"
        return name
    model_facts["ollama_hf"] = tag.hf_id
    model_facts["ollama_note"] = (f"model {name} read as {tag.hf_id}, the model the Ollama library tag pulls"
                                  + ("" if tag.verified else " (mapping not verified against the library page)"))
    return tag.hf_id


def linear_layers(data: Dict[str, Any], manifest_path: Optional[Path]) -> Optional[int]:
    """How many layers of the model are linear-attention / Mamba state layers (a hybrid such as
    Qwen3-Next or Qwen3.5): model.geometry.layer_types, else model.config, else the config in the
    local Hugging Face cache. None when none of them says (never guessed from the name)."""
    written = get(data, "model", "geometry", "layer_types", kind=list)
    if written is not None:
        return sum(1 for entry in written if isinstance(entry, str) and entry in LINEAR_LAYER_TYPES)
    name = get(data, "model", "name", kind=str) or ""
    config_path = get(data, "model", "config", kind=str)
    candidates = []
    if config_path:
        candidates.append((manifest_path.parent if manifest_path else Path.cwd()) / config_path)
    elif name:
        cached = cached_config(name, revision=hub_revision(data))
        if cached is not None:
            candidates.append(cached)
    for path in candidates:
        try:
            return linear_layer_count(read_config_json(path))
        except (ConfigError, OSError, ValueError):
            return None  # model_geometry reports why the file cannot be used
    loaded = sys.modules.get("kvlint.hub")  # loaded only when model_geometry asked the Hub
    if name and not config_path and loaded is not None:
        found = loaded.remembered(name, hub_revision(data))  # never a fetch of its own
        if found is not None and found.config is not None:
            return linear_layer_count(found.config)
    return None


def speculative(data: Dict[str, Any]) -> Dict[str, Any]:
    """The speculative-decoding block: `speculative` as written, else engine.options'
    speculative_config (vLLM --speculative-config, a JSON object or its text, as the native
    command-line adapter keeps it). Values of the wrong type read as unknown (null)."""
    block = get(data, "speculative", kind=dict)
    if block is None:
        options = get(data, "engine", "options", kind=dict) or {}
        raw = options.get("speculative_config", options.get("speculative-config"))
        if isinstance(raw, str):
            import json  # on use (start-up time): a check that reads no JSON never loads the module

            try:
                raw = json.loads(raw)
            except (ValueError, RecursionError):
                raw = None
        block = raw if isinstance(raw, dict) else None
    block = block or {}

    def text(key: str) -> Optional[str]:
        value = block.get(key)
        return value if isinstance(value, str) and value.strip() else None

    tokens = block.get("num_speculative_tokens")
    return {
        "given": bool(block),
        "method": text("method"),
        "model": text("model"),
        "num_speculative_tokens": tokens if isinstance(tokens, int) and not isinstance(tokens, bool) else None,
        "kv_cache_dtype": text("kv_cache_dtype"),
    }


def _reason(exc: BaseException) -> str:
    text = str(exc)
    return getattr(exc, "strerror", None) or text or type(exc).__name__


def model_dtype(data: Dict[str, Any], geometry: Optional[ModelGeometry]) -> str:
    written = get(data, "model", "dtype", kind=str)
    if written and written in _MODEL_DTYPES:
        return _MODEL_DTYPES[written]
    if geometry is not None and geometry.dtype in _MODEL_DTYPES:
        return _MODEL_DTYPES[geometry.dtype]
    return "bfloat16"


_SIXTEEN_BIT = ("bf16", "fp16", "bfloat16", "float16")
_FLOAT32_NOTE = ("; the model runs in float32 (model.dtype), so vLLM/SGLang load the 16-bit "
                 "checkpoint at 4 B per parameter")


def weights_bytes(data: Dict[str, Any], catalog_bytes: Optional[int],
                  catalog_dtype: Optional[str] = None,
                  geometry: Optional[ModelGeometry] = None,
                  hidden_size: Optional[int] = None,
                  checkpoint: Optional[Tuple[Any, ...]] = None) -> Tuple[Optional[int], Optional[str]]:
    """Whole-model weight bytes and, when estimated, how.

    A written `model.dtype: float32` (`--dtype float32`) makes the engine cast a 16-bit checkpoint
    to float32 as it loads it (vLLM `set_default_torch_dtype(model_config.dtype)` around the
    model's construction, vllm/model_executor/model_loader/base_loader.py v0.19.0 L53), so a 16-bit estimate
    doubles. A stated `bytes` figure is the user's and is taken as is; a quantized checkpoint keeps
    its packed weights.

    Online quantization (`engine.options.quantization: fp8`, vLLM/SGLang `--quantization fp8` on a
    16-bit checkpoint) loads the linear layers at 1 B per parameter: see `_online_fp8_weights`.

    `checkpoint` is a pre-quantized checkpoint's weights format (format, where it was read, scale
    bytes per weight or None for the format's usual layout): a catalog family member's `weights`
    (RedHatAI/...-FP8) or the `quantization_config` of a local config.json. The engine loads it as
    it loads the 16-bit model quantized online: the linear layers at the format's bytes plus its
    scales, the embedding, lm_head and norms at 16 bit. Format `unknown` leaves the weights unknown.
    """
    weights = get(data, "model", "weights", kind=dict) or {}
    explicit = parse_size(weights.get("bytes")) if "bytes" in weights else None
    if explicit is not None:
        return explicit, None
    float32 = get(data, "model", "dtype", kind=str) in ("float32", "fp32", "float")
    params = weights.get("params")
    dtype = weights.get("dtype")
    per_param = WEIGHT_DTYPE_BYTES
    if isinstance(params, (int, float)) and not isinstance(params, bool) and params > 0 and dtype in per_param:
        unquantized = weights.get("unquantized_params")
        if (isinstance(unquantized, (int, float)) and not isinstance(unquantized, bool)
                and 0 <= unquantized <= params and per_param[dtype] < 2):
            return quantized_weights(params, dtype, unquantized)
        if float32 and dtype in _SIXTEEN_BIT:
            return int(params * 4), f"weights estimated as {params:.3g} params x 4 B ({dtype}{_FLOAT32_NOTE})"
        return int(params * per_param[dtype]), f"weights estimated as {params:.3g} params x {per_param[dtype]:g} B ({dtype})"
    if checkpoint is not None and catalog_bytes and catalog_dtype not in _SIXTEEN_BIT and "quantization_config" in checkpoint[1]:
        checkpoint = None  # the config of the catalogued (already quantized) checkpoint itself: its size stands
    if checkpoint is not None:
        fmt, where, scale = checkpoint[:3]
        vocab = checkpoint[3] if len(checkpoint) > 3 else None  # the config.json's, when the geometry lacks it
        if fmt == "unknown" or fmt not in WEIGHT_DTYPE_BYTES:
            return None, f"{where}: the weights are unknown (kvlint does not price this checkpoint's layout; state model.weights.bytes)"
        if not catalog_bytes or catalog_dtype not in _SIXTEEN_BIT:
            return None, (f"{where}: the weights are unknown (kvlint needs the 16-bit parameter count of the "
                          "model it quantizes; state model.weights.params, dtype and unquantized_params)")
        return _linear_quantized_weights(int(catalog_bytes), geometry, fmt, where, hidden_size, scale, vocab)
    online = online_quantization(data)
    if online is not None and catalog_bytes and catalog_dtype in _SIXTEEN_BIT:
        return _online_fp8_weights(int(catalog_bytes), geometry, online, hidden_size)
    if catalog_bytes:
        if float32 and catalog_dtype in _SIXTEEN_BIT:
            return int(catalog_bytes) * 2, f"weights taken from the model catalog's checkpoint size x 2{_FLOAT32_NOTE}"
        return int(catalog_bytes), "weights taken from the model catalog's checkpoint size"
    return None, None


# Online quantization methods kvlint prices: `--quantization fp8` on a 16-bit checkpoint. vLLM's
# Fp8Config.get_quant_method gives every LinearBase layer Fp8LinearMethod, whose create_weights
# allocates the 16-bit weight and process_weights_after_loading replaces it with an
# float8_e4m3fn copy and one fp32 scale per tensor (vllm v0.12.0
# vllm/model_executor/layers/quantization/fp8.py); the embedding (VocabParallelEmbedding), the
# lm_head (ParallelLMHead) and the norms are not LinearBase and stay in the model dtype. SGLang's
# --quantization fp8 (python/sglang/srt/layers/quantization/fp8.py) is priced the same way.
_ONLINE_FP8 = ("fp8",)


def online_quantization(data: Dict[str, Any]) -> Optional[str]:
    """The online --quantization method kvlint prices (fp8), or None."""
    options = get(data, "engine", "options", kind=dict) or {}
    method = options.get("quantization", options.get("q"))
    if isinstance(method, str) and method.strip().lower() in _ONLINE_FP8:
        return method.strip().lower()
    return None


def _linear_quantized_weights(checkpoint_bytes: int, geometry: Optional[ModelGeometry], fmt: str, where: str,
                              hidden_size: Optional[int] = None,
                              scale: Optional[float] = None,
                              vocab: Optional[int] = None) -> Tuple[Optional[int], Optional[str]]:
    """A pre-quantized checkpoint of a catalogued 16-bit model: the same split as online FP8
    (`_online_fp8_weights`), the linear layers at `fmt`'s bytes and scales."""
    split = _unquantized_split(checkpoint_bytes, geometry, hidden_size, vocab)
    if isinstance(split, str):
        return None, f"{where}: the weights are unknown ({split})"
    params, unquantized = split
    total, how = quantized_weights(params, fmt, unquantized, scale)
    return total, (f"{where}: a {fmt} checkpoint, loaded as the 16-bit model quantized to {fmt} (linear layers "
                   f"quantized; embedding, lm_head and norms at 16 bit): {how}")


def _unquantized_split(checkpoint_bytes: int, geometry: Optional[ModelGeometry],
                       hidden_size: Optional[int] = None, vocab_size: Optional[int] = None) -> Any:
    """(parameters, of which outside the linear layers) of a 16-bit checkpoint, or why not known."""
    params = checkpoint_bytes / 2
    vocab = (getattr(geometry, "vocab_size", None) if geometry is not None else None) or vocab_size
    hidden = (getattr(geometry, "hidden_size", None) if geometry is not None else None) or hidden_size
    layers = geometry.num_layers if geometry is not None else None
    if not vocab or not hidden or not layers:
        return ("kvlint needs the model's vocab_size and hidden_size to count the embedding and lm_head "
                "kept at 16 bit; state model.weights.params, dtype and unquantized_params")
    unquantized = 2 * vocab * hidden + (2 * layers + 1) * hidden
    if unquantized >= params:
        return "the geometry does not fit the checkpoint size"
    return params, unquantized


def _online_fp8_weights(checkpoint_bytes: int, geometry: Optional[ModelGeometry],
                        method: str, hidden_size: Optional[int] = None) -> Tuple[Optional[int], Optional[str]]:
    """A 16-bit checkpoint quantized to FP8 as it loads: the parameters outside the linear layers
    (embedding, lm_head, norms) stay at 2 B, the rest become 1 B. Their count comes from the
    geometry (vocab_size x hidden_size for the embedding and again for the lm_head, two norms per
    layer and a final one, as in Llama/Qwen/Mistral decoders); when the geometry lacks
    vocab_size or hidden_size the weights are unknown, not guessed."""
    params = checkpoint_bytes / 2
    vocab = getattr(geometry, "vocab_size", None) if geometry is not None else None
    hidden = (getattr(geometry, "hidden_size", None) if geometry is not None else None) or hidden_size
    layers = geometry.num_layers if geometry is not None else None
    if not vocab or not hidden or not layers:
        return None, (f"--quantization {method}: the weights are unknown (kvlint needs the model's "
                      "vocab_size and hidden_size to count the embedding and lm_head kept at 16 bit; "
                      "state model.weights.params, dtype fp8 and unquantized_params)")
    unquantized = 2 * vocab * hidden + (2 * layers + 1) * hidden
    if unquantized >= params:
        return None, f"--quantization {method}: the weights are unknown (the geometry does not fit the checkpoint size)"
    total, how = quantized_weights(params, "fp8", unquantized)
    return total, (f"--quantization {method} (online FP8: linear layers at 1 B per parameter as "
                   f"vLLM's Fp8LinearMethod stores them): {how}; the lm_head is counted at 16 bit "
                   "whether or not it is tied to the embedding")

# Scale bytes per quantized weight, by the checkpoint formats' usual layout: int4/int8 GPTQ and AWQ
# keep one fp16 scale and one packed int4 zero point per group of 128 inputs (2.5 B / 128; vLLM
# vllm/model_executor/layers/quantization/gptq.py and awq.py `create_weights`: scales, qzeros);
# block FP8 (DeepSeek/Qwen FP8 checkpoints) one fp32 `weight_scale_inv` per 128 x 128 block
# (vllm/model_executor/layers/quantization/fp8.py `create_weights`; per-channel FP8 is smaller).
# mxfp4 and nvfp4 carry their scales in WEIGHT_DTYPE_BYTES already.
_SCALE_BYTES_PER_WEIGHT = {"int4": 2.5 / 128, "int8": 2.5 / 128, "fp8": 4 / (128 * 128)}


def _kv_connector(options: Dict[str, Any]) -> Optional[str]:
    """engine.options.kv_transfer_config's kv_connector (a mapping, or the JSON text the flag takes)."""
    raw = options.get("kv_transfer_config", options.get("kv-transfer-config"))
    if isinstance(raw, str):
        import json  # on use, as in speculative()

        try:
            raw = json.loads(raw)
        except ValueError:
            return None
    if isinstance(raw, dict) and isinstance(raw.get("kv_connector"), str):
        return raw["kv_connector"]
    return None


def quantized_weights(params: float, dtype: str, unquantized: float,
                      scale: Optional[float] = None) -> Tuple[int, str]:
    """A quantized checkpoint's weight bytes: the quantized linear layers at their bits plus their
    scales (`scale` bytes per weight when the checkpoint's config says, else the format's usual
    layout), and `unquantized` parameters (embeddings, lm_head, norms, MoE router, a vision tower)
    at 16 bit, as the GPTQ/AWQ/FP8 formats keep them."""
    quantized = params - unquantized
    per = WEIGHT_DTYPE_BYTES[dtype] + (_SCALE_BYTES_PER_WEIGHT.get(dtype, 0.0) if scale is None else scale)
    total = int(quantized * per + unquantized * 2)
    return total, (f"weights estimated as {quantized:.3g} quantized params x {per:.4g} B ({dtype} with "
                   f"its scales) + {unquantized:.3g} params kept at 16 bit")


# The manifest field each engine's memory fraction is read from, most specific first, and the
# catalog default it falls back to (rules/catalog/engines/*.yaml `defaults`).
_MEMORY_FRACTION = {
    "vllm": (("gpu_memory_utilization",), "gpu_memory_utilization"),
    "sglang": (("mem_fraction_static", "gpu_memory_utilization"), "mem_fraction_static"),
    "tensorrt-llm": (("free_gpu_memory_fraction", "gpu_memory_utilization"), "free_gpu_memory_fraction"),
}


def _no_cuda_graph_estimate(data: Dict[str, Any]) -> bool:
    """vLLM reserves no CUDA-graph memory in the KV budget with --enforce-eager (cudagraph_mode
    NONE: vllm/config/vllm.py v0.20.0 L895-900; gpu_worker.py L379-385 estimates only when
    cudagraph_mode != NONE) or with VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0 (gpu_worker.py
    L401, envs.py L1724-1726: bool(int(value)))."""
    if get(data, "engine", "options", "enforce_eager") is True:
        return True
    flag = (get(data, "engine", "env", kind=dict) or {}).get("VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS")
    try:
        return flag is not None and int(str(flag).strip()) == 0
    except ValueError:
        return False


def memory_plan(
    data: Dict[str, Any], engine: str, gpu: Optional[GpuInfo], default: Any, weights: Optional[int]
) -> MemoryPlan:
    """`default(name)` is the engine release's catalog default (None for an unknown release)."""
    fields, default_name = _MEMORY_FRACTION.get(engine, (("gpu_memory_utilization",), "gpu_memory_utilization"))
    written = next(
        (float(v) for v in (get(data, "memory", f, kind=(int, float), lo=1e-6, hi=1) for f in fields) if v is not None), None
    )
    fallback = default(default_name)
    cuda_graphs = default("estimate_cudagraph_memory")
    if cuda_graphs is True and _no_cuda_graph_estimate(data):
        cuda_graphs = False
    if cuda_graphs is True and gpu is not None and gpu.vendor == "amd" and default("estimate_cudagraph_memory_rocm") is False:
        cuda_graphs = False  # vLLM 0.20-0.25 profile CUDA graphs on CUDA only (catalog)
    return MemoryPlan(
        device_memory_bytes=gpu.memory_bytes if gpu else None,
        gpu_memory_utilization=written,
        kv_cache_memory=parse_size(get(data, "memory", "kv_cache_memory")),
        non_kv_memory=parse_size(get(data, "memory", "non_kv_memory")),
        weights_bytes=weights,
        default_memory_fraction=float(fallback) if isinstance(fallback, (int, float)) else None,
        cuda_graphs_in_budget=cuda_graphs if isinstance(cuda_graphs, bool) else None,
    )


def targets(data: Dict[str, Any]) -> Targets:
    return Targets(
        min_concurrency=get(data, "targets", "min_concurrency", kind=(int, float), lo=0),
        min_kv_tokens=get(data, "targets", "min_kv_tokens", kind=int, lo=0),
        planned_kv_tokens=get(data, "targets", "planned_kv_tokens", kind=int, lo=0),
    )


def build_deployment(
    *,
    data: Dict[str, Any],
    file: str,
    engine: str,
    version: str,
    requested_backend: str,
    backend: Optional[str],
    backend_block_size: Optional[int],
    gpu: Optional[GpuInfo],
    model: Optional[ModelGeometry],
    kv_dtype: str,
    layers: Tuple[LayerPlan, ...],
    scales: ScaleLayout,
    memory: MemoryPlan,
    max_model_len: Optional[int],
    max_num_batched_tokens: Optional[int],
    release_behaviour: Optional[Dict[str, Any]] = None,
    forced_block_size: Optional[int] = None,
    block_size_note: Optional[str] = None,
) -> Deployment:
    env = get(data, "engine", "env", kind=dict) or {}
    options = get(data, "engine", "options", kind=dict) or {}
    return Deployment(
        file=file,
        name=get(data, "metadata", "name", kind=str) or "",
        engine=engine,  # type: ignore[arg-type]
        engine_version=version,
        requested_backend=requested_backend,
        backend=backend,
        gpu=gpu,
        tensor_parallel=get(data, "parallelism", "tensor", kind=int, lo=1, hi=1024) or 1,
        pipeline_parallel=get(data, "parallelism", "pipeline", kind=int, lo=1, hi=1024) or 1,
        model=model,
        kv_dtype=kv_dtype,
        layers=layers,
        scales=scales,
        block_size=None if forced_block_size else get(data, "kv_cache", "block_size", kind=int, lo=1, hi=4096),
        backend_block_size=forced_block_size or backend_block_size,
        block_size_note=block_size_note,
        memory=memory,
        max_model_len=max_model_len,
        max_num_seqs=get(data, "serving", "max_num_seqs", kind=int, lo=1),
        max_num_batched_tokens=max_num_batched_tokens,
        targets=targets(data),
        env=tuple(sorted((str(k), str(v)) for k, v in env.items())),
        disable_hybrid_kv_cache_manager=bool(options.get("disable_hybrid_kv_cache_manager", False)),
        max_total_tokens=get(data, "serving", "max_total_tokens", kind=int, lo=1),
        swa_full_tokens_ratio=_swa_ratio(get(data, "serving", "swa_full_tokens_ratio", kind=(int, float), hi=1)),
        disable_hybrid_swa_memory=get(data, "serving", "disable_hybrid_swa_memory", kind=bool) is True,
        chunked_prefill_size=get(data, "serving", "chunked_prefill_size", kind=int, lo=-1),
        kv_connector=_kv_connector(options),
        **(release_behaviour or {}),
    )
