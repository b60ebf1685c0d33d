"""vLLM 0.11.0-0.17.1 replace an MLA model's block size (CudaPlatformBase.check_and_update_config):
kvlint's catalog rule `mla_block_size_override` against the answers of each release's own code
(tools/derive/tables/vllm_mla_block.json, written by tools/derive/mla_block_truth.py from the
wheels), and the findings: the replaced size is ignored (KV313), not refused (KV310), and capacity
sizes the cache with the forced size."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from kvlint.catalog import load_catalogs
from kvlint.resolve.mla_block import forced_block

ROOT = Path(__file__).resolve().parents[1]
TABLE = ROOT / "tools" / "derive" / "tables" / "vllm_mla_block.json"
sys.path.insert(0, str(ROOT / "tools" / "derive"))
from mla_block_truth import CACHE, RELEASES, derive, grid_cells  # noqa: E402

CATALOG = load_catalogs()


def _kvlint_size(release: str, cell) -> object:
    """The block size kvlint says this release runs with, None for 'unset and not forced'."""
    rel = CATALOG.engines.release("vllm", release)
    rule = rel.default("mla_block_size_override")
    cc = tuple(int(x) for x in cell["cc"].split("."))
    decided, forced = forced_block(rule, explicit=cell["backend"], cc=cc, sparse=cell["sparse"],
                                   qk_nope=cell["qk_nope"], block=cell["block"])
    if rule is not None:
        assert decided, (release, cell)
        return forced.size if forced else (16 if cell["block"] is None else cell["block"])
    return cell["block"]  # no rule: the block size stays what was written (None = unset)


@pytest.mark.parametrize("group", json.loads(TABLE.read_text())["groups"], ids=lambda g: g["releases"][0])
def test_catalog_rule_matches_the_releases_code(group):
    cells = grid_cells()
    truth = group["block_sizes"].split()
    assert len(truth) == len(cells)
    for release in group["releases"]:
        wrong = [(c, t, _kvlint_size(release, c)) for c, t in zip(cells, truth)
                 if str(_kvlint_size(release, c)) != t]
        assert not wrong, f"{release}: {len(wrong)} cells differ, e.g. {wrong[:3]}"


def test_table_covers_the_releases_with_the_override():
    releases = [r for g in json.loads(TABLE.read_text())["groups"] for r in g["releases"]]
    assert releases == RELEASES
    known = CATALOG.engines.known_versions("vllm")
    for release in known:
        if release in RELEASES:
            continue
        rel = CATALOG.engines.release("vllm", release)
        if rel.version < "0.11.0" or rel.default("mla_block_size_override") is not None:
            # a catalogued release in the override's range must be in the table
            assert rel.default("mla_block_size_override") is None, release


@pytest.mark.skipif(not all((CACHE / f"vllm-{r}" / "vllm" / "platforms" / "cuda.py").exists() for r in RELEASES),
                    reason="the vLLM wheels are not in tools/derive/.cache (tools/derive/wheels.py fetches them)")
def test_checked_in_table_is_what_the_code_answers():
    assert derive()["groups"] == json.loads(TABLE.read_text())["groups"]


def _manifest(tmp_path, version, gpu, backend, block):
    block_line = f"\n  block_size: {block}" if block is not None else ""
    path = tmp_path / "m.yaml"
    path.write_text(f"""apiVersion: kvlint/v1
kind: Deployment
metadata:
  name: ex
engine:
  name: vllm
  version: "{version}"
  attention_backend: {backend}
hardware:
  gpu: {gpu}
  count: 8
parallelism:
  tensor: 8
memory:
  kv_cache_memory: 20000000000
model:
  name: deepseek-ai/DeepSeek-V3
kv_cache:
  dtype: auto{block_line}
""")
    return path


def _cli(*args):
    from conftest import CliRunner  # noqa: PLC0415
    from kvlint.cli.app import main  # noqa: PLC0415
    return CliRunner().invoke(main, list(args))


def _diagnostics(path):
    result = _cli("check", "--output-format", "json", str(path))
    return json.loads(result.stdout)["diagnostics"]


@pytest.mark.parametrize("version,gpu,backend,block,forced", [
    # CudaPlatformBase.check_and_update_config, vllm/platforms/cuda.py:
    ("0.14.0", "B200", "CUTLASS_MLA", 64, 128),  # v0.14.0 L216: block % 128 != 0 -> 128
    ("0.14.0", "H100-SXM-80GB", "FLASHMLA", 32, 64),  # v0.14.0 L211: % 64 != 0 on Hopper -> 64
    ("0.14.0", "H100-SXM-80GB", "auto", 16, 64),  # no backend named: FlashMLA planned on Hopper
    ("0.17.1", "B200", "auto", 16, 64),  # v0.17.1: FLASHINFER_MLA planned (qk_nope_head_dim 128), L263
    ("0.11.0", "B200", "auto", 32, 128),  # v0.11.0 L171: CUTLASS_MLA keeps only 128
])
def test_forced_block_is_ignored_not_refused(tmp_path, version, gpu, backend, block, forced):
    found = _diagnostics(_manifest(tmp_path, version, gpu, backend, block))
    assert "KV310" not in [f["code"] for f in found]
    kv313 = [f for f in found if f["code"] == "KV313"]
    assert len(kv313) == 1, found
    assert f"kv_cache.block_size={block}" in kv313[0]["message"]
    assert f"block size with {forced}" in kv313[0]["message"]
    assert (kv313[0]["line"], kv313[0]["pointer"]) == (20, "/kv_cache/block_size")


def test_0_18_still_refuses(tmp_path):
    """From 0.18.0 nothing is forced (check_and_update_config has no MLA branch): KV310 stays."""
    found = _diagnostics(_manifest(tmp_path, "0.18.0", "H100-SXM-80GB", "FLASHMLA", 32))
    assert [f["code"] for f in found if f["code"] in ("KV310", "KV313")] == ["KV310"]


def test_capacity_uses_the_forced_block_size(tmp_path):
    """H100, 0.14.0, no backend named, block size unset: 16 (v0.14.0 L161), then 64 for FlashMLA
    (L211): 64 tokens per block of 70,272 B (DeepSeek-V3: 61 layers x (512 + 64) x 2 B), so a
    20e9 B pool holds floor(20e9 / 4,497,408) = 4,447 blocks = 284,608 tokens."""
    result = _cli("capacity", "--format", "json", str(_manifest(tmp_path, "0.14.0", "H100-SXM-80GB", "auto", None)))
    engine = json.loads(result.stdout)[0]["engine"]
    assert (engine["block_size"], engine["bytes_per_block"]) == (64, 64 * 61 * 576 * 2)
    assert (engine["num_blocks"], engine["kv_cache_tokens"]) == (4447, 4447 * 64)
    text = _cli("capacity", str(_manifest(tmp_path, "0.14.0", "H100-SXM-80GB", "auto", None))).output
    assert "block size 64: vLLM forces it for FLASHMLA" in text
