"""Hostile organisation rules and data directories (docs/security.md): a `rules-dir` comes from the
repository under review, so its rule files are input like any manifest.

Every case runs the real command and checks the exit code, that there is no traceback, that an
error is one line naming the file, and that every input is byte-for-byte unchanged. Catastrophic
patterns, alias bombs, huge files and FIFOs run it in a subprocess with a timeout (a hang guard,
not a speed claim); a pattern or keyword refused when the rule is loaded runs it in this process
(test_hostile_inputs.kvlint_here).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from conftest import VALID_MANIFEST
from test_hostile_inputs import digest, kvlint, kvlint_here, posix_only


def org_rule(condition: str, code: str = "ORG901") -> str:
    """A valid organisation rule whose condition is the given YAML block (indented 2)."""
    return (
        f"code: {code}\nname: org-rule-{code.lower()}\nseverity: error\nsummary: s\nrationale: r\n"
        "remediation: m\nsources:\n  - {url: 'https://example.org/policy'}\n"
        f"condition:\n{condition}"
        "message: \"model {model.name} matches the organisation's pattern\"\npointer: /model/name\n"
        "examples:\n  - {failing: true, manifest: 'apiVersion: kvlint/v1'}\n  - {failing: false, expect: [], manifest: 'apiVersion: kvlint/v1'}\n"
    )


def pattern_condition(pattern: str) -> str:
    return f"  type: object\n  properties:\n    model:\n      properties:\n        name: {{pattern: {json.dumps(pattern)}}}\n"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "rules").mkdir(parents=True)
    (root / "kvlint.toml").write_text('rules-dir = ["rules"]\n', encoding="utf-8")
    (root / "deploy.yaml").write_text(VALID_MANIFEST, encoding="utf-8")
    return root


def with_model_name(name: str) -> str:
    return VALID_MANIFEST.replace("name: meta-llama/Llama-3.1-8B-Instruct", f"name: {json.dumps(name)}")


def org_findings(completed) -> list:
    assert completed.returncode in (0, 1), completed.stderr
    return [d for d in json.loads(completed.stdout)["diagnostics"] if d["code"].startswith("ORG")]


# --- regular expressions in rule conditions ---------------------------------------------------


@pytest.mark.parametrize(
    "pattern, name, fires",
    [
        ("(a+)+$", "a" * 5000 + "!", False),  # exponential for re
        ("(a+)+$", "org/" + "a" * 5000, True),
        ("(a|aa)+$", "a" * 5000 + "!", False),  # exponential for re
        ("^(\\w+\\s?)*$", "word " * 1000 + "!", False),  # exponential for re
        (".*.*=.*x", "a=" * 5000, False),  # cubic for re: 10**12 steps
    ],
)
def test_a_catastrophic_pattern_is_searched_in_bounded_time_with_re_s_answer(project: Path, pattern, name, fires):
    (project / "rules" / "ORG901-pattern.yaml").write_text(org_rule(pattern_condition(pattern)), encoding="utf-8")
    (project / "deploy.yaml").write_text(with_model_name(name), encoding="utf-8")
    before = digest(project)
    completed = kvlint(["check", "deploy.yaml", "--output-format", "json"], project)
    found = org_findings(completed)
    assert [d["code"] for d in found] == (["ORG901"] if fires else [])
    assert digest(project) == before


def test_the_same_pattern_through_jsonschema_is_searched_in_linear_time_too(project: Path):
    """A condition outside kvlint's compiled keyword subset (`propertyNames`) goes to jsonschema;
    its `pattern` is still kvlint's linear search, never re's."""
    condition = "  type: object\n  properties:\n    model:\n      propertyNames: {pattern: '(n+)+$|^[a-z_0-9]+$'}\n" \
                "      properties:\n        name: {pattern: '(a+)+$'}\n"
    (project / "rules" / "ORG902-names.yaml").write_text(org_rule(condition, "ORG902"), encoding="utf-8")
    (project / "deploy.yaml").write_text(with_model_name("a" * 5000 + "!"), encoding="utf-8")
    assert org_findings(kvlint(["check", "deploy.yaml", "--output-format", "json"], project)) == []
    (project / "deploy.yaml").write_text(with_model_name("x/" + "a" * 5000), encoding="utf-8")
    assert [d["code"] for d in org_findings(kvlint(["check", "deploy.yaml", "--output-format", "json"], project))] == [
        "ORG902"]


@pytest.mark.parametrize(
    "pattern, reason",
    [
        ("(a*)*\\1$", "back-references"),
        ("^(?=a)a+$", "look-ahead"),
        ("(?i)LLAMA", "inline flags"),
        ("a{1000}", "repetition count"),
        ("(unclosed", "not a valid regular expression"),
    ],
)
def test_a_pattern_outside_the_linear_subset_is_a_rule_error_naming_the_file(project: Path, pattern, reason):
    (project / "rules" / "ORG903-unsafe.yaml").write_text(org_rule(pattern_condition(pattern), "ORG903"),
                                                          encoding="utf-8")
    before = digest(project)
    for command in (["check", "deploy.yaml"], ["check", "deploy.yaml", "--select", "KV1"]):
        completed = kvlint_here(command, project)
        assert completed.returncode == 2 and completed.stdout == ""
        assert completed.stderr.count("\n") == 1, completed.stderr
        assert "ORG903-unsafe.yaml" in completed.stderr and reason in completed.stderr
    assert digest(project) == before


def test_pattern_properties_in_an_organisation_rule_is_a_rule_error(project: Path):
    condition = "  type: object\n  patternProperties:\n    '(a+)+$': {type: string}\n"
    (project / "rules" / "ORG904-pp.yaml").write_text(org_rule(condition, "ORG904"), encoding="utf-8")
    completed = kvlint_here(["check", "deploy.yaml"], project)
    assert completed.returncode == 2 and "ORG904-pp.yaml" in completed.stderr
    assert "patternProperties" in completed.stderr and completed.stderr.count("\n") == 1


# --- the rule files themselves ----------------------------------------------------------------


def test_an_alias_bomb_in_a_rule_file_is_a_rule_error(project: Path):
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n"
        for i in range(20))
    (project / "rules" / "ORG905-bomb.yaml").write_text(bomb, encoding="utf-8")
    completed = kvlint(["check", "deploy.yaml"], project)
    assert completed.returncode == 2 and "ORG905-bomb.yaml" in completed.stderr and "aliases" in completed.stderr


def test_a_huge_rule_file_is_a_rule_error_without_reading_it_all(project: Path):
    with open(project / "rules" / "ORG906-huge.yaml", "wb") as handle:
        handle.write(b"code: ORG906\n")
        handle.truncate(2 * 1024 ** 3)  # sparse
    completed = kvlint(["check", "deploy.yaml"], project)
    assert completed.returncode == 2 and "ORG906-huge.yaml" in completed.stderr and "byte limit" in completed.stderr


@posix_only
def test_a_fifo_or_dangling_link_in_the_rules_dir_is_a_rule_error_not_a_hang_or_a_skip(project: Path):
    os.mkfifo(project / "rules" / "ORG907-pipe.yaml")
    completed = kvlint(["check", "deploy.yaml"], project)
    assert completed.returncode == 2 and "ORG907-pipe.yaml" in completed.stderr and "a FIFO" in completed.stderr
    os.unlink(project / "rules" / "ORG907-pipe.yaml")
    os.symlink(project / "gone.yaml", project / "rules" / "ORG908-dangling.yaml")
    completed = kvlint(["check", "deploy.yaml"], project)
    assert completed.returncode == 2 and "ORG908-dangling.yaml" in completed.stderr
