"""Engine flag tables: which command-line spellings exist, what they take, and which kvlint
manifest field each one fills.

Data only, behind a few lookup functions (`lookup`, `prefix_matches`, `release_problem`,
`json_fields`), so a table derived by running each engine release's own parser can replace the
dictionaries below without touching the parsers.

Two layers per engine:

* `_MAPPED` — the flags that carry a manifest field, keyed by spelling, each with `dest` (the
  argparse/click destination), `field` (manifest JSON pointer; None means `engine.options.<dest>`),
  `type` (value conversion), `source` (the registration in the engine's code at a tag) and
  `verified`. `takes`, `added` and `removed` come from the `_KNOWN` entry of the same spelling
  unless the mapped entry gives them.
* `_KNOWN` — every option spelling the engine's parser registers: `(takes, dest, added, removed)`.
  `takes` is `bool` (argparse.BooleanOptionalAction: `--x` / `--no-x`, no value), `flag`
  (store_true / click is_flag), `value` (one value), `list` (nargs="+"), `json` (one JSON string;
  in vLLM also dotted keys), `optional` (nargs="?"). `added` is the first checked release that
  registers the spelling (None: already in the first checked release), `removed` the first
  checked release that no longer does.

How `_KNOWN` was obtained (`verified` in code):

* vLLM: the `add_argument` registrations of `vllm/engine/arg_utils.py` (EngineArgs.add_cli_args),
  the frontend arguments (`vllm/entrypoints/openai/cli_args.py`; `vllm/entrypoints/launchers/
  cli_args.py` from 0.29.0) and `vllm/entrypoints/cli/serve.py`, read from the released sources
  of EVERY PyPI release 0.11.0 … 0.33.0 (`_VLLM_CHECKED`); arity from the config dataclass field
  types exactly as `vllm/engine/arg_utils.py` `_compute_kwargs` derives it (dataclass → JSON,
  bool → BooleanOptionalAction, list/tuple/set → nargs="+"). So `added`/`removed` are exact
  within that range, e.g. `--kv-cache-dtype-skip-layers` added 0.19.0, `--calculate-kv-scales`
  removed 0.28.0, `--attention-backend` added 0.13.0, `--device-memory-utilization` added 0.31.0.
* SGLang: `python/sglang/srt/server_args.py` registrations, plus the annotated fields of
  `python/sglang/srt/arg_groups/fields/*.py` turned into flags the way `arg_groups/arg_utils.py`
  `add_cli_args_from_dataclass` does (0.5.15+), in the SAMPLED releases `_SGLANG_CHECKED`. Between
  two sampled releases the boundary is unknown, so `release_problem` only reports a release that
  is certainly outside the range.
* TensorRT-LLM: the click options of `trtllm-serve serve` at one commit (no release range):
  https://github.com/NVIDIA/TensorRT-LLM/blob/00209af149e7774406881a37283dce303571eb11/tensorrt_llm/commands/serve.py
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, replace
from typing import Any, Dict, List, Optional, Tuple

from kvlint.adapters.llamacpp_flags import KNOWN as LLAMACPP_KNOWN

ENGINES = ("vllm", "sglang", "tensorrt-llm", "llama.cpp", "ollama")

_DISPLAY = {
    "vllm": "vLLM", "sglang": "SGLang", "tensorrt-llm": "TensorRT-LLM", "llama.cpp": "llama.cpp",
    "ollama": "Ollama",
}


@dataclass(frozen=True)
class ParserRules:
    """How the engine's parser reads an option name before looking it up."""

    abbrev: bool  # unique prefixes of long options accepted (argparse allow_abbrev=True)
    underscores: bool  # `--a_b` normalised to `--a-b` before the first `.`
    dotted: bool  # `--x.key value` JSON keys
    source: str
    equals: bool = True  # `--x=value` is the option with a value (argparse, click)


_RULES = {
    "vllm": ParserRules(
        abbrev=True, underscores=True, dotted=True,
        # FlexibleArgumentParser(ArgumentParser) never passes allow_abbrev, so argparse's default
        # (True) applies; parse_args does the `_`→`-` and dotted rewrites
        source="https://github.com/vllm-project/vllm/blob/v0.19.1/vllm/utils/argparse_utils.py",
    ),
    "sglang": ParserRules(
        abbrev=True, underscores=False, dotted=False,
        # prepare_server_args builds a plain argparse.ArgumentParser()
        source="https://github.com/sgl-project/sglang/blob/v0.5.9/python/sglang/srt/server_args.py#L5579",
    ),
    "tensorrt-llm": ParserRules(
        abbrev=False, underscores=False, dotted=False,
        # click: exact option names; no token_normalize_func on the serve command
        source="https://github.com/NVIDIA/TensorRT-LLM/blob/00209af149e7774406881a37283dce303571eb11/tensorrt_llm/commands/serve.py",
    ),
    "llama.cpp": ParserRules(
        abbrev=False, underscores=True, dotted=False, equals=False,
        # common_params_parse_ex: `_` -> `-` in `--` options, then an exact lookup of the whole
        # argv element (no prefixes, no `--x=value`); environment variables first, then argv
        source="https://github.com/ggml-org/llama.cpp/blob/0c1e57098bba43ac29e6e3b677cdceebdd22334f/common/arg.cpp#L808",
    ),
    "ollama": ParserRules(
        abbrev=False, underscores=False, dotted=False,
        # `ollama serve` (cobra) reads its settings from OLLAMA_* variables, not flags
        source="https://github.com/ollama/ollama/blob/v0.13.3/cmd/cmd.go",
    ),
}


@dataclass(frozen=True)
class FlagSpec:
    """One engine flag as its argument parser registers it, with the releases that have it."""

    engine: str
    spelling: str  # as registered, e.g. "--kv-cache-dtype", "-tp"
    dest: str
    takes: str  # bool | flag | value | list | json | optional
    field: Optional[str]  # manifest pointer; None: engine.options.<dest>
    type: str  # str | int | hint | hint-auto | bytes | float | dtype | layers | json | bool
    added: Optional[str]
    removed: Optional[str]
    source: str
    verified: bool
    negated: bool = False  # written as --no-<x>


_V = "https://github.com/vllm-project/vllm/blob/v0.19.1/vllm/engine/arg_utils.py"
_S = "https://github.com/sgl-project/sglang/blob/v0.5.9/python/sglang/srt/server_args.py"
_T = _RULES["tensorrt-llm"].source

_MAPPED: Dict[str, Dict[str, Dict[str, Any]]] = {
    "vllm": {
        "--model": {"dest": "model", "field": "/model/name", "type": "str", "source": f"{_V}#L692"},
        "--dtype": {"dest": "dtype", "field": "/model/dtype", "type": "dtype", "source": f"{_V}#L700"},
        "--quantization": {"dest": "quantization", "field": None, "type": "str", "source": f"{_V}#L715"},
        "-q": {"dest": "quantization", "field": None, "type": "str", "source": f"{_V}#L715"},
        "--kv-cache-dtype": {"dest": "kv_cache_dtype", "field": "/kv_cache/dtype", "type": "str", "source": f"{_V}#L992"},
        "--kv-cache-dtype-skip-layers": {
            "dest": "kv_cache_dtype_skip_layers", "field": "/kv_cache/skip_layers", "type": "layers",
            "source": f"{_V}#L1010",
        },
        "--calculate-kv-scales": {
            # deprecated 0.19.0 (vllm/config/cache.py L216), removed 0.28.0; kvlint reads it from
            # engine.options
            "dest": "calculate_kv_scales", "field": None, "type": "bool", "source": f"{_V}#L1007",
        },
        "--attention-backend": {
            "dest": "attention_backend", "field": "/engine/attention_backend", "type": "str",
            "source": f"{_V}#L806",
        },
        "--attention-config": {"dest": "attention_config", "field": None, "type": "json", "source": f"{_V}#L1317"},
        "-ac": {"dest": "attention_config", "field": None, "type": "json", "source": f"{_V}#L1317"},
        "--block-size": {"dest": "block_size", "field": "/kv_cache/block_size", "type": "int", "source": f"{_V}#L985"},
        "--gpu-memory-utilization": {
            "dest": "gpu_memory_utilization", "field": "/memory/gpu_memory_utilization", "type": "float",
            "source": f"{_V}#L987",
        },
        "--device-memory-utilization": {
            "dest": "gpu_memory_utilization", "field": "/memory/gpu_memory_utilization", "type": "float",
            "source": "https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/engine/arg_utils.py#L1390",
        },
        "--kv-cache-memory-bytes": {
            # human_readable_int (`80G`), arg_utils.py _compute_kwargs
            "dest": "kv_cache_memory_bytes", "field": "/memory/kv_cache_memory", "type": "bytes",
            "source": f"{_V}#L990",
        },
        "--max-model-len": {
            # human_readable_int_or_auto: `32k`, and `auto`/-1 (kept in engine.options)
            "dest": "max_model_len", "field": "/serving/max_model_len", "type": "hint-auto",
            "source": f"{_V}#L714",
        },
        "--max-num-batched-tokens": {
            "dest": "max_num_batched_tokens", "field": "/serving/max_num_batched_tokens", "type": "hint",
            "source": f"{_V}#L1208",
        },
        "--max-num-seqs": {"dest": "max_num_seqs", "field": "/serving/max_num_seqs", "type": "int", "source": f"{_V}#L1215"},
        "--tensor-parallel-size": {"dest": "tensor_parallel_size", "field": "/parallelism/tensor", "type": "int", "source": f"{_V}#L849"},
        "-tp": {"dest": "tensor_parallel_size", "field": "/parallelism/tensor", "type": "int", "source": f"{_V}#L849"},
        "--pipeline-parallel-size": {
            "dest": "pipeline_parallel_size", "field": "/parallelism/pipeline", "type": "int", "source": f"{_V}#L836",
        },
        "-pp": {"dest": "pipeline_parallel_size", "field": "/parallelism/pipeline", "type": "int", "source": f"{_V}#L836"},
        "--config": {
            "dest": "config", "field": None, "type": "str",
            "source": "https://github.com/vllm-project/vllm/blob/v0.19.1/vllm/entrypoints/openai/cli_args.py#L343",
        },
    },
    "sglang": {
        "--model-path": {"dest": "model_path", "field": "/model/name", "type": "str", "source": f"{_S}#L2894"},
        "--model": {"dest": "model_path", "field": "/model/name", "type": "str", "source": f"{_S}#L2894"},
        "--dtype": {"dest": "dtype", "field": "/model/dtype", "type": "dtype", "source": f"{_S}#L3050"},
        "--quantization": {"dest": "quantization", "field": None, "type": "str", "source": f"{_S}#L3064"},
        "--kv-cache-dtype": {"dest": "kv_cache_dtype", "field": "/kv_cache/dtype", "type": "str", "source": f"{_S}#L3080"},
        "--attention-backend": {
            "dest": "attention_backend", "field": "/engine/attention_backend", "type": "str", "source": f"{_S}#L3830",
        },
        "--mem-fraction-static": {
            "dest": "mem_fraction_static", "field": "/memory/mem_fraction_static", "type": "float", "source": f"{_S}#L3139",
        },
        # a KV pool cap in tokens (model_runner init_memory_pool): serving.max_total_tokens
        "--max-total-tokens": {
            "dest": "max_total_tokens", "field": "/serving/max_total_tokens", "type": "int", "source": f"{_S}#L3157",
        },
        # the hybrid sliding-window pool (HybridSWAPoolConfigurator / set_num_token_hybrid)
        "--swa-full-tokens-ratio": {
            "dest": "swa_full_tokens_ratio", "field": "/serving/swa_full_tokens_ratio", "type": "float",
            "source": f"{_S}#L3244",
        },
        "--disable-hybrid-swa-memory": {
            "dest": "disable_hybrid_swa_memory", "field": "/serving/disable_hybrid_swa_memory", "type": "bool",
            "source": f"{_S}#L3251",
        },
        "--page-size": {"dest": "page_size", "field": "/kv_cache/block_size", "type": "int", "source": f"{_S}#L3233"},
        "--context-length": {
            # 0.5.23 accepts human-readable integers (fields/model.py); earlier releases plain int
            "dest": "context_length", "field": "/serving/max_model_len", "type": "hint", "source": f"{_S}#L2961",
        },
        "--max-running-requests": {
            "dest": "max_running_requests", "field": "/serving/max_num_seqs", "type": "int", "source": f"{_S}#L3145",
        },
        # chunked prefill is not vLLM's max_num_batched_tokens (different semantics): its own field;
        # -1 (or 0) turns chunking off, so the field takes -1 and up
        "--chunked-prefill-size": {
            "dest": "chunked_prefill_size", "field": "/serving/chunked_prefill_size", "type": "int-or-off",
            "source": f"{_S}#L3164",
        },
        "--tensor-parallel-size": {"dest": "tp_size", "field": "/parallelism/tensor", "type": "int", "source": f"{_S}#L3302"},
        "--tp-size": {"dest": "tp_size", "field": "/parallelism/tensor", "type": "int", "source": f"{_S}#L3303"},
        "--pipeline-parallel-size": {"dest": "pp_size", "field": "/parallelism/pipeline", "type": "int", "source": f"{_S}#L3323"},
        "--pp-size": {"dest": "pp_size", "field": "/parallelism/pipeline", "type": "int", "source": f"{_S}#L3323"},
        "--config": {"dest": "config", "field": None, "type": "str", "source": f"{_S}#L4996"},
    },
    "tensorrt-llm": {
        "--tensor_parallel_size": {"dest": "tensor_parallel_size", "field": "/parallelism/tensor", "type": "int", "source": _T},
        "--tp_size": {"dest": "tensor_parallel_size", "field": "/parallelism/tensor", "type": "int", "source": _T},
        "--pipeline_parallel_size": {"dest": "pipeline_parallel_size", "field": "/parallelism/pipeline", "type": "int", "source": _T},
        "--pp_size": {"dest": "pipeline_parallel_size", "field": "/parallelism/pipeline", "type": "int", "source": _T},
        "--free_gpu_memory_fraction": {
            "dest": "free_gpu_memory_fraction", "field": "/memory/free_gpu_memory_fraction", "type": "float", "source": _T,
        },
        "--kv_cache_free_gpu_memory_fraction": {
            "dest": "free_gpu_memory_fraction", "field": "/memory/free_gpu_memory_fraction", "type": "float", "source": _T,
        },
        "--max_batch_size": {"dest": "max_batch_size", "field": "/serving/max_num_seqs", "type": "int", "source": _T},
        "--max_num_tokens": {"dest": "max_num_tokens", "field": "/serving/max_num_batched_tokens", "type": "int", "source": _T},
        "--max_seq_len": {"dest": "max_seq_len", "field": "/serving/max_model_len", "type": "int", "source": _T},
        "--config": {"dest": "extra_llm_api_options", "field": None, "type": "str", "source": _T},
        "--extra_llm_api_options": {"dest": "extra_llm_api_options", "field": None, "type": "str", "source": _T},
        "--backend": {"dest": "backend", "field": None, "type": "str", "source": _T},
        "--kv_cache_dtype": {
            # newer code maps a CLI kv_cache_dtype onto kv_cache_config.dtype
            # (https://github.com/NVIDIA/TensorRT-LLM/blob/0004396720054fd8e205cbf616f21f0b57c6b412/tensorrt_llm/llmapi/llm_args.py);
            # the release that added it to trtllm-serve was not confirmed in code
            "dest": "kv_cache_dtype", "field": "/kv_cache/dtype", "type": "str", "takes": "value",
            "added": None, "removed": None, "source": _T, "verified": False,
        },
    },
}

_L = "https://github.com/ggml-org/llama.cpp/blob/0c1e57098bba43ac29e6e3b677cdceebdd22334f/common/arg.cpp"
_LLAMA_FIELDS: Dict[str, Tuple[str, str, str]] = {
    # dest (llamacpp_flags.KNOWN) -> (manifest pointer, value type, registration in arg.cpp)
    "model": ("/model/name", "str", f"{_L}#L3035"),
    "hf_repo": ("/model/name", "str", f"{_L}#L3060"),
    "ctx_size": ("/serving/context_size", "stoi0", f"{_L}#L1639"),
    "parallel": ("/serving/max_num_seqs", "stoi", f"{_L}#L2544"),
    "cache_type_k": ("/kv_cache/key_dtype", "str", f"{_L}#L2437"),
    "cache_type_v": ("/kv_cache/value_dtype", "str", f"{_L}#L2450"),
    "flash_attn": ("/engine/flash_attention", "fa", f"{_L}#L1754"),
    "kv_unified": ("/serving/kv_unified", "bool", f"{_L}#L1724"),
    "swa_full": ("/serving/swa_full", "bool", f"{_L}#L1690"),
    "ubatch_size": ("/serving/ubatch_size", "stoi", f"{_L}#L1676"),
}
for _spelling, (_takes, _dest, _env, _builds) in LLAMACPP_KNOWN.items():
    if _dest in _LLAMA_FIELDS:
        _ptr, _type, _src = _LLAMA_FIELDS[_dest]
        _MAPPED.setdefault("llama.cpp", {})[_spelling] = {
            "dest": _dest, "field": _ptr, "type": _type, "source": _src,
        }

# JSON options whose keys carry a manifest field: dest -> [(path in the JSON, pointer)]
_JSON_FIELDS: Dict[str, Dict[str, List[Tuple[Tuple[str, ...], str]]]] = {
    # AttentionConfig.backend, https://github.com/vllm-project/vllm/blob/v0.19.1/vllm/config/attention.py
    "vllm": {"attention_config": [(("backend",), "/engine/attention_backend")]},
}

# The releases whose sources `_KNOWN` was read from (module docstring).
_VLLM_CHECKED = (
    "0.11.0", "0.11.1", "0.11.2", "0.12.0", "0.13.0", "0.14.0", "0.14.1", "0.15.0", "0.15.1",
    "0.16.0", "0.17.0", "0.17.1", "0.18.0", "0.18.1", "0.19.0", "0.19.1", "0.20.0", "0.20.1",
    "0.20.2", "0.21.0", "0.22.0", "0.22.1", "0.23.0", "0.24.0", "0.25.0", "0.25.1", "0.26.0",
    "0.27.0", "0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0",
)
_SGLANG_CHECKED = (
    "0.4.10.post2", "0.5.0rc0", "0.5.1", "0.5.2", "0.5.3", "0.5.4", "0.5.5", "0.5.6", "0.5.7",
    "0.5.8", "0.5.9", "0.5.10", "0.5.12", "0.5.15", "0.5.18", "0.5.20", "0.5.23",
)
_CHECKED = {"vllm": _VLLM_CHECKED, "sglang": _SGLANG_CHECKED, "tensorrt-llm": (), "llama.cpp": (), "ollama": ()}
_KNOWN_SOURCE = {
    "vllm": "vLLM PyPI sources 0.11.0–0.33.0: vllm/engine/arg_utils.py, vllm/entrypoints/*/cli_args.py, "
    "vllm/entrypoints/cli/serve.py",
    "sglang": "SGLang PyPI sources (sampled releases): python/sglang/srt/server_args.py, "
    "python/sglang/srt/arg_groups/fields/*.py",
    "tensorrt-llm": _T,
    "llama.cpp": "llama.cpp common/arg.cpp (kvlint/adapters/llamacpp_flags.py)",
    "ollama": "https://github.com/ollama/ollama/blob/v0.13.3/cmd/cmd.go",
}


# fmt: off
# Generated from the engine sources (module docstring): spelling -> (takes, dest, added, removed)
_VLLM_KNOWN = {
    "--additional-config": ("json", "additional_config", None, None),
    "--aggregate-engine-logging": ("flag", "aggregate_engine_logging", "0.11.1", None),
    "--all2all-backend": ("value", "all2all_backend", "0.11.1", None),
    "--allow-credentials": ("bool", "allow_credentials", None, None),
    "--allow-deprecated-quantization": ("bool", "allow_deprecated_quantization", "0.14.0", None),
    "--allowed-headers": ("list", "allowed_headers", None, None),
    "--allowed-local-media-path": ("value", "allowed_local_media_path", None, None),
    "--allowed-media-domains": ("list", "allowed_media_domains", None, None),
    "--allowed-methods": ("list", "allowed_methods", None, None),
    "--allowed-origins": ("list", "allowed_origins", None, None),
    "--anthropic-disabled-thinking-effort": ("value", "anthropic_disabled_thinking_effort", "0.31.0", None),
    "--api-key": ("list", "api_key", None, None),
    "--api-server-count": ("value", "api_server_count", None, None),
    "--async-scheduling": ("bool", "async_scheduling", None, None),
    "--attention-backend": ("value", "attention_backend", "0.13.0", None),
    "--attention-config": ("json", "attention_config", "0.13.0", None),
    "--aux-output-config": ("json", "aux_output_config", "0.31.0", None),
    "--block-size": ("value", "block_size", None, None),
    "--calculate-kv-scales": ("bool", "calculate_kv_scales", None, "0.28.0"),
    "--chat-template": ("value", "chat_template", None, None),
    "--chat-template-content-format": ("value", "chat_template_content_format", None, None),
    "--code-revision": ("value", "code_revision", None, None),
    "--cohere-format": ("value", "cohere_format", "0.27.0", None),
    "--cohere-is-reasoning-model": ("bool", "cohere_is_reasoning_model", "0.27.0", None),
    "--collect-detailed-traces": ("list", "collect_detailed_traces", None, None),
    "--compilation-config": ("json", "compilation_config", None, None),
    "--config": ("value", "config", None, None),
    "--config-format": ("value", "config_format", None, None),
    "--convert": ("value", "convert", None, None),
    "--cp-kv-cache-interleave-size": ("value", "cp_kv_cache_interleave_size", "0.12.0", None),
    "--cpu-distributed-timeout-seconds": ("value", "cpu_distributed_timeout_seconds", "0.22.0", None),
    "--cpu-offload-gb": ("value", "cpu_offload_gb", None, None),
    "--cpu-offload-params": ("list", "cpu_offload_params", "0.17.0", None),
    "--cuda-graph-sizes": ("list", "cuda_graph_sizes", None, "0.13.0"),
    "--cudagraph-capture-sizes": ("list", "cudagraph_capture_sizes", "0.11.1", None),
    "--cudagraph-metrics": ("bool", "cudagraph_metrics", "0.13.0", None),
    "--custom-histogram-buckets": ("json", "custom_histogram_buckets", "0.32.0", None),
    "--data-parallel-address": ("value", "data_parallel_address", None, None),
    "--data-parallel-backend": ("value", "data_parallel_backend", None, None),
    "--data-parallel-external-lb": ("bool", "data_parallel_external_lb", "0.11.1", None),
    "--data-parallel-hybrid-lb": ("bool", "data_parallel_hybrid_lb", None, None),
    "--data-parallel-multi-port-external-lb": ("flag", "data_parallel_multi_port_external_lb", "0.22.0", None),
    "--data-parallel-rank": ("value", "data_parallel_rank", None, None),
    "--data-parallel-rpc-port": ("value", "data_parallel_rpc_port", None, None),
    "--data-parallel-size": ("value", "data_parallel_size", None, None),
    "--data-parallel-size-local": ("value", "data_parallel_size_local", None, None),
    "--data-parallel-start-rank": ("value", "data_parallel_start_rank", None, None),
    "--data-parallel-supervisor-port": ("value", "data_parallel_supervisor_port", "0.22.0", None),
    "--dbo-decode-token-threshold": ("value", "dbo_decode_token_threshold", None, None),
    "--dbo-prefill-token-threshold": ("value", "dbo_prefill_token_threshold", None, None),
    "--dcp-comm-backend": ("value", "dcp_comm_backend", "0.18.0", None),
    "--dcp-kv-cache-interleave-size": ("value", "dcp_kv_cache_interleave_size", "0.11.1", None),
    "--dcp-q-replicate": ("bool", "dcp_q_replicate", "0.29.0", None),
    "--decode-context-parallel-size": ("value", "decode_context_parallel_size", None, None),
    "--default-chat-template-kwargs": ("json", "default_chat_template_kwargs", "0.14.0", None),
    "--default-mm-loras": ("json", "default_mm_loras", None, None),
    "--device-ids": ("value", "device_ids", "0.24.0", None),
    "--device-memory-utilization": ("value", "gpu_memory_utilization", "0.31.0", None),
    "--diffusion-config": ("json", "diffusion_config", "0.24.0", None),
    "--disable-access-log-for-endpoints": ("value", "disable_access_log_for_endpoints", "0.16.0", None),
    "--disable-cascade-attn": ("bool", "disable_cascade_attn", None, None),
    "--disable-chunked-mm-input": ("bool", "disable_chunked_mm_input", None, None),
    "--disable-custom-all-reduce": ("bool", "disable_custom_all_reduce", None, None),
    "--disable-fastapi-docs": ("bool", "disable_fastapi_docs", None, None),
    "--disable-frontend-multiprocessing": ("bool", "disable_frontend_multiprocessing", None, "0.19.0"),
    "--disable-hybrid-kv-cache-manager": ("bool", "disable_hybrid_kv_cache_manager", None, None),
    "--disable-log-requests": ("bool", "disable_log_requests", None, "0.17.0"),
    "--disable-log-stats": ("flag", "disable_log_stats", None, None),
    "--disable-mm-preprocessor-cache": ("flag", "disable_mm_preprocessor_cache", None, "0.13.0"),
    "--disable-nccl-for-dp-synchronization": ("bool", "disable_nccl_for_dp_synchronization", "0.11.1", None),
    "--disable-sliding-window": ("bool", "disable_sliding_window", None, None),
    "--disable-uvicorn-access-log": ("bool", "disable_uvicorn_access_log", None, None),
    "--distributed-executor-backend": ("value", "distributed_executor_backend", None, None),
    "--distributed-timeout-seconds": ("value", "distributed_timeout_seconds", "0.18.0", None),
    "--download-dir": ("value", "download_dir", None, None),
    "--dp-supervisor-probe-failure-threshold": ("value", "dp_supervisor_probe_failure_threshold", "0.22.0", None),
    "--dp-supervisor-probe-interval-s": ("value", "dp_supervisor_probe_interval_s", "0.22.0", None),
    "--dp-supervisor-probe-timeout-s": ("value", "dp_supervisor_probe_timeout_s", "0.22.0", None),
    "--dp-sync-interval": ("value", "dp_sync_interval", "0.30.0", None),
    "--dtype": ("value", "dtype", None, None),
    "--ec-manager-config": ("json", "ec_manager_config", "0.28.0", None),
    "--ec-transfer-config": ("json", "ec_transfer_config", "0.11.1", None),
    "--elastic-ep-max-dp-size": ("value", "elastic_ep_max_dp_size", "0.30.0", None),
    "--enable-auto-tool-choice": ("bool", "enable_auto_tool_choice", None, None),
    "--enable-batch-sharded-sampling": ("bool", "enable_batch_sharded_sampling", "0.29.0", None),
    "--enable-bf16x3-router-gemm": ("bool", "enable_bf16x3_router_gemm", "0.26.0", "0.30.0"),
    "--enable-chunked-prefill": ("bool", "enable_chunked_prefill", None, None),
    "--enable-cumem-allocator": ("bool", "enable_cumem_allocator", "0.22.0", None),
    "--enable-dbo": ("bool", "enable_dbo", None, None),
    "--enable-elastic-ep": ("bool", "enable_elastic_ep", "0.17.0", None),
    "--enable-ep-weight-filter": ("bool", "enable_ep_weight_filter", "0.18.0", None),
    "--enable-eplb": ("bool", "enable_eplb", None, None),
    "--enable-expert-parallel": ("bool", "enable_expert_parallel", None, None),
    "--enable-fault-tolerance": ("bool", "enable_fault_tolerance", "0.27.0", None),
    "--enable-flash-late-interaction": ("bool", "enable_flash_late_interaction", "0.20.0", None),
    "--enable-flashinfer-autotune": ("bool", "enable_flashinfer_autotune", "0.16.0", None),
    "--enable-force-include-usage": ("bool", "enable_force_include_usage", None, None),
    "--enable-hc-sp": ("bool", "enable_hc_sp", "0.32.0", None),
    "--enable-layerwise-nvtx-tracing": ("bool", "enable_layerwise_nvtx_tracing", "0.13.0", None),
    "--enable-log-deltas": ("bool", "enable_log_deltas", "0.14.0", None),
    "--enable-log-outputs": ("bool", "enable_log_outputs", None, None),
    "--enable-log-requests": ("bool", "enable_log_requests", None, None),
    "--enable-logging-iteration-details": ("bool", "enable_logging_iteration_details", "0.14.0", None),
    "--enable-lora": ("bool", "enable_lora", None, None),
    "--enable-lora-bias": ("bool", "enable_lora_bias", None, "0.11.1"),
    "--enable-mamba-cache-stochastic-rounding": ("bool", "enable_mamba_cache_stochastic_rounding", "0.20.0", None),
    "--enable-mamba-fine-grained-prefix-cache": ("bool", "enable_mamba_fine_grained_prefix_cache", "0.30.0", "0.31.0"),
    "--enable-mamba-shared-prefix-checkpoint": ("bool", "enable_mamba_shared_prefix_checkpoint", "0.31.0", None),
    "--enable-mfu-metrics": ("bool", "enable_mfu_metrics", "0.14.0", None),
    "--enable-mixed-moe-lora-format": ("bool", "enable_mixed_moe_lora_format", "0.22.0", None),
    "--enable-mm-embeds": ("bool", "enable_mm_embeds", "0.11.1", None),
    "--enable-moe-shared-loras": ("bool", "enable_moe_shared_loras", "0.26.0", None),
    "--enable-multimodal-encoder-data-parallel": ("flag", "enable_multimodal_encoder_data_parallel", None, "0.13.0"),
    "--enable-nccl-comm-suspend": ("bool", "enable_nccl_comm_suspend", "0.30.0", None),
    "--enable-offline-docs": ("bool", "enable_offline_docs", "0.14.0", None),
    "--enable-per-request-metrics": ("bool", "enable_per_request_metrics", "0.25.0", None),
    "--enable-prefix-caching": ("bool", "enable_prefix_caching", None, None),
    "--enable-prompt-embeds": ("bool", "enable_prompt_embeds", None, None),
    "--enable-prompt-tokens-details": ("bool", "enable_prompt_tokens_details", None, None),
    "--enable-request-id-headers": ("bool", "enable_request_id_headers", None, None),
    "--enable-return-routed-experts": ("bool", "enable_return_routed_experts", "0.14.0", None),
    "--enable-scale-out": ("bool", "enable_scale_out", "0.30.0", None),
    "--enable-server-load-tracking": ("bool", "enable_server_load_tracking", None, None),
    "--enable-shm-tensor-arena": ("bool", "enable_shm_tensor_arena", "0.32.0", None),
    "--enable-sleep-mode": ("bool", "enable_sleep_mode", None, None),
    "--enable-ssl-refresh": ("bool", "enable_ssl_refresh", None, None),
    "--enable-tokenizer-info-endpoint": ("bool", "enable_tokenizer_info_endpoint", None, None),
    "--enable-tower-connector-lora": ("bool", "enable_tower_connector_lora", "0.14.0", None),
    "--enable-trace-replay": ("bool", "enable_trace_replay", "0.29.0", None),
    "--enforce-eager": ("bool", "enforce_eager", None, None),
    "--engram-config": ("json", "engram_config", "0.30.0", None),
    "--eplb-config": ("json", "eplb_config", None, None),
    "--eplb-log-balancedness": ("bool", "eplb_log_balancedness", None, "0.12.0"),
    "--eplb-step-interval": ("value", "eplb_step_interval", None, "0.12.0"),
    "--eplb-window-size": ("value", "eplb_window_size", None, "0.12.0"),
    "--exclude-tools-when-tool-choice-none": ("bool", "exclude_tools_when_tool_choice_none", None, None),
    "--expert-placement-strategy": ("value", "expert_placement_strategy", None, None),
    "--fail-on-environ-validation": ("bool", "fail_on_environ_validation", "0.17.0", None),
    "--fault-tolerance-config": ("json", "fault_tolerance_config", "0.27.0", None),
    "--fingerprint-mode": ("value", "fingerprint_mode", "0.21.0", None),
    "--fingerprint-value": ("value", "fingerprint_value", "0.21.0", None),
    "--fully-sharded-loras": ("bool", "fully_sharded_loras", None, None),
    "--gdn-prefill-backend": ("value", "gdn_prefill_backend", "0.18.0", None),
    "--generation-config": ("value", "generation_config", None, None),
    "--gpu-memory-utilization": ("value", "gpu_memory_utilization", None, None),
    "--grpc": ("flag", "grpc", "0.18.0", None),
    "--grpc-port": ("value", "grpc_port", "0.32.0", None),
    "--h11-max-header-count": ("value", "h11_max_header_count", None, None),
    "--h11-max-incomplete-event-size": ("value", "h11_max_incomplete_event_size", None, None),
    "--headless": ("flag", "headless", None, None),
    "--hf-config-path": ("value", "hf_config_path", None, None),
    "--hf-overrides": ("value", "hf_overrides", None, None),
    "--hf-token": ("bool", "hf_token", None, None),
    "--host": ("value", "host", None, None),
    "--ignore-patterns": ("list", "ignore_patterns", None, None),
    "--interleave-mm-strings": ("bool", "interleave_mm_strings", None, None),
    "--io-processor-plugin": ("value", "io_processor_plugin", None, None),
    "--ir-op-priority": ("json", "ir_op_priority", "0.20.0", None),
    "--jit-monitor-mode": ("value", "jit_monitor_mode", "0.25.0", None),
    "--jit-monitor-verbose": ("bool", "jit_monitor_verbose", "0.24.0", None),
    "--kda-decode-backend": ("value", "kda_decode_backend", "0.30.0", None),
    "--kda-prefill-backend": ("value", "kda_prefill_backend", "0.27.0", None),
    "--kernel-config": ("json", "kernel_config", "0.16.0", None),
    "--kv-cache-dtype": ("value", "kv_cache_dtype", None, None),
    "--kv-cache-dtype-skip-layers": ("list", "kv_cache_dtype_skip_layers", "0.19.0", None),
    "--kv-cache-memory-bytes": ("value", "kv_cache_memory_bytes", None, None),
    "--kv-cache-metrics": ("bool", "kv_cache_metrics", "0.12.0", None),
    "--kv-cache-metrics-sample": ("value", "kv_cache_metrics_sample", "0.12.0", None),
    "--kv-events-config": ("json", "kv_events_config", None, None),
    "--kv-offloading-backend": ("value", "kv_offloading_backend", "0.11.1", None),
    "--kv-offloading-size": ("value", "kv_offloading_size", "0.11.1", None),
    "--kv-sharing-fast-prefill": ("bool", "kv_sharing_fast_prefill", None, None),
    "--kv-transfer-config": ("json", "kv_transfer_config", None, None),
    "--language-model-only": ("bool", "language_model_only", "0.17.0", None),
    "--limit-mm-per-prompt": ("value", "limit_mm_per_prompt", None, None),
    "--linear-backend": ("value", "linear_backend", "0.22.0", None),
    "--load-format": ("value", "load_format", None, None),
    "--log-config-file": ("value", "log_config_file", None, None),
    "--log-error-stack": ("bool", "log_error_stack", None, None),
    "--log-level": ("value", "log_level", "0.31.0", None),
    "--logging-config": ("value", "logging_config", "0.31.0", None),
    "--logits-processor-pattern": ("value", "logits_processor_pattern", None, "0.17.0"),
    "--logits-processors": ("list", "logits_processors", None, None),
    "--logprobs-mode": ("value", "logprobs_mode", None, None),
    "--long-prefill-token-threshold": ("value", "long_prefill_token_threshold", None, None),
    "--long-prefill-token-threshold-adaptive": ("bool", "long_prefill_token_threshold_adaptive", "0.31.0", None),
    "--lora-dtype": ("value", "lora_dtype", None, None),
    "--lora-extra-vocab-size": ("value", "lora_extra_vocab_size", None, "0.12.0"),
    "--lora-modules": ("list", "lora_modules", None, None),
    "--lora-target-modules": ("list", "lora_target_modules", "0.19.0", None),
    "--mamba-backend": ("value", "mamba_backend", "0.20.0", None),
    "--mamba-block-size": ("value", "mamba_block_size", "0.11.1", None),
    "--mamba-cache-dtype": ("value", "mamba_cache_dtype", None, None),
    "--mamba-cache-mode": ("value", "mamba_cache_mode", "0.15.0", None),
    "--mamba-cache-philox-rounds": ("value", "mamba_cache_philox_rounds", "0.20.0", None),
    "--mamba-ssm-cache-dtype": ("value", "mamba_ssm_cache_dtype", None, None),
    "--mamba-ssu-algorithm": ("value", "mamba_ssu_algorithm", "0.27.0", None),
    "--master-addr": ("value", "master_addr", "0.11.1", None),
    "--master-port": ("value", "master_port", "0.11.1", None),
    "--max-cpu-loras": ("value", "max_cpu_loras", None, None),
    "--max-cudagraph-capture-size": ("value", "max_cudagraph_capture_size", "0.11.1", None),
    "--max-log-len": ("value", "max_log_len", None, None),
    "--max-logprobs": ("value", "max_logprobs", None, None),
    "--max-long-partial-prefills": ("value", "max_long_partial_prefills", None, "0.27.0"),
    "--max-lora-cls-labels": ("value", "max_lora_cls_labels", "0.31.0", None),
    "--max-lora-rank": ("value", "max_lora_rank", None, None),
    "--max-loras": ("value", "max_loras", None, None),
    "--max-model-len": ("value", "max_model_len", None, None),
    "--max-num-active-seqs": ("value", "max_num_active_seqs", "0.31.0", None),
    "--max-num-batched-tokens": ("value", "max_num_batched_tokens", None, None),
    "--max-num-partial-prefills": ("value", "max_num_partial_prefills", None, "0.27.0"),
    "--max-num-queued-reqs": ("value", "max_num_queued_reqs", "0.29.0", None),
    "--max-num-queued-tokens": ("value", "max_num_queued_tokens", "0.29.0", None),
    "--max-num-scheduled-tokens": ("value", "max_num_scheduled_tokens", "0.26.0", None),
    "--max-num-seqs": ("value", "max_num_seqs", None, None),
    "--max-parallel-loading-workers": ("value", "max_parallel_loading_workers", None, None),
    "--media-io-kwargs": ("json", "media_io_kwargs", None, None),
    "--middleware": ("list", "middleware", None, None),
    "--mm-device-do-normalize": ("bool", "mm_device_do_normalize", "0.28.0", None),
    "--mm-encoder-attn-backend": ("value", "mm_encoder_attn_backend", "0.11.1", None),
    "--mm-encoder-attn-dtype": ("value", "mm_encoder_attn_dtype", "0.21.0", None),
    "--mm-encoder-fp8-scale-path": ("value", "mm_encoder_fp8_scale_path", "0.21.0", None),
    "--mm-encoder-fp8-scale-save-margin": ("value", "mm_encoder_fp8_scale_save_margin", "0.21.0", None),
    "--mm-encoder-fp8-scale-save-path": ("value", "mm_encoder_fp8_scale_save_path", "0.21.0", None),
    "--mm-encoder-only": ("bool", "mm_encoder_only", "0.15.0", None),
    "--mm-encoder-tp-mode": ("value", "mm_encoder_tp_mode", None, None),
    "--mm-hasher-algorithm": ("value", "mm_hasher_algorithm", "0.27.0", None),
    "--mm-ipc-gpu-memory-gb": ("value", "mm_ipc_gpu_memory_gb", "0.25.0", None),
    "--mm-processor-cache-gb": ("value", "mm_processor_cache_gb", None, None),
    "--mm-processor-cache-type": ("value", "mm_processor_cache_type", None, None),
    "--mm-processor-device": ("value", "mm_processor_device", "0.28.0", None),
    "--mm-processor-kwargs": ("json", "mm_processor_kwargs", None, None),
    "--mm-shm-cache-max-object-size-mb": ("value", "mm_shm_cache_max_object_size_mb", None, None),
    "--mm-tensor-ipc": ("value", "mm_tensor_ipc", "0.19.0", None),
    "--model": ("value", "model", None, None),
    "--model-class-overrides": ("json", "model_class_overrides", "0.25.0", None),
    "--model-impl": ("value", "model_impl", None, None),
    "--model-loader-extra-config": ("json", "model_loader_extra_config", None, None),
    "--moe-backend": ("value", "moe_backend", "0.17.0", None),
    "--monokernel": ("bool", "monokernel", "0.33.0", None),
    "--nnodes": ("value", "nnodes", "0.11.1", None),
    "--node-rank": ("value", "node_rank", "0.11.1", None),
    "--num-gpu-blocks-override": ("value", "num_gpu_blocks_override", None, None),
    "--num-lookahead-slots": ("value", "num_lookahead_slots", None, "0.12.0"),
    "--num-redundant-experts": ("value", "num_redundant_experts", None, "0.12.0"),
    "--numa-bind": ("bool", "numa_bind", "0.20.0", None),
    "--numa-bind-cpus": ("list", "numa_bind_cpus", "0.20.0", None),
    "--numa-bind-nodes": ("list", "numa_bind_nodes", "0.20.0", None),
    "--offload-backend": ("value", "offload_backend", "0.17.0", None),
    "--offload-group-size": ("value", "offload_group_size", "0.17.0", None),
    "--offload-num-in-group": ("value", "offload_num_in_group", "0.17.0", None),
    "--offload-params": ("list", "offload_params", "0.17.0", None),
    "--offload-prefetch-step": ("value", "offload_prefetch_step", "0.17.0", None),
    "--optimization-level": ("value", "optimization_level", "0.12.0", None),
    "--otlp-traces-endpoint": ("value", "otlp_traces_endpoint", None, None),
    "--override-attention-dtype": ("value", "override_attention_dtype", None, "0.28.0"),
    "--override-generation-config": ("json", "override_generation_config", None, None),
    "--override-pooler-config": ("json", "override_pooler_config", None, "0.12.0"),
    "--per-request-spec-decode-metrics": ("value", "per_request_spec_decode_metrics", "0.29.0", None),
    "--performance-mode": ("value", "performance_mode", "0.17.0", None),
    "--pipeline-parallel-size": ("value", "pipeline_parallel_size", None, None),
    "--pooler-config": ("json", "pooler_config", None, None),
    "--port": ("value", "port", None, None),
    "--prefill-context-parallel-size": ("value", "prefill_context_parallel_size", "0.12.0", None),
    "--prefill-schedule-interval": ("value", "prefill_schedule_interval", "0.24.0", None),
    "--prefix-cache-retention-interval": ("value", "prefix_cache_retention_interval", "0.29.0", None),
    "--prefix-caching-hash-algo": ("value", "prefix_caching_hash_algo", None, None),
    "--prefix-match-unit": ("value", "prefix_match_unit", "0.26.0", None),
    "--profiler-config": ("json", "profiler_config", "0.13.0", None),
    "--pt-load-map-location": ("json", "pt_load_map_location", None, None),
    "--quantization": ("value", "quantization", None, None),
    "--quantization-config": ("json", "quantization_config", "0.22.0", None),
    "--ray-workers-use-nsight": ("bool", "ray_workers_use_nsight", None, None),
    "--reasoning-config": ("json", "reasoning_config", "0.19.0", None),
    "--reasoning-effort-map": ("json", "reasoning_effort_map", "0.33.0", None),
    "--reasoning-parser": ("value", "reasoning_parser", None, None),
    "--reasoning-parser-plugin": ("value", "reasoning_parser_plugin", "0.11.1", None),
    "--renderer-num-workers": ("value", "renderer_num_workers", "0.19.0", None),
    "--replayssm-buffer-len": ("value", "replayssm_buffer_len", "0.27.0", None),
    "--response-role": ("value", "response_role", None, None),
    "--return-sampling-mask": ("bool", "return_sampling_mask", "0.28.0", None),
    "--return-tokens-as-token-ids": ("bool", "return_tokens_as_token_ids", None, None),
    "--revision": ("value", "revision", None, None),
    "--root-path": ("value", "root_path", None, None),
    "--rope-scaling": ("json", "rope_scaling", None, "0.11.1"),
    "--rope-theta": ("value", "rope_theta", None, "0.11.1"),
    "--runner": ("value", "runner", None, None),
    "--safetensors-load-strategy": ("value", "safetensors_load_strategy", None, None),
    "--safetensors-prefetch-block-size": ("value", "safetensors_prefetch_block_size", "0.21.0", None),
    "--safetensors-prefetch-num-threads": ("value", "safetensors_prefetch_num_threads", "0.21.0", None),
    "--scheduler-cls": ("value", "scheduler_cls", None, None),
    "--scheduler-reserve-full-isl": ("bool", "scheduler_reserve_full_isl", "0.19.0", None),
    "--scheduling-policy": ("value", "scheduling_policy", None, None),
    "--seed": ("value", "seed", None, None),
    "--served-model-name": ("list", "served_model_name", None, None),
    "--show-hidden-metrics-for-version": ("value", "show_hidden_metrics_for_version", None, None),
    "--shutdown-timeout": ("value", "shutdown_timeout", "0.18.0", None),
    "--skip-mm-profiling": ("bool", "skip_mm_profiling", None, None),
    "--skip-tokenizer-init": ("bool", "skip_tokenizer_init", None, None),
    "--sleep-mode-backend": ("value", "sleep_mode_backend", "0.33.0", None),
    "--sleep-mode-offload-cudagraph": ("bool", "sleep_mode_offload_cudagraph", "0.32.0", None),
    "--sleep-preserve-parameter-names": ("list", "sleep_preserve_parameter_names", "0.31.0", None),
    "--sparse-indexer-topk-backend": ("value", "sparse_indexer_topk_backend", "0.30.0", None),
    "--spec-method": ("value", "spec_method", "0.22.0", None),
    "--spec-model": ("value", "spec_model", "0.22.0", None),
    "--spec-tokens": ("value", "spec_tokens", "0.22.0", None),
    "--specialize-active-lora": ("bool", "specialize_active_lora", "0.16.0", None),
    "--speculative-config": ("json", "speculative_config", None, None),
    "--sse-keep-alive-interval": ("value", "sse_keep_alive_interval", "0.29.0", None),
    "--ssl-ca-certs": ("value", "ssl_ca_certs", None, None),
    "--ssl-cert-reqs": ("value", "ssl_cert_reqs", None, None),
    "--ssl-certfile": ("value", "ssl_certfile", None, None),
    "--ssl-ciphers": ("value", "ssl_ciphers", "0.15.0", None),
    "--ssl-keyfile": ("value", "ssl_keyfile", None, None),
    "--stream-interval": ("value", "stream_interval", "0.11.1", None),
    "--structured-outputs-config": ("json", "structured_outputs_config", None, None),
    "--swa-bounded-replay": ("bool", "swa_bounded_replay", "0.31.0", None),
    "--swap-space": ("value", "swap_space", None, "0.18.0"),
    "--task": ("value", "task", None, "0.13.0"),
    "--tensor-parallel-size": ("value", "tensor_parallel_size", None, None),
    "--tokenizer": ("value", "tokenizer", None, None),
    "--tokenizer-mode": ("value", "tokenizer_mode", None, None),
    "--tokenizer-revision": ("value", "tokenizer_revision", None, None),
    "--tokens-only": ("bool", "tokens_only", "0.11.1", None),
    "--tool-call-parser": ("value", "tool_call_parser", None, None),
    "--tool-parser-plugin": ("value", "tool_parser_plugin", None, None),
    "--tool-server": ("value", "tool_server", None, None),
    "--tool-strict-level": ("value", "tool_strict_level", "0.31.0", None),
    "--trust-remote-code": ("bool", "trust_remote_code", None, None),
    "--trust-request-chat-template": ("bool", "trust_request_chat_template", None, None),
    "--trust-request-mm-kwargs": ("bool", "trust_request_mm_kwargs", "0.31.0", None),
    "--ubatch-size": ("value", "ubatch_size", "0.14.0", None),
    "--uds": ("value", "uds", None, None),
    "--use-fp64-gumbel": ("bool", "use_fp64_gumbel", "0.22.0", None),
    "--use-gpu-for-pooling-score": ("bool", "use_gpu_for_pooling_score", "0.17.0", "0.18.0"),
    "--use-replayssm": ("bool", "use_replayssm", "0.27.0", None),
    "--use-tqdm-on-load": ("bool", "use_tqdm_on_load", None, None),
    "--uvicorn-log-level": ("value", "uvicorn_log_level", None, None),
    "--video-pruning-method": ("value", "video_pruning_method", "0.27.0", None),
    "--video-pruning-rate": ("value", "video_pruning_rate", None, None),
    "--watchdog-config": ("json", "watchdog_config", "0.33.0", None),
    "--watermark": ("value", "watermark", "0.24.0", None),
    "--watermark-config": ("json", "watermark_config", "0.30.0", None),
    "--weight-transfer-config": ("json", "weight_transfer_config", "0.16.0", None),
    "--worker-cls": ("value", "worker_cls", None, None),
    "--worker-extension-cls": ("value", "worker_extension_cls", None, None),
    "-O": ("json", "compilation_config", None, "0.12.0"),
    "-ac": ("json", "attention_config", "0.13.0", None),
    "-asc": ("value", "api_server_count", None, None),
    "-cc": ("json", "compilation_config", "0.12.0", None),
    "-dc": ("json", "diffusion_config", "0.24.0", None),
    "-dcp": ("value", "decode_context_parallel_size", None, None),
    "-dp": ("value", "data_parallel_size", None, None),
    "-dpa": ("value", "data_parallel_address", None, None),
    "-dpb": ("value", "data_parallel_backend", None, None),
    "-dpe": ("bool", "data_parallel_external_lb", "0.11.1", None),
    "-dph": ("bool", "data_parallel_hybrid_lb", "0.11.1", None),
    "-dpl": ("value", "data_parallel_size_local", None, None),
    "-dpm": ("flag", "data_parallel_multi_port_external_lb", "0.22.0", None),
    "-dpn": ("value", "data_parallel_rank", None, None),
    "-dpp": ("value", "data_parallel_rpc_port", None, None),
    "-dpr": ("value", "data_parallel_start_rank", None, None),
    "-ep": ("bool", "enable_expert_parallel", "0.14.0", None),
    "-n": ("value", "nnodes", "0.11.1", None),
    "-pcp": ("value", "prefill_context_parallel_size", "0.12.0", None),
    "-pp": ("value", "pipeline_parallel_size", None, None),
    "-q": ("value", "quantization", None, None),
    "-r": ("value", "node_rank", "0.11.1", None),
    "-sc": ("json", "speculative_config", "0.19.0", None),
    "-tp": ("value", "tensor_parallel_size", None, None),
}

_SGLANG_KNOWN = {
    "--abort-on-priority-when-disabled": ("flag", "abort_on_priority_when_disabled", "0.5.4", None),
    "--admin-api-key": ("value", "admin_api_key", "0.5.8", None),
    "--allow-auto-truncate": ("flag", "allow_auto_truncate", None, None),
    "--allowed-media-domains": ("list", "allowed_media_domains", "0.5.18", None),
    "--api-key": ("value", "api_key", None, None),
    "--asr-max-buffer-seconds": ("value", "asr_max_buffer_seconds", "0.5.15", None),
    "--asr-max-concurrent-sessions": ("value", "asr_max_concurrent_sessions", "0.5.15", None),
    "--attention-backend": ("value", "attention_backend", None, None),
    "--attention-context-parallel-size": ("value", "attn_cp_size", "0.5.9", None),
    "--attention-data-parallel-size": ("value", "attn_dp_size", "0.5.23", None),
    "--attn-cp-size": ("value", "attn_cp_size", "0.5.9", None),
    "--attn-dp-size": ("value", "attn_dp_size", "0.5.23", None),
    "--base-gpu-id": ("value", "base_gpu_id", None, None),
    "--batch-notify-size": ("value", "batch_notify_size", "0.5.12", None),
    "--bf16-gemm-backend": ("value", "bf16_gemm_backend", "0.5.15", None),
    "--boundary-reduction": ("value", "boundary_reduction", "0.5.23", None),
    "--bucket-e2e-request-latency": ("list", "bucket_e2e_request_latency", None, None),
    "--bucket-inter-token-latency": ("list", "bucket_inter_token_latency", None, None),
    "--bucket-time-to-first-token": ("list", "bucket_time_to_first_token", None, None),
    "--c128-page-size": ("value", "c128_page_size", "0.5.18", None),
    "--chat-template": ("value", "chat_template", None, None),
    "--checkpoint-engine-wait-weights-before-ready": ("flag", "checkpoint_engine_wait_weights_before_ready", "0.5.4", None),
    "--chunked-prefill-size": ("value", "chunked_prefill_size", None, None),
    "--collect-tokens-histogram": ("flag", "collect_tokens_histogram", None, "0.5.20"),
    "--completion-template": ("value", "completion_template", None, None),
    "--config": ("value", "config", "0.5.3", None),
    "--constrained-json-disable-any-whitespace": ("flag", "constrained_json_disable_any_whitespace", "0.5.4", None),
    "--constrained-json-max-whitespace-cnt": ("value", "constrained_json_max_whitespace_cnt", "0.5.23", None),
    "--constrained-json-whitespace-pattern": ("value", "constrained_json_whitespace_pattern", None, None),
    "--context-bucket": ("value", "cuda_graph_prefill_max_context", "0.5.23", None),
    "--context-length": ("value", "context_length", None, None),
    "--cp-strategy": ("value", "cp_strategy", "0.5.15", None),
    "--cpu-offload-gb": ("value", "cpu_offload_gb", None, None),
    "--crash-dump-folder": ("value", "crash_dump_folder", None, None),
    "--cuda-graph-backend-decode": ("value", "cuda_graph_backend_decode", "0.5.15", None),
    "--cuda-graph-backend-prefill": ("value", "cuda_graph_backend_prefill", "0.5.15", None),
    "--cuda-graph-bs": ("flag", "cuda_graph_bs", None, "0.5.20"),
    "--cuda-graph-bs-decode": ("list", "cuda_graph_bs_decode", "0.5.15", None),
    "--cuda-graph-bs-prefill": ("list", "cuda_graph_bs_prefill", "0.5.15", None),
    "--cuda-graph-config": ("value", "cuda_graph_config", "0.5.15", None),
    "--cuda-graph-max-bs": ("flag", "cuda_graph_max_bs", None, "0.5.20"),
    "--cuda-graph-max-bs-decode": ("value", "cuda_graph_max_bs_decode", "0.5.15", None),
    "--cuda-graph-max-bs-prefill": ("value", "cuda_graph_max_bs_prefill", "0.5.15", None),
    "--cuda-graph-max-seq-len-prefill": ("value", "cuda_graph_max_seq_len_prefill", "0.5.23", None),
    "--cuda-graph-prefill-max-context": ("value", "cuda_graph_prefill_max_context", "0.5.23", None),
    "--cuda-graph-tc-compiler": ("value", "cuda_graph_tc_compiler", "0.5.15", "0.5.23"),
    "--custom-sigquit-handler": ("value", "custom_sigquit_handler", "0.5.7", "0.5.15"),
    "--custom-weight-loader": ("list", "custom_weight_loader", None, None),
    "--data-parallel-size": ("value", "dp_size", None, None),
    "--dcp-comm-backend": ("value", "dcp_comm_backend", "0.5.18", None),
    "--dcp-replicate-q-proj": ("bool", "dcp_replicate_q_proj", "0.5.18", None),
    "--dcp-size": ("value", "dcp_size", "0.5.15", None),
    "--debug-cuda-graph": ("flag", "debug_cuda_graph", "0.5.12", None),
    "--debug-tensor-dump-inject": ("value", "debug_tensor_dump_inject", None, "0.5.15"),
    "--debug-tensor-dump-input-file": ("value", "debug_tensor_dump_input_file", None, None),
    "--debug-tensor-dump-layers": ("list", "debug_tensor_dump_layers", "0.5.5", None),
    "--debug-tensor-dump-output-folder": ("value", "debug_tensor_dump_output_folder", None, None),
    "--debug-tensor-dump-prefill-only": ("flag", "debug_tensor_dump_prefill_only", None, "0.5.4"),
    "--decode-attention-backend": ("value", "decode_attention_backend", None, None),
    "--decode-context-parallel-size": ("value", "dcp_size", "0.5.15", None),
    "--decode-log-interval": ("value", "decode_log_interval", None, None),
    "--decoupled-spec-bind-endpoint": ("value", "decoupled_spec_bind_endpoint", "0.5.15", None),
    "--decoupled-spec-connect-endpoints": ("value", "decoupled_spec_connect_endpoints", "0.5.15", None),
    "--decoupled-spec-rank": ("value", "decoupled_spec_rank", "0.5.15", None),
    "--decoupled-spec-role": ("value", "decoupled_spec_role", "0.5.15", None),
    "--decrypted-config-file": ("value", "decrypted_config_file", "0.5.5", None),
    "--decrypted-draft-config-file": ("value", "decrypted_draft_config_file", "0.5.5", None),
    "--deepep-config": ("value", "deepep_config", None, None),
    "--deepep-dispatcher-output-dtype": ("value", "deepep_dispatcher_output_dtype", "0.5.15", None),
    "--deepep-mode": ("value", "deepep_mode", None, None),
    "--deepep-v2-mode": ("value", "deepep_v2_mode", "0.5.20", None),
    "--default-chat-template-kwargs": ("value", "default_chat_template_kwargs", "0.5.18", None),
    "--default-priority-value": ("value", "default_priority_value", "0.5.10", None),
    "--delete-ckpt-after-loading": ("flag", "delete_ckpt_after_loading", None, None),
    "--detokenizer-worker-num": ("value", "detokenizer_worker_num", "0.5.12", None),
    "--device": ("value", "device", None, None),
    "--disable-aiter-allreduce-fusion-in-decode": ("flag", "disable_aiter_allreduce_fusion_in_decode", "0.5.23", None),
    "--disable-aiter-allreduce-fusion-in-prefill": ("flag", "disable_aiter_allreduce_fusion_in_prefill", "0.5.23", None),
    "--disable-attn-tp-gather": ("flag", "disable_attn_tp_gather", "0.5.15", None),
    "--disable-chunked-prefix-cache": ("flag", "disable_chunked_prefix_cache", None, None),
    "--disable-cuda-graph": ("flag", "disable_cuda_graph", None, None),
    "--disable-cuda-graph-padding": ("flag", "disable_cuda_graph_padding", None, None),
    "--disable-custom-all-reduce": ("flag", "disable_custom_all_reduce", None, None),
    "--disable-decode-cuda-graph": ("flag", "disable_decode_cuda_graph", "0.5.15", None),
    "--disable-fast-image-processor": ("flag", "disable_fast_image_processor", None, None),
    "--disable-flashinfer-autotune": ("flag", "disable_flashinfer_autotune", "0.5.7", None),
    "--disable-flashinfer-cutlass-moe-fp4-allgather": ("flag", "disable_flashinfer_cutlass_moe_fp4_allgather", "0.5.1", None),
    "--disable-hicache-numa-detect": ("flag", "disable_hicache_numa_detect", "0.5.8", "0.5.10"),
    "--disable-hybrid-swa-memory": ("flag", "disable_hybrid_swa_memory", None, None),
    "--disable-outlines-disk-cache": ("flag", "disable_outlines_disk_cache", None, None),
    "--disable-overlap-schedule": ("flag", "disable_overlap_schedule", None, None),
    "--disable-piecewise-cuda-graph": ("flag", "disable_piecewise_cuda_graph", "0.5.10", "0.5.20"),
    "--disable-prefill-cuda-graph": ("flag", "disable_prefill_cuda_graph", "0.5.15", None),
    "--disable-priority-preemption": ("flag", "disable_priority_preemption", "0.5.10", None),
    "--disable-radix-cache": ("flag", "disable_radix_cache", None, None),
    "--disable-shared-experts-fusion": ("flag", "disable_shared_experts_fusion", None, None),
    "--disable-tokenizer-batch-decode": ("flag", "disable_tokenizer_batch_decode", "0.5.4", None),
    "--disaggregation-bootstrap-port": ("value", "disaggregation_bootstrap_port", None, None),
    "--disaggregation-decode-allocation-policy": ("value", "disaggregation_decode_allocation_policy", "0.5.23", None),
    "--disaggregation-decode-dp": ("value", "disaggregation_decode_dp", None, "0.5.10"),
    "--disaggregation-decode-enable-fake-auto": ("flag", "disaggregation_decode_enable_fake_auto", "0.5.7", "0.5.9"),
    "--disaggregation-decode-enable-offload-kvcache": ("flag", "disaggregation_decode_enable_offload_kvcache", "0.5.3", None),
    "--disaggregation-decode-enable-radix-cache": ("flag", "disaggregation_decode_enable_radix_cache", "0.5.12", None),
    "--disaggregation-decode-extra-slots": ("value", "disaggregation_decode_extra_slots", "0.5.15", None),
    "--disaggregation-decode-host-receive-threshold": ("value", "disaggregation_decode_host_receive_threshold", "0.5.23", None),
    "--disaggregation-decode-polling-interval": ("value", "disaggregation_decode_polling_interval", "0.5.3", None),
    "--disaggregation-decode-retraction-backup": ("value", "disaggregation_decode_retraction_backup", "0.5.18", None),
    "--disaggregation-decode-tp": ("value", "disaggregation_decode_tp", None, "0.5.10"),
    "--disaggregation-enable-kv-checksum": ("flag", "disaggregation_enable_kv_checksum", "0.5.23", None),
    "--disaggregation-ib-device": ("value", "disaggregation_ib_device", None, None),
    "--disaggregation-mode": ("value", "disaggregation_mode", None, None),
    "--disaggregation-prefill-pp": ("value", "disaggregation_prefill_pp", None, "0.5.10"),
    "--disaggregation-transfer-backend": ("value", "disaggregation_transfer_backend", None, None),
    "--dist-init-addr": ("value", "dist_init_addr", None, None),
    "--dist-timeout": ("value", "dist_timeout", None, None),
    "--dllm-algorithm": ("value", "dllm_algorithm", "0.5.6", None),
    "--dllm-algorithm-config": ("value", "dllm_algorithm_config", "0.5.7", None),
    "--dllm-block-size": ("value", "dllm_block_size", "0.5.6", "0.5.7"),
    "--dllm-fdfo": ("bool", "dllm_fdfo", "0.5.18", None),
    "--download-dir": ("value", "download_dir", None, None),
    "--dp-size": ("value", "dp_size", None, None),
    "--ds-channel-config-path": ("value", "ds_channel_config_path", None, "0.5.12"),
    "--ds-heavy-channel-num": ("value", "ds_heavy_channel_num", None, "0.5.12"),
    "--ds-heavy-channel-type": ("value", "ds_heavy_channel_type", None, "0.5.12"),
    "--ds-heavy-token-num": ("value", "ds_heavy_token_num", None, "0.5.12"),
    "--ds-sparse-decode-threshold": ("value", "ds_sparse_decode_threshold", None, "0.5.12"),
    "--dsa-decode-backend": ("value", "dsa_decode_backend", "0.5.15", None),
    "--dsa-paged-mqa-logits-backend": ("value", "dsa_paged_mqa_logits_backend", "0.5.15", None),
    "--dsa-prefill-backend": ("value", "dsa_prefill_backend", "0.5.15", None),
    "--dsa-prefill-cp-mode": ("flag", "dsa_prefill_cp_mode", "0.5.15", "0.5.20"),
    "--dsa-topk-backend": ("value", "dsa_topk_backend", "0.5.15", None),
    "--dsa-triton-union": ("value", "dsa_triton_union", "0.5.23", None),
    "--dsv4-attn-backend": ("value", "dsv4_attn_backend", "0.5.20", None),
    "--dsv4-prefill-backend": ("value", "dsv4_prefill_backend", "0.5.20", None),
    "--dtype": ("value", "dtype", None, None),
    "--dwdp-size": ("value", "dwdp_size", "0.5.18", None),
    "--dynamic-batch-tokenizer-batch-size": ("value", "dynamic_batch_tokenizer_batch_size", "0.5.3", None),
    "--dynamic-batch-tokenizer-batch-timeout": ("value", "dynamic_batch_tokenizer_batch_timeout", "0.5.3", None),
    "--elastic-ep-backend": ("value", "elastic_ep_backend", "0.5.4", None),
    "--elastic-ep-initial-size": ("value", "elastic_ep_initial_size", "0.5.18", None),
    "--elastic-ep-join-mode": ("value", "elastic_ep_join_mode", "0.5.18", None),
    "--elastic-ep-join-rank-offset": ("value", "elastic_ep_join_rank_offset", "0.5.18", None),
    "--elastic-ep-rejoin": ("flag", "elastic_ep_rejoin", "0.5.12", "0.5.23"),
    "--elastic-ep-scale-timeout": ("value", "elastic_ep_scale_timeout", "0.5.18", None),
    "--enable-adaptive-dispatch-to-encoder": ("flag", "enable_adaptive_dispatch_to_encoder", "0.5.10", None),
    "--enable-aiter-allreduce-fusion": ("flag", "enable_aiter_allreduce_fusion", "0.5.10", None),
    "--enable-amd-monokernel": ("flag", "enable_amd_monokernel", "0.5.23", None),
    "--enable-attn-tp-input-scattered": ("flag", "enable_attn_tp_input_scattered", "0.5.6", None),
    "--enable-beta-spec": ("flag", "enable_beta_spec", "0.5.4", "0.5.5"),
    "--enable-breakable-cuda-graph": ("flag", "enable_breakable_cuda_graph", "0.5.12", "0.5.20"),
    "--enable-broadcast-mm-inputs-process": ("flag", "enable_broadcast_mm_inputs_process", "0.5.6", None),
    "--enable-cache-report": ("flag", "enable_cache_report", None, None),
    "--enable-cp-decode-attn-tp": ("flag", "enable_cp_decode_attn_tp", "0.5.18", None),
    "--enable-cudagraph-gc": ("flag", "enable_cudagraph_gc", None, None),
    "--enable-custom-logit-processor": ("flag", "enable_custom_logit_processor", None, None),
    "--enable-decoder-swa-bounded-replay": ("bool", "enable_decoder_swa_bounded_replay", "0.5.23", None),
    "--enable-deepep-moe": ("flag", "enable_deepep_moe", None, "0.5.5"),
    "--enable-deepep-waterfill": ("flag", "enable_deepep_waterfill", "0.5.12", "0.5.18"),
    "--enable-deepseek-v4-fp4-indexer": ("flag", "enable_deepseek_v4_fp4_indexer", "0.5.15", None),
    "--enable-dense-mlp-attn-tp": ("flag", "enable_dense_mlp_attn_tp", "0.5.20", None),
    "--enable-deterministic-inference": ("flag", "enable_deterministic_inference", "0.5.3", None),
    "--enable-double-sparsity": ("flag", "enable_double_sparsity", None, "0.5.12"),
    "--enable-dp-attention": ("flag", "enable_dp_attention", None, None),
    "--enable-dp-attention-local-control-broadcast": ("flag", "enable_dp_attention_local_control_broadcast", "0.5.12", None),
    "--enable-dp-lm-head": ("flag", "enable_dp_lm_head", None, None),
    "--enable-draft-weights-cpu-backup": ("flag", "enable_draft_weights_cpu_backup", "0.5.6", None),
    "--enable-dsa-cache-layer-split": ("flag", "enable_dsa_cache_layer_split", "0.5.18", None),
    "--enable-dsa-fused-indexer": ("bool", "enable_dsa_fused_indexer", "0.5.23", None),
    "--enable-dsa-prefill-context-parallel": ("flag", "enable_dsa_prefill_context_parallel", "0.5.15", "0.5.20"),
    "--enable-dynamic-batch-tokenizer": ("flag", "enable_dynamic_batch_tokenizer", "0.5.3", None),
    "--enable-dynamic-chunking": ("flag", "enable_dynamic_chunking", "0.5.7", None),
    "--enable-elastic-expert-backup": ("flag", "enable_elastic_expert_backup", "0.5.10", None),
    "--enable-encoder-swa-bounded-replay": ("flag", "enable_encoder_swa_bounded_replay", "0.5.23", None),
    "--enable-ep-moe": ("flag", "enable_ep_moe", None, "0.5.5"),
    "--enable-eplb": ("flag", "enable_eplb", None, None),
    "--enable-expert-distribution-metrics": ("flag", "enable_expert_distribution_metrics", None, "0.5.20"),
    "--enable-flashinfer-allreduce-fusion": ("flag", "enable_flashinfer_allreduce_fusion", None, None),
    "--enable-flashinfer-autotune": ("flag", "enable_flashinfer_autotune", "0.5.6", "0.5.7"),
    "--enable-flashinfer-cutedsl-moe": ("flag", "enable_flashinfer_cutedsl_moe", "0.5.3", "0.5.5"),
    "--enable-flashinfer-cutlass-moe": ("flag", "enable_flashinfer_cutlass_moe", None, "0.5.5"),
    "--enable-flashinfer-mxfp4-moe": ("flag", "enable_flashinfer_mxfp4_moe", "0.5.0rc0", "0.5.5"),
    "--enable-flashinfer-trtllm-moe": ("flag", "enable_flashinfer_trtllm_moe", None, "0.5.5"),
    "--enable-flexkv": ("flag", "enable_flexkv", "0.5.18", None),
    "--enable-forward-pass-metrics": ("flag", "enable_forward_pass_metrics", "0.5.12", None),
    "--enable-fp32-lm-head": ("flag", "enable_fp32_lm_head", "0.5.3", None),
    "--enable-fused-moe-sum-all-reduce": ("flag", "enable_fused_moe_sum_all_reduce", "0.5.10", None),
    "--enable-fused-qk-norm-rope": ("bool", "enable_fused_qk_norm_rope", "0.5.7", None),
    "--enable-gdn-replayssm-spec": ("flag", "enable_gdn_replayssm_spec", "0.5.18", "0.5.20"),
    "--enable-hicache": ("flag", "enable_hierarchical_cache", "0.5.23", None),
    "--enable-hierarchical-cache": ("flag", "enable_hierarchical_cache", None, None),
    "--enable-hisparse": ("flag", "enable_hisparse", "0.5.10", None),
    "--enable-http-worker-reuseport": ("flag", "enable_http_worker_reuseport", "0.5.23", None),
    "--enable-http2": ("flag", "enable_http2", "0.5.12", None),
    "--enable-int8-mamba-checkpoint": ("flag", "enable_int8_mamba_checkpoint", "0.5.15", None),
    "--enable-kv-cache-sharding": ("flag", "enable_kv_cache_sharding", "0.5.23", None),
    "--enable-layernorm-sp": ("flag", "enable_layernorm_sp", "0.5.20", None),
    "--enable-layerwise-nvtx-marker": ("flag", "enable_layerwise_nvtx_marker", "0.5.6", None),
    "--enable-lean-attention": ("flag", "enable_lean_attention", "0.5.20", None),
    "--enable-linear-replayssm": ("flag", "enable_linear_replayssm", "0.5.15", None),
    "--enable-linear-replayssm-spec": ("flag", "enable_linear_replayssm_spec", "0.5.18", None),
    "--enable-linker-mla-dedup": ("flag", "enable_linker_mla_dedup", "0.5.23", None),
    "--enable-lmcache": ("flag", "enable_lmcache", "0.5.2", None),
    "--enable-lora": ("flag", "enable_lora", None, None),
    "--enable-lora-overlap-loading": ("flag", "enable_lora_overlap_loading", "0.5.8", None),
    "--enable-mamba-cache-stochastic-rounding": ("flag", "enable_mamba_cache_stochastic_rounding", "0.5.15", None),
    "--enable-megamoe-for-layernorm-sp": ("flag", "enable_megamoe_for_layernorm_sp", "0.5.23", None),
    "--enable-memory-saver": ("flag", "enable_memory_saver", None, None),
    "--enable-metrics": ("flag", "enable_metrics", None, None),
    "--enable-metrics-for-all-schedulers": ("flag", "enable_metrics_for_all_schedulers", None, None),
    "--enable-mfu-metrics": ("flag", "enable_mfu_metrics", "0.5.10", None),
    "--enable-mis": ("flag", "enable_mis", "0.5.12", None),
    "--enable-mixed-chunk": ("flag", "enable_mixed_chunk", None, None),
    "--enable-mm-global-cache": ("flag", "enable_mm_global_cache", "0.5.10", None),
    "--enable-mscclpp": ("flag", "enable_mscclpp", None, None),
    "--enable-multi-layer-eagle": ("flag", "enable_multi_layer_eagle", "0.5.7", None),
    "--enable-multimodal": ("flag", "enable_multimodal", None, None),
    "--enable-nan-detection": ("flag", "enable_nan_detection", None, "0.5.15"),
    "--enable-nccl-nvls": ("flag", "enable_nccl_nvls", None, None),
    "--enable-nsa-prefill-context-parallel": ("flag", "enable_nsa_prefill_context_parallel", "0.5.6", "0.5.20"),
    "--enable-nvidia-megakernel": ("flag", "enable_nvidia_megakernel", "0.5.23", None),
    "--enable-p2p-check": ("flag", "enable_p2p_check", None, None),
    "--enable-page-major-kv-layout": ("flag", "enable_page_major_kv_layout", "0.5.15", None),
    "--enable-paged-experts": ("flag", "enable_paged_experts", "0.5.23", None),
    "--enable-pd-role-switch": ("flag", "enable_pd_role_switch", "0.5.23", None),
    "--enable-pdmux": ("flag", "enable_pdmux", None, None),
    "--enable-piecewise-cuda-graph": ("flag", "enable_piecewise_cuda_graph", "0.5.4", "0.5.15"),
    "--enable-precise-embedding-interpolation": ("flag", "enable_precise_embedding_interpolation", "0.5.7", None),
    "--enable-prefill-context-parallel": ("flag", "enable_prefill_context_parallel", "0.5.10", "0.5.20"),
    "--enable-prefill-cp": ("flag", "enable_prefill_cp", "0.5.15", None),
    "--enable-prefill-delayer": ("flag", "enable_prefill_delayer", "0.5.8", None),
    "--enable-prefix-mm-cache": ("flag", "enable_prefix_mm_cache", "0.5.7", None),
    "--enable-priority-scheduling": ("flag", "enable_priority_scheduling", "0.5.3", None),
    "--enable-profile-cuda-graph": ("flag", "enable_profile_cuda_graph", None, None),
    "--enable-quant-communications": ("flag", "enable_quant_communications", "0.5.12", None),
    "--enable-request-time-stats-logging": ("flag", "enable_request_time_stats_logging", None, None),
    "--enable-response-store": ("flag", "enable_response_store", "0.5.20", None),
    "--enable-return-aux-hidden-states": ("flag", "enable_return_aux_hidden_states", "0.5.23", None),
    "--enable-return-hidden-states": ("flag", "enable_return_hidden_states", None, None),
    "--enable-return-indexer-topk": ("flag", "enable_return_indexer_topk", "0.5.12", None),
    "--enable-return-routed-experts": ("flag", "enable_return_routed_experts", "0.5.7", None),
    "--enable-scattered-sconv": ("flag", "enable_scattered_sconv", "0.5.18", None),
    "--enable-session-radix-cache": ("flag", "enable_session_radix_cache", "0.5.15", None),
    "--enable-shared-experts-attn-tp": ("flag", "enable_shared_experts_attn_tp", "0.5.20", None),
    "--enable-single-batch-overlap": ("flag", "enable_single_batch_overlap", "0.5.3", None),
    "--enable-ssl-refresh": ("flag", "enable_ssl_refresh", "0.5.10", None),
    "--enable-streaming-session": ("flag", "enable_streaming_session", "0.5.10", None),
    "--enable-strict-thinking": ("flag", "enable_strict_thinking", "0.5.12", None),
    "--enable-symm-mem": ("flag", "enable_symm_mem", None, None),
    "--enable-tf32-matmul": ("bool", "enable_tf32_matmul", "0.5.15", None),
    "--enable-tokenizer-batch-encode": ("flag", "enable_tokenizer_batch_encode", None, None),
    "--enable-torch-compile": ("flag", "enable_torch_compile", None, None),
    "--enable-torch-compile-debug-mode": ("flag", "enable_torch_compile_debug_mode", "0.5.6", None),
    "--enable-torch-symm-mem": ("flag", "enable_torch_symm_mem", "0.5.3", None),
    "--enable-tp-lm-head-all-to-all": ("bool", "enable_tp_lm_head_all_to_all", "0.5.18", None),
    "--enable-trace": ("flag", "enable_trace", "0.5.3", None),
    "--enable-triton-kernel-moe": ("flag", "enable_triton_kernel_moe", None, "0.5.5"),
    "--enable-two-batch-overlap": ("flag", "enable_two_batch_overlap", None, None),
    "--enable-unified-cache-external-linker": ("flag", "enable_unified_cache_external_linker", "0.5.20", None),
    "--enable-unified-memory": ("flag", "enable_unified_memory", "0.5.15", None),
    "--enable-w4a4-mxfp4-megamoe": ("flag", "enable_w4a4_mxfp4_megamoe", "0.5.20", None),
    "--enable-waterfill": ("flag", "enable_waterfill", "0.5.18", None),
    "--enable-watermark": ("flag", "enable_watermark", "0.5.23", None),
    "--enable-weights-cpu-backup": ("flag", "enable_weights_cpu_backup", "0.5.3", None),
    "--encoder-bootstrap-port": ("value", "encoder_bootstrap_port", "0.5.15", None),
    "--encoder-only": ("flag", "encoder_only", "0.5.7", None),
    "--encoder-register-urls": ("list", "encoder_register_urls", "0.5.15", None),
    "--encoder-transfer-backend": ("value", "encoder_transfer_backend", "0.5.7", None),
    "--encoder-urls": ("list", "encoder_urls", "0.5.7", None),
    "--enforce-disable-flashinfer-allreduce-fusion": ("flag", "enforce_disable_flashinfer_allreduce_fusion", "0.5.10", None),
    "--enforce-piecewise-cuda-graph": ("flag", "enforce_piecewise_cuda_graph", "0.5.10", "0.5.20"),
    "--enforce-shared-experts-fusion": ("flag", "enforce_shared_experts_fusion", "0.5.12", None),
    "--engine-info-bootstrap-port": ("value", "engine_info_bootstrap_port", "0.5.10", None),
    "--ep": ("value", "ep_size", None, None),
    "--ep-dispatch-algorithm": ("value", "ep_dispatch_algorithm", None, None),
    "--ep-num-redundant-experts": ("value", "ep_num_redundant_experts", None, None),
    "--ep-size": ("value", "ep_size", None, None),
    "--eplb-algorithm": ("value", "eplb_algorithm", None, None),
    "--eplb-min-rebalancing-utilization-threshold": ("value", "eplb_min_rebalancing_utilization_threshold", "0.5.2", None),
    "--eplb-rebalance-layers-per-chunk": ("value", "eplb_rebalance_layers_per_chunk", None, None),
    "--eplb-rebalance-num-iterations": ("value", "eplb_rebalance_num_iterations", None, None),
    "--expert-balancedness-report-mode": ("value", "expert_balancedness_report_mode", "0.5.18", None),
    "--expert-distribution-recorder-buffer-size": ("value", "expert_distribution_recorder_buffer_size", None, None),
    "--expert-distribution-recorder-mode": ("value", "expert_distribution_recorder_mode", None, None),
    "--expert-parallel-size": ("value", "ep_size", None, None),
    "--experts-shared-outer-loras": ("bool", "experts_shared_outer_loras", "0.5.10", None),
    "--export-metrics-to-file": ("flag", "export_metrics_to_file", "0.5.6", None),
    "--export-metrics-to-file-dir": ("value", "export_metrics_to_file_dir", "0.5.6", None),
    "--extra-metric-labels": ("value", "extra_metric_labels", "0.5.9", None),
    "--fastapi-root-path": ("value", "fastapi_root_path", "0.5.6", None),
    "--file-storage-path": ("value", "file_storage_path", None, None),
    "--flashinfer-a2a-dispatch-type": ("value", "flashinfer_a2a_dispatch_type", "0.5.20", None),
    "--flashinfer-allreduce-fusion-backend": ("value", "flashinfer_allreduce_fusion_backend", "0.5.15", None),
    "--flashinfer-autotune-skip-ops": ("list", "flashinfer_autotune_skip_ops", "0.5.18", None),
    "--flashinfer-mla-disable-ragged": ("flag", "flashinfer_mla_disable_ragged", None, None),
    "--flashinfer-mxfp4-moe-precision": ("value", "flashinfer_mxfp4_moe_precision", "0.5.1", None),
    "--flexkv-config-file": ("value", "flexkv_config_file", "0.5.18", None),
    "--forward-hooks": ("value", "forward_hooks", "0.5.6", None),
    "--forward-pass-metrics-ipc-name": ("value", "forward_pass_metrics_ipc_name", "0.5.12", None),
    "--forward-pass-metrics-worker-id": ("value", "forward_pass_metrics_worker_id", "0.5.12", None),
    "--fp4-gemm-backend": ("value", "fp4_gemm_backend", "0.5.8", None),
    "--fp8-gemm-backend": ("value", "fp8_gemm_backend", "0.5.7", None),
    "--fuseep-mode": ("value", "fuseep_mode", "0.5.18", None),
    "--gated-launch-port": ("value", "gated_launch_port", "0.5.20", None),
    "--gc-threshold": ("list", "gc_threshold", "0.5.10", None),
    "--gc-warning-threshold-secs": ("value", "gc_warning_threshold_secs", "0.5.1", None),
    "--generation-tokens-buckets": ("list", "generation_tokens_buckets", "0.5.2", None),
    "--gpu-id-step": ("value", "gpu_id_step", None, None),
    "--grammar-backend": ("value", "grammar_backend", None, None),
    "--grpc-http-sidecar-port": ("value", "smg_http_sidecar_port", "0.5.12", None),
    "--grpc-mode": ("flag", "grpc_mode", "0.5.4", None),
    "--grpc-port": ("value", "grpc_port", "0.5.18", None),
    "--grpc-response-timeout-secs": ("value", "grpc_response_timeout_secs", "0.5.23", None),
    "--hf-chat-template-name": ("value", "hf_chat_template_name", "0.5.8", None),
    "--hicache-host-memory-fraction": ("value", "hicache_host_memory_fraction", "0.5.23", None),
    "--hicache-host-memory-mode": ("value", "hicache_host_memory_mode", "0.5.20", None),
    "--hicache-io-backend": ("value", "hicache_io_backend", None, None),
    "--hicache-mem-layout": ("value", "hicache_mem_layout", None, None),
    "--hicache-ratio": ("value", "hicache_ratio", None, None),
    "--hicache-size": ("value", "hicache_size", None, None),
    "--hicache-storage-backend": ("value", "hicache_storage_backend", None, None),
    "--hicache-storage-backend-extra-config": ("value", "hicache_storage_backend_extra_config", "0.5.2", None),
    "--hicache-storage-prefetch-policy": ("value", "hicache_storage_prefetch_policy", "0.5.0rc0", None),
    "--hicache-storage-prefetch-retry-max-attempts": ("value", "hicache_storage_prefetch_retry_max_attempts", "0.5.20", None),
    "--hicache-storage-prefetch-retry-poll-interval": ("value", "hicache_storage_prefetch_retry_poll_interval", "0.5.20", None),
    "--hicache-write-policy": ("value", "hicache_write_policy", None, None),
    "--hierarchical-sparse-attention-extra-config": ("value", "hisparse_config", "0.5.8", None),
    "--hisparse-config": ("value", "hisparse_config", "0.5.10", None),
    "--host": ("value", "host", None, None),
    "--http2-initial-connection-window-size": ("value", "http2_initial_connection_window_size", "0.5.20", None),
    "--http2-max-concurrent-streams": ("value", "http2_max_concurrent_streams", "0.5.18", None),
    "--hybrid-kvcache-ratio": ("flag", "hybrid_kvcache_ratio", None, "0.5.15"),
    "--image-processor-backend": ("value", "image_processor_backend", "0.5.18", None),
    "--incremental-streaming-output": ("flag", "incremental_streaming_output", "0.5.10", None),
    "--init-expert-location": ("value", "init_expert_location", None, None),
    "--int8-mamba-ckpt-size": ("value", "int8_mamba_ckpt_size", "0.5.15", None),
    "--is-embedding": ("flag", "is_embedding", None, None),
    "--json-model-override-args": ("value", "json_model_override_args", None, None),
    "--keep-mm-feature-on-device": ("flag", "keep_mm_feature_on_device", "0.5.3", "0.5.23"),
    "--kt-amx-method": ("value", "kt_amx_method", "0.5.4", "0.5.6"),
    "--kt-amx-weight-path": ("value", "kt_amx_weight_path", "0.5.4", "0.5.6"),
    "--kt-cpuinfer": ("value", "kt_cpuinfer", "0.5.4", None),
    "--kt-max-deferred-experts-per-token": ("value", "kt_max_deferred_experts_per_token", "0.5.5", None),
    "--kt-method": ("value", "kt_method", "0.5.6", None),
    "--kt-num-gpu-experts": ("value", "kt_num_gpu_experts", "0.5.4", None),
    "--kt-threadpool-count": ("value", "kt_threadpool_count", "0.5.4", None),
    "--kt-weight-path": ("value", "kt_weight_path", "0.5.6", None),
    "--kv-cache-dtype": ("value", "kv_cache_dtype", None, None),
    "--kv-canary": ("value", "kv_canary", "0.5.15", None),
    "--kv-canary-real-data": ("value", "kv_canary_real_data", "0.5.15", None),
    "--kv-canary-sweep-interval": ("value", "kv_canary_sweep_interval", "0.5.15", None),
    "--kv-events-config": ("value", "kv_events_config", None, None),
    "--language-model-only": ("flag", "language_model_only", "0.5.18", None),
    "--language-only": ("flag", "language_only", "0.5.7", None),
    "--limit-mm-data-per-request": ("value", "limit_mm_data_per_request", "0.5.7", None),
    "--linear-attn-backend": ("value", "linear_attn_backend", "0.5.10", None),
    "--linear-attn-decode-backend": ("value", "linear_attn_decode_backend", "0.5.10", None),
    "--linear-attn-prefill-backend": ("value", "linear_attn_prefill_backend", "0.5.10", None),
    "--linear-attn-verify-backend": ("value", "linear_attn_verify_backend", "0.5.18", None),
    "--linear-replayssm-cache-len": ("value", "linear_replayssm_cache_len", "0.5.15", None),
    "--lmcache-config-file": ("value", "lmcache_config_file", "0.5.15", None),
    "--load-balance-method": ("value", "load_balance_method", None, None),
    "--load-format": ("value", "load_format", None, None),
    "--load-publish-endpoint": ("value", "load_publish_endpoint", "0.5.20", None),
    "--load-snapshot-publish-interval": ("value", "load_snapshot_publish_interval", "0.5.15", None),
    "--load-watch-interval": ("value", "load_watch_interval", "0.5.3", "0.5.7"),
    "--log-level": ("value", "log_level", None, None),
    "--log-level-http": ("value", "log_level_http", None, None),
    "--log-requests": ("flag", "log_requests", None, None),
    "--log-requests-format": ("value", "log_requests_format", "0.5.7", None),
    "--log-requests-level": ("value", "log_requests_level", None, None),
    "--log-requests-target": ("list", "log_requests_target", "0.5.8", None),
    "--lora-backend": ("value", "lora_backend", None, None),
    "--lora-drain-wait-threshold": ("value", "lora_drain_wait_threshold", "0.5.12", None),
    "--lora-eviction-policy": ("value", "lora_eviction_policy", "0.5.4", None),
    "--lora-paths": ("value", "lora_paths", None, None),
    "--lora-strict-loading": ("bool", "lora_strict_loading", "0.5.12", None),
    "--lora-target-modules": ("list", "lora_target_modules", None, None),
    "--lora-use-virtual-experts": ("flag", "lora_use_virtual_experts", "0.5.12", None),
    "--mamba-backend": ("value", "mamba_backend", "0.5.9", None),
    "--mamba-cache-philox-rounds": ("value", "mamba_cache_philox_rounds", "0.5.15", None),
    "--mamba-full-memory-ratio": ("value", "mamba_full_memory_ratio", "0.5.4", None),
    "--mamba-max-states-per-path": ("value", "mamba_max_states_per_path", "0.5.18", None),
    "--mamba-radix-cache-strategy": ("value", "mamba_radix_cache_strategy", "0.5.15", None),
    "--mamba-scheduler-strategy": ("flag", "mamba_scheduler_strategy", "0.5.7", "0.5.20"),
    "--mamba-ssm-dtype": ("value", "mamba_ssm_dtype", "0.5.2", None),
    "--mamba-track-interval": ("value", "mamba_track_interval", "0.5.7", None),
    "--max-ep-size": ("value", "max_ep_size", "0.5.18", None),
    "--max-loaded-loras": ("value", "max_loaded_loras", None, None),
    "--max-lora-chunk-size": ("value", "max_lora_chunk_size", "0.5.3", None),
    "--max-lora-rank": ("value", "max_lora_rank", None, None),
    "--max-loras-per-batch": ("value", "max_loras_per_batch", None, None),
    "--max-mamba-cache-size": ("value", "max_mamba_cache_size", "0.5.2", None),
    "--max-micro-batch-size": ("value", "max_micro_batch_size", None, "0.5.4"),
    "--max-prefill-tokens": ("value", "max_prefill_tokens", None, None),
    "--max-queued-requests": ("value", "max_queued_requests", None, None),
    "--max-running-requests": ("value", "max_running_requests", None, None),
    "--max-total-tokens": ("value", "max_total_tokens", None, None),
    "--media-url-max-file-size-mb": ("value", "media_url_max_file_size_mb", "0.5.18", None),
    "--mem-fraction-static": ("value", "mem_fraction_static", None, None),
    "--min-free-slots-delay": ("value", "min_free_slots_delay", "0.5.15", None),
    "--mlx-enable-sampling": ("flag", "mlx_enable_sampling", "0.5.18", None),
    "--mm-attention-backend": ("value", "mm_attention_backend", None, None),
    "--mm-enable-dp-encoder": ("bool", "mm_enable_dp_encoder", "0.5.6", None),
    "--mm-feature-transport": ("value", "mm_feature_transport", "0.5.18", None),
    "--mm-global-cache-backend": ("value", "mm_global_cache_backend", "0.5.18", None),
    "--mm-io-worker-num": ("value", "mm_io_worker_num", "0.5.18", None),
    "--mm-max-concurrent-calls": ("value", "mm_max_concurrent_calls", "0.5.5", "0.5.10"),
    "--mm-per-request-timeout": ("value", "mm_per_request_timeout", "0.5.5", "0.5.10"),
    "--mm-preprocess-cache-size-mb": ("value", "mm_preprocess_cache_size_mb", "0.5.18", None),
    "--mm-process-config": ("value", "mm_process_config", "0.5.6", None),
    "--mm-processor-worker-num": ("value", "mm_processor_worker_num", "0.5.18", None),
    "--model": ("value", "model_path", None, None),
    "--model-checksum": ("optional", "model_checksum", "0.5.8", None),
    "--model-config-parser": ("value", "model_config_parser", "0.5.12", None),
    "--model-impl": ("value", "model_impl", None, None),
    "--model-loader-extra-config": ("value", "model_loader_extra_config", None, None),
    "--model-path": ("value", "model_path", None, None),
    "--modelexpress-config": ("value", "modelexpress_config", "0.5.10", None),
    "--modelopt-checkpoint-restore-path": ("value", "modelopt_checkpoint_restore_path", "0.5.4", None),
    "--modelopt-checkpoint-save-path": ("value", "modelopt_checkpoint_save_path", "0.5.4", None),
    "--modelopt-export-path": ("value", "modelopt_export_path", "0.5.4", None),
    "--modelopt-quant": ("value", "modelopt_quant", "0.5.4", None),
    "--moe-a2a-backend": ("value", "moe_a2a_backend", None, None),
    "--moe-data-parallel-size": ("value", "moe_dp_size", "0.5.9", None),
    "--moe-dense-tp-size": ("value", "moe_dense_tp_size", None, None),
    "--moe-dp-size": ("value", "moe_dp_size", "0.5.9", None),
    "--moe-runner-backend": ("value", "moe_runner_backend", "0.5.1", None),
    "--monokernel-backend": ("flag", "monokernel_backend", "0.5.23", None),
    "--mooncake-ib-device": ("value", "mooncake_ib_device", "0.5.4", None),
    "--msprobe-dump-config": ("value", "msprobe_dump_config", "0.5.12", None),
    "--multi-item-scoring-delimiter": ("value", "multi_item_scoring_delimiter", "0.5.4", "0.5.12"),
    "--nccl-init-addr": ("value", "dist_init_addr", None, None),
    "--nccl-port": ("value", "nccl_port", None, None),
    "--nnodes": ("value", "nnodes", None, None),
    "--node-rank": ("value", "node_rank", None, None),
    "--nsa-decode": ("value", "nsa_decode", "0.5.3", "0.5.4"),
    "--nsa-decode-backend": ("flag", "nsa_decode_backend", "0.5.4", "0.5.20"),
    "--nsa-prefill": ("value", "nsa_prefill", "0.5.3", "0.5.4"),
    "--nsa-prefill-backend": ("flag", "nsa_prefill_backend", "0.5.4", "0.5.20"),
    "--nsa-prefill-cp-mode": ("flag", "nsa_prefill_cp_mode", "0.5.8", "0.5.20"),
    "--num-continuous-decode-steps": ("value", "num_continuous_decode_steps", None, None),
    "--num-reserved-decode-tokens": ("value", "num_reserved_decode_tokens", None, None),
    "--numa-node": ("list", "numa_node", "0.5.2", None),
    "--offload-group-size": ("value", "offload_group_size", "0.5.1", None),
    "--offload-mode": ("value", "offload_mode", "0.5.1", None),
    "--offload-num-in-group": ("value", "offload_num_in_group", "0.5.1", None),
    "--offload-prefetch-step": ("value", "offload_prefetch_step", "0.5.1", None),
    "--oltp-traces-endpoint": ("value", "oltp_traces_endpoint", "0.5.3", "0.5.5"),
    "--optimistic-prefill-attempts": ("value", "optimistic_prefill_attempts", "0.5.18", None),
    "--optimistic-prefill-retries": ("value", "optimistic_prefill_retries", "0.5.15", "0.5.18"),
    "--otlp-service-name": ("value", "otlp_service_name", "0.5.23", None),
    "--otlp-traces-endpoint": ("value", "otlp_traces_endpoint", "0.5.5", None),
    "--page-size": ("value", "page_size", None, None),
    "--paged-experts-num-resident": ("value", "paged_experts_num_resident", "0.5.23", None),
    "--pdlb-url": ("value", "pdlb_url", None, "0.5.2"),
    "--pdmux-config-path": ("value", "pdmux_config_path", "0.5.4", None),
    "--piecewise-cuda-graph-compiler": ("flag", "piecewise_cuda_graph_compiler", "0.5.4", "0.5.20"),
    "--piecewise-cuda-graph-max-tokens": ("flag", "piecewise_cuda_graph_max_tokens", "0.5.4", "0.5.20"),
    "--piecewise-cuda-graph-tokens": ("flag", "piecewise_cuda_graph_tokens", "0.5.4", "0.5.20"),
    "--pipeline-parallel-size": ("value", "pp_size", None, None),
    "--ple-offload-backend": ("value", "ple_offload_backend", "0.5.20", None),
    "--ple-offload-dir": ("value", "ple_offload_dir", "0.5.20", None),
    "--ple-offload-embedding": ("bool", "ple_offload_embedding", "0.5.20", None),
    "--port": ("value", "port", None, None),
    "--pp-async-batch-depth": ("value", "pp_async_batch_depth", "0.5.7", None),
    "--pp-max-micro-batch-size": ("value", "pp_max_micro_batch_size", "0.5.4", None),
    "--pp-size": ("value", "pp_size", None, None),
    "--pre-warm-nccl": ("flag", "pre_warm_nccl", "0.5.10", None),
    "--preferred-sampling-params": ("value", "preferred_sampling_params", None, None),
    "--prefill-attention-backend": ("value", "prefill_attention_backend", None, None),
    "--prefill-cp-mode": ("flag", "prefill_cp_mode", "0.5.10", "0.5.20"),
    "--prefill-decode-interval": ("value", "prefill_decode_interval", "0.5.20", None),
    "--prefill-decode-interval-min-bs": ("value", "prefill_decode_interval_min_bs", "0.5.23", None),
    "--prefill-delayer-forward-passes-buckets": ("list", "prefill_delayer_forward_passes_buckets", "0.5.8", None),
    "--prefill-delayer-max-delay-ms": ("value", "prefill_delayer_max_delay_ms", "0.5.12", None),
    "--prefill-delayer-max-delay-passes": ("value", "prefill_delayer_max_delay_passes", "0.5.8", None),
    "--prefill-delayer-queue-min-ratio": ("value", "prefill_delayer_queue_min_ratio", "0.5.12", None),
    "--prefill-delayer-token-usage-low-watermark": ("value", "prefill_delayer_token_usage_low_watermark", "0.5.8", None),
    "--prefill-delayer-wait-seconds-buckets": ("list", "prefill_delayer_wait_seconds_buckets", "0.5.8", None),
    "--prefill-kv-cache-dequant-dtype": ("value", "prefill_kv_cache_dequant_dtype", "0.5.23", None),
    "--prefill-max-requests": ("value", "prefill_max_requests", "0.5.7", None),
    "--prefill-only-disable-kv-cache": ("flag", "prefill_only_disable_kv_cache", "0.5.12", None),
    "--prefill-round-robin-balance": ("flag", "prefill_round_robin_balance", "0.5.2", "0.5.20"),
    "--priority-scheduling-preemption-threshold": ("value", "priority_scheduling_preemption_threshold", "0.5.3", None),
    "--prompt-tokens-buckets": ("list", "prompt_tokens_buckets", "0.5.2", None),
    "--qsa-indexer-dtype": ("value", "qsa_indexer_dtype", "0.5.23", None),
    "--quantization": ("value", "quantization", None, None),
    "--quantization-param-path": ("value", "quantization_param_path", None, None),
    "--quantize-and-serve": ("flag", "quantize_and_serve", "0.5.4", None),
    "--radix-cache-backend": ("value", "radix_cache_backend", "0.5.15", None),
    "--radix-eviction-policy": ("value", "radix_eviction_policy", "0.5.3", None),
    "--radix-eviction-policy-config": ("value", "radix_eviction_policy_config", "0.5.20", None),
    "--random-seed": ("value", "random_seed", None, None),
    "--reasoning-parser": ("value", "reasoning_parser", None, None),
    "--record-nolora-graph": ("bool", "record_nolora_graph", "0.5.12", "0.5.15"),
    "--remote-instance-weight-loader-backend": ("value", "remote_instance_weight_loader_backend", "0.5.7", None),
    "--remote-instance-weight-loader-seed-instance-ip": ("value", "remote_instance_weight_loader_seed_instance_ip", "0.5.3", None),
    "--remote-instance-weight-loader-seed-instance-service-port": ("value", "remote_instance_weight_loader_seed_instance_service_port", "0.5.3", None),
    "--remote-instance-weight-loader-send-weights-group-ports": ("value", "remote_instance_weight_loader_send_weights_group_ports", "0.5.3", None),
    "--remote-instance-weight-loader-start-seed-via-transfer-engine": ("flag", "remote_instance_weight_loader_start_seed_via_transfer_engine", "0.5.7", None),
    "--retraction-policy": ("value", "retraction_policy", "0.5.18", None),
    "--return-aux-hidden-state-layer-ids": ("list", "return_aux_hidden_state_layer_ids", "0.5.23", None),
    "--return-hidden-states-mode": ("value", "return_hidden_states_mode", "0.5.18", None),
    "--return-input-ids": ("flag", "return_input_ids", "0.5.20", None),
    "--return-output-ids": ("flag", "return_output_ids", "0.5.20", None),
    "--revision": ("value", "revision", None, None),
    "--rl-on-policy-target": ("value", "rl_on_policy_target", "0.5.5", None),
    "--rl-quant-profile": ("value", "rl_quant_profile", "0.5.7", None),
    "--sampling-backend": ("value", "sampling_backend", None, None),
    "--sampling-defaults": ("value", "sampling_defaults", "0.5.4", None),
    "--sampling-mask-max-tokens": ("value", "sampling_mask_max_tokens", "0.5.20", None),
    "--schedule-conservativeness": ("value", "schedule_conservativeness", None, None),
    "--schedule-low-priority-values-first": ("flag", "schedule_low_priority_values_first", "0.5.3", None),
    "--schedule-policy": ("value", "schedule_policy", None, None),
    "--scheduler-recv-interval": ("value", "scheduler_recv_interval", "0.5.0rc0", None),
    "--served-model-name": ("value", "served_model_name", None, None),
    "--shared-experts-tp-size": ("value", "shared_experts_tp_size", "0.5.23", None),
    "--show-time-cost": ("flag", "show_time_cost", None, None),
    "--sidecar": ("value", "sidecar", "0.5.18", None),
    "--sidecar-args": ("value", "sidecar_args", "0.5.18", None),
    "--skip-server-warmup": ("flag", "skip_server_warmup", None, None),
    "--skip-tokenizer-init": ("flag", "skip_tokenizer_init", None, None),
    "--sleep-on-idle": ("flag", "sleep_on_idle", None, None),
    "--sm-group-num": ("value", "sm_group_num", None, None),
    "--smg-grpc-mode": ("flag", "smg_grpc_mode", "0.5.18", None),
    "--smg-http-sidecar-port": ("value", "smg_http_sidecar_port", "0.5.18", None),
    "--soft-watchdog-timeout": ("value", "soft_watchdog_timeout", "0.5.7", None),
    "--spec-trace-dir": ("value", "spec_trace_dir", "0.5.15", None),
    "--speculative-accept-threshold-acc": ("value", "speculative_accept_threshold_acc", None, None),
    "--speculative-accept-threshold-single": ("value", "speculative_accept_threshold_single", None, None),
    "--speculative-adaptive": ("flag", "speculative_adaptive", "0.5.12", None),
    "--speculative-adaptive-config": ("value", "speculative_adaptive_config", "0.5.12", None),
    "--speculative-algorithm": ("value", "speculative_algorithm", None, None),
    "--speculative-attention-mode": ("value", "speculative_attention_mode", "0.5.2", None),
    "--speculative-dflash-block-size": ("value", "speculative_dflash_block_size", "0.5.12", None),
    "--speculative-dflash-draft-window-size": ("flag", "speculative_dflash_draft_window_size", "0.5.12", "0.5.20"),
    "--speculative-domino-candidate-pool-size": ("value", "speculative_domino_candidate_pool_size", "0.5.20", None),
    "--speculative-draft-attention-backend": ("value", "speculative_draft_attention_backend", "0.5.7", None),
    "--speculative-draft-kv-cache-dtype": ("value", "speculative_draft_kv_cache_dtype", "0.5.18", None),
    "--speculative-draft-load-format": ("value", "speculative_draft_load_format", "0.5.4", None),
    "--speculative-draft-model": ("value", "speculative_draft_model_path", "0.5.2", None),
    "--speculative-draft-model-path": ("value", "speculative_draft_model_path", None, None),
    "--speculative-draft-model-quantization": ("value", "speculative_draft_model_quantization", "0.5.7", None),
    "--speculative-draft-model-revision": ("value", "speculative_draft_model_revision", "0.5.2", None),
    "--speculative-draft-sink-size": ("value", "speculative_draft_sink_size", "0.5.23", None),
    "--speculative-draft-window-size": ("value", "speculative_draft_window_size", "0.5.12", None),
    "--speculative-dsa-topk-backend": ("value", "speculative_dsa_topk_backend", "0.5.20", None),
    "--speculative-dspark-align-verify-tokens-to-graph-tier": ("flag", "speculative_dspark_align_verify_tokens_to_graph_tier", "0.5.18", None),
    "--speculative-dspark-block-size": ("value", "speculative_dspark_block_size", "0.5.18", None),
    "--speculative-dspark-confidence-sts-path": ("value", "speculative_dspark_confidence_sts_path", "0.5.18", None),
    "--speculative-dspark-sps-table-path": ("value", "speculative_dspark_sps_table_path", "0.5.18", None),
    "--speculative-eagle-topk": ("value", "speculative_eagle_topk", None, None),
    "--speculative-enable-w4a4-mxfp4-megamoe": ("bool", "speculative_enable_w4a4_mxfp4_megamoe", "0.5.23", None),
    "--speculative-moe-a2a-backend": ("value", "speculative_moe_a2a_backend", "0.5.7", None),
    "--speculative-moe-runner-backend": ("value", "speculative_moe_runner_backend", "0.5.5", None),
    "--speculative-ngram-branch-length": ("value", "speculative_ngram_branch_length", "0.5.3", "0.5.10"),
    "--speculative-ngram-capacity": ("value", "speculative_ngram_capacity", "0.5.3", None),
    "--speculative-ngram-external-corpus-max-tokens": ("value", "speculative_ngram_external_corpus_max_tokens", "0.5.12", None),
    "--speculative-ngram-external-corpus-path": ("value", "speculative_ngram_external_corpus_path", "0.5.12", None),
    "--speculative-ngram-external-sam-budget": ("value", "speculative_ngram_external_sam_budget", "0.5.12", None),
    "--speculative-ngram-match-type": ("value", "speculative_ngram_match_type", "0.5.3", None),
    "--speculative-ngram-max-bfs-breadth": ("value", "speculative_ngram_max_bfs_breadth", "0.5.3", None),
    "--speculative-ngram-max-match-window-size": ("value", "speculative_ngram_max_match_window_size", "0.5.3", "0.5.10"),
    "--speculative-ngram-max-trie-depth": ("value", "speculative_ngram_max_trie_depth", "0.5.10", None),
    "--speculative-ngram-min-bfs-breadth": ("value", "speculative_ngram_min_bfs_breadth", "0.5.3", None),
    "--speculative-ngram-min-match-window-size": ("value", "speculative_ngram_min_match_window_size", "0.5.3", "0.5.10"),
    "--speculative-num-draft-tokens": ("value", "speculative_num_draft_tokens", None, None),
    "--speculative-num-steps": ("value", "speculative_num_steps", None, None),
    "--speculative-skip-dp-mlp-sync": ("flag", "speculative_skip_dp_mlp_sync", "0.5.12", "0.5.23"),
    "--speculative-token-map": ("value", "speculative_token_map", None, None),
    "--speculative-use-block-verification": ("flag", "speculative_use_block_verification", "0.5.23", None),
    "--speculative-use-rejection-sampling": ("flag", "speculative_use_rejection_sampling", "0.5.15", None),
    "--ssl-ca-certs": ("value", "ssl_ca_certs", "0.5.10", None),
    "--ssl-certfile": ("value", "ssl_certfile", "0.5.10", None),
    "--ssl-keyfile": ("value", "ssl_keyfile", "0.5.10", None),
    "--ssl-keyfile-password": ("value", "ssl_keyfile_password", "0.5.10", None),
    "--startup-weight-load-mode": ("value", "startup_weight_load_mode", "0.5.18", None),
    "--stream-interval": ("value", "stream_interval", None, None),
    "--stream-output": ("flag", "stream_output", None, "0.5.20"),
    "--stream-response-default-include-usage": ("flag", "stream_response_default_include_usage", "0.5.10", None),
    "--strip-thinking-cache": ("flag", "strip_thinking_cache", "0.5.12", None),
    "--swa-full-tokens-ratio": ("value", "swa_full_tokens_ratio", None, None),
    "--swa-prefix-tails": ("value", "swa_prefix_tails", "0.5.23", None),
    "--tbo-token-distribution-threshold": ("value", "tbo_token_distribution_threshold", "0.5.0rc0", None),
    "--tensor-parallel-size": ("value", "tp_size", None, None),
    "--tokenizer-backend": ("value", "tokenizer_backend", "0.5.12", None),
    "--tokenizer-metrics-allowed-custom-labels": ("list", "tokenizer_metrics_allowed_custom_labels", "0.5.3", None),
    "--tokenizer-metrics-custom-labels-header": ("value", "tokenizer_metrics_custom_labels_header", "0.5.3", None),
    "--tokenizer-mode": ("value", "tokenizer_mode", None, None),
    "--tokenizer-path": ("value", "tokenizer_path", None, None),
    "--tokenizer-worker-num": ("value", "tokenizer_worker_num", "0.5.2", None),
    "--tool-call-parser": ("value", "tool_call_parser", None, None),
    "--tool-server": ("value", "tool_server", "0.5.0rc0", None),
    "--torch-compile-max-bs": ("value", "torch_compile_max_bs", None, None),
    "--torchao-config": ("value", "torchao_config", None, "0.5.18"),
    "--tp-size": ("value", "tp_size", None, None),
    "--trace-modules": ("value", "trace_modules", "0.5.15", None),
    "--triton-attention-num-kv-splits": ("value", "triton_attention_num_kv_splits", None, None),
    "--triton-attention-reduce-in-fp32": ("flag", "triton_attention_reduce_in_fp32", None, None),
    "--triton-attention-split-tile-size": ("value", "triton_attention_split_tile_size", "0.5.3", None),
    "--trust-mm-content-hashes": ("flag", "trust_mm_content_hashes", "0.5.18", None),
    "--trust-remote-code": ("flag", "trust_remote_code", None, None),
    "--trust-request-chat-template": ("flag", "trust_request_chat_template", "0.5.23", None),
    "--unified-cache-external-linker-backend": ("value", "unified_cache_external_linker_backend", "0.5.20", None),
    "--unified-cache-external-linker-config": ("value", "unified_cache_external_linker_config", "0.5.23", None),
    "--uno-lora-path": ("value", "uno_lora_path", "0.5.20", None),
    "--use-ray": ("flag", "use_ray", "0.5.10", None),
    "--uvicorn-access-log-exclude-prefixes": ("list", "uvicorn_access_log_exclude_prefixes", "0.5.8", None),
    "--warmups": ("value", "warmups", None, None),
    "--watchdog-timeout": ("value", "watchdog_timeout", None, None),
    "--watermark-config": ("value", "watermark_config", "0.5.23", None),
    "--weight-cache-mode": ("value", "weight_cache_mode", "0.5.18", None),
    "--weight-cache-socket": ("value", "weight_cache_socket", "0.5.18", None),
    "--weight-cache-timeout": ("value", "weight_cache_timeout", "0.5.18", None),
    "--weight-loader-disable-mmap": ("flag", "weight_loader_disable_mmap", None, None),
    "--weight-loader-drop-cache-after-load": ("flag", "weight_loader_drop_cache_after_load", "0.5.12", None),
    "--weight-loader-prefetch-checkpoints": ("flag", "weight_loader_prefetch_checkpoints", "0.5.12", None),
    "--weight-loader-prefetch-num-threads": ("value", "weight_loader_prefetch_num_threads", "0.5.12", None),
    "--weight-version": ("value", "weight_version", "0.5.1", None),
}
# fmt: on

_TRTLLM_KNOWN = {
    "--backend": ("value", "backend", None, None),
    "--chat_template": ("value", "chat_template", None, None),
    "--cluster_size": ("value", "moe_cluster_parallel_size", None, None),
    "--config": ("value", "extra_llm_api_options", None, None),
    "--context_parallel_size": ("value", "context_parallel_size", None, None),
    "--cp_size": ("value", "context_parallel_size", None, None),
    "--custom_module_dirs": ("value", "custom_module_dirs", None, None),
    "--custom_tokenizer": ("value", "custom_tokenizer", None, None),
    "--disagg_cluster_uri": ("value", "disagg_cluster_uri", None, None),
    "--enable_chunked_prefill": ("flag", "enable_chunked_prefill", None, None),
    "--ep_size": ("value", "moe_expert_parallel_size", None, None),
    "--extra_llm_api_options": ("value", "extra_llm_api_options", None, None),
    "--fail_fast_on_attention_window_too_large": ("flag", "fail_fast_on_attention_window_too_large", None, None),
    "--free_gpu_memory_fraction": ("value", "free_gpu_memory_fraction", None, None),
    "--gpus_per_node": ("value", "gpus_per_node", None, None),
    "--host": ("value", "host", None, None),
    "--kv_cache_free_gpu_memory_fraction": ("value", "free_gpu_memory_fraction", None, None),
    "--log_level": ("value", "log_level", None, None),
    "--max_batch_size": ("value", "max_batch_size", None, None),
    "--max_beam_width": ("value", "max_beam_width", None, None),
    "--max_num_tokens": ("value", "max_num_tokens", None, None),
    "--max_seq_len": ("value", "max_seq_len", None, None),
    "--media_io_kwargs": ("value", "media_io_kwargs", None, None),
    "--metadata_server_config_file": ("value", "metadata_server_config_file", None, None),
    "--moe_cluster_parallel_size": ("value", "moe_cluster_parallel_size", None, None),
    "--moe_expert_parallel_size": ("value", "moe_expert_parallel_size", None, None),
    "--num_postprocess_workers": ("value", "num_postprocess_workers", None, None),
    "--otlp_traces_endpoint": ("value", "otlp_traces_endpoint", None, None),
    "--pipeline_parallel_size": ("value", "pipeline_parallel_size", None, None),
    "--port": ("value", "port", None, None),
    "--pp_size": ("value", "pipeline_parallel_size", None, None),
    "--reasoning_parser": ("value", "reasoning_parser", None, None),
    "--revision": ("value", "revision", None, None),
    "--server_role": ("value", "server_role", None, None),
    "--tensor_parallel_size": ("value", "tensor_parallel_size", None, None),
    "--tokenizer": ("value", "tokenizer", None, None),
    "--tool_parser": ("value", "tool_parser", None, None),
    "--tp_size": ("value", "tensor_parallel_size", None, None),
    "--trust_remote_code": ("flag", "trust_remote_code", None, None),
}

_KNOWN: Dict[str, Dict[str, Tuple[str, str, Optional[str], Optional[str]]]] = {
    "vllm": _VLLM_KNOWN,
    "sglang": _SGLANG_KNOWN,
    "tensorrt-llm": _TRTLLM_KNOWN,
    # llama.cpp: `bool`/`bool-neg` pairs are spelled out (`-kvu` / `-no-kvu`), so both read as
    # switches here; `_spec` marks the negative spelling
    "llama.cpp": {
        spelling: ("flag" if takes in ("bool", "bool-neg") else takes, dest, None, None)
        for spelling, (takes, dest, _env, _builds) in LLAMACPP_KNOWN.items()
    },
    "ollama": {"--help": ("flag", "help", None, None), "-h": ("flag", "help", None, None)},
}

# The model given positionally (`vllm serve MODEL`, `trtllm-serve MODEL`, `sglang serve MODEL`).
MODEL_POSITIONAL = FlagSpec(
    engine="", spelling="MODEL", dest="model", takes="value", field="/model/name", type="str",
    added=None, removed=None, source="", verified=True,
)


# --- lookups -------------------------------------------------------------------------------------


def display(engine: str) -> str:
    return _DISPLAY.get(engine, engine)


def parser_rules(engine: str) -> ParserRules:
    return _RULES[engine]


def _spec(engine: str, spelling: str) -> Optional[FlagSpec]:
    mapped = _MAPPED.get(engine, {}).get(spelling)
    known = _KNOWN.get(engine, {}).get(spelling)
    if mapped is None and known is None:
        return None
    if mapped is not None:
        takes = mapped.get("takes") or (known[0] if known else "value")
        added = mapped["added"] if "added" in mapped else (known[2] if known else None)
        removed = mapped["removed"] if "removed" in mapped else (known[3] if known else None)
        verified = bool(mapped.get("verified", known is not None))
        field_type = mapped["type"]
        if takes in ("bool", "flag"):
            field_type = "bool"
        return FlagSpec(
            engine, spelling, mapped["dest"], takes, mapped["field"], field_type, added, removed,
            mapped["source"], verified, negated=_llama_negative(engine, spelling),
        )
    assert known is not None
    takes, dest, added, removed = known
    field_type = {"bool": "bool", "flag": "bool", "json": "json", "list": "str"}.get(takes, "str")
    return FlagSpec(
        engine, spelling, dest, takes, None, field_type, added, removed, _KNOWN_SOURCE[engine], True,
        negated=_llama_negative(engine, spelling),
    )


def _llama_negative(engine: str, spelling: str) -> bool:
    """`-no-kvu`, `--no-context-shift`: the negative spelling of a llama.cpp switch pair."""
    return engine == "llama.cpp" and LLAMACPP_KNOWN.get(spelling, ("",))[0] == "bool-neg"


def lookup(engine: str, spelling: str) -> Optional[FlagSpec]:
    """The flag registered as `spelling` (after the engine's own name normalisation), or None.

    `--no-x` resolves to `--x` with `negated=True` when `--x` is a BooleanOptionalAction.
    """
    spec = _spec(engine, spelling)
    if spec is not None:
        return spec
    if spelling.startswith("--no-"):
        positive = _spec(engine, "--" + spelling[5:])
        if positive is not None and positive.takes == "bool":
            return FlagSpec(
                positive.engine, spelling, positive.dest, positive.takes, positive.field,
                positive.type, positive.added, positive.removed, positive.source,
                positive.verified, negated=True,
            )
    inverse = _enable_disable_inverse(engine, spelling)
    if inverse is not None:
        return inverse
    return None


# From vLLM 0.33.0 every BooleanOptionalAction `--enable-x` also takes `--disable-x` (and
# `--disable-x` takes `--enable-x`), setting the flag to False (EnableDisableAction,
# vllm/utils/argparse_utils.py v0.33.0 L120-145, registered by FlexibleArgumentParser L179;
# absent in 0.32.0).
_VLLM_ENABLE_DISABLE_FROM = "0.33.0"
_INVERSE_PREFIXES = (("--disable-", "--enable-"), ("--enable-", "--disable-"))


def _enable_disable_inverse(engine: str, spelling: str) -> Optional[FlagSpec]:
    """`--disable-x` as the False of vLLM's BooleanOptionalAction `--enable-x` (or the reverse)."""
    if engine != "vllm":
        return None
    for prefix, inverse in _INVERSE_PREFIXES:
        if not spelling.startswith(prefix):
            continue
        positive = _spec(engine, inverse + spelling[len(prefix):])
        if positive is None or positive.takes != "bool":
            return None
        added = positive.added
        if added is None or version_key(added) < version_key(_VLLM_ENABLE_DISABLE_FROM):
            added = _VLLM_ENABLE_DISABLE_FROM
        return replace(positive, spelling=spelling, added=added, negated=True)
    return None


def spellings(engine: str) -> List[str]:
    """Every option string the parser registers (with `--no-x` for booleans)."""
    names = set(_KNOWN.get(engine, {})) | set(_MAPPED.get(engine, {}))
    negations = {
        "--no-" + name[2:]
        for name in names
        if name.startswith("--") and (lookup(engine, name) or MODEL_POSITIONAL).takes == "bool"
    }
    return sorted(names | negations)


_SPELLINGS_CACHE: Dict[str, List[str]] = {}


def prefix_matches(engine: str, prefix: str) -> List[str]:
    """Long options that `prefix` abbreviates (argparse `_get_option_tuples`)."""
    if engine not in _SPELLINGS_CACHE:
        _SPELLINGS_CACHE[engine] = spellings(engine)
    return [s for s in _SPELLINGS_CACHE[engine] if s.startswith("--") and s.startswith(prefix)]


def suggest(engine: str, written: str) -> Optional[str]:
    if engine not in _SPELLINGS_CACHE:
        _SPELLINGS_CACHE[engine] = spellings(engine)
    candidates = _SPELLINGS_CACHE[engine]
    if engine == "tensorrt-llm" and "-" in written[2:]:
        dashed = "--" + written[2:].replace("-", "_")
        if dashed in candidates:
            return dashed
    if engine == "sglang" and "_" in written:
        dashed = "--" + written[2:].replace("_", "-")
        if dashed in candidates:
            return dashed
    close = difflib.get_close_matches(written, candidates, n=1, cutoff=0.8)
    return close[0] if close else None


def json_fields(engine: str, dest: str) -> List[Tuple[Tuple[str, ...], str]]:
    return _JSON_FIELDS.get(engine, {}).get(dest, [])


_VERSION = re.compile(r"^v?(\d+(?:\.\d+)*)(?:[.-]?(dev|a|b|rc|post)(\d*))?")
_STAGE = {"dev": 0, "a": 1, "b": 2, "rc": 3, None: 4, "post": 5}


def version_key(version: str) -> Tuple[Tuple[int, ...], int, int]:
    """A sort key for engine releases ("0.19.1", "0.4.10.post2", "1.2.0rc1"); PEP 440 order."""
    match = _VERSION.match(version.strip())
    if not match:
        return ((0,), 0, 0)
    numbers = tuple(int(x) for x in match.group(1).split("."))
    while len(numbers) > 1 and numbers[-1] == 0:
        numbers = numbers[:-1]
    stage = _STAGE.get(match.group(2), 4)
    return (numbers, stage, int(match.group(3) or 0))


def release_problem(spec: FlagSpec, release: Optional[str]) -> Optional[str]:
    """Why `spec` does not exist in `release`, or None (also None when that is not certain)."""
    if release is None or (spec.added is None and spec.removed is None):
        return None
    checked = _CHECKED.get(spec.engine, ())
    key = version_key(release)
    name = display(spec.engine)
    if spec.added is not None and key < version_key(spec.added):
        # certain only if the release is at or before the checked release preceding `added`
        earlier = [v for v in checked if version_key(v) < version_key(spec.added)]
        if not earlier or key <= version_key(earlier[-1]):
            return (
                f"{spec.spelling} does not exist in {name} {release} (added in {spec.added}); "
                f"{name} {release} refuses to start"
            )
    if spec.removed is not None and key >= version_key(spec.removed):
        return (
            f"{spec.spelling} was removed in {name} {spec.removed}; {name} {release} refuses to start"
        )
    return None
