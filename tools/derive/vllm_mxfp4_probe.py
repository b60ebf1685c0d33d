"""Runs one vLLM release's own MXFP4 MoE weight code on the meta device and records what one
gpt-oss MoE layer keeps on each GPU after `process_weights_after_loading`, per backend and
tensor-parallel size, for tests/test_capacity_mxfp4_layout.py.

    .venv/bin/python tools/derive/vllm_mxfp4_probe.py ROOT [--triton-kernels DIR] \
        > tools/derive/tables/vllm_mxfp4_moe/<version>.json

ROOT is an extracted wheel (`wheels.fetch_release_source`, or `pip download --no-deps vllm==X`
unzipped). Importing the whole of vLLM needs its dependencies and a GPU platform; this probe needs
neither: it takes the few functions that size the expert tensors out of the release's source
files (by name, through `ast`) and runs them, unchanged, on `torch.device("meta")` tensors (shape
and dtype, no storage). What is run, per release:

- `Mxfp4MoEMethod.create_weights` (quantization/mxfp4.py), which allocates w13/w2 weight, scale
  and bias; from 0.12 the sizes it gets are first rounded by the backend
  (`mxfp4_round_up_hidden_size_and_intermediate_size`, fused_moe/oracle/mxfp4.py, 0.19), before
  that it rounds them itself;
- Marlin: `prepare_moe_fp4_layer_for_marlin` (<= 0.11) / `prepare_moe_mxfp4_layer_for_marlin`
  (0.19), marlin_utils_fp4.py, with marlin_utils.py's `marlin_permute_scales`, `get_scale_perms`,
  `marlin_permute_bias`, `mxfp4_marlin_process_scales`;
- Triton (matmul_ogs, SM90): the Hopper value and scale layouts' `swizzle_data` from the
  triton_kernels the release vendors (vllm/third_party/triton_kernels, from 0.12) or from
  --triton-kernels, applied as `_swizzle_mxfp4` (quantization/utils/mxfp4_utils.py) applies them.

Stubs (each as small as possible; nothing here picks a shape):
- `set_weight_attrs` does nothing (it tags parameters for the weight loader);
- `current_platform` answers is_rocm()/is_xpu() False (a CUDA GPU);
- `ops.gptq_marlin_repack` is the compiled op; its registered fake's shape formula
  (vllm/_custom_ops.py `_gptq_marlin_repack_fake`: (size_k // 16, size_n * 16 // (32 // bits)),
  the input dtype) stands in for it;
- `marlin_make_workspace_new` returns an empty int32 tensor (the real one is one int32 per SM x 4:
  under 3 KiB);
- `triton` / `triton.language`: `jit` returns the function, other names are inert (the layouts'
  Triton kernels are only defined, never run); `triton_kernels.target_info.cuda_capability_geq`
  is not called by the layouts used.

What the backends then keep (read from the release's process_weights_after_loading, cited in the
table as `keeps`): Marlin replaces every expert tensor by its repacked copy; Triton swizzles the
weights and scales into new tensors, deletes the old weights (`del layer.w13_weight`), keeps the
old scale parameters on the layer (never replaced or deleted) and turns the biases to float32;
FlashInfer TRT-LLM (SM100) keeps the padded shapes (its shuffles reshape back to them) with
float32 biases.
"""

from __future__ import annotations

import argparse
import ast
import enum
import importlib
import json
import sys
import types
from pathlib import Path

import torch

# gpt-oss MoE geometry (config.json): hidden_size, intermediate_size, num_local_experts,
# num_hidden_layers.
MODELS = {
    "openai/gpt-oss-120b": {"hidden": 2880, "intermediate": 2880, "experts": 128, "layers": 36,
                            "config": "https://huggingface.co/openai/gpt-oss-120b/blob/main/config.json"},
    "openai/gpt-oss-20b": {"hidden": 2880, "intermediate": 2880, "experts": 32, "layers": 24,
                           "config": "https://huggingface.co/openai/gpt-oss-20b/blob/main/config.json"},
}
TP = (1, 2, 4, 8)
MXFP4 = "vllm/model_executor/layers/quantization/mxfp4.py"
ORACLE = "vllm/model_executor/layers/fused_moe/oracle/mxfp4.py"
MARLIN_FP4 = "vllm/model_executor/layers/quantization/utils/marlin_utils_fp4.py"
MARLIN = "vllm/model_executor/layers/quantization/utils/marlin_utils.py"


def _grab(root: Path, rel: str, names, ns: dict) -> dict:
    """Execute the named top-level definitions (or `Class.method`, or a class) of one source file
    into `ns`; returns {name: first line} for the table's citations."""
    tree = ast.parse((root / rel).read_text(), rel)
    lines = {}
    for name in names:
        cls, _, meth = name.partition(".")
        node = next((n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name == cls), None)
        if node is None:
            raise LookupError(f"{rel}: no {cls}")
        if meth:
            node = next(n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == meth)
        lines[name] = f"{rel} L{node.lineno}-{node.end_lineno}"
        node = ast.fix_missing_locations(node)
        code = compile(ast.Module(body=[node], type_ignores=[]), str(root / rel), "exec")
        exec(code, ns)  # noqa: S102 - the release's own code
        if meth:
            ns[name] = ns.pop(meth)
    return lines


class _Platform:
    def is_rocm(self):
        return False

    def is_xpu(self):
        return False

    def is_cuda(self):
        return True


def _repack_fake(b_q_weight, perm, size_k, size_n, num_bits, is_a_8bit=False):
    # vllm/_custom_ops.py _gptq_marlin_repack_fake (0.11.0 L1004-1013, 0.19.0 L1179-1193)
    pack_factor = 32 // num_bits
    return torch.empty((size_k // 16, size_n * 16 // pack_factor), dtype=b_q_weight.dtype, device=b_q_weight.device)


def _round_up(x: int, y: int) -> int:  # vllm/utils round_up
    return ((x + y - 1) // y) * y


def _base_ns() -> dict:
    ns = {"torch": torch, "Parameter": torch.nn.Parameter, "set_weight_attrs": lambda *a, **k: None,
          "current_platform": _Platform(), "round_up": _round_up, "Enum": enum.Enum,
          "logger": types.SimpleNamespace(warning_once=lambda *a, **k: None, info_once=lambda *a, **k: None),
          "ops": types.SimpleNamespace(gptq_marlin_repack=_repack_fake),
          "marlin_make_workspace_new": lambda device, n=1: torch.empty(0, dtype=torch.int32, device=device),
          "get_marlin_input_dtype": lambda prefix=None: None}
    ns["__builtins__"] = __builtins__
    return ns


def _layouts(tk_root: Path):
    """The Hopper value/scale layout classes of one triton_kernels tree, imported under stubs."""
    for name in [m for m in sys.modules if m == "triton_kernels" or m.startswith("triton_kernels.")]:
        del sys.modules[name]
    triton = types.ModuleType("triton")
    triton.jit = lambda fn=None, **k: fn if fn is not None else (lambda f: f)
    lang = types.ModuleType("triton.language")
    lang.__getattr__ = lambda name: object  # constexpr annotations etc.
    triton.language = lang
    saved = {k: sys.modules.get(k) for k in ("triton", "triton.language")}
    sys.modules["triton"], sys.modules["triton.language"] = triton, lang
    for pkg, sub in (("triton_kernels", ""), ("triton_kernels.tensor_details", "tensor_details"),
                     ("triton_kernels.tensor_details.layout_details", "tensor_details/layout_details")):
        mod = types.ModuleType(pkg)
        mod.__path__ = [str(tk_root / sub) if sub else str(tk_root)]
        sys.modules[pkg] = mod
    target = types.ModuleType("triton_kernels.target_info")
    target.cuda_capability_geq = lambda *a: True
    sys.modules["triton_kernels.target_info"] = target
    value = importlib.import_module("triton_kernels.tensor_details.layout_details.hopper_value")
    scale = importlib.import_module("triton_kernels.tensor_details.layout_details.hopper_scale")
    # the stub stays only in the layouts' globals: torch must not see a `triton` package (it would
    # take it for the real one)
    for k, v in saved.items():
        if v is None:
            sys.modules.pop(k, None)
        else:
            sys.modules[k] = v
    return value.HopperMXValueLayout, scale.HopperMXScaleLayout


def _kept(tensors: dict) -> dict:
    return {k: {"shape": list(v.shape), "dtype": str(v.dtype).replace("torch.", ""),
                "bytes": v.numel() * v.element_size()} for k, v in tensors.items()}


def probe(root: Path, tk_root) -> dict:
    version = next(root.glob("vllm-*.dist-info")).name[len("vllm-"):-len(".dist-info")]
    ns = _base_ns()
    src = (root / MXFP4).read_text()
    new_api = "mxfp4_round_up_hidden_size_and_intermediate_size" in src  # 0.12+: sizes rounded by the oracle
    cites = {}
    if new_api:
        cites.update(_grab(root, ORACLE, ["Mxfp4MoeBackend", "mxfp4_round_up_hidden_size_and_intermediate_size"], ns))
        ns["TRTLLM_BACKENDS"] = (ns["Mxfp4MoeBackend"].FLASHINFER_TRTLLM_MXFP4_BF16,
                                 ns["Mxfp4MoeBackend"].FLASHINFER_TRTLLM_MXFP4_MXFP8)
        enum_cls = ns["Mxfp4MoeBackend"]
        backends = {"MARLIN": enum_cls.MARLIN, "TRITON": enum_cls.TRITON,
                    "FLASHINFER_TRTLLM_MXFP4_BF16": enum_cls.FLASHINFER_TRTLLM_MXFP4_BF16,
                    "FLASHINFER_CUTLASS_MXFP4_BF16": enum_cls.FLASHINFER_CUTLASS_MXFP4_BF16}
    elif "class Mxfp4Backend" in src:
        cites.update(_grab(root, MXFP4, ["Mxfp4Backend"], ns))
        enum_cls = ns["Mxfp4Backend"]
        backends = {"MARLIN": enum_cls.MARLIN, "TRITON": enum_cls.TRITON,
                    "FLASHINFER_TRTLLM_MXFP4_BF16": enum_cls.SM100_FI_MXFP4_BF16,
                    "FLASHINFER_CUTLASS_MXFP4_BF16": enum_cls.SM90_FI_MXFP4_BF16}
    else:
        raise SystemExit(f"vLLM {version}: no Mxfp4Backend in {MXFP4} (0.10.x selects with use_marlin)")
    cites.update(_grab(root, MXFP4, ["Mxfp4MoEMethod.create_weights"], ns))
    marlin_fn = "prepare_moe_mxfp4_layer_for_marlin" if new_api else "prepare_moe_fp4_layer_for_marlin"
    cites.update(_grab(root, MARLIN, ["get_scale_perms", "marlin_permute_scales", "marlin_permute_bias"], ns))
    cites.update(_grab(root, MARLIN_FP4, ["mxfp4_marlin_process_scales", marlin_fn], ns))
    # Triton: whether the release deletes the loaded scale parameters after swizzling them (0.25:
    # `del layer.w13_weight_scale` in convert_to_mxfp4_moe_kernel_format); before, they stay
    triton_src = (root / (ORACLE if new_api else MXFP4)).read_text()
    drops_scales = "del layer.w13_weight_scale" in triton_src
    if drops_scales:
        at = triton_src[:triton_src.index("del layer.w13_weight_scale")].count("\n") + 1
        cites["triton drops the loaded scales"] = f"{ORACLE if new_api else MXFP4} L{at}"
    vendored = root / "vllm/third_party/triton_kernels"
    tk = vendored if vendored.is_dir() else tk_root
    value_layout = scale_layout = None
    if tk is not None:
        value_layout, scale_layout = _layouts(Path(tk))
    out = {"generator": "tools/derive/vllm_mxfp4_probe.py", "vllm": version, "sources": cites,
           "triton_kernels": ("vendored: vllm/third_party/triton_kernels" if tk == vendored
                              else (f"not shipped by this release; stand-in: {tk}" if tk else None)),
           "what": "bytes one MoE layer's experts keep on one GPU after process_weights_after_loading",
           "models": {}}
    for model, g in MODELS.items():
        rows = {}
        for name, backend in backends.items():
            for tp in TP:
                rows.setdefault(name, {})[str(tp)] = _one(ns, new_api, backend, name, g, tp, marlin_fn,
                                                          value_layout, scale_layout, drops_scales)
        checkpoint = {}
        for tp in TP:
            i = g["intermediate"] // tp
            e, h = g["experts"], g["hidden"]
            checkpoint[str(tp)] = (e * 2 * i * h // 2 + e * 2 * i * h // 32 + e * 2 * i * 2
                                   + e * h * i // 2 + e * h * i // 32 + e * h * 2)
        out["models"][model] = {"geometry": g, "checkpoint_layer_bytes": checkpoint, "backends": rows}
    return out


def _one(ns, new_api, backend, name, g, tp, marlin_fn, value_layout, scale_layout, drops_scales) -> dict:
    hidden, inter = g["hidden"], g["intermediate"] // tp
    layer = torch.nn.Module()
    self = types.SimpleNamespace(mxfp4_backend=backend, moe=types.SimpleNamespace(has_bias=True))
    if new_api:
        hidden, inter = ns["mxfp4_round_up_hidden_size_and_intermediate_size"](backend, hidden, inter)
    with torch.device("meta"):
        # weight_loader: what FusedMoE passes in extra_weight_attrs (0.28 pops it; earlier releases
        # only tag the parameters with it)
        ns["Mxfp4MoEMethod.create_weights"](self, layer, g["experts"], hidden, inter, torch.bfloat16,
                                            weight_loader=lambda *a, **k: None)
        params = {k: v.data for k, v in layer.named_parameters()}
        padded = {"hidden": params["w13_weight"].shape[2] * 2, "intermediate": params["w13_weight"].shape[1] // 2}
        if name == "MARLIN":
            layer.params_dtype = torch.bfloat16
            if new_api:
                w13, w2, s13, s2, b13, b2 = ns[marlin_fn](layer, params["w13_weight"], params["w2_weight"],
                                                         params["w13_weight_scale"], params["w2_weight_scale"],
                                                         params["w13_bias"], params["w2_bias"])
                kept = {"w13_weight": w13, "w2_weight": w2, "w13_weight_scale": s13, "w2_weight_scale": s2,
                        "w13_bias": b13, "w2_bias": b2}
            else:
                ns[marlin_fn](layer)
                kept = {k: v.data for k, v in layer.named_parameters()}
            keeps = "every expert tensor replaced by its Marlin copy"
        elif name == "TRITON":
            if value_layout is None:
                return {"padded": padded, "unknown": "no triton_kernels source for this release"}
            kept = {}
            for w in ("w13", "w2"):
                # _swizzle_mxfp4: transpose so the quantization axis is dim 1, then convert_layout
                # (layout_cls(data.shape, **opts).swizzle_data(data)) with mx_axis=1, num_warps=8
                q = params[f"{w}_weight"].transpose(-2, -1)
                s = params[f"{w}_weight_scale"].transpose(-2, -1)
                kept[f"{w}_weight_swizzled"] = value_layout(list(q.shape), mx_axis=1).swizzle_data(q)
                kept[f"{w}_weight_scale_swizzled"] = scale_layout(list(s.shape), mx_axis=1, num_warps=8).swizzle_data(s)
                if not drops_scales:  # the loaded parameter stays on the layer
                    kept[f"{w}_weight_scale"] = params[f"{w}_weight_scale"]
                kept[f"{w}_bias"] = params[f"{w}_bias"].to(torch.float32)
            keeps = ("weights swizzled, originals deleted; swizzled scales"
                     + ("" if drops_scales else " plus the loaded scale parameters") + "; biases float32")
        elif name == "FLASHINFER_TRTLLM_MXFP4_BF16":
            kept = dict(params)
            kept["w13_bias"] = params["w13_bias"].to(torch.float32)
            kept["w2_bias"] = params["w2_bias"].to(torch.float32)
            keeps = "padded shapes (shuffles reshape back); biases float32; gemm1 alpha/beta/clamp E x 4 B each"
        else:  # FlashInfer CUTLASS BF16 (SM90, opt-in): swapped/interleaved copies, same sizes, bf16 biases
            kept = dict(params)
            keeps = "padded shapes (swaps and interleaves keep the element count); biases bf16"
    tensors = _kept(kept)
    return {"padded": padded, "keeps": keeps, "tensors": tensors,
            "layer_bytes": sum(t["bytes"] for t in tensors.values())}


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("root")
    ap.add_argument("--triton-kernels", default=None,
                    help="a triton_kernels tree for a release that does not vendor one")
    a = ap.parse_args()
    print(json.dumps(probe(Path(a.root).resolve(), a.triton_kernels), indent=1))
