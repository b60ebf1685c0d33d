"""The MLA block-size override of vLLM 0.11.0-0.18.0, by running each release's own code.

`CudaPlatformBase.check_and_update_config` (vllm/platforms/cuda.py) sets an unset block size to
16 and, for an MLA model, replaces a block size the planned MLA backend cannot use. This tool
takes that method's source from each release's wheel (tools/derive/.cache/vllm-<release>, see
wheels.py), keeps its statements up to and including the MLA branch (the rest configures
compilation and scheduling and never touches the block size), and runs them over a grid of
(GPU compute capability x attention backend named or not x block size x sparse indexer x
qk_nope_head_dim). FlashMLA's own support check (`is_flashmla_supported` in 0.11.0,
`is_flashmla_dense_supported` later, vllm/(v1/)attention/ops/flashmla.py) runs too, with
`_is_flashmla_available` (0.11.1+) and `_flashmla_C_AVAILABLE` (0.11.0) stubbed True (the compiled kernels are present in vLLM's CUDA wheels).

Stubs, each as small as the code allows:
- the platform class: `is_device_capability(c)` (exact) and `is_device_capability_family(c)`
  (same major), as vllm/platforms/interface.py defines them;
- `envs.VLLM_ATTENTION_BACKEND` (0.11-0.12 read the backend there) and
  `vllm_config.attention_config.backend` (0.13+), both set to the named backend;
- `AttentionBackendEnum`: a plain Enum of the names used;
- `logger`: discards.

Output: tools/derive/tables/vllm_mla_block.json, one string per group of releases whose code is
the same: the forced block size for every grid cell, in grid order (tests/test_mla_block.py
compares kvlint's catalog rule with it).

    .venv/bin/python tools/derive/mla_block_truth.py
"""

from __future__ import annotations

import ast
import enum
import hashlib
import itertools
import json
import sys
import types
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

HERE = Path(__file__).resolve().parent
CACHE = HERE / ".cache"
OUT = HERE / "tables" / "vllm_mla_block.json"
RELEASES = ["0.11.0", "0.11.1", "0.11.2", "0.12.0", "0.13.0", "0.14.0", "0.14.1", "0.15.0",
            "0.15.1", "0.16.0", "0.17.0", "0.17.1", "0.18.0"]
GRID: Dict[str, List[Any]] = {
    "cc": ["8.0", "9.0", "10.0", "10.3", "12.0"],
    "backend": [None, "FLASHMLA", "CUTLASS_MLA", "FLASHINFER_MLA", "TRITON_MLA", "FLASHINFER_MLA_SPARSE"],
    "block": [None, 16, 32, 64, 128, 256],
    "sparse": [False, True],
    "qk_nope": [128, 64],
}


def grid_cells() -> List[Dict[str, Any]]:
    keys = list(GRID)
    return [dict(zip(keys, values)) for values in itertools.product(*(GRID[k] for k in keys))]


def _function(path: Path, name: str) -> ast.FunctionDef:
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return node
    raise LookupError(f"{name} not in {path}")


def _mla_part(fn: ast.FunctionDef) -> ast.FunctionDef:
    """check_and_update_config up to and including the `if ... model_config.use_mla` branch."""
    body = []
    for stmt in fn.body:
        body.append(stmt)
        if isinstance(stmt, ast.If) and "use_mla" in ast.unparse(stmt.test):
            break
    else:
        body = []  # no MLA branch (0.18.0): nothing forces a block size
        for stmt in fn.body:
            src = ast.unparse(stmt)
            if "block_size" in src and "use_mla" not in src:
                body.append(stmt)  # keep the `block_size is None -> 16` statement, if any
    fn = ast.FunctionDef(name="run", args=fn.args, body=body or [ast.Pass()], decorator_list=[],
                         returns=None, type_comment=None, type_params=[])
    return ast.fix_missing_locations(fn)


class _Cfg(types.SimpleNamespace):
    pass


def _runner(release: str):
    root = CACHE / f"vllm-{release}"
    cuda = root / "vllm" / "platforms" / "cuda.py"
    fn = _mla_part(_function(cuda, "check_and_update_config"))
    flashmla = next(p for p in (root / "vllm/v1/attention/ops/flashmla.py", root / "vllm/attention/ops/flashmla.py") if p.exists())
    fm_names = [n for n in ("is_flashmla_dense_supported", "is_flashmla_supported")
                if f"def {n}(" in flashmla.read_text()]
    fm_fns = [_function(flashmla, n) for n in fm_names]
    code = ast.unparse(fn) + "\n" + "\n".join(ast.unparse(f) for f in fm_fns)
    digest = hashlib.sha256(code.encode()).hexdigest()[:16]

    Enum = enum.Enum("AttentionBackendEnum", [n for n in GRID["backend"] if n] + ["FLASHMLA_SPARSE"])
    state: Dict[str, Any] = {}

    class Platform:
        @staticmethod
        def is_cuda():
            return True

        @staticmethod
        def get_device_capability():
            return state["cap"]

        @classmethod
        def is_device_capability(cls, c):  # interface.py: exact capability
            return state["cap"].to_int() == c

        @classmethod
        def is_device_capability_family(cls, c):  # interface.py: to_int() // 10 == c // 10
            return state["cap"].to_int() // 10 == c // 10

    class Cap(tuple):
        def to_int(self):
            return self[0] * 10 + self[1]

        major = property(lambda self: self[0])

    mod_ns: Dict[str, Any] = {"current_platform": Platform, "_is_flashmla_available": lambda: (True, None),
                              "_flashmla_C_AVAILABLE": True,
                              "Optional": Optional, "Tuple": Tuple, "tuple": tuple}
    exec(compile("\n".join(ast.unparse(f) for f in fm_fns), str(flashmla), "exec"), mod_ns)
    ops = types.SimpleNamespace(**{n: mod_ns[n] for n in fm_names})
    registry = types.SimpleNamespace(AttentionBackendEnum=Enum)
    envs = types.SimpleNamespace(VLLM_ATTENTION_BACKEND=None)

    def fake_import(name, globals=None, locals=None, fromlist=(), level=0):
        if name.endswith("ops.flashmla"):
            return ops
        if name.endswith("backends.registry"):
            return registry
        return __import__(name, globals, locals, fromlist, level)

    ns: Dict[str, Any] = {"envs": envs, "logger": types.SimpleNamespace(info=lambda *a, **k: None,
                                                                          warning=lambda *a, **k: None),
                          "__builtins__": {**__builtins__.__dict__, "__import__": fake_import}
                          if isinstance(__builtins__, types.ModuleType) else {**__builtins__, "__import__": fake_import}}
    exec(compile(ast.Module(body=[fn], type_ignores=[]), str(cuda), "exec"), ns)
    run = ns["run"]

    def cell(c: Dict[str, Any]) -> int:
        major, minor = (int(x) for x in c["cc"].split("."))
        state["cap"] = Cap((major, minor))
        envs.VLLM_ATTENTION_BACKEND = c["backend"]
        hf = types.SimpleNamespace(qk_nope_head_dim=c["qk_nope"])
        if c["sparse"]:
            hf.index_topk = 2048
        cfg = _Cfg(
            parallel_config=_Cfg(worker_cls="set"),  # skips the worker-class choice
            model_config=_Cfg(use_mla=True, hf_config=hf, hf_text_config=hf),
            cache_config=_Cfg(block_size=c["block"]),
            attention_config=_Cfg(backend=Enum[c["backend"]] if c["backend"] else None),
        )
        run(Platform, cfg)
        return cfg.cache_config.block_size

    return digest, cell


def derive() -> Dict[str, Any]:
    cells = grid_cells()
    groups: Dict[str, Dict[str, Any]] = {}
    for release in RELEASES:
        digest, cell = _runner(release)
        answers = " ".join(str(cell(c)) for c in cells)
        group = groups.setdefault(answers, {"releases": [], "code_sha256_16": []})
        group["releases"].append(release)
        if digest not in group["code_sha256_16"]:
            group["code_sha256_16"].append(digest)
    return {
        "what": "block size after vLLM's CudaPlatformBase.check_and_update_config MLA branch "
                "(vllm/platforms/cuda.py), run from each release's wheel by tools/derive/mla_block_truth.py",
        "grid": GRID,
        "order": "itertools.product over grid keys in the listed order; None = not set / not named",
        "groups": [{"releases": g["releases"], "code_sha256_16": g["code_sha256_16"], "block_sizes": a}
                   for a, g in groups.items()],
    }


if __name__ == "__main__":
    data = derive()
    OUT.write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {OUT}: {[g['releases'] for g in data['groups']]}", file=sys.stderr)
