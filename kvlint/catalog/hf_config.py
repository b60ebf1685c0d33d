"""Hugging Face `config.json` -> `ModelGeometry`, the way vLLM reads it.

vLLM instantiates the transformers config class, so class defaults and `__post_init__` logic
apply before it reads any KV field; a raw-JSON reading gets Gemma 3 (heads, head_dim absent),
Qwen (window disabled by `use_sliding_window: false`) and Mistral (absent `sliding_window` means
4096) wrong. This module reproduces the parts of that logic that decide the KV geometry, citing
the code each rule mirrors (vllm-project/vllm `vllm/config/model.py`,
`vllm/transformers_utils/config.py` and `vllm/model_executor/models/*.py` at v0.11.0 and v0.33.0;
huggingface/transformers `configuration_*.py`). Plain `json` only:
transformers is never imported.

Also here: `manifest_geometry_overrides`, which applies a manifest's `model.geometry` block
(docs/manifest.md) on top of catalog or config geometry.
"""

from __future__ import annotations

import math
import os
import re
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

from kvlint.deployment import AttentionKind, LayerGeometry, ModelGeometry
from kvlint.inputs import InputError, read_capped


class ConfigError(Exception):
    """A config (config.json or manifest geometry) from which no KV geometry can be built."""

    def __init__(self, message: str) -> None:
        self.message = message
        super().__init__(message)


# --- building the per-layer tuple (shared with the model catalog) -----------------------------

_KIND_SPELLINGS: Dict[str, AttentionKind] = {
    "full": "full",
    "full_attention": "full",
    "global": "full",
    "sliding": "sliding",
    "sliding_attention": "sliding",
    "local": "sliding",
    "chunked": "chunked",
    "chunked_attention": "chunked",
}


def attention_kind(spelling: Any, where: str) -> AttentionKind:
    kind = _KIND_SPELLINGS.get(str(spelling).strip().lower()) if spelling is not None else None
    if kind is None:
        raise ConfigError(
            f"{where}: layer type {spelling!r} is not an attention layer kvlint can size "
            "(expected full_attention, sliding_attention or chunked_attention)"
        )
    return kind


def build_layers(
    kinds: Sequence[AttentionKind],
    *,
    window: Optional[int],
    chunk: Optional[int],
    num_kv_heads: int,
    head_dim: int,
    mla: bool = False,
    sinks: bool = False,
    windows: Optional[Sequence[Optional[int]]] = None,
) -> Tuple[LayerGeometry, ...]:
    """One `LayerGeometry` per layer. A sliding layer without a window, or a chunked layer without
    a chunk size, is full attention (vLLM passes `per_layer_sliding_window=None` then)."""
    layers: List[LayerGeometry] = []
    for index, kind in enumerate(kinds):
        size: Optional[int]
        if mla:
            kind, size = "full", None  # sliding window is asserted unsupported with MLA
        elif kind == "sliding":
            size = windows[index] if windows is not None else window
        elif kind == "chunked":
            size = chunk
        else:
            size = None
        if size is None:
            kind = "full"
        layers.append(
            LayerGeometry(
                index=index,
                kind=kind,
                window=size,
                num_kv_heads=1 if mla else num_kv_heads,
                head_dim=head_dim,
                v_head_dim=0 if mla else head_dim,
                is_mla=mla,
                has_sinks=sinks,
            )
        )
    return tuple(layers)


def expand_pattern(pattern: Sequence[AttentionKind], num_layers: int) -> List[AttentionKind]:
    return [pattern[i % len(pattern)] for i in range(num_layers)]


def _period(kinds: Sequence[str]) -> List[str]:
    """The shortest repeating unit of a layer-kind list (used to extend it to more layers)."""
    for size in range(1, len(kinds) + 1):
        if all(kinds[i] == kinds[i % size] for i in range(len(kinds))):
            return list(kinds[:size])
    return list(kinds)


# --- config.json -------------------------------------------------------------------------------

# vLLM is_deepseek_mla (v0.11 vllm/config/model.py; v0.33 model_arch_config_convertor.py adds more).
MLA_MODEL_TYPES = frozenset(
    {
        "deepseek_v2",
        "deepseek_v3",
        "deepseek_v32",
        "deepseek_v4",
        "deepseek_mtp",
        "kimi_k2",
        "kimi_linear",
        "longcat_flash",
        "glm_moe_dsa",
    }
)
_QWEN_TYPES = frozenset({"qwen2", "qwen2_moe", "qwen3", "qwen3_moe"})

# transformers config-class defaults that matter for KV geometry, applied only when the key is
# ABSENT from config.json (an explicit null stays null). Sources: configuration_<model>.py in
# transformers 4.57.1 / 5.20.2 (huggingface/transformers).
_CLASS_DEFAULTS: Dict[str, Dict[str, Any]] = {
    # Gemma3TextConfig: the official 4b/12b configs omit heads, head_dim and max positions.
    "gemma3_text": {
        "num_attention_heads": 8,
        "num_key_value_heads": 4,
        "head_dim": 256,
        "max_position_embeddings": 131072,
        "sliding_window": 4096,
        "sliding_window_pattern": 6,
    },
    "gemma2": {
        "num_attention_heads": 8,
        "num_key_value_heads": 4,
        "head_dim": 256,
        "max_position_embeddings": 8192,
        "sliding_window": 4096,
    },
    "gemma": {"num_attention_heads": 8, "num_key_value_heads": 16, "head_dim": 256},
    # MistralConfig: an absent sliding_window means 4096 (v0.1 semantics); v0.3 writes null.
    "mistral": {"num_key_value_heads": 8, "sliding_window": 4096, "max_position_embeddings": 4096 * 32},
    "mixtral": {"num_key_value_heads": 8, "sliding_window": None, "max_position_embeddings": 4096 * 32},
    "gpt_oss": {
        "num_attention_heads": 64,
        "num_key_value_heads": 8,
        "head_dim": 64,
        "sliding_window": 128,
        "max_position_embeddings": 131072,
    },
    "llama4_text": {
        "num_attention_heads": 40,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "attention_chunk_size": 8192,
        "max_position_embeddings": 4096 * 32,
    },
    "qwen2": {"use_sliding_window": False, "max_window_layers": 28},
    "qwen2_moe": {"use_sliding_window": False, "max_window_layers": 28},
    "qwen3": {"use_sliding_window": False, "max_window_layers": 28},
    "qwen3_moe": {"use_sliding_window": False, "max_window_layers": 28},
    "deepseek_v2": {"kv_lora_rank": 512, "qk_rope_head_dim": 64},
    "deepseek_v3": {"kv_lora_rank": 512, "qk_rope_head_dim": 64},
}

# The text model inside a multimodal wrapper, when text_config does not name its own model_type.
_TEXT_MODEL_TYPE = {"gemma3": "gemma3_text", "llama4": "llama4_text"}

# vLLM _get_and_verify_max_len: the smallest of these keys bounds the context.
_MAX_LEN_KEYS = (
    "max_position_embeddings",
    "n_positions",
    "max_seq_len",
    "seq_length",
    "max_target_positions",
    "max_sequence_length",
    "max_seq_length",
    "seq_len",
)

_DTYPES = {
    "bfloat16": "bfloat16",
    "bf16": "bfloat16",
    "float16": "float16",
    "fp16": "float16",
    "half": "float16",
    "float32": "float32",
    "fp32": "float32",
    "float": "float32",
}


def _text_config(config: Mapping[str, Any]) -> Tuple[Dict[str, Any], str]:
    """vLLM get_hf_text_config: the KV geometry of a multimodal model lives in text_config."""
    top_type = str(config.get("model_type") or "")
    for key in ("text_config", "llm_config", "language_config"):
        sub = config.get(key)
        if isinstance(sub, dict):
            text = dict(sub)
            model_type = str(text.get("model_type") or _TEXT_MODEL_TYPE.get(top_type, top_type))
            return text, model_type
    return dict(config), top_type


# Sane maxima, checked before anything is allocated per layer: the largest released models have
# a few hundred layers and a few hundred heads; a config.json claiming ten million layers would
# otherwise build ten million layer records.
MAX_CONFIG_LAYERS = 10_000
MAX_CONFIG_COUNT = 1 << 31


def _positive_int(value: Any, key: str, name: str, maximum: int = MAX_CONFIG_COUNT) -> int:
    if (isinstance(value, bool) or not isinstance(value, (int, float))
            or (isinstance(value, float) and not math.isfinite(value)) or value != int(value) or value < 1):
        raise ConfigError(f"{name}: {key} must be a positive integer, got {_shown(value)}")
    if value > maximum:
        raise ConfigError(f"{name}: {key} is {_shown(value)}, more than the {maximum:,} kvlint accepts")
    return int(value)


def _shown(value: Any) -> str:
    """A value from the file as a message quotes it: a 5,000-digit integer is not printed whole
    (and Python refuses to make a string of one)."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10 ** 30:
        return f"an integer of about {int(value.bit_length() * 0.30103) + 1:,} digits"
    return repr(value)


def _first(text: Mapping[str, Any], keys: Sequence[str]) -> Any:
    for key in keys:
        value = text.get(key)
        if value is not None:
            return value
    return None


def _model_dtype(text: Mapping[str, Any], config: Mapping[str, Any]) -> str:
    """vLLM dtype=auto: config torch_dtype/dtype (text config, then top level); float32 is loaded
    as bf16 (the CUDA platform's preferred dtype). Absent: bf16, what the safetensors of the
    catalog's models hold (an assumption; the manifest's model.dtype overrides it)."""
    raw = _first(text, ("torch_dtype", "dtype")) or _first(config, ("torch_dtype", "dtype"))
    dtype = _DTYPES.get(str(raw).replace("torch.", "").lower()) if raw is not None else None
    if dtype is None or dtype == "float32":
        return "bfloat16"
    return dtype


def _layer_kinds(
    text: Mapping[str, Any], model_type: str, num_layers: int, window: Optional[int], name: str
) -> Tuple[List[AttentionKind], Optional[int]]:
    """Per-layer attention kinds and the chunk size, following each vLLM model file."""
    chunk: Optional[int] = None
    if model_type in ("llama4_text", "llama4"):
        # llama4.py: nope = no_rope_layers[i] == 0; ChunkedLocalAttention iff not nope and
        # attention_chunk_size. transformers fills an empty/absent list with int((i+1) % 4 != 0).
        chunk_raw = text.get("attention_chunk_size")
        chunk = _positive_int(chunk_raw, "attention_chunk_size", name) if chunk_raw else None
        interval = text.get("no_rope_layer_interval") or 4
        no_rope = text.get("no_rope_layers") or [int((i + 1) % interval != 0) for i in range(num_layers)]
        if len(no_rope) != num_layers:
            raise ConfigError(f"{name}: no_rope_layers has {len(no_rope)} entries for {num_layers} layers")
        return ["chunked" if (flag != 0 and chunk) else "full" for flag in no_rope], chunk

    if model_type == "gpt_oss":
        # gpt_oss.py hard-codes sliding iff layer_idx % 2 == 0 and ignores config.layer_types.
        return ["sliding" if i % 2 == 0 else "full" for i in range(num_layers)], None

    layer_types = text.get("layer_types")
    if layer_types is not None:
        if not isinstance(layer_types, list) or len(layer_types) != num_layers:
            raise ConfigError(
                f"{name}: layer_types must list one entry per layer ({num_layers}), "
                f"got {len(layer_types) if isinstance(layer_types, list) else type(layer_types).__name__}"
            )
        kinds = [attention_kind(entry, name) for entry in layer_types]
        if "chunked" in kinds:
            chunk_raw = text.get("attention_chunk_size")
            chunk = _positive_int(chunk_raw, "attention_chunk_size", name) if chunk_raw else None
        return kinds, chunk

    if model_type == "gemma2":
        # Gemma2Config: sliding iff (i+1) % 2 != 0 (older vLLM: layer_idx % 2 == 0; same result).
        return ["sliding" if (i + 1) % 2 else "full" for i in range(num_layers)], None
    if model_type == "gemma3_text":
        # Gemma3TextConfig: sliding iff (i+1) % sliding_window_pattern != 0 (default 6).
        pattern = text.get("sliding_window_pattern") or text.get("_sliding_window_pattern") or 6
        pattern = _positive_int(pattern, "sliding_window_pattern", name)
        return ["sliding" if (i + 1) % pattern else "full" for i in range(num_layers)], None
    if model_type in _QWEN_TYPES:
        # configuration_qwen2.py: layer i slides iff sliding_window (already None unless
        # use_sliding_window) and i >= max_window_layers. vLLM accepts all-or-none only; a mixed
        # layout fails at model init ("Sliding window for some but all layers is not supported").
        if window is None:
            return ["full"] * num_layers, None
        max_window_layers = text.get("max_window_layers")
        start = int(max_window_layers) if max_window_layers is not None else 0
        return ["sliding" if i >= start else "full" for i in range(num_layers)], None

    # No layer_types: vLLM sets CacheConfig.sliding_window to the model-wide window, so every layer
    # slides (Mistral v0.1, Phi-3-mini-4k); with no window every layer is full.
    return (["sliding"] * num_layers if window is not None else ["full"] * num_layers), None


def geometry_from_config(config: Mapping[str, Any], name: str) -> ModelGeometry:
    """The KV geometry vLLM derives from a Hugging Face config.json (already parsed)."""
    if not isinstance(config, Mapping):
        raise ConfigError(f"{name}: config.json must hold a JSON object, got {type(config).__name__}")
    text, model_type = _text_config(config)
    for key, value in _CLASS_DEFAULTS.get(model_type, {}).items():
        text.setdefault(key, value)
    unsized = unsized_layout(text, model_type)
    if unsized:
        raise ConfigError(f"{name}: {unsized}, which kvlint does not size")
    linear = linear_layer_count(config)
    if linear:  # a hybrid: its state layers are not KV layers (a config without layer_types too)
        raise ConfigError(
            f"{name}: a hybrid model: {linear} layer(s) are linear_attention/mamba state layers, "
            "which kvlint does not size"
        )

    layers_raw = _first(text, ("num_hidden_layers", "n_layer", "num_layers", "n_layers"))
    if layers_raw is None:
        raise ConfigError(f"{name}: config.json has no layer count (num_hidden_layers)")
    num_layers = _positive_int(layers_raw, "num_hidden_layers", name, MAX_CONFIG_LAYERS)

    heads_raw = _first(text, ("num_attention_heads", "n_head", "num_heads", "n_heads"))
    num_heads = _positive_int(heads_raw, "num_attention_heads", name) if heads_raw is not None else None

    # MLA (vLLM is_deepseek_mla): one latent of kv_lora_rank + qk_rope_head_dim per token and
    # layer, a single KV "head" that tensor parallelism does not split.
    kv_lora_rank = text.get("kv_lora_rank")
    is_mla = model_type in MLA_MODEL_TYPES and kv_lora_rank is not None
    rope_dim: Optional[int] = None
    if is_mla:
        kv_lora_rank = _positive_int(kv_lora_rank, "kv_lora_rank", name)
        if text.get("qk_rope_head_dim") is None:
            raise ConfigError(f"{name}: MLA config has kv_lora_rank but no qk_rope_head_dim")
        rope_dim = _positive_int(text["qk_rope_head_dim"], "qk_rope_head_dim", name)
        head_dim = kv_lora_rank + rope_dim
        num_kv_heads = 1
    else:
        kv_lora_rank = None
        # get_head_size: head_dim if set and > 0, then hidden_size_per_head, then hidden / heads.
        explicit = text.get("head_dim")
        if isinstance(explicit, (int, float)) and not isinstance(explicit, bool) and explicit > 0:
            head_dim = _positive_int(explicit, "head_dim", name)
        elif text.get("hidden_size_per_head"):
            head_dim = _positive_int(text["hidden_size_per_head"], "hidden_size_per_head", name)
        else:
            hidden = _first(text, ("hidden_size", "n_embd", "d_model"))
            if hidden is None or num_heads is None:
                raise ConfigError(
                    f"{name}: config.json gives neither head_dim nor hidden_size and num_attention_heads"
                )
            head_dim = _positive_int(hidden, "hidden_size", name) // num_heads
            if head_dim < 1:
                raise ConfigError(f"{name}: hidden_size is smaller than num_attention_heads")
        # get_total_num_kv_heads: falcon-style multi-query first, then the alias list, then heads.
        if text.get("multi_query") and not text.get("new_decoder_architecture"):
            num_kv_heads = 1
        else:
            kv_raw = _first(
                text,
                ("n_head_kv", "num_kv_heads", "num_key_value_heads", "multi_query_group_num",
                 "num_attention_groups"),
            )
            if kv_raw is None:
                kv_raw = num_heads
            if kv_raw is None:
                raise ConfigError(f"{name}: config.json gives neither num_key_value_heads nor num_attention_heads")
            num_kv_heads = _positive_int(kv_raw, "num_key_value_heads", name)

    # Model-wide window (get_sliding_window): Qwen's use_sliding_window=false nulls it; 0 means none.
    window_raw = text.get("sliding_window")
    # vLLM get_hf_config_sliding_window (vllm/config.py v0.11.0, vllm/config/model.py v0.33.0): a
    # config that has use_sliding_window and sets it false has no window, whatever its model_type
    # (Qwen2 and its derivatives, e.g. XiaomiMiMo's mimo); Qwen's class default is false.
    if (model_type in _QWEN_TYPES and not text.get("use_sliding_window")) or (
            "use_sliding_window" in text and not text["use_sliding_window"]):
        window_raw = None
    windows: Optional[List[Optional[int]]] = None
    if isinstance(window_raw, list):
        # Mistral-format per-layer windows (configs/mistral.py _remap_mistral_sliding_window).
        if len(window_raw) != num_layers:
            raise ConfigError(f"{name}: sliding_window lists {len(window_raw)} windows for {num_layers} layers")
        windows = [_positive_int(w, "sliding_window", name) if w else None for w in window_raw]
        window = next((w for w in windows if w), None)
        kinds: List[AttentionKind] = ["sliding" if w else "full" for w in windows]
        chunk = None
    else:
        window = _positive_int(window_raw, "sliding_window", name) if window_raw else None
        kinds, chunk = _layer_kinds(text, model_type, num_layers, window, name)

    has_sinks = model_type == "gpt_oss"  # learned per-head sink logits; no config key
    max_pos_values = [
        _positive_int(text[key], key, name)
        for key in _MAX_LEN_KEYS
        if isinstance(text.get(key), (int, float)) and not isinstance(text.get(key), bool)
    ]
    layers = build_layers(
        kinds,
        window=window,
        chunk=chunk,
        num_kv_heads=num_kv_heads,
        head_dim=head_dim,
        mla=is_mla,
        sinks=has_sinks,
        windows=windows,
    )
    return ModelGeometry(
        name=name,
        num_layers=num_layers,
        num_attention_heads=num_heads,
        num_kv_heads=num_kv_heads,
        head_dim=head_dim,
        layers=layers,
        max_position_embeddings=min(max_pos_values) if max_pos_values else None,
        dtype=_model_dtype(text, config),
        kv_lora_rank=kv_lora_rank,
        qk_rope_head_dim=rope_dim,
        qk_nope_head_dim=text.get("qk_nope_head_dim") if is_mla and type(text.get("qk_nope_head_dim")) is int else None,
        mla_sparse=("index_topk" in text) if is_mla else None,  # vLLM: hasattr(hf_config, "index_topk")
        has_sinks=has_sinks,
        source="config",
        hidden_size=_config_dim(text, ("hidden_size", "n_embd", "d_model")),
        intermediate_size=_config_dim(text, ("intermediate_size", "n_inner", "ffn_dim")),
        # the logits' width: vLLM's sampler warm-up allocates max_num_seqs x vocab_size (capacity)
        vocab_size=_config_dim(text, ("vocab_size",)) or _config_dim(config, ("vocab_size",)),
        # the engines key model-specific config rewrites by it (vLLM's DeepseekV32ForCausalLM
        # verify_and_update_config, vllm/model_executor/models/config.py v0.17.1)
        architectures=tuple(a for a in (config.get("architectures") or ()) if isinstance(a, str))
        if isinstance(config.get("architectures"), list) else (),
    )


def unsized_layout(text: Mapping[str, Any], model_type: str) -> Optional[str]:
    """What in a (text) config says its KV layout is one the reading above would get wrong, or
    None. Each marker is a key whose model keeps a KV cache the generic reading cannot describe:
    per-layer NAS blocks (`block_configs`: Llama-Nemotron's DeciLM layers, some without
    attention), Mamba hybrids by pattern (`hybrid_override_pattern`: Nemotron-H), global layers
    with their own head size or KV heads (`global_head_dim`, `num_global_key_value_heads`:
    Gemma 4; `swa_head_dim`, `swa_num_key_value_heads`, `hybrid_layer_pattern`: MiMo-V2-Flash), a
    V head size other than the K head size outside MLA (`v_head_dim`), an MLA latent under a model_type outside vLLM's MLA list (`kv_lora_rank`, e.g.
    glm4_moe_lite), DeepSeek-V4's compressed sparse attention (`o_lora_rank`, `compress_rope_theta`,
    under any model_type), or an MLA model_type without its latent (`kv_lora_rank` absent). Reading such a config as plain attention would size a cache the engine
    does not allocate; the model is reported unknown instead (KV203)."""
    if text.get("o_lora_rank") is not None or text.get("compress_rope_theta") is not None:
        return "compressed sparse attention (o_lora_rank, compress_rope_theta: DeepSeek-V4's layout)"
    if text.get("hybrid_layer_pattern") is not None:
        return "a hybrid layer pattern (hybrid_layer_pattern)"
    for key in ("swa_num_key_value_heads", "swa_head_dim"):
        if text.get(key) is not None:
            return f"sliding-window layers with their own geometry ({key})"
    v_head, head = text.get("v_head_dim"), text.get("head_dim")
    if (v_head is not None and text.get("kv_lora_rank") is None and head is not None and v_head != head):
        return f"a V head size ({_shown(v_head)}) other than the K head size ({_shown(head)})"
    if text.get("block_configs") is not None:
        return "per-layer NAS blocks (block_configs)"
    if text.get("hybrid_override_pattern") is not None:
        return "a hybrid layer pattern (hybrid_override_pattern: Mamba and attention layers)"
    for key in ("global_head_dim", "num_global_key_value_heads"):
        if text.get(key) is not None:
            return f"global attention layers with their own geometry ({key})"
    if text.get("kv_lora_rank") is not None and model_type not in MLA_MODEL_TYPES:
        return f"an MLA latent (kv_lora_rank) under model_type {model_type or 'not given'}"
    if model_type in MLA_MODEL_TYPES and text.get("kv_lora_rank") is None:
        return f"model_type {model_type} without its MLA latent (no kv_lora_rank)"
    return None


def _config_dim(text: Mapping[str, Any], keys: Sequence[str]) -> Optional[int]:
    """A model dimension from config.json, or None when absent or not a positive integer."""
    value = _first(text, keys)
    return value if type(value) is int and value > 0 else None


# Layer types that hold a recurrent state rather than a KV cache (Qwen3-Next / Qwen3.5 Gated
# DeltaNet "linear_attention", Mamba layers of hybrid models): vLLM gives them a MambaSpec.
LINEAR_LAYER_TYPES = frozenset({"linear_attention", "mamba"})


def linear_layer_count(config: Mapping[str, Any]) -> Optional[int]:
    """How many layers of a Hugging Face config hold a linear-attention / Mamba state: counted in
    `layer_types`, else from `full_attention_interval` (transformers' Qwen3NextConfig: layer i is
    full attention iff (i + 1) % interval == 0). None when the config does not say."""
    if not isinstance(config, Mapping):
        return None
    text, _ = _text_config(config)
    layer_types = text.get("layer_types")
    if isinstance(layer_types, list):
        return sum(1 for entry in layer_types if str(entry).strip().lower() in LINEAR_LAYER_TYPES)
    interval, layers = text.get("full_attention_interval"), text.get("num_hidden_layers")
    if (isinstance(interval, int) and not isinstance(interval, bool) and interval > 0
            and isinstance(layers, int) and not isinstance(layers, bool) and layers > 0):
        return layers - layers // interval  # layers i + 1 in 1..layers not a multiple of interval
    return None


def read_config_json(path: Union[str, Path]) -> Any:
    """The parsed JSON of a config.json file (bounded, non-blocking read). Raises ConfigError."""
    path = Path(path)
    try:  # bounded and non-blocking (kvlint.inputs.read_capped): a FIFO or device is refused
        raw = read_capped(path)
    except InputError as error:
        raise ConfigError(f"{path}: cannot read config.json: {error.message}") from None
    import json  # on use (start-up time): a check that reads no JSON never loads the module

    try:
        return json.loads(raw.decode("utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ConfigError(f"{path}: not valid JSON: {error}") from None
    except RecursionError:  # {"a": {"a": ... 100,000 deep
        raise ConfigError(f"{path}: not valid JSON: nested too deeply") from None


def read_config(path: Union[str, Path], name: Optional[str] = None) -> ModelGeometry:
    """Read a config.json file, or a GGUF model file's header (a path named *.gguf, read by
    kvlint.catalog.gguf); `name` defaults to the file's path. Raises ConfigError."""
    # Imported on use: only a manifest that names a model file reads one (a start-up cost otherwise).
    from kvlint.catalog.gguf import GGUFError, is_gguf_path, read_gguf_geometry

    if is_gguf_path(path):
        try:
            return read_gguf_geometry(path, name=name or str(path))
        except GGUFError as error:
            raise ConfigError(error.message) from None
    return geometry_from_config(read_config_json(path), name or str(path))


# --- a checkpoint's quantization_config ---------------------------------------------------------


def _num(block: Mapping[str, Any], *keys: str) -> Optional[int]:
    for key in keys:
        value = block.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def _group_scales(group: Optional[int], zeros_bits: Optional[int]) -> Optional[float]:
    """Scale bytes per weight of a group-quantized format: one 16-bit scale per `group` inputs,
    plus a packed zero point of `zeros_bits` when the format keeps one; per-channel (group -1 or
    absent) scales are one per output row, negligible beside the weights."""
    if group is None or group <= 0:
        return 0.0
    return (2 + (zeros_bits or 0) / 8) / group


def _quantization_config(config: Any) -> Optional[Mapping[str, Any]]:
    """A config.json's `quantization_config` (a multimodal model's may sit in text_config), or None."""
    if not isinstance(config, Mapping):
        return None
    quant = config.get("quantization_config")
    if not isinstance(quant, Mapping) and isinstance(config.get("text_config"), Mapping):
        quant = config["text_config"].get("quantization_config")
    return quant if isinstance(quant, Mapping) else None


def checkpoint_quantization(config: Any) -> Optional[Tuple[str, str, Optional[float]]]:
    """The weights format a config.json's `quantization_config` states, as
    (format, how it was read, scale bytes per quantized weight); None when the config has no
    quantization_config or one that quantizes only the KV cache. The format is a WEIGHT_DTYPE_BYTES spelling, or `unknown` when the
    method, or its bits, is not one kvlint prices (then the weights are unknown, never guessed).

    Layouts, as the engine allocates them (vLLM vllm/model_executor/layers/quantization/, v0.19.0):
    awq.py and gptq.py `create_weights`: packed int weights, fp16 `scales` and packed `qzeros` per
    group of group_size inputs; bitsandbytes.py: nf4/fp4 at 4 bit with one fp32 absmax per 64
    values (bnb_4bit_use_double_quant: an 8-bit absmax and one fp32 per 256 blocks), or int8
    with one fp32 scale per row; compressed_tensors/: `config_groups[*].weights` num_bits, type
    and strategy (group: one scale per group_size); fp8.py: one fp32 scale per tensor, or per
    weight_block_size block; modelopt.py: quant_algo FP8 or NVFP4; mxfp4.py: MXFP4 MoE experts."""
    quant = _quantization_config(config)
    if quant is None:
        return None
    method = str(quant.get("quant_method") or "").strip().lower()
    where = f"its quantization_config (quant_method {method or 'not given'}"
    bits = _num(quant, "bits", "w_bit", "num_bits")
    group = _num(quant, "group_size", "q_group_size")
    if method == "fp8":
        block = quant.get("weight_block_size")
        scale = 0.0
        if (isinstance(block, list) and len(block) == 2 and all(isinstance(b, int) and not isinstance(b, bool)
                                                                  and b > 0 for b in block)):
            scale = 4 / (block[0] * block[1])
            where += f", weight_block_size {block[0]}x{block[1]}"
        return "fp8", where + ")", scale
    if method in ("awq", "gptq"):
        if bits not in (4, 8):
            return "unknown", where + f", bits {bits})", None
        zero_point = quant.get("zero_point", True) if method == "awq" else not quant.get("sym", False)
        zeros = bits if zero_point else None
        where += f", {bits}-bit, group_size {group})"
        return f"int{bits}", where, _group_scales(group, zeros)
    if method == "bitsandbytes":
        if quant.get("load_in_4bit"):
            double = bool(quant.get("bnb_4bit_use_double_quant"))
            scale = (1 / 64 + 4 / (64 * 256)) if double else 4 / 64
            where += f", 4-bit {quant.get('bnb_4bit_quant_type') or 'fp4'}, absmax per 64"
            return "int4", where + (" double-quantized)" if double else ")"), scale
        if quant.get("load_in_8bit"):
            return "int8", where + ", 8-bit)", 0.0
        return "unknown", where + ", neither load_in_4bit nor load_in_8bit)", None
    if method == "compressed-tensors":
        fmt = str(quant.get("format") or "")
        groups = quant.get("config_groups")
        weights = [g.get("weights") for g in groups.values() if isinstance(g, Mapping)] if isinstance(groups, Mapping) else []
        weights = [w for w in weights if isinstance(w, Mapping)]
        if not groups and isinstance(quant.get("kv_cache_scheme"), Mapping):
            # a KV-cache-only recipe: no config_groups, so every linear layer gets vLLM's
            # UnquantizedLinearMethod (CompressedTensorsConfig.get_quant_method, compressed_tensors.py
            # v0.15.0) and the weights load in the model's dtype: no weights format to record
            return None
        if not weights:
            return "unknown", where + ", no config_groups weights)", None
        w = weights[0]
        nbits, kind = _num(w, "num_bits"), str(w.get("type") or "int")
        wgroup = _num(w, "group_size") if w.get("strategy") in ("group", "tensor_group") else None
        where += f", {fmt or 'format not given'}, weights {kind} {nbits}-bit {w.get('strategy') or ''})".replace(" )", ")")
        if "nvfp4" in fmt or (kind == "float" and nbits == 4):
            return "nvfp4", where, None
        if kind == "float" and nbits == 8:
            return "fp8", where, 0.0 if wgroup is None else 4 / wgroup
        if kind == "int" and nbits in (4, 8):
            zeros = None if w.get("symmetric", True) else nbits
            return f"int{nbits}", where, _group_scales(wgroup, zeros)
        return "unknown", where, None
    if method == "modelopt":
        algo = str(quant.get("quant_algo") or "").upper()
        where += f", quant_algo {algo or 'not given'})"
        if algo == "FP8":
            return "fp8", where, 0.0
        if algo == "NVFP4":
            return "nvfp4", where, None
        return "unknown", where, None
    if method == "mxfp4":
        return "mxfp4", where + ")", None
    return "unknown", where + ")", None


def checkpoint_quant_method(config: Any) -> Optional[str]:
    """The lower-cased `quant_method` of a config.json's quantization_config, or None."""
    quant = _quantization_config(config)
    method = str(quant.get("quant_method") or "").strip().lower() if quant is not None else ""
    return method or None


def checkpoint_kv_scales(config: Any) -> Optional[Tuple[str, str, str]]:
    """The KV scales a config.json's `quantization_config` says the checkpoint carries, as
    (granularity, scheme, how it was read), or None when it states no KV quantization or one
    kvlint does not read. `granularity` is a model.kv_scales value (per-tensor, per-head);
    `scheme` is the producer's format, which decides what an engine does with it:

    - compressed-tensors (llm-compressor): `kv_cache_scheme` with `strategy` tensor (one k/v scale
      per layer) or attn_head (one per KV head). vLLM turns `--kv-cache-dtype auto` into fp8 for
      such a checkpoint (`Attention.__init__`, vllm/model_executor/layers/attention/attention.py
      L287-291, v0.33.0; vllm/attention/layer.py L199, v0.15.0) and refuses any other strategy
      (`CompressedTensorsKVCacheMethod.validate_kv_cache_scheme`, compressed_tensors.py v0.15.0:
      tensor or attn_head; v0.12.0: tensor only).
    - modelopt (NVIDIA ModelOpt, a quant_method starting with "modelopt"): `kv_cache_quant_algo`
      "FP8", or in newer exports a static `kv_cache_scheme` of 8-bit floats
      (`ModelOptQuantConfigBase.from_config`, vllm/model_executor/layers/quantization/modelopt.py
      L333-355, v0.33.0): per-tensor k/v scales. vLLM turns `auto` into fp8 for it too
      (`get_kv_cache_quant_algo_string` / `resolve_kv_cache_dtype_string`,
      vllm/utils/torch_utils.py L443-516, v0.33.0); a 4-bit one (nvfp4) is not read here."""
    quant = _quantization_config(config)
    if quant is None:
        return None
    method = str(quant.get("quant_method") or "").strip().lower()
    scheme = quant.get("kv_cache_scheme")
    if method == "compressed-tensors":
        if not isinstance(scheme, Mapping):
            return None
        strategy = scheme.get("strategy")
        granularity = {"tensor": "per-tensor", "attn_head": "per-head"}.get(strategy)  # type: ignore[arg-type]
        if granularity is None:
            return None
        return (granularity, "compressed-tensors",
                f"its quantization_config (compressed-tensors kv_cache_scheme, strategy {strategy})")
    if method.startswith("modelopt"):
        algo = quant.get("kv_cache_quant_algo")
        if isinstance(algo, str) and algo.strip().upper() == "FP8":
            return "per-tensor", "modelopt", "its quantization_config (modelopt kv_cache_quant_algo FP8)"
        if (isinstance(scheme, Mapping) and scheme.get("type") == "float" and scheme.get("num_bits") == 8
                and scheme.get("dynamic") is False):  # as get_kv_cache_quant_algo_string asks
            return "per-tensor", "modelopt", "its quantization_config (modelopt kv_cache_scheme, 8-bit float)"
    return None


# --- the manifest's model.geometry block -------------------------------------------------------

_GEOMETRY_KEYS = frozenset(
    {
        "num_layers",
        "num_attention_heads",
        "num_kv_heads",
        "head_dim",
        "sliding_window",
        "layer_types",
        "mla",
        "max_position_embeddings",
        "vocab_size",
        "hidden_size",
        "intermediate_size",
        "attention_sinks",  # schemas/manifest.v1.json, docs/manifest.md
    }
)


def manifest_geometry_overrides(
    base: Optional[ModelGeometry],
    geometry: Mapping[str, Any],
    name: str,
    dtype: Optional[str] = None,
) -> ModelGeometry:
    """Apply a manifest's `model.geometry` (docs/manifest.md) over `base` (catalog or config
    geometry, or None). Every given field wins; the rest come from `base`. `dtype` (the
    manifest's model.dtype) wins over base's dtype. Raises ConfigError when the result is
    incomplete or inconsistent."""
    if not isinstance(geometry, Mapping):
        raise ConfigError(f"{name}: model.geometry must be a mapping")
    unknown = sorted(set(geometry) - _GEOMETRY_KEYS)
    if unknown:
        raise ConfigError(f"{name}: model.geometry has unknown field(s) {', '.join(unknown)}")

    def given(key: str) -> bool:
        return key in geometry

    def number(key: str) -> Optional[int]:
        value = geometry.get(key)
        return None if value is None else _positive_int(value, f"model.geometry.{key}", name)

    # bounded like a config.json's num_hidden_layers, before anything is built per layer
    num_layers = (_positive_int(geometry["num_layers"], "model.geometry.num_layers", name, MAX_CONFIG_LAYERS)
                  if given("num_layers") and geometry["num_layers"] is not None else None)
    if num_layers is None:
        if base is None:
            raise ConfigError(f"{name}: model.geometry needs num_layers (no catalog entry or config.json)")
        num_layers = base.num_layers

    num_heads = number("num_attention_heads") if given("num_attention_heads") else None
    if num_heads is None and base is not None:
        num_heads = base.num_attention_heads

    # MLA: explicit block wins; `mla: null` turns it off; otherwise inherit.
    kv_lora_rank: Optional[int] = base.kv_lora_rank if base is not None else None
    rope_dim: Optional[int] = base.qk_rope_head_dim if base is not None else None
    if given("mla"):
        mla = geometry["mla"]
        if mla is None:
            kv_lora_rank = rope_dim = None
        elif isinstance(mla, Mapping) and "kv_lora_rank" in mla and "qk_rope_head_dim" in mla:
            kv_lora_rank = _positive_int(mla["kv_lora_rank"], "model.geometry.mla.kv_lora_rank", name)
            rope_dim = _positive_int(mla["qk_rope_head_dim"], "model.geometry.mla.qk_rope_head_dim", name)
        else:
            raise ConfigError(f"{name}: model.geometry.mla needs kv_lora_rank and qk_rope_head_dim")
    is_mla = kv_lora_rank is not None and rope_dim is not None

    if is_mla:
        assert kv_lora_rank is not None and rope_dim is not None
        head_dim = kv_lora_rank + rope_dim
        explicit_head = number("head_dim") if given("head_dim") else None
        if explicit_head is not None and explicit_head != head_dim:
            raise ConfigError(
                f"{name}: model.geometry.head_dim {explicit_head} contradicts the MLA latent "
                f"kv_lora_rank + qk_rope_head_dim = {head_dim}"
            )
        num_kv_heads = 1  # vLLM ignores num_key_value_heads under MLA
    else:
        head = number("head_dim") if given("head_dim") else None
        if head is None and base is not None and not base.is_mla:
            head = base.head_dim
        if head is None:
            raise ConfigError(f"{name}: model.geometry needs head_dim (no catalog entry or config.json gives it)")
        head_dim = head
        kv = number("num_kv_heads") if given("num_kv_heads") else None
        if kv is None and base is not None and not base.is_mla:
            kv = base.num_kv_heads
        if kv is None:
            kv = num_heads
        if kv is None:
            raise ConfigError(f"{name}: model.geometry needs num_kv_heads or num_attention_heads")
        num_kv_heads = kv

    # Per-layer kinds and sizes.
    base_kinds: List[str] = [layer.kind for layer in base.layers] if base is not None else []
    base_window = next((layer.window for layer in base.layers if layer.kind == "sliding"), None) if base else None
    base_chunk = next((layer.window for layer in base.layers if layer.kind == "chunked"), None) if base else None
    window = base_window
    if given("sliding_window"):
        window = number("sliding_window")

    if given("layer_types") and geometry["layer_types"] is not None:
        layer_types = geometry["layer_types"]
        if not isinstance(layer_types, list) or len(layer_types) != num_layers:
            raise ConfigError(
                f"{name}: model.geometry.layer_types must list one entry per layer ({num_layers})"
            )
        kinds: List[AttentionKind] = [attention_kind(t, f"{name}: model.geometry.layer_types") for t in layer_types]
        if "sliding" in kinds and window is None:
            raise ConfigError(f"{name}: layer_types has sliding_attention layers but no sliding_window is known")
        if "chunked" in kinds and base_chunk is None:
            raise ConfigError(
                f"{name}: layer_types has chunked_attention layers but no attention chunk size is known"
            )
    else:
        if base_kinds and len(base_kinds) == num_layers:
            kinds = list(base_kinds)  # type: ignore[arg-type]
        elif base_kinds:
            kinds = expand_pattern(_period(base_kinds), num_layers)  # type: ignore[arg-type]
        else:
            kinds = ["full"] * num_layers
        if given("sliding_window") and window is not None and "sliding" not in kinds and "chunked" not in kinds:
            # A model-wide window with no per-layer types: every layer slides (vLLM CacheConfig).
            kinds = ["sliding"] * num_layers

    max_pos = number("max_position_embeddings") if given("max_position_embeddings") else None
    if max_pos is None and base is not None:
        max_pos = base.max_position_embeddings
    has_sinks = base.has_sinks if base is not None else False
    if given("attention_sinks") and geometry["attention_sinks"] is not None:
        if not isinstance(geometry["attention_sinks"], bool):
            raise ConfigError(f"{name}: model.geometry.attention_sinks must be true or false")
        has_sinks = geometry["attention_sinks"]
    layers = build_layers(
        kinds,
        window=window,
        chunk=base_chunk,
        num_kv_heads=num_kv_heads,
        head_dim=head_dim,
        mla=is_mla,
        sinks=has_sinks,
    )
    resolved_dtype = _DTYPES.get(str(dtype).lower(), None) if dtype is not None else None
    return ModelGeometry(
        name=name,
        num_layers=num_layers,
        num_attention_heads=num_heads,
        num_kv_heads=num_kv_heads,
        head_dim=head_dim,
        layers=layers,
        max_position_embeddings=max_pos,
        dtype=resolved_dtype or (base.dtype if base is not None else "bfloat16"),
        kv_lora_rank=kv_lora_rank if is_mla else None,
        qk_rope_head_dim=rope_dim if is_mla else None,
        has_sinks=has_sinks,
        source="manifest",
        vocab_size=(number("vocab_size") if given("vocab_size") else None)
        or (base.vocab_size if base is not None else None),
        hidden_size=(number("hidden_size") if given("hidden_size") else None)
        or (base.hidden_size if base is not None else None),
        intermediate_size=(number("intermediate_size") if given("intermediate_size") else None)
        or (base.intermediate_size if base is not None else None),
    )


# cached_config's answers while remembered_lookups() is open, by (hub settings, name); else None.
_LOOKUPS: List[Optional[Dict[Tuple[Optional[str], ...], Optional[Path]]]] = [None]


@contextmanager
def remembered_lookups() -> Iterator[None]:
    """Within it, cached_config looks at the filesystem once per model name and hub location and
    answers again from that first look: for one run that resolves many manifests of the same
    model (`kvlint plan` judges thousands), where a cache changing mid-run is not a case to serve."""
    previous = _LOOKUPS[0]
    if previous is None:
        _LOOKUPS[0] = {}
    try:
        yield
    finally:
        _LOOKUPS[0] = previous


def cached_config(name: str, environ: Optional[Mapping[str, str]] = None,
                  revision: Optional[str] = None) -> Optional[Path]:
    """The config.json of model `name` (at `revision`, else main) in the local Hugging Face cache,
    offline, or None (_cached_config; remembered within remembered_lookups())."""
    memo = _LOOKUPS[0]
    if memo is None:
        return _cached_config(name, environ, revision)
    env = os.environ if environ is None else environ
    key = (env.get("HF_HUB_CACHE"), env.get("HF_HOME"), os.environ.get("HOME"), name, revision)
    if key not in memo:
        memo[key] = _cached_config(name, environ, revision)
    return memo[key]


_COMMIT = re.compile(r"[0-9a-f]{40}")


def _cached_config(name: str, environ: Optional[Mapping[str, str]] = None,
                   revision: Optional[str] = None) -> Optional[Path]:
    """The config.json of model `name` in the local Hugging Face cache, offline, or None.

    The hub cache is `$HF_HUB_CACHE`, else `$HF_HOME/hub`, else `~/.cache/huggingface/hub`; a
    model lives in `models--{org}--{name}/snapshots/<commit>/`, the commit being the one
    `refs/main` names (else the only snapshot)
    (https://huggingface.co/docs/huggingface_hub/guides/manage-cache). A pinned `revision` is
    that commit's snapshot (a 40-hex commit) or the commit `refs/<revision>` names (a branch,
    tag or `refs/pr/N`), and nothing else: another snapshot is another checkpoint."""
    env = os.environ if environ is None else environ
    if revision is not None and (not revision or ".." in revision or revision.startswith("/")
                                 or "\\" in revision or "\x00" in revision):  # a name, not a path out of the repo
        return None
    if not name or "/" not in name or name.count("/") > 1 or ".." in name:
        return None
    if env.get("HF_HUB_CACHE"):
        hub = Path(env["HF_HUB_CACHE"])
    elif env.get("HF_HOME"):
        hub = Path(env["HF_HOME"]) / "hub"
    else:
        try:
            hub = Path.home() / ".cache" / "huggingface" / "hub"
        except (RuntimeError, KeyError, OSError):  # no HOME and no passwd entry: no cache to look in
            return None
    repo = hub / ("models--" + name.replace("/", "--"))
    if revision is not None:
        try:
            commit = revision if _COMMIT.fullmatch(revision) else (
                repo / "refs" / revision.replace("refs/", "", 1)).read_text(encoding="utf-8").strip()
            candidate = repo / "snapshots" / commit / "config.json"
            return candidate if _COMMIT.fullmatch(commit) and candidate.is_file() else None
        except (OSError, ValueError):
            return None
    try:
        ref = (repo / "refs" / "main").read_text(encoding="utf-8").strip()
        candidate = repo / "snapshots" / ref / "config.json"
        if candidate.is_file():
            return candidate
        snapshots = [d for d in (repo / "snapshots").iterdir() if (d / "config.json").is_file()]
    except OSError:
        try:
            snapshots = [d for d in (repo / "snapshots").iterdir() if (d / "config.json").is_file()]
        except OSError:
            return None
    return snapshots[0] / "config.json" if len(snapshots) == 1 else None
