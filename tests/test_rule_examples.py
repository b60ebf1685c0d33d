"""Every rule file's examples, run through the real `kvlint check` pipeline; rule-file hygiene.

Generic on purpose: a new rules/KVnnn-name.yaml (or examples/org/rules/ORGnnn-name.yaml) is tested
here without touching this file.

Each example pins its whole outcome, as ruff's fixture snapshots and Spectral's rule tests do, so
that a changed message, line or column shows up in review:

    - failing: true
      expect:
        - {line: 17, column: 5, message: "..."}
      manifest: |
        ...
    - failing: false
      expect: []
      manifest: |
        ...

`expect` lists every finding of the rule's OWN code that the example produces, as (line, column,
message); the test compares it with the produced findings exactly (same multiset, any order) and
prints expected-only and produced-only entries on a mismatch. A failing example's list is never
empty; a passing example's is always `[]`.

Findings of OTHER codes are deliberately not pinned. Most examples also trigger neighbouring rules
(an info about the attention backend, a capacity note), so pinning them would make a wording change
in one rule rewrite the examples of dozens of unrelated rules, and the review diff would bury the
one file that matters. Each message is pinned once, in its own rule's file. Other codes are still
guarded coarsely: a failing example must raise no error of another code (it would be unfocused), a
passing example no error or warning at all.

The older `line: N` key (still accepted by schemas/rule.json, so organisation rule files written
before `expect` keep loading) is checked when present: N must be the line of one of the findings.
The built-in rule files use `expect` only.

Regeneration, after a deliberate change to messages or positions:

    KVLINT_UPDATE_EXAMPLES=1 .venv/bin/python -m pytest tests/test_rule_examples.py

reruns every example and rewrites only the `expect:` entries of rules/*.yaml, rules/defects/*.yaml
and examples/org/rules/*.yaml in place (a text edit: comments, quoting and every other line stay
byte-for-byte; a missing `expect:` is inserted under `failing:`). The focus guards still apply and
a failing example that no longer fires still fails. Review the result with `git diff rules/
examples/org/rules/` before committing.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections import Counter
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Tuple

import pytest
import yaml
from jsonschema import Draft202012Validator

from conftest import REPO_ROOT, invoke

RULES_DIR = REPO_ROOT / "rules"
RULE_FILES = sorted(RULES_DIR.glob("*.yaml"))
DEFECT_FILES = sorted((RULES_DIR / "defects").glob("*.yaml"))  # known defects: KV8xx rules
ORG_DIR = REPO_ROOT / "examples" / "org"
ORG_RULE_FILES = sorted((ORG_DIR / "rules").glob("*.yaml"))
EXAMPLE_FILES = RULE_FILES + DEFECT_FILES + ORG_RULE_FILES

UPDATE = os.environ.get("KVLINT_UPDATE_EXAMPLES", "") not in ("", "0")
UPDATE_COMMAND = "KVLINT_UPDATE_EXAMPLES=1 .venv/bin/python -m pytest tests/test_rule_examples.py"
# Rewriting files is safe under xdist: --dist loadfile runs every example of this file on one worker,
# so no two workers rewrite one rule file at once.

Finding = Tuple[int, int, str]


def _read(path: Path) -> Dict[str, Any]:
    with open(path, encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def _shown(path: Path) -> str:
    return path.relative_to(REPO_ROOT).as_posix()


def _examples() -> List[Tuple[str, Path, int, Dict[str, Any]]]:
    cases = []
    for path in EXAMPLE_FILES:
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


def _run_example(
    root: Path, monkeypatch: pytest.MonkeyPatch, example: Dict[str, Any], base: Optional[Path]
) -> Dict[str, Any]:
    if base is not None:
        shutil.copytree(base, root)  # an organisation rule runs inside its own folder (kvlint.toml, catalog)
    root.mkdir(parents=True, exist_ok=True)
    # pin configuration: the example's own, the organisation folder's, or an empty one (no discovery above tmp)
    if "config" in example or base is None:
        (root / "kvlint.toml").write_text(example.get("config", "# defaults\n"), encoding="utf-8")
    for relative, content in (example.get("files") or {}).items():
        target = root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
    name = example.get("filename", "deployment.yaml")
    (root / name).parent.mkdir(parents=True, exist_ok=True)
    kind = example.get("file_kind", "regular")
    if kind == "fifo":
        os.mkfifo(root / name)
    elif kind == "dangling-symlink":
        os.symlink(root / "missing-target.yaml", root / name)
    else:
        (root / name).write_text(example["manifest"], encoding="utf-8")
    monkeypatch.chdir(root)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    result = invoke(["check", "--output-format", "json", name])
    assert result.exit_code in (0, 1), f"exit {result.exit_code}: {result.output}"
    assert "Traceback" not in result.output
    return json.loads(result.stdout)


def _describe(diagnostics: List[Dict[str, Any]]) -> str:
    return "\n".join(f"  {d['line']}:{d['column']} {d['code']} [{d['severity']}] {d['message']}" for d in diagnostics)


def _as_finding(entry: Dict[str, Any]) -> Finding:
    return (entry["line"], entry["column"], entry["message"])


def _expect_mismatch(where: str, code: str, expected: Counter, got: Counter, listing: str) -> str:
    def show(sign: str, findings: Iterable[Finding]) -> List[str]:
        return [f"  {sign} {line}:{column} {message}" for line, column, message in sorted(findings)]

    lines = [f"{where}: the {code} findings differ from `expect` (- expected only, + produced only, = both):"]
    lines += show("-", (expected - got).elements())
    lines += show("+", (got - expected).elements())
    lines += show("=", (expected & got).elements())
    lines += ["all findings:", listing or "  (none)", f"if the change is deliberate: {UPDATE_COMMAND}"]
    return "\n".join(lines)


# --- in-place regeneration of `expect:` (KVLINT_UPDATE_EXAMPLES=1) ------------------------------


def _quote(message: str) -> str:
    """A YAML double-quoted scalar; JSON's string escapes are a subset of YAML's."""
    return json.dumps(message, ensure_ascii=False)


def _expect_block(findings: List[Finding], indent: str) -> str:
    if not findings:
        return f"{indent}expect: []\n"
    rows = [f"{indent}expect:\n"]
    rows += [
        f"{indent}  - {{line: {line}, column: {column}, message: {_quote(message)}}}\n"
        for line, column, message in sorted(findings)
    ]
    return "".join(rows)


def _line_start(text: str, index: int) -> int:
    return text.rfind("\n", 0, index) + 1


def _line_after(text: str, index: int) -> int:
    end = text.find("\n", index)
    return len(text) if end < 0 else end + 1


def _example_node(text: str, index: int) -> yaml.MappingNode:
    root = yaml.compose(text)
    [examples] = [value for key, value in root.value if key.value == "examples"]
    return examples.value[index]


def _with_expect(text: str, index: int, findings: List[Finding]) -> str:
    """`text` with example `index`'s `expect:` (key through last entry) replaced by `findings`, or
    inserted after its `failing:` line; nothing else changes."""
    example = _example_node(text, index)
    keys = {key.value: (key, value) for key, value in example.value}
    failing_key, failing_value = keys["failing"]
    block = _expect_block(findings, " " * failing_key.start_mark.column)
    if "expect" in keys:
        key, value = keys["expect"]
        last = value.value[-1] if isinstance(value, yaml.SequenceNode) and value.value else value
        end = len(text[: last.end_mark.index].rstrip())  # block nodes end where the next token starts
        start = _line_start(text, key.start_mark.index)
        prefix = text[start : key.start_mark.index]
        if prefix.strip():  # `- expect: ...` as the item's first key: keep the dash, re-indent the rest
            block = prefix + block.lstrip(" ")
        return text[:start] + block + text[_line_after(text, end - 1) :]
    at = _line_after(text, failing_value.end_mark.index)
    return text[:at] + block + text[at:]


def _rewrite_expect(path: Path, index: int, findings: List[Finding]) -> None:
    # read and write at once: other people edit these files (sources, rationale) concurrently
    with open(path, encoding="utf-8", newline="") as handle:
        text = handle.read()
    updated = _with_expect(text, index, findings)
    before, after = yaml.safe_load(text), yaml.safe_load(updated)
    wanted = [{"line": line, "column": column, "message": message} for line, column, message in sorted(findings)]
    assert after["examples"][index]["expect"] == wanted, f"{_shown(path)}: the rewritten expect does not read back"
    after["examples"][index]["expect"] = before["examples"][index].get("expect", wanted)
    if "expect" not in before["examples"][index]:
        del after["examples"][index]["expect"]
    assert after == before, f"{_shown(path)}: rewriting expect changed something else"
    if updated != text:
        with open(path, "w", encoding="utf-8", newline="") as handle:
            handle.write(updated)


# --- the examples ----------------------------------------------------------------------------------


@pytest.mark.parametrize("case_id, path, index, example", EXAMPLES, ids=[c[0] for c in EXAMPLES])
def test_rule_example(case_id, path, index, example, tmp_path, monkeypatch):
    code = _read(path)["code"]
    base = ORG_DIR if path in ORG_RULE_FILES else None
    report = _run_example(tmp_path / "example", monkeypatch, example, base)
    diagnostics = report["diagnostics"]
    listing = _describe(diagnostics)
    where = f"{_shown(path)} example {index}"
    mine = [d for d in diagnostics if d["code"] == code]
    got = Counter(_as_finding(d) for d in mine)
    if example.get("failing"):
        assert mine, f"{where}: {code} did not fire; got:\n{listing}"
    else:
        assert not mine, f"{where}: passing example, yet {code} fired:\n{listing}"
    if UPDATE:
        _rewrite_expect(path, index, list(got.elements()))
    else:
        assert "expect" in example, f"{where} has no `expect:`; generate it: {UPDATE_COMMAND}"
        expected = Counter(_as_finding(entry) for entry in example["expect"])
        if expected != got:
            pytest.fail(_expect_mismatch(where, code, expected, got, listing), pytrace=False)
    if example.get("failing") and "line" in example:  # the pre-`expect` form, still accepted
        lines = [d["line"] for d in mine]
        assert example["line"] in lines, f"{where}: {code} expected at line {example['line']}:\n{listing}"
    if example.get("failing"):
        others = [d for d in diagnostics if d["code"] != code and d["severity"] == "error"]
        assert not others, f"{where}: other errors make the example unfocused:\n{listing}"
    else:
        loud = [d for d in diagnostics if d["severity"] in ("error", "warning")]
        assert not loud, f"{where}: passing example is not clean:\n{listing}"


def test_with_expect_is_a_pure_text_edit():
    """The regeneration edit: insert under `failing:`, replace an existing list (flow or block),
    keep comments and everything around it, in both indentation styles of rules/."""
    text = (
        "code: X\n"
        "examples:\n"
        "  - failing: true  # keep\n"
        "    manifest: |\n"
        "      a: 1\n"
        "  # between\n"
        "  - failing: false\n"
        "    expect: []  # replaced\n"
        "    manifest: 'b: 2'\n"
    )
    quoted = 'say "hi": é\\'
    inserted = _with_expect(text, 0, [(1, 1, quoted)])
    assert inserted == text.replace(
        "# keep\n", '# keep\n    expect:\n      - {line: 1, column: 1, message: "say \\"hi\\": é\\\\"}\n'
    )
    assert yaml.safe_load(inserted)["examples"][0]["expect"] == [{"line": 1, "column": 1, "message": quoted}]
    replaced = _with_expect(inserted, 0, [(2, 3, "b"), (1, 1, "a")])
    assert replaced == text.replace(
        "# keep\n",
        '# keep\n    expect:\n      - {line: 1, column: 1, message: "a"}\n      - {line: 2, column: 3, message: "b"}\n',
    )
    assert _with_expect(replaced, 0, [(1, 1, quoted)]) == inserted
    assert _with_expect(text, 1, []) == text.replace("  # replaced", "")
    assert _with_expect(text, 1, [(1, 1, "c")]) == text.replace(
        "    expect: []  # replaced\n", '    expect:\n      - {line: 1, column: 1, message: "c"}\n'
    )
    flush = "examples:\n- failing: true\n  manifest: x\n- failing: false\n  manifest: y\n"
    assert _with_expect(flush, 1, []) == flush.replace("false\n", "false\n  expect: []\n")
    first = "examples:\n- expect: []\n  failing: true\n  manifest: x\n"
    assert _with_expect(first, 0, [(1, 1, "m")]) == first.replace(
        "- expect: []\n", '- expect:\n    - {line: 1, column: 1, message: "m"}\n'
    )


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
    for index, example in enumerate(rule["examples"]):
        assert "expect" in example, f"{path.name} example {index} has no `expect:`; generate it: {UPDATE_COMMAND}"
        assert "line" not in example, f"{path.name} example {index}: `line` is superseded by `expect`; remove it"
        lines = example["manifest"].count("\n") + 1
        for entry in example["expect"]:
            assert 1 <= entry["line"] <= lines, f"{path.name}: expected line {entry['line']} is outside the manifest"


@pytest.mark.parametrize("path", ORG_RULE_FILES, ids=lambda p: p.stem)
def test_org_rule_examples_pin_their_findings(path, rule_validator):
    """examples/org is the template organisations copy: it shows the current example format."""
    rule = _read(path)
    rule_validator.validate(rule)
    assert all("expect" in example and "line" not in example for example in rule["examples"]), path.name


def test_codes_and_names_are_unique():
    codes: Dict[str, str] = {}
    names: Dict[str, str] = {}
    for path in RULE_FILES + DEFECT_FILES:
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
