"""kvlint.hub: a model's config.json from the Hugging Face Hub, through a local test hub.

The test hub (tests/hub_server.py) serves real config.json files (tests/data/hub/, each with its
source in sources.json) on loopback; nothing here touches the network. The expected geometry is
read from those files by `independent` below, never through kvlint's own reader.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest

import hub_server
from conftest import REPO_ROOT, invoke
from kvlint import hub
from kvlint.catalog.hf_config import geometry_from_config

IDS = hub_server.load_ids()

MANIFEST = """\
apiVersion: kvlint/v1
kind: Deployment
metadata:
  name: hub-test
engine:
  name: vllm
  version: "0.19.1"
hardware:
  gpu: H100-SXM-80GB
model:
  name: {name}
kv_cache:
  dtype: auto
"""


@pytest.fixture
def test_hub(monkeypatch, tmp_path):
    """The test hub, with kvlint pointed at it (online, its own empty cache, no token)."""
    server = hub_server.start()
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.delenv("HUGGING_FACE_HUB_TOKEN", raising=False)
    monkeypatch.delenv("KVLINT_NO_CACHE", raising=False)
    monkeypatch.setenv("HF_ENDPOINT", server.endpoint)
    monkeypatch.setenv("KVLINT_CACHE_DIR", str(tmp_path / "kvlint-cache"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "no-hf-cache"))
    monkeypatch.setattr(hub, "TIMEOUT_S", 0.5)
    hub.forget()
    yield server
    hub.forget()
    server.shutdown()
    server.server_close()


def independent(config: Dict[str, Any]) -> Tuple[int, int, int]:
    """(layers, KV heads, head size) of a config.json, read here without kvlint: the text model's
    num_hidden_layers; an MLA model (kv_lora_rank) keeps one latent of kv_lora_rank +
    qk_rope_head_dim per token and layer; else num_key_value_heads (absent: one per query head)
    and head_dim (absent or null: hidden_size / num_attention_heads)."""
    text = config.get("text_config") or config
    layers = text["num_hidden_layers"]
    if text.get("kv_lora_rank"):
        return layers, 1, text["kv_lora_rank"] + text["qk_rope_head_dim"]
    heads = text["num_attention_heads"]
    return layers, text.get("num_key_value_heads") or heads, text.get("head_dim") or text["hidden_size"] // heads


def served(entry: Dict[str, Any]) -> Dict[str, Any]:
    return json.loads(hub_server.config_bytes(entry["config"]))


def write_manifests(directory: Path, names: List[str]) -> Dict[str, str]:
    """One manifest per model id; {file: id}."""
    directory.mkdir(parents=True, exist_ok=True)
    files = {}
    for index, name in enumerate(names):
        path = directory / f"m{index:03d}.yaml"
        path.write_text(MANIFEST.format(name=json.dumps(name)), encoding="utf-8")
        files[str(path)] = name
    return files


def facts_of(files: Dict[str, str]) -> Dict[str, Dict[str, Any]]:
    result = invoke(["facts", *files])
    assert result.exit_code == 0, result.output
    return {files[document["file"]]: document for document in json.loads(result.stdout)}


# --- the data ----------------------------------------------------------------------------------


def test_the_data_has_200_ids_each_with_a_real_config_and_its_provenance():
    sources = json.loads((hub_server.HUB_DATA / "sources.json").read_text(encoding="utf-8"))["files"]
    ids = IDS["ids"]
    assert len(ids) >= 200 and len({entry["id"] for entry in ids}) == len(ids)
    for entry in ids + IDS["unsized"]:
        assert entry["config"] in sources, entry["id"]
        assert hub.valid_repo_id(entry["id"]), entry["id"]
    for entry in ids:
        assert entry["seen_in"] and entry["relation"] and entry["evidence"], entry["id"]
        # an id said to get its own file gets the file vendored under its own name
        assert entry["own"] == (sources[entry["config"]]["repo_id"] == entry["id"]), entry["id"]
    for name, record in sources.items():
        assert set(record["source"]) == {"repo", "path", "commit"} and len(record["source"]["commit"]) == 40, name
        assert (hub_server.HUB_DATA / "configs" / name).is_file(), name


# --- 200 ids as users write them ---------------------------------------------------------------


def test_every_id_is_fetched_and_read_as_its_config_says(test_hub):
    """kvlint.hub fetches each id's config.json from the test hub, byte for byte, and kvlint's
    reader gets the layers, KV heads and head size the file states."""
    for entry in IDS["ids"]:
        found = hub.hub_config(entry["id"])
        assert found is not None and found.error is None, (entry["id"], found)
        assert found.origin == "fetched" and found.config == served(entry), entry["id"]
        geometry = geometry_from_config(found.config, entry["id"])
        assert (geometry.num_layers, geometry.num_kv_heads, geometry.head_dim) == independent(found.config), entry["id"]
    assert len(test_hub.requests) == len(IDS["ids"])


def test_every_id_resolves_end_to_end(test_hub, tmp_path):
    """`kvlint facts` on a manifest naming each id: the model is known, from the catalog when it
    catalogues the name (or its family), else from the Hub; either way its geometry is the real
    config.json's (for a catalogued name this checks the catalog against the real file)."""
    files = write_manifests(tmp_path / "ids", [entry["id"] for entry in IDS["ids"]])
    facts = facts_of(files)
    sources = {"hub": 0, "catalog": 0}
    for entry in IDS["ids"]:
        model = facts[entry["id"]]["model"]
        assert model["known"] is True and model["source"] in sources, (entry["id"], model)
        sources[model["source"]] += 1
        assert (model["num_layers"], model["num_kv_heads"], model["head_dim"]) == independent(served(entry)), entry["id"]
    fetched = {path.split("/resolve/")[0].lstrip("/") for path in test_hub.paths()}
    assert sources["hub"] == len(fetched) and sources["hub"] >= 100, sources
    assert not fetched & {entry["id"] for entry in IDS["ids"]
                          if facts[entry["id"]]["model"]["source"] == "catalog"}  # the catalog asks nothing


# A sample of ids the catalog does not know, checked field by field against their own config.json.
SAMPLE = [
    "Qwen/Qwen3-0.6B", "Qwen/Qwen3-1.7B", "Qwen/Qwen3-32B-FP8", "Qwen/Qwen2.5-32B",
    "zai-org/GLM-5.1-FP8", "Qwen/Qwen2.5-7B", "Qwen/Qwen2.5-1.5B", "Qwen/Qwen3-VL-8B-Instruct",
    "Qwen/Qwen3-Coder-480B-A35B-Instruct", "meta-llama/Llama-2-70b-hf", "meta-llama/Llama-2-13b-hf",
    "meta-llama/Llama-2-7b-hf", "mistralai/Mixtral-8x22B-v0.1", "deepseek-ai/DeepSeek-V3.1",
    "deepseek-ai/DeepSeek-R1-Distill-Qwen-32B", "moonshotai/Kimi-K2-Instruct", "zai-org/GLM-4.7-FP8",
    "zai-org/GLM-5", "MiniMaxAI/MiniMax-M2.5", "XiaomiMiMo/MiMo-7B-Base",
]


def test_a_sample_of_20_matches_its_config_field_by_field(test_hub, tmp_path):
    by_id = {entry["id"]: entry for entry in IDS["ids"]}
    assert len(SAMPLE) == 20 and all(by_id[name]["own"] for name in SAMPLE)
    facts = facts_of(write_manifests(tmp_path / "sample", SAMPLE))
    for name in SAMPLE:
        config = served(by_id[name])
        text = config.get("text_config") or config
        model = facts[name]["model"]
        assert model["source"] == "hub", name
        layers, kv_heads, head = independent(config)
        assert model["num_layers"] == layers and model["num_kv_heads"] == kv_heads and model["head_dim"] == head, name
        assert model["is_mla"] == bool(text.get("kv_lora_rank")), name
        # no sample model slides: Qwen's use_sliding_window is false, the others have no window
        assert text.get("sliding_window") is None or text.get("use_sliding_window") is False, name
        assert model["sliding_layers"] == 0 and model["full_layers"] == layers, name
        dtype = text.get("torch_dtype") or config.get("torch_dtype") or text.get("dtype") or config.get("dtype")
        # float32 runs as bf16 under vLLM's dtype auto; a config that states none is assumed bf16
        assert model["dtype"] == {"float16": "float16"}.get(dtype, "bfloat16"), (name, dtype)
        assert model["max_position_embeddings"] == text["max_position_embeddings"], name
        quant = config.get("quantization_config")
        if quant and quant.get("quant_method") == "fp8":
            assert model["checkpoint_weights"] == "fp8", name
            assert "config.json on the Hub" in model["checkpoint_weights_source"], name
        elif not quant:
            assert "checkpoint_weights" not in model, name


# --- what can go wrong: a KV203 warning that says why, never exit 2 -----------------------------


def _check(workspace: Path, name: str, *options: str) -> Tuple[int, List[Dict[str, Any]]]:
    (workspace / "d.yaml").write_text(MANIFEST.format(name=json.dumps(name)), encoding="utf-8")
    result = invoke(["check", "--output-format", "json", *options, "d.yaml"])
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, json.loads(result.stdout)["diagnostics"]


def _kv203(diagnostics: List[Dict[str, Any]]) -> str:
    found = [d for d in diagnostics if d["code"] == "KV203"]
    assert len(found) == 1 and found[0]["severity"] == "warning", diagnostics
    return found[0]["message"]


def test_a_gated_model_needs_a_token_and_the_token_goes_to_the_hub_only(test_hub, workspace, monkeypatch):
    test_hub.gated = True
    message = _kv203(_check(workspace, hub_server.RENAMED)[1])
    assert "HTTP 401" in message and "set HF_TOKEN" in message, message
    hub.forget()
    monkeypatch.setenv("HF_TOKEN", hub_server.TOKEN)
    _, diagnostics = _check(workspace, hub_server.RENAMED)  # 307 on the same host: the token follows
    assert "KV203" not in {d["code"] for d in diagnostics}
    sent = test_hub.requests[-2:]
    assert [path.split("/resolve/")[0] for path, _ in sent] == ["/" + hub_server.RENAMED, "/" + hub_server.GATED]
    assert all(headers.get("authorization") == f"Bearer {hub_server.TOKEN}" for _, headers in sent)
    hub.forget()
    message = _kv203(_check(workspace, hub_server.ELSEWHERE)[1])  # 302 to another host: no token there
    path, headers = test_hub.requests[-1]
    assert path.startswith("/" + hub_server.GATED) and "authorization" not in headers
    assert "HTTP 401" in message
    hub.forget()
    for entry in (Path(os.environ["KVLINT_CACHE_DIR"]) / "hub").iterdir():
        entry.unlink()  # what the right token fetched is cached: start afresh
    monkeypatch.setenv("HF_TOKEN", "hf_someone_else")
    message = _kv203(_check(workspace, hub_server.RENAMED)[1])
    assert "the token in HF_TOKEN has no access" in message, message


def test_huggingface_hub_token_is_read_when_hf_token_is_not_set(test_hub, workspace, monkeypatch):
    test_hub.gated = True
    monkeypatch.setenv("HUGGING_FACE_HUB_TOKEN", hub_server.TOKEN)
    assert "KV203" not in {d["code"] for d in _check(workspace, hub_server.RENAMED)[1]}
    assert test_hub.requests[-1][1].get("authorization") == f"Bearer {hub_server.TOKEN}"


@pytest.mark.parametrize("name, reason", [
    ("acme/no-such-model", "HTTP 404: no such repository, revision or config.json on the Hub"),
    (hub_server.MALFORMED, "not valid JSON"),
    (hub_server.NOT_A_MODEL, "not a transformers config.json (it has neither model_type nor architectures)"),
    (hub_server.DOWNGRADE, "redirected to http://example.com/config.json, which is not https; not followed"),
])
def test_a_failed_fetch_is_kv203_with_the_reason(test_hub, workspace, name, reason):
    message = _kv203(_check(workspace, name)[1])
    assert f"{test_hub.endpoint}/{name}/resolve/main/config.json" in message and reason in message, message
    assert "capacity is not computed" in message


def test_a_slow_hub_is_given_up_quickly_and_not_asked_again(test_hub, workspace):
    test_hub.slow_seconds = 3.0
    started = time.monotonic()
    message = _kv203(_check(workspace, hub_server.SLOW)[1])
    assert time.monotonic() - started < 2.5 and "no answer within 0.5 s" in message, message
    asked = len(test_hub.requests)
    (workspace / "e.yaml").write_text(MANIFEST.format(name="acme/another-model"), encoding="utf-8")
    result = invoke(["check", "--output-format", "json", "d.yaml", "e.yaml"])
    messages = [d["message"] for d in json.loads(result.stdout)["diagnostics"] if d["code"] == "KV203"]
    assert len(messages) == 2 and len(test_hub.requests) == asked  # the endpoint is down for the run
    assert all("no answer within 0.5 s" in m for m in messages), messages


def test_an_oversized_config_is_refused(test_hub, workspace, monkeypatch):
    monkeypatch.setattr(hub, "MAX_CONFIG_BYTES", 4096)
    test_hub.oversize_padding = 8192
    message = _kv203(_check(workspace, hub_server.OVERSIZED)[1])
    assert "more than the 4,096 kvlint reads" in message, message


def test_a_model_kvlint_cannot_size_is_kv203_not_a_wrong_capacity(test_hub, tmp_path):
    files = write_manifests(tmp_path / "unsized", [entry["id"] for entry in IDS["unsized"]])
    facts = facts_of(files)
    for entry in IDS["unsized"]:
        model = facts[entry["id"]]["model"]
        assert model["known"] is False and entry["reason"] in model["config_error"], (entry, model)


def test_no_fetch_for_a_name_that_is_not_a_hub_id(test_hub, workspace):
    for name in ("qwen2.5:7b", "/models/llama", "./models/x", "acme/x/y", "acme/--bad", "acme/.hidden", "a" * 50 + "/" + "b" * 50):
        _check(workspace, name)
    assert test_hub.requests == []


# --- cache, offline, revision ------------------------------------------------------------------


def test_the_disk_cache_answers_then_revalidates_with_the_etag(test_hub, workspace, monkeypatch):
    name = "Qwen/Qwen3-1.7B"
    _check(workspace, name)
    assert len(test_hub.requests) == 1
    hub.forget()
    _check(workspace, name)  # a new run within the TTL: the disk cache alone
    assert len(test_hub.requests) == 1
    hub.forget()
    monkeypatch.setattr(hub, "TTL_S", 0)
    _, diagnostics = _check(workspace, name)  # expired: a conditional request, answered 304
    assert "KV203" not in {d["code"] for d in diagnostics}
    assert len(test_hub.requests) == 2 and test_hub.requests[-1][1].get("if-none-match")
    entries = list((Path(os.environ["KVLINT_CACHE_DIR"]) / "hub").iterdir())
    assert len(entries) == 1 and oct(entries[0].stat().st_mode & 0o777) == "0o600"
    hub.forget()
    entries[0].write_text("{damaged", encoding="utf-8")  # a damaged entry is a miss, refetched
    _check(workspace, name)
    assert len(test_hub.requests) == 3


def test_offline_asks_nothing_and_reads_only_the_cache(test_hub, workspace, monkeypatch):
    offline_message = _kv203(_check(workspace, "Qwen/Qwen3-8B-AWQ", "--offline")[1])
    assert test_hub.requests == [] and "resolve/main" not in offline_message  # the plain KV203
    hub.forget()
    _check(workspace, "Qwen/Qwen3-8B-AWQ")  # online: fetched and cached
    assert len(test_hub.requests) == 1
    hub.forget()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(hub, "TTL_S", 0)  # expired, but offline: the cached copy as it is
    _, diagnostics = _check(workspace, "Qwen/Qwen3-8B-AWQ")
    assert "KV203" not in {d["code"] for d in diagnostics} and len(test_hub.requests) == 1
    monkeypatch.delenv("HF_HUB_OFFLINE")
    hub.forget()
    (workspace / "kvlint.toml").write_text("offline = true\n", encoding="utf-8")
    _check(workspace, "Qwen/Qwen3-32B-AWQ")
    assert len(test_hub.requests) == 1
    result = invoke(["check", "--show-settings"])
    assert "offline = true" in result.stdout


def test_the_deployments_revision_is_the_one_fetched(test_hub, workspace):
    test_hub.revisions[("acme/pinned-model", hub_server.PINNED_COMMIT)] = "Qwen--Qwen3-8B.json"
    (workspace / "serve.sh").write_text(
        "#!/bin/sh\n# kvlint: gpu=H100-SXM-80GB engine-version=0.19.1\n"
        f"vllm serve acme/pinned-model --revision {hub_server.PINNED_COMMIT} --kv-cache-dtype fp8\n",
        encoding="utf-8")
    facts = json.loads(invoke(["facts", "serve.sh"]).stdout)[0]["model"]
    assert facts["source"] == "hub" and facts["num_layers"] == 36
    assert test_hub.paths() == [f"/acme/pinned-model/resolve/{hub_server.PINNED_COMMIT}/config.json"]
    hub.forget()
    report = json.loads(invoke(["capacity", "--output-format", "json", "serve.sh"]).stdout)[0]
    # a commit never changes: cached for good, whatever the TTL, and the figures say where they come from
    assert len(test_hub.requests) == 1
    assert (f"model geometry from {test_hub.endpoint}/acme/pinned-model/resolve/{hub_server.PINNED_COMMIT}/config.json "
            f"(commit {hub_server.PINNED_COMMIT[:12]}), as kvlint cached it") in report["assumptions"]
    (workspace / "d.yaml").write_text(MANIFEST.format(name="acme/pinned-model").replace(
        "  name: acme/pinned-model\n", "  name: acme/pinned-model\n  revision: refs/pr/1\n"), encoding="utf-8")
    invoke(["facts", "d.yaml"])
    assert test_hub.paths()[-1] == "/acme/pinned-model/resolve/refs%2Fpr%2F1/config.json"


def test_a_quantized_repositorys_own_config_prices_its_weights(test_hub, tmp_path):
    facts = facts_of(write_manifests(tmp_path / "q", ["Qwen/Qwen3-32B-FP8", "moonshotai/Kimi-K2.5"]))
    assert facts["Qwen/Qwen3-32B-FP8"]["model"]["checkpoint_weights"] == "fp8"
    kimi = served({"config": "moonshotai--Kimi-K2.5.json"})["text_config"]["quantization_config"]
    assert kimi["config_groups"]["group_0"]["weights"]["num_bits"] == 4
    assert facts["moonshotai/Kimi-K2.5"]["model"]["checkpoint_weights"] == "int4"


def test_the_checkpoints_kv_scales_come_from_its_quantization_config(test_hub, tmp_path):
    """model.kv_scales, unstated, is what the checkpoint's own config.json says, and vLLM 0.19.1
    stores `auto` as fp8 for it: a compressed-tensors kv_cache_scheme of strategy tensor
    (`Attention.__init__`, vllm/model_executor/layers/attention/attention.py v0.19.1) and a ModelOpt
    export's static 8-bit float kv_cache_scheme (`resolve_kv_cache_dtype_string`,
    vllm/utils/torch_utils.py) are per-tensor scales; a kv_cache_scheme of null states none.
    Expectations read from the served files here, not through kvlint."""
    names = ["poolside/Laguna-XS.2-FP8", "nvidia/Kimi-K2.5-NVFP4", "moonshotai/Kimi-K2.5"]
    quant = {name: served(next(e for e in IDS["ids"] if e["id"] == name)) for name in names}
    quant = {name: c.get("quantization_config") or c["text_config"]["quantization_config"] for name, c in quant.items()}
    assert quant["poolside/Laguna-XS.2-FP8"]["kv_cache_scheme"]["strategy"] == "tensor"
    assert quant["nvidia/Kimi-K2.5-NVFP4"]["quant_method"] == "modelopt"
    assert quant["nvidia/Kimi-K2.5-NVFP4"]["kv_cache_scheme"] == {"dynamic": False, "num_bits": 8, "type": "float"}
    assert quant["moonshotai/Kimi-K2.5"]["kv_cache_scheme"] is None

    facts = facts_of(write_manifests(tmp_path / "kv", names))
    for name, scheme in (("poolside/Laguna-XS.2-FP8", "compressed-tensors"), ("nvidia/Kimi-K2.5-NVFP4", "modelopt")):
        model, cache = facts[name]["model"], facts[name]["kv_cache"]
        assert (model["kv_scales"], model["checkpoint_kv_scheme"]) == ("per-tensor", scheme), name
        assert cache["auto_quantized"] is True and cache["format"].startswith("fp8"), name
    laguna = facts["poolside/Laguna-XS.2-FP8"]
    assert "kv_cache_scheme, strategy tensor" in laguna["model"]["kv_scales_source"]
    assert laguna["scales"]["source"] == "checkpoint" and laguna["scales"]["granularity"] == "per-tensor"
    kimi = facts["moonshotai/Kimi-K2.5"]["model"]
    assert kimi["kv_scales"] == "none" and kimi["kv_scales_source"] is None and "checkpoint_kv_scales" not in kimi

    # vLLM 0.14.x: ModelOpt's scheme already resolves auto to fp8 (resolve_kv_cache_dtype_string,
    # vllm/engine/arg_utils.py v0.14.0 L1397-1407); compressed-tensors' only from 0.15.0
    # (vllm/attention/layer.py v0.14.0 has no kv_cache_scheme branch; v0.15.0 L198-203)
    older = tmp_path / "older"
    files = write_manifests(older, names[:2])
    for path in files:
        Path(path).write_text(Path(path).read_text().replace('version: "0.19.1"', 'version: "0.14.1"'), encoding="utf-8")
    facts = facts_of(files)
    assert facts["poolside/Laguna-XS.2-FP8"]["kv_cache"]["auto_quantized"] is False
    assert facts["nvidia/Kimi-K2.5-NVFP4"]["kv_cache"]["auto_quantized"] is True

    # a written bfloat16 is replaced by fp8 for compressed-tensors' scheme on 0.15-0.21 (KV345), kept
    # from 0.22 (vllm/model_executor/layers/attention/attention.py v0.21.0 L232-238, v0.22.0 L238)
    for version, stored in (("0.19.1", "fp8_e4m3"), ("0.22.0", "bf16")):
        path = tmp_path / f"bf16-{version}.yaml"
        path.write_text(MANIFEST.format(name=json.dumps("poolside/Laguna-XS.2-FP8")).replace(
            'version: "0.19.1"', f'version: "{version}"').replace("dtype: auto", "dtype: bfloat16"), encoding="utf-8")
        cache = facts_of({str(path): "laguna"})["laguna"]["kv_cache"]
        assert (cache["format"], cache["scheme_override"]) == (stored, "bfloat16" if stored != "bf16" else None), version

    # a checkpoint KV scheme gives vLLM's attention a KV-cache method: fp8_e5m2 is refused (KV346,
    # Attention.__init__, vllm/model_executor/layers/attention/attention.py v0.33.0 L196-220)
    path = tmp_path / "e5m2.yaml"
    path.write_text(MANIFEST.format(name=json.dumps("poolside/Laguna-XS.2-FP8")).replace(
        'version: "0.19.1"', 'version: "0.33.0"').replace("dtype: auto", "dtype: fp8_e5m2"), encoding="utf-8")
    assert facts_of({str(path): "laguna"})["laguna"]["kv_cache"]["fp8_checkpoint"] == (
        "a compressed-tensors checkpoint with a KV scheme")

    # a stated model.kv_scales wins over the checkpoint's config
    stated = tmp_path / "stated.yaml"
    stated.write_text(MANIFEST.format(name=json.dumps("poolside/Laguna-XS.2-FP8")).replace(
        "model:\n", "model:\n  kv_scales: none\n", 1), encoding="utf-8")
    model = facts_of({str(stated): "stated"})["stated"]["model"]
    assert (model["kv_scales"], model["kv_scales_source"]) == ("none", "manifest")


# --- guards ------------------------------------------------------------------------------------


def test_plain_http_is_refused_off_loopback(monkeypatch, tmp_path):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_ENDPOINT", "http://hub.example.com")
    monkeypatch.setenv("KVLINT_CACHE_DIR", str(tmp_path))
    hub.forget()
    found = hub.hub_config("Qwen/Qwen3-8B")
    assert found is not None and found.config is None and "is not https" in found.error
    hub.forget()


def test_a_check_that_fetches_nothing_imports_no_network_module(tmp_path):
    (tmp_path / "kvlint.toml").write_text("# defaults\n", encoding="utf-8")
    (tmp_path / "d.yaml").write_text(MANIFEST.format(name="meta-llama/Llama-3.1-8B-Instruct"), encoding="utf-8")
    code = ("import sys, runpy; sys.argv = ['kvlint', 'check', 'd.yaml'];\n"
            "import kvlint.cli.lint as lint\n"
            "try:\n    lint.run_plain_check(['d.yaml'])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in ('kvlint.hub', 'urllib.request', 'ssl', 'http.client') if m in sys.modules))")
    completed = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                               env={**os.environ, "PYTHONPATH": str(REPO_ROOT)}, timeout=120)
    assert completed.stdout.strip().splitlines()[-1] == "[]", completed.stdout + completed.stderr


@pytest.mark.parametrize("reply, reason", [
    (b"garbage\r\n\r\n", "cannot connect (BadStatusLine: garbage)"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n{\"model_type\": \"llama\"}",
     "the answer broke off after 23 of 1,000 bytes"),
])
def test_a_broken_answer_is_a_reason_not_a_traceback(monkeypatch, tmp_path, reply, reason):
    import socket
    import threading

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)

    def answer() -> None:
        connection, _ = listener.accept()
        connection.recv(65536)
        connection.sendall(reply)
        connection.close()

    threading.Thread(target=answer, daemon=True).start()
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{listener.getsockname()[1]}")
    monkeypatch.setenv("KVLINT_CACHE_DIR", str(tmp_path))
    hub.forget()
    try:
        found = hub.hub_config("acme/broken")
    finally:
        hub.forget()
        listener.close()
    assert found is not None and found.config is None and reason in found.error, found
