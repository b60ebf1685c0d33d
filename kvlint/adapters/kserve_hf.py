"""KServe's Hugging Face serving runtime (`modelFormat: huggingface`, image
`kserve/huggingfaceserver`, `python -m huggingfaceserver`): its own flags, and the vLLM engine
arguments it passes on.

The server's parser is KServe's model-server parser plus the Hugging Face server's flags; when the
vLLM backend is chosen (`--backend=vllm`, or `auto` for an architecture vLLM supports), vLLM's
`make_arg_parser` adds every engine flag to the same parser, and `parse_known_args` reads the
command line, so an argument neither knows is ignored, not refused:
https://github.com/kserve/kserve/blob/v0.15.0/python/huggingfaceserver/huggingfaceserver/__main__.py ,
https://github.com/kserve/kserve/blob/v0.15.0/python/huggingfaceserver/huggingfaceserver/vllm/utils.py
(maybe_add_vllm_cli_parser, build_vllm_engine_args = AsyncEngineArgs.from_cli_args),
https://github.com/kserve/kserve/blob/v0.15.0/python/kserve/kserve/model_server.py (parser).
`--backend=huggingface` (or `triton`) serves with transformers, not vLLM. The model is
`--model_id`, else what KServe's storage initializer downloads to `--model_dir` (/mnt/models)
from `storageUri`, which names it for `hf://org/name`.
"""

from __future__ import annotations

from dataclasses import field
from typing import Dict, List, Optional, Tuple

from kvlint.adapters.cmdline import Arg
from kvlint.records import dataclass

# KServe's model-server flags (v0.15.0-v0.20.0 model_server.py) and the Hugging Face server's own
# (__main__.py), by name with `-` read as `_`: True when the flag takes a value.
OWN_FLAGS: Dict[str, bool] = {
    **{name: True for name in (
        "http_port", "grpc_port", "workers", "max_threads", "max_asyncio_workers", "enable_grpc",
        "enable_docs_url", "enable_latency_logging", "configure_logging", "log_config_file",
        "access_log_format", "event_loop", "timeout_keep_alive", "model_name", "predictor_host", "protocol",
        "predictor_protocol", "predictor_use_ssl", "predictor_request_timeout_seconds",
        "grpc_max_send_message_length", "grpc_max_receive_message_length", "predictor_request_retries",
        "model_dir", "model_id", "model_revision", "tokenizer_revision", "max_length", "tensor_input_names",
        "backend", "task", "max_log_len",
    )},
    **{name: False for name in (
        "enable_predictor_health_check", "disable_lower_case", "disable_special_tokens", "trust_remote_code",
        "return_token_type_ids", "return_offsets_mapping", "return_probabilities", "return_raw_logits",
        "disable_log_requests",
    )},
}
# The server's flags vLLM's parser defines too and reads into the engine arguments:
# `--max_model_len` and `--dtype` (dest max_model_len / dtype, given to AsyncEngineArgs).
ENGINE_SHARED = frozenset({"max_model_len", "dtype"})
BACKENDS = ("auto", "vllm", "huggingface", "triton")


@dataclass
class Split:
    """The server's own flags (name -> (flag argument, value argument or None)) and the
    arguments for vLLM, in order."""

    own: Dict[str, Tuple[Arg, Optional[Arg]]] = field(default_factory=dict)
    engine: List[Arg] = field(default_factory=list)

    def value(self, name: str) -> Optional[Arg]:
        found = self.own.get(name)
        return found[1] if found else None


def value_arg(arg: Arg, start: int, origin: str = "") -> Arg:
    """The part of `arg` from character `start` on, with its own positions (`--model_id=X` -> X)."""
    return Arg(arg.text[start:], arg.offsets[start:], arg.locator, arg.span(start), origin or arg.origin,
               arg.expansion)


def split_args(args: List[Arg]) -> Split:
    out = Split()
    i = 0
    while i < len(args):
        arg = args[i]
        text = arg.text
        if text.startswith("--") and len(text) > 2:
            name, eq, _ = text[2:].partition("=")
            key = name.replace("-", "_")
            if key in OWN_FLAGS and key not in ENGINE_SHARED:
                takes = OWN_FLAGS[key]
                if eq:
                    out.own[key] = (arg, value_arg(arg, len(name) + 3))
                    i += 1
                elif takes and i + 1 < len(args):
                    out.own[key] = (arg, args[i + 1])
                    i += 2
                else:
                    out.own[key] = (arg, None)
                    i += 1
                continue
        out.engine.append(arg)
        i += 1
    return out
