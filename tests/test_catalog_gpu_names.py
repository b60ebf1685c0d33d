"""GPU names as deployments write them: every spelling the catalog lists, and real nvidia-smi product
names, GPU feature discovery node labels and GKE accelerator values collected from public sources,
resolve to the right catalog entry with the right capabilities (issue 22).

The expected compute capabilities are NVIDIA's table (https://developer.nvidia.com/cuda-gpus), not
the catalog's own values read back: a GPU below SM 8.9 has no FP8 tensor cores, which is what KV305
needs to know.
"""

from __future__ import annotations

import pytest

from kvlint.catalog.gpus import load_gpu_catalog

# Where each real string was seen. GPU feature discovery writes nvidia.com/gpu.product as the
# nvidia-smi product name with '-' for ' ' (https://github.com/NVIDIA/k8s-device-plugin/blob/
# 0719b2a452860ba95947ee7648b8ac0eea388790/docs/gpu-feature-discovery/README.md).
REAL_NAMES = [
    # (written, catalog id, source)
    ("Tesla V100-SXM2-16GB", "V100-SXM2-16GB", "https://github.com/1CatAI/1Cat-vLLM/issues/85 (nvidia-smi)"),
    ("Tesla V100-SXM2-16GB", "V100-SXM2-16GB", "https://github.com/vllm-project/vllm/issues/18933 (collect_env)"),
    ("Tesla-V100-SXM2-16GB", "V100-SXM2-16GB", "GFD form of the nvidia-smi name above"),
    ("Tesla-V100-SXM2-32GB", "V100-SXM2-32GB", "GFD label nvidia.com/gpu.product=Tesla-V100-SXM2-32GB (public GPU-scheduling guides)"),
    ("Tesla-V100-PCIE-16GB", "V100-PCIE-16GB", "GFD label nvidia.com/gpu.product=Tesla-V100-PCIE-16GB (public OpenShift node-label examples)"),
    ("Tesla-V100-PCIE-32GB", "V100-PCIE-32GB", "GFD label nvidia.com/gpu.product=Tesla-V100-PCIE-32GB"),
    ("Tesla-V100S-PCIE-32GB", "V100S-PCIE-32GB", "GFD label nvidia.com/gpu.product=Tesla-V100S-PCIE-32GB"),
    ("Tesla V100-DGXS-32GB", "V100-SXM2-32GB", "https://github.com/vllm-project/vllm/pull/35720 (vLLM log)"),
    ("nvidia-tesla-v100", "V100-SXM2-16GB", "https://cloud.google.com/kubernetes-engine/docs/how-to/gpus (gke-accelerator)"),
    ("Tesla T4", "T4-16GB", "https://github.com/deepseek-ai/DeepSeek-R1/issues/546 (nvidia-smi)"),
    ("Tesla-T4", "T4-16GB", "GFD form of 'Tesla T4'"),
    ("nvidia-tesla-t4", "T4-16GB", "https://cloud.google.com/kubernetes-engine/docs/how-to/gpus (gke-accelerator)"),
    ("NVIDIA T4", "T4-16GB", "kvlint/adapters/accelerators.py's GKE table value"),
    ("NVIDIA GeForce RTX 3090", "RTX-3090-24GB", "https://github.com/noonghunna/club-3090/issues/390 (nvidia-smi)"),
    ("NVIDIA-GeForce-RTX-3090", "RTX-3090-24GB", "GFD label nvidia.com/gpu.product: NVIDIA-GeForce-RTX-3090 (public cpodoperator examples)"),
    ("NVIDIA-GeForce-RTX-2080-Ti", "RTX-2080-Ti-11GB", "GFD label nvidia.com/gpu.product: NVIDIA-GeForce-RTX-2080-Ti"),
    ("NVIDIA-GeForce-RTX-4090", "RTX-4090-24GB", "GFD label with nvidia.com/gpu.memory 24564"),
    ("NVIDIA GeForce RTX 4090", "RTX-4090-24GB", "https://github.com/vllm-project/vllm/issues/7553 (nvidia-smi)"),
    ("NVIDIA GeForce RTX 5090", "RTX-5090-32GB", "https://github.com/noonghunna/club-3090/issues/741 (nvidia-smi)"),
    ("NVIDIA-GeForce-RTX-5090", "RTX-5090-32GB", "GFD form"),
    ("NVIDIA RTX A6000", "RTX-A6000-48GB", "https://github.com/vllm-project/vllm/issues/11147 (collect_env)"),
    ("NVIDIA RTX A4000", "RTX-A4000-16GB", "https://github.com/RainbowMiner/RainbowMiner/issues/1796 (nvidia-smi)"),
    ("NVIDIA A800 80GB PCIe", "A800-80GB", "https://github.com/vllm-project/vllm/issues/41519 (nvidia-smi)"),
    ("NVIDIA A100-SXM4-40GB", "A100-40GB", "https://github.com/bottlerocket-os/bottlerocket-core-kit/pull/834 (nvidia-smi)"),
    ("NVIDIA-A100-SXM4-40GB", "A100-40GB", "GFD label with nvidia.com/gpu.memory=40960"),
    ("NVIDIA A100-PCIE-40GB", "A100-40GB", "https://github.com/vllm-project/vllm/issues/10912 (collect_env)"),
    ("nvidia-tesla-a100", "A100-40GB", "https://cloud.google.com/kubernetes-engine/docs/how-to/gpus (gke-accelerator, the 40 GB A100)"),
    ("NVIDIA A100-SXM4-80GB", "A100-80GB", "https://github.com/NVIDIA/CUDALibrarySamples/issues/104 (nvidia-smi -a)"),
    ("NVIDIA-A100-SXM4-80GB", "A100-80GB", "GFD label on AWS p4de.24xlarge nodes"),
    ("nvidia-a100-80gb", "A100-80GB", "https://cloud.google.com/kubernetes-engine/docs/how-to/gpus (gke-accelerator)"),
    ("NVIDIA A40", "A40-48GB", "https://github.com/NVIDIA/nvidia-docker/issues/1447 (nvidia-smi -q)"),
    ("NVIDIA L4", "L4-24GB", "https://github.com/NVIDIA/TensorRT-LLM/issues/2398 (nvidia-smi)"),
    ("nvidia-l4", "L4-24GB", "https://cloud.google.com/kubernetes-engine/docs/how-to/gpus (gke-accelerator)"),
    ("NVIDIA-L40S", "L40S-48GB", "GFD label nvidia.com/gpu.product=NVIDIA-L40S"),
    ("NVIDIA H800", "H800-80GB", "https://github.com/NVIDIA/DCGM/issues/120 (nvidia-smi -q)"),
    ("NVIDIA H20", "H20-96GB", "https://github.com/zzc0721/torch-performance-test-data/issues/77 (torch device name)"),
    ("NVIDIA-H100-80GB-HBM3", "H100-SXM-80GB", "GFD form of 'NVIDIA H100 80GB HBM3'"),
    ("nvidia-h100-80gb", "H100-SXM-80GB", "https://cloud.google.com/kubernetes-engine/docs/how-to/gpus (gke-accelerator)"),
    ("nvidia-h100-mega-80gb", "H100-SXM-80GB", "https://cloud.google.com/kubernetes-engine/docs/how-to/gpus (gke-accelerator)"),
    ("NVIDIA-H200", "H200-141GB", "GFD label nvidia.com/gpu.product=NVIDIA-H200"),
    ("nvidia-h200-141gb", "H200-141GB", "https://cloud.google.com/kubernetes-engine/docs/how-to/gpus (gke-accelerator)"),
    ("nvidia-b200", "B200-180GB", "https://cloud.google.com/kubernetes-engine/docs/how-to/gpus (gke-accelerator)"),
    ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "RTX-PRO-6000-96GB", "nvidia-smi -q product name"),
    ("AMD_Instinct_MI210", "MI210-64GB", "amd.com/gpu.product-name form (underscores for spaces)"),
    ("AMD Instinct MI250X", "MI250X-GCD-64GB", "rocm-smi product name"),
]

# NVIDIA compute capability and whether FP8 tensor cores exist (SM 8.9+), from
# https://developer.nvidia.com/cuda-gpus; AMD FP8 from
# https://rocm.docs.amd.com/en/latest/reference/precision-support.html (gfx942 FNUZ, gfx90a none).
INDEPENDENT = {
    "V100-SXM2-16GB": ((7, 0), None), "V100-SXM2-32GB": ((7, 0), None), "V100-PCIE-16GB": ((7, 0), None),
    "T4-16GB": ((7, 5), None), "RTX-2080-Ti-11GB": ((7, 5), None),
    "A100-40GB": ((8, 0), None), "A100-80GB": ((8, 0), None), "A30-24GB": ((8, 0), None),
    "A10-24GB": ((8, 6), None), "A10G-24GB": ((8, 6), None), "A40-48GB": ((8, 6), None),
    "RTX-3090-24GB": ((8, 6), None), "RTX-3080": ((8, 6), None), "RTX-A6000-48GB": ((8, 6), None),
    "L4-24GB": ((8, 9), "e4m3"), "L40-48GB": ((8, 9), "e4m3"), "RTX-4090-24GB": ((8, 9), "e4m3"),
    "RTX-6000-Ada-48GB": ((8, 9), "e4m3"), "H100-SXM-80GB": ((9, 0), "e4m3"), "H200-NVL-141GB": ((9, 0), "e4m3"),
    "B200-180GB": ((10, 0), "e4m3"), "GB200-186GB": ((10, 0), "e4m3"), "RTX-5090-32GB": ((12, 0), "e4m3"),
    "MI210-64GB": (None, None), "MI250X-GCD-64GB": (None, None), "MI300A-128GB": (None, "e4m3fnuz"),
}


@pytest.fixture(scope="module")
def catalog():
    return load_gpu_catalog()


def test_at_least_sixty_gpus_each_with_a_source(catalog):
    assert len(catalog) >= 60
    for entry in catalog:
        assert entry.sources and all(s.url or (s.repo and s.path) for s in entry.sources), entry.id


def test_every_listed_spelling_resolves_to_its_entry(catalog):
    for entry in catalog:
        for spelling in (entry.id, *entry.aliases):
            found = catalog.lookup(spelling)
            assert found is not None and found.id == entry.id, (spelling, entry.id, found and found.id)


@pytest.mark.parametrize("written,expected,source", REAL_NAMES, ids=[f"{w}@{i}" for i, (w, _, _) in enumerate(REAL_NAMES)])
def test_real_names_resolve(catalog, written, expected, source):
    entry = catalog.lookup(written)
    assert entry is not None, f"{written!r} ({source}) is not recognised"
    assert entry.id == expected, (written, source)


@pytest.mark.parametrize("gpu", sorted(INDEPENDENT))
def test_capabilities_match_the_vendor_tables(catalog, gpu):
    cc, fp8 = INDEPENDENT[gpu]
    info = catalog.get(gpu).info()
    assert info.compute_capability == cc
    assert info.fp8 == fp8


@pytest.mark.parametrize("gpu,mib", [
    # nvidia-smi totals in public logs (sources in the REAL_NAMES rows / the catalog entries)
    ("V100-SXM2-16GB", 16384), ("T4-16GB", 15360), ("RTX-3090-24GB", 24576), ("RTX-5090-32GB", 32607),
    ("RTX-A6000-48GB", 49140), ("A800-80GB", 81920), ("RTX-PRO-6000-96GB", 97887),
])
def test_nvidia_smi_totals(catalog, gpu, mib):
    assert catalog.get(gpu).nvidia_smi_mib == mib


def test_rtx3090_memory_is_the_cuda_total_vllm_logs(catalog):
    # vllm-project/vllm#10517: "total_gpu_memory=23.58GiB" on an RTX 3090
    assert abs(catalog.get("RTX-3090-24GB").memory_bytes / 2**30 - 23.58) < 0.005


@pytest.mark.parametrize("written", [
    "NVIDIA GeForce RTX 3060",  # 8 GB and 12 GB cards share the name: memory would be a guess
    "NVIDIA GeForce RTX 4060 Ti",  # 8 GB and 16 GB
    "nvidia-tesla-p100", "Tesla P100-PCIE-16GB", "nvidia-tesla-p4",  # Pascal: out of scope
])
def test_names_left_out_on_purpose(catalog, written):
    assert catalog.lookup(written) is None


def test_ambiguous_memory_is_unknown_not_guessed(catalog):
    rtx3080 = catalog.lookup("NVIDIA GeForce RTX 3080")
    assert rtx3080.memory_bytes is None and rtx3080.info().fp8 is None
    assert catalog.get("MI250X-GCD-64GB").memory_bytes == 64 * 2**30  # one GCD is one ROCm device


# Apple silicon (llama.cpp / Ollama on Metal). Names as they appear in public llama.cpp / Ollama
# reports; the Metal GPU family per chip generation from Apple's Metal feature set tables
# (https://developer.apple.com/metal/Metal-Feature-Set-Tables.pdf: M1 Apple7, M2 Apple8, M3 and M4
# Apple9), which llama.cpp logs as 'GPU family: MTLGPUFamilyApple<N>'.
APPLE_NAMES = [
    ("M2 Max", "Apple-M2-Max", "https://github.com/ollama/ollama/issues/434 ('Macbook Pro M2 Max with 32GB')"),
    ("M1 Max", "Apple-M1-Max", "https://github.com/ggml-org/llama.cpp/pull/2011 ('M1 Max with 32GB RAM')"),
    ("M1 Pro", "Apple-M1-Pro", "https://github.com/ggml-org/llama.cpp/pull/2011 ('M1 Pro 16GB')"),
    ("Apple M2 Ultra", "Apple-M2-Ultra", "https://github.com/antirez/ds4/pull/88 ('Hardware: Apple M2 Ultra')"),
    ("Apple M4 Max", "Apple-M4-Max", "Metal device name as llama.cpp logs it: 'GPU name:   MTL0 (Apple M4 Max)'"),
]
APPLE_FAMILY = {"M1": "apple7", "M2": "apple8", "M3": "apple9", "M4": "apple9"}
# unified-memory sizes seen with recommendedMaxWorkingSetSize in those reports: the GPU's share is
# not the chip's memory (32 GB -> 21845.34 MB; 96 GB -> 73728 MB, llama.cpp issue #3213)
APPLE_SOLD_WITH = [("Apple-M2-Max", 32), ("Apple-M1-Max", 32), ("Apple-M1-Pro", 16), ("Apple-M2-Ultra", 192),
                   ("Apple-M2-Max", 96)]


@pytest.mark.parametrize("written,expected,source", APPLE_NAMES)
def test_apple_names_resolve(catalog, written, expected, source):
    entry = catalog.lookup(written)
    assert entry is not None and entry.id == expected, (written, source)


def test_apple_chips_m1_to_m4_with_their_metal_family(catalog):
    apple = [e for e in catalog if e.vendor == "apple"]
    chips = {e.id for e in apple}
    for gen in ("M1", "M2", "M3", "M4"):
        for tier in ("", "-Pro", "-Max"):
            assert f"Apple-{gen}{tier}" in chips
    assert {"Apple-M1-Ultra", "Apple-M2-Ultra", "Apple-M3-Ultra"} <= chips
    for e in apple:
        assert e.arch == APPLE_FAMILY[e.id.split("-")[1]], e.id
        info = e.info()
        assert info.compute_capability is None and info.fp8 is None and info.fp4 is False


def test_apple_memory_is_never_a_fixed_size(catalog):
    """Unified memory is chosen at purchase and the GPU gets a share of it: the catalog gives no
    device size, the manifest's hardware.memory does."""
    for e in catalog:
        if e.vendor == "apple":
            assert e.memory_bytes is None and e.memory_basis == "unknown", e.id
            assert e.info(memory_override=48 << 30).memory_bytes == 48 << 30


@pytest.mark.parametrize("gpu,gib", APPLE_SOLD_WITH)
def test_apple_memory_configurations(gpu, gib):
    import yaml

    from kvlint.resources import catalog_dir

    doc = yaml.safe_load((catalog_dir() / "gpus.yaml").read_text())
    entry = next(g for g in doc["gpus"] if g["id"] == gpu)
    assert gib in entry["memory_configurations_gib"]
