"""SGLang's own KV-pool sizing on CPU: independent test data for kvlint's capacity code.

    python tools/derive/sglang_pool.py [--releases 0.5.2]

For each release, in a child process with the stubs of tools/derive/sglang_stubs.py (fake H100, or
the case's `gpu`: one child per GPU; fake HF configs from the model catalog), every case in CASES
that exists in the release runs through the release's own code:
`ServerArgs(...)` post-init (which may disable the hybrid SWA pool, change page size or dtype),
`ModelConfig.from_server_args`, `ModelRunner.__init__` up to `model_specific_adjustment`, then
`ModelRunner.init_memory_pool(total_gpu_memory, max_total_tokens=...)`, stopped at the first pool
allocation (ReqToTokenPool). `get_available_gpu_memory` answers the case's memory left after the
weights; `get_attention_tp_size` the case's TP. The figures SGLang computes are read back from the
runner (max_total_num_tokens, full/swa split) and from the locals of `profile_max_num_token`
(cell_size, rest_memory, num_layers) at its return. Output: tests/data/sglang_pool/<release>.json.

Releases supported: those whose ModelRunner still has `profile_max_num_token` +
`init_memory_pool(total_gpu_memory, max_num_reqs, max_total_tokens)` (0.4.10 .. 0.5.x before the
pool-configurator refactor), and those with `mem_cache/kv_cache_configurator.py` (0.5.16 .. 0.5.2x),
driven through `KVCacheConfigurator._resolve_memory_pool_config` (`child_configurator`; 0.5.16-0.5.20
take fewer constructor fields and read the parallel groups from parallel_state, which the child
answers too). Other layouts are reported as unsupported, not guessed.
    python tools/derive/sglang_pool.py --releases 0.5.16,0.5.20   # the pre-0.5.21 FP4 / mxfp8 cases
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
OUT_DIR = REPO / "tests" / "data" / "sglang_pool"
CACHE = HERE / ".cache"
FORMAT = "kvlint/derived/sglang-pool/v1"
GiB = 1 << 30
DEFAULT_GPU = "sm90"  # fake H100 80GB (sglang_stubs.GPUS); cases name another with `gpu`

# (name, catalog model id, kv_cache_dtype, tp, total GiB at start, GiB left after weights,
#  mem_fraction_static, max_total_tokens, page_size). Memory figures are inputs: SGLang measures
# them at start-up (min free memory after distributed init; free memory after loading weights).
CASES: List[Dict[str, Any]] = [
    dict(name="llama8b-h100-bf16", model="meta-llama/Llama-3.1-8B-Instruct", kv="auto", tp=1,
         total_gib=79.1, avail_gib=64.1, mfs=0.83),
    dict(name="llama8b-h100-fp8", model="meta-llama/Llama-3.1-8B-Instruct", kv="fp8_e4m3", tp=1,
         total_gib=79.1, avail_gib=64.1, mfs=0.83),
    dict(name="llama8b-h100-fp8-cap", model="meta-llama/Llama-3.1-8B-Instruct", kv="fp8_e4m3", tp=1,
         total_gib=79.1, avail_gib=64.1, mfs=0.83, max_total_tokens=100000),
    dict(name="llama8b-h100-bf16-page16", model="meta-llama/Llama-3.1-8B-Instruct", kv="auto", tp=1,
         total_gib=79.1, avail_gib=64.1, mfs=0.83, page_size=16),
    dict(name="llama8b-l4-bf16", model="meta-llama/Llama-3.1-8B-Instruct", kv="auto", tp=1,
         total_gib=22.0, avail_gib=7.0, mfs=0.88),
    dict(name="llama70b-h100-tp4-bf16", model="meta-llama/Llama-3.1-70B-Instruct", kv="auto", tp=4,
         total_gib=79.1, avail_gib=45.9, mfs=0.79),
    dict(name="llama70b-h100-tp4-fp8", model="meta-llama/Llama-3.1-70B-Instruct", kv="fp8_e4m3", tp=4,
         total_gib=79.1, avail_gib=45.9, mfs=0.79),
    dict(name="qwen3-32b-h100-bf16", model="Qwen/Qwen3-32B", kv="auto", tp=1,
         total_gib=79.1, avail_gib=17.5, mfs=0.83),
    dict(name="qwen3-32b-h100-fp8-cap", model="Qwen/Qwen3-32B", kv="fp8_e4m3", tp=1,
         total_gib=79.1, avail_gib=17.5, mfs=0.83, max_total_tokens=50000),
    dict(name="qwen3-8b-a100-40g-bf16", model="Qwen/Qwen3-8B", kv="auto", tp=1,
         total_gib=39.4, avail_gib=24.0, mfs=0.77),
    dict(name="qwen3-8b-a100-40g-fp8", model="Qwen/Qwen3-8B", kv="fp8_e4m3", tp=1,
         total_gib=39.4, avail_gib=24.0, mfs=0.77),
    dict(name="mistral7b-h100-bf16", model="mistralai/Mistral-7B-Instruct-v0.3", kv="auto", tp=1,
         total_gib=79.1, avail_gib=65.5, mfs=0.83),
    dict(name="mistral7b-h100-fp8", model="mistralai/Mistral-7B-Instruct-v0.3", kv="fp8_e4m3", tp=1,
         total_gib=79.1, avail_gib=65.5, mfs=0.83),
    dict(name="gemma3-27b-h100-bf16", model="google/gemma-3-27b-it", kv="auto", tp=1,
         total_gib=79.1, avail_gib=27.9, mfs=0.83),
    dict(name="gemma3-27b-h100-fp8", model="google/gemma-3-27b-it", kv="fp8_e4m3", tp=1,
         total_gib=79.1, avail_gib=27.9, mfs=0.83),
    dict(name="gptoss20b-h100-bf16", model="openai/gpt-oss-20b", kv="auto", tp=1,
         total_gib=79.1, avail_gib=66.3, mfs=0.83),
    dict(name="gptoss20b-h100-fp8", model="openai/gpt-oss-20b", kv="fp8_e4m3", tp=1,
         total_gib=79.1, avail_gib=66.3, mfs=0.83),
    dict(name="gptoss120b-h100-bf16", model="openai/gpt-oss-120b", kv="auto", tp=1,
         total_gib=79.1, avail_gib=18.3, mfs=0.83),
    dict(name="gptoss120b-h100-bf16-cap", model="openai/gpt-oss-120b", kv="auto", tp=1,
         total_gib=79.1, avail_gib=18.3, mfs=0.83, max_total_tokens=200000, page_size=64),
    dict(name="deepseekv3-h200-tp8-bf16", model="deepseek-ai/DeepSeek-V3", kv="auto", tp=8,
         total_gib=139.8, avail_gib=55.0, mfs=0.81),
    dict(name="deepseekv3-h200-tp8-fp8", model="deepseek-ai/DeepSeek-V3", kv="fp8_e4m3", tp=8,
         total_gib=139.8, avail_gib=55.0, mfs=0.81),
]

# The hybrid sliding-window pool's two switches (server_args.py of every release from 0.4.10.post2):
# --swa-full-tokens-ratio (the SWA pool's tokens per full-pool token, default 0.8) and
# --disable-hybrid-swa-memory (one pool for every layer). 0.5.2 turns the hybrid pool off for
# gpt-oss by itself (model_specific_adjustments), so there the ratio must change nothing.
CASES += [
    dict(name="gptoss20b-h100-bf16-swa05", model="openai/gpt-oss-20b", kv="auto", tp=1,
         total_gib=79.1, avail_gib=66.3, mfs=0.83, swa_full_tokens_ratio=0.5),
    dict(name="gptoss20b-h100-fp8-swa1", model="openai/gpt-oss-20b", kv="fp8_e4m3", tp=1,
         total_gib=79.1, avail_gib=66.3, mfs=0.83, swa_full_tokens_ratio=1.0),
    dict(name="gptoss20b-h100-bf16-noswa", model="openai/gpt-oss-20b", kv="auto", tp=1,
         total_gib=79.1, avail_gib=66.3, mfs=0.83, disable_hybrid_swa_memory=True),
    dict(name="gptoss120b-h100-bf16-swa02-page64", model="openai/gpt-oss-120b", kv="auto", tp=1,
         total_gib=79.1, avail_gib=18.3, mfs=0.83, swa_full_tokens_ratio=0.2, page_size=64),
    dict(name="gptoss120b-h100-fp8-noswa-cap", model="openai/gpt-oss-120b", kv="fp8_e4m3", tp=1,
         total_gib=79.1, avail_gib=18.3, mfs=0.83, disable_hybrid_swa_memory=True, max_total_tokens=300000),
    dict(name="gemma3-27b-h100-bf16-swa05", model="google/gemma-3-27b-it", kv="auto", tp=1,
         total_gib=79.1, avail_gib=27.9, mfs=0.83, swa_full_tokens_ratio=0.5),
]

# Block-scaled KV dtypes of 0.5.23 on a fake B200 (gpu "sm100") or RTX PRO 6000 ("sm120"): mxfp8
# and nvfp4 are refused before SM100 by the release's own hooks (kv_cache_hook.py
# handle_mxfp8_kv_cache_compatibility, handle_kv4_compatibility). `backend` is
# --attention-backend (None: the release's own choice); nvfp4's pool depends on it (the
# FlashInfer prefill dequant workspace, the TRT-LLM native scale layout). Only configurations the
# release accepts are sized here; what it refuses (trtllm_mla with mxfp8 or FP4, native NVFP4 prefill
# on SM120, triton MLA with FP4) is in the truth tables (tools/derive/sglang_truth.py).
_B200 = dict(tp=1, total_gib=178.4, mfs=0.85, releases=("0.5.23",), gpu="sm100")
CASES += [
    dict(_B200, name="llama8b-b200-mxfp8", model="meta-llama/Llama-3.1-8B-Instruct", kv="mxfp8", avail_gib=163.0),
    dict(_B200, name="llama8b-b200-mxfp8-page128", model="meta-llama/Llama-3.1-8B-Instruct", kv="mxfp8",
         avail_gib=163.0, page_size=128),
    dict(_B200, name="llama70b-b200-tp4-mxfp8", model="meta-llama/Llama-3.1-70B-Instruct", kv="mxfp8",
         avail_gib=143.0, tp=4),
    dict(_B200, name="qwen3-32b-b200-mxfp8-cap", model="Qwen/Qwen3-32B", kv="mxfp8", avail_gib=116.0,
         max_total_tokens=300000),
    dict(_B200, name="gemma3-27b-b200-mxfp8", model="google/gemma-3-27b-it", kv="mxfp8", avail_gib=126.0),
    dict(_B200, name="gptoss20b-b200-mxfp8", model="openai/gpt-oss-20b", kv="mxfp8", avail_gib=165.0),
    dict(_B200, name="deepseekv3-b200-tp8-mxfp8-triton", model="deepseek-ai/DeepSeek-V3", kv="mxfp8",
         avail_gib=95.0, tp=8, backend="triton"),
    dict(_B200, name="deepseekv3-b200-tp8-mxfp8-flashinfer", model="deepseek-ai/DeepSeek-V3", kv="mxfp8",
         avail_gib=95.0, tp=8, backend="flashinfer"),
    dict(_B200, name="llama8b-b200-mxfp8-fa4", model="meta-llama/Llama-3.1-8B-Instruct", kv="mxfp8",
         avail_gib=163.0, backend="fa4"),
    dict(_B200, name="llama8b-b200-fp4mx16", model="meta-llama/Llama-3.1-8B-Instruct", kv="fp4_mx_block16",
         avail_gib=163.0),
    dict(_B200, name="llama8b-b200-fp4mx16-triton", model="meta-llama/Llama-3.1-8B-Instruct",
         kv="fp4_mx_block16", avail_gib=163.0, backend="triton"),
    dict(_B200, name="qwen3-32b-b200-fp4mx16", model="Qwen/Qwen3-32B", kv="fp4_mx_block16", avail_gib=116.0),
    dict(_B200, name="deepseekv3-b200-tp8-fp4mx16-flashinfer", model="deepseek-ai/DeepSeek-V3",
         kv="fp4_mx_block16", avail_gib=95.0, tp=8, backend="flashinfer"),
    dict(_B200, name="gptoss20b-b200-fp4mx16", model="openai/gpt-oss-20b", kv="fp4_mx_block16", avail_gib=165.0),
    dict(_B200, name="gptoss20b-b200-nvfp4", model="openai/gpt-oss-20b", kv="nvfp4", avail_gib=165.0),
    dict(_B200, name="llama8b-b200-nvfp4", model="meta-llama/Llama-3.1-8B-Instruct", kv="nvfp4", avail_gib=163.0),
    dict(_B200, name="llama8b-b200-nvfp4-trtllm", model="meta-llama/Llama-3.1-8B-Instruct", kv="nvfp4",
         avail_gib=163.0, backend="trtllm_mha"),
    dict(_B200, name="llama8b-b200-nvfp4-flashinfer", model="meta-llama/Llama-3.1-8B-Instruct", kv="nvfp4",
         avail_gib=163.0, backend="flashinfer"),
    dict(_B200, name="qwen3-32b-b200-nvfp4", model="Qwen/Qwen3-32B", kv="nvfp4", avail_gib=116.0),
    dict(_B200, name="llama8b-rtx6000-nvfp4", model="meta-llama/Llama-3.1-8B-Instruct", kv="nvfp4",
         total_gib=95.0, avail_gib=80.0, gpu="sm120"),
    dict(_B200, name="qwen3-32b-rtx6000-nvfp4-flashinfer", model="Qwen/Qwen3-32B", kv="nvfp4",
         total_gib=95.0, avail_gib=30.0, gpu="sm120", backend="flashinfer"),
    dict(_B200, name="deepseekv3-b200-tp8-nvfp4-flashinfer", model="deepseek-ai/DeepSeek-V3", kv="nvfp4",
         avail_gib=95.0, tp=8, backend="flashinfer"),
]

# The block-scaled dtypes of 0.5.16-0.5.20, whose pool configurator prices any FP4 recipe with one
# hand formula (model_executor/pool_configurator.py v0.5.16 _compute_cell_size L185-201 MLA,
# L262-277 MHA: FP4 data + block scales + one shared FP8 dequant workspace), before 0.5.21 asks the
# recipe (NVFP4KVCacheMethod / FP4MXBlock16KVCacheMethod.compute_cell_size). Each case is a
# configuration the release's own argument stage accepts (tools/derive/tables/sglang/0.5.16.json,
# 0.5.20.json); cutlass_mla is gone from 0.5.20's choices.
_KV4_OLD = dict(_B200, releases=("0.5.16", "0.5.20"))
CASES += [
    dict(_KV4_OLD, name="llama8b-b200-nvfp4-triton-r516", model="meta-llama/Llama-3.1-8B-Instruct", kv="nvfp4",
         avail_gib=163.0, backend="triton"),
    dict(_KV4_OLD, name="llama8b-b200-fp4mx16-triton-r516", model="meta-llama/Llama-3.1-8B-Instruct",
         kv="fp4_mx_block16", avail_gib=163.0, backend="triton"),
    dict(_KV4_OLD, name="llama8b-b200-nvfp4-trtllm-r516", model="meta-llama/Llama-3.1-8B-Instruct", kv="nvfp4",
         avail_gib=163.0, backend="trtllm_mha"),
    dict(_KV4_OLD, name="llama8b-rtx6000-nvfp4-triton-r516", model="meta-llama/Llama-3.1-8B-Instruct", kv="nvfp4",
         total_gib=95.0, avail_gib=80.0, gpu="sm120", backend="triton"),
    dict(_KV4_OLD, name="qwen3-32b-b200-nvfp4-torch-native-r516", model="Qwen/Qwen3-32B", kv="nvfp4",
         avail_gib=116.0, backend="torch_native"),
    dict(_KV4_OLD, name="deepseekv3-b200-tp8-nvfp4-flashinfer-r516", model="deepseek-ai/DeepSeek-V3", kv="nvfp4",
         avail_gib=95.0, tp=8, backend="flashinfer"),
    dict(_KV4_OLD, name="deepseekv3-b200-tp8-fp4mx16-flashinfer-r516", model="deepseek-ai/DeepSeek-V3",
         kv="fp4_mx_block16", avail_gib=95.0, tp=8, backend="flashinfer"),
    dict(_KV4_OLD, name="deepseekv3-b200-tp8-mxfp8-triton-r516", model="deepseek-ai/DeepSeek-V3", kv="mxfp8",
         avail_gib=95.0, tp=8, backend="triton"),
    dict(_KV4_OLD, name="deepseekv3-b200-tp8-mxfp8-flashinfer-r516", model="deepseek-ai/DeepSeek-V3", kv="mxfp8",
         avail_gib=95.0, tp=8, backend="flashinfer"),
    dict(_KV4_OLD, releases=("0.5.16",), name="deepseekv3-b200-tp8-nvfp4-cutlass-mla-r516",
         model="deepseek-ai/DeepSeek-V3", kv="nvfp4", avail_gib=95.0, tp=8, backend="cutlass_mla"),
    dict(_KV4_OLD, releases=("0.5.16",), name="deepseekv3-b200-tp8-mxfp8-cutlass-mla-r516",
         model="deepseek-ai/DeepSeek-V3", kv="mxfp8", avail_gib=95.0, tp=8, backend="cutlass_mla"),
]

# GPUs for which the release's default mem_fraction_static is recorded: (label, MiB, tp)
FRACTION_GPUS = [("H100-80GB-tp1", 81559, 1), ("A100-40GB-tp1", 40960, 1), ("L4-24GB-tp1", 23034, 1),
                 ("H100-80GB-tp8", 81559, 8)] + [
    (f"{gb}GB-tp{tp}", gb * 1024, tp) for gb in (16, 24, 40, 48, 80, 141, 192) for tp in (1, 2, 4, 8)] + [
    # --max-running-requests below the decode CUDA-graph default (caps it in 0.5.23)
    ("80GB-tp1-mrr64", 81920, 1, 64), ("24GB-tp4-mrr32", 24576, 4, 32)]


class _StopPool(Exception):
    pass


def capture_locals(code, sink: Dict[str, Any]):
    """Trace one function: at its return, copy its int/float locals into sink."""
    def tracer(frame, event, arg):
        if frame.f_code is not code:
            return None

        def local(frame, event, arg):
            if event == "return":
                for k, v in frame.f_locals.items():
                    if isinstance(v, (int, float)) and not isinstance(v, bool):
                        sink[k] = v
                sink["_return"] = arg
                sink["_lines"] = f"{code.co_firstlineno}"
            return local
        return local
    return tracer


def child(args) -> None:
    sys.path.insert(0, str(HERE))
    import sglang_stubs as stubs
    from sglang_models import hf_config_fields, load_catalog

    catalog = load_catalog()
    current: Dict[str, Any] = {}

    def get_config(*a, **k):
        f = dict(current["fields"])
        f["torch_dtype"] = stubs.dtype_of(f.get("torch_dtype"))
        if "text_config" in f:
            f["text_config"] = dict(f["text_config"], torch_dtype=f["torch_dtype"])
        return stubs.FakeHFConfig(**f)

    stubs.install(args.src, dict(stubs.GPUS[args.gpu]), get_config)
    sys.path.insert(1, args.deps)
    import sglang.srt.server_args as sa_mod
    src_root = os.path.abspath(args.src)
    out: Dict[str, Any] = {"cases": [], "provenance": {}}
    if (Path(args.src) / "sglang" / "srt" / "mem_cache" / "kv_cache_configurator.py").is_file():
        child_configurator(args, stubs, sa_mod, catalog, current, hf_config_fields, out)
        return
    try:
        from sglang.srt.model_executor import model_runner as mr
    except Exception as exc:  # noqa: BLE001
        out["unsupported"] = f"model_runner import failed: {exc}"
        Path(args.out).write_text(json.dumps(out, sort_keys=True))
        return
    Runner = mr.ModelRunner
    if not hasattr(Runner, "profile_max_num_token") or not hasattr(Runner, "init_memory_pool"):
        out["unsupported"] = ("this release sizes the pool outside ModelRunner.profile_max_num_token "
                              "(pool configurator); not driven")
        Path(args.out).write_text(json.dumps(out, sort_keys=True))
        return
    stubs.patch_sglang_functions()
    from sglang.srt.configs.model_config import ModelConfig

    import inspect
    for fn in (Runner.profile_max_num_token, Runner.init_memory_pool,
               getattr(Runner, "set_num_token_hybrid", None)):
        if fn is not None:
            lines, start = inspect.getsourcelines(fn)
            out["provenance"][fn.__name__] = (f"{os.path.relpath(inspect.getsourcefile(fn), src_root)}:"
                                              f"{fn.__name__}:{start}-{start + len(lines) - 1}")

    for case in cases_for(args.release, args.gpu):
        current["fields"] = hf_config_fields(case["model"], catalog)
        record: Dict[str, Any] = {"input": dict(case)}
        try:
            kwargs = dict(model_path=f"fake/{case['model']}", kv_cache_dtype=case["kv"],
                          tp_size=case["tp"], mem_fraction_static=case["mfs"], random_seed=0)
            if case.get("page_size"):
                kwargs["page_size"] = case["page_size"]
            if case.get("max_total_tokens"):
                kwargs["max_total_tokens"] = case["max_total_tokens"]
            for flag in ("swa_full_tokens_ratio", "disable_hybrid_swa_memory"):  # --swa-full-tokens-ratio,
                if flag in case:                                                  # --disable-hybrid-swa-memory
                    kwargs[flag] = case[flag]
            sa = sa_mod.ServerArgs(**kwargs)
            mc = ModelConfig.from_server_args(sa)
            runner = Runner.__new__(Runner)
            # ModelRunner.__init__ attribute set-up (the part before model loading), by hand:
            runner.server_args, runner.model_config = sa, mc
            runner.mem_fraction_static = sa.mem_fraction_static
            runner.device, runner.gpu_id = "cuda", 0
            runner.tp_rank, runner.tp_size, runner.pp_rank, runner.pp_size = 0, case["tp"], 0, 1
            runner.dp_size = sa.dp_size
            runner.is_draft_worker = False
            runner.spec_algorithm = mr.SpeculativeAlgorithm.from_string(sa.speculative_algorithm)
            runner.page_size = sa.page_size
            runner.req_to_token_pool = None
            runner.token_to_kv_pool_allocator = None
            runner.is_hybrid = mc.is_hybrid
            runner.use_mla_backend = mc.attention_arch == mr.AttentionArch.MLA
            runner.attention_chunk_size = getattr(mc, "attention_chunk_size", None)
            runner.is_multimodal = mc.is_multimodal
            runner.is_generation = True
            runner.is_multimodal_chunked_prefill_supported = True
            runner.model_specific_adjustment()
            # load_model() would set these from the loaded model; from the config instead:
            runner.dtype = mc.dtype
            runner.start_layer, runner.end_layer = 0, mc.num_hidden_layers
            runner.num_effective_layers = mc.num_hidden_layers
            # models with sliding layers report window - 1 (gpt_oss.py / gemma3_causal.py
            # get_attention_sliding_window_size); SGLang then turns on the hybrid SWA pool
            # unless server args disabled it (ModelRunner.__init__ after load_model)
            hf = mc.hf_text_config if hasattr(mc, "hf_text_config") else mc.hf_config
            window = getattr(hf, "sliding_window", None)
            runner.sliding_window_size = (window - 1) if window else None
            if (not sa.disable_hybrid_swa_memory and runner.sliding_window_size
                    and not any("Llama4" in a for a in mc.hf_config.architectures)):
                runner.is_hybrid = mc.is_hybrid = True
            types_ = getattr(hf, "layer_types", None) or []
            runner.model = _FakeModel(types_, runner.sliding_window_size)
            record["server_args"] = {k: stubs_json(getattr(sa, k, None)) for k in
                                     ("attention_backend", "kv_cache_dtype", "page_size", "disable_hybrid_swa_memory",
                                      "swa_full_tokens_ratio", "mem_fraction_static", "max_total_tokens")}
            record["is_hybrid_swa"] = bool(runner.is_hybrid)
            # Stub the measurements: memory left after weights (GiB) and the world group
            mr.get_available_gpu_memory = lambda *a, **k: case["avail_gib"]
            mr.get_world_group = lambda: _World()
            mr.get_attention_tp_size = lambda: case["tp"]
            original_pool = mr.ReqToTokenPool

            class _Stop:
                def __init__(self, *a, **k):
                    raise _StopPool
            mr.ReqToTokenPool = _Stop
            prof: Dict[str, Any] = {}
            hyb: Dict[str, Any] = {}
            tracers = {Runner.profile_max_num_token.__code__: prof}
            if hasattr(Runner, "set_num_token_hybrid"):
                tracers[Runner.set_num_token_hybrid.__code__] = hyb

            def tracer(frame, event, arg):
                sink = tracers.get(frame.f_code)
                if sink is None:
                    return None
                return capture_locals(frame.f_code, sink)(frame, event, arg)
            sys.settrace(tracer)
            try:
                params = inspect.signature(Runner.init_memory_pool).parameters
                call = {"total_gpu_memory": case["total_gib"]}
                if "max_total_tokens" in params:
                    call["max_total_tokens"] = case.get("max_total_tokens")
                if "max_num_reqs" in params:
                    call["max_num_reqs"] = None
                runner.init_memory_pool(**call)
            except _StopPool:
                pass
            finally:
                sys.settrace(None)
                mr.ReqToTokenPool = original_pool
            record["sglang"] = {
                "max_total_num_tokens": runner.max_total_num_tokens,
                "full_max_total_num_tokens": getattr(runner, "full_max_total_num_tokens", None),
                "swa_max_total_num_tokens": getattr(runner, "swa_max_total_num_tokens", None),
                "kv_cache_dtype_torch": str(runner.kv_cache_dtype),
                "profile_max_num_token": {k: v for k, v in prof.items() if not k.startswith("_lines")},
                "set_num_token_hybrid": {k: v for k, v in hyb.items() if k in
                                         ("total_tokens", "full_layers_num", "swa_layers_num",
                                          "swa_full_tokens_ratio", "denominator")},
            }
        except Exception as exc:  # noqa: BLE001
            import traceback
            record["error"] = f"{type(exc).__name__}: {exc}"[:400]
            record["where"] = traceback.format_exc().splitlines()[-3:]
        out["cases"].append(record)

    if args.gpu == DEFAULT_GPU:
        _default_fractions(stubs, sa_mod, catalog, current, hf_config_fields, out)
    Path(args.out).write_text(json.dumps(out, sort_keys=True, default=str))


def _default_fractions(stubs, sa_mod, catalog, current, hf_config_fields, out) -> None:
    """The release's default mem_fraction_static for a few GPUs (post-init on the fake GPU)."""
    fractions = {}
    current["fields"] = hf_config_fields("meta-llama/Llama-3.1-8B-Instruct", catalog)
    for label, mib, tp, *rest in FRACTION_GPUS:
        stubs.set_memory_mib(mib)
        try:
            extra = {"max_running_requests": rest[0]} if rest else {}
            sa = sa_mod.ServerArgs(model_path="fake/llama", tp_size=tp, random_seed=0, **extra)
            if hasattr(sa, "resolve_once"):
                sa.resolve_once()
            mfs = sa.mem_fraction_static
            if mfs is None:  # 0.5.2x resolve it into the published runtime context's schedule bag
                from sglang.srt import runtime_context as rc
                rc.get_context().set_server_args(sa)
                mfs = rc.get_schedule().mem_fraction_static
            fractions[label] = {"gpu_memory_mib": mib, "tp": tp, "mem_fraction_static": mfs, **extra}
        except Exception as exc:  # noqa: BLE001
            fractions[label] = {"error": str(exc)[:300]}
    out["default_mem_fraction_static"] = fractions


def child_configurator(args, stubs, sa_mod, catalog, current, hf_config_fields, out) -> None:
    """Releases that size the pool in `KVCacheConfigurator` (mem_cache/kv_cache_configurator.py,
    0.5.2x): the runtime context is published from the case's ServerArgs (as the launcher does),
    a KVCacheConfigurator is built with the fields ModelRunner.init_kv_cache_configurator passes
    (model_runner.py), and `_resolve_memory_pool_config(pre_model_load_memory=total)` runs with
    `get_available_gpu_memory` answering the memory left after the weights. Its own
    `_profile_available_bytes` (rest = available - pre * (1 - mfs) - multimodal reservation) and
    pool configurator (`create_memory_pool_configurator`: Default / HybridSWA) do the sizing."""
    import inspect


    from sglang.srt import runtime_context as rc
    from sglang.srt.configs.model_config import AttentionArch, ModelConfig
    from sglang.srt.mem_cache import kv_cache_configurator as kcc
    from sglang.srt.mem_cache import kv_cache_dtype as kvd
    from sglang.srt.model_executor import pool_configurator as pc
    from sglang.srt.model_executor.model_runner_components.layer_setup import ModelLayerInfo
    from sglang.srt.model_executor.model_runner_components.load_model_utils import (
        resolve_sliding_window_size,
    )
    from sglang.srt.model_executor.model_runner_components.spec_aux_hidden_state import (
        SpecAuxHiddenStateConfig,
    )
    from sglang.srt.speculative.spec_info import SpeculativeAlgorithm

    stubs.patch_sglang_functions()
    # FP4 recipes (nvfp4) allocate their per-layer global FP32 scales with torch.ones(device=...)
    # when built for the cell size (pool_configurator.py _compute_cell_size); CPU torch has no
    # "cuda" device, so those few floats go to the CPU. They are not part of the cell size.
    try:
        from sglang.srt.layers.quantization import fp4_kv_cache_quant_method as fq
    except Exception:  # noqa: BLE001 - releases without FP4 recipes
        fq = None
    if fq is not None and hasattr(fq, "get_kv_cache_quant_method"):
        build_method = fq.get_kv_cache_quant_method
        fq.get_kv_cache_quant_method = lambda name, **kw: build_method(name, **dict(kw, device="cpu"))
    src_root = os.path.abspath(args.src)
    for fn in (kcc.KVCacheConfigurator._profile_available_bytes,
               kcc.KVCacheConfigurator._resolve_memory_pool_config,
               pc.DefaultPoolConfigurator.calculate_pool_sizes,
               pc.HybridSWAPoolConfigurator.calculate_pool_sizes):
        lines, start = inspect.getsourcelines(fn)
        out["provenance"][fn.__qualname__] = (f"{os.path.relpath(inspect.getsourcefile(fn), src_root)}:"
                                              f"{fn.__qualname__}:{start}-{start + len(lines) - 1}")

    class _Group:  # the WORLD / TP / PP groups the profiling reads (one process, no peers)
        world_size = 1
        rank_in_group = 0
        cpu_group = None

    class _PS:  # 0.5.16-0.5.20 KVCacheConfigurator.ps (distributed/parallel_state_wrapper.py)
        attn_dp_size = 1
        pp_size = 1
        pp_rank = 0
        tp_size = 1
        tp_rank = 0

    def _fields_of(target, kwargs):
        """The keyword arguments `target` (a function, dataclass or msgspec Struct) takes."""
        names = getattr(target, "__struct_fields__", None)
        if names is None:
            names = inspect.signature(target).parameters
        return {k: v for k, v in kwargs.items() if k in names}

    parallel = rc.get_parallel()
    for module in (kcc, pc):
        # 0.5.16-0.5.20 ask parallel_state for the groups directly (kv_cache_configurator.py v0.5.16
        # L1534-1535, L1616: get_world_group())
        for name in [n for n in vars(module) if n.startswith("get_") and n.endswith("_group")]:
            setattr(module, name, lambda *a, **k: _Group())
    for case in cases_for(args.release, args.gpu):
        current["fields"] = hf_config_fields(case["model"], catalog)
        record: Dict[str, Any] = {"input": dict(case)}
        try:
            kwargs = dict(model_path=f"fake/{case['model']}", kv_cache_dtype=case["kv"],
                          tp_size=case["tp"], mem_fraction_static=case["mfs"], random_seed=0)
            if case.get("page_size"):
                kwargs["page_size"] = case["page_size"]
            if case.get("max_total_tokens"):
                kwargs["max_total_tokens"] = case["max_total_tokens"]
            for flag in ("swa_full_tokens_ratio", "disable_hybrid_swa_memory"):  # --swa-full-tokens-ratio,
                if flag in case:                                                  # --disable-hybrid-swa-memory
                    kwargs[flag] = case[flag]
            if case.get("backend"):
                kwargs["attention_backend"] = case["backend"]
            sa = sa_mod.ServerArgs(**kwargs)
            if hasattr(sa, "resolve_once"):
                sa.resolve_once()
            rc.get_context().set_server_args(sa)
            stamp = getattr(parallel, "_stamp", None)
            if stamp is None:
                # 0.5.16-0.5.20: ParallelContext holds only `_overrides` (runtime_context.py v0.5.16
                # L102-112) and reads every other width from parallel_state, which is not set up
                # here: the case's widths go there too
                stamp = parallel._overrides
                stamp.update(world_size=case["tp"], tp_size=case["tp"], attn_tp_size=case["tp"], pp_size=1,
                             attn_cp_size=1, attn_dcp_size=1, dcp_size=1, dcp_enabled=False, attn_dp_size=1,
                             world_rank=0, attn_cp_rank=0, dcp_rank=0, attn_dcp_rank=0)
            for name, value in (("world_group", _Group()), ("tp_group", _Group()), ("pp_group", _Group()),
                                ("attn_tp_group", _Group()), ("tp_rank", 0), ("pp_rank", 0),
                                ("attn_tp_rank", 0), ("attn_dp_rank", 0)):
                stamp[name] = value
            mc = ModelConfig.from_server_args(sa)
            layers = mc.num_hidden_layers
            # 0.5.16-0.5.20 take fewer fields (no SWA layer ids in ModelLayerInfo, no
            # speculative_draft_kv_cache_dtype, `ps` instead of attn_dp_size / pp_size, no
            # kv_cache_dtype_str): each is given what its signature names
            info = ModelLayerInfo(**_fields_of(ModelLayerInfo, dict(
                start_layer=0, end_layer=layers, num_effective_layers=layers,
                swa_attention_layer_ids=getattr(mc, "swa_attention_layer_ids", None),
                full_attention_layer_ids=getattr(mc, "full_attention_layer_ids", None))))
            # 0.5.16-0.5.20 keep the resolved arguments on ServerArgs (no get_model / get_schedule)
            kv_literal = rc.get_model().kv_cache_dtype if hasattr(rc, "get_model") else sa.kv_cache_dtype
            resolved, torch_dtype = kvd.configure_kv_cache_dtype(**_fields_of(kvd.configure_kv_cache_dtype, dict(
                server_args_kv_cache_dtype=kv_literal, model=None,
                model_dtype=mc.dtype, is_draft_worker=False, is_dflash=False,
                speculative_draft_attention_backend=None, speculative_draft_kv_cache_dtype=None)))
            page_size = rc.get_schedule().page_size if hasattr(rc, "get_schedule") else sa.page_size
            kvc = kcc.KVCacheConfigurator(**_fields_of(kcc.KVCacheConfigurator, dict(
                device="cuda", gpu_id=0, attn_dp_size=1, pp_size=1, ps=_PS(), pp_group=_Group(), model=None,
                model_config=mc, server_args=sa, kv_cache_dtype=torch_dtype,
                kv_cache_dtype_str=resolved if resolved is not None else kv_literal,
                model_dtype=mc.dtype, page_size=page_size,
                sliding_window_size=resolve_sliding_window_size(None, mc),
                spec_algorithm=SpeculativeAlgorithm.from_string(sa.speculative_algorithm),
                is_draft_worker=False, post_capture_kv_active=False,
                spec_aux_config=SpecAuxHiddenStateConfig(), is_hybrid_swa=mc.is_hybrid_swa,
                is_hybrid_swa_compress=False, use_mla_backend=mc.attention_arch == AttentionArch.MLA,
                layer_info=info, forward_stream=None, req_to_token_pool=None,
                token_to_kv_pool_allocator=None, memory_pool_config=None)))
            kcc.get_available_gpu_memory = lambda *a, **k: case["avail_gib"]
            prof: Dict[str, Any] = {}
            code = kcc.KVCacheConfigurator._profile_available_bytes.__code__
            sys.settrace(lambda frame, event, arg: capture_locals(code, prof)(frame, event, arg)
                         if frame.f_code is code else None)
            try:
                config = kvc._resolve_memory_pool_config(case["total_gib"])
            finally:
                sys.settrace(None)
            configurator = pc.create_memory_pool_configurator(kvc)
            record["server_args"] = {k: stubs_json(getattr(sa, k, None)) for k in
                                     ("attention_backend", "kv_cache_dtype", "page_size", "disable_hybrid_swa_memory",
                                      "swa_full_tokens_ratio", "mem_fraction_static", "max_total_tokens")}
            record["server_args"]["page_size"] = page_size
            record["is_hybrid_swa"] = bool(mc.is_hybrid_swa)
            record["attention_backends"] = _attention_backends(sa)
            record["sglang"] = {
                "max_total_num_tokens": config.max_total_num_tokens,
                "full_max_total_num_tokens": config.full_max_total_num_tokens,
                "swa_max_total_num_tokens": config.swa_max_total_num_tokens,
                "kv_cache_dtype_torch": str(torch_dtype),
                "configurator": type(configurator).__name__,
                "cell_size": getattr(configurator, "_cell_size", None),
                # HybridSWAPoolConfigurator's per-token bytes of one full / one SWA layer
                "full_per_token": getattr(configurator, "_full_per_token", None),
                "swa_per_token": getattr(configurator, "_swa_per_token", None),
                "profile_available_bytes": {k: v for k, v in prof.items()
                                            if k in ("available_gpu_memory", "slack_gb", "mm_reservation_gb",
                                                     "rest_memory", "_return")},
            }
        except Exception as exc:  # noqa: BLE001
            import traceback
            sys.settrace(None)
            record["error"] = f"{type(exc).__name__}: {exc}"[:400]
            record["where"] = traceback.format_exc().splitlines()[-3:]
        out["cases"].append(record)
    if args.gpu == DEFAULT_GPU:
        _default_fractions(stubs, sa_mod, catalog, current, hf_config_fields, out)
    Path(args.out).write_text(json.dumps(out, sort_keys=True, default=str))


def _attention_backends(sa) -> Any:
    """(prefill, decode) attention backends as the release resolves them (0.5.2x
    arg_groups/overrides.py attention_backends_of(resolved_view(...)), the same call the FP4
    quant method's configure_attention_backends_from_server_args makes); None where absent."""
    try:
        from sglang.srt.arg_groups.overrides import attention_backends_of, resolved_view
    except Exception:  # noqa: BLE001 - older releases
        return None
    return [stubs_json(b) for b in attention_backends_of(resolved_view(sa))]


def cases_for(release: str, gpu: str) -> List[Dict[str, Any]]:
    """The cases one child runs: those on its fake GPU that exist in its release."""
    return [c for c in CASES if c.get("gpu", DEFAULT_GPU) == gpu
            and ("releases" not in c or release in c["releases"])]


def stubs_json(v):
    return v if v is None or isinstance(v, (bool, int, float, str)) else str(v)


class _World:
    world_size = 1
    cpu_group = None


class _FakeModel:
    """What set_num_token_hybrid reads of the loaded model: model.layers[i].self_attn.attn
    .sliding_window_size and layer_id (from the config's layer_types)."""

    def __init__(self, layer_types, window):
        class _NS:
            pass
        layers = []
        for i, t in enumerate(layer_types):
            layer, attn, sa = _NS(), _NS(), _NS()
            attn.sliding_window_size = window if t == "sliding_attention" else -1
            sa.attn = attn
            layer.self_attn, layer.layer_id = sa, i
            layers.append(layer)
        self.model = _NS()
        self.model.layers = layers


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--src")
    ap.add_argument("--release")
    ap.add_argument("--gpu", default=DEFAULT_GPU)
    ap.add_argument("--out")
    ap.add_argument("--deps", default=str(CACHE / "sglang-deps"))
    ap.add_argument("--releases", default="0.5.2,0.5.23")
    ap.add_argument("--out-dir", default=str(OUT_DIR))
    ap.add_argument("--cache-dir", default=str(CACHE))
    args = ap.parse_args(argv)
    if args.child:
        child(args)
        return 0
    sys.path.insert(0, str(HERE))
    import sglang_truth
    import sglang_wheels
    sglang_truth.ensure_deps(Path(args.cache_dir))
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for version in args.releases.split(","):
        src = sglang_wheels.fetch(version, Path(args.cache_dir))
        env = dict(os.environ, PYTHONHASHSEED="0", PYTHONDONTWRITEBYTECODE="1")
        gpus = [DEFAULT_GPU] + sorted({c["gpu"] for c in CASES if c.get("gpu", DEFAULT_GPU) != DEFAULT_GPU
                                       and ("releases" not in c or version in c["releases"])})
        parts = []
        for gpu in gpus:  # one child per fake GPU: the platform is fixed at import time
            part = Path(args.cache_dir) / f"pool-{version}-{gpu}.json"
            proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", "--src", str(src),
                                   "--out", str(part), "--deps", args.deps, "--release", version, "--gpu", gpu],
                                  capture_output=True, text=True, env=env)
            if proc.returncode != 0:
                print(version, gpu, "child failed:", proc.stderr[-2000:])
                break
            parts.append(json.loads(part.read_text()))
        if len(parts) != len(gpus):
            continue
        doc = parts[0]
        by_name = {r["input"]["name"]: r for part in parts for r in part.get("cases", [])}
        doc["cases"] = [by_name[c["name"]] for c in CASES if c["name"] in by_name]
        doc.update({"format": FORMAT, "engine": "sglang", "release": version, "gib": GiB,
                    "inputs_note": "total_gib = total_gpu_memory passed to init_memory_pool; avail_gib = "
                                   "get_available_gpu_memory() after weights (both GiB, as SGLang measures)"})
        (out_dir / f"{version}.json").write_text(json.dumps(doc, sort_keys=True, indent=1) + "\n")
        print(version, len(doc.get("cases", [])), "cases", doc.get("unsupported", ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
