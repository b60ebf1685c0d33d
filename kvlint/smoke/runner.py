"""Smoke checks per layer group, and the verdict.

For each layer group of a deployment (layers sharing geometry and storage format on one GPU):

1. allocate the paged cache of every layer in the group as a real tensor in the format's storage
   dtype; measure the dtype held and the bytes per block (`numel * element_size / num_blocks`,
   summed over the layers) against the capacity stage's prediction: they must be equal;
2. quantize-and-write K and V through the format's quantizer, run paged decode attention reading
   that cache (GQA, sliding window or chunk for windowed groups), and compare with a BF16
   reference on the same inputs against the format's tolerance (tolerances.py);
3. record the kernel that ran (torch.profiler on CUDA, "torch-reference" on CPU);
4. time one decode step (write one token + attention) against BF16 at a few context lengths and
   fit `ITL = slope * context + intercept` (the fit of the vLLM blog post "The State of FP8
   KV-Cache and Attention Quantization in vLLM", vllm-project/vllm-project.github.io
   `_posts/2026-04-22-fp8-kvcache.md`), with the break-even context;
5. decide whether anything fell back: a cache held wider than planned, a planned kernel that
   cannot run natively on this device, or an importable engine selecting another backend.
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import field
from typing import Any, Callable, Dict, List, Optional, Sequence

import torch

from kvlint.deployment import Deployment
from kvlint.records import dataclass
from kvlint.smoke import prediction as _prediction
from kvlint.smoke.device import DeviceInfo, kernel_plan, probe_vllm_backend, profiled_kernel_names
from kvlint.smoke.formats import CacheFormat, UnsupportedLayout, cache_format
from kvlint.smoke.paged import PagedKVCache, paged_decode_attention, reference_attention, scattered_block_table
from kvlint.smoke.tolerances import tolerance

PASSED, FAILED, SKIPPED = "passed", "failed", "skipped"

DecodeKernel = Callable[..., torch.Tensor]


@dataclass(frozen=True)
class SmokeSettings:
    """How much a smoke test runs: layers per group, sequence length, batch, timing contexts."""

    layers: Optional[int] = None  # at most this many layers per group get the attention check
    tokens: int = 192  # longest sequence of the accuracy check (a window group may use more)
    batch: int = 2
    itl_contexts: Sequence[int] = (256, 1024, 4096)
    itl_repeats: int = 5
    seed: int = 0

    @classmethod
    def for_device(cls, info: DeviceInfo, layers: Optional[int] = None) -> SmokeSettings:
        if info.is_cuda:
            return cls(layers=layers, tokens=1024, batch=4, itl_contexts=(1024, 4096, 16384), itl_repeats=20)
        return cls(layers=layers)


@dataclass
class Timing:
    """Decode attention times of the quantized cache beside BF16, with their fitted lines."""

    contexts: List[int]
    quantized_ms: List[float]
    bf16_ms: List[float]
    quantized_fit: Dict[str, float]
    bf16_fit: Dict[str, float]
    break_even_tokens: Optional[float]  # None: no crossing (quantized never faster, or always)

    def as_dict(self) -> Dict[str, Any]:
        return {
            "contexts": self.contexts,
            "quantized_ms": [round(x, 5) for x in self.quantized_ms],
            "bf16_ms": [round(x, 5) for x in self.bf16_ms],
            "quantized_fit": self.quantized_fit,
            "bf16_fit": self.bf16_fit,
            "break_even_tokens": None if self.break_even_tokens is None else round(self.break_even_tokens, 1),
        }


@dataclass
class GroupResult:
    """The smoke test's result for one KV-cache group: memory and accuracy, measured and predicted."""

    group: str
    layers: List[int]
    cache_format: str
    status: str = PASSED
    storage_dtype_planned: Optional[str] = None
    storage_dtype_held: Optional[str] = None
    element_size_held: Optional[int] = None
    block_size: Optional[int] = None
    bytes_per_block_measured: Optional[int] = None
    bytes_per_block_predicted: Optional[int] = None
    layers_checked: int = 0
    max_rel_error: Optional[float] = None
    mean_rel_error: Optional[float] = None
    tolerance: Optional[Dict[str, float]] = None
    kernel: Optional[str] = None
    native: Optional[bool] = None
    timing: Optional[Timing] = None
    engine_probe: Optional[Dict[str, Any]] = None
    failures: List[str] = field(default_factory=list)
    fallbacks: List[str] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)

    def fail(self, reason: str) -> None:
        self.failures.append(reason)
        self.status = FAILED

    def as_dict(self) -> Dict[str, Any]:
        return {
            "group": self.group,
            "layers": self.layers,
            "cache_format": self.cache_format,
            "status": self.status,
            "storage": {
                "planned_dtype": self.storage_dtype_planned,
                "held_dtype": self.storage_dtype_held,
                "element_size": self.element_size_held,
            },
            "bytes_per_block": {
                "block_size": self.block_size,
                "measured": self.bytes_per_block_measured,
                "predicted": self.bytes_per_block_predicted,
                "source": _prediction.prediction_source(),
                "match": (
                    None
                    if self.bytes_per_block_measured is None or self.bytes_per_block_predicted is None
                    else self.bytes_per_block_measured == self.bytes_per_block_predicted
                ),
            },
            "error": {
                "layers_checked": self.layers_checked,
                "max_rel": _round(self.max_rel_error),
                "mean_rel": _round(self.mean_rel_error),
                "tolerance": self.tolerance,
            },
            "kernel": self.kernel,
            "native": self.native,
            "timing": self.timing.as_dict() if self.timing else None,
            "engine_probe": self.engine_probe,
            "fallbacks": self.fallbacks,
            "failures": self.failures,
            "notes": self.notes,
        }


@dataclass
class DeploymentResult:
    """The smoke test's result for one deployment, group by group."""

    file: str
    name: str
    status: str
    device: Dict[str, Any]
    groups: List[GroupResult]
    notes: List[str] = field(default_factory=list)
    capacity_engine: Optional[Dict[str, Any]] = None

    def as_dict(self) -> Dict[str, Any]:
        return {
            "file": self.file,
            "name": self.name,
            "status": self.status,
            "device": self.device,
            "groups": [g.as_dict() for g in self.groups],
            "capacity_engine": self.capacity_engine,
            "notes": self.notes,
        }


def _round(x: Optional[float]) -> Optional[float]:
    return None if x is None else float(f"{x:.6g}")


# --------------------------------------------------------------------------- inputs


def _group_query_heads(deployment: Deployment, group: _prediction.LayerGroup) -> int:
    model = deployment.model
    hq_total = model.num_attention_heads if model and model.num_attention_heads else None
    kv_total = group.plans[0].geometry.num_kv_heads
    if not hq_total or hq_total % kv_total:
        return group.kv_heads
    return group.kv_heads * (hq_total // kv_total)


def make_inputs(batch: int, tokens: int, hq: int, hkv: int, head_dim: int, generator: torch.Generator, device: torch.device):
    """K, V (B, T, Hkv, D) and Q (B, Hq, D) in BF16: heads spread over 16x in magnitude (queries
    scaled back so scores stay near unit variance), 2% of tokens 4x louder."""
    head_scale = torch.tensor([0.25, 0.5, 1.0, 2.0, 4.0], dtype=torch.float32)[torch.arange(hkv) % 5]
    k = torch.randn(batch, tokens, hkv, head_dim, generator=generator) * head_scale.view(1, 1, hkv, 1)
    loud = torch.rand(batch, tokens, generator=generator) < 0.02
    k[loud] *= 4
    v = torch.randn(batch, tokens, hkv, head_dim, generator=generator)
    q = torch.randn(batch, hq, head_dim, generator=generator) / head_scale.repeat_interleave(hq // hkv).view(1, hq, 1)
    return k.bfloat16().to(device), v.bfloat16().to(device), q.bfloat16().to(device)


def _sequence_lengths(settings: SmokeSettings, group: _prediction.LayerGroup) -> List[int]:
    longest = settings.tokens
    if group.window:  # make the window (or chunk boundary) matter
        longest = min(max(longest, group.window + settings.tokens // 2), 4 * settings.tokens)
    lengths = [longest]
    for b in range(1, settings.batch):
        lengths.append(max(1, (longest * (settings.batch - b)) // settings.batch + 3 * b))
    return lengths


def _calibrated_cache(
    fmt: CacheFormat, deployment: Deployment, k_written: torch.Tensor, v_written: torch.Tensor, cache: PagedKVCache
) -> None:
    granularity = deployment.scales.granularity
    source = deployment.scales.source
    cache.k_scale = fmt.calibrate(k_written, granularity, source)
    cache.v_scale = fmt.calibrate(v_written, granularity, source)


# --------------------------------------------------------------------------- kernels


def _select_kernel(info: DeviceInfo, fmt: CacheFormat, result: GroupResult, block_size: int, head_dim: int) -> DecodeKernel:
    """The Triton kernel on CUDA where kvlint has one, else the torch reference kernel."""
    if info.is_cuda and info.triton_version:
        try:
            from kvlint.smoke import triton_kernels

            if triton_kernels.supports(fmt, block_size, head_dim):
                return triton_kernels.paged_decode_attention
            result.notes.append(
                f"kvlint's Triton kernel does not cover {fmt.id} at block size {block_size}, head size {head_dim}: "
                "torch kernels on CUDA (a limit of the smoke test, not of the engine)"
            )
        except Exception as exc:  # import failure of the optional path is a finding, not a crash
            result.notes.append(f"Triton path unavailable: {type(exc).__name__}: {exc}"[:300])
    elif info.is_cuda:
        result.notes.append("Triton is not installed: torch kernels on CUDA")
    return paged_decode_attention


# --------------------------------------------------------------------------- timing


def _linear_fit(xs: Sequence[float], ys: Sequence[float]) -> Dict[str, float]:
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else 0.0
    return {"slope_ms_per_token": float(f"{slope:.6g}"), "intercept_ms": float(f"{my - slope * mx:.6g}")}


def break_even(quantized: Dict[str, float], bf16: Dict[str, float]) -> Optional[float]:
    """(intercept_q - intercept_bf16) / (slope_bf16 - slope_q), as in that vLLM blog post."""
    dslope = bf16["slope_ms_per_token"] - quantized["slope_ms_per_token"]
    dintercept = quantized["intercept_ms"] - bf16["intercept_ms"]
    if dslope <= 0:
        return None  # quantized reads no cheaper per token: it never catches up
    return max(0.0, dintercept / dslope)


def _time_ms(fn: Callable[[], Any], info: DeviceInfo, repeats: int) -> float:
    fn()  # warm-up (and Triton compilation)
    samples = []
    if info.is_cuda:
        torch.cuda.synchronize()
        for _ in range(repeats):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            torch.cuda.synchronize()
            samples.append(start.elapsed_time(end))
    else:
        for _ in range(repeats):
            t0 = time.perf_counter()
            fn()
            samples.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(samples)


def _decode_step(
    cache: PagedKVCache, kernel: DecodeKernel, q, k_new, v_new, block_table, seq_lens, group: _prediction.LayerGroup
) -> Callable[[], torch.Tensor]:
    blocks, offsets = cache.slots(block_table, seq_lens - 1)

    def step() -> torch.Tensor:
        cache.write(k_new, v_new, blocks, offsets)
        return kernel(cache, q, block_table, seq_lens, group.kind, group.window)

    return step


def _timing(
    deployment: Deployment,
    group: _prediction.LayerGroup,
    fmt: CacheFormat,
    kernel: DecodeKernel,
    bf16_kernel: DecodeKernel,
    info: DeviceInfo,
    settings: SmokeSettings,
    block_size: int,
) -> Timing:
    """Single-sequence decode step at each context length, quantized vs BF16, on one layer."""
    gen = torch.Generator().manual_seed(settings.seed + 7)
    hq = _group_query_heads(deployment, group)
    bf16 = cache_format("fp16" if deployment.model and deployment.model.dtype == "float16" else "bf16")
    quant_ms, bf16_ms = [], []
    contexts = list(settings.itl_contexts)
    for ctx in contexts:
        k, v, q = make_inputs(1, ctx, hq, group.kv_heads, group.head_dim, gen, info.device)
        nblocks = math.ceil(ctx / block_size) + 1
        table = scattered_block_table([ctx], block_size, nblocks, gen).to(info.device)
        lens = torch.tensor([ctx], device=info.device)
        for f, kern, sink in ((fmt, kernel, quant_ms), (bf16, bf16_kernel, bf16_ms)):
            cache = PagedKVCache.allocate(f, nblocks, block_size, group.kv_heads, group.head_dim, info.device)
            _calibrated_cache(f, deployment, k[0], v[0], cache)
            cache.write_sequences(k, v, table, [ctx])
            step = _decode_step(cache, kern, q, k[:, -1], v[:, -1], table, lens, group)
            sink.append(_time_ms(step, info, settings.itl_repeats))
            del cache
    qfit, bfit = _linear_fit(contexts, quant_ms), _linear_fit(contexts, bf16_ms)
    return Timing(contexts, quant_ms, bf16_ms, qfit, bfit, break_even(qfit, bfit))


# --------------------------------------------------------------------------- one group


def check_group(
    deployment: Deployment,
    group: _prediction.LayerGroup,
    predicted: Optional[int],
    block_size: int,
    info: DeviceInfo,
    settings: SmokeSettings,
) -> GroupResult:
    result = GroupResult(group.name, group.layer_indices, group.cache_format, block_size=block_size)
    result.bytes_per_block_predicted = predicted
    try:
        fmt = cache_format(group.cache_format)
        if group.is_mla:
            raise UnsupportedLayout("MLA latent caches are not built by the smoke test")
        if group.v_head_dim != group.head_dim:
            raise UnsupportedLayout(f"K head size {group.head_dim} != V head size {group.v_head_dim}")
        fmt.cell_width(group.head_dim)
    except UnsupportedLayout as exc:
        result.status = SKIPPED
        result.notes.append(str(exc))
        return result

    result.storage_dtype_planned = str(fmt.storage_dtype).replace("torch.", "")
    plan = kernel_plan(info, fmt.id, deployment.backend)
    result.native = plan.native if info.is_cuda else False
    result.notes.extend(plan.notes)
    for reason in plan.fallback_reasons:
        result.fallbacks.append(reason)
        result.fail(f"fallback: {reason}")

    gen = torch.Generator().manual_seed(settings.seed)
    lengths = _sequence_lengths(settings, group)
    nblocks = sum(math.ceil(n / block_size) for n in lengths) + 1  # + vLLM's null block 0
    hq = _group_query_heads(deployment, group)

    # 1. Allocate every layer's cache; measure what is held.
    caches = [PagedKVCache.allocate(fmt, nblocks, block_size, group.kv_heads, group.head_dim, info.device) for _ in group.plans]
    held = {c.data.dtype for c in caches}
    held_dtype = caches[0].data.dtype
    result.storage_dtype_held = ",".join(sorted(str(d).replace("torch.", "") for d in held))
    result.element_size_held = caches[0].data.element_size()
    if len(held) > 1 or held_dtype != fmt.storage_dtype:
        reason = f"cache held as {result.storage_dtype_held}, planned {result.storage_dtype_planned}"
        if result.element_size_held > torch.empty((), dtype=fmt.storage_dtype).element_size():
            reason = "stored wider than planned: " + reason
            result.fallbacks.append(reason)
        result.fail(reason)
    result.bytes_per_block_measured = sum(c.bytes_per_block() for c in caches)
    if predicted is None:
        result.fail("no capacity prediction for this group")
    elif result.bytes_per_block_measured != predicted:
        result.fail(
            f"bytes per block mismatch: measured {result.bytes_per_block_measured} B on the allocated tensors, "
            f"capacity predicts {predicted} B ({result.bytes_per_block_measured - predicted:+d} B)"
        )

    # 2. Quantize-and-write, paged decode attention, BF16 reference.
    kernel = _select_kernel(info, fmt, result, block_size, group.head_dim)
    bf16_kernel = _select_kernel(info, cache_format("bf16"), GroupResult("", [], "bf16"), block_size, group.head_dim)
    tol = tolerance(fmt.id)
    result.tolerance = {"max_rel": tol.max_rel, "mean_rel": tol.mean_rel}
    check_count = len(caches) if settings.layers is None else max(1, min(settings.layers, len(caches)))
    worst_max = worst_mean = 0.0
    lens = torch.tensor(lengths, device=info.device)
    last_step = None
    for i in range(check_count):
        k, v, q = make_inputs(len(lengths), max(lengths), hq, group.kv_heads, group.head_dim, gen, info.device)
        table = scattered_block_table(lengths, block_size, nblocks, gen).to(info.device)
        cache = caches[i]
        k_written = torch.cat([k[b, :n] for b, n in enumerate(lengths)])
        v_written = torch.cat([v[b, :n] for b, n in enumerate(lengths)])
        _calibrated_cache(fmt, deployment, k_written, v_written, cache)
        cache.write_sequences(k, v, table, lengths)
        try:
            out = kernel(cache, q, table, lens, group.kind, group.window)
        except Exception as exc:
            reason = f"kernel could not run on {info.name}: {type(exc).__name__}: {exc}"[:400]
            result.fallbacks.append(reason)
            result.fail(f"fallback: {reason}")
            kernel = paged_decode_attention
            out = kernel(cache, q, table, lens, group.kind, group.window)
        ref = reference_attention(q, k, v, lens, group.kind, group.window).float()
        err = (out.float() - ref).abs()
        worst_max = max(worst_max, (err.max() / ref.abs().max().clamp_min(1e-30)).item())
        worst_mean = max(worst_mean, (err.mean() / ref.abs().mean().clamp_min(1e-30)).item())
        last_step = (cache, q, k[:, lengths[0] - 1 : lengths[0]].squeeze(1), v[:, lengths[0] - 1 : lengths[0]].squeeze(1), table)
    result.layers_checked = check_count
    result.max_rel_error, result.mean_rel_error = worst_max, worst_mean
    if not (worst_max <= tol.max_rel and worst_mean <= tol.mean_rel):
        result.fail(
            f"attention error vs BF16 above tolerance: max {worst_max:.4g} (<= {tol.max_rel}), "
            f"mean {worst_mean:.4g} (<= {tol.mean_rel})"
        )

    # 3. The kernel that ran.
    if last_step is not None:
        cache, q, k_new, v_new, table = last_step
        step = _decode_step(cache, kernel, q, k_new, v_new, table, lens, group)
        result.kernel = ", ".join(profiled_kernel_names(step, info))

    # 4. Time per decode step against BF16.
    try:
        result.timing = _timing(deployment, group, fmt, kernel, bf16_kernel, info, settings, block_size)
    except Exception as exc:
        result.notes.append(f"timing not measured: {type(exc).__name__}: {exc}"[:300])

    # 5. Engine probe: an importable engine that would select another backend is a fallback.
    probe = probe_vllm_backend(deployment, group)
    result.engine_probe = probe
    if probe.get("probed") and deployment.backend and probe.get("backend"):
        if str(probe["backend"]).upper() != deployment.backend.upper():
            reason = f"vLLM {probe.get('version')} selects {probe['backend']}, the manifest plans {deployment.backend}"
            result.fallbacks.append(reason)
            result.fail(f"fallback: {reason}")
    return result


# --------------------------------------------------------------------------- one deployment


def run_deployment(deployment: Deployment, info: DeviceInfo, settings: SmokeSettings) -> DeploymentResult:
    result = DeploymentResult(deployment.file, deployment.name, PASSED, info.as_dict(), [])
    if deployment.model is None or not deployment.layers:
        result.status = SKIPPED
        result.notes.append("the model geometry is unknown: no layout to build")
        return result
    gpu = deployment.gpu
    if info.is_cuda and gpu is not None and gpu.compute_capability and info.capability != tuple(gpu.compute_capability):
        result.notes.append(
            f"ran on {info.name} (SM{info.capability[0]}{info.capability[1]}), the manifest targets {gpu.id} "
            f"(SM{gpu.compute_capability[0]}{gpu.compute_capability[1]}): run it on the target GPU to verify the target"
        )
    groups = _prediction.layer_groups(deployment)
    predicted = _prediction.predicted_bytes_per_block(deployment)
    result.capacity_engine = _prediction.engine_summary(deployment)
    for group in groups:
        result.groups.append(check_group(deployment, group, predicted.get(group.name), group.block_size, info, settings))
    statuses = {g.status for g in result.groups}
    if FAILED in statuses:
        result.status = FAILED
    elif SKIPPED in statuses or not statuses:
        result.status = SKIPPED
    return result
