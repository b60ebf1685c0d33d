"""Fake Hugging Face configs for the SGLang derivations, built from kvlint's model catalog.

Geometry (layers, heads, head_dim, hidden size, window, layer pattern, MLA ranks, context length,
dtype) comes from rules/catalog/models/*.yaml, whose entries cite each model's config.json. The
few extra keys SGLang reads that the catalog does not carry (vocab_size, intermediate_size,
rope_theta, quantization_config, ...) are copied from the same config.json files and listed in
EXTRA with that source. Plain data only: safe to import anywhere.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict

import yaml

REPO = Path(__file__).resolve().parents[2]
CATALOG = REPO / "rules" / "catalog" / "models"

# Keys SGLang reads that kvlint's catalog does not hold; values from each model's HF config.json
# (the URL cited by the catalog entry).
EXTRA: Dict[str, Dict[str, Any]] = {
    "meta-llama/Llama-3.1-8B-Instruct": {"vocab_size": 128256, "intermediate_size": 14336, "rope_theta": 500000.0,
                                         "rope_scaling": {"rope_type": "llama3", "factor": 8.0,
                                                          "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                                          "original_max_position_embeddings": 8192}},
    "meta-llama/Llama-3.1-70B-Instruct": {"vocab_size": 128256, "intermediate_size": 28672, "rope_theta": 500000.0,
                                          "rope_scaling": {"rope_type": "llama3", "factor": 8.0,
                                                           "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                                           "original_max_position_embeddings": 8192}},
    "Qwen/Qwen3-32B": {"vocab_size": 151936, "intermediate_size": 25600, "rope_theta": 1000000.0,
                       "use_sliding_window": False, "sliding_window": None},
    "Qwen/Qwen3-8B": {"vocab_size": 151936, "intermediate_size": 12288, "rope_theta": 1000000.0,
                      "use_sliding_window": False, "sliding_window": None},
    "mistralai/Mistral-7B-Instruct-v0.3": {"vocab_size": 32768, "intermediate_size": 14336, "rope_theta": 1000000.0,
                                           "sliding_window": None},
    "deepseek-ai/DeepSeek-V3": {"vocab_size": 129280, "intermediate_size": 18432, "moe_intermediate_size": 2048,
                                "n_routed_experts": 256, "n_shared_experts": 1, "num_experts_per_tok": 8,
                                "first_k_dense_replace": 3, "num_nextn_predict_layers": 1, "n_group": 8,
                                "topk_group": 4, "rope_theta": 10000,
                                "rope_scaling": {"type": "yarn", "factor": 40, "beta_fast": 32, "beta_slow": 1,
                                                 "mscale": 1.0, "mscale_all_dim": 1.0,
                                                 "original_max_position_embeddings": 4096},
                                "quantization_config": {"quant_method": "fp8", "fmt": "e4m3",
                                                        "activation_scheme": "dynamic",
                                                        "weight_block_size": [128, 128]}},
    "openai/gpt-oss-20b": {"vocab_size": 201088, "intermediate_size": 2880, "num_local_experts": 32,
                           "experts_per_token": 4, "num_experts_per_tok": 4, "rope_theta": 150000,
                           "rope_scaling": {"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0,
                                            "beta_slow": 1.0, "truncate": False,
                                            "original_max_position_embeddings": 4096},
                           "quantization_config": {"quant_method": "mxfp4",
                                                   "modules_to_not_convert": ["model.layers.*.self_attn",
                                                                              "model.layers.*.mlp.router",
                                                                              "model.embed_tokens", "lm_head"]}},
    "openai/gpt-oss-120b": {"vocab_size": 201088, "intermediate_size": 2880, "num_local_experts": 128,
                            "experts_per_token": 4, "num_experts_per_tok": 4, "rope_theta": 150000,
                            "rope_scaling": {"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0,
                                             "beta_slow": 1.0, "truncate": False,
                                             "original_max_position_embeddings": 4096},
                            "quantization_config": {"quant_method": "mxfp4",
                                                    "modules_to_not_convert": ["model.layers.*.self_attn",
                                                                               "model.layers.*.mlp.router",
                                                                               "model.embed_tokens", "lm_head"]}},
    "google/gemma-2-9b": {"vocab_size": 256000, "intermediate_size": 14336, "rope_theta": 10000.0,
                          "attn_logit_softcapping": 50.0, "final_logit_softcapping": 30.0,
                          "query_pre_attn_scalar": 256, "cache_implementation": "hybrid"},
    "google/gemma-2-27b": {"vocab_size": 256000, "intermediate_size": 36864, "rope_theta": 10000.0,
                           "attn_logit_softcapping": 50.0, "final_logit_softcapping": 30.0,
                           "query_pre_attn_scalar": 144, "cache_implementation": "hybrid"},
    "google/gemma-3-27b-it": {"vocab_size": 262208, "intermediate_size": 21504, "rope_theta": 1000000.0,
                              "rope_local_base_freq": 10000.0, "query_pre_attn_scalar": 168,
                              "sliding_window_pattern": 6, "rope_scaling": {"rope_type": "linear", "factor": 8.0}},
}

# What the grid calls each architecture -> the catalog model standing for it.
GRID_MODELS = {
    "llama": "meta-llama/Llama-3.1-8B-Instruct",
    "qwen3": "Qwen/Qwen3-32B",
    "deepseek_mla": "deepseek-ai/DeepSeek-V3",
    "gpt_oss": "openai/gpt-oss-20b",
    "gemma2": "google/gemma-2-9b",
    "gemma3": "google/gemma-3-27b-it",
}


def load_catalog() -> Dict[str, Dict[str, Any]]:
    out = {}
    for f in sorted(CATALOG.glob("*.yaml")):
        for m in yaml.safe_load(f.read_text())["models"]:
            m["_file"] = f"rules/catalog/models/{f.name}"
            out[m["id"]] = m
    return out


def layer_types(entry: Dict[str, Any]) -> list:
    pattern = entry["attention"]["pattern"]
    names = {"full": "full_attention", "sliding": "sliding_attention", "chunked": "chunked_attention"}
    return [names[pattern[i % len(pattern)]] for i in range(entry["num_layers"])]


def hf_config_fields(model_id: str, catalog: Dict[str, Dict[str, Any]] = None) -> Dict[str, Any]:
    """config.json-shaped dict for one catalog model (dtype left as the config's string)."""
    catalog = catalog or load_catalog()
    e = catalog[model_id]
    text: Dict[str, Any] = {
        "architectures": list(e["architectures"]),
        "model_type": e["model_type"],
        "num_hidden_layers": e["num_layers"],
        "num_attention_heads": e["num_attention_heads"],
        "num_key_value_heads": e["num_kv_heads"],
        "hidden_size": e["hidden_size"],
        "max_position_embeddings": e["max_position_embeddings"],
        "torch_dtype": e.get("config_dtype") or "bfloat16",
        "tie_word_embeddings": False,
        "rms_norm_eps": 1e-6,
        "hidden_act": "silu",
    }
    if e.get("head_dim"):
        text["head_dim"] = e["head_dim"]
    if e.get("mla"):
        text.update(e["mla"])
    window = e["attention"].get("window")
    if window:
        text["sliding_window"] = window
        text["layer_types"] = layer_types(e)
    text.update(EXTRA.get(model_id, {}))
    if e.get("config_model_type") == "gemma3":  # multimodal wrapper: text_config + vision_config
        return {
            "architectures": list(e["architectures"]),
            "model_type": "gemma3",
            "torch_dtype": text["torch_dtype"],
            "text_config": dict(text, architectures=None),
            "vision_config": {"model_type": "siglip_vision_model", "hidden_size": 1152, "image_size": 896,
                              "patch_size": 14, "num_hidden_layers": 27, "num_attention_heads": 16,
                              "intermediate_size": 4304},
            "mm_tokens_per_image": 256,
            "image_token_index": 262144,
            "boi_token_index": 255999,
            "eoi_token_index": 256000,
        }
    return text
