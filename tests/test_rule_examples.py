"""Every rule file's examples, run through the real `kvlint check` pipeline; rule-file hygiene.

Generic on purpose: a new rules/KVnnn-name.yaml is tested here without touching this file.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest
import yaml
from jsonschema import Draft202012Validator

from conftest import REPO_ROOT, invoke

RULES_DIR = REPO_ROOT / "rules"
RULE_FILES = sorted(RULES_DIR.glob("*.yaml"))


def _read(path: Path) -> Dict[str, Any]:
    with open(path, encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def _examples() -> List[Tuple[str, Path, int, Dict[str, Any]]]:
    cases = []
    for path in RULE_FILES:
        try:
            rule = _read(path)
        except yaml.YAMLError:
            continue  # reported by test_rule_file_is_valid
        if not isinstance(rule, dict):
            continue
        for index, example in enumerate(rule.get("examples") or ()):
            if isinstance(example, dict):
                kind = "fails" if example.get("failing") else "passes"
                cases.append((f"{rule.get('code', path.stem)}-{index}-{kind}", path, index, example))
    return cases


EXAMPLES = _examples()


def _run_example(root: Path, monkeypatch: pytest.MonkeyPatch, example: Dict[str, Any]) -> Dict[str, Any]:
    root.mkdir(parents=True, exist_ok=True)
    # pin configuration: the example's own, or an empty one (no discovery above the tmp dir)
    (root / "kvlint.toml").write_text(example.get("config", "# defaults\n"), encoding="utf-8")
    for relative, content in (example.get("files") or {}).items():
        target = root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
    name = example.get("filename", "deployment.yaml")
    (root / name).parent.mkdir(parents=True, exist_ok=True)
    (root / name).write_text(example["manifest"], encoding="utf-8")
    monkeypatch.chdir(root)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    result = invoke(["check", "--output-format", "json", name])
    assert result.exit_code in (0, 1), f"exit {result.exit_code}: {result.output}"
    assert "Traceback" not in result.output
    return json.loads(result.stdout)


def _describe(diagnostics: List[Dict[str, Any]]) -> str:
    return "\n".join(f"  {d['line']}:{d['column']} {d['code']} [{d['severity']}] {d['message']}" for d in diagnostics)


@pytest.mark.parametrize("case_id, path, index, example", EXAMPLES, ids=[c[0] for c in EXAMPLES])
def test_rule_example(case_id, path, index, example, tmp_path, monkeypatch):
    code = _read(path)["code"]
    report = _run_example(tmp_path / "example", monkeypatch, example)
    diagnostics = report["diagnostics"]
    listing = _describe(diagnostics)
    if example.get("failing"):
        mine = [d for d in diagnostics if d["code"] == code]
        assert mine, f"{path.name} example {index}: {code} did not fire; got:\n{listing}"
        if "line" in example:
            assert example["line"] in [d["line"] for d in mine], (
                f"{path.name} example {index}: {code} expected at line {example['line']}; got:\n{listing}"
            )
        others = [d for d in diagnostics if d["code"] != code and d["severity"] == "error"]
        assert not others, f"{path.name} example {index}: other errors make the example unfocused:\n{listing}"
    else:
        loud = [d for d in diagnostics if d["severity"] in ("error", "warning")]
        assert not loud, f"{path.name} passing example {index} is not clean:\n{listing}"


# --- hygiene -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def rule_validator() -> Draft202012Validator:
    schema = json.loads((REPO_ROOT / "schemas" / "rule.json").read_text(encoding="utf-8"))
    return Draft202012Validator(schema)


def test_there_are_rule_files():
    assert len(RULE_FILES) >= 13
    assert EXAMPLES


@pytest.mark.parametrize("path", RULE_FILES, ids=lambda p: p.stem)
def test_rule_file_is_valid(path, rule_validator):
    rule = _read(path)
    errors = [f"{'/'.join(map(str, e.absolute_path)) or '.'}: {e.message}" for e in rule_validator.iter_errors(rule)]
    assert errors == [], f"{path.name} fails schemas/rule.json:\n" + "\n".join(errors)
    assert len(rule["sources"]) >= 1
    kinds = {bool(example["failing"]) for example in rule["examples"]}
    assert kinds == {True, False}, f"{path.name} needs a failing and a passing example"
    assert path.name == f"{rule['code']}-{rule['name']}.yaml", f"{path.name}: file name must be CODE-name.yaml"
    for example in rule["examples"]:
        if example["failing"] and "line" in example:
            lines = example["manifest"].count("\n") + 1
            assert 1 <= example["line"] <= lines, f"{path.name}: example line {example['line']} is outside the manifest"


def test_codes_and_names_are_unique():
    codes: Dict[str, str] = {}
    names: Dict[str, str] = {}
    for path in RULE_FILES:
        rule = _read(path)
        assert rule["code"] not in codes, f"{rule['code']} in {path.name} and {codes.get(rule['code'])}"
        assert rule["name"] not in names, f"{rule['name']} in {path.name} and {names.get(rule['name'])}"
        codes[rule["code"]] = path.name
        names[rule["name"]] = path.name


def test_spec_required_codes_keep_their_names():
    # Rule codes and names are a contract (docs/rules/README.md); only the ones already written are checked.
    spec = {
        "KV001": "yaml-syntax", "KV002": "duplicate-key", "KV003": "empty-document", "KV004": "unsafe-yaml",
        "KV101": "missing-required", "KV102": "unknown-property", "KV103": "wrong-type",
        "KV104": "invalid-value", "KV105": "pattern-mismatch", "KV106": "out-of-range",
        "KV199": "schema-other", "KV901": "unused-suppression", "KV902": "unknown-code",
    }
    present = {}
    for path in RULE_FILES:
        match = re.match(r"^(KV\d{3})-(.+)\.yaml$", path.name)
        if match:
            present[match.group(1)] = match.group(2)
    for code, name in spec.items():
        assert present.get(code) == name, f"{code} must exist and be named {name}"


def test_the_rulebook_loads_every_rule_file():
    from kvlint.rulebook import load_rulebook, read_rule_file

    book = load_rulebook()
    for path in RULE_FILES:
        rule = read_rule_file(path, validate=True)
        assert book.get(rule.code) is not None and book.get(rule.name).code == rule.code
