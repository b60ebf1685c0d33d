"""`kvlint check` end to end through click.testing: inputs, selection, exit codes, outputs."""

from __future__ import annotations

import json

import pytest

from conftest import VALID_MANIFEST, check_json, codes_at

TYPO = VALID_MANIFEST.replace("  dtype: auto\n", "  dtyp: auto\n  dtype: auto\n")  # KV102 at 13:3
BAD_NAME = VALID_MANIFEST.replace("name: llama8b-bf16-h100", "name: Llama_8B")  # KV105 at 4:9 (no semantic effect)
UNUSED = VALID_MANIFEST.replace("  dtype: auto\n", "  dtype: auto  # kvlint: ignore[KV102]\n")  # KV901 (warning)


def no_traceback(result) -> None:
    assert "Traceback" not in result.output
    assert "Traceback" not in (result.stderr or "")


def test_clean_manifest_exits_zero(workspace, write, cli):
    write("m.yaml", VALID_MANIFEST)
    result = cli(["check", "m.yaml"])
    assert result.exit_code == 0, result.output
    assert "All checks passed (1 document in 1 file)." in result.stdout


def test_finding_exits_one(workspace, write, cli):
    write("m.yaml", TYPO)
    result = cli(["check", "m.yaml"])
    assert result.exit_code == 1
    assert "m.yaml:13:3: KV102 [error] unknown-property:" in result.stdout


def test_syntax_error_is_a_finding_exit_one(workspace, write, cli):
    write("m.yaml", "a: [\n")
    result = cli(["check", "m.yaml"])
    assert result.exit_code == 1
    assert "KV001" in result.stdout
    no_traceback(result)


def test_missing_path_is_a_usage_error(workspace, cli):
    result = cli(["check", "nope.yaml"])
    assert result.exit_code == 2
    assert result.stderr.strip() == "kvlint: error: nope.yaml: no such file or directory"
    no_traceback(result)


def test_stdin_dash(workspace, cli):
    result = cli(["check", "--output-format", "json", "-"], input=TYPO)
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert [(d["file"], d["code"], d["line"]) for d in report["diagnostics"]] == [("<stdin>", "KV102", 13)]
    clean = cli(["check", "-"], input=VALID_MANIFEST)
    assert clean.exit_code == 0


def test_suppression_works_on_stdin(workspace, cli):
    text = TYPO.replace("  dtyp: auto\n", "  dtyp: auto  # kvlint: ignore[KV102]\n")
    assert cli(["check", "-"], input=text).exit_code == 0


def test_directory_recursion_exclude_and_non_manifests(workspace, write):
    write("kvlint.toml", 'exclude = ["deploy/skipped", "*.draft.yaml"]\n')
    write("deploy/a.yaml", TYPO)
    write("deploy/sub/deeper/b.yml", BAD_NAME)
    write("deploy/c.json", json.dumps({"apiVersion": "kvlint/v1", "kind": "Deployment"}))
    write("deploy/skipped/d.yaml", TYPO)
    write("deploy/e.draft.yaml", TYPO)
    write("deploy/.hidden/f.yaml", TYPO)
    write("deploy/workflow.yaml", "on: push\njobs: {build: {runs-on: ubuntu-latest}}\n")
    write("deploy/model/config.json", '{"num_hidden_layers": 32}')
    write("deploy/notes.txt", TYPO)
    report = check_json("deploy")
    files = sorted({d["file"] for d in report["diagnostics"]})
    assert files == ["deploy/a.yaml", "deploy/c.json", "deploy/sub/deeper/b.yml"]
    assert report["summary"]["files"] == 3


def test_files_named_explicitly_are_always_checked(workspace, write, cli):
    """A file named on the command line is read: one that is no deployment at all (a workflow)
    gets one KV208 info saying so and the run passes; one that is a manifest lacking its
    apiVersion (it has `engine:`/`kv_cache:` mappings) is validated, and asked for apiVersion."""
    write("workflow.yaml", "jobs: {}\n")
    result = cli(["check", "--output-format", "json", "workflow.yaml"])
    assert result.exit_code == 0
    (only,) = json.loads(result.stdout)["diagnostics"]
    assert (only["code"], only["severity"], only["line"], only["column"]) == ("KV208", "info", 1, 1)
    assert only["message"].startswith("not a deployment kvlint reads")
    write("manifest.yaml", "kind: Deployment\nengine: {name: vllm}\nkv_cache: {dtype: fp8}\n")
    report = check_json("manifest.yaml")
    messages = sorted(d["message"] for d in report["diagnostics"])
    assert {d["code"] for d in report["diagnostics"]} == {"KV101"}
    assert any("'apiVersion'" in m for m in messages)


def test_default_path_is_cwd(workspace, write, cli):
    write("m.yaml", TYPO)
    result = cli(["check", "--output-format", "concise"])
    assert result.exit_code == 1
    assert result.stdout.startswith("m.yaml:13:3: KV102")


@pytest.mark.parametrize(
    "args, expected",
    [
        ([], {"KV102", "KV105"}),
        (["--select", "KV102"], {"KV102"}),
        (["--select", "unknown-property"], {"KV102"}),
        (["--select", "KV10"], {"KV102", "KV105"}),
        (["--select", "KV1"], {"KV102", "KV105"}),
        (["--select", "KV0"], set()),
        (["--select", "KV102,pattern-mismatch"], {"KV102", "KV105"}),
        (["--select", "KV102", "--select", "KV105"], {"KV102", "KV105"}),
        (["--ignore", "KV102"], {"KV105"}),
        (["--ignore", "pattern-mismatch"], {"KV102"}),
        (["--ignore", "KV1"], set()),
        (["--select", "KV0", "--extend-select", "KV105"], {"KV105"}),
        (["--select", "ALL", "--ignore", "KV10"], set()),
    ],
)
def test_select_ignore_extend_select(workspace, write, args, expected):
    write("a.yaml", TYPO)
    write("b.yaml", BAD_NAME)
    report = check_json(*args, "a.yaml", "b.yaml")
    assert {d["code"] for d in report["diagnostics"]} == expected


@pytest.mark.parametrize("option", ["--select", "--ignore", "--extend-select"])
def test_unknown_selector_is_exit_two_one_line(workspace, write, cli, option):
    write("m.yaml", VALID_MANIFEST)
    result = cli(["check", option, "KV9999,bogus-name", "m.yaml"])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("kvlint: error: unknown rule selector(s): KV9999, bogus-name")
    assert result.stdout == ""
    no_traceback(result)


def test_fail_on_warning(workspace, write, cli):
    write("m.yaml", UNUSED)
    default = cli(["check", "--output-format", "json", "m.yaml"])
    assert default.exit_code == 0
    assert [(d["code"], d["severity"]) for d in json.loads(default.stdout)["diagnostics"]] == [("KV901", "warning")]
    assert cli(["check", "--fail-on", "warning", "m.yaml"]).exit_code == 1
    assert cli(["check", "--fail-on", "info", "m.yaml"]).exit_code == 1
    assert cli(["check", "--fail-on", "error", "m.yaml"]).exit_code == 0


def test_exit_zero(workspace, write, cli):
    write("m.yaml", TYPO)
    result = cli(["check", "--exit-zero", "m.yaml"])
    assert result.exit_code == 0
    assert "KV102" in result.stdout


def test_output_file(workspace, write, cli):
    write("m.yaml", TYPO)
    result = cli(["check", "--output-format", "json", "--output-file", "out/report.json", "m.yaml"])
    # the directory does not exist: a usage error, not a traceback
    assert result.exit_code == 2
    no_traceback(result)
    result = cli(["check", "--output-format", "json", "--output-file", "report.json", "m.yaml"])
    assert result.exit_code == 1
    assert result.stdout == ""
    report = json.loads((workspace / "report.json").read_text())
    assert codes_at(report) == [("KV102", 13, 3)]


def test_sarif_file_beside_the_normal_output(workspace, write, cli):
    write("m.yaml", TYPO)
    result = cli(["check", "--output-format", "concise", "--sarif-file", "kvlint.sarif", "m.yaml"])
    assert result.exit_code == 1
    assert result.stdout.startswith("m.yaml:13:3: KV102")
    sarif = json.loads((workspace / "kvlint.sarif").read_text())
    assert sarif["version"] == "2.1.0"
    assert [r["ruleId"] for r in sarif["runs"][0]["results"]] == ["KV102"]


def test_github_step_summary_written(workspace, write, cli, monkeypatch):
    write("m.yaml", TYPO)
    summary = workspace / "summary.md"
    summary.write_text("previous step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    result = cli(["check", "--output-format", "github", "m.yaml"])
    assert result.exit_code == 1
    assert result.stdout.startswith("::error file=m.yaml,line=13,col=3,")
    text = summary.read_text()
    assert text.startswith("previous step\n## kvlint")  # appended, as GitHub expects
    assert "| error | `m.yaml:13:3` | [KV102]" in text


def test_step_summary_not_written_for_other_formats(workspace, write, cli, monkeypatch):
    write("m.yaml", TYPO)
    summary = workspace / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    cli(["check", "--output-format", "json", "m.yaml"])
    assert not summary.exists()


def test_ordering_is_deterministic_and_sorted(workspace, write, cli):
    write("b.yaml", TYPO + "---\n" + BAD_NAME)
    write("a.yaml", BAD_NAME.replace("kv_cache:\n", "kv_cach:\n"))
    write("c/z.yaml", "a: [\n")
    first = cli(["check", "--output-format", "json", "c", "b.yaml", "a.yaml"])
    second = cli(["check", "--output-format", "json", "c", "b.yaml", "a.yaml"])
    assert first.stdout == second.stdout
    diagnostics = json.loads(first.stdout)["diagnostics"]
    keys = [(d["file"], d["line"], d["column"]) for d in diagnostics]
    assert keys == sorted(keys)
    assert [d["file"] for d in diagnostics][0] == "a.yaml"
    assert len(diagnostics) >= 5


def test_duplicate_path_arguments_are_checked_once(workspace, write):
    write("m.yaml", TYPO)
    report = check_json("m.yaml", "m.yaml", ".")
    assert report["summary"]["files"] == 1
    assert len(report["diagnostics"]) == 1


def test_version_and_rule_commands(cli):
    assert cli(["--version"]).stdout.startswith("kvlint, version ")
    by_code = cli(["rule", "KV102"])
    by_name = cli(["rule", "unknown-property"])
    assert by_code.exit_code == 0 and by_code.stdout == by_name.stdout
    assert by_code.stdout.startswith("# KV102 unknown-property")
    missing = cli(["rule", "KV9999"])
    assert missing.exit_code == 2 and "no rule 'KV9999'" in missing.stderr
    listing = cli(["rules", "--format", "json"])
    codes = [r["code"] for r in json.loads(listing.stdout)]
    assert codes == sorted(codes) and {"KV001", "KV102", "KV901"} <= set(codes)


def test_internal_error_is_one_line_exit_two(workspace, write, cli, monkeypatch):
    import kvlint.pipeline.check

    def explode(*_args, **_kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(kvlint.pipeline.check, "run_check", explode)
    write("m.yaml", VALID_MANIFEST)
    result = cli(["check", "m.yaml"])
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        "kvlint: error: internal error: RuntimeError: boom (run with --verbose for the traceback)"
    ]
    no_traceback(result)
