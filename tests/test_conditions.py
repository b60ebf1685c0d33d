"""The compiled rule conditions must agree with jsonschema on every rule and many fact shapes.

kvlint compiles the JSON Schema subset its rule conditions use into Python predicates for speed
(kvlint/conditions.py). This differential test runs each rule's condition both ways over the
facts of every rule example plus mutated copies, so a compiler bug shows up as a disagreement.
"""

from __future__ import annotations

import copy
import random
from pathlib import Path

import pytest
import yaml
from jsonschema import Draft202012Validator

from kvlint.analyze import analyze_deployment
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
    from kvlint.ablation import _analyze_variants, ablation_facts, expand
    from kvlint.load import load_text

    [document] = load_text(text, "ablation.yaml").documents
    expansion = expand(document)
    analyzed = _analyze_variants(document, expansion, (), 0.03)
    return ablation_facts(expansion, analyzed, "ablation.yaml")


FACTS = _example_facts()


def _mutations(facts, rng):
    """Flip booleans, null out and retype values: the shapes a condition must judge correctly."""
    out = []
    for _ in range(6):
        mutated = copy.deepcopy(facts)
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
    for facts in FACTS:
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
    assert checked >= (1 if rule.for_each else len(FACTS))


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
    assert compile_condition({"pattern": "^a"}) is None
    assert json_equal({"a": [1, True]}, {"a": [1.0, True]})
