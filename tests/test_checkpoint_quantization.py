"""A config.json's quantization_config prices the weights (kvlint.catalog.hf_config
checkpoint_quantization): AWQ/GPTQ group scales and zeros, bitsandbytes absmax, compressed-tensors
config_groups, fp8 blocks, modelopt; an unknown method leaves the weights unknown, said so."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import invoke
from kvlint.catalog.hf_config import checkpoint_kv_scales, checkpoint_quantization

# Qwen/Qwen2.5-7B-Instruct-AWQ config.json (https://huggingface.co/Qwen/Qwen2.5-7B-Instruct-AWQ/blob/main/config.json)
QWEN_AWQ = {
    "architectures": ["Qwen2ForCausalLM"], "hidden_act": "silu", "hidden_size": 3584, "intermediate_size": 18944,
    "max_position_embeddings": 32768, "max_window_layers": 28, "model_type": "qwen2", "num_attention_heads": 28,
    "num_hidden_layers": 28, "num_key_value_heads": 4, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0,
    "sliding_window": 131072, "tie_word_embeddings": False, "torch_dtype": "float16", "use_sliding_window": False,
    "vocab_size": 152064,
    "quantization_config": {"bits": 4, "group_size": 128, "modules_to_not_convert": None, "quant_method": "awq",
                            "version": "gemm", "zero_point": True},
}


@pytest.mark.parametrize("quant,fmt,scale", [
    ({"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True}, "int4", 2.5 / 128),
    ({"quant_method": "gptq", "bits": 4, "group_size": 128, "sym": True}, "int4", 2 / 128),
    ({"quant_method": "gptq", "bits": 8, "group_size": 128, "sym": False}, "int8", 3 / 128),
    ({"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_quant_type": "nf4"}, "int4", 4 / 64),
    ({"quant_method": "bitsandbytes", "load_in_8bit": True}, "int8", 0.0),
    ({"quant_method": "fp8", "weight_block_size": [128, 128]}, "fp8", 4 / (128 * 128)),
    ({"quant_method": "fp8"}, "fp8", 0.0),
    ({"quant_method": "compressed-tensors", "format": "pack-quantized",
      "config_groups": {"group_0": {"weights": {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 128,
                                                "symmetric": True}}}}, "int4", 2 / 128),
    ({"quant_method": "compressed-tensors", "format": "float-quantized",
      "config_groups": {"group_0": {"weights": {"num_bits": 8, "type": "float", "strategy": "channel"}}}}, "fp8", 0.0),
    ({"quant_method": "compressed-tensors", "format": "int-quantized",
      "config_groups": {"group_0": {"weights": {"num_bits": 8, "type": "int", "strategy": "channel"}}}}, "int8", 0.0),
    ({"quant_method": "modelopt", "quant_algo": "NVFP4"}, "nvfp4", None),
    ({"quant_method": "mxfp4"}, "mxfp4", None),
])
def test_methods(quant, fmt, scale):
    found = checkpoint_quantization({"quantization_config": quant})
    assert found is not None and found[0] == fmt
    assert found[2] == (pytest.approx(scale) if scale is not None else None)


@pytest.mark.parametrize("quant", [
    {"quant_method": "hqq"}, {"quant_method": "gptq", "bits": 3}, {"quant_method": "bitsandbytes"}, {},
])
def test_unknown_is_unknown(quant):
    assert checkpoint_quantization({"quantization_config": quant})[0] == "unknown"


def test_no_quantization_config():
    assert checkpoint_quantization({"model_type": "llama"}) is None


def test_a_kv_cache_only_recipe_leaves_the_weights_unquantized():
    """llm-compressor with only a kv_cache_scheme writes no config_groups: vLLM gives every linear
    layer UnquantizedLinearMethod (compressed_tensors.py get_quant_method, v0.15.0)."""
    quant = {"quant_method": "compressed-tensors", "config_groups": {}, "format": "dense",
             "kv_cache_scheme": {"num_bits": 8, "type": "float", "strategy": "tensor", "symmetric": True,
                                 "dynamic": False}}
    assert checkpoint_quantization({"quantization_config": quant}) is None
    assert checkpoint_kv_scales({"quantization_config": quant})[:2] == ("per-tensor", "compressed-tensors")
    # config_groups that quantize activations only still leave the weights format unknown
    activations = dict(quant, config_groups={"g": {"input_activations": {"num_bits": 8}}})
    assert checkpoint_quantization({"quantization_config": activations})[0] == "unknown"


@pytest.mark.parametrize("quant,expected", [
    # compressed-tensors: CompressedTensorsKVCacheMethod.validate_kv_cache_scheme takes tensor and
    # attn_head (compressed_tensors.py, vLLM v0.15.0); other strategies are not read
    ({"quant_method": "compressed-tensors", "kv_cache_scheme": {"num_bits": 8, "type": "float", "strategy": "tensor"}},
     ("per-tensor", "compressed-tensors")),
    ({"quant_method": "compressed-tensors", "kv_cache_scheme": {"num_bits": 8, "type": "float", "strategy": "attn_head"}},
     ("per-head", "compressed-tensors")),
    ({"quant_method": "compressed-tensors", "kv_cache_scheme": {"num_bits": 8, "type": "float", "strategy": "channel"}},
     None),
    ({"quant_method": "compressed-tensors", "kv_cache_scheme": None}, None),
    # ModelOpt: kv_cache_quant_algo, or an 8-bit float kv_cache_scheme (modelopt.py from_config, v0.33.0)
    ({"quant_method": "modelopt", "quant_algo": "FP8", "kv_cache_quant_algo": "FP8"}, ("per-tensor", "modelopt")),
    ({"quant_method": "modelopt", "quant_algo": "NVFP4", "kv_cache_scheme": {"dynamic": False, "num_bits": 8, "type": "float"}},
     ("per-tensor", "modelopt")),
    ({"quant_method": "modelopt", "quant_algo": "NVFP4", "kv_cache_quant_algo": "NVFP4"}, None),
    ({"quant_method": "modelopt", "quant_algo": "FP8"}, None),
    ({"quant_method": "modelopt", "quant_algo": "NVFP4", "kv_cache_scheme": {"dynamic": True, "num_bits": 8, "type": "float"}},
     None),
    # no quant_method: vLLM's get_kv_cache_quant_algo_string reads ModelOpt keys only under a
    # modelopt* quant_method (vllm/utils/torch_utils.py v0.33.0 L452-453), so nothing is read here
    ({"quant_algo": "FP8", "kv_cache_scheme": "FP8", "producer": {"name": "modelopt"}}, None),
    # an AWQ checkpoint says nothing about the KV cache
    ({"quant_method": "awq", "bits": 4, "group_size": 128}, None),
])
def test_checkpoint_kv_scales(quant, expected):
    found = checkpoint_kv_scales({"quantization_config": quant})
    assert (found[:2] if found else None) == expected


MANIFEST = """\
apiVersion: kvlint/v1
kind: Deployment
metadata:
  name: awq
engine:
  name: vllm
  version: "0.19.1"
hardware:
  gpu: L4-24GB
model:
  name: {name}
  config: config.json
kv_cache:
  dtype: auto
"""


def _capacity(tmp_path: Path, monkeypatch, config: dict, name: str = "Qwen/Qwen2.5-7B-Instruct") -> str:
    (tmp_path / "config.json").write_text(json.dumps(config))
    (tmp_path / "deploy.yaml").write_text(MANIFEST.format(name=name))
    monkeypatch.chdir(tmp_path)
    return invoke(["capacity", "deploy.yaml"]).output


def test_awq_config_prices_the_real_checkpoint(tmp_path, monkeypatch):
    # Hub: Qwen/Qwen2.5-7B-Instruct-AWQ's safetensors total 5.58 GB
    # (https://huggingface.co/Qwen/Qwen2.5-7B-Instruct-AWQ/tree/main)
    out = _capacity(tmp_path, monkeypatch, QWEN_AWQ)
    assert "quant_method awq, 4-bit, group_size 128" in out
    import re

    per_gpu = int(re.search(r"the checkpoint's ([\d,]+) B", out).group(1).replace(",", ""))
    assert per_gpu / 1e9 == pytest.approx(5.58, rel=0.01)


def test_unknown_method_leaves_weights_unknown(tmp_path, monkeypatch):
    config = dict(QWEN_AWQ, quantization_config={"quant_method": "hqq", "nbits": 4})
    out = _capacity(tmp_path, monkeypatch, config)
    assert "quant_method hqq): the weights are unknown" in out
