"""The real start-up logs in benchmarks/capacity_logs/ are well-formed data.

Offline and about the data only: required keys, a cited https URL and a non-empty quote, the split
the README's rule assigns, config fields that match the manifest, logged figures present, and a
manifest that `kvlint check` accepts with no schema (KV1xx) finding. How accurate kvlint is on these
logs is measured by benchmarks/capacity_accuracy.py, never asserted here.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any, Dict, List

import pytest
import yaml

from conftest import REPO_ROOT, check_json

LOGS_DIR = REPO_ROOT / "benchmarks" / "capacity_logs"
FILES = sorted(LOGS_DIR.glob("*.yaml"))
REQUIRED = ("id", "split", "source", "config", "logged", "manifest")
CONFIG_REQUIRED = ("engine", "release", "gpu", "tensor_parallel", "model", "kv_cache_dtype",
                   "max_model_len")
ID = re.compile(r"^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$")


def _load(path: Path) -> Dict[str, Any]:
    with open(path, encoding="utf-8") as f:
        return yaml.safe_load(f)


SOURCE_ID = re.compile(r"^(github:[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+(#\d+|/[^\s#]+)?|web:[^\s/]+/\S*)$")
MAX_SCORED_PER_SOURCE = 5


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _split_of_source(source_id: str) -> str:
    """README rule: a source is holdout when the first 8 hex digits of sha256(source id), read as an
    integer, are divisible by 3; otherwise fit. One source, one split; adding a log moves no other."""
    return "holdout" if int(_sha(source_id)[:8], 16) % 3 == 0 else "fit"


def _by_source(docs: List[Dict[str, Any]]) -> Dict[str, List[Dict[str, Any]]]:
    groups: Dict[str, List[Dict[str, Any]]] = {}
    for d in docs:
        groups.setdefault(d["source"]["id"], []).append(d)
    return groups


def test_split_rule_on_known_digests():
    # the rule on two ids worked by hand from their digests (hashlib, not this module's helper)
    assert hashlib.sha256(b"github:vllm-project/vllm#13061").hexdigest()[:8] == "6514b63c"
    assert int("6514b63c", 16) % 3 == 0 and _split_of_source("github:vllm-project/vllm#13061") == "holdout"
    assert _split_of_source("github:llm-d-incubation/llm-d-planner") == "fit"


def test_enough_logs_and_both_splits():
    docs = [_load(p) for p in FILES]
    scored = [d for d in docs if d.get("set", "scored") == "scored"]
    assert len(scored) >= 48
    # the split is a hash of the source id, so its share is not chosen: ask for a holdout of several
    # independent sources and at least a tenth of the scored logs (README: 7 of 48, 4 sources)
    holdout = [d for d in scored if d["split"] == "holdout"]
    assert len(holdout) >= len(scored) // 10
    assert len({d["source"]["id"] for d in holdout}) >= 4
    assert {d["config"]["engine"] for d in scored} >= {"vllm", "sglang"}


def test_ids_unique_and_splits_follow_the_source_rule():
    docs = [_load(p) for p in FILES]
    ids = [d["id"] for d in docs]
    assert len(ids) == len(set(ids))
    for d in docs:
        assert SOURCE_ID.match(d["source"]["id"]), d["id"]
        assert d["split"] == _split_of_source(d["source"]["id"]), d["id"]


def test_at_most_five_scored_logs_per_source_chosen_by_the_rule():
    """A source with more than five logs keeps the five whose sha256(id) sorts first in the scored
    set; the rest are `set: extra` (kept, reported apart, never in the scored figures)."""
    for source, group in _by_source([_load(p) for p in FILES]).items():
        for d in group:
            assert d.get("set", "scored") in ("scored", "extra"), d["id"]
        chosen = {d["id"] for d in sorted(group, key=lambda d: _sha(d["id"]))[:MAX_SCORED_PER_SOURCE]}
        scored = {d["id"] for d in group if d.get("set", "scored") == "scored"}
        assert scored == chosen, source


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_data_file_is_well_formed(path: Path):
    doc = _load(path)
    for key in REQUIRED:
        assert key in doc, f"{path.name}: missing {key}"
    assert doc["id"] == path.stem and ID.match(doc["id"])
    assert doc["split"] in ("fit", "holdout")
    # a start-up that failed is scored apart (benchmarks/capacity_accuracy.py: start-up failures)
    assert doc.get("outcome", "started") in ("started", "startup_failed")

    source = doc["source"]
    assert isinstance(source.get("url"), str) and source["url"].startswith("https://")
    assert isinstance(source.get("quote"), str) and source["quote"].strip()

    config = doc["config"]
    for key in CONFIG_REQUIRED:
        assert config.get(key) not in (None, ""), f"{path.name}: config.{key} missing"
    for entry in config.get("inferred", []):
        assert isinstance(entry, list) and len(entry) == 2 and all(isinstance(x, str) and x for x in entry)

    logged = doc["logged"]
    assert logged.get("pool_gib") is not None or logged.get("kv_tokens") is not None
    for key, value in logged.items():
        assert isinstance(value, (int, float)) and not isinstance(value, bool), f"logged.{key}"

    manifest = doc["manifest"]
    # apiVersion/kind are implied (added by the accuracy script) so that directory walks skip the file
    assert "apiVersion" not in manifest and "kind" not in manifest
    assert manifest["metadata"]["name"] == doc["id"]
    assert manifest["engine"]["name"] == config["engine"]
    assert manifest["engine"]["version"] == config["release"]
    assert (manifest.get("parallelism") or {}).get("tensor", 1) == config["tensor_parallel"]
    assert manifest["kv_cache"]["dtype"] == config["kv_cache_dtype"]
    assert "kv_cache_memory" not in (manifest.get("memory") or {}), "the pool model is what is measured"


def test_manifests_pass_the_schema(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "kvlint.toml").write_text("# empty: defaults\n", encoding="utf-8")
    paths = []
    for path in FILES:
        doc = _load(path)
        manifest = {"apiVersion": "kvlint/v1", "kind": "Deployment", **doc["manifest"]}
        out = tmp_path / path.name
        out.write_text(yaml.safe_dump(manifest, sort_keys=False), encoding="utf-8")
        paths.append(out.name)
    report = check_json(*paths)
    assert report["summary"]["documents"] == len(FILES)
    schema = [(d["file"], d["code"], d["message"]) for d in report["diagnostics"]
              if d["code"].startswith(("KV0", "KV1"))]
    assert schema == []


# -- coverage of the scored set, as the README states it ------------------------------------------

README = LOGS_DIR / "README.md"
QUANTIZED_WEIGHTS = ("int4", "int8", "fp8", "mxfp4", "nvfp4")
MOE_MODEL_TYPES = ("gpt_oss", "deepseek_v2", "deepseek_v3", "llama4", "mixtral")


def _features(doc: Dict[str, Any], catalog) -> set:
    """What a scored log exercises, from its manifest and kvlint's model catalog (config.json facts),
    never from kvlint's output: MoE, MLA, sliding-window layers, quantized weights, an fp8 cache."""
    manifest = doc["manifest"]
    model = manifest["model"]
    entry, member = catalog.resolve(model["name"])
    geometry = model.get("geometry") or {}
    found = set()
    model_type = (entry.model_type or "") if entry else ""
    if "moe" in model_type or model_type in MOE_MODEL_TYPES or "MoE" in str(doc["config"].get("architecture", "")):
        found.add("moe")
    if (entry is not None and entry.mla is not None) or geometry.get("mla"):
        found.add("mla")
    if (entry is not None and "sliding" in [str(k) for k in entry.kinds()]) or geometry.get("sliding_window"):
        found.add("sliding window")
    weights = (model.get("weights") or {}).get("dtype")
    if (weights in QUANTIZED_WEIGHTS or (member is not None and member.relation == "quantized")
            or (entry is not None and member is None and not model.get("weights")
                and entry.weights_dtype in QUANTIZED_WEIGHTS + ("mixed",))):  # gpt-oss: MXFP4 experts
        found.add("quantized weights")
    if str(manifest["kv_cache"]["dtype"]).startswith("fp8"):
        found.add("fp8 kv cache")
    if (manifest.get("parallelism") or {}).get("pipeline", 1) > 1:
        found.add("pipeline parallel > 1")
    return found


def _stated_coverage() -> Dict[str, str]:
    """The README's `coverage:` block: one `key: value` per line between the two marker lines."""
    text = README.read_text(encoding="utf-8")
    block = text.split("<!-- coverage:begin -->", 1)[1].split("<!-- coverage:end -->", 1)[0]
    stated = {}
    for line in block.splitlines():
        line = line.strip().strip("`")
        if ":" in line and not line.startswith("```"):
            key, value = line.split(":", 1)
            stated[key.strip()] = value.strip()
    return stated


def test_readme_states_the_scored_sets_coverage():
    from kvlint.catalog.models import load_model_catalog

    catalog = load_model_catalog()
    scored = [d for d in (_load(p) for p in FILES) if d.get("set", "scored") == "scored"]
    features: Dict[str, int] = {}
    for d in scored:
        for name in _features(d, catalog):
            features[name] = features.get(name, 0) + 1
    manifests = [d["manifest"] for d in scored]
    computed = {
        "scored logs": str(len(scored)),
        "extra logs": str(sum(1 for p in FILES if _load(p).get("set") == "extra")),
        "sources": str(len({d["source"]["id"] for d in scored})),
        "holdout sources": str(len({d["source"]["id"] for d in scored if d["split"] == "holdout"})),
        "gpu models": str(len({m["hardware"]["gpu"] for m in manifests})),
        "engine releases": str(len({(m["engine"]["name"], m["engine"]["version"]) for m in manifests})),
        "sglang logs": str(sum(1 for m in manifests if m["engine"]["name"] == "sglang")),
        "tensor parallel": ", ".join(str(t) for t in sorted({(m.get("parallelism") or {}).get("tensor", 1)
                                                              for m in manifests})),
    }
    for name in ("pipeline parallel > 1", "fp8 kv cache", "quantized weights", "moe", "mla", "sliding window"):
        computed[name] = str(features.get(name, 0))
    assert _stated_coverage() == computed
