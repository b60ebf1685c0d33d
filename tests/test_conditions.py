"""The compiled rule conditions must agree with jsonschema on every rule and many fact shapes.

kvlint compiles the JSON Schema subset its rule conditions use into Python predicates for speed
(kvlint/conditions.py). This differential test runs each rule's condition both ways over the
facts of every rule example plus mutated copies, so a compiler bug shows up as a disagreement.
"""

from __future__ import annotations

import copy
import functools
import random
from pathlib import Path

import pytest
import yaml
from jsonschema import Draft202012Validator

from kvlint.analysis import analyze_deployment
from kvlint.conditions import compile_condition, json_equal
from kvlint.rulebook import load_rulebook

RULES = [rule for rule in load_rulebook(()) if rule.condition is not None]


def _example_facts():
    facts = []
    for rule in load_rulebook(()):
        for example in rule.examples:
            try:
                data = yaml.safe_load(example["manifest"])
            except yaml.YAMLError:
                continue  # the KV001/KV004 examples are not loadable by design
            if isinstance(data, dict) and data.get("kind") == "Deployment":
                facts.append(analyze_deployment(data, "example.yaml", Path("example.yaml")).facts)
            elif isinstance(data, dict) and data.get("kind") == "Ablation":
                facts.append(_ablation_facts(example["manifest"]))
    return facts


def _ablation_facts(text: str):
    from kvlint.ablation.check import analyze_variants, ablation_facts, expand
    from kvlint.load import load_text

    [document] = load_text(text, "ablation.yaml").documents
    expansion = expand(document)
    analyzed = analyze_variants(document, expansion, (), 0.03)
    return ablation_facts(expansion, analyzed, "ablation.yaml")


@functools.cache
def example_facts():
    """The facts of every rule example, computed on first use: by the worker that runs these
    tests, not by every worker that collects them."""
    return _example_facts()


def _mutations(facts, rng):
    """Flip booleans, null out and retype values: the shapes a condition must judge correctly.

    Only the values of the top-level sections are replaced, so each mutation copies the top level
    and its sections and shares what lies deeper (read, never written, by both evaluators): a
    deep copy made the same candidates at four times the cost of the whole test."""
    out = []
    for _ in range(6):
        mutated = {name: dict(section) if isinstance(section, dict) else section for name, section in facts.items()}
        for section in mutated.values():
            if isinstance(section, dict):
                for key in list(section):
                    roll = rng.random()
                    if roll < 0.15 and isinstance(section[key], bool):
                        section[key] = not section[key]
                    elif roll < 0.2:
                        section[key] = None
                    elif roll < 0.23:
                        section[key] = 1 if section[key] is True else section[key]
        out.append(mutated)
    return out


@pytest.mark.parametrize("rule", RULES, ids=[r.code for r in RULES])
def test_compiled_condition_matches_jsonschema(rule) -> None:
    compiled = compile_condition(rule.condition)
    assert compiled is not None, f"{rule.code}: condition uses keywords outside the compiled subset"
    validator = Draft202012Validator(rule.condition)
    rng = random.Random(rule.code)
    checked = 0
    for facts in example_facts():
        for candidate in [facts, *_mutations(facts, rng)]:
            contexts = [candidate]
            if rule.for_each:
                items = candidate
                for token in rule.for_each.split("/")[1:]:
                    items = items.get(token) if isinstance(items, dict) else None
                contexts = [dict(candidate, item=item) for item in (items if isinstance(items, list) else [])]
            for context in contexts:
                assert compiled(context) == validator.is_valid(context), (rule.code, context)
                checked += 1
    # per-item rules see only the examples that produce items; the rest see every fact set
    assert checked >= (1 if rule.for_each else len(example_facts()))


@pytest.mark.parametrize(
    "schema, value, expected",
    [
        ({"const": True}, 1, False),  # JSON Schema: true is not 1
        ({"const": 1}, 1.0, True),
        ({"type": "integer"}, True, False),
        ({"type": "integer"}, 2.0, True),
        ({"enum": ["a", None]}, None, True),
        ({"required": ["x"]}, "not an object", True),
        ({"properties": {"x": {"const": 1}}}, {}, True),
        ({"not": {"const": "per-head"}}, "per-tensor", True),
        ({"type": "number", "exclusiveMinimum": 4}, 4, False),
    ],
)
def test_compiled_semantics_follow_json_schema(schema, value, expected) -> None:
    assert compile_condition(schema)(value) is expected
    assert Draft202012Validator(schema).is_valid(value) is expected


def test_unsupported_keyword_falls_back() -> None:
    assert compile_condition({"patternProperties": {"^a": True}}) is None
    assert compile_condition({"$ref": "https://example.com/remote.json"}) is None
    assert json_equal({"a": [1, True]}, {"a": [1.0, True]})


# --- the shipped schemas: compiled fast path vs jsonschema --------------------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from kvlint.schema import fast_check, load_schema  # noqa: E402

REPO = Path(__file__).resolve().parent.parent


def _manifests():
    found = []
    for path in sorted((REPO / "examples").rglob("*")):
        if path.suffix in (".yaml", ".yml", ".json") and path.is_file():
            try:
                found.extend(d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict))
            except yaml.YAMLError:
                continue
    for rule in load_rulebook(()):
        for example in rule.examples:
            try:
                found.extend(d for d in yaml.safe_load_all(example["manifest"]) if isinstance(d, dict))
            except yaml.YAMLError:
                continue
    return found


MANIFESTS = [m for m in _manifests() if "apiVersion" in m and all(isinstance(k, str) for k in m)]
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-3, 300000), st.floats(allow_nan=False, allow_infinity=False),
                    st.sampled_from(["", "auto", "fp8", "80G", "80GiB", "Bad_Name", "vllm", "per-head", "0.19.1", "x" * 300]))


@pytest.mark.parametrize("name", ["manifest.v1.json", "config.json", "rule.json"])
def test_shipped_schemas_compile(name) -> None:
    assert fast_check(name) is not None, f"{name} uses a keyword outside the compiled subset"


def test_manifest_fast_path_agrees_on_every_known_manifest() -> None:
    quick = fast_check("manifest.v1.json")
    validator = Draft202012Validator(load_schema("manifest.v1.json"))
    assert len(MANIFESTS) > 50
    verdicts = set()
    for manifest in MANIFESTS:
        verdict = validator.is_valid(manifest)
        verdicts.add(verdict)
        assert quick(manifest) == verdict, manifest
    assert verdicts == {True, False}  # both branches exercised


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_manifest_fast_path_agrees_on_mutations(data) -> None:
    manifest = copy.deepcopy(data.draw(st.sampled_from(MANIFESTS)))
    for _ in range(data.draw(st.integers(1, 4))):
        section = data.draw(st.sampled_from(sorted(manifest)))
        if isinstance(manifest[section], dict) and manifest[section] and data.draw(st.booleans()):
            key = data.draw(st.sampled_from(sorted(manifest[section])))
            manifest[section][key] = data.draw(SCALARS)
        elif data.draw(st.booleans()):
            manifest[section] = data.draw(SCALARS)
        else:
            manifest[data.draw(st.sampled_from(["extra", section, "kind", "targets"]))] = data.draw(SCALARS)
    quick = fast_check("manifest.v1.json")
    assert quick(manifest) == Draft202012Validator(load_schema("manifest.v1.json")).is_valid(manifest)
