"""Model names as users write them: a catalogued model's family (base/instruct twin, old name,
re-upload, quantized repository) resolves to its geometry with KV212 saying so; a quantized
member's weights format prices its weights; any other uncatalogued name stays KV203.

The dims below are the real config.json values, read from ai-dynamo/aiconfigurator
aic-core/src/aiconfigurator_core/model_configs/<org>--<name>_config.json at commit
095f58a51c4ca8e61b66ec108d86f223f8d559ce (copies of the Hub repositories' config.json).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from conftest import check_json
from kvlint.catalog.models import FAMILY_WEIGHTS, load_model_catalog
from kvlint.resolve.fields import weights_bytes

CATALOG = load_model_catalog()
MEMBERS = [(entry.id, member) for entry in CATALOG for member in entry.family]


def test_the_catalog_lists_families():
    assert len(MEMBERS) >= 35
    assert all(member.weights in (None, *FAMILY_WEIGHTS) for _, member in MEMBERS)


@pytest.mark.parametrize("entry_id,member", MEMBERS, ids=[m.id for _, m in MEMBERS])
def test_every_family_member_resolves_to_its_entry(entry_id, member):
    entry, matched = CATALOG.resolve(member.id)
    assert entry is not None and entry.id == entry_id
    assert matched is member
    assert CATALOG.resolve(member.id.lower())[1] is member  # Hub ids are case-insensitive
    assert member.source.url or (member.source.repo and member.source.path)
    # a member verified against its config.json cites the file, not a card
    if member.verified:
        assert (member.source.path or "").endswith("config.json") or (member.source.url or "").endswith("config.json")


def test_an_entry_id_is_not_a_family_member():
    entry, member = CATALOG.resolve("meta-llama/Llama-3.1-8B-Instruct")
    assert entry is not None and member is None
    entry, member = CATALOG.resolve("meta-llama/Meta-Llama-3.1-8B-Instruct")  # plain alias: no KV212
    assert entry is not None and member is None


# (member id, num_hidden_layers, num_attention_heads, num_key_value_heads, head size as vLLM sees
# it, hidden_size, vocab_size, max_position_embeddings) from each member's own config.json:
# https://github.com/ai-dynamo/aiconfigurator/blob/095f58a51c4ca8e61b66ec108d86f223f8d559ce/aic-core/src/aiconfigurator_core/model_configs/<org>--<name>_config.json
REAL_CONFIGS = [
    # meta-llama--Meta-Llama-3.1-8B_config.json (no head_dim key: 4096 / 32)
    ("meta-llama/Llama-3.1-8B", 32, 32, 8, 128, 4096, 128256, 131072),
    ("meta-llama/Meta-Llama-3.1-8B", 32, 32, 8, 128, 4096, 128256, 131072),
    # meta-llama--Meta-Llama-3.1-70B_config.json
    ("meta-llama/Llama-3.1-70B", 80, 64, 8, 128, 8192, 128256, 131072),
    # nvidia--Llama-3.1-70B-Instruct-FP8_config.json
    ("nvidia/Llama-3.1-70B-Instruct-FP8", 80, 64, 8, 128, 8192, 128256, 131072),
    # deepseek-ai--DeepSeek-R1_config.json: MLA, kv_lora_rank 512 + qk_rope_head_dim 64, one latent
    ("deepseek-ai/DeepSeek-R1", 61, 128, 1, 576, 7168, 129280, 163840),
    # Qwen--Qwen3-235B-A22B-FP8_config.json
    ("Qwen/Qwen3-235B-A22B-FP8", 94, 64, 4, 128, 4096, 151936, 40960),
    # Qwen--Qwen3-30B-A3B-FP8_config.json
    ("Qwen/Qwen3-30B-A3B-FP8", 48, 32, 4, 128, 2048, 151936, 40960),
]


@pytest.mark.parametrize("name,layers,heads,kv_heads,head,hidden,vocab,positions", REAL_CONFIGS,
                         ids=[c[0] for c in REAL_CONFIGS])
def test_member_geometry_equals_its_real_config(name, layers, heads, kv_heads, head, hidden, vocab, positions):
    entry, member = CATALOG.resolve(name)
    assert member is not None and member.verified
    geometry = entry.geometry()
    assert (geometry.num_layers, geometry.num_attention_heads, geometry.num_kv_heads, geometry.head_dim) == (
        layers, heads, kv_heads, head)
    assert (entry.hidden_size, entry.vocab_size, entry.max_position_embeddings) == (hidden, vocab, positions)


def _weights(name: str) -> float:
    entry, member = CATALOG.resolve(name)
    total, how = weights_bytes({}, entry.weight_bytes, entry.weights_dtype, entry.geometry(), entry.hidden_size,
                               checkpoint=(member.weights, name, None))
    assert total is not None, how
    return total


# Independent figures: the checkpoints' safetensors totals as the Hub's file list gives them.
@pytest.mark.parametrize("name,hub_gb", [
    # https://huggingface.co/Qwen/Qwen2.5-7B-Instruct-AWQ/tree/main: 5.58 GB (AWQ int4, group 128)
    ("Qwen/Qwen2.5-7B-Instruct-AWQ", 5.58),
    # https://huggingface.co/RedHatAI/Meta-Llama-3.1-8B-Instruct-FP8/tree/main: 9.08 GB
    ("RedHatAI/Meta-Llama-3.1-8B-Instruct-FP8", 9.08),
])
def test_quantized_member_weights_match_the_checkpoint(name, hub_gb):
    assert _weights(name) / 1e9 == pytest.approx(hub_gb, rel=0.02)


def test_an_unpriced_checkpoint_has_unknown_weights():
    entry, member = CATALOG.resolve("nvidia/DeepSeek-R1-0528-FP4")
    assert member.weights == "unknown"
    total, how = weights_bytes({}, entry.weight_bytes, entry.weights_dtype, entry.geometry(), entry.hidden_size,
                               checkpoint=(member.weights, member.id, None))
    assert total is None and "unknown" in how


MANIFEST = """\
apiVersion: kvlint/v1
kind: Deployment
metadata:
  name: family
engine:
  name: vllm
  version: "0.19.1"
hardware:
  gpu: H200-SXM-141GB
model:
  name: {name}
kv_cache:
  dtype: auto
parallelism:
  tensor: {tp}
"""

# Real ids from tests/data/native_corpus/*/ and benchmarks/public_deployments/*.yaml that were
# KV203 before the family lists and now resolve.
CORPUS_IDS = [
    ("deepseek-ai/DeepSeek-R1-0528", 8),  # inferencex-dsr1-fp8-*-sglang, trtllm-database-dsr1-*
    ("deepseek-ai/DeepSeek-R1", 8),
    ("nvidia/DeepSeek-R1-0528-FP4-V2", 8),  # inferencex-dsr1-fp4-b200-trtllm (case as written)
    ("nvidia/DeepSeek-R1-0528-NVFP4", 8),  # public_deployments vllm-v0130/v0140-rtxpro6000x8-dsr1-nvfp4
    ("nvidia/Llama-3.3-70B-Instruct-FP8", 1),  # recipes-vllm-llama3.3-blackwell-config
    ("nvidia/Llama-3.3-70B-Instruct-FP4", 1),
    ("RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic", 1),
    ("redhatai/Llama-3.3-70B-Instruct-quantized.w8a8", 1),
    ("RedHatAI/Meta-Llama-3.1-8B-Instruct-quantized.w4a16", 1),
    ("RedHatAI/Meta-Llama-3.1-8B-Instruct-quantized.w8a8", 1),
    ("RedHatAI/Qwen2.5-7B-Instruct-FP8-dynamic", 1),
    ("RedHatAI/Qwen2.5-7B-Instruct-quantized.w8a8", 1),
    ("Qwen/Qwen3-235B-A22B-FP8", 4),
    ("unsloth/Meta-Llama-3.1-8B-Instruct", 1),
]


@pytest.mark.parametrize("name,tp", CORPUS_IDS, ids=[n for n, _ in CORPUS_IDS])
def test_corpus_ids_resolve_with_kv211_not_kv203(tmp_path: Path, name, tp):
    manifest = tmp_path / "deploy.yaml"
    manifest.write_text(MANIFEST.format(name=name, tp=tp))
    report = check_json(str(manifest))
    codes = [d["code"] for d in report["diagnostics"]]
    assert "KV203" not in codes and "KV212" in codes, codes
    kv211 = next(d for d in report["diagnostics"] if d["code"] == "KV212")
    assert kv211["severity"] == "info" and name in kv211["message"]


def test_an_unlisted_name_stays_kv203(tmp_path: Path):
    # same organisation and a similar name, but not a listed family member: never guessed
    manifest = tmp_path / "deploy.yaml"
    manifest.write_text(MANIFEST.format(name="meta-llama/Llama-3.1-8B-Instruct-finetune-x", tp=1))
    codes = [d["code"] for d in check_json(str(manifest))["diagnostics"]]
    assert "KV203" in codes and "KV212" not in codes


def test_capacity_prices_a_quantized_member(tmp_path: Path):
    from conftest import invoke

    manifest = tmp_path / "deploy.yaml"
    manifest.write_text(textwrap.dedent(MANIFEST.format(name="nvidia/Llama-3.3-70B-Instruct-FP8", tp=1)))
    result = invoke(["capacity", str(manifest)])
    assert "nvidia/Llama-3.3-70B-Instruct-FP8 (family member of meta-llama/Llama-3.3-70B-Instruct): a fp8 checkpoint" in result.output
