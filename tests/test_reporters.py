"""Output formats: json (exactly the documented object, README.md), sarif (validated), github, full, concise."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jsonschema.validators import validator_for

from conftest import VALID_MANIFEST
from kvlint.pipeline.check import CheckResult
from kvlint.findings import Finding
from kvlint.report.github import (
    ANNOTATION_LIMIT,
    annotation,
    escape_data,
    escape_property,
    format_github,
    markdown_summary,
)

SARIF_SCHEMA = Path(__file__).resolve().parent / "data" / "sarif-schema-2.1.0.json"

# KV102 (error, key 13:3..13:7) and KV901 (warning) in one file, KV105 in another
TYPO = VALID_MANIFEST.replace("  dtype: auto\n", "  dtyp: auto\n  dtype: auto  # kvlint: ignore[KV104]\n")
BAD_NAME = VALID_MANIFEST.replace("name: llama8b-bf16-h100", "name: Llama_8B")  # KV105 at 4:9 (no semantic effect)


@pytest.fixture
def two_files(workspace, write):
    write("a.yaml", TYPO)
    write("b/c.yaml", BAD_NAME)
    return workspace


def run(cli, fmt: str, *paths: str):
    result = cli(["check", "--output-format", fmt, *(paths or ("a.yaml", "b/c.yaml"))])
    assert result.exit_code == 1, result.output
    return result.stdout


# --- json --------------------------------------------------------------------------------------


def test_json_is_exactly_the_spec_shape(two_files, cli):
    report = json.loads(run(cli, "json"))
    assert list(report) == ["version", "summary", "diagnostics"]
    assert report["version"] == 1
    assert report["summary"] == {"files": 2, "documents": 2, "errors": 2, "warnings": 1, "infos": 0}
    spec_keys = ["code", "name", "severity", "message", "file", "line", "column", "pointer", "url"]
    for diagnostic in report["diagnostics"]:
        assert list(diagnostic) == spec_keys
        assert isinstance(diagnostic["line"], int) and isinstance(diagnostic["column"], int)
        assert diagnostic["line"] >= 1 and diagnostic["column"] >= 1
        assert diagnostic["url"].startswith("https://") and diagnostic["url"].endswith(f"{diagnostic['code']}.md")
    first = report["diagnostics"][0]
    assert {k: first[k] for k in ("code", "name", "severity", "file", "line", "column", "pointer")} == {
        "code": "KV102",
        "name": "unknown-property",
        "severity": "error",
        "file": "a.yaml",
        "line": 13,
        "column": 3,
        "pointer": "/kv_cache/dtyp",
    }
    assert [(d["file"], d["code"], d["severity"]) for d in report["diagnostics"]] == [
        ("a.yaml", "KV102", "error"),
        ("a.yaml", "KV901", "warning"),
        ("b/c.yaml", "KV105", "error"),
    ]


def test_json_clean_run(workspace, write, cli):
    write("m.yaml", VALID_MANIFEST)
    result = cli(["check", "--output-format", "json", "m.yaml"])
    assert result.exit_code == 0
    assert json.loads(result.stdout) == {
        "version": 1,
        "summary": {"files": 1, "documents": 1, "errors": 0, "warnings": 0, "infos": 0},
        "diagnostics": [],
    }


def test_json_keeps_non_ascii(workspace, write, cli):
    write("m.yaml", VALID_MANIFEST.replace("kv_cache:\n", "kv_cäche:\n"))
    out = cli(["check", "--output-format", "json", "m.yaml"]).stdout
    assert "kv_cäche" in out and json.loads(out)["diagnostics"]


# --- sarif -------------------------------------------------------------------------------------


def _sarif_validator():
    schema = json.loads(SARIF_SCHEMA.read_text(encoding="utf-8"))
    cls = validator_for(schema)
    cls.check_schema(schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def test_sarif_validates_against_the_2_1_0_schema(two_files, cli):
    sarif = json.loads(run(cli, "sarif"))
    errors = sorted(_sarif_validator().iter_errors(sarif), key=lambda e: list(e.path))
    assert errors == [], [f"{list(e.path)}: {e.message}" for e in errors]


def test_sarif_validator_is_not_vacuous():
    broken = {"version": "2.1.0", "runs": [{"tool": {"driver": {}}, "results": []}]}
    assert list(_sarif_validator().iter_errors(broken))  # driver.name is required


def test_sarif_content_for_code_scanning(two_files, cli):
    sarif = json.loads(run(cli, "sarif"))
    assert sarif["version"] == "2.1.0"
    [run_] = sarif["runs"]
    rules = run_["tool"]["driver"]["rules"]
    assert run_["tool"]["driver"]["name"] == "kvlint"
    assert len({r["id"] for r in rules}) == len(rules)
    # only the rules that fired are embedded, in the rulebook's order (not all 90-odd)
    assert [r["id"] for r in rules] == ["KV102", "KV105", "KV901"]
    results = run_["results"]
    assert [(r["ruleId"], r["level"]) for r in results] == [("KV102", "error"), ("KV901", "warning"), ("KV105", "error")]
    for result in results:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
        assert result["partialFingerprints"]
    location = results[0]["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "a.yaml"
    assert location["region"] == {"startLine": 13, "startColumn": 3, "endLine": 13, "endColumn": 7}
    assert results[2]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "b/c.yaml"


def test_sarif_for_a_clean_run_validates(workspace, write, cli):
    write("m.yaml", VALID_MANIFEST)
    sarif = json.loads(cli(["check", "--output-format", "sarif", "m.yaml"]).stdout)
    assert sarif["runs"][0]["results"] == []
    assert sarif["runs"][0]["tool"]["driver"]["rules"] == []  # nothing fired, nothing embedded
    assert list(_sarif_validator().iter_errors(sarif)) == []


# --- github ------------------------------------------------------------------------------------


def test_github_escaping_follows_the_workflow_command_rules():
    # data: %, CR, LF; properties additionally ':' and ','
    assert escape_data("100% a\r\nb: c, d") == "100%25 a%0D%0Ab: c, d"
    assert escape_property("dir,x/a:b.yaml%\n") == "dir%2Cx/a%3Ab.yaml%25%0A"
    assert escape_data("%0A") == "%250A"  # escaping is not applied twice


def test_github_annotation_line():
    finding = Finding(
        code="KV102", name="unknown-property", severity="error",
        message="bad: 50%\nnext", file="dir,1/a:b.yaml", line=13, column=3, end_line=13, end_column=7,
    )
    assert annotation(finding) == (
        "::error file=dir%2C1/a%3Ab.yaml,line=13,col=3,endLine=13,endColumn=7,"
        "title=KV102 unknown-property::bad: 50%25%0Anext"
    )
    info = Finding(code="KV999", name="n", severity="info", message="m", file="f", line=1, column=1)
    assert annotation(info).startswith("::notice file=f,line=1,col=1,title=")


def test_github_output_through_the_cli(two_files, cli):
    lines = run(cli, "github").splitlines()
    assert lines[0].startswith("::error file=a.yaml,line=13,col=3,endLine=13,endColumn=7,title=KV102 unknown-property::")
    assert lines[1].startswith("::warning file=a.yaml,line=14,")
    assert lines[2].startswith("::error file=b/c.yaml,line=4,col=9,")
    assert lines[-1] == "Found 2 errors, 1 warning, 0 infos in 2 files (2 documents)."


def _findings(count: int, severity: str):
    return [
        Finding(code="KV102", name="unknown-property", severity=severity, message=f"m{i}", file="a.yaml", line=i + 1, column=1)
        for i in range(count)
    ]


def test_github_notes_the_ten_per_level_limit():
    result = CheckResult(files=[], findings=_findings(ANNOTATION_LIMIT + 3, "error") + _findings(2, "warning"), documents=1)
    lines = format_github(result).splitlines()
    assert sum(1 for line in lines if line.startswith("::error ")) == ANNOTATION_LIMIT + 3  # all printed
    notes = [line for line in lines if line.startswith("::notice title=kvlint::")]
    assert len(notes) == 1
    assert "only 10 error annotations" in notes[0] and "3 more errors" in notes[0]


def test_github_no_limit_note_at_exactly_ten():
    result = CheckResult(files=[], findings=_findings(ANNOTATION_LIMIT, "error"), documents=1)
    assert "::notice" not in format_github(result)


def test_markdown_summary_escapes_table_cells():
    finding = Finding(code="KV102", name="n", severity="error", message="a | b\nc", file="x.yaml", line=2, column=3, url="https://u")
    text = markdown_summary(CheckResult(files=[], findings=[finding], documents=1))
    assert text.startswith("## kvlint\n")
    assert "| error | `x.yaml:2:3` | [KV102](https://u) n | a \\| b c |" in text


# --- full and concise --------------------------------------------------------------------------


def test_full_format_block_with_caret_line(two_files, cli):
    out = run(cli, "full")
    block = out.split("\n\n")[0].splitlines()
    assert block[0].startswith("a.yaml:13:3: KV102 [error] unknown-property: unknown property 'dtyp'")
    assert block[1:4] == [
        "   |",
        "13 |   dtyp: auto",
        "   |   ^^^^",
    ]
    assert block[4].startswith("  = help: ")
    assert block[5] == "  = docs: https://github.com/kvlint/kvlint/blob/main/docs/rules/KV102.md"
    assert out.endswith("Found 2 errors, 1 warning, 0 infos in 2 files (2 documents).\n")


def test_full_format_caret_for_a_value_and_a_duplicate_note(workspace, write, cli):
    write("m.yaml", VALID_MANIFEST.replace("  dtype: auto\n", "  dtype: auto\n  dtype: fp8\n"))
    out = run(cli, "full", "m.yaml")
    block = out.split("\n\n")[0].splitlines()
    assert block[1:4] == ["   |", "14 |   dtype: fp8", "   |   ^^^^^"]
    assert "  = note: first definition at line 13, column 3" in block


def test_full_format_syntax_error_past_the_last_line_has_no_excerpt(workspace, write, cli):
    write("m.yaml", "a: {b: 1\n")
    out = run(cli, "full", "m.yaml")
    assert out.startswith("m.yaml:2:1: KV001 [error] yaml-syntax: invalid YAML:")
    assert " | " not in out.split("\n\n")[0]


def test_concise_format(two_files, cli):
    assert run(cli, "concise").splitlines() == [
        "a.yaml:13:3: KV102 [error] unknown property 'dtyp' in /kv_cache; did you mean 'dtype'?",
        "a.yaml:14:16: KV901 [warning] suppression of KV104 (invalid-value) suppressed nothing on line 14; remove it",
        "b/c.yaml:4:9: KV105 [error] 'Llama_8B' does not have the expected form for /metadata/name "
        "(Deployment name: lowercase letters, digits, '-' and '.'.)",
        "Found 2 errors, 1 warning, 0 infos in 2 files (2 documents).",
    ]


def test_sarif_uri_relative_inside_and_absolute_outside_the_run_directory() -> None:
    from kvlint.report.sarif import artifact_location

    assert artifact_location("deploy/llama.yaml") == {"uri": "deploy/llama.yaml", "uriBaseId": "%SRCROOT%"}
    outside = artifact_location("/srv/manifests/llama.yaml")
    assert outside == {"uri": "file:///srv/manifests/llama.yaml"}
