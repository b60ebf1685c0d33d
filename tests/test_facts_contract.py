"""The facts contract (schemas/facts.json) is complete and exact.

- every path a rule's condition, message, pointer or for_each names is in the contract;
- every facts document the rule examples and bundled examples produce validates against it
  (so no module writes an undocumented path, or a value of another type);
- every path in the contract is written by some document (no dead entries);
- docs/facts.md is the page generated from it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Dict, Iterator, List, Set, Tuple

import pytest
import yaml
from jsonschema import Draft202012Validator

from conftest import REPO_ROOT, invoke
from kvlint.ablation.check import ablation_facts, analyze_variants, expand
from kvlint.analysis import manifest_kind
from kvlint.config import load_config
from kvlint.load import load_bytes
from kvlint.pipeline.documents import analyses_of
from kvlint.report.facts_docs import contract_paths, load_contract, render
from kvlint.rulebook import load_rulebook, message_templates

CONTRACT = load_contract()
PATHS = {kind: dict(contract_paths(CONTRACT, kind)) for kind in ("deployment", "ablation")}
PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+)*)\}")
RULES = [r for r in load_rulebook(()) if r.stage == "facts"]


def _condition_paths(schema: Any, path: str) -> Iterator[str]:
    """Paths a condition schema tests, walking properties and every combinator."""
    if not isinstance(schema, dict):
        return
    for name, sub in (schema.get("properties") or {}).items():
        yield f"{path}/{name}"
        yield from _condition_paths(sub, f"{path}/{name}")
    for name in schema.get("required") or ():
        yield f"{path}/{name}"
    for key in ("anyOf", "allOf", "oneOf"):
        for sub in schema.get(key) or ():
            yield from _condition_paths(sub, path)
    for key in ("not", "if", "then", "else"):
        yield from _condition_paths(schema.get(key), path)
    if isinstance(schema.get("items"), dict):
        yield from _condition_paths(schema["items"], f"{path}/*")
    if isinstance(schema.get("contains"), dict):
        yield from _condition_paths(schema["contains"], f"{path}/*")


def _rule_paths(rule) -> Iterator[Tuple[str, str]]:
    """(where, facts path) for everything the rule reads; `item` maps to for_each's elements."""
    item = f"{rule.for_each}/*" if rule.for_each else None

    def normal(path: str) -> str:
        if path == "/item" or path.startswith("/item/"):
            assert item is not None, f"{rule.code} reads item without for_each"
            return item + path[len("/item"):]
        return path

    if rule.for_each:
        yield "for_each", rule.for_each
    for path in _condition_paths(rule.condition, ""):
        yield "condition", normal(path)
    texts = [("message", t) for t in message_templates(rule.message)] + [("pointer", rule.pointer)]
    if isinstance(rule.message, dict):
        yield "message select", normal("/" + rule.message["select"].replace(".", "/"))
    for where, text in texts:
        for dotted in PLACEHOLDER.findall(text or ""):
            yield where, normal("/" + dotted.replace(".", "/"))


@pytest.mark.parametrize("rule", RULES, ids=[r.code for r in RULES])
def test_rule_reads_only_contract_paths(rule):
    kind = "ablation" if "Ablation" in (rule.kinds or ()) else "deployment"
    missing = [f"{where}: {path}" for where, path in _rule_paths(rule) if path not in PATHS[kind]]
    assert not missing, f"{rule.code} reads paths schemas/facts.json lacks: {missing}"


def _example_documents(tmp: Path) -> Iterator[Path]:
    for number, path in enumerate(sorted((REPO_ROOT / "rules").glob("*.yaml"))):
        rule = yaml.safe_load(path.read_text(encoding="utf-8"))
        for index, example in enumerate(rule.get("examples") or ()):
            root = tmp / f"{number}-{index}"
            for relative, content in (example.get("files") or {}).items():
                (root / relative).parent.mkdir(parents=True, exist_ok=True)
                (root / relative).write_text(content, encoding="utf-8")
            target = root / example.get("filename", "deployment.yaml")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(example["manifest"], encoding="utf-8")
            yield target
    yield from sorted((REPO_ROOT / "examples").rglob("*.yaml"))


def _facts_documents(tmp: Path) -> List[Tuple[str, Dict[str, Any]]]:
    config = load_config(None)
    out = []
    for path in _example_documents(tmp):
        loaded = load_bytes(path.read_bytes(), str(path))
        for document in loaded.documents:
            for analysis in analyses_of(document, config):
                out.append(("deployment", analysis.facts))
            if manifest_kind(document.data) == "Ablation":
                expansion = expand(document)
                if expansion.base is not None:
                    variants = analyze_variants(document, expansion, (), 0.03)
                    if variants:
                        out.append(("ablation", ablation_facts(expansion, variants, document.file)))
    return out


@pytest.fixture(scope="module")
def facts_documents(tmp_path_factory) -> List[Tuple[str, Dict[str, Any]]]:
    """The facts of every rule example and example file, made by the worker that runs these tests
    (at import, every xdist worker made them, in a temporary directory never removed)."""
    return _facts_documents(tmp_path_factory.mktemp("kvlint-facts"))


def _written(value: Any, path: str) -> Iterator[str]:
    if isinstance(value, dict):
        for key, child in value.items():
            yield f"{path}/{key}"
            yield from _written(child, f"{path}/{key}")
    elif isinstance(value, list):
        for child in value:
            yield f"{path}/*"
            yield from _written(child, f"{path}/*")


def test_facts_documents_validate_against_the_contract(facts_documents):
    validator = Draft202012Validator(CONTRACT)
    problems = []
    for kind, facts in facts_documents:
        for error in validator.iter_errors(facts):
            problems.append(f"{facts.get('file')}: {'/'.join(map(str, error.absolute_path))}: {error.message[:200]}")
    assert not problems, "\n".join(sorted(set(problems))[:40])


def test_every_contract_path_is_written_somewhere(facts_documents):
    written: Dict[str, Set[str]] = {"deployment": set(), "ablation": set()}
    for kind, facts in facts_documents:
        written[kind].update(_written(facts, ""))
    # Free-form values (a variant's recorded results) are documented as a whole.
    dead = [f"{kind}: {path}" for kind in PATHS for path in PATHS[kind]
            if path not in written[kind] and not path.startswith("/results/")]
    assert not dead, f"contract paths no example writes (add an example or drop the path): {dead}"


def test_facts_page_is_generated_from_the_contract():
    page = REPO_ROOT / "docs" / "facts.md"
    assert page.read_text(encoding="utf-8") == render(CONTRACT), (
        "docs/facts.md is stale: run `python -m kvlint.report.facts_docs`")


def test_kvlint_facts_prints_the_documents(monkeypatch):
    monkeypatch.chdir(REPO_ROOT)
    result = invoke(["facts", "examples/llama70b-fp8-h100.yaml"])
    assert result.exit_code == 0, result.output
    import json

    documents = json.loads(result.stdout)
    assert len(documents) == 1 and documents[0]["engine"]["name"] == "vllm"
    Draft202012Validator(CONTRACT).validate(documents[0])
