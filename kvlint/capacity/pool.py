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
from typing import Any, List, Optional, Tuple

from kvlint.capacity.vllm_mxfp4 import vllm_mxfp4_moe
from kvlint.deployment import Deployment
from kvlint.records import dataclass, replace

GiB = 1 << 30
MiB = 1 << 20

# Default non-KV memory estimates per GPU (bytes). These are planning defaults, not measurements:
# the real figure is what the engine profiles at start-up (activation peak at
# max_num_batched_tokens, non-torch allocations such as NCCL buffers, CUDA graphs).
#
# vLLM's profiled non-KV memory has three parts, each sized from the FIT split of
# benchmarks/capacity_logs (vLLM's own "torch peak memory increase", "non-torch memory increase"
# and "CUDA graph memory" lines; the holdout split was not used):
# * the activation peak of the profiling run, which runs max_num_batched_tokens tokens (fit logs at
#   8,192: 1.89-3.94 GiB, median 2.29), scaled linearly with max_num_batched_tokens (the L4 fit log
#   at 2,048 leaves about 0.5 GiB), never below the floor;
VLLM_ACTIVATION_ESTIMATE = int(2.25 * GiB)
VLLM_ACTIVATION_TOKENS = 8192
VLLM_ACTIVATION_FLOOR = int(0.5 * GiB)
#   Where the release's sampler warm-up is catalogued (`sampler_warmup`) and the model's vocabulary
#   is known, the peak is instead what the profile holds at its sampler warm-up: bytes_per_logit x
#   min(max_num_batched_tokens, max_num_seqs) x vocab_size (the fit logs' torch peak at 0.19 is that
#   plus 0.18-0.65 GiB, median 0.26: the forward pass's outputs still held, multimodal encoders);
VLLM_SAMPLER_RESIDUAL = int(0.26 * GiB)
# * non-torch memory: 0.24-0.27 GiB on one GPU, 2.09-2.17 GiB under tensor parallelism on H100,
#   where NCCL allocates its NVLink SHARP (NVLS, SM90+) buffers (fit logs: 4 at tp=1, 2 H100 logs at
#   tp=2/4; the A100 fit logs at tp=2/4 show no such jump);
VLLM_NON_TORCH_ESTIMATE = int(0.25 * GiB)
VLLM_NON_TORCH_TP_ESTIMATE = int(2.1 * GiB)
# * CUDA-graph memory, subtracted from the KV budget from 0.20 (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1;
#   fit logs: 0.86-1.61 GiB, median 0.94).
VLLM_CUDAGRAPH_ESTIMATE = 1 * GiB
VLLM_NON_KV_ESTIMATE = VLLM_ACTIVATION_ESTIMATE + VLLM_NON_TORCH_ESTIMATE  # one GPU, before CUDA graphs
# SGLang sizes its pool from its own first memory reading, taken after the CUDA context and the
# distributed init exist: rest = avail_after_weights - total * (1 - mem_fraction_static) with
# total = that reading (model_runner.py `profile_max_num_token`, `init_memory_pool`). So
# pool = (device - baseline) * mem_fraction_static - weights: memory held before the reading is
# scaled by the fraction, not subtracted in full. The baseline estimate is the one fit log that
# prints SGLang's first reading (benchmarks/capacity_logs/sglang-l4x4-qwq-32b: "Load weight begin.
# avail mem=21.63 GB" on an L4 whose catalog total is 22.49 GiB, so 0.86 GiB, which includes the
# nvidia-smi-vs-CUDA gap where the catalog has only the nvidia-smi total).
SGLANG_BASELINE_ESTIMATE = int(0.86 * GiB)
# Under tensor parallelism on SM90+ the distributed init before that reading holds NCCL's NVLink
# SHARP buffers as well. No fit log prints SGLang's first reading there, so the figure is vLLM's own
# reading at the same point (its "worker init memory snapshot" after the distributed init,
# non_torch_memory on H100 in the fit logs: 1.51 GiB at tp=2, 2.05 GiB at tp=4; 0.51 GiB at tp=1):
# the same CUDA context and NCCL communicators, read by another engine.
SM90_INIT_SNAPSHOT_TP = ((4, int(2.05 * GiB)), (2, int(1.51 * GiB)))


def _sm90_init_snapshot(tp: int, default: int) -> int:
    """Memory held after the distributed init on SM90+ at this tensor-parallel size
    (SM90_INIT_SNAPSHOT_TP), or `default` below the smallest size measured."""
    return next((size for least, size in SM90_INIT_SNAPSHOT_TP if tp >= least), default)
TRTLLM_NON_KV_ESTIMATE = 2 * GiB  # peak activations during TensorRT-LLM's profiling run


# How far an estimated pool can be off (docs/capacity.md "How sure is the pool?"). Sized from the
# FIT split of benchmarks/capacity_logs only (`benchmarks/capacity_accuracy.py --fit-band` prints
# the ranges these constants round outwards); the holdout split only reports coverage.
# * weights: the checkpoint's real per-GPU weight memory against params x nominal dtype (embeddings
#   and norms kept in 16 bit, quantization scales, MoE experts at another dtype): fit range
#   +0.0% .. +13.4% (gpt-oss-120b's MXFP4 checkpoint at the top); -1.8% .. +13.2% since the fit
#   split holds more of the llm-d-planner logs (RedHatAI's W8A8 Llama-3.3-70B loads 1.8% less than
#   params x int8 with its 16-bit embeddings).
BAND_WEIGHTS_LOW = -0.02
BAND_WEIGHTS_HIGH = 0.14
# * everything else the formula estimates (device total x fraction, non-KV memory, CUDA graphs,
#   the engine's default fraction): what is left of the fit errors after the weights, in GiB of pool
#   (fit range -1.70 .. +0.37 GiB with the flat activation estimate, -1.04 .. +0.27 GiB since the
#   sampler warm-up term; kept at the wider range while releases without a catalogued warm-up still
#   use the flat estimate; + means the engine had more pool than predicted). Since the code-sized
#   terms of vLLM 0.9.2-0.10.2 (`older_releases_memory`), --fit-band leaves out what a case's
#   code-sized band terms span: -0.40 .. +0.32 GiB (constants not tightened). The log set split by
#   source (26 fit logs, many outside one sweep) gives -1.61 .. +1.25 GiB, the top from the flat
#   1 GiB CUDA-graph estimate where the release measured 0.15 GiB or ran eager. Two fit logs whose
#   error is a term kvlint does not model name it in their data file and do not size the band
#   (vLLM V0's whole-context profile run, a vision encoder); both terms are open work.
BAND_OTHER_LOW_GIB = -1.75
BAND_OTHER_HIGH_GIB = 1.5


@dataclass(frozen=True)
class PoolBand:
    """The range the real pool is expected in, and the estimated terms it comes from."""

    low: int
    high: int
    terms: Tuple[str, ...]
    # the part of low..high (pool offsets) from terms sized from the engine's code paths rather than
    # the fit split's ranges (CapacityBand.sized_low/high)
    sized_low: int = 0
    sized_high: int = 0


@dataclass(frozen=True)
class PoolEstimate:
    """The KV pool per GPU as estimated (or given), with its assumptions and the terms it subtracts."""

    pool_bytes: Optional[int]  # None when it cannot be computed; may be <= 0 (pool exhausted)
    assumptions: Tuple[str, ...]
    gpu_memory_utilization: Optional[float] = None
    band: Optional[PoolBand] = None  # None when the pool is given (memory.kv_cache_memory)
    # The formula's terms in bytes per GPU (device, weights, non_kv, and where estimated
    # activation, non_torch, cuda_graphs), for `kvlint capacity --from-log`.
    terms: Tuple[Tuple[str, int], ...] = ()


# * the device total where the catalog has no CUDA-runtime figure for the GPU. vLLM sizes its pool
#   from the CUDA runtime total (vllm/v1/worker/gpu_worker.py: requested_memory = init_snapshot
#   total_memory x gpu_memory_utilization; utils/mem_utils.py MemorySnapshot: torch.cuda.mem_get_info()[1]
#   at v0.19.0 through v0.33.0), which is the nvidia-smi total less what the driver keeps for itself.
#   That reserve depends on the GPU and the driver (the same A10G shows 23028 MiB under driver 535
#   and 22731 MiB under 470 in nvidia-smi), so it is not one constant: the catalogued GPUs that have
#   both figures, each runtime figure from a public log (rules/catalog/gpus.yaml), span
#   NVIDIA_SMI_RESERVE_LOW_GIB..HIGH_GIB, rounded outwards (RTX 4090 0.348, RTX 3090 0.42, H100 SXM 0.46, A100 40GB
#   0.50, L40S 0.57, A100 80GB 0.750 GiB; tests/test_capacity_device_memory.py recomputes the range
#   from the catalog). For a GPU with only its nvidia-smi total, vLLM's device total is taken as that
#   total less the middle of the range and the band spans the rest of it, times the memory fraction.
#   spec: the vendor's figure, no reading at all: the pool can be lower by BAND_DEVICE_SPEC_SHARE.
NVIDIA_SMI_RESERVE_LOW_GIB = 0.34
NVIDIA_SMI_RESERVE_HIGH_GIB = 0.76
NVIDIA_SMI_RESERVE_GIB = (NVIDIA_SMI_RESERVE_LOW_GIB + NVIDIA_SMI_RESERVE_HIGH_GIB) / 2
# SGLang's baseline estimate (SGLANG_BASELINE_ESTIMATE) was read against the nvidia-smi total and so
# already holds the gap; for it the band keeps the whole gap below the nvidia-smi figure.
BAND_DEVICE_NVIDIA_SMI_GIB = 0.8
BAND_DEVICE_SPEC_SHARE = 0.03


def nvidia_smi_reserve(deployment: Deployment) -> int:
    """Bytes kvlint takes off a catalog device total that is an nvidia-smi figure, to get the CUDA
    runtime total vLLM sizes its pool from (0 where the total is a runtime reading or hardware.memory)."""
    basis = deployment.gpu.memory_basis if deployment.gpu else None
    return int(NVIDIA_SMI_RESERVE_GIB * GiB) if basis == "nvidia-smi" else 0


def _device_band(deployment: Deployment, fraction: float,
                 reserve_taken: bool = False) -> Tuple[float, float, Optional[str]]:
    """(pool low, pool high in bytes, band sentence) for a device total that is not a runtime
    reading; `reserve_taken`: the nvidia-smi reserve's midpoint is already off the device total."""
    gpu = deployment.gpu
    basis = gpu.memory_basis if gpu else None
    device = deployment.memory.device_memory_bytes or 0
    if basis == "nvidia-smi" and reserve_taken:
        spread = (NVIDIA_SMI_RESERVE_HIGH_GIB - NVIDIA_SMI_RESERVE_LOW_GIB) / 2 * GiB * fraction
        return -spread, spread, (
            f"{gpu.id} has only its nvidia-smi total in the catalog; the CUDA runtime total vLLM uses "
            f"is taken {NVIDIA_SMI_RESERVE_GIB:.2f} GiB below it, the driver's reserve on catalogued GPUs "
            f"being {NVIDIA_SMI_RESERVE_LOW_GIB:.2f}-{NVIDIA_SMI_RESERVE_HIGH_GIB:.2f} GiB (pool "
            f"{-spread / GiB:+.2f}..{spread / GiB:+.2f} GiB; hardware.memory set to "
            "torch.cuda.mem_get_info()[1] removes this term)")
    if basis == "nvidia-smi":
        low = -BAND_DEVICE_NVIDIA_SMI_GIB * GiB * fraction
        return low, 0.0, (f"{gpu.id} memory is the nvidia-smi total; the CUDA runtime reports up to "
                          f"{BAND_DEVICE_NVIDIA_SMI_GIB:g} GiB less (pool {low / GiB:+.2f} GiB; hardware.memory "
                          "set to torch.cuda.mem_get_info()[1] removes this term)")
    if basis == "spec":
        low = -BAND_DEVICE_SPEC_SHARE * device * fraction
        return low, 0.0, (f"{gpu.id} memory is the vendor's specification, not a runtime reading "
                          f"(pool {low / GiB:+.2f} GiB; hardware.memory removes this term)")
    return 0.0, 0.0, None


def _band(pool: int, weights: int, non_kv_given: bool, extra: Tuple[Tuple[float, float, str], ...] = ()) -> PoolBand:
    """Low and high pool from the estimated terms' fitted error ranges (constants above), plus
    `extra` (low bytes, high bytes, sentence) terms."""
    terms = []
    low = high = 0.0
    if weights > 0:
        w_low, w_high = -weights * BAND_WEIGHTS_HIGH, -weights * BAND_WEIGHTS_LOW
        low, high = low + w_low, high + w_high
        terms.append(f"weights {weights / GiB:.2f} GiB per GPU taken as params x dtype; the "
                     f"checkpoint may load {BAND_WEIGHTS_LOW * 100:+.0f}%..{BAND_WEIGHTS_HIGH * 100:+.0f}% "
                     f"of that (pool {w_low / GiB:+.2f}..{w_high / GiB:+.2f} GiB)")
    if not non_kv_given:
        low, high = low + BAND_OTHER_LOW_GIB * GiB, high + BAND_OTHER_HIGH_GIB * GiB
        terms.append(f"non-KV memory and the device budget are estimates (pool "
                     f"{BAND_OTHER_LOW_GIB:+.2f}..{BAND_OTHER_HIGH_GIB:+.2f} GiB)")
    for e_low, e_high, text in extra:
        low, high = low + e_low, high + e_high
        terms.append(text)
    return PoolBand(int(pool + low), int(pool + high), tuple(terms))


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


# KV connectors (vLLM --kv-transfer-config) whose GPU memory at start-up is known. LMCache's vLLM v1
# connector (lmcache/integration/vllm/vllm_adapter.py `init_lmcache_engine`, lmcache 0.3.2) builds a
# VLLMPagedMemGPUConnectorV2 with a GPU staging buffer (use_gpu unless enable_nixl) of shape
# [2 (1 under MLA), layers, chunk_size, kv_heads x head_size] per rank in the KV dtype
# (lmcache/v1/gpu_connector.py `get_shape`); chunk_size is LMCACHE_CHUNK_SIZE, default 256
# (lmcache/v1/config.py). vLLM creates the connector in init_worker_distributed_environment
# (`ensure_kv_transfer_initialized`), before it profiles, so the buffer counts as non-KV memory.
LMCACHE_DEFAULT_CHUNK_SIZE = 256
KNOWN_CONNECTORS = ("LMCacheConnectorV1",)


def _lmcache_buffer(deployment: Deployment) -> Tuple[Optional[int], str]:
    """(bytes per GPU, sentence) of LMCache's GPU staging buffer; None when the configuration
    that sizes it is not in the manifest (a config file, the layerwise or NIXL paths)."""
    if deployment.env_value("LMCACHE_CONFIG_FILE"):
        return None, ("LMCache reads its chunk size and paths from LMCACHE_CONFIG_FILE, which kvlint "
                      "does not read")
    for flag in ("LMCACHE_USE_LAYERWISE", "LMCACHE_ENABLE_NIXL"):
        if (deployment.env_value(flag) or "").strip().lower() in ("1", "true", "yes", "on"):
            return None, f"{flag} selects an LMCache GPU path whose buffers kvlint does not model"
    model = deployment.model
    if model is None or not model.layers:
        return None, "the model geometry is unknown"
    raw_chunk = deployment.env_value("LMCACHE_CHUNK_SIZE")
    try:
        chunk = int(raw_chunk) if raw_chunk is not None else LMCACHE_DEFAULT_CHUNK_SIZE
    except ValueError:
        return None, f"LMCACHE_CHUNK_SIZE {raw_chunk!r} is not an integer"
    layers = -(-len(model.layers) // max(1, deployment.pipeline_parallel))
    first = model.layers[0]
    kv = 1 if first.is_mla else 2
    hidden = deployment.kv_heads_per_gpu(first) * first.head_dim
    dtype = deployment.kv_dtype.lower()
    element = 1 if dtype.startswith("fp8") or dtype.startswith("int8") else (4 if model.dtype == "float32" else 2)
    size = kv * layers * chunk * hidden * element
    return size, (f"LMCache's GPU staging buffer {size / MiB:.1f} MiB ({kv} x {layers} layers x chunk "
                  f"{chunk} x {hidden} x {element} B)")


VLLM_FALLBACK_MEMORY_FRACTION = 0.9  # vLLM's default before 0.20, for an engine the catalog lacks


def _minor(version: Optional[str]) -> str:
    """"0.20.1" -> "0.20" (how the memory note names a release)."""
    return ".".join((version or "?").split(".")[:2])


def default_max_num_batched_tokens(deployment: Deployment) -> Optional[int]:
    """The `vllm serve` default for this GPU: the first tier of the catalog's
    `max_num_batched_tokens` default whose memory floor the GPU reaches and whose excluded GPUs
    it is not (vllm/engine/arg_utils.py). None when the catalog gives no tiers."""
    tiers = (deployment.release_default("max_num_batched_tokens") or {}).get("tiers") or ()
    gib = (deployment.memory.device_memory_bytes or 0) / GiB
    gpu_id = (deployment.gpu.id if deployment.gpu else "").lower()
    for tier in tiers:
        if gib < tier.get("min_memory_gib", 0):
            continue
        if any(str(excluded).lower() in gpu_id for excluded in tier.get("exclude_gpus", ())):
            continue
        return int(tier["serve"])
    return None


def _tier_value(tiers, deployment: Deployment, key: str = "serve") -> Optional[int]:
    """The first tier whose memory floor the GPU reaches and whose excluded GPUs it is not."""
    gib = (deployment.memory.device_memory_bytes or 0) / GiB
    gpu_id = (deployment.gpu.id if deployment.gpu else "").lower()
    for tier in tiers or ():
        if gib < tier.get("min_memory_gib", 0):
            continue
        if any(str(excluded).lower() in gpu_id for excluded in tier.get("exclude_gpus", ())):
            continue
        return int(tier[key])
    return None


# Memory facts for vLLM releases older than the catalogued ones: the stand-in release's catalog
# default `older_releases_memory` (rules/catalog/engines/vllm.yaml) lists them by release range;
# they are matched against the deployment's own release. A release older than the catalog that no
# range covers gets none of these facts (not the stand-in's own).
PRE_CATALOG_MEMORY_FACTS = ("sampler_warmup", "snapshot_before_distributed_init")


def memory_fact(deployment: Deployment, name: str) -> Any:
    """A release memory fact (catalog `defaults`) for the deployment's own release."""
    version, modelled = deployment.engine_version, deployment.modelled_release
    if name in PRE_CATALOG_MEMORY_FACTS and version and modelled and version != modelled \
            and _predates(version, modelled):
        from kvlint.versions import version_matches  # on use: only releases older than the catalog

        for group in deployment.release_default("older_releases_memory") or ():
            if version_matches(version, str(group.get("versions", ""))):
                return group.get(name)
        return None
    return deployment.release_default(name)


def _predates(version: str, modelled: str) -> bool:
    from kvlint.versions import VersionError, parse_version

    try:
        return parse_version(version) < parse_version(modelled)
    except VersionError:
        return False


def _vllm_activation(deployment: Deployment, mnbt: int) -> Tuple[int, str, Optional[Tuple[float, float, str]]]:
    """The profiled torch peak: the sampler warm-up where the release and the vocabulary are
    known (catalog `sampler_warmup`), else the flat estimate scaled with max_num_batched_tokens.
    The third item is a band term where the release's warm-up path depends on an optional package
    (`favourable_bytes_per_logit`: FlashInfer's sampler instead of PyTorch's sort)."""
    warmup = memory_fact(deployment, "sampler_warmup") or {}
    vocab = deployment.model.vocab_size if deployment.model else None
    if warmup and vocab:
        seqs = deployment.max_num_seqs or _tier_value(warmup.get("max_num_seqs_tiers"), deployment)
        if seqs:
            requests = min(mnbt, seqs)
            per_logit = int(warmup["bytes_per_logit"])
            runner, runner_text, v2_per_logit = model_runner(deployment, warmup.get("runner_v2"))
            if runner == "v2" and v2_per_logit is not None:
                per_logit = v2_per_logit
            # favourable: the install decides (FlashInfer wherever it is installed, 0.9.2-0.11.0);
            # opt_in: FlashInfer only with the switch set (0.11.1-0.17)
            favourable = warmup.get("favourable_bytes_per_logit")
            opt_in = warmup.get("flashinfer_bytes_per_logit", favourable)
            switch = _sampler_switch(deployment, warmup.get("flashinfer_env"))
            if switch is True and opt_in is not None:  # FlashInfer asked for: its path
                per_logit, favourable, unfavourable = int(opt_in), None, per_logit
            elif switch is False:  # PyTorch's sort, whatever is installed
                favourable, unfavourable = None, None
            else:
                unfavourable = None
            sampler = per_logit * requests * vocab
            activation = max(VLLM_ACTIVATION_FLOOR, sampler + VLLM_SAMPLER_RESIDUAL)
            band = None
            if favourable is not None:
                saved = activation - max(VLLM_ACTIVATION_FLOOR, int(favourable) * requests * vocab + VLLM_SAMPLER_RESIDUAL)
                band = (0.0, float(saved), (
                    f"the sampler warm-up is taken on PyTorch's sort path ({per_logit} B per logit); with "
                    f"FlashInfer installed it holds {favourable} B per logit (pool +{saved / GiB:.2f} GiB)"))
            elif unfavourable is not None:
                lost = max(VLLM_ACTIVATION_FLOOR, unfavourable * requests * vocab + VLLM_SAMPLER_RESIDUAL) - activation
                band = (-float(lost), 0.0, (
                    f"{warmup['flashinfer_env']}=1 takes FlashInfer's sampler ({per_logit} B per logit) where "
                    f"flashinfer is installed and supports the GPU; otherwise vLLM falls back to PyTorch's sort "
                    f"({unfavourable} B per logit, pool -{lost / GiB:.2f} GiB)"))
            if runner is None and v2_per_logit is not None and v2_per_logit < per_logit:
                saved = activation - max(VLLM_ACTIVATION_FLOOR, v2_per_logit * requests * vocab + VLLM_SAMPLER_RESIDUAL)
                if saved > 0:
                    band = (0.0, float(saved), (
                        f"the model runner is not known ({runner_text}): the sampler warm-up is taken on V1's "
                        f"{per_logit} B per logit; on model runner V2 it holds {v2_per_logit} B per logit "
                        f"(pool +{saved / GiB:.2f} GiB)"))
            path = f"; {runner_text}" if runner_text else ""
            if switch is True:
                path += f"; {warmup['flashinfer_env']}=1 asks for FlashInfer's sampler"
            elif switch is False:
                path += f"; {warmup['flashinfer_env']}=0 keeps PyTorch's sort"
            return activation, (f"activation peak {activation / GiB:.2f} GiB: the sampler warm-up's "
                                f"{requests:,} requests x {vocab:,} logits x {per_logit} B "
                                f"(min(max_num_batched_tokens {mnbt:,}, max_num_seqs {seqs:,})) plus "
                                f"{VLLM_SAMPLER_RESIDUAL / GiB:.2f} GiB{path}"), band
    activation = max(VLLM_ACTIVATION_FLOOR, int(VLLM_ACTIVATION_ESTIMATE * mnbt / VLLM_ACTIVATION_TOKENS))
    return activation, f"activation peak {activation / GiB:.2f} GiB at max_num_batched_tokens {mnbt:,}", None


V2_RUNNER_ENV = "VLLM_USE_V2_MODEL_RUNNER"


def model_runner(deployment: Deployment, rule: Any) -> Tuple[Optional[str], str, Optional[int]]:
    """("v1" | "v2" | None when it cannot be told, sentence, V2's bytes per logit) for a release
    with two model runners (catalog `sampler_warmup.runner_v2`, vllm/config/vllm.py
    `use_v2_model_runner` of the release). ("v1", "", None) where the release has only V1."""
    if not rule:
        return "v1", "", None
    v2_bytes = rule.get("bytes_per_logit")
    v2_bytes = int(v2_bytes) if v2_bytes is not None else None
    switch = deployment.env_flag(V2_RUNNER_ENV)
    if switch is not None:
        return ("v2" if switch else "v1"), f"{V2_RUNNER_ENV}={int(switch)} picks model runner {'V2' if switch else 'V1'}", v2_bytes
    default = rule.get("default") or {}
    release = _minor(deployment.engine_version)
    if default.get("unknown"):
        return None, f"vLLM {release}'s model runner default was not read", v2_bytes
    if default.get("all"):
        if deployment.pipeline_parallel > 1:
            return None, (f"vLLM {release} runs V2 unless a feature it lacks sends it back to V1, and "
                          "pipeline parallelism with async scheduling is one"), v2_bytes
        return "v2", f"vLLM {release} runs model runner V2 by default", v2_bytes
    architectures = set(deployment.model.architectures) if deployment.model else set()
    if not architectures:
        return None, "the model's architecture is unknown, so which model runner vLLM picks is too", v2_bytes
    experts = deployment.release_default("expert_architectures") or {}
    if architectures & set(experts.get("moe", ())):
        moe: Optional[bool] = True
    elif architectures & set(experts.get("dense", ())):
        moe = False
    else:
        moe = None
    listed = bool(architectures & set(default.get("architectures", ())))
    name = ", ".join(sorted(architectures))
    if listed:
        if default.get("dense_only") and moe is not False:
            return (None if moe is None else "v1"), f"vLLM {release} defaults {name} to V2 only without experts", v2_bytes
        if default.get("unquantized_only"):
            return None, (f"vLLM {release} defaults {name} to model runner V2 only for an unquantized "
                          "checkpoint, which kvlint does not read"), v2_bytes
        return "v2", f"vLLM {release} runs {name} on model runner V2 by default", v2_bytes
    if default.get("dense"):
        if moe is None:
            return None, f"kvlint does not know whether {name} has experts, which decides vLLM {release}'s model runner", v2_bytes
        if not moe:
            return "v2", f"vLLM {release} runs a model without experts ({name}) on model runner V2 by default", v2_bytes
    return "v1", f"vLLM {release} runs {name} on model runner V1 by default", v2_bytes


def _sampler_switch(deployment: Deployment, name: Optional[str]) -> Optional[bool]:
    """The release's FlashInfer-sampler switch as vLLM reads it (envs.py: bool(int(value)) when
    set, None when unset): False keeps PyTorch's sort even with flashinfer installed, True asks for
    FlashInfer (used where it is installed; TopKTopPSampler.__init__, topk_topp_sampler.py L33-57
    v0.9.2, L34-59 v0.10.1.1, L42-67 v0.10.2, L39-64 v0.11.0; from v0.11.1, L34-47, only True
    selects it). None when unset, not an integer, or not catalogued."""
    return deployment.env_flag(name)


# What vLLM's distributed init allocates on one GPU under tensor parallelism (NCCL communicators,
# custom all-reduce buffers), where the release counts it as non-KV memory (catalog
# `snapshot_before_distributed_init`, before 0.11): the FIT logs' worker init snapshot after the
# distributed init on H100 (SM90_INIT_SNAPSHOT_TP: 1.51 GiB at tp=2, 2.05 GiB at tp=4) less the
# same snapshot on one GPU (0.51 GiB: the CUDA context, which every release's snapshot holds):
# 1.00 GiB at tp=2, 1.54 GiB at tp=4. One fit log each, so the band spans their difference. Off
# SM90 no fit log shows the figure: nothing is added and the band reaches down by the tp=2 figure.
VLLM_INIT_SNAPSHOT_ONE_GPU = int(0.51 * GiB)
VLLM_DIST_INIT_SPREAD = int(0.54 * GiB)


def _vllm_distributed_init(deployment: Deployment, nvls: bool) -> Tuple[int, Optional[Tuple[float, float, str]], str]:
    """(bytes, band term, sentence) of the distributed init counted as non-KV memory."""
    tp = deployment.tensor_parallel
    if tp <= 1 or not memory_fact(deployment, "snapshot_before_distributed_init"):
        return 0, None, ""
    if nvls:
        reading = _sm90_init_snapshot(tp, SM90_INIT_SNAPSHOT_TP[-1][1])
        size = reading - VLLM_INIT_SNAPSHOT_ONE_GPU
        return size, (-float(VLLM_DIST_INIT_SPREAD), float(VLLM_DIST_INIT_SPREAD), (
            f"the distributed init's {size / GiB:.2f} GiB (NCCL at tp={tp} on SM90+) is the fit logs' figure "
            f"at tp=2/4 (pool {-VLLM_DIST_INIT_SPREAD / GiB:+.2f}..{VLLM_DIST_INIT_SPREAD / GiB:+.2f} GiB)")), (
            f"; the distributed init's {size / GiB:.2f} GiB (NCCL communicators at tp={tp}), which vLLM "
            f"{_minor(deployment.engine_version)} counts as non-KV memory (its memory snapshot precedes the init)")
    low = SM90_INIT_SNAPSHOT_TP[-1][1] - VLLM_INIT_SNAPSHOT_ONE_GPU
    return 0, (-float(low), 0.0, (
        f"vLLM {_minor(deployment.engine_version)} counts its distributed init (NCCL at tp={tp}) as non-KV "
        f"memory; off SM90 its size is unmeasured (pool {-low / GiB:+.2f}..+0.00 GiB)")), ""


# vLLM's rotary-embedding cache, which "Model loading took" counts with the weights: every RoPE
# module registers a `cos_sin_cache` buffer of [max_position_embeddings, rotary_dim] in the model
# dtype (vllm/model_executor/layers/rotary_embedding/base.py `RotaryEmbeddingBase.__init__` L58-63,
# `_compute_cos_sin_cache` L82-91, v0.19.0; rotary_embedding.py `RotaryEmbedding.__init__` L112-117,
# v0.9.2), built on the GPU while the model is constructed and shared by every layer with the same
# parameters (`get_rope` caches modules in _ROPE_DICT, rotary_embedding/__init__.py L68-78, v0.19.0).
# Each tensor-parallel rank holds the whole cache: it is not split. "Model loading took" is the
# growth of torch.cuda.max_memory_allocated over load_model (gpu_model_runner.py L4746-4821 with
# DeviceMemoryProfiler, utils/mem_utils.py L44-63, platforms/cuda.py `get_current_memory_usage`
# L206-211, v0.19.0), and the worker subtracts that figure as weights_memory. The cache is sized
# from the model's max_position_embeddings, not from max_model_len: Llama-4-Scout's 10,485,760
# positions x 128 x 2 B are 2.50 GiB on every GPU. Not modelled (say so in the band): a second
# RoPE module (Gemma-3's global layers: linear scaling caches max_position x factor rows), YaRN or
# linear scaling's longer caches, and a model that builds its cache in float32 (gpt-oss).
def vllm_rope_cache(deployment: Deployment) -> Tuple[int, str]:
    """(bytes per GPU, sentence) of vLLM's rotary cos/sin cache; 0 when the geometry lacks
    max_position_embeddings or the rotary width."""
    model = deployment.model
    if model is None or not model.max_position_embeddings:
        return 0, ""
    rotary = model.qk_rope_head_dim if model.is_mla else model.head_dim
    if not rotary:
        return 0, ""
    element = 4 if model.dtype == "float32" else 2
    size = model.max_position_embeddings * rotary * element
    return size, (f"plus vLLM's rotary cos/sin cache {size / MiB:,.0f} MiB on every GPU "
                  f"(max_position_embeddings {model.max_position_embeddings:,} x rotary dim {rotary} x "
                  f"{element} B), which vLLM counts with the weights it loads")


def vllm_pool(deployment: Deployment) -> PoolEstimate:
    """vLLM `determine_available_memory`: ceil(total * gmu) - non_kv_cache_memory - cudagraph.

    The default gpu_memory_utilization and whether CUDA-graph memory comes out of the KV budget
    are the release's catalog defaults (`gpu_memory_utilization`, `estimate_cudagraph_memory`;
    vllm/config/cache.py and vllm/envs.py)."""
    settled, device, notes = _start(deployment)
    if settled is not None:
        return settled
    reserve = nvidia_smi_reserve(deployment)
    if reserve:
        device -= reserve
        notes = [n for n in notes if "nvidia-smi total" not in n]
        notes.append(f"{deployment.gpu.id if deployment.gpu else 'the GPU'} has only its nvidia-smi total in the "
                     f"catalog; vLLM sizes its pool from the CUDA runtime total, taken as that less "
                     f"{NVIDIA_SMI_RESERVE_GIB:.2f} GiB: {device:,} B (set hardware.memory to the measured "
                     "torch.cuda.mem_get_info() total)")
    gmu = deployment.memory.gpu_memory_utilization
    if gmu is None:
        gmu = deployment.memory.default_memory_fraction
        if gmu is None:  # an engine build the catalog gives no default for
            gmu = VLLM_FALLBACK_MEMORY_FRACTION
            notes.append(f"gpu_memory_utilization taken as {gmu}: the engine catalog gives no default "
                         "for this release")
        elif _minor(deployment.modelled_release) != _minor(deployment.engine_version):
            # the fact is the stand-in's (a release older or newer than the catalogued ones): say so
            notes.append(f"gpu_memory_utilization defaulted to {gmu}, the default of vLLM "
                         f"{deployment.modelled_release}, which stands in for "
                         + (deployment.engine_version or "the release not stated"))
        else:
            notes.append(f"gpu_memory_utilization defaulted to vLLM {_minor(deployment.modelled_release)}'s {gmu}")
    weights = _weights_per_gpu(deployment, notes)
    if weights is None:
        return PoolEstimate(None, tuple(notes) + ("model weight size unknown: the KV pool "
                                                  "cannot be computed",), gmu)
    checkpoint = weights
    rope, rope_text = vllm_rope_cache(deployment)
    if rope:
        weights += rope
        notes.append(f"weights per GPU {weights:,} B: the checkpoint's {checkpoint:,} B {rope_text}")
    mxfp4, mxfp4_band, mxfp4_text = vllm_mxfp4_moe(deployment)
    if mxfp4:
        weights += mxfp4
        notes.append(f"weights per GPU {weights:,} B: {mxfp4_text}")
    elif mxfp4_text:
        notes.append(mxfp4_text)
    non_kv = deployment.memory.non_kv_memory
    non_kv_given = non_kv is not None
    parts: List[Tuple[str, int]] = []
    extra_terms: List[Tuple[float, float, str]] = []
    if non_kv is None:
        cc = deployment.gpu.compute_capability if deployment.gpu else None
        nvls = deployment.tensor_parallel > 1 and cc is not None and cc >= (9, 0)
        non_torch = VLLM_NON_TORCH_TP_ESTIMATE if nvls else VLLM_NON_TORCH_ESTIMATE
        mnbt = deployment.max_num_batched_tokens or default_max_num_batched_tokens(deployment) \
            or VLLM_ACTIVATION_TOKENS
        activation, activation_text, sampler_band = _vllm_activation(deployment, mnbt)
        dist_init, dist_band, dist_text = _vllm_distributed_init(deployment, nvls)
        non_torch += dist_init
        non_kv = activation + non_torch
        parts = [("activation", activation), ("non_torch", non_torch)]
        extra_terms = [t for t in (sampler_band, dist_band) if t is not None]
        text = (f"non_kv_memory estimated as {non_kv / GiB:.2f} GiB per GPU: {activation_text} and non-torch memory "
                f"{non_torch / GiB:.2f} GiB"
                f"{' (NCCL buffers of tensor parallelism on SM90+)' if nvls else ''}{dist_text}; vLLM profiles "
                "the real value at start-up")
        if deployment.memory.cuda_graphs_in_budget:
            non_kv += VLLM_CUDAGRAPH_ESTIMATE
            parts.append(("cuda_graphs", VLLM_CUDAGRAPH_ESTIMATE))
            text += (f" plus {VLLM_CUDAGRAPH_ESTIMATE / GiB:g} GiB of CUDA-graph memory, which "
                     "vLLM >= 0.20 subtracts from the KV budget")
        notes.append(text)
    extra: List[Tuple[float, float, str]] = list(extra_terms)
    if mxfp4_band is not None:
        extra.append(mxfp4_band)
    connector = deployment.kv_connector
    if connector is not None and not non_kv_given:
        buffer, why = _lmcache_buffer(deployment) if connector in KNOWN_CONNECTORS else (None, "")
        if buffer is not None:
            non_kv += buffer
            parts.append(("kv_connector", buffer))
            notes.append(f"KV connector {connector}: {why}, allocated before vLLM profiles")
        else:
            reason = why or "kvlint does not know what GPU memory it allocates"
            notes.append(f"KV connector {connector}: {reason}; its GPU memory is NOT in this pool "
                         "or its band (memory.non_kv_memory or memory.kv_cache_memory sets it)")
            extra.append((0.0, 0.0, f"KV connector {connector}: GPU memory unknown, not covered "
                                    "(memory.kv_cache_memory removes it)"))
    device_low, device_high, device_text = _device_band(deployment, gmu, reserve_taken=bool(reserve))
    if device_text:
        extra.append((device_low, device_high, device_text))
    requested = math.ceil(device * gmu)
    pool = requested - weights - non_kv
    notes.append(
        f"KV pool = ceil({device:,} B x {gmu}) - {weights:,} B weights - {non_kv:,} B non-KV "
        f"= {pool:,} B per GPU"
    )
    terms = (("device", device), ("weights", weights), ("non_kv", non_kv), *parts,
             *((("rope_cache", rope),) if rope else ()), *((("mxfp4_moe_layout", mxfp4),) if mxfp4 else ()))
    band = _band(pool, checkpoint, non_kv_given, tuple(extra))
    if extra_terms:
        band = replace(band, sized_low=int(sum(t[0] for t in extra_terms)),
                       sized_high=int(sum(t[1] for t in extra_terms)))
    return PoolEstimate(pool, tuple(notes), gmu, band, terms)


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


def sglang_reserve_fraction(device_bytes: int, parallel: int, tiers) -> Optional[float]:
    """SGLang's default mem_fraction_static from the catalog's reserve tiers
    (`mem_fraction_static_reserve`): reserve base + per_rank x tp x pp GiB by memory tier."""
    gpu_mb = device_bytes / MiB
    for tier in tiers:
        if "below_gib" in tier and gpu_mb >= tier["below_gib"] * 1024:
            continue
        reserved = (tier["base_gib"] + tier["per_rank_gib"] * parallel) * 1024
        return round((gpu_mb - reserved) / gpu_mb, 3)
    return None


def sglang_tp_fraction(tp: int, tiers) -> Optional[float]:
    """SGLang's default mem_fraction_static before 0.4.9: by tensor-parallel size alone
    (the catalog's `mem_fraction_static_by_tp`, server_args.py __post_init__)."""
    for tier in tiers:
        if tp >= tier.get("min_tp", 1):
            return float(tier["fraction"])
    return None


SGLANG_MAX_PREFILL_TOKENS = 16384  # --max-prefill-tokens default (python/sglang/srt/server_args.py, v0.5.2)


def sglang_heuristic_fraction(device_bytes: int, tp: int, pp: int, mla: bool, rule,
                              max_running_requests: Optional[int] = None,
                              chunked_prefill_size: Optional[int] = None) -> Optional[float]:
    """SGLang's default mem_fraction_static from the catalog's `mem_fraction_static_heuristic`
    (0.5.23, arg_groups/memory_hook.py `_handle_gpu_memory_settings`): the reserve for activations
    at chunked_prefill_size, the parallel slack and the decode and prefill CUDA graphs; a smaller
    --max-running-requests caps the decode graphs' max_bs. A --chunked-prefill-size the user sets
    replaces the tier's in the activation reserve (max(it, 2048) tokens; with chunking off, SGLang's
    max_prefill_tokens, default 16384); the prefill graphs keep the tier's count."""
    gpu_mib = device_bytes / MiB
    tier = next((t for t in rule.get("tiers", ()) if "below_gib" not in t or gpu_mib < t["below_gib"] * 1024), None)
    if tier is None:
        return None
    decode_bs = tier["decode_max_bs"][0 if tp < 4 else 1]
    if max_running_requests is not None:
        decode_bs = min(decode_bs, max_running_requests)
    chunked = tier["chunked_prefill_size"]
    if chunked_prefill_size is not None:
        chunked = chunked_prefill_size if chunked_prefill_size > 0 else SGLANG_MAX_PREFILL_TOKENS
    prefill = rule["prefill_graph_mla_mib"] if mla else tier["prefill_graph_sizes"] * rule["prefill_graph_mib_per_size"]
    reserved = (rule["base_mib"]
                + max(chunked, rule["min_activation_tokens"]) * rule["activation_mib_per_token"]
                + tp * pp * rule["per_rank_mib"]
                + decode_bs * rule["decode_graph_mib_per_bs"] + prefill)
    if gpu_mib > rule["floor_above_gib"] * 1024:
        reserved = max(reserved, rule["floor_mib"])
    return round((gpu_mib - reserved) / gpu_mib, 3)


def _sglang_default_fraction(deployment: Deployment, device: int, notes: List[str]) -> float:
    parallel = deployment.tensor_parallel * deployment.pipeline_parallel
    heuristic = deployment.release_default("mem_fraction_static_heuristic")
    if heuristic:
        mla = bool(deployment.model and deployment.model.is_mla)
        # serving.max_num_seqs is SGLang's --max-running-requests (kvlint/adapters/flags.py)
        mfs = sglang_heuristic_fraction(device, deployment.tensor_parallel, deployment.pipeline_parallel,
                                        mla, heuristic, deployment.max_num_seqs, deployment.chunked_prefill_size)
        if mfs is not None:
            notes.append(f"mem_fraction_static defaulted to SGLang {deployment.engine_version}'s {mfs} "
                         f"(its reserve for activations at {'serving.chunked_prefill_size' if deployment.chunked_prefill_size is not None else 'the default chunked_prefill_size'} and for the "
                         f"CUDA graphs of this GPU's memory tier, tp x pp = {parallel})")
            return mfs
    reserve = (deployment.release_default("mem_fraction_static_reserve") or {}).get("tiers")
    by_tp = (deployment.release_default("mem_fraction_static_by_tp") or {}).get("tiers")
    if reserve:
        mfs = sglang_reserve_fraction(device, parallel, reserve)
        if mfs is not None:
            notes.append(f"mem_fraction_static defaulted to SGLang {deployment.engine_version}'s {mfs} "
                         f"(its reserve for this GPU's memory tier at tp x pp = {parallel})")
            return mfs
    if by_tp:
        mfs = sglang_tp_fraction(deployment.tensor_parallel, by_tp)
        if mfs is not None:
            notes.append(f"mem_fraction_static defaulted to SGLang {deployment.engine_version}'s {mfs} "
                         f"(its default for tp = {deployment.tensor_parallel})")
            return mfs
    mfs = sglang_mem_fraction_static(device, deployment.tensor_parallel, deployment.pipeline_parallel)
    notes.append(f"mem_fraction_static defaulted to SGLang's heuristic: {mfs}")
    return mfs


def sglang_pool(deployment: Deployment) -> PoolEstimate:
    """SGLang `profile_max_num_token`: rest = available_after_weights - total * (1 - mfs) with
    total = SGLang's first memory reading, i.e. (device - baseline) * mfs - weights
    (python/sglang/srt/model_executor/model_runner.py)."""
    settled, device, notes = _start(deployment)
    if settled is not None:
        return settled
    mfs = deployment.memory.gpu_memory_utilization
    if mfs is None:
        mfs = _sglang_default_fraction(deployment, device, notes)
    else:
        notes.append(f"mem_fraction_static {mfs} (memory.mem_fraction_static or gpu_memory_utilization)")
    multimodal = deployment.release_default("multimodal_mem_fraction_factor") or {}
    architectures = deployment.model.architectures if deployment.model else ()
    if multimodal and set(architectures) & set(multimodal.get("architectures", ())):
        factor = float(multimodal["factor"])
        notes.append(f"SGLang {deployment.engine_version} multiplies mem_fraction_static by {factor} for a "
                     f"multimodal checkpoint ({', '.join(architectures)}): {mfs} -> {round(mfs * factor, 4)}")
        mfs = round(mfs * factor, 4)
    for fraction in deployment.mem_fraction_factors:
        # SGLang multiplies the fraction itself, unrounded (e.g. aiter: mem_fraction_static *= 0.85)
        notes.append(f"{fraction.reason}: {mfs:g} -> {mfs * fraction.factor:.4g}")
        mfs = mfs * fraction.factor
    if deployment.mem_fraction_factor_note:
        notes.append(deployment.mem_fraction_factor_note)
    weights = _weights_per_gpu(deployment, notes)
    if weights is None:
        return PoolEstimate(None, tuple(notes) + ("model weight size unknown: the KV pool "
                                                  "cannot be computed",), mfs)
    checkpoint = weights
    # what SGLang's load holds beyond params x dtype: its "mem usage" (kvlint/capacity/sglang_load.py)
    from kvlint.capacity.sglang_load import sglang_weight_load  # SGLang only: not a vLLM check's start-up

    load_extra, load_text = sglang_weight_load(deployment, weights)
    weights += load_extra
    if load_text:
        notes.append(load_text)
    baseline = deployment.memory.non_kv_memory
    baseline_given = baseline is not None
    if baseline is None:
        baseline = SGLANG_BASELINE_ESTIMATE
        cc = deployment.gpu.compute_capability if deployment.gpu else None
        if cc is not None and cc >= (9, 0):
            baseline = _sm90_init_snapshot(deployment.tensor_parallel, baseline)
        notes.append(f"memory in use before SGLang's first reading (CUDA context, communication "
                     f"buffers) estimated as {baseline / GiB:.2f} GiB per GPU; SGLang scales it by "
                     "mem_fraction_static (memory.non_kv_memory sets it: the device total minus the "
                     "'avail mem' of SGLang's 'Load weight begin' line)")
    pool = int((device - baseline) * mfs) - weights
    notes.append(f"KV pool = ({device:,} B - {baseline:,} B baseline) x {mfs} - {weights:,} B weights "
                 f"= {pool:,} B per GPU")
    device_low, device_high, device_text = _device_band(deployment, mfs)
    extra = ((device_low, device_high, device_text),) if device_text else ()
    return PoolEstimate(pool, tuple(notes), mfs, _band(pool, checkpoint, baseline_given, extra),
                        (("device", device), ("weights", weights), ("non_kv", baseline)))


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
    non_kv_given = non_kv is not None
    if non_kv is None:
        non_kv = TRTLLM_NON_KV_ESTIMATE
        notes.append(f"non_kv_memory estimated as {non_kv / GiB:g} GiB per GPU (peak activations "
                     "during TensorRT-LLM's profiling run)")
    free = device - weights - non_kv
    pool = int(free * fraction) if free > 0 else free
    notes.append(f"KV pool = ({device:,} B - {weights:,} B weights - {non_kv:,} B non-KV) x "
                 f"{fraction} = {pool:,} B per GPU")
    return PoolEstimate(pool, tuple(notes), fraction, _band(pool, weights, non_kv_given),
                        (("device", device), ("weights", weights), ("non_kv", non_kv)))
