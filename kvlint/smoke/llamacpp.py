"""The llama.cpp smoke test: create a real llama.cpp context and read back its KV allocation.

For a llama.cpp (or Ollama) deployment, kvlint predicts two things before any model is loaded:
the bytes of the KV cache llama.cpp will allocate, and whether llama.cpp will create the context
at all (a quantized V cache without flash attention is refused). This module checks both on the
real engine, on the CPU, through llama-cpp-python (`pip install 'kvcache-lint[llamacpp]'`):

1. write a tiny GGUF that has the deployment's KV geometry (KV heads and K/V head sizes per
   layer, the layer count) but tiny everything else: embedding width, feed-forward width and
   vocabulary do not enter the KV cache's size (llama.cpp sizes each layer's K as
   `n_embd_head_k * n_head_kv` per cell: src/llama-kv-cache.cpp, `llama_kv_cache` constructor);
2. in a child process (a llama.cpp abort must not take kvlint with it), load it and call
   `llama_init_from_model` with the deployment's cache types, flash-attention setting, context
   size, sequence count and unified flag, capturing llama.cpp's log through `llama_log_set`;
3. parse the log lines llama.cpp prints for its KV cache (`llama_kv_cache: size = ... MiB (N
   cells, L layers, s/S seqs), K (t): ... MiB, V (t): ... MiB` and `... KV buffer size = ...`;
   the older `KV self size = ...` form too) and compare with kvlint's prediction.

The format strings are those of llama.cpp b11312, the release llama-cpp-python 0.3.36 vendors
(https://github.com/ggml-org/llama.cpp/blob/b11312/src/llama-kv-cache.cpp, the `LLAMA_LOG_INFO`
calls after the buffers are allocated). The tiny GGUF is written with the `gguf` package
(ggml-org/llama.cpp `gguf-py`), the same writer llama.cpp's converters use.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import asdict, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from kvlint.deployment import GGML_ENGINES
from kvlint.records import dataclass

# ggml_type ids (ggml/include/ggml.h `enum ggml_type`) of the cache types llama.cpp accepts
# (common/arg.cpp `kv_cache_types`), and bytes per block / elements per block
# (ggml/src/ggml-common.h static_asserts: q8_0 34 B per 32, q4_0 18, q4_1 20, q5_0 22, q5_1 24,
# iq4_nl 18).
GGML_TYPES: Dict[str, Tuple[int, int, int]] = {
    "f32": (0, 4, 1),
    "f16": (1, 2, 1),
    "q4_0": (2, 18, 32),
    "q4_1": (3, 20, 32),
    "q5_0": (6, 22, 32),
    "q5_1": (7, 24, 32),
    "q8_0": (8, 34, 32),
    "iq4_nl": (20, 18, 32),
    "bf16": (30, 2, 1),
}
FLASH_ATTN = {"auto": -1, "off": 0, "on": 1}  # LLAMA_FLASH_ATTN_TYPE_{AUTO,DISABLED,ENABLED}

INSTALL_HINT = "pip install 'kvcache-lint[llamacpp]'"
PROBE_TIMEOUT_S = 300.0
MIB = 1024 * 1024

# llama.cpp >= b6646 (prefix llama_kv_cache), mid-2025 (llama_kv_cache_unified), and the
# `KV self size` line of b4747-era builds.
_SIZE_LINE = re.compile(
    r"(?P<prefix>llama_kv_cache\w*): size = +(?P<total>[0-9.]+) MiB \( *(?P<cells>\d+) cells, +(?P<layers>\d+) layers,"
    r" +(?P<seqs>\d+)/(?P<streams>\d+) seqs\), K \((?P<k_type>\w+)\): +(?P<k>[0-9.]+) MiB, V \((?P<v_type>\w+)\): +(?P<v>[0-9.]+) MiB"
)
_SELF_SIZE_LINE = re.compile(
    r"KV self size += +(?P<total>[0-9.]+) MiB, K \((?P<k_type>\w+)\): +(?P<k>[0-9.]+) MiB, V \((?P<v_type>\w+)\): +(?P<v>[0-9.]+) MiB"
)
_BUFFER_LINE = re.compile(r"(?P<buffer>\S+) KV buffer size = +(?P<mib>[0-9.]+) MiB")
_N_CTX_LINE = re.compile(r"\bn_ctx(?:_seq)? += (?P<value>\d+)")


def llama_cpp_available() -> bool:
    return importlib.util.find_spec("llama_cpp") is not None and importlib.util.find_spec("gguf") is not None


@dataclass(frozen=True)
class KVGeometry:
    """What of a model decides its llama.cpp KV size: per layer with a cache, KV heads and head sizes."""

    n_layer: int
    n_head_kv: int
    head_dim_k: int
    head_dim_v: int

    @property
    def n_embd_k_gqa(self) -> int:
        return self.n_head_kv * self.head_dim_k

    @property
    def n_embd_v_gqa(self) -> int:
        return self.n_head_kv * self.head_dim_v


@dataclass(frozen=True)
class LlamaCppCase:
    """One context to create: the llama_context_params kvlint's deployment maps to."""

    geometry: KVGeometry
    type_k: str = "f16"
    type_v: str = "f16"
    flash_attn: str = "auto"  # on | off | auto
    n_ctx: int = 4096
    n_seq_max: int = 1
    kv_unified: bool = False
    swa_full: bool = False
    n_ubatch: int = 512

    def problems(self) -> List[str]:
        out = []
        for side, name in (("K", self.type_k), ("V", self.type_v)):
            if name not in GGML_TYPES:
                out.append(f"{side} cache type {name!r} is not one llama.cpp accepts ({', '.join(GGML_TYPES)})")
        if self.flash_attn not in FLASH_ATTN:
            out.append(f"flash attention {self.flash_attn!r} is not on, off or auto")
        g = self.geometry
        if min(g.n_layer, g.n_head_kv, g.head_dim_k, g.head_dim_v) < 1:
            out.append("the geometry needs at least one layer, one KV head and positive head sizes")
        if g.n_layer > 512 or g.n_embd_k_gqa > 65536 or g.n_embd_v_gqa > 65536:
            out.append("the geometry is larger than the smoke test builds (512 layers, 65536 K/V width)")
        if not 1 <= self.n_ctx <= 1 << 22 or not 1 <= self.n_seq_max <= 256 or not 1 <= self.n_ubatch <= 1 << 16:
            out.append("context size, sequences or ubatch out of the smoke test's range")
        return out


@dataclass(frozen=True)
class KVLog:
    """What llama.cpp's log says about the KV cache it allocated (None when a line was absent)."""

    cells_per_stream: Optional[int] = None
    layers: Optional[int] = None
    seqs: Optional[int] = None
    streams: Optional[int] = None
    k_type: Optional[str] = None
    v_type: Optional[str] = None
    k_mib: Optional[float] = None
    v_mib: Optional[float] = None
    total_mib: Optional[float] = None
    buffers_mib: Dict[str, float] = field(default_factory=dict)

    @property
    def cells(self) -> Optional[int]:
        if self.cells_per_stream is None:
            return None
        return self.cells_per_stream * (self.streams or 1)

    @property
    def buffer_total_mib(self) -> Optional[float]:
        return round(sum(self.buffers_mib.values()), 2) if self.buffers_mib else None


def parse_kv_log(text: str) -> KVLog:
    """The KV lines of a llama.cpp log (any of the formats in the module docstring)."""
    found: Dict[str, Any] = {}
    buffers: Dict[str, float] = {}
    for line in text.splitlines():
        size = _SIZE_LINE.search(line)
        if size:
            found.update(
                cells_per_stream=int(size["cells"]), layers=int(size["layers"]), seqs=int(size["seqs"]),
                streams=int(size["streams"]), k_type=size["k_type"], v_type=size["v_type"],
                k_mib=float(size["k"]), v_mib=float(size["v"]), total_mib=float(size["total"]),
            )
            continue
        self_size = _SELF_SIZE_LINE.search(line)
        if self_size:
            found.update(
                k_type=self_size["k_type"], v_type=self_size["v_type"], k_mib=float(self_size["k"]),
                v_mib=float(self_size["v"]), total_mib=float(self_size["total"]),
            )
            continue
        buffer = _BUFFER_LINE.search(line)
        if buffer:
            buffers[buffer["buffer"]] = buffers.get(buffer["buffer"], 0.0) + float(buffer["mib"])
    return KVLog(buffers_mib=buffers, **found)


@dataclass(frozen=True)
class Measurement:
    """One llama.cpp context creation: created or refused, its log, and the KV it allocated."""

    created: bool
    model_loaded: bool
    n_ctx: Optional[int]  # llama_n_ctx of the created context (cells after padding)
    n_ctx_seq: Optional[int]
    kv: KVLog
    errors: Tuple[str, ...]  # llama.cpp's error and warning lines
    log: str
    build_info: Optional[str] = None
    llama_cpp_python: Optional[str] = None

    @property
    def k_bytes(self) -> Optional[int]:
        return None if self.kv.k_mib is None else round(self.kv.k_mib * MIB)

    @property
    def v_bytes(self) -> Optional[int]:
        return None if self.kv.v_mib is None else round(self.kv.v_mib * MIB)

    @property
    def total_bytes(self) -> Optional[int]:
        if self.kv.k_mib is None or self.kv.v_mib is None:
            return None
        return round((self.kv.k_mib + self.kv.v_mib) * MIB)

    def bytes_per_cell(self) -> Optional[float]:
        """K+V bytes per cell, from the logged MiB (two decimals) and the exact cell count."""
        cells = self.kv.cells
        total = self.total_bytes
        if not cells or total is None:
            return None
        return total / cells


class ProbeError(RuntimeError):
    """llama.cpp could not be run at all (missing package, crash, timeout): not a verdict."""


def write_tiny_gguf(geometry: KVGeometry, path: Path, n_ctx_train: int = 1 << 20) -> None:
    """A `llama`-architecture GGUF with this KV geometry and zero weights of width 64.

    The query and output projections use n_head = n_head_kv (no grouping): the query width does
    not enter the KV cache. `rope.dimension_count` equals the K head size, as llama requires. The
    tokenizer is "none" with a 32-entry dummy vocabulary (`llama.vocab_size`), which llama.cpp
    accepts without a token list (src/llama-vocab.cpp, `tokenizer_model == "none"`).
    """
    import gguf  # the smoke test's optional dependency
    import numpy as np

    n_embd, n_ff, n_vocab = 64, 64, 32
    heads = geometry.n_head_kv
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_block_count(geometry.n_layer)
    writer.add_context_length(n_ctx_train)
    writer.add_embedding_length(n_embd)
    writer.add_feed_forward_length(n_ff)
    writer.add_head_count(heads)
    writer.add_head_count_kv(heads)
    writer.add_key_length(geometry.head_dim_k)
    writer.add_value_length(geometry.head_dim_v)
    writer.add_rope_dimension_count(geometry.head_dim_k)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_file_type(1)  # LLAMA_FTYPE_MOSTLY_F16
    writer.add_tokenizer_model("none")
    writer.add_vocab_size(n_vocab)

    def zeros(*shape: int) -> Any:  # numpy shapes are ggml's ne reversed
        return np.zeros(shape, dtype=np.float16)

    writer.add_tensor("token_embd.weight", zeros(n_vocab, n_embd))
    writer.add_tensor("output_norm.weight", np.ones((n_embd,), dtype=np.float32))
    for i in range(geometry.n_layer):
        writer.add_tensor(f"blk.{i}.attn_norm.weight", np.ones((n_embd,), dtype=np.float32))
        writer.add_tensor(f"blk.{i}.attn_q.weight", zeros(heads * geometry.head_dim_k, n_embd))
        writer.add_tensor(f"blk.{i}.attn_k.weight", zeros(geometry.n_embd_k_gqa, n_embd))
        writer.add_tensor(f"blk.{i}.attn_v.weight", zeros(geometry.n_embd_v_gqa, n_embd))
        writer.add_tensor(f"blk.{i}.attn_output.weight", zeros(n_embd, heads * geometry.head_dim_k))
        writer.add_tensor(f"blk.{i}.ffn_norm.weight", np.ones((n_embd,), dtype=np.float32))
        writer.add_tensor(f"blk.{i}.ffn_gate.weight", zeros(n_ff, n_embd))
        writer.add_tensor(f"blk.{i}.ffn_down.weight", zeros(n_embd, n_ff))
        writer.add_tensor(f"blk.{i}.ffn_up.weight", zeros(n_ff, n_embd))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def run_case(case: LlamaCppCase, workdir: Optional[Path] = None, timeout: float = PROBE_TIMEOUT_S) -> Measurement:
    """Create the context in a child process and return what llama.cpp did. Raises ProbeError."""
    problems = case.problems()
    if problems:
        raise ProbeError("; ".join(problems))
    if not llama_cpp_available():
        raise ProbeError(f"llama-cpp-python and gguf are not installed; the llama.cpp smoke test needs them: {INSTALL_HINT}")
    with tempfile.TemporaryDirectory(prefix="kvlint-llamacpp-", dir=workdir) as tmp:
        model = Path(tmp) / "tiny.gguf"
        write_tiny_gguf(case.geometry, model)
        spec = {
            "model": str(model),
            "n_ctx": case.n_ctx,
            "n_seq_max": case.n_seq_max,
            "kv_unified": case.kv_unified,
            "swa_full": case.swa_full,
            "n_ubatch": case.n_ubatch,
            "flash_attn_type": FLASH_ATTN[case.flash_attn],
            "type_k": GGML_TYPES[case.type_k][0],
            "type_v": GGML_TYPES[case.type_v][0],
        }
        env = dict(os.environ)
        env.setdefault("OMP_NUM_THREADS", "1")
        try:
            child = subprocess.run(
                [sys.executable, "-m", "kvlint.smoke.llamacpp_probe"],
                input=json.dumps(spec), capture_output=True, text=True, timeout=timeout, env=env,
            )
        except subprocess.TimeoutExpired:
            raise ProbeError(f"llama.cpp did not create the context within {timeout:.0f} s") from None
    if child.returncode != 0 or not child.stdout.strip():
        tail = (child.stderr or "").strip().splitlines()[-3:]
        raise ProbeError(f"the llama.cpp probe exited with status {child.returncode}: {' | '.join(tail) or 'no output'}")
    try:
        result = json.loads(child.stdout.strip().splitlines()[-1])
    except json.JSONDecodeError:
        raise ProbeError("the llama.cpp probe printed no result") from None
    log = str(result.get("log", ""))
    errors = tuple(line.strip() for line in log.splitlines() if re.search(r"\b(error|failed|requires|refus)", line, re.I))
    return Measurement(
        created=bool(result.get("created")),
        model_loaded=bool(result.get("model_loaded")),
        n_ctx=result.get("n_ctx"),
        n_ctx_seq=result.get("n_ctx_seq"),
        kv=parse_kv_log(log),
        errors=errors,
        log=log,
        build_info=result.get("system_info"),
        llama_cpp_python=result.get("llama_cpp_python"),
    )


# --- comparison with kvlint's prediction -----------------------------------------------------


@dataclass(frozen=True)
class Prediction:
    """kvlint's prediction for one case: refused (with the message) or the KV bytes and cells."""

    starts: bool
    start_error: Optional[str] = None
    cells: Optional[int] = None
    k_bytes: Optional[int] = None
    v_bytes: Optional[int] = None

    @property
    def total_bytes(self) -> Optional[int]:
        if self.k_bytes is None or self.v_bytes is None:
            return None
        return self.k_bytes + self.v_bytes


@dataclass(frozen=True)
class Check:
    """One quantity of a llama.cpp smoke run, measured beside kvlint's prediction."""

    quantity: str
    measured: Any
    predicted: Any
    passed: bool
    gating: bool = True  # False: reported, but does not fail the smoke test (the refusal's wording)


def _mib_equal(logged: Optional[float], predicted_bytes: Optional[int]) -> bool:
    """llama.cpp prints MiB with two decimals: equal when the prediction prints the same."""
    return logged is not None and predicted_bytes is not None and f"{predicted_bytes / MIB:.2f}" == f"{logged:.2f}"


def compare(measured: Measurement, predicted: Prediction) -> List[Check]:
    """Created-or-refused first; when both say it starts, cells and K/V bytes (exact to the log's 0.01 MiB)."""
    checks = [Check("context created", measured.created, predicted.starts, measured.created == predicted.starts)]
    if not measured.created and not predicted.starts and predicted.start_error:
        said = any(predicted.start_error.strip().lower() in line.lower() for line in measured.errors)
        checks.append(Check("refusal message", " | ".join(measured.errors[-2:]), predicted.start_error, said, gating=False))
    if measured.created and predicted.starts:
        if predicted.cells is not None:
            checks.append(Check("cells", measured.kv.cells, predicted.cells, measured.kv.cells == predicted.cells))
        for name, logged, bytes_ in (
            ("K bytes", measured.kv.k_mib, predicted.k_bytes),
            ("V bytes", measured.kv.v_mib, predicted.v_bytes),
        ):
            if bytes_ is not None:
                checks.append(Check(name, None if logged is None else f"{logged:.2f} MiB", f"{bytes_ / MIB:.2f} MiB", _mib_equal(logged, bytes_)))
    return checks


def measurement_dict(measured: Measurement) -> Dict[str, Any]:
    kv = asdict(measured.kv)
    kv["cells"] = measured.kv.cells
    return {
        "created": measured.created,
        "n_ctx": measured.n_ctx,
        "n_ctx_seq": measured.n_ctx_seq,
        "kv": kv,
        "k_bytes": measured.k_bytes,
        "v_bytes": measured.v_bytes,
        "errors": list(measured.errors),
        "llama_cpp_python": measured.llama_cpp_python,
    }


__all__: Sequence[str] = (
    "GGML_TYPES", "KVGeometry", "LlamaCppCase", "KVLog", "Measurement", "Prediction", "Check", "ProbeError",
    "llama_cpp_available", "parse_kv_log", "write_tiny_gguf", "run_case", "compare", "measurement_dict",
    "VENDORED_BUILD", "GGML_ENGINES", "CaseResult", "case_from_deployment", "smoke_manifest", "predict",
    "run_smoke_case", "smoke_deployment", "run_llamacpp_smoke",
)


# --- from a kvlint deployment to a smoke run -------------------------------------------------

# llama-cpp-python 0.3.36 vendors ggml-org/llama.cpp@0c1e57098 (its CHANGELOG.md), which is the
# release tag b11312 (https://github.com/ggml-org/llama.cpp/releases/tag/b11312). The sdist
# carries no git metadata, so the build's own LLAMA_BUILD_NUMBER reads 0: the tag is pinned here.
VENDORED_BUILD = "b11312"
VENDORED_PACKAGE = "llama-cpp-python==0.3.36"


@dataclass
class CaseResult:
    """One deployment's llama.cpp smoke run: what ran, kvlint's prediction, the measurement."""

    name: str
    case: Optional[LlamaCppCase]
    status: str  # passed | failed | skipped
    reason: str = ""
    notes: List[str] = field(default_factory=list)
    prediction: Optional[Prediction] = None
    measurement: Optional[Measurement] = None
    checks: List[Check] = field(default_factory=list)
    manifest: str = ""  # the llama.cpp b11312 CPU manifest kvlint predicted from

    def as_dict(self) -> Dict[str, Any]:
        return {
            "name": self.name,
            "status": self.status,
            "reason": self.reason,
            "notes": self.notes,
            "case": None if self.case is None else asdict(self.case),
            "prediction": None if self.prediction is None else {**asdict(self.prediction), "total_bytes": self.prediction.total_bytes},
            "measured": None if self.measurement is None else measurement_dict(self.measurement),
            "checks": [asdict(c) for c in self.checks],
            "manifest": self.manifest,
        }


def case_from_deployment(deployment: Any, facts: Dict[str, Any]) -> Tuple[Optional[LlamaCppCase], str]:
    """The llama_context_params a llama.cpp/Ollama deployment resolves to, or (None, why not)."""
    plan = getattr(deployment, "ggml", None)
    model = getattr(deployment, "model", None)
    if plan is None:
        return None, "not a llama.cpp or Ollama deployment"
    if model is None or not model.layers:
        return None, "the model's geometry is unknown (give model.config: a .gguf file, or model.geometry)"
    if plan.context_size is None or plan.context_size <= 0:
        return None, "the context size is not set (serving.context_size / num_ctx), so the KV size is whatever llama.cpp fits"
    shapes = {(layer.num_kv_heads, layer.head_dim, layer.v_head_dim) for layer in model.layers}
    kinds = {layer.kind for layer in model.layers}
    if model.is_mla or len(shapes) != 1 or kinds != {"full"}:
        return None, ("the tiny model is a plain llama: per-layer head counts, sliding-window and MLA layers are "
                      "not built by this smoke test")
    heads, head_k, head_v = next(iter(shapes))
    fa = (facts.get("llamacpp") or {}).get("fa_requested") or ("on" if plan.flash_attn else "off" if plan.flash_attn is False else "auto")
    case = LlamaCppCase(
        geometry=KVGeometry(n_layer=len(model.layers), n_head_kv=heads, head_dim_k=head_k, head_dim_v=head_v),
        type_k=plan.type_k, type_v=plan.type_v, flash_attn=str(fa), n_ctx=int(plan.context_size),
        n_seq_max=max(1, int(plan.n_seq)), kv_unified=bool(plan.unified), swa_full=bool(plan.swa_full),
        n_ubatch=int(plan.ubatch or 512),
    )
    problems = case.problems()
    return (None, "; ".join(problems)) if problems else (case, "")


def smoke_manifest(case: LlamaCppCase, name: str, model_file: str) -> str:
    """The kvlint/v1 manifest of this case as llama.cpp b11312 on the CPU backend."""
    safe = re.sub(r"[^a-z0-9.-]+", "-", name.lower()).strip("-.")[:60] or "smoke"
    return "\n".join([
        "apiVersion: kvlint/v1",
        "kind: Deployment",
        f"metadata: {{name: {safe}}}",
        f'engine: {{name: llama.cpp, version: {VENDORED_BUILD}, flash_attention: "{case.flash_attn}", build: {{backend: cpu}}}}',
        "hardware: {memory: 64GiB}",
        f"model: {{name: kvlint-smoke-tiny, config: {model_file}}}",
        f"kv_cache: {{dtype: {case.type_k}, key_dtype: {case.type_k}, value_dtype: {case.type_v}}}",
        f"serving: {{context_size: {case.n_ctx}, max_num_seqs: {case.n_seq_max}, kv_unified: {str(case.kv_unified).lower()},"
        f" swa_full: {str(case.swa_full).lower()}, ubatch_size: {case.n_ubatch}}}",
        "",
    ])


def predict(manifest_path: Path) -> Tuple[Optional[Prediction], str]:
    """kvlint's own prediction for a smoke manifest: (prediction, "") or (None, what is missing)."""
    try:
        from kvlint.capacity.llamacpp import llamacpp_cache
    except ImportError as error:  # the llama.cpp capacity model is not in this kvlint
        return None, f"kvlint has no llama.cpp capacity model here ({error}); only llama.cpp's side was measured"
    import yaml

    from kvlint.analysis import analyze_deployment

    data = yaml.safe_load(manifest_path.read_text(encoding="utf-8"))
    analysis = analyze_deployment(data, str(manifest_path), manifest_path)
    facts = analysis.facts.get("llamacpp") or {}
    if "start_error" not in facts:
        return None, "kvlint's facts carry no llamacpp.start_error: it cannot say whether llama.cpp starts"
    model_error = (analysis.facts.get("model") or {}).get("config_error")
    if model_error:
        return None, f"kvlint could not read the tiny model's geometry: {model_error}"
    start_error = facts.get("start_error")
    cache = llamacpp_cache(analysis.deployment) if analysis.deployment is not None else None
    if start_error is None and cache is None:
        return None, "kvlint predicts a start but computes no KV size for it"
    return Prediction(
        starts=start_error is None,
        start_error=start_error,
        cells=None if cache is None else cache.cells,
        k_bytes=None if cache is None else cache.k_bytes,
        v_bytes=None if cache is None else cache.v_bytes,
    ), ""


def run_smoke_case(case: LlamaCppCase, name: str, notes: Sequence[str] = (), workdir: Optional[Path] = None) -> CaseResult:
    """Predict with kvlint (from the tiny GGUF's own header) and measure with llama.cpp."""
    result = CaseResult(name=name, case=case, status="skipped", notes=list(notes))
    with tempfile.TemporaryDirectory(prefix="kvlint-llamacpp-smoke-", dir=workdir) as tmp:
        model = Path(tmp) / "tiny.gguf"
        manifest = Path(tmp) / "smoke.yaml"
        if not llama_cpp_available():
            result.reason = f"llama-cpp-python and gguf are not installed: {INSTALL_HINT}"
            return result
        write_tiny_gguf(case.geometry, model)
        result.manifest = smoke_manifest(case, name, model.name)
        manifest.write_text(result.manifest, encoding="utf-8")
        result.prediction, missing = predict(manifest)
        try:
            result.measurement = run_case(case, workdir=Path(tmp))
        except ProbeError as error:
            result.reason = str(error)
            return result
    if result.prediction is None:
        result.reason = missing
        return result
    result.checks = compare(result.measurement, result.prediction)
    result.status = "passed" if all(c.passed for c in result.checks if c.gating) else "failed"
    return result


def smoke_deployment(deployment: Any, facts: Dict[str, Any]) -> CaseResult:
    case, why = case_from_deployment(deployment, facts)
    name = getattr(deployment, "name", "deployment")
    if case is None:
        return CaseResult(name=name, case=None, status="skipped", reason=why)
    notes = []
    backend = (facts.get("llamacpp") or {}).get("backend")
    if deployment.engine != "llama.cpp" or deployment.engine_version != VENDORED_BUILD or backend != "cpu":
        notes.append(
            f"runs as llama.cpp {VENDORED_BUILD} ({VENDORED_PACKAGE}) on the CPU backend with the flags this deployment "
            f"resolves to; kvlint's prediction is recomputed for that build and backend (the deployment: "
            f"{deployment.engine} {deployment.engine_version}, {backend or 'backend unknown'})"
        )
    return run_smoke_case(case, name, notes)


def to_text(results: Sequence[CaseResult], summary: Dict[str, Any]) -> str:
    lines: List[str] = []
    for r in results:
        lines.append(f"{r.name}: {r.status}" + (f" ({r.reason})" if r.reason else ""))
        for note in r.notes:
            lines.append(f"  note: {note}")
        if r.case is not None:
            c = r.case
            lines.append(
                f"  llama.cpp {VENDORED_BUILD} CPU: -c {c.n_ctx} -np {c.n_seq_max}{' --kv-unified' if c.kv_unified else ''}"
                f" -ctk {c.type_k} -ctv {c.type_v} -fa {c.flash_attn}; {c.geometry.n_layer} layers x {c.geometry.n_head_kv}"
                f" KV heads x {c.geometry.head_dim_k}/{c.geometry.head_dim_v}"
            )
        for check in r.checks:
            mark = "ok" if check.passed else ("MISMATCH" if check.gating else "differs (not gating)")
            lines.append(f"  {check.quantity:<16} llama.cpp: {check.measured!s:<24} kvlint: {check.predicted!s:<24} {mark}")
    verdict = summary.get("verdict", "")
    lines.append(f"llama.cpp smoke: {verdict} ({summary.get('passed', 0)} passed, {summary.get('failed', 0)} failed, {summary.get('skipped', 0)} not run)")
    return "\n".join(lines) + "\n"


def run_llamacpp_smoke(pairs: Sequence[Tuple[Any, Dict[str, Any]]], fmt: str = "text") -> Tuple[int, str]:
    """(exit code, rendering) for llama.cpp/Ollama deployments: 0 passed, 1 failed, 3 not run."""
    try:
        results = [smoke_deployment(deployment, facts) for deployment, facts in pairs]
    except Exception as exc:  # exit 2 with one line, never a traceback on the terminal
        detail = f"{type(exc).__name__}: {exc}".splitlines()[0]
        if fmt == "json":
            summary = {"verdict": "error", "passed": 0, "failed": 0, "skipped": 0, "message": f"internal error: {detail}"}
            return 2, json.dumps({"version": 1, "summary": summary, "deployments": []}, indent=2)
        return 2, f"kvlint smoke: error: internal error: {detail}\n"
    passed = sum(r.status == "passed" for r in results)
    failed = sum(r.status == "failed" for r in results)
    skipped = len(results) - passed - failed
    if failed:
        verdict, code = "failed", 1
    elif skipped or not results:
        verdict, code = "not-run", 3
    else:
        verdict, code = "passed", 0
    summary: Dict[str, Any] = {"verdict": verdict, "passed": passed, "failed": failed, "skipped": skipped}
    if fmt == "json":
        return code, json.dumps({"version": 1, "engine": f"llama.cpp {VENDORED_BUILD}", "summary": summary,
                                 "deployments": [r.as_dict() for r in results]}, indent=2)
    return code, to_text(results, summary)
