"""Child process of the llama.cpp smoke test (kvlint.smoke.llamacpp.run_case): create one context.

Reads a JSON spec on stdin (model path and llama_context_params fields), loads the model on the
CPU, calls `llama_init_from_model`, and prints one JSON line: whether the model loaded and the
context was created, `llama_n_ctx` / `llama_n_ctx_seq`, and everything llama.cpp logged (captured
with `llama_log_set`, so nothing reaches the terminal). Run apart from kvlint so that an abort
inside llama.cpp ends this process, not kvlint.
"""

from __future__ import annotations

import ctypes
import json
import sys
from typing import Any, Dict, List


def main() -> int:
    spec: Dict[str, Any] = json.loads(sys.stdin.read())
    import llama_cpp

    pieces: List[str] = []

    @llama_cpp.llama_log_callback  # type: ignore[misc]
    def capture(level: int, text: bytes, user_data: Any) -> None:
        pieces.append(text.decode("utf-8", errors="replace"))

    llama_cpp.llama_log_set(capture, ctypes.c_void_p(0))
    llama_cpp.llama_backend_init()
    result: Dict[str, Any] = {"model_loaded": False, "created": False, "n_ctx": None, "n_ctx_seq": None}
    result["llama_cpp_python"] = getattr(llama_cpp, "__version__", None)
    model_params = llama_cpp.llama_model_default_params()
    model_params.n_gpu_layers = 0
    model = llama_cpp.llama_model_load_from_file(spec["model"].encode(), model_params)
    if model:
        result["model_loaded"] = True
        params = llama_cpp.llama_context_default_params()
        params.n_ctx = int(spec["n_ctx"])
        params.n_seq_max = int(spec["n_seq_max"])
        params.kv_unified = bool(spec["kv_unified"])
        params.swa_full = bool(spec["swa_full"])
        params.n_ubatch = int(spec["n_ubatch"])
        params.n_batch = max(int(spec["n_ubatch"]), int(params.n_batch))
        params.flash_attn_type = int(spec["flash_attn_type"])
        params.type_k = int(spec["type_k"])
        params.type_v = int(spec["type_v"])
        params.n_threads = params.n_threads_batch = 1
        params.offload_kqv = False
        ctx = llama_cpp.llama_init_from_model(model, params)
        if ctx:
            result["created"] = True
            result["n_ctx"] = int(llama_cpp.llama_n_ctx(ctx))
            if hasattr(llama_cpp, "llama_n_ctx_seq"):
                result["n_ctx_seq"] = int(llama_cpp.llama_n_ctx_seq(ctx))
            llama_cpp.llama_free(ctx)
        llama_cpp.llama_model_free(model)
    try:
        result["system_info"] = llama_cpp.llama_print_system_info().decode("utf-8", errors="replace")
    except Exception:  # informational only
        result["system_info"] = None
    result["log"] = "".join(pieces)
    sys.stdout.write(json.dumps(result) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
