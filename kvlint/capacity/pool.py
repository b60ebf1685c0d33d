"""The KV pool one GPU gets, per engine: verbatim when the manifest gives it, else estimated.

`memory.kv_cache_memory` is used verbatim (vLLM `--kv-cache-memory-bytes` skips profiling and
ignores gpu_memory_utilization: vllm/v1/worker/gpu_worker.py `determine_available_memory`).
Otherwise each engine's own budget formula is applied to the device memory, with the weights split
across tensor x pipeline ranks and the per-GPU non-KV memory (activations, CUDA graphs, runtime)
taken from the manifest or from the documented default estimates below. Every estimate is
returned as a sentence for `assumptions`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import List, Optional, Tuple

from kvlint.deployment import Deployment

GiB = 1 << 30
MiB = 1 << 20

# Default non-KV memory estimates per GPU (bytes). These are planning defaults, not measurements:
# the real figure is what the engine profiles at start-up (activation peak at
# max_num_batched_tokens, non-torch allocations such as NCCL buffers, CUDA graphs).
VLLM_NON_KV_ESTIMATE = 2 * GiB  # profiled activation peak + non-torch memory
VLLM_CUDAGRAPH_ESTIMATE = 1 * GiB  # subtracted from the KV budget from 0.20 (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1)
SGLANG_NON_KV_ESTIMATE = 512 * MiB  # CUDA context / NCCL outside the mem_fraction_static budget
TRTLLM_NON_KV_ESTIMATE = 2 * GiB  # peak activations during TensorRT-LLM's profiling run


@dataclass(frozen=True)
class PoolEstimate:
    pool_bytes: Optional[int]  # None when it cannot be computed; may be <= 0 (pool exhausted)
    assumptions: Tuple[str, ...]
    gpu_memory_utilization: Optional[float] = None


def _weights_per_gpu(deployment: Deployment, notes: List[str]) -> Optional[int]:
    weights = deployment.memory.weights_bytes
    if weights is None:
        return None
    ranks = max(1, deployment.tensor_parallel) * max(1, deployment.pipeline_parallel)
    per_gpu = -(-weights // ranks)
    if ranks > 1:
        notes.append(
            f"weights ({weights:,} B) split evenly over tensor x pipeline = {ranks} GPUs: "
            f"{per_gpu:,} B per GPU"
        )
    return per_gpu


def _verbatim(deployment: Deployment) -> Optional[PoolEstimate]:
    if deployment.memory.kv_cache_memory is None:
        return None
    return PoolEstimate(
        deployment.memory.kv_cache_memory,
        ("KV pool per GPU taken verbatim from memory.kv_cache_memory",),
    )


def _memory_basis_notes(deployment: Deployment) -> List[str]:
    """Say when the device total is a stand-in for what the runtime reports (e.g. vllm-project/vllm#10511; docs/capacity.md)."""
    basis = deployment.gpu.memory_basis if deployment.gpu else None
    gpu = deployment.gpu.id if deployment.gpu else "the GPU"
    if basis == "nvidia-smi":
        return [f"{gpu} memory is the nvidia-smi total; the CUDA runtime reports about 0.4-0.8 GiB "
                "less, so this pool is slightly optimistic (set hardware.memory to the measured "
                "torch.cuda.mem_get_info() total)"]
    if basis == "spec":
        return [f"{gpu} memory is the vendor's specification, not a runtime reading "
                "(set hardware.memory to the measured total)"]
    return []


def _start(deployment: Deployment) -> Tuple[Optional[PoolEstimate], int, List[str]]:
    """(the pool if nothing needs estimating, device memory, first notes) for every engine.

    The pool is settled when given verbatim (kv_cache_memory) or not computable at all (unknown
    device memory); otherwise the engine's formula runs on `device`.
    """
    verbatim = _verbatim(deployment)
    if verbatim is not None:
        return verbatim, 0, []
    device = deployment.memory.device_memory_bytes
    if device is None:
        return PoolEstimate(None, ("the GPU's memory is unknown and memory.kv_cache_memory is not set: "
                                   "the KV pool cannot be computed (set hardware.memory or memory.kv_cache_memory)",)), 0, []
    return None, device, _memory_basis_notes(deployment)


VLLM_FALLBACK_MEMORY_FRACTION = 0.9  # vLLM's default before 0.20, for an engine the catalog lacks


def _minor(version: Optional[str]) -> str:
    """"0.20.1" -> "0.20" (how the memory note names a release)."""
    return ".".join((version or "?").split(".")[:2])


def vllm_pool(deployment: Deployment) -> PoolEstimate:
    """vLLM `determine_available_memory`: ceil(total * gmu) - non_kv_cache_memory - cudagraph.

    The default gpu_memory_utilization and whether CUDA-graph memory comes out of the KV budget
    are the release's catalog defaults (`gpu_memory_utilization`, `estimate_cudagraph_memory`;
    vllm/config/cache.py and vllm/envs.py)."""
    settled, device, notes = _start(deployment)
    if settled is not None:
        return settled
    gmu = deployment.memory.gpu_memory_utilization
    if gmu is None:
        gmu = deployment.memory.default_memory_fraction
        if gmu is None:  # an engine build the catalog gives no default for
            gmu = VLLM_FALLBACK_MEMORY_FRACTION
            notes.append(f"gpu_memory_utilization taken as {gmu}: the engine catalog gives no default "
                         "for this release")
        else:
            notes.append(f"gpu_memory_utilization defaulted to vLLM {_minor(deployment.modelled_release)}'s {gmu}")
    weights = _weights_per_gpu(deployment, notes)
    if weights is None:
        return PoolEstimate(None, tuple(notes) + ("model weight size unknown: the KV pool "
                                                  "cannot be computed",), gmu)
    non_kv = deployment.memory.non_kv_memory
    if non_kv is None:
        non_kv = VLLM_NON_KV_ESTIMATE
        text = (f"non_kv_memory estimated as {non_kv / GiB:g} GiB per GPU (activation peak and "
                f"non-torch memory; vLLM profiles the real value at start-up)")
        if deployment.memory.cuda_graphs_in_budget:
            non_kv += VLLM_CUDAGRAPH_ESTIMATE
            text += (f" plus {VLLM_CUDAGRAPH_ESTIMATE / GiB:g} GiB of CUDA-graph memory, which "
                     "vLLM >= 0.20 subtracts from the KV budget")
        notes.append(text)
    requested = math.ceil(device * gmu)
    pool = requested - weights - non_kv
    notes.append(
        f"KV pool = ceil({device:,} B x {gmu}) - {weights:,} B weights - {non_kv:,} B non-KV "
        f"= {pool:,} B per GPU"
    )
    return PoolEstimate(pool, tuple(notes), gmu)


def sglang_mem_fraction_static(device_bytes: int, tp: int, pp: int) -> float:
    """SGLang's default `mem_fraction_static` heuristic (server_args `_handle_gpu_memory_settings`,
    python/sglang/srt/server_args.py, v0.5.2): reserve = 512 + max(chunked_prefill, 2048) * 1.5 +
    cuda_graph_max_bs * 2 + tp*pp/8 * 1024 MB (at least 10 GB above 60 GB of memory)."""
    gpu_mb = device_bytes / MiB
    if gpu_mb < 20 * 1024:
        chunked, graph_bs = 2048, 8
    elif gpu_mb < 35 * 1024:
        chunked, graph_bs = 2048, (24 if tp < 4 else 80)
    elif gpu_mb < 60 * 1024:
        chunked, graph_bs = 4096, (32 if tp < 4 else 160)
    elif gpu_mb < 160 * 1024:
        chunked, graph_bs = 8192, (256 if tp < 4 else 512)
    else:
        chunked, graph_bs = 16384, 512
    reserved = 512 + max(chunked, 2048) * 1.5 + graph_bs * 2 + tp * pp / 8 * 1024
    if gpu_mb > 60 * 1024:
        reserved = max(reserved, 10240)
    return round((gpu_mb - reserved) / gpu_mb, 3)


def sglang_pool(deployment: Deployment) -> PoolEstimate:
    """SGLang `profile_max_num_token`: rest = available_after_weights - total * (1 - mfs),
    i.e. total * mem_fraction_static - weights - runtime memory (python/sglang/srt/model_executor/model_runner.py)."""
    settled, device, notes = _start(deployment)
    if settled is not None:
        return settled
    mfs = deployment.memory.gpu_memory_utilization
    if mfs is None:
        mfs = sglang_mem_fraction_static(device, deployment.tensor_parallel,
                                         deployment.pipeline_parallel)
        notes.append(f"mem_fraction_static defaulted to SGLang's heuristic: {mfs}")
    else:
        notes.append(f"mem_fraction_static {mfs} (memory.mem_fraction_static or gpu_memory_utilization)")
    weights = _weights_per_gpu(deployment, notes)
    if weights is None:
        return PoolEstimate(None, tuple(notes) + ("model weight size unknown: the KV pool "
                                                  "cannot be computed",), mfs)
    non_kv = deployment.memory.non_kv_memory
    if non_kv is None:
        non_kv = SGLANG_NON_KV_ESTIMATE
        notes.append(f"non_kv_memory estimated as {non_kv / MiB:g} MiB per GPU (CUDA context and "
                     "communication buffers; activations live in SGLang's 1 - mem_fraction_static "
                     "reserve)")
    pool = int(device * mfs) - weights - non_kv
    notes.append(f"KV pool = {device:,} B x {mfs} - {weights:,} B weights - {non_kv:,} B non-KV "
                 f"= {pool:,} B per GPU")
    return PoolEstimate(pool, tuple(notes), mfs)


def trtllm_pool(deployment: Deployment) -> PoolEstimate:
    """TensorRT-LLM `KvCacheCreator`: free_gpu_memory_fraction (default 0.9) of the memory left
    after weights and the profiled activation peak (tensorrt_llm/_torch/pyexecutor/_util.py `KvCacheCreator`)."""
    settled, device, notes = _start(deployment)
    if settled is not None:
        return settled
    fraction = deployment.memory.gpu_memory_utilization
    if fraction is None:
        fraction = deployment.memory.default_memory_fraction or 0.9  # KvCacheConfig default (tensorrt_llm/llmapi/llm_args.py)
        notes.append(f"free_gpu_memory_fraction defaulted to TensorRT-LLM's {fraction}")
    else:
        notes.append(f"free_gpu_memory_fraction {fraction} (memory.free_gpu_memory_fraction or "
                     "gpu_memory_utilization), a fraction of the memory left free")
    weights = _weights_per_gpu(deployment, notes)
    if weights is None:
        return PoolEstimate(None, tuple(notes) + ("model weight size unknown: the KV pool "
                                                  "cannot be computed",), fraction)
    non_kv = deployment.memory.non_kv_memory
    if non_kv is None:
        non_kv = TRTLLM_NON_KV_ESTIMATE
        notes.append(f"non_kv_memory estimated as {non_kv / GiB:g} GiB per GPU (peak activations "
                     "during TensorRT-LLM's profiling run)")
    free = device - weights - non_kv
    pool = int(free * fraction) if free > 0 else free
    notes.append(f"KV pool = ({device:,} B - {weights:,} B weights - {non_kv:,} B non-KV) x "
                 f"{fraction} = {pool:,} B per GPU")
    return PoolEstimate(pool, tuple(notes), fraction)
