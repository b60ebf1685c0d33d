"""Known engine defects (rules/defects/*.yaml, the KV8xx family): file hygiene, the schema's
required evidence and release range, the severity policy of docs/defects.md, and their loading as
rules. Their examples run with every rule's in tests/test_rule_examples.py."""

from __future__ import annotations

import copy
import json
import re

import pytest
import yaml
from jsonschema import Draft202012Validator
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from conftest import REPO_ROOT, invoke
from kvlint.rulebook import defect_files, load_rulebook, message_templates

DEFECT_FILES = sorted((REPO_ROOT / "rules" / "defects").glob("*.yaml"))
UPDATE_COMMAND = "KVLINT_UPDATE_EXAMPLES=1 .venv/bin/python -m pytest tests/test_rule_examples.py -k KV8"


def _read(path):
    return yaml.safe_load(path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def validator():
    return Draft202012Validator(json.loads((REPO_ROOT / "schemas" / "defect.json").read_text(encoding="utf-8")))


def expected_severity(symptom: str, established: str) -> str:
    """docs/defects.md: a wrong log figure is info; a crash or silent wrong output confirmed by a
    reproduction or a fix is an error; anything established by reading code only, or reported and
    open, is a warning, as are a silent capacity loss and a silent fallback."""
    if symptom == "wrong-log-figure":
        return "info"
    if established in ("code-reading", "reported-open"):
        return "warning"
    if symptom in ("startup-crash", "silent-wrong-output"):
        return "error"
    return "warning"


def test_there_are_defect_files():
    assert DEFECT_FILES
    assert [p.name for p in defect_files()] == [p.name for p in DEFECT_FILES]


@pytest.mark.parametrize("path", DEFECT_FILES, ids=lambda p: p.stem)
def test_defect_file_is_valid(path, validator):
    defect = _read(path)
    errors = [f"{'/'.join(map(str, e.absolute_path)) or '.'}: {e.message}" for e in validator.iter_errors(defect)]
    assert errors == [], f"{path.name} fails schemas/defect.json:\n" + "\n".join(errors)
    assert path.name.startswith(f"{defect['id']}-"), f"{path.name}: file name must be ID-name.yaml"
    specifier = SpecifierSet(defect["affected"])
    if defect["fixed_in"] is not None:
        assert not specifier.contains(Version(defect["fixed_in"]), prereleases=True), (
            f"{path.name}: fixed_in {defect['fixed_in']} lies inside affected {defect['affected']}")
        assert defect["remedy"].get("upgrade") == defect["fixed_in"], f"{path.name}: remedy.upgrade must name fixed_in"
    else:
        assert "upgrade" not in defect["remedy"], f"{path.name}: no fixed release to upgrade to"
    assert defect["severity"] == expected_severity(defect["symptom"], defect["established"]), (
        f"{path.name}: severity {defect['severity']} breaks the policy of docs/defects.md")
    kinds = {bool(example["failing"]) for example in defect["examples"]}
    assert kinds == {True, False}, f"{path.name} needs a failing and a passing example"
    for index, example in enumerate(defect["examples"]):
        assert "expect" in example, f"{path.name} example {index} has no `expect:`; generate it: {UPDATE_COMMAND}"
        version = re.search(r'version: "?([^"\n]+)"?', example["manifest"])
        assert version, f"{path.name} example {index} names no engine version"
        inside = specifier.contains(Version(version.group(1)), prereleases=True)
        if example["failing"]:
            assert inside, f"{path.name} example {index}: a failing example must be on an affected release"


@pytest.mark.parametrize("path", DEFECT_FILES, ids=lambda p: p.stem)
def test_a_fixed_defect_has_a_passing_example_on_the_fixed_release(path):
    defect = _read(path)
    if defect["fixed_in"] is None:
        return
    passing = [e["manifest"] for e in defect["examples"] if not e["failing"]]
    assert any(f'version: "{defect["fixed_in"]}"' in m for m in passing), (
        f"{path.name}: add a passing example on the first fixed release {defect['fixed_in']}")


@pytest.mark.parametrize("missing", ["evidence", "affected"])
def test_the_schema_requires_evidence_and_a_release_range(missing, validator):
    defect = _read(DEFECT_FILES[0])
    assert validator.is_valid(defect)
    broken = copy.deepcopy(defect)
    del broken[missing]
    assert not validator.is_valid(broken)


def test_the_schema_rejects_empty_evidence_and_a_bare_version(validator):
    defect = _read(DEFECT_FILES[0])
    for evidence in ({}, {"issues": []}, {"fixes": [], "code": []}):
        assert not validator.is_valid({**defect, "evidence": evidence}), evidence
    assert not validator.is_valid({**defect, "affected": "0.25.1"})
    assert not validator.is_valid({**defect, "remedy": {}})


def test_examples_share_the_rule_example_format():
    rule = json.loads((REPO_ROOT / "schemas" / "rule.json").read_text(encoding="utf-8"))
    defect = json.loads((REPO_ROOT / "schemas" / "defect.json").read_text(encoding="utf-8"))
    mine, theirs = defect["properties"]["examples"], rule["properties"]["examples"]
    assert {k: v for k, v in mine.items() if k != "items"} == {k: v for k, v in theirs.items() if k != "items"}
    for key, value in mine["items"].items():
        if key != "properties":
            assert theirs["items"][key] == value, key
    for name, value in mine["items"]["properties"].items():  # rule.json may grow new keys first
        assert theirs["items"]["properties"][name] == value, name


@pytest.mark.parametrize("path", DEFECT_FILES, ids=lambda p: p.stem)
def test_each_defect_is_a_kv8_rule(path):
    defect = _read(path)
    rule = load_rulebook(()).get(defect["code"])
    assert rule is not None and rule.name == defect["name"] and rule.severity == defect["severity"]
    assert rule.engines == (defect["engine"],) and rule.versions == defect["affected"]
    assert rule.condition == defect["trigger"]
    for message in message_templates(rule.message):
        assert message.startswith(f"known defect {defect['id']}: ") and defect["affected"] in message
        assert "Remedy:" in message and "https://" in message


def test_select_kv8_lists_the_defects(workspace):
    result = invoke(["rules", "--format", "json"])
    assert result.exit_code == 0, result.output
    listed = [r["code"] for r in json.loads(result.stdout) if r["code"].startswith("KV8")]
    assert listed == sorted(_read(p)["code"] for p in DEFECT_FILES)


@pytest.mark.parametrize("path", DEFECT_FILES, ids=lambda p: p.stem)
def test_a_warning_from_code_reading_or_an_open_report_says_so(path):
    defect = _read(path)
    rule = load_rulebook(()).get(defect["code"])
    for message in message_templates(rule.message):
        if defect["established"] in ("code-reading", "reported-open"):
            assert "not reproduced" in message, message
        if defect["fixed_in"]:
            assert f"fixed in {defect['fixed_in']}" in message and "upgrade to" in message
        else:
            assert "no fixed release" in message


def test_check_select_kv8_reports_only_the_defects(workspace):
    defect = _read(next(p for p in DEFECT_FILES if _read(p)["code"] == "KV801"))
    failing = next(e for e in defect["examples"] if e["failing"])
    (workspace / "deploy.yaml").write_text(failing["manifest"], encoding="utf-8")
    result = invoke(["check", "--select", "KV8", "--output-format", "json", "deploy.yaml"])
    assert result.exit_code == 0, result.output  # a warning does not fail the run
    codes = {d["code"] for d in json.loads(result.stdout)["diagnostics"]}
    assert codes == {"KV801"}
    ignored = invoke(["check", "--ignore", "KV801", "--output-format", "json", "deploy.yaml"])
    assert "KV801" not in {d["code"] for d in json.loads(ignored.stdout)["diagnostics"]}


@pytest.mark.parametrize("version", ["nightly", "0." + "9" * 200, "latest"])
def test_an_unparseable_release_is_not_a_crash(workspace, version):
    """Release-bound rules (every KV8xx) do not apply to a version that is not one; KV201 says so."""
    manifest = _read(DEFECT_FILES[0])["examples"][0]["manifest"]
    manifest = re.sub(r'version: "[^"]*"', f'version: "{version}"', manifest)
    (workspace / "deploy.yaml").write_text(manifest, encoding="utf-8")
    result = invoke(["check", "--output-format", "json", "deploy.yaml"])
    assert result.exit_code in (0, 1), result.output
    assert not any(d["code"].startswith("KV8") for d in json.loads(result.stdout)["diagnostics"])
