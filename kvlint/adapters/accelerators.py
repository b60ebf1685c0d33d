"""Node labels and instance types → GPU model, and resource names → GPU count.

The GPU model is never in a container spec; at best it is a scheduling constraint. The values
returned are catalog ids or catalog aliases (`hardware.gpu` accepts both; the catalog matches
aliases ignoring case, spaces, hyphens and underscores), so `NVIDIA-H100-80GB-HBM3` from GPU
feature discovery is passed through as written.

Tables whose rows were not re-checked against the vendor page in this code base say so with
`verified: False` in `SOURCES`.
"""

from __future__ import annotations

import re
from typing import Dict, Optional, Tuple

from kvlint.records import dataclass

# label key -> kind of value
GPU_LABELS = (
    "nvidia.com/gpu.product",  # NVIDIA GPU feature discovery
    "cloud.google.com/gke-accelerator",  # GKE
    "karpenter.k8s.aws/instance-gpu-name",  # Karpenter (AWS)
    "amd.com/gpu.product-name",  # AMD node labeller (newer)
    "beta.amd.com/gpu.product-name",  # AMD node labeller (older)
    "node.kubernetes.io/instance-type",  # any cloud
    "beta.kubernetes.io/instance-type",  # deprecated spelling of the above
)

SOURCES = {
    "nvidia.com/gpu.product": {
        "url": "https://github.com/NVIDIA/k8s-device-plugin/blob/0719b2a452860ba95947ee7648b8ac0eea388790/docs/gpu-feature-discovery/README.md",
        "verified": False,
    },
    "cloud.google.com/gke-accelerator": {
        "url": "https://cloud.google.com/kubernetes-engine/docs/how-to/gpus",
        "verified": False,
    },
    "karpenter.k8s.aws/instance-gpu-name": {
        "url": "https://karpenter.sh/docs/reference/instance-types/",
        "verified": False,
    },
    "amd.com/gpu.product-name": {
        "url": "https://github.com/ROCm/k8s-device-plugin/blob/180f24eee56f0bf626c8504ab7500a6ebd49640d/cmd/k8s-node-labeller/README.md",
        "verified": False,
    },
    "instance-types": {
        "url": "https://aws.amazon.com/ec2/instance-types/ ; https://cloud.google.com/compute/docs/gpus ; "
        "https://learn.microsoft.com/azure/virtual-machines/sizes/overview",
        "verified": False,
    },
}

# GKE accelerator label values → catalog ids
_GKE = {
    "nvidia-l4": "L4-24GB",
    "nvidia-tesla-a100": "A100-40GB",
    "nvidia-a100-80gb": "A100-80GB",
    "nvidia-h100-80gb": "H100-SXM-80GB",
    "nvidia-h100-mega-80gb": "H100-SXM-80GB",
    "nvidia-h200-141gb": "H200-141GB",
    "nvidia-b200": "B200-180GB",
    "nvidia-gb200": "GB200-186GB",
    "nvidia-rtx-pro-6000": "RTX-PRO-6000-96GB",
    "nvidia-tesla-t4": "NVIDIA T4",
    "nvidia-tesla-v100": "NVIDIA V100",
}

# Karpenter instance-gpu-name → catalog ids (None: the name covers several catalog GPUs)
_KARPENTER = {
    "h100": "H100-SXM-80GB",
    "h200": "H200-141GB",
    "b200": "B200-180GB",
    "a10g": "A10G-24GB",
    "l4": "L4-24GB",
    "l40s": "L40S-48GB",
    "a100": None,  # p4d (40 GB) and p4de (80 GB) both say a100
    "t4": "NVIDIA T4",
}

# instance type → (catalog id, GPUs per instance)
_INSTANCES: Dict[str, Tuple[str, int]] = {
    # AWS
    "p5.48xlarge": ("H100-SXM-80GB", 8),
    "p5.4xlarge": ("H100-SXM-80GB", 1),
    "p5e.48xlarge": ("H200-141GB", 8),
    "p5en.48xlarge": ("H200-141GB", 8),
    "p4d.24xlarge": ("A100-40GB", 8),
    "p4de.24xlarge": ("A100-80GB", 8),
    "p6-b200.48xlarge": ("B200-180GB", 8),
    # GCP
    "a3-highgpu-8g": ("H100-SXM-80GB", 8),
    "a3-megagpu-8g": ("H100-SXM-80GB", 8),
    "a3-ultragpu-8g": ("H200-141GB", 8),
    "a4-highgpu-8g": ("B200-180GB", 8),
    # Azure
    "standard_nd96isr_h100_v5": ("H100-SXM-80GB", 8),
    "standard_nd96isr_h200_v5": ("H200-141GB", 8),
    "standard_nd96asr_v4": ("A100-40GB", 8),
    "standard_nd96amsr_a100_v4": ("A100-80GB", 8),
    "standard_nc24ads_a100_v4": ("A100-80GB", 1),
    "standard_nc48ads_a100_v4": ("A100-80GB", 2),
    "standard_nc96ads_a100_v4": ("A100-80GB", 4),
    "standard_nc40ads_h100_v5": ("H100-NVL-94GB", 1),
    "standard_nc80adis_h100_v5": ("H100-NVL-94GB", 2),
}
# AWS families where the size only changes the GPU count: family → (catalog id, {size: count})
_AWS_FAMILIES = {
    "g5": "A10G-24GB",
    "g6": "L4-24GB",
    "g6e": "L40S-48GB",
}
_AWS_FAMILY_COUNTS = {"12xlarge": 4, "24xlarge": 4, "48xlarge": 8}
_GCP_A2 = re.compile(r"^a2-(highgpu|megagpu|ultragpu)-(\d+)g$")
_GCP_G2 = re.compile(r"^g2-standard-(\d+)$")
_MIG_SUFFIX = re.compile(r"-MIG-\d+g\.\d+gb$", re.IGNORECASE)
_AMD = re.compile(r"MI3[0-9]{2}X", re.IGNORECASE)


@dataclass(frozen=True)
class GpuGuess:
    """The GPU a node label or instance type names, with a remark when it is not clear-cut."""

    gpu: Optional[str]  # catalog id or alias; None when the label names several GPUs
    note: str  # extra remark (MIG slice, ambiguity), "" if none
    per_node: Optional[int] = None  # GPUs on such a node (instance types only)


def gpu_from_label(key: str, value: str) -> Optional[GpuGuess]:
    """The GPU a node label value names, or None when the key is not a GPU label."""
    value = str(value).strip()
    if not value:
        return None
    if key == "nvidia.com/gpu.product":
        note = ""
        product = value
        if product.upper().endswith("-SHARED"):  # GPU sharing (time-slicing) renames the product
            product = product[: -len("-SHARED")]
        if _MIG_SUFFIX.search(product):
            note = (
                f"{value!r} is a MIG slice: the engine sees only the slice's memory; set "
                "hardware.memory (annotation kvlint.dev/gpu-memory)"
            )
            product = _MIG_SUFFIX.sub("", product)
        return GpuGuess(product, note)
    if key == "cloud.google.com/gke-accelerator":
        return GpuGuess(_GKE.get(value.lower(), value), "")
    if key == "karpenter.k8s.aws/instance-gpu-name":
        lowered = value.lower()
        if lowered in _KARPENTER and _KARPENTER[lowered] is None:
            return GpuGuess(None, f"{key}={value} covers several GPU models (40 GB and 80 GB A100)")
        return GpuGuess(_KARPENTER.get(lowered, value), "")
    if key in ("amd.com/gpu.product-name", "beta.amd.com/gpu.product-name"):
        match = _AMD.search(value)
        return GpuGuess(match.group(0).upper() if match else value.replace("_", " "), "")
    if key in ("node.kubernetes.io/instance-type", "beta.kubernetes.io/instance-type"):
        return gpu_from_instance_type(value)
    return None


def gpu_from_instance_type(value: str) -> Optional[GpuGuess]:
    lowered = value.strip().lower()
    if lowered in _INSTANCES:
        gpu, count = _INSTANCES[lowered]
        return GpuGuess(gpu, "", count)
    family, _, size = lowered.partition(".")
    if family in _AWS_FAMILIES and size:
        return GpuGuess(_AWS_FAMILIES[family], "", _AWS_FAMILY_COUNTS.get(size, 1))
    match = _GCP_A2.match(lowered)
    if match:
        gpu = "A100-80GB" if match.group(1) == "ultragpu" else "A100-40GB"
        return GpuGuess(gpu, "", int(match.group(2)))
    match = _GCP_G2.match(lowered)
    if match:
        cpus = int(match.group(1))
        return GpuGuess("L4-24GB", "", {24: 2, 48: 4, 96: 8}.get(cpus, 1))
    return None


# Extended resources that count GPUs (resources.limits keys).
GPU_RESOURCES = ("nvidia.com/gpu", "amd.com/gpu")
_MIG_RESOURCE = re.compile(r"^nvidia\.com/mig-\d+g\.\d+gb$")


def gpu_resource(name: str) -> Optional[str]:
    """'gpu' for a whole-GPU resource, 'mig' for a MIG slice resource, else None."""
    if name in GPU_RESOURCES:
        return "gpu"
    if _MIG_RESOURCE.match(name):
        return "mig"
    return None
