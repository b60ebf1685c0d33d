"""The public deployments in benchmarks/public_deployments/ are well-formed data.

Offline and about the data only: each case file parses, has a cited https URL, a quote, an outcome
from the allowed set, the facts a reader needs, and exactly one deployment (a kvlint/v1 manifest
body or a native file kept verbatim), and kvlint reads that deployment without an internal error
(exit 0 or 1, no traceback) and without a schema or input finding (KV0xx, KV1xx: those would mean
the case file is wrong, not kvlint). How often kvlint's verdict matches the outcome is measured by
benchmarks/public_deployments.py, never asserted here.
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from typing import Any, Dict

import pytest
import yaml

from conftest import REPO_ROOT, invoke

CASES_DIR = REPO_ROOT / "benchmarks" / "public_deployments"
FILES = sorted(CASES_DIR.glob("*.yaml"))
OUTCOMES = {"starts", "refused", "fallback", "capacity-fail"}
FACTS = ("engine", "release", "gpu", "model")
ID = re.compile(r"^[a-z0-9]([a-z0-9._-]*[a-z0-9])?$")


def _load(path: Path) -> Dict[str, Any]:
    with open(path, encoding="utf-8") as f:
        return yaml.safe_load(f)


def _benchmark():
    """benchmarks/public_deployments.py as a module, so the test writes each case exactly as the
    benchmark does."""
    spec = importlib.util.spec_from_file_location("public_deployments_benchmark",
                                                  REPO_ROOT / "benchmarks" / "public_deployments.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_enough_cases_of_both_kinds():
    docs = [_load(p) for p in FILES]
    assert len(docs) >= 20
    outcomes = [d["outcome"] for d in docs]
    assert outcomes.count("starts") >= 8
    assert len(outcomes) - outcomes.count("starts") >= 8
    ids = [d["id"] for d in docs]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_case_file_is_well_formed(path: Path):
    doc = _load(path)
    assert isinstance(doc, dict), path.name
    assert doc.get("id") == path.stem and ID.match(doc["id"]), f"{path.name}: id must be the file name"
    source = doc.get("source") or {}
    assert str(source.get("url", "")).startswith("https://"), f"{path.name}: source.url"
    assert isinstance(source.get("quote"), str) and source["quote"].strip(), f"{path.name}: source.quote"
    for url in source.get("context") or []:
        assert str(url).startswith("https://"), f"{path.name}: source.context {url}"
    assert doc.get("outcome") in OUTCOMES, f"{path.name}: outcome {doc.get('outcome')!r}"
    facts = doc.get("facts") or {}
    for key in FACTS:
        assert str(facts.get(key, "")).strip(), f"{path.name}: facts.{key}"
    for item in doc.get("inferred") or []:
        assert isinstance(item, list) and len(item) == 2 and all(str(x).strip() for x in item), \
            f"{path.name}: inferred entries are [field, why]"
    if "ambiguous" in doc:
        assert isinstance(doc["ambiguous"], str) and doc["ambiguous"].strip(), f"{path.name}: ambiguous"
    assert ("manifest" in doc) != ("native" in doc), f"{path.name}: exactly one of manifest and native"
    if "manifest" in doc:
        manifest = doc["manifest"]
        assert "apiVersion" not in manifest and "kind" not in manifest, "implied, as in capacity_logs"
        assert manifest["metadata"]["name"] == doc["id"]
    else:
        native = doc["native"]
        assert Path(native["file"]).name == native["file"], f"{path.name}: native.file is a plain name"
        assert isinstance(native["text"], str) and native["text"].strip()


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_kvlint_reads_the_case(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    doc = _load(path)
    written = _benchmark().write_case(doc, tmp_path / doc["id"])
    (tmp_path / "kvlint.toml").write_text("# empty: defaults\n", encoding="utf-8")
    monkeypatch.chdir(written.parent)
    result = invoke(["check", "--output-format", "json", written.name])  # a traceback raises here
    assert result.exit_code in (0, 1), result.output
    report = json.loads(result.stdout)
    assert report["summary"]["documents"] >= 1, f"{path.name}: kvlint found no deployment"
    wrong = [(d["code"], d["message"]) for d in report["diagnostics"] if d["code"].startswith(("KV0", "KV1"))]
    assert wrong == [], f"{path.name}: the case file is not a valid deployment"


def test_prediction_mapping():
    bench = _benchmark()

    def diag(code, severity):
        return {"code": code, "severity": severity}
    assert bench.predict([]) == "starts"
    assert bench.predict([diag("KV305", "error"), diag("KV603", "error")]) == "refused"
    assert bench.predict([diag("KV603", "error"), diag("KV335", "warning")]) == "capacity-fail"
    assert bench.predict([diag("KV335", "warning")]) == "fallback"
    assert bench.predict([diag("KV307", "warning")]) == "starts"
    assert bench.predict([diag("KV307", "warning")], auto_is_fallback=True) == "fallback"
    assert bench.predict([diag("KV301", "warning")]) == "starts"
    assert bench.predict([diag("KV209", "error")]) == "starts"
    assert bench.predict([diag("KV807", "warning")]) == "refused"
