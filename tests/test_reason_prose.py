"""A refusal's reason states the fact; the release and backend advice comes only from kvlint's
checked remedy search (kvlint/resolve/remedy.py), so a message never promises what the search
refutes. Case: vLLM 0.11.1-0.14.1 reject an explicit bfloat16 KV cache on every backend
(AttentionBackend.supports_kv_cache_dtype, vllm/v1/attention/backend.py v0.14.1 L135); the
catalog's reason used to add "use auto (the model dtype) or vLLM >= 0.15" whatever the search
found for the GPU and model."""

from __future__ import annotations

import json
import re
from typing import Any, Dict, List, Tuple

import pytest
import yaml

from kvlint.analysis import CheckContext, analyze_deployment, findings_from_facts
from kvlint.config import load_config
from kvlint.load import load_bytes
from kvlint.resources import catalog_dir
from kvlint.rulebook import load_rulebook

RULEBOOK = load_rulebook(())
CONTEXT = CheckContext(config=load_config(None), rulebook=RULEBOOK, enabled={r.code for r in RULEBOOK})
ADVICE = re.compile(r";\s*(use|pin|upgrade)\b|\bor vLLM\b|\bor SGLang\b", re.IGNORECASE)


def test_constraint_reasons_carry_no_advice():
    """Every backend constraint's message is a reason only: no "; use ...", "or vLLM >= X"."""
    bad: List[str] = []
    for path in sorted((catalog_dir() / "engines").glob("*.yaml")):
        for backend in yaml.safe_load(path.read_text()).get("backends") or ():
            for constraint in backend.get("constraints") or ():
                if ADVICE.search(constraint.get("message", "")):
                    bad.append(f"{path.name} {backend['name']} {constraint['id']}: {constraint['message']}")
    assert not bad, "\n".join(bad)


def _lint(data: Dict[str, Any]) -> Tuple[List[Any], Dict[str, Any]]:
    loaded = load_bytes(json.dumps(data).encode(), "m.yaml")
    document = loaded.documents[0]
    analysis = analyze_deployment(document.data, "m.yaml", None)
    return findings_from_facts(analysis.facts, document, CONTEXT), analysis.facts


# a release as advice ("vLLM >= X"); the search's own words are "from vLLM X.Y.Z"
RELEASE = re.compile(r"vLLM >= ?(\d+\.\d+(?:\.\d+)?)")


@pytest.mark.parametrize("gpu", ["B200", "H100-SXM-80GB", "A100-80GB", "L4-24GB", "RTX-5090-32GB"])
@pytest.mark.parametrize("model", ["meta-llama/Llama-3.1-8B-Instruct", "openai/gpt-oss-20b", "deepseek-ai/DeepSeek-V3"])
def test_bf16_messages_name_only_searched_releases(gpu, model):
    """A bf16 refusal advises no release ("vLLM >= X") but the ones the remedy search suggested
    (facts.remedies); before the fix every one said "or vLLM >= 0.15"."""
    for backend in ("auto", "TRITON_ATTN", "FLASHINFER", "FLASH_ATTN", "TRITON_MLA"):
        data = {"apiVersion": "kvlint/v1", "kind": "Deployment", "metadata": {"name": "g"},
                "engine": {"name": "vllm", "version": "0.14.1", "attention_backend": backend},
                "hardware": {"gpu": gpu}, "model": {"name": model}, "kv_cache": {"dtype": "bfloat16"}}
        findings, facts = _lint(data)
        searched = {str(r.get("release")) for r in facts.get("remedies", ()) if r.get("release")}
        for finding in findings:
            if "explicit bfloat16" not in finding.message:
                continue
            named = set(RELEASE.findall(finding.message))
            assert named <= searched, (backend, finding.code, finding.message, searched)
