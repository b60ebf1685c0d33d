"""Runs one vLLM release's own `get_rope` on CPU (meta device) and records the size of the
rotary cos/sin cache each model's attention builds, for tests/test_capacity_rope_cache.py.

    .venv/bin/python tools/derive/vllm_rope_probe.py tools/derive/.cache/vllm-0.19.0 \
        > tools/derive/tables/vllm_rope_cache.json

The root is an extracted wheel (`wheels.fetch_release_source`, or `pip download --no-deps
vllm==0.19.0` unzipped). The release's code is imported under tools/derive/stubs.py (sm90) and
run for real: `get_rope` picks the RoPE class from the rope parameters and the class computes its
cache (`_compute_cos_sin_cache`, then `.to(dtype)`); under `torch.device("meta")` nothing is
allocated, the shape and dtype are the code's. Each case is one `get_rope` call as the model's
vLLM file makes it, with the parameters of the checkpoint's config.json (cited per case).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

# name: (where the model's vLLM file calls get_rope, config.json source, get_rope keyword arguments).
# dtype is the model dtype vLLM constructs the model under (set_default_torch_dtype), unless the
# model file passes one.
CASES = {
    "meta-llama/Llama-4-Scout-17B-16E-Instruct": (
        "vllm/model_executor/models/llama4.py Llama4Attention.__init__ (max_position = text_config.max_position_embeddings)",
        "https://huggingface.co/meta-llama/Llama-4-Scout-17B-16E-Instruct/blob/main/config.json text_config",
        {"dtype": "bfloat16", "head_size": 128, "max_position": 10485760, "is_neox_style": True,
         "rope_parameters": {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 16.0, "low_freq_factor": 1.0,
                             "high_freq_factor": 1.0, "original_max_position_embeddings": 8192}}),
    "meta-llama/Llama-3.1-8B-Instruct": (
        "vllm/model_executor/models/llama.py LlamaAttention.__init__",
        "https://huggingface.co/meta-llama/Llama-3.1-8B-Instruct/blob/main/config.json",
        {"dtype": "bfloat16", "head_size": 128, "max_position": 131072, "is_neox_style": True,
         "rope_parameters": {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0,
                             "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}}),
    "Qwen/Qwen3-8B": (
        "vllm/model_executor/models/qwen3.py Qwen3Attention.__init__",
        "https://huggingface.co/Qwen/Qwen3-8B/blob/main/config.json",
        {"dtype": "bfloat16", "head_size": 128, "max_position": 40960, "is_neox_style": True,
         "rope_parameters": {"rope_type": "default", "rope_theta": 1000000.0}}),
    "google/gemma-3-12b-it (sliding layers)": (
        "vllm/model_executor/models/gemma3.py Gemma3Attention.__init__ (local layers: rope_local_base_freq, no scaling)",
        "https://huggingface.co/google/gemma-3-12b-it/blob/main/config.json text_config",
        {"dtype": "bfloat16", "head_size": 256, "max_position": 131072, "is_neox_style": True,
         "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0}}),
    "google/gemma-3-12b-it (global layers)": (
        "vllm/model_executor/models/gemma3.py Gemma3Attention.__init__ (global layers: linear scaling, factor 8)",
        "https://huggingface.co/google/gemma-3-12b-it/blob/main/config.json text_config",
        {"dtype": "bfloat16", "head_size": 256, "max_position": 131072, "is_neox_style": True,
         "rope_parameters": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1000000.0}}),
    "deepseek-ai/DeepSeek-V3": (
        "vllm/model_executor/models/deepseek_v2.py DeepseekV2MLAAttention.__init__ (qk_rope_head_dim; yarn -> deepseek_yarn)",
        "https://huggingface.co/deepseek-ai/DeepSeek-V3/blob/main/config.json",
        {"dtype": "bfloat16", "head_size": 64, "max_position": 163840, "is_neox_style": False,
         "rope_parameters": {"rope_type": "deepseek_yarn", "rope_theta": 10000, "factor": 40,
                             "original_max_position_embeddings": 4096, "beta_fast": 32, "beta_slow": 1,
                             "mscale": 1.0, "mscale_all_dim": 1.0}}),
    "openai/gpt-oss-20b": (
        "vllm/model_executor/models/gpt_oss.py OAIAttention.__init__ (dtype=torch.float32, rope_type yarn)",
        "https://huggingface.co/openai/gpt-oss-20b/blob/main/config.json",
        {"dtype": "float32", "head_size": 64, "max_position": 131072, "is_neox_style": True,
         "rope_parameters": {"rope_type": "yarn", "rope_theta": 150000, "factor": 32.0,
                             "original_max_position_embeddings": 4096, "beta_fast": 32.0, "beta_slow": 1.0,
                             "truncate": False}}),
}


def main(root: Path) -> dict:
    sys.path[:0] = [str(root), str(HERE), str(HERE / ".cache" / "deps")]
    import stubs

    stubs.install(root, stubs.DEVICES["sm90"])
    stubs.set_platform(stubs.DEVICES["sm90"])
    import torch
    from vllm.config import VllmConfig, set_current_vllm_config
    from vllm.model_executor.layers.rotary_embedding import get_rope

    version = next(Path(root).glob("vllm-*.dist-info")).name[len("vllm-"):-len(".dist-info")]
    out = {"generator": "tools/derive/vllm_rope_probe.py", "vllm": version,
           "what": "cos_sin_cache of the module get_rope returns: shape, dtype and bytes", "cases": {}}
    for name, (where, config, kwargs) in CASES.items():
        kwargs = dict(kwargs)
        torch.set_default_dtype(getattr(torch, kwargs.pop("dtype")))
        try:
            with set_current_vllm_config(VllmConfig()), torch.device("meta"):
                rope = get_rope(**kwargs)
        finally:
            torch.set_default_dtype(torch.float32)
        cache = rope.cos_sin_cache
        out["cases"][name] = {"where": where, "config": config, "class": type(rope).__name__,
                              "shape": list(cache.shape), "dtype": str(cache.dtype).replace("torch.", ""),
                              "bytes": cache.numel() * cache.element_size()}
    return out


if __name__ == "__main__":
    print(json.dumps(main(Path(sys.argv[1]).resolve()), indent=1))
