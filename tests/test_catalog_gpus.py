"""GPU catalog: data validity, sources, alias lookup (nvidia-smi names), GpuInfo."""

from __future__ import annotations

import json

import pytest
import yaml

from kvlint.errors import CatalogError
from kvlint.catalog.gpus import GpuCatalog, load_gpu_catalog, normalize_gpu_name
from kvlint.deployment import GpuInfo
from kvlint.resources import catalog_dir, schemas_dir

REQUIRED_IDS = [
    "A10G-24GB", "A100-40GB", "A100-80GB", "L4-24GB", "L40S-48GB", "RTX-4090-24GB",
    "H100-SXM-80GB", "H100-PCIE-80GB", "H100-NVL-94GB", "H200-141GB", "GH200-96GB",
    "B200-180GB", "MI300X-192GB", "MI325X-256GB", "MI355X-288GB",
]


@pytest.fixture(scope="module")
def catalog() -> GpuCatalog:
    return load_gpu_catalog()


def test_builtin_file_validates_against_schema():
    from jsonschema import Draft202012Validator

    schema = json.loads((schemas_dir() / "catalog-gpu.json").read_text())
    Draft202012Validator.check_schema(schema)
    data = yaml.safe_load((catalog_dir() / "gpus.yaml").read_text())
    errors = list(Draft202012Validator(schema).iter_errors(data))
    assert not errors, [e.message for e in errors]


def test_required_gpus_present(catalog):
    assert set(REQUIRED_IDS) <= set(catalog.ids)


def test_every_gpu_has_a_source_and_unverified_entries_say_why(catalog):
    for entry in catalog:
        assert entry.sources, entry.id
        for source in entry.sources:
            assert source.url or (source.repo and source.path), (entry.id, source)
        if not entry.verified:
            assert entry.notes and entry.unverified_fields, entry.id


@pytest.mark.parametrize(
    "name,expected",
    [
        ("NVIDIA H100 80GB HBM3", "H100-SXM-80GB"),
        ("h100", "H100-SXM-80GB"),
        ("H100-SXM-80GB", "H100-SXM-80GB"),
        ("h100 sxm 80gb", "H100-SXM-80GB"),
        ("h100_sxm_80gb", "H100-SXM-80GB"),
        ("NVIDIA H100 PCIe", "H100-PCIE-80GB"),
        ("NVIDIA H100 NVL", "H100-NVL-94GB"),
        ("NVIDIA H200", "H200-141GB"),
        ("NVIDIA GH200 480GB", "GH200-96GB"),
        ("NVIDIA B200", "B200-180GB"),
        ("NVIDIA A100-SXM4-80GB", "A100-80GB"),
        ("NVIDIA A100 80GB PCIe", "A100-80GB"),
        ("NVIDIA A100-SXM4-40GB", "A100-40GB"),
        ("NVIDIA A10G", "A10G-24GB"),
        ("NVIDIA L4", "L4-24GB"),
        ("NVIDIA L40S", "L40S-48GB"),
        ("NVIDIA GeForce RTX 4090", "RTX-4090-24GB"),
        ("AMD Instinct MI300X", "MI300X-192GB"),
        ("mi325x", "MI325X-256GB"),
        ("AMD Instinct MI355X", "MI355X-288GB"),
        ("nvidia l40s", "L40S-48GB"),  # vendor prefix stripped for a name only listed bare
    ],
)
def test_lookup_by_id_alias_and_nvidia_smi_name(catalog, name, expected):
    entry = catalog.lookup(name)
    assert entry is not None and entry.id == expected


@pytest.mark.parametrize("name", ["", "   ", "Tesla P100", "H300", "L30"])
def test_unknown_names_return_none(catalog, name):
    assert catalog.lookup(name) is None


def test_suggest_did_you_mean(catalog):
    assert catalog.suggest("H100-SXM")[0] == "H100-SXM-80GB"
    assert {"MI300X-192GB", "MI300A-128GB"} <= set(catalog.suggest("mi300"))  # both are MI300 parts
    assert "L40S-48GB" in catalog.suggest("L40")
    assert catalog.suggest("") == []


def test_aliases_are_unambiguous(catalog):
    owner = {}
    for entry in catalog:
        for spelling in (entry.id, *entry.aliases):
            key = normalize_gpu_name(spelling)
            assert owner.setdefault(key, entry.id) == entry.id, spelling


@pytest.mark.parametrize(
    "gpu,cc,arch,fp8,fp4,vendor",
    [
        ("A100-80GB", (8, 0), "sm80", None, False, "nvidia"),
        ("A10G-24GB", (8, 6), "sm86", None, False, "nvidia"),
        ("L4-24GB", (8, 9), "sm89", "e4m3", False, "nvidia"),
        ("H100-SXM-80GB", (9, 0), "sm90", "e4m3", False, "nvidia"),
        ("B200-180GB", (10, 0), "sm100", "e4m3", True, "nvidia"),
        ("MI300X-192GB", None, "gfx942", "e4m3fnuz", False, "amd"),
        ("MI325X-256GB", None, "gfx942", "e4m3fnuz", False, "amd"),
        ("MI355X-288GB", None, "gfx950", "e4m3", True, "amd"),
    ],
)
def test_capabilities(catalog, gpu, cc, arch, fp8, fp4, vendor):
    info = catalog.lookup(gpu).info()
    assert isinstance(info, GpuInfo)
    assert (info.compute_capability, info.arch, info.fp8, info.fp4, info.vendor) == (cc, arch, fp8, fp4, vendor)


@pytest.mark.parametrize(
    "gpu,memory",
    [
        ("H100-SXM-80GB", 81091 * 2**20),  # CUDA total vLLM logs (79.19 GiB), not nvidia-smi's 81,559 MiB
        ("H200-141GB", 150_754_820_096),
        ("A100-80GB", 85_093_777_408),  # measured torch total, not nvidia-smi's 81,920 MiB
        ("MI300X-192GB", 206_158_430_208),
        ("B200-180GB", 192_265_846_784),
    ],
)
def test_memory_is_not_the_nameplate(catalog, gpu, memory):
    assert catalog.lookup(gpu).info().memory_bytes == memory


def test_memory_override_and_unknown_memory(catalog):
    assert catalog.lookup("h100").info(memory_override=40 * 2**30).memory_bytes == 40 * 2**30
    b300 = catalog.lookup("B300")
    assert b300 is not None and b300.memory_bytes is None and not b300.memory_known
    assert b300.info().memory_bytes is None  # unknown stays unknown; no exception mid-resolve
    assert b300.info().fp4 is True
    assert b300.info(memory_override=10).memory_bytes == 10


def test_catalog_dir_adds_and_replaces_entries(tmp_path):
    (tmp_path / "gpus.yaml").write_text(
        "gpus:\n"
        "  - id: H100-SXM-80GB\n    vendor: nvidia\n    compute_capability: '9.0'\n"
        "    memory_bytes: 85000000000\n    memory_basis: cuda\n    fp8: e4m3\n    fp4: false\n"
        "    verified: true\n    sources: [{url: 'https://example.com/measured'}]\n"
        "  - id: ORG-P100-16GB\n    aliases: ['Tesla P100-PCIE-16GB']\n    vendor: nvidia\n    compute_capability: '6.0'\n"
        "    memory_bytes: 17071734784\n    fp8: none\n    fp4: false\n    verified: false\n"
        "    notes: org measurement\n    sources: [{url: 'https://example.com/p100'}]\n"
    )
    merged = load_gpu_catalog([catalog_dir(), tmp_path])
    assert merged.lookup("h100").memory_bytes == 85_000_000_000
    # Pascal is out of the built-in catalog's scope; an organisation may add it
    assert merged.lookup("NVIDIA Tesla P100-PCIE-16GB").id == "ORG-P100-16GB"
    assert merged.lookup("ORG-P100-16GB").info().arch == "sm60"


def test_user_catalog_is_schema_checked(tmp_path):
    (tmp_path / "gpus.yaml").write_text("gpus:\n  - id: X1\n    vendor: intel\n")
    with pytest.raises(CatalogError) as raised:
        load_gpu_catalog([tmp_path])
    assert "gpus.yaml" in str(raised.value)


def test_bad_yaml_is_a_catalog_error(tmp_path):
    (tmp_path / "gpus.yaml").write_text("gpus: [\n")
    with pytest.raises(CatalogError, match="not valid YAML"):
        load_gpu_catalog([tmp_path])


def test_duplicate_alias_within_a_file_is_rejected(tmp_path):
    entry = ("  - id: {id}\n    aliases: [shared]\n    vendor: amd\n    arch: gfx942\n    memory_bytes: 1\n"
             "    fp8: none\n    fp4: false\n    verified: true\n    sources: [{{url: 'https://x.y'}}]\n")
    (tmp_path / "gpus.yaml").write_text("gpus:\n" + entry.format(id="A1") + entry.format(id="A2"))
    with pytest.raises(CatalogError, match="names both"):
        load_gpu_catalog([tmp_path])
