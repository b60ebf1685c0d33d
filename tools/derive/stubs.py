"""The stubs under which a release's code is imported on a CPU-only machine.

Every stub here exists because the real thing needs a GPU, a compiled library, or a
package that is not on this machine. Each is as small as possible and says why.
Everything else is the release's own code, run for real (torch is real: the CPU
build in the project's .venv).

`install(root, device)` must run before the first `import vllm` of a probe process.
`device` is one grid entry of DEVICES below.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import sys
import types
from pathlib import Path

# The grid of GPUs. cc = compute capability (CUDA) or the gfx arch's
# (major, minor) as torch reports it on ROCm. total_memory is the GPU's memory,
# which some releases read to pick defaults (max_num_batched_tokens).
DEVICES = {
    "sm75": {"platform": "cuda", "cc": (7, 5), "name": "Tesla T4", "mem_gib": 15},
    "sm80": {"platform": "cuda", "cc": (8, 0), "name": "NVIDIA A100-SXM4-80GB", "mem_gib": 80},
    "sm86": {"platform": "cuda", "cc": (8, 6), "name": "NVIDIA A10", "mem_gib": 24},
    "sm89": {"platform": "cuda", "cc": (8, 9), "name": "NVIDIA L40S", "mem_gib": 48},
    "sm90": {"platform": "cuda", "cc": (9, 0), "name": "NVIDIA H100 80GB HBM3", "mem_gib": 80},
    "sm100": {"platform": "cuda", "cc": (10, 0), "name": "NVIDIA B200", "mem_gib": 180},
    "sm120": {"platform": "cuda", "cc": (12, 0), "name": "NVIDIA RTX PRO 6000 Blackwell", "mem_gib": 96},
    "gfx942": {"platform": "rocm", "cc": (9, 4), "name": "AMD Instinct MI300X", "arch": "gfx942:sramecc+:xnack-", "mem_gib": 192},
    "gfx950": {"platform": "rocm", "cc": (9, 5), "name": "AMD Instinct MI355X", "arch": "gfx950:sramecc+:xnack-", "mem_gib": 288},
}

STUB_LOG: list[str] = []  # which stubs were actually used by this process (recorded in the table)

# The host a release probes besides the GPU, answered the same on every machine: the tables must
# not depend on whether the machine that derives them has a CUDA toolkit. What a release asks:
#   shutil.which("nvcc")  vllm/utils/flashinfer.py has_flashinfer() (0.11.1+): without
#                         flashinfer-cubin, FlashInfer counts as unavailable when nvcc is missing
#   CUDA_HOME             vllm/third_party/deep_gemm/__init__.py _find_cuda_home() at import (else
#                         `which nvcc`, else /usr/local/cuda, else AssertionError), torch's
#                         torch.utils.cpp_extension._find_cuda_home, vllm/envs.py CUDA_HOME
#   shutil.which("ninja") / torch.utils.cpp_extension.is_ninja_available(): JIT builders
#   torch.version.cuda    the CPU build has None; CUDA releases compare it with 12.x
# The answers are those of a CUDA 12.9 toolkit host (vLLM's CUDA images build on NVIDIA's CUDA
# toolkit images): nvcc and ninja present. Every other shutil.which() answers None. Recorded
# in each table under "environment".
HOST = {
    "CUDA_HOME": "/usr/local/cuda",
    "which": {"nvcc": "/usr/local/cuda/bin/nvcc", "ninja": "/usr/bin/ninja"},
    "ninja_available": True,
    "torch_version_cuda": "12.9",
}
HOST_ASKED: set = set()  # which host probes this process's release used (recorded in the table)


class _StubModule(types.ModuleType):
    """An importable module with no behaviour.

    Attribute access returns a callable placeholder so that module-level
    `from X import f` and decorator uses succeed; *calling* it raises, so any
    answer that would really depend on the stubbed code surfaces as an error
    (recorded as "unknown") instead of a silent guess.
    """

    def __init__(self, name: str, why: str):
        super().__init__(name)
        self.__stub_why__ = why
        self.__path__ = []  # a package, so submodules can be stubbed too
        self.__file__ = f"<stub: {why}>"

    def __getattr__(self, attr: str):
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)
        return _placeholder(f"{self.__name__}.{attr}", self.__stub_why__)


class _PlaceholderMeta(type):
    """Placeholders are classes, so they also work as base classes, in `X | None`
    annotations and in isinstance(); calling one (function call or instantiation)
    raises, naming what was stubbed."""

    def __call__(cls, *a, **k):
        raise RuntimeError(f"stubbed: {cls.__qualname__} ({cls._why})")

    def __getattr__(cls, attr: str):
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)
        return _placeholder(f"{cls.__qualname__}.{attr}", cls._why)


def _placeholder(qualname: str, why: str):
    ph = _PlaceholderMeta(qualname.rsplit(".", 1)[-1], (), {"_why": why})
    ph.__qualname__ = qualname
    return ph


class _StubFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves _StubModule for an exact set of module names (and their submodules)."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}  # module name -> why

    def add(self, name: str, why: str) -> None:
        self.names[name] = why

    def _why(self, fullname: str):
        parts = fullname.split(".")
        for i in range(len(parts), 0, -1):
            why = self.names.get(".".join(parts[:i]))
            if why is not None:
                return why
        return None

    def find_spec(self, fullname, path=None, target=None):
        why = self._why(fullname)
        if why is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec):
        why = self._why(spec.name)
        STUB_LOG.append(spec.name)
        return _StubModule(spec.name, why)

    def exec_module(self, module):
        return None


FINDER = _StubFinder()

# importable module -> PyPI distribution
GPU_PACKAGES = {
    "flashinfer": "flashinfer-python",
    "flashinfer_cubin": "flashinfer-cubin",
    "cutlass": "nvidia-cutlass-dsl",
    "cutlass_dsl": "nvidia-cutlass-dsl",
    "quack": "quack-kernels",
    "tokenspeed_mla": "tokenspeed-mla",
}


def release_requirements(root: Path) -> set:
    """Normalized names of the wheel's unconditional Requires-Dist (no `extra ==` marker)."""
    import re

    names = set()
    for meta in Path(root).glob("*.dist-info/METADATA"):
        for line in meta.read_text(errors="replace").splitlines():
            if not line.startswith("Requires-Dist:") or "extra ==" in line:
                continue
            m = re.match(r"Requires-Dist:\s*([A-Za-z0-9_.\-]+)", line)
            if m:
                names.add(m.group(1).lower().replace("_", "-").replace(".", "-"))
    return names


def install(root: Path, device: dict, *, aiter: bool = False) -> None:
    """Prepare the process: stub modules, device patches. Before any vllm import."""
    root = Path(root)
    # 1. The wheel's compiled extensions (vllm._C, vllm._moe_C, vllm.vllm_flash_attn._vllm_fa2_C,
    #    vllm._flashmla_C, ...): dropped at extraction (native code for a GPU). Stubbed *exactly*
    #    by the list wheels.py wrote, so `import vllm._C` works as in a real install while a
    #    module the release does not have still raises ImportError.
    compiled = root / ".compiled-modules.txt"
    if compiled.is_file():
        for name in compiled.read_text().split():
            FINDER.add(name, "compiled extension shipped in the wheel; native GPU code")
    # 2. GPU-only third-party packages that `pip install vllm==X` brings along -- only those the
    #    release's METADATA lists as unconditional Requires-Dist (flashinfer-python from 0.11.1,
    #    nvidia-cutlass-dsl + quack-kernels from 0.17, tokenspeed-mla from 0.21, ...). They cannot
    #    be imported without a GPU / are not installed here; importable so that backend modules
    #    load and availability checks see them as a default install does; calls into them raise.
    #    A package the release does not require stays missing (ImportError), as on a default install.
    #    (CUDA runs only: the ROCm build of vLLM does not bring these.)
    required = release_requirements(root) if device["platform"] == "cuda" else set()
    for module, dist in GPU_PACKAGES.items():
        if dist in required:
            FINDER.add(module, f"GPU kernel package {dist} (Requires-Dist of this wheel); not importable on CPU")
    # 2b. Structured-output grammar engines (compiled; unrelated to attention or the KV cache)
    #     that recent releases import at module level on the EngineArgs/config path. The
    #     finder sits last on sys.meta_path, so an installed real package always wins.
    for name in ("xgrammar", "llguidance", "outlines_core", "tvm_ffi"):
        FINDER.add(name, "structured-output grammar engine; irrelevant to attention")
    if device["platform"] == "rocm":
        # 3. ROCm builds ship vllm._rocm_C (the PyPI wheel is the CUDA build) and use amdsmi
        #    (AMD's driver library) to identify the GPU.
        FINDER.add("vllm._rocm_C", "ROCm compiled extension; not in the CUDA wheel")
        FINDER.add("amdsmi", "AMD SMI driver bindings; no AMD GPU here")
        # 4. AITER (AMD kernels) and upstream flash-attn (ROCm build) are ROCm-only packages that
        #    vLLM's ROCm images ship: rocm_aiter_fa.py imports aiter at module level, and the MLA
        #    common code raises "Rocm platform requires upstream flash-attn" without flash_attn.
        #    Whether AITER is *used* is VLLM_ROCM_USE_AITER (the `aiter` flag of the run).
        FINDER.add("aiter", "AMD AITER kernels; ROCm-only package")
        FINDER.add("flash_attn", "upstream flash-attn, ROCm build; ROCm-only here")
    # 5. triton has no CPU build here; vLLM has its own placeholder for that case
    #    (vllm/triton_utils/importing.py), so nothing is stubbed for it.
    sys.meta_path.append(FINDER)
    install_host()
    _patch_torch(device)
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
    os.environ.setdefault("VLLM_CONFIGURE_LOGGING", "0")
    os.environ["VLLM_TARGET_DEVICE"] = "cuda" if device["platform"] == "cuda" else "rocm"
    os.environ["VLLM_ROCM_USE_AITER"] = "1" if aiter else "0"
    os.environ.pop("VLLM_ATTENTION_BACKEND", None)
    # No network: the probe must never reach a model hub or send usage stats.
    for k in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "VLLM_NO_USAGE_STATS", "DO_NOT_TRACK"):
        os.environ[k] = "1"


def install_host() -> None:
    """Answer the host probes from HOST (idempotent; before torch and the release are imported,
    so that torch's own CUDA_HOME lookup sees the fixed answer too)."""
    import shutil

    os.environ["CUDA_HOME"] = HOST["CUDA_HOME"]
    os.environ.pop("CUDA_PATH", None)
    if getattr(shutil.which, "_derive_patched", False):
        return

    def which(cmd, mode=os.F_OK | os.X_OK, path=None):
        name = os.path.basename(str(cmd))
        HOST_ASKED.add(f"which:{name}")
        return HOST["which"].get(name)

    which._derive_patched = True
    shutil.which = which


def _patch_torch_host(torch) -> None:
    try:
        import torch.utils.cpp_extension as cpp
    except Exception:  # noqa: BLE001  (a torch without it: nothing to answer)
        return

    def is_ninja_available() -> bool:
        HOST_ASKED.add("torch.utils.cpp_extension.is_ninja_available")
        return HOST["ninja_available"]

    cpp.is_ninja_available = is_ninja_available


def _patch_torch(device: dict) -> None:
    """torch is real (CPU build); only its device queries answer for the grid's GPU.

    Releases read the GPU through torch.cuda directly in a few places
    (vllm_flash_attn's is_fa_version_supported, ROCm's gcnArchName lookups), so
    get_device_capability / get_device_name / get_device_properties answer for
    `device`. torch.cuda.is_available() stays False: no CUDA work can happen.
    """
    try:
        import torch
    except ImportError:  # only the offline test's fake release runs without torch
        return

    cc = tuple(device["cc"])

    class _Props:
        name = device["name"]
        major, minor = cc
        total_memory = device["mem_gib"] * (1 << 30)
        multi_processor_count = 132
        gcnArchName = device.get("arch", "")

    device_name = device["name"]
    _patch_torch_host(torch)
    _patch_torch_ops(torch)
    _patch_cuda_alloc(torch)
    torch.cuda.get_device_capability = lambda d=None: cc
    torch.cuda.get_device_name = lambda d=None: device_name
    torch.cuda.get_device_properties = lambda d=None: _Props()
    if device["platform"] == "rocm":
        torch.version.hip = "7.0.0"  # ROCm torch builds set this; CPU build has None
    else:
        torch.version.cuda = HOST["torch_version_cuda"]


_VLLM_OP_NAMESPACES = {"_C", "_moe_C", "_C_cache_ops", "_C_custom_ar", "_rocm_C", "_vllm_fa2_C",
                       "_vllm_fa3_C", "_flashmla_C", "_flashmla_extension_C", "_qutlass_C"}


def _patch_torch_ops(torch) -> None:
    """vLLM's custom ops live in the stubbed compiled modules, so torch.ops._C.<op> is missing.

    A few modules that attention backends import transitively (quantization/GEMM utils) call
    kernel *capability queries* at import time, e.g.
    `CUTLASS_BLOCK_FP8_SUPPORTED = ops.cutlass_scaled_mm_supports_block_fp8(cc)`. Those are
    about weight GEMMs, never about attention or the KV cache; a missing op whose name says it
    is a support query (`*supports*` / `*supported*`) answers False. Any other missing op
    stays missing (hasattr() False, as vLLM's own `if hasattr(torch.ops._C, op)` guards expect).
    """
    import torch._ops as tops

    orig = tops._OpNamespace.__getattr__
    if getattr(orig, "_derive_patched", False):
        return

    def getattr_(self, op_name):
        try:
            return orig(self, op_name)
        except AttributeError:
            if self.name not in _VLLM_OP_NAMESPACES or op_name.startswith("__"):
                raise
            if "supports" in op_name or "supported" in op_name:
                return lambda *a, **k: False
            raise

    getattr_._derive_patched = True
    tops._OpNamespace.__getattr__ = getattr_


def _patch_cuda_alloc(torch) -> None:
    """Some backend modules allocate GPU workspaces at import time
    (cutlass_mla.py: `g_sm100_workspace = SM100Workspace(128 MiB)`). With no GPU, a
    tensor factory asked for device="cuda" makes a "meta" tensor instead (shape and dtype,
    no storage), so the module loads; nothing on the grid reads such a buffer."""
    for name in ("empty", "zeros", "ones", "full", "empty_strided", "arange", "randn", "rand"):
        orig = getattr(torch, name)
        if getattr(orig, "_derive_patched", False):
            continue

        def make(orig):
            def factory(*a, **k):
                dev = k.get("device")
                if dev is not None and "cuda" in str(dev):
                    k["device"] = "meta"
                return orig(*a, **k)
            factory._derive_patched = True
            return factory

        setattr(torch, name, make(orig))


def make_platform(device: dict):
    """The release's own platform class, with the device queries answered for `device`.

    The real CudaPlatform asks NVML / torch.cuda for the GPU; RocmPlatform asks amdsmi.
    Only those queries are overridden; selection logic (get_attn_backend_cls,
    get_valid_backends, _get_backend_priorities) is the release's.
    """
    from vllm.platforms.interface import DeviceCapability

    cap = DeviceCapability(*device["cc"])
    if device["platform"] == "cuda":
        import vllm.platforms.cuda as mod
        base = getattr(mod, "CudaPlatformBase", None) or mod.CudaPlatform
    else:
        import vllm.platforms.rocm as mod
        base = mod.RocmPlatform

    name = device["name"]
    mem = device["mem_gib"] * (1 << 30)

    class Fake(base):  # type: ignore[misc, valid-type]
        @classmethod
        def get_device_capability(cls, device_id: int = 0):
            return cap

        @classmethod
        def get_device_name(cls, device_id: int = 0) -> str:
            return name

        @classmethod
        def get_device_total_memory(cls, device_id: int = 0) -> int:
            return mem

        @classmethod
        def get_device_uuid(cls, device_id: int = 0) -> str:
            return "GPU-00000000"

        @classmethod
        def is_fully_connected(cls, physical_device_ids) -> bool:
            return True

        @classmethod
        def log_warnings(cls) -> None:
            return None

        @classmethod
        def device_count(cls) -> int:
            return 1

    Fake.__name__ = Fake.__qualname__ = f"Fake{base.__name__}"
    return Fake()


def set_platform(device: dict):
    """Make `vllm.platforms.current_platform` the fake platform of `device`."""
    import vllm.platforms as platforms

    plat = make_platform(device)
    platforms._current_platform = plat
    return plat
