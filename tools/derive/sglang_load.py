"""What SGLang's own model code allocates on the GPU while it loads a dense model: test data for
kvlint/capacity/sglang_load.py.

    python tools/derive/sglang_load.py [--releases 0.4.3.post4 0.4.10.post2 0.5.2 0.5.9]

For each release (its wheel unpacked in tools/derive/.cache/sglang-<release>/, e.g.
`pip download --no-deps sglang==0.4.3.post4`), in a child process with the stubs of
tools/derive/sglang_stubs.py (a fake CUDA device, so SGLang takes its CUDA code paths; packages
that are not installed are placeholders), every case in CASES builds the release's own model class
(`Qwen2ForCausalLM`, `LlamaForCausalLM`, from 0.4.6 `Qwen3ForCausalLM`) on torch's `meta` device with the tensor-parallel size
answered by `get_tensor_model_parallel_world_size`. Nothing is computed on data: the meta device
records shapes and dtypes only. A TorchDispatchMode logs every tensor the construction creates,
in order, and whether it is still held at the end (a parameter or buffer) or was a temporary
(the rotary cos/sin computation). Output: tests/data/sglang_load/<release>.json, per case the
tensors in creation order as [name, bytes] (temporaries named `tmp:<op>`).

The weights loaded afterwards are copied into these tensors (model_loader/loader.py
DefaultModelLoader.load_model: `with torch.device(device)` around `_initialize_model`, then
`model.load_weights`, CPU safetensors copied in place), so they allocate no further GPU memory for
an unquantized checkpoint.

Releases that run: 0.4.3.post4, 0.4.10.post2, 0.5.2, 0.5.9 (later releases also read the global
server args and group coordinators at construction; both are answered with defaults: one stage,
attention TP = TP). 0.5.23 stops in the stubs (its PlatformCapabilities placeholder takes no
arguments) and is not derived.
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
OUT_DIR = REPO / "tests" / "data" / "sglang_load"
CACHE = HERE / ".cache"
FORMAT = "kvlint/derived/sglang-load/v1"

# config.json fields of the models (each from the model's Hugging Face config.json).
QWQ_32B = dict(architectures=["Qwen2ForCausalLM"], hidden_size=5120, intermediate_size=27648,
               num_hidden_layers=64, num_attention_heads=40, num_key_value_heads=8,
               max_position_embeddings=131072, rms_norm_eps=1e-5, rope_theta=1000000.0, rope_scaling=None,
               tie_word_embeddings=False, vocab_size=152064, hidden_act="silu", pad_token_id=None)
QWEN25_05B = dict(architectures=["Qwen2ForCausalLM"], hidden_size=896, intermediate_size=4864,
                  num_hidden_layers=24, num_attention_heads=14, num_key_value_heads=2,
                  max_position_embeddings=32768, rms_norm_eps=1e-6, rope_theta=1000000.0, rope_scaling=None,
                  tie_word_embeddings=True, vocab_size=151936, hidden_act="silu", pad_token_id=None)
LLAMA31_8B = dict(architectures=["LlamaForCausalLM"], hidden_size=4096, intermediate_size=14336,
                  num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=8,
                  max_position_embeddings=131072, rms_norm_eps=1e-5, rope_theta=500000.0,
                  rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                "high_freq_factor": 4.0, "original_max_position_embeddings": 8192},
                  tie_word_embeddings=False, vocab_size=128256, hidden_act="silu", pad_token_id=None)
# Sources of the configs: https://huggingface.co/Qwen/QwQ-32B/blob/main/config.json,
# https://huggingface.co/Qwen/Qwen2.5-0.5B-Instruct/blob/main/config.json,
# https://huggingface.co/meta-llama/Llama-3.1-8B-Instruct/blob/main/config.json
CASES: List[Dict[str, Any]] = [
    dict(name="qwq-32b-tp4", module="qwen2", cls="Qwen2ForCausalLM", config=QWQ_32B, tp=4),
    dict(name="qwq-32b-tp1", module="qwen2", cls="Qwen2ForCausalLM", config=QWQ_32B, tp=1),
    dict(name="qwen25-05b-tp1", module="qwen2", cls="Qwen2ForCausalLM", config=QWEN25_05B, tp=1),
    dict(name="qwen25-05b-tp2", module="qwen2", cls="Qwen2ForCausalLM", config=QWEN25_05B, tp=2),
    dict(name="llama31-8b-tp1", module="llama", cls="LlamaForCausalLM", config=LLAMA31_8B, tp=1),
    dict(name="llama31-8b-tp2", module="llama", cls="LlamaForCausalLM", config=LLAMA31_8B, tp=2),
]
# Qwen3 (q_norm/k_norm per layer, no qkv bias) from 0.4.6; https://huggingface.co/Qwen/Qwen3-8B/blob/main/config.json
QWEN3_8B = dict(architectures=["Qwen3ForCausalLM"], hidden_size=4096, intermediate_size=12288,
                num_hidden_layers=36, num_attention_heads=32, num_key_value_heads=8, head_dim=128,
                max_position_embeddings=40960, rms_norm_eps=1e-6, rope_theta=1000000.0, rope_scaling=None,
                tie_word_embeddings=False, vocab_size=151936, hidden_act="silu", pad_token_id=None,
                attention_bias=False)
CASES_SINCE_046: List[Dict[str, Any]] = [
    dict(name="qwen3-8b-tp1", module="qwen3", cls="Qwen3ForCausalLM", config=QWEN3_8B, tp=1),
    dict(name="qwen3-8b-tp2", module="qwen3", cls="Qwen3ForCausalLM", config=QWEN3_8B, tp=2),
]


def cases_for(release: str) -> List[Dict[str, Any]]:
    if release.startswith("0.4.") and int(release.split(".")[2].split("post")[0]) < 6:
        return CASES
    return CASES + CASES_SINCE_046


def child(args) -> None:
    # torch first: the placeholder importer must not stand in for torch's own optional modules
    import torch
    import torch.distributed  # noqa: F401
    import torch.distributed.fsdp  # noqa: F401
    from torch.utils._python_dispatch import TorchDispatchMode

    sys.path.insert(0, str(HERE))
    import sglang_stubs as stubs

    stubs.install(args.src, dict(stubs.GPUS["sm89"]), stubs.hf_config_factory({}))
    import importlib

    import sglang.srt.distributed as dist
    import sglang.srt.distributed.parallel_state as ps
    import sglang.srt.layers.dp_attention as dpa

    torch.cuda.Stream = lambda *a, **k: None  # Qwen3 builds an alternate stream on CUDA; no memory
    tp_size = {"value": 1}

    class OneStage:  # pipeline parallelism 1 (later releases ask for the PP group at construction)
        world_size, rank_in_group, rank, is_first_rank, is_last_rank = 1, 0, 0, True, True

    for mod in (dist, ps):
        mod.get_tensor_model_parallel_world_size = lambda *a, **k: tp_size["value"]
        mod.get_tensor_model_parallel_rank = lambda *a, **k: 0
        mod.get_pp_group = lambda *a, **k: OneStage()

    class Log(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.events: List[Any] = []
            self.keep: List[Any] = []  # hold every output: no storage is freed and reused meanwhile

        def __torch_dispatch__(self, func, types, a=(), kw=None):
            out = func(*a, **(kw or {}))
            outs = out if isinstance(out, (tuple, list)) else (out,)
            for i, o in enumerate(outs):
                aliased = i < len(func._schema.returns) and func._schema.returns[i].alias_info is not None
                if isinstance(o, torch.Tensor) and not aliased:
                    self.keep.append(o)
                    self.events.append((str(func.overloadpacket.__name__),
                                        o.untyped_storage()._cdata, o.untyped_storage().nbytes()))
            return out

    import dataclasses

    import sglang.srt.server_args as sa
    if hasattr(sa, "set_global_server_args_for_scheduler"):
        # later releases read global server args at construction: the dataclass defaults, without
        # __post_init__ (which would resolve a real model and device)
        defaults = object.__new__(sa.ServerArgs)
        for f in dataclasses.fields(sa.ServerArgs):
            value = (f.default if f.default is not dataclasses.MISSING
                     else f.default_factory() if f.default_factory is not dataclasses.MISSING else None)
            object.__setattr__(defaults, f.name, value)
        sa.set_global_server_args_for_scheduler(defaults)

    out: Dict[str, Any] = {"format": FORMAT, "release": args.release, "cases": [],
                           "stubbed": None}
    for case in cases_for(args.release):
        tp_size["value"] = case["tp"]
        # attention TP = TP, one data-parallel rank (names of 0.4.x and of 0.5.x)
        for name, value in (("_ATTN_TP_RANK", 0), ("_ATTN_TP_SIZE", case["tp"]), ("_DP_RANK", 0), ("_DP_SIZE", 1),
                            ("_ATTN_DP_RANK", 0), ("_ATTN_DP_SIZE", 1), ("_LOCAL_ATTN_DP_RANK", 0),
                            ("_LOCAL_ATTN_DP_SIZE", 1)):
            setattr(dpa, name, value)

        class Group:  # later releases read sizes from group coordinators
            def __init__(self, size):
                self.world_size, self.rank_in_group, self.rank = size, 0, 0
                self.is_first_rank = self.is_last_rank = True

        for name, size in (("_TP", case["tp"]), ("_ATTN_TP", case["tp"]), ("_ATTN_CP", 1), ("_PP", 1),
                           ("_MOE_TP", case["tp"]), ("_MOE_EP", 1)):
            if hasattr(ps, name):
                setattr(ps, name, Group(size))
        module = importlib.import_module(f"sglang.srt.models.{case['module']}")
        rope = importlib.import_module("sglang.srt.layers.rotary_embedding")
        rope._ROPE_DICT.clear()
        config = stubs.FakeHFConfig(**case["config"], torch_dtype=torch.bfloat16)
        torch.set_default_dtype(torch.bfloat16)
        log = Log()
        with torch.device("meta"), log:
            model = getattr(module, case["cls"])(config, quant_config=None)
        held = {}
        for name, t in list(model.named_parameters()) + list(model.named_buffers()):
            held.setdefault(t.untyped_storage()._cdata, name)
        tensors = []
        for op, cdata, nbytes in log.events:
            tensors.append([held.get(cdata, f"tmp:{op}"), nbytes])
        record = {"input": {k: v for k, v in case.items() if k != "config"},
                  "config": case["config"], "tensors": tensors,
                  "held_bytes": sum(n for name, n in tensors if not name.startswith("tmp:")),
                  "rope_cache_dtypes": sorted({str(t.dtype) for name, t in model.named_buffers()
                                               if name.endswith("cos_sin_cache")})}
        out["cases"].append(record)
        torch.set_default_dtype(torch.float32)
    out["stubbed"] = sorted(set(stubs.STUBBED))
    print(json.dumps(out))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--releases", nargs="*", default=["0.4.3.post4", "0.4.10.post2", "0.5.2", "0.5.9"])
    parser.add_argument("--child", action="store_true")
    parser.add_argument("--src")
    parser.add_argument("--release")
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    for release in args.releases:
        src = CACHE / f"sglang-{release}"
        if not (src / "sglang").is_dir():
            raise SystemExit(f"{src}/sglang missing: pip download --no-deps sglang=={release} there and unzip it")
        proc = subprocess.run([sys.executable, __file__, "--child", "--src", str(src), "--release", release],
                              capture_output=True, text=True, env=dict(os.environ, PYTHONHASHSEED="0"))
        if proc.returncode != 0:
            raise SystemExit(f"{release}: child failed\n{proc.stderr[-4000:]}")
        data = json.loads(proc.stdout.strip().splitlines()[-1])
        path = OUT_DIR / f"{release}.json"
        # one line per case: the tensor lists are long and only ever read by the tests
        cases = ",\n  ".join(json.dumps(case, sort_keys=True, separators=(",", ":")) for case in data["cases"])
        head = json.dumps({k: v for k, v in data.items() if k != "cases"}, sort_keys=True)[:-1]
        path.write_text(f'{head}, "cases": [\n  {cases}\n]}}\n')
        print(f"{path.relative_to(REPO)}: {len(data['cases'])} cases")


if __name__ == "__main__":
    main()
