"""tools/derive/vllm_registry.py: every attention-backend name a vLLM release knows, read from its
wheel's enum with `ast`; and the catalog's other-device backends that come from it (KV323, not
KV204). The wheels are not here: the reader is tested on enum sources written like the releases'
own, and the committed table on its shape and coverage."""

from __future__ import annotations

import json
import sys
import zipfile

import pytest

from conftest import REPO_ROOT, invoke
from kvlint.catalog import load_catalogs

sys.path.insert(0, str(REPO_ROOT / "tools" / "derive"))
import vllm_registry as R  # noqa: E402

# the shapes of the enum in vLLM 0.11.0 (vllm/platforms/interface.py) and 0.15.0 (registry.py)
OLD = '''
import enum
class _Backend(enum.Enum):
    FLASH_ATTN = enum.auto()
    ROCM_FLASH = enum.auto()
    NO_ATTENTION = enum.auto()
class PlatformEnum(enum.Enum):
    CUDA = enum.auto()
'''
NEW = '''
class AttentionBackendEnum(enum.Enum, metaclass=_AttentionBackendEnumMeta):
    """Enumeration of all supported attention backends."""
    FLASH_ATTN = "vllm.v1.attention.backends.flash_attn.FlashAttentionBackend"
    TORCH_SDPA = ""  # this tag is only used for ViT
    CPU_ATTN = "vllm.v1.attention.backends.cpu_attn.CPUAttentionBackend"
    CUSTOM = None
    def get_path(self, include_classname: bool = True) -> str:
        return self.value
'''


def test_members_are_the_class_body_assignments_in_order():
    assert R.enum_members(OLD, "_Backend") == [("FLASH_ATTN", 4), ("ROCM_FLASH", 5), ("NO_ATTENTION", 6)]
    assert [n for n, _ in R.enum_members(NEW, "AttentionBackendEnum")] == ["FLASH_ATTN", "TORCH_SDPA", "CPU_ATTN", "CUSTOM"]
    assert R.enum_members(NEW, "_Backend") is None


def test_a_wheel_is_read_from_the_newest_layout_it_holds(tmp_path):
    wheel = tmp_path / "vllm-9.9.9-cp38-abi3-manylinux_2_31_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("vllm/platforms/interface.py", OLD)
        archive.writestr("vllm/v1/attention/backends/registry.py", "import enum\n" + NEW)
    found = R.read_wheel(wheel)
    assert found["path"] == "vllm/v1/attention/backends/registry.py" and found["names"][-1] == "CUSTOM"
    out = tmp_path / "registry.json"
    assert R.main(["9.9.9", "--wheel-dir", str(tmp_path), "--out", str(out)]) == 0
    first = out.read_bytes()
    assert R.main(["9.9.9", "--wheel-dir", str(tmp_path), "--out", str(out)]) == 0
    assert out.read_bytes() == first and json.loads(first)["releases"]["9.9.9"]["class"] == "AttentionBackendEnum"
    assert wheel.exists()  # a wheel it was given is not deleted
    # an extracted release (what vllm_derive.py has) reads the same; recording one release keeps the others
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(tmp_path / "tree")
    assert R.read_tree(tmp_path / "tree") == found
    R.record("9.10.0", dict(found, names=["FLASH_ATTN"]), out)
    assert set(json.loads(out.read_text())["releases"]) == {"9.9.9", "9.10.0"}


def test_the_committed_table_covers_every_release_with_a_derived_table():
    doc = json.loads(R.OUT.read_text())
    tables = {p.stem for p in R.TABLES.glob("*.json")}
    assert set(doc["releases"]) == tables
    assert doc["releases"]["0.11.0"]["class"] == "_Backend"
    for version, entry in doc["releases"].items():
        probed = set(json.loads((R.TABLES / f"{version}.json").read_text())["backends"])
        # 0.11.0 has no registry of paths: its probe found FlashMLASparseBackend by scanning the
        # modules; auto-selection picks it (use_sparse), but _Backend has no such member
        assert probed - set(entry["names"]) == ({"FLASHMLA_SPARSE"} if version == "0.11.0" else set()), version


@pytest.mark.parametrize("backend,version,platform", [
    ("CPU_ATTN", "0.19.1", "cpu"), ("PALLAS", "0.12.0", "tpu"), ("XPU_MLA_SPARSE", "0.19.1", "xpu"),
    ("CPU_MLA", "0.33.0", "cpu"), ("AMX_MLA", "0.33.0", "cpu"),
])
def test_another_devices_backend_is_kv323_not_kv204(tmp_path, backend, version, platform):
    doc = json.loads(R.OUT.read_text())
    assert backend in doc["releases"][version]["names"]  # the release's own enum names it
    release = load_catalogs(()).engines.release("vllm", version)
    assert release.backend(backend) is not None and release.backend(backend).platforms == (platform,)
    manifest = tmp_path / "d.yaml"
    manifest.write_text(
        "apiVersion: kvlint/v1\nkind: Deployment\nmetadata: {name: d}\n"
        f"engine: {{name: vllm, version: \"{version}\", attention_backend: {backend}}}\n"
        "hardware: {gpu: H100-SXM-80GB}\nmodel: {name: meta-llama/Llama-3.1-8B-Instruct}\nkv_cache: {dtype: auto}\n",
        encoding="utf-8")
    report = json.loads(invoke(["check", "--output-format", "json", str(manifest)]).stdout)
    codes = {d["code"]: d["message"] for d in report["diagnostics"]}
    assert "KV204" not in codes and f"only {platform}" in codes["KV323"]
