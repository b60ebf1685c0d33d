"""Minimal stubs that let one SGLang release's own Python code run on a CPU-only machine.

Imported only inside a child process (one per release x GPU), never by kvlint. Every stub says
why it is needed. Nothing here changes SGLang's decision logic: the stubs answer the questions
SGLang asks its environment (which GPU, how much memory, which HF config) and make imports of
packages that are not installed here succeed.

Stubs, in the order they are installed:

1. `AutoStubFinder`: SGLang imports dozens of packages (transformers, numpy, triton, sgl_kernel,
   flashinfer, zmq, ...) that are not installed here and are never *executed* by the code paths we
   drive (argument resolution, pool sizing). Any module that the normal import system cannot find
   is replaced by a permissive placeholder module; the list of placeholder modules is recorded in
   the output (`stubs.auto_stubbed_modules`) so a reader can see exactly what was faked.
2. `install_device`: SGLang asks torch which device it runs on (torch.cuda.is_available,
   get_device_capability, torch.version.cuda / torch.version.hip, get_device_properties,
   mem_get_info). CPU torch answers "no GPU", so these torch entry points are replaced by a fake
   GPU of the requested compute capability / ROCm arch and memory. SGLang's own helpers
   (is_cuda, is_hip, is_sm90_supported, is_sm100_supported, ...) then run unchanged on top.
3. `patch_sglang_functions`: a few SGLang helpers shell out or probe packages instead of asking
   torch: get_nvgpu_memory_capacity / get_amdgpu_memory_capacity run nvidia-smi / rocm-smi (no
   such binaries here) and is_flashinfer_available probes the flashinfer package (a dependency of
   every `sglang[srt]` install, so it is answered True). HF config loading (get_config) would
   download config.json from the Hub; it returns a fake config object per architecture instead
   (fields from rules/catalog/models/*.yaml, which cite each model's HF config.json).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import types
from typing import Any, Dict, List, Optional

STUBBED: List[str] = []  # modules replaced by placeholders, recorded in the output


# --- 1. placeholder modules -------------------------------------------------------------------

# Dunder names Python, typing, inspect, copy, pickle and torch probe with getattr/hasattr: a
# placeholder must *not* have them. Any other dunder (a library's own, e.g. pydantic's
# __class_validators__) is answered with a placeholder like a plain attribute.
_PROTOCOL_DUNDERS = frozenset("""
__wrapped__ __signature__ __func__ __self__ __code__ __globals__ __origin__ __args__ __parameters__
__fspath__ __array__ __array_interface__ __array_struct__ __torch_function__ __torch_dispatch__ __get__ __set__
__delete__ __set_name__ __len__ __iter__ __await__ __aiter__ __anext__ __class_getitem__ __annotations__
__dataclass_fields__ __dataclass_params__ __attrs_attrs__ __slots__ __abstractmethods__ __isabstractmethod__
__instancecheck__ __subclasscheck__ __reduce_ex__ __reduce__ __getstate__ __setstate__ __copy__
__deepcopy__ __post_init__ __mro_entries__ __objclass__ __text_signature__ __qualname__ __name__
__module__ __doc__ __dict__ __file__ __path__ __spec__ __loader__ __package__ __all__ __getnewargs__
__getnewargs_ex__ __length_hint__ __missing__ __index__ __int__ __float__ __complex__ __bytes__
__fields__ __pydantic_core_schema__ __get_pydantic_core_schema__ __get_validators__ __call__ __enter__
__exit__ __aenter__ __aexit__ __next__ __contains__ __bool__ __hash__ __eq__ __init_subclass__
__orig_bases__ __orig_class__ __final__ __total__ __required_keys__ __optional_keys__ __supertype__
__type_params__ __notes__ __cause__ __context__ __traceback__ __builtins__ __closure__ __defaults__
__kwdefaults__ __match_args__ __weakref__ __class__ __bases__ __mro__ __subclasses__
""".split())


class _StubMeta(type):
    """Metaclass of placeholder objects: any attribute, call, index, iteration, comparison or
    context-manager use succeeds and yields another placeholder (or a neutral value).
    Needed because module-level code in SGLang decorates with, subclasses from, annotates with and
    indexes into objects of the missing packages (e.g. @triton.jit, tl.constexpr, Tensor types)."""

    def __getattr__(cls, name):
        if name in _PROTOCOL_DUNDERS:
            raise AttributeError(name)
        sub = _new_stub(f"{cls.__name__}.{name}")
        type.__setattr__(cls, name, sub)
        return sub

    def __call__(cls, *args, **kwargs):
        if not cls.__dict__.get("_kvlint_stub", False):
            return type.__call__(cls, *args, **kwargs)  # a real class deriving from a placeholder
        # used as a bare decorator (@triton.jit def f): hand the function back unchanged
        if len(args) == 1 and not kwargs and isinstance(args[0], (types.FunctionType, types.MethodType)):
            return args[0]
        return _new_stub(f"{cls.__name__}()")

    def __getitem__(cls, key):
        return cls

    def __setitem__(cls, key, value):
        pass

    def __delitem__(cls, key):
        pass

    def __add__(cls, other):
        return cls

    __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = __add__

    def __iter__(cls):
        return iter(())

    def __len__(cls):
        return 0

    def __bool__(cls):
        return False

    def __or__(cls, other):
        return cls

    __ror__ = __or__

    def __contains__(cls, item):
        return False

    def __enter__(cls):
        return cls

    def __exit__(cls, *exc):
        return False

    def __lt__(cls, other):
        return False

    __gt__ = __le__ = __ge__ = __lt__

    def __int__(cls):
        return 0

    def __float__(cls):
        return 0.0

    def __index__(cls):
        return 0

    def __hash__(cls):
        return id(cls)

    def __eq__(cls, other):
        return cls is other

    def __mro_entries__(cls, bases):  # pragma: no cover - only for odd bases
        return (cls,)


def _new_stub(name: str) -> type:
    # __init_subclass__ takes keywords: SGLang subclasses placeholders like TypedDicts (total=False)
    return _StubMeta(name.rsplit(".", 1)[-1] or "stub", (object,), {
        "_kvlint_stub": True, "__qualname__": name, "__module__": "kvlint_stub",
        "__init_subclass__": classmethod(lambda cls, **kw: None)})


class _StubModule(types.ModuleType):
    """A placeholder module: attributes are placeholders; it is a package so submodules import."""

    def __init__(self, name: str):
        super().__init__(name)
        self.__path__ = []  # type: ignore[assignment]
        self.__file__ = f"<kvlint stub {name}>"
        self.__version__ = "0.0.0"
        self.__spec__ = importlib.machinery.ModuleSpec(name, None, is_package=True)

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        value = _new_stub(f"{self.__name__}.{name}")
        setattr(self, name, value)
        return value


class _StubLoader(importlib.abc.Loader):
    def create_module(self, spec):
        return _StubModule(spec.name)

    def exec_module(self, module):
        STUBBED.append(module.__name__)


class AutoStubFinder(importlib.abc.MetaPathFinder):
    """Last finder on sys.meta_path: whatever no real finder provides becomes a placeholder.

    `keep_real` names top-level packages that must never be faked (a missing module there is a
    real error worth seeing, e.g. a torch submodule)."""

    def __init__(self, src_root: str, keep_real=("torch", "kvlint", "yaml")):
        self.src_root = os.path.abspath(src_root)
        self.keep_real = set(keep_real)

    def _from_release(self) -> bool:
        """Only imports made by the release's own files (or by a placeholder) are faked: an
        optional import inside an installed package (sympy probing gmpy2) must fail normally."""
        f = sys._getframe(2)
        while f is not None:
            name = f.f_code.co_filename
            if not name.startswith("<frozen importlib") and "importlib" not in name:
                return name.startswith(self.src_root)
            f = f.f_back
        return False

    def find_spec(self, fullname, path=None, target=None):
        top = fullname.split(".")[0]
        if top in self.keep_real or top in sys.stdlib_module_names:
            return None
        parent = sys.modules.get(fullname.rpartition(".")[0]) if "." in fullname else None
        if not isinstance(parent, _StubModule) and not self._from_release():
            return None
        return importlib.machinery.ModuleSpec(fullname, _StubLoader(), is_package=True)


def install_autostub(src_root: str) -> None:
    sys.meta_path.append(AutoStubFinder(src_root))


# --- 2. the fake GPU ---------------------------------------------------------------------------

GPUS: Dict[str, Dict[str, Any]] = {
    # id: capability, name, memory (MiB, as SGLang's get_*_memory_capacity return), platform
    "sm80": {"cc": [8, 0], "name": "NVIDIA A100-SXM4-80GB", "mem_mib": 81920, "platform": "cuda"},
    "sm86": {"cc": [8, 6], "name": "NVIDIA A10", "mem_mib": 23028, "platform": "cuda"},
    "sm89": {"cc": [8, 9], "name": "NVIDIA L40S", "mem_mib": 46068, "platform": "cuda"},
    "sm90": {"cc": [9, 0], "name": "NVIDIA H100 80GB HBM3", "mem_mib": 81559, "platform": "cuda"},
    "sm100": {"cc": [10, 0], "name": "NVIDIA B200", "mem_mib": 183359, "platform": "cuda"},
    "sm120": {"cc": [12, 0], "name": "NVIDIA RTX PRO 6000 Blackwell Server Edition", "mem_mib": 97887,
              "platform": "cuda"},
    "gfx942": {"cc": [9, 4], "name": "AMD Instinct MI300X", "mem_mib": 196592, "platform": "rocm",
               "gcn_arch": "gfx942:sramecc+:xnack-"},
}

CUDA_VERSION = "12.8"  # torch.version.cuda of the fake CUDA build (>= 12.3 for FA3, >= 12.8 for SM100)
HIP_VERSION = "6.3.42131"  # torch.version.hip of the fake ROCm build

_DEVICE: Dict[str, Any] = {}


def set_memory_mib(mib: int) -> None:
    """Change the fake GPU's memory (for the mem_fraction_static sweep)."""
    _DEVICE["mem_mib"] = int(mib)


def install_device(gpu: Dict[str, Any], count: int = 8) -> None:
    """Make CPU torch report the fake GPU (see module docstring, stub 2)."""
    import torch

    _DEVICE.clear()
    _DEVICE.update(gpu)
    major, minor = gpu["cc"]
    rocm = gpu["platform"] == "rocm"
    torch.version.cuda = None if rocm else CUDA_VERSION
    torch.version.hip = HIP_VERSION if rocm else None

    class _Props:
        def __init__(self):
            self.name = gpu["name"]
            self.major, self.minor = major, minor
            self.total_memory = _DEVICE["mem_mib"] * (1 << 20)
            self.multi_processor_count = 132
            self.gcnArchName = gpu.get("gcn_arch", "")
            self.L2_cache_size = 50 << 20
            self.uuid = "GPU-00000000-0000-0000-0000-000000000000"

    # Module-level @torch.compile(...) in SGLang layers would import torch._inductor, which probes
    # triton (a placeholder here) and fails; nothing is compiled or run, so identity decorator.
    def _compile(fn=None, *a, **k):
        return fn if fn is not None else (lambda f: f)
    torch.compile = _compile

    # Older releases ask torch whether the CPU has Intel AMX via a private helper this torch no
    # longer has; answered False (the intel_amx backend is for CPU serving, not modelled).
    for name in ("_is_amx_tile_supported", "_is_amx_fp16_supported"):
        if not hasattr(torch._C._cpu, name):
            setattr(torch._C._cpu, name, lambda: False)

    # SGLang registers fake (meta) kernels for sgl_kernel ops at import time; sgl_kernel is a
    # placeholder so the op does not exist: registration becomes a no-op decorator.
    for name in ("register_fake", "impl_abstract"):
        real = getattr(torch.library, name, None)
        if real is not None:
            def tolerant(op, *a, _real=real, **k):
                try:
                    inner = _real(op, *a, **k)
                except Exception:  # noqa: BLE001 - op of a placeholder package
                    return lambda fn=None: fn
                if not callable(inner):
                    return inner

                def apply(fn=None):
                    try:
                        return inner(fn)
                    except Exception:  # noqa: BLE001
                        return fn
                return apply
            setattr(torch.library, name, tolerant)

    # Modules look up torch.ops.sglang.* / torch.ops.sgl_kernel.* at import time; ops whose kernels
    # come from placeholder packages were never registered: the lookup yields a placeholder.
    import torch._ops as _ops
    _orig_ns_getattr = _ops._OpNamespace.__getattr__

    def _ns_getattr(self, name):
        try:
            return _orig_ns_getattr(self, name)
        except AttributeError:
            if name.startswith("__"):
                raise
            return _new_stub(f"torch.ops.{getattr(self, 'name', '?')}.{name}")
    _ops._OpNamespace.__getattr__ = _ns_getattr

    cuda = torch.cuda
    cuda.is_available = lambda: True
    cuda.device_count = lambda: count
    cuda.current_device = lambda: 0
    cuda.get_device_capability = lambda device=None: (major, minor)
    cuda.get_device_name = lambda device=None: gpu["name"]
    cuda.get_device_properties = lambda device=None: _Props()
    cuda.mem_get_info = lambda device=None: (_DEVICE["mem_mib"] << 20, _DEVICE["mem_mib"] << 20)
    cuda.is_bf16_supported = lambda *a, **k: True
    cuda.set_device = lambda *a, **k: None
    cuda.synchronize = lambda *a, **k: None
    cuda.empty_cache = lambda *a, **k: None
    cuda.get_arch_list = lambda: [f"sm_{major}{minor}"]


def fake_memory_capacity(*args, **kwargs) -> float:
    return float(_DEVICE["mem_mib"])


# --- 3. SGLang helpers that probe the machine or the Hub ---------------------------------------

class _Wrap:
    """A patch that wraps the release's own function instead of replacing it."""

    def __init__(self, factory):
        self.factory = factory


def _tolerant(original):
    """Run the release's function; if it fails because its argument comes from a placeholder
    package, do nothing (the op would only be needed to run a kernel)."""
    def tolerant(*a, **k):
        try:
            return original(*a, **k)
        except Exception:  # noqa: BLE001
            return None
    tolerant._kvlint_wrapped = True
    return tolerant


def _apply(d: Dict[str, Any], name: str, repl: Any) -> bool:
    cur = d.get(name)
    if cur is None or not callable(cur) or cur is repl or getattr(cur, "_kvlint_wrapped", False):
        return False
    d[name] = repl.factory(cur) if isinstance(repl, _Wrap) else repl
    return True


# name -> replacement; applied to every already-imported sglang module holding that name and to
# modules imported later (patch_sglang_functions is re-run after each import step).
_HELPER_PATCHES: Dict[str, Any] = {}


def helper_patches(hf_config_factory) -> Dict[str, Any]:
    _HELPER_PATCHES.clear()
    _HELPER_PATCHES.update({
        # runs nvidia-smi / rocm-smi; answered from the fake GPU
        "get_nvgpu_memory_capacity": fake_memory_capacity,
        "get_amdgpu_memory_capacity": fake_memory_capacity,
        # probes the flashinfer package; every sglang[srt] install has it
        "is_flashinfer_available": lambda *a, **k: True,
        # downloads config.json from the Hub; a fake config per architecture instead
        "get_config": hf_config_factory,
        # registers kernels (often from placeholder packages) as torch custom ops at import time;
        # no kernel runs in argument resolution or pool sizing
        "direct_register_custom_op": _Wrap(_tolerant),
        # would read generation_config.json from the Hub
        "get_generation_config": lambda *a, **k: None,
        # SGLang's Triton-kernel cache decorator (utils/common.py cached_triton_kernel, used at
        # import by 0.5.3.x's lora/triton_ops) asserts a real triton JITFunction; triton is a
        # placeholder and no kernel runs: the kernel is handed back undecorated
        "cached_triton_kernel": lambda *a, **k: (lambda fn: fn),
        # 0.5.11-0.5.15's import-time transformers patch reads PretrainedConfig.from_dict.__func__
        # (utils/hf_transformers_patches.py); transformers is a placeholder, nothing to patch
        "_patch_rope_parameters_validation": lambda *a, **k: None,
        # would download/inspect the checkpoint's files (safetensors index, quant config files)
        "get_hf_text_config_from_path": None,  # placeholder name, never matched unless present
    })
    _HELPER_PATCHES.pop("get_hf_text_config_from_path")
    return _HELPER_PATCHES


def patch_sglang_functions() -> List[str]:
    """Replace the helpers above wherever an sglang module holds them (module globals and names
    imported with `from ... import`). Returns 'module.name' for each replacement made."""
    done = []
    for modname, mod in list(sys.modules.items()):
        if not modname.startswith("sglang") or isinstance(mod, _StubModule) or mod is None:
            continue
        d = getattr(mod, "__dict__", None)
        if not d:
            continue
        for name, repl in _HELPER_PATCHES.items():
            if _apply(d, name, repl):
                done.append(f"{modname}.{name}")
    return done


class PatchingFinder(importlib.abc.MetaPathFinder):
    """First finder on sys.meta_path: after any sglang module executes, re-apply the helper
    patches so a module that imported a helper by name at import time sees the replacement."""

    # SGLang's own JIT-kernel package resolves its C++ sources (include/, csrc/) at import time;
    # the wheel extraction keeps only Python, and no kernel is ever run here: placeholder.
    FORCED = ("sglang.jit_kernel", "sglang.kernels.jit", "sglang.kernels.ops")

    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith("sglang"):
            return None
        if fullname.startswith(self.FORCED):
            return importlib.machinery.ModuleSpec(fullname, _StubLoader(), is_package=True)
        for finder in sys.meta_path:
            if finder is self or isinstance(finder, AutoStubFinder):
                continue
            find = getattr(finder, "find_spec", None)
            if find is None:
                continue
            spec = find(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        if spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        real = spec.loader

        class _Wrapped(importlib.abc.Loader):
            def create_module(self, s):
                return real.create_module(s)

            def exec_module(self, module):
                real.exec_module(module)
                for name, repl in _HELPER_PATCHES.items():
                    _apply(module.__dict__, name, repl)

            def get_source(self, name):  # keeps tracebacks / inspect working
                return real.get_source(name)

            def __getattr__(self, item):
                return getattr(real, item)

        spec.loader = _Wrapped()
        return spec


def _fake_triton(gpu: Dict[str, Any]) -> None:
    """triton is a placeholder, but SGLang's FLA helpers ask it which backend is active at import
    time (`triton.runtime.driver.active.get_current_target().backend` must be a string)."""
    triton = _StubModule("triton")
    STUBBED.append("triton")
    rocm = gpu["platform"] == "rocm"
    target = types.SimpleNamespace(backend="hip" if rocm else "cuda",
                                   arch=gpu.get("gcn_arch", "gfx942").split(":")[0] if rocm
                                   else gpu["cc"][0] * 10 + gpu["cc"][1],
                                   warp_size=64 if rocm else 32)
    active = types.SimpleNamespace(
        get_current_target=lambda: target, get_current_device=lambda: 0,
        utils=types.SimpleNamespace(get_device_properties=lambda i=0: {
            "multiprocessor_count": 132, "max_shared_mem": 232448, "warpSize": target.warp_size}))
    runtime = _StubModule("triton.runtime")
    runtime.driver = types.SimpleNamespace(active=active)
    triton.runtime = runtime
    sys.modules["triton"] = triton
    sys.modules["triton.runtime"] = runtime


def _fake_dill() -> None:
    """dill is a placeholder, but SGLang's custom-logit-processor registry serialises classes at
    import time (`dill.dumps(cls).hex()`), which needs bytes back."""
    dill = _StubModule("dill")
    STUBBED.append("dill")
    dill.dumps = lambda *a, **k: b""
    sys.modules["dill"] = dill


def install(src_root: str, gpu: Dict[str, Any], hf_config_factory) -> None:
    """Install every stub for one child process: release source first on sys.path."""
    sys.path.insert(0, src_root)
    _fake_triton(gpu)
    _fake_dill()
    install_device(gpu)
    helper_patches(hf_config_factory)
    sys.meta_path.insert(0, PatchingFinder())
    install_autostub(src_root)


# --- fake HF configs -----------------------------------------------------------------------------

class FakeHFConfig:
    """Stands in for transformers.PretrainedConfig: attributes from a dict, AttributeError for a
    missing key (so SGLang's getattr(config, key, default) sees the default), to_dict()."""

    def __init__(self, **fields):
        for k, v in fields.items():
            if isinstance(v, dict) and k.endswith("_config") and k not in ("quantization_config", "rope_scaling"):
                v = FakeHFConfig(**v)
            object.__setattr__(self, k, v)

    def to_dict(self) -> Dict[str, Any]:
        return {k: (v.to_dict() if isinstance(v, FakeHFConfig) else v) for k, v in self.__dict__.items()}

    def get_text_config(self, *a, **k):
        return self.__dict__.get("text_config", self)

    def __contains__(self, key):
        return key in self.__dict__

    def get(self, key, default=None):
        return self.__dict__.get(key, default)

    def __repr__(self):
        return f"FakeHFConfig({self.__dict__.get('architectures')})"

    def update(self, d):
        self.__dict__.update(d)


def hf_config_factory(fields: Dict[str, Any]):
    def get_config(*args, **kwargs):
        return FakeHFConfig(**fields)
    return get_config


def dtype_of(name: Optional[str]):
    import torch
    return {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}.get(name or "", torch.bfloat16)
