"""The device the smoke test runs on, what its kernels need, and what the engine would pick."""

from __future__ import annotations

import importlib.util
import inspect
from dataclasses import field
from typing import Any, Dict, List, Optional, Tuple

import torch

from kvlint.records import dataclass


class DeviceUnavailable(RuntimeError):
    """The requested device is not usable here (exit code 3: could not run)."""


@dataclass(frozen=True)
class DeviceInfo:
    """The device a smoke test runs on, and the torch and Triton versions there."""

    device: torch.device
    name: str
    capability: Optional[Tuple[int, int]]  # CUDA compute capability; None on CPU
    torch_version: str
    triton_version: Optional[str]
    is_rocm: bool = False

    @property
    def is_cuda(self) -> bool:
        return self.device.type == "cuda"

    def as_dict(self) -> Dict[str, Any]:
        return {
            "type": self.device.type,
            "name": self.name,
            "capability": list(self.capability) if self.capability else None,
            "torch": self.torch_version,
            "triton": self.triton_version,
            "rocm": self.is_rocm,
        }


def select_device(requested: str) -> DeviceInfo:
    if requested not in ("auto", "cuda", "cpu"):
        raise ValueError(f"unknown device {requested!r}: expected auto, cuda or cpu")
    cuda = torch.cuda.is_available()
    if requested == "cuda" and not cuda:
        raise DeviceUnavailable(
            "--device cuda: no CUDA device is visible to torch "
            f"(torch {torch.__version__}, built with CUDA {torch.version.cuda or 'none'})"
        )
    if requested == "cpu" or not cuda:
        import platform

        return DeviceInfo(torch.device("cpu"), platform.processor() or platform.machine() or "cpu", None, torch.__version__, _triton_version())
    dev = torch.device("cuda", torch.cuda.current_device())
    return DeviceInfo(
        dev,
        torch.cuda.get_device_name(dev),
        tuple(torch.cuda.get_device_capability(dev)),  # type: ignore[arg-type]
        torch.__version__,
        _triton_version(),
        is_rocm=torch.version.hip is not None,
    )


def _triton_version() -> Optional[str]:
    if importlib.util.find_spec("triton") is None:
        return None
    try:
        import triton

        return str(triton.__version__)
    except Exception:
        return None


# --------------------------------------------------------------------------- kernel requirements

# Minimum NVIDIA compute capability for a kernel that reads the format natively, with the reason.
# Triton's fp8e4nv (OCP E4M3) needs SM89 ("supported fp8 dtypes are ('fp8e4b15', 'fp8e5')" below;
# kvcache-ai/ktransformers#1978, vllm-project/vllm#26431); vLLM TRITON_ATTN raises for fp8 below
# SM89 and for bf16 below SM80 (vllm/v1/attention/backends/triton_attn.py L510-524, v0.33.0);
# FP4 (E2M1) tensor-core formats need SM100 (Blackwell).
_FORMAT_MIN_CAPABILITY: Dict[str, Tuple[Tuple[int, int], str]] = {
    "bf16": ((8, 0), "BF16 attention kernels need SM80+"),
    "fp8_e4m3": ((8, 9), "Triton FP8 E4M3 (fp8e4nv) needs SM89+"),
    "fp8_per_token_head": ((8, 9), "Triton FP8 E4M3 (fp8e4nv) needs SM89+"),
    "fp8_e5m2": ((8, 0), "FP8 E5M2 kernels need SM80+"),
    "fp8_e5m2_per_token_head": ((8, 0), "FP8 E5M2 kernels need SM80+"),
    "int8": ((8, 0), "BF16 attention kernels need SM80+"),
    "int8_per_token_head": ((8, 0), "BF16 attention kernels need SM80+"),
    "int4_per_token_head": ((8, 0), "BF16 attention kernels need SM80+"),
    "nvfp4": ((10, 0), "FP4 (E2M1) KV kernels need SM100+"),
    "trtllm_nvfp4": ((10, 0), "FP4 (E2M1) KV kernels need SM100+"),
    "sglang_fp4": ((10, 0), "FP4 (E2M1) KV kernels need SM100+"),
    "sglang_nvfp4": ((10, 0), "FP4 (E2M1) KV kernels need SM100+"),
    # SGLang refuses mxfp8 before Blackwell (arg_groups/kv_cache_hook.py v0.5.23
    # handle_mxfp8_kv_cache_compatibility: "requires an SM100+ (Blackwell) GPU")
    "sglang_mxfp8": ((10, 0), "MXFP8 KV (FA4 block-scaled operands) needs SM100+"),
}

# Backend-specific floors for quantized caches: FLASH_ATTN FP8 needs FA3 on SM90, or FA4 on SM100
# from 0.27 (vllm/v1/attention/backends/fa_utils.py `flash_attn_supports_kv_cache_dtype`);
# FLASHINFER nvfp4 needs the SM100 family (vllm/v1/attention/backends/flashinfer.py, v0.33.0).
_BACKEND_MIN_CAPABILITY: Dict[Tuple[str, str], Tuple[Tuple[int, int], str]] = {
    ("FLASH_ATTN", "fp8_e4m3"): ((9, 0), "FLASH_ATTN reads FP8 only with FA3 (SM90) or FA4 (SM100)"),
    ("FLASHINFER", "nvfp4"): ((10, 0), "FLASHINFER reads NVFP4 only on the SM100 family"),
}

FP4_FORMATS = frozenset({"nvfp4", "trtllm_nvfp4", "sglang_fp4", "sglang_nvfp4"})
# Block-scaled formats only kvlint's torch kernel reads (no Triton kernel): emulated, never native.
EMULATED_FORMATS = {**{f: "FP4" for f in FP4_FORMATS}, "sglang_mxfp8": "MXFP8"}


@dataclass
class KernelPlan:
    """Whether the planned kernel can run natively on this device."""

    native: bool
    fallback_reasons: List[str] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)


def kernel_plan(info: DeviceInfo, format_id: str, backend: Optional[str]) -> KernelPlan:
    if not info.is_cuda:
        notes = ["CPU: torch reference kernels (the engine's GPU kernel is not exercised)"]
        if format_id in EMULATED_FORMATS:
            notes.append(f"{EMULATED_FORMATS[format_id]} is emulated: reference only, not native")
        return KernelPlan(native=False, notes=notes)
    plan = KernelPlan(native=True)
    if info.is_rocm:
        if format_id in ("fp8_e4m3", "fp8_per_token_head"):
            plan.notes.append("ROCm: OCP E4M3 support depends on the GPU (gfx950 yes, gfx942 FNUZ only)")
        return plan
    cap = info.capability or (0, 0)
    if format_id == "fp8_e4m3fnuz":
        plan.native = False
        plan.fallback_reasons.append("fp8_e4m3fnuz is an AMD format; an NVIDIA GPU would convert it in software")
    need = _FORMAT_MIN_CAPABILITY.get(format_id)
    if need and cap < need[0]:
        plan.native = False
        plan.fallback_reasons.append(f"{need[1]}; this GPU is SM{cap[0]}{cap[1]}")
    if backend:
        bneed = _BACKEND_MIN_CAPABILITY.get((backend.upper(), format_id))
        if bneed and cap < bneed[0]:
            plan.native = False
            plan.fallback_reasons.append(f"{bneed[1]}; this GPU is SM{cap[0]}{cap[1]}")
    if format_id in EMULATED_FORMATS and plan.native:
        plan.native = False
        kind = EMULATED_FORMATS[format_id]
        plan.notes.append(f"{kind} is emulated by kvlint's kernel; the GPU supports {kind} but the engine's kernel is not exercised")
    return plan


# --------------------------------------------------------------------------- kernel names

def profiled_kernel_names(fn, info: DeviceInfo, top: int = 3) -> List[str]:
    """Names of the device kernels `fn()` launches, most device time first (torch.profiler)."""
    if not info.is_cuda:
        return ["torch-reference"]
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    times: Dict[str, float] = {}
    for event in prof.events():
        if getattr(event, "device_type", None) is not None and "CUDA" in str(event.device_type):
            key = event.name
            times[key] = times.get(key, 0.0) + float(getattr(event, "device_time_total", 0.0) or getattr(event, "cuda_time_total", 0.0) or 0.0)
    ranked = sorted(times.items(), key=lambda kv: -kv[1])
    return [name for name, _ in ranked[:top]] or ["(no CUDA kernel recorded)"]


# --------------------------------------------------------------------------- engine probe

def probe_vllm_backend(deployment, group) -> Dict[str, Any]:
    """Ask an importable vLLM which attention backend it would select for this layer group.

    Optional and best-effort: vLLM's selector signature changes between releases, so any failure
    is reported as "not probed", never as a smoke failure. Only a successful probe that names a
    different backend than the manifest's counts as a fallback.
    """
    result: Dict[str, Any] = {"engine": "vllm", "importable": False, "probed": False}
    if deployment.engine != "vllm" or importlib.util.find_spec("vllm") is None:
        return result
    result["importable"] = True
    try:
        import vllm

        result["version"] = getattr(vllm, "__version__", None)
        selector = None
        for module in ("vllm.v1.attention.selector", "vllm.attention.selector"):
            try:
                selector = importlib.import_module(module)
                break
            except Exception:
                continue
        if selector is None or not hasattr(selector, "get_attn_backend"):
            result["error"] = "no get_attn_backend in this vLLM"
            return result
        fn = selector.get_attn_backend
        params = inspect.signature(fn).parameters
        kv_dtype = deployment.kv_dtype if not group.skipped else "auto"
        model_dtype = torch.float16 if (deployment.model and deployment.model.dtype == "float16") else torch.bfloat16
        candidates = {
            "head_size": group.head_dim,
            "dtype": model_dtype,
            "kv_cache_dtype": kv_dtype,
            "block_size": deployment.block_size or 16,
            "use_mla": group.is_mla,
            "has_sink": any(p.geometry.has_sinks for p in group.plans),
            "use_sliding_window": group.kind == "sliding",
            "has_sliding_window": group.kind == "sliding",
        }
        kwargs = {k: v for k, v in candidates.items() if k in params}
        backend = fn(**kwargs)
        name = backend.get_name() if hasattr(backend, "get_name") else getattr(backend, "__name__", str(backend))
        result.update(probed=True, backend=str(name))
    except Exception as exc:  # never required; never fatal
        result["error"] = f"{type(exc).__name__}: {exc}"[:300]
    return result
