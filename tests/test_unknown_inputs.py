"""GPUs and models the catalog does not know: described by the manifest, never guessed."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import REPO_ROOT, invoke
from kvlint.catalog import load_catalogs

GPUS = load_catalogs(()).gpus


@pytest.mark.parametrize("written, allowed", [
    # an Ampere card the catalog lacks is never offered FP8-capable Ada/Blackwell cards (the RTX
    # 3090 this used to name is catalogued since issue 22: tests/test_catalog_gpu_names.py)
    ("RTX 3070", set()),
    ("NVIDIA GeForce RTX 3070", set()),
    ("NVIDIA GeForce RTX 3060", {"RTX-3060-12GB"}),  # the name hides 8 vs 12 GB: offered, not taken
    ("H100 80G", {"H100-SXM-80GB", "H100-PCIE-80GB"}),
    ("MI50", set()),
    ("A100 40G PCIe", {"A100-40GB", "A100-80GB"}),
])
def test_suggestions_stay_within_the_gpu_model(written, allowed):
    suggested = GPUS.suggest(written)
    assert set(suggested) <= allowed
    if allowed:
        assert suggested, written
    entries = [GPUS.get(gpu_id) for gpu_id in suggested]
    assert len({entry.compute_capability for entry in entries}) <= 1


def test_suggestions_do_not_depend_on_hash_seed():
    code = "from kvlint.catalog import load_catalogs; print(load_catalogs(()).gpus.suggest('H100-SXM-80G x'))"
    outputs = {
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO_ROOT,
                       env={**os.environ, "PYTHONHASHSEED": str(seed), "KVLINT_NO_CACHE": "1"}).stdout
        for seed in range(4)
    }
    assert len(outputs) == 1, outputs


MANIFEST = """\
apiVersion: kvlint/v1
kind: Deployment
metadata: {{name: rtx3070}}
engine: {{name: vllm, version: "0.19.1", attention_backend: FLASH_ATTN}}
hardware: {{gpu: RTX-3070{extra}}}
model: {{name: meta-llama/Llama-3.1-8B-Instruct}}
kv_cache: {{dtype: fp8}}
serving: {{max_model_len: 8192}}
"""


def _codes(tmp_path, monkeypatch, extra):
    (tmp_path / "kvlint.toml").write_text("# defaults\n", encoding="utf-8")
    (tmp_path / "d.yaml").write_text(MANIFEST.format(extra=extra), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    result = invoke(["check", "--output-format", "json", "d.yaml"])
    return {d["code"]: d for d in json.loads(result.stdout)["diagnostics"]}


def test_an_unknown_gpu_without_a_description_skips_gpu_checks(tmp_path, monkeypatch):
    codes = _codes(tmp_path, monkeypatch, "")
    assert "KV202" in codes and "hardware.compute_capability" in codes["KV202"]["message"]
    assert "KV305" not in codes and "KV301" not in codes  # not run, and the KV202 says so


def test_an_unknown_gpu_described_by_its_compute_capability_is_checked(tmp_path, monkeypatch):
    codes = _codes(tmp_path, monkeypatch, ', compute_capability: "8.6", memory: 24GiB')
    assert "KV202" not in codes
    # FLASH_ATTN runs FA2 on SM 8.6, which has no FP8: the rule now runs on the described GPU.
    assert "KV305" in codes and "sm86" in codes["KV305"]["message"]


def test_a_model_in_the_local_hugging_face_cache_is_read_offline(tmp_path, monkeypatch):
    """A model the catalog lacks is read from $HF_HUB_CACHE's snapshot that refs/main names."""
    repo = tmp_path / "hub" / "models--acme--Llama-3.1-8B-Instruct-W4A16"
    snapshot = repo / "snapshots" / "0123abcd"
    snapshot.mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("0123abcd", encoding="utf-8")
    config = REPO_ROOT / "examples" / "models" / "qwen2.5-7b-support-ft" / "config.json"
    (snapshot / "config.json").write_text(config.read_text(encoding="utf-8"), encoding="utf-8")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    work = tmp_path / "work"
    work.mkdir()
    (work / "kvlint.toml").write_text("# defaults\n", encoding="utf-8")
    text = MANIFEST.format(extra="").replace("RTX-3090", "H100-SXM-80GB").replace(
        "meta-llama/Llama-3.1-8B-Instruct", "acme/Llama-3.1-8B-Instruct-W4A16")
    (work / "d.yaml").write_text(text, encoding="utf-8")
    monkeypatch.chdir(work)
    facts = json.loads(invoke(["facts", "d.yaml"]).stdout)[0]
    assert facts["model"]["source"] == "hf-cache" and facts["model"]["num_layers"] == 28
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty"))
    report = json.loads(invoke(["check", "--output-format", "json", "d.yaml"]).stdout)
    kv203 = [d for d in report["diagnostics"] if d["code"] == "KV203"]
    assert kv203 and kv203[0]["severity"] == "warning"  # unknown, not an error that fails CI


def test_a_pinned_revision_reads_its_own_snapshot_of_the_local_cache(tmp_path, monkeypatch):
    """model.revision picks the snapshot: a 40-hex commit is snapshots/<commit>, a branch or tag
    the commit refs/<name> holds; a pinned revision the cache lacks is not answered with another
    snapshot (that would be another checkpoint). Offline: nothing is fetched."""
    main, pinned = "a" * 40, "b" * 40
    repo = tmp_path / "hub" / "models--acme--ft"
    for commit, source in ((main, "examples/models/qwen2.5-7b-support-ft/config.json"),
                           (pinned, "tests/data/hub/configs/Qwen--Qwen3-8B.json")):
        (repo / "snapshots" / commit).mkdir(parents=True)
        (repo / "snapshots" / commit / "config.json").write_bytes((REPO_ROOT / source).read_bytes())
    layers = {commit: json.loads((repo / "snapshots" / commit / "config.json").read_text())["num_hidden_layers"]
              for commit in (main, pinned)}
    assert layers[main] != layers[pinned]
    (repo / "refs" / "pr").mkdir(parents=True)
    (repo / "refs" / "main").write_text(main, encoding="utf-8")
    (repo / "refs" / "v2").write_text(pinned, encoding="utf-8")
    (repo / "refs" / "pr" / "1").write_text(pinned, encoding="utf-8")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("KVLINT_CACHE_DIR", str(tmp_path / "kvlint-cache"))
    work = tmp_path / "work"
    work.mkdir()
    (work / "kvlint.toml").write_text("# defaults\n", encoding="utf-8")
    monkeypatch.chdir(work)
    base = MANIFEST.format(extra="").replace("meta-llama/Llama-3.1-8B-Instruct", "acme/ft")
    cases = {None: layers[main], pinned: layers[pinned], "v2": layers[pinned], "refs/pr/1": layers[pinned],
             "c" * 40: None, "no-such-branch": None}
    for index, (revision, expected) in enumerate(cases.items()):
        text = base if revision is None else base.replace("{name: acme/ft}", f"{{name: acme/ft, revision: {revision}}}")
        assert revision is None or f"revision: {revision}" in text
        (work / f"d{index}.yaml").write_text(text, encoding="utf-8")
        model = json.loads(invoke(["facts", f"d{index}.yaml"]).stdout)[0]["model"]
        if expected is None:
            assert model["source"] != "hf-cache" and not model["known"], revision
        else:
            assert (model["source"], model["num_layers"]) == ("hf-cache", expected), revision


def test_a_unicode_digit_in_the_skip_set_is_an_unrecognised_entry(tmp_path, monkeypatch):
    """str.isdigit() is true for "²", which int() refuses: found by the semantic fuzz test."""
    text = MANIFEST.format(extra="").replace("RTX-3090", "H100-SXM-80GB").replace(
        "kv_cache: {dtype: fp8}", 'kv_cache: {dtype: fp8, skip_layers: ["²"]}')
    (tmp_path / "kvlint.toml").write_text("# defaults\n", encoding="utf-8")
    (tmp_path / "d.yaml").write_text(text, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    result = invoke(["check", "--output-format", "json", "d.yaml"])
    assert "Traceback" not in result.output and result.exit_code in (0, 1)
    assert "KV402" in {d["code"] for d in json.loads(result.stdout)["diagnostics"]}
