"""Suppression comments: placement, reasons, KV901 unused, KV902 unknown (load.py + check.py)."""

from __future__ import annotations

from conftest import VALID_MANIFEST, check_json, codes_at
from kvlint.load import find_suppressions

# line 13 holds the misspelt key (KV102 at 13:3)
TYPO = VALID_MANIFEST.replace("  dtype: auto\n", "  dtyp: auto\n  dtype: auto\n")


def run(write, text: str):
    write("m.yaml", text)
    return check_json("m.yaml")


def test_unsuppressed_baseline(workspace, write):
    assert codes_at(run(write, TYPO)) == [("KV102", 13, 3)]


def test_end_of_line_suppression(workspace, write):
    text = TYPO.replace("  dtyp: auto\n", "  dtyp: auto  # kvlint: ignore[KV102]\n")
    assert run(write, text)["diagnostics"] == []


def test_end_of_line_with_reason_and_name(workspace, write):
    text = TYPO.replace("  dtyp: auto\n", "  dtyp: auto # kvlint: ignore[unknown-property] -- migrating\n")
    assert run(write, text)["diagnostics"] == []


def test_suppression_on_the_line_above(workspace, write):
    text = TYPO.replace("  dtyp: auto\n", "  # kvlint: ignore[KV102] -- tracked in OPS-1\n  dtyp: auto\n")
    assert run(write, text)["diagnostics"] == []


def test_line_above_skips_blank_and_comment_lines(workspace, write):
    text = TYPO.replace("  dtyp: auto\n", "  # kvlint: ignore[KV102]\n\n  # why: see ticket\n  dtyp: auto\n")
    assert run(write, text)["diagnostics"] == []


def test_suppression_only_covers_its_own_line(workspace, write):
    text = TYPO.replace("  dtype: auto\n", "  dtype: auto  # kvlint: ignore[KV102]\n")
    report = run(write, text)
    assert codes_at(report) == [("KV102", 13, 3), ("KV901", 14, 16)]


def test_suppression_only_covers_named_codes(workspace, write):
    text = TYPO.replace("  dtyp: auto\n", "  dtyp: auto  # kvlint: ignore[KV104]\n")
    report = run(write, text)
    assert [(d["code"], d["line"]) for d in report["diagnostics"]] == [("KV102", 13), ("KV901", 13)]


def test_several_codes_in_one_comment(workspace, write):
    text = TYPO.replace("  dtyp: auto\n", "  dtyp: auto  # kvlint: ignore[KV102, KV104]\n")
    report = run(write, text)
    [unused] = report["diagnostics"]
    assert (unused["code"], unused["severity"]) == ("KV901", "warning")
    assert "KV104" in unused["message"] and "KV102" not in unused["message"]


def test_kv901_unused_suppression(workspace, write, cli):
    text = VALID_MANIFEST.replace("  dtype: auto\n", "  dtype: auto  # kvlint: ignore[KV102] -- stale\n")
    report = run(write, text)
    assert codes_at(report) == [("KV901", 13, 16)]
    assert report["diagnostics"][0]["severity"] == "warning"
    assert cli(["check", "m.yaml"]).exit_code == 0
    assert cli(["check", "--fail-on", "warning", "m.yaml"]).exit_code == 1
    assert cli(["check", "--ignore", "KV901", "--fail-on", "warning", "m.yaml"]).exit_code == 0


def test_kv902_unknown_code(workspace, write, cli):
    text = VALID_MANIFEST.replace("  dtype: auto\n", "  dtype: auto  # kvlint: ignore[KV999]\n")
    report = run(write, text)
    assert codes_at(report) == [("KV902", 13, 16)]
    assert "'KV999'" in report["diagnostics"][0]["message"]
    assert cli(["check", "m.yaml"]).exit_code == 1


def test_hash_inside_quoted_scalar_is_not_a_comment(workspace, write):
    text = TYPO.replace(
        "  name: llama8b-bf16-h100\n",
        '  name: llama8b-bf16-h100\n  description: "see # kvlint: ignore[KV102]"\n',
    ).replace("  dtyp: auto\n", "  dtyp: 'auto # kvlint: ignore[KV102]'\n")
    report = run(write, text)
    # neither string suppresses the finding, and neither is reported as an unused suppression
    assert [d["code"] for d in report["diagnostics"]] == ["KV102"]


def test_hash_inside_block_scalar_is_not_a_comment(workspace, write):
    text = VALID_MANIFEST.replace(
        "  name: llama8b-bf16-h100\n",
        "  name: llama8b-bf16-h100\n  description: |\n    text # kvlint: ignore[KV999]\n",
    )
    assert run(write, text)["diagnostics"] == []


def test_hash_glued_to_a_plain_scalar_is_not_a_comment():
    assert find_suppressions("a: b#kvlint: ignore[KV102]\n") == []


def test_find_suppressions_fields():
    [s] = find_suppressions("a: 1\n  # kvlint: ignore[KV102, unknown-property] -- because\n\nb: 2\n")
    assert (s.line, s.column, s.target_line) == (2, 3, 4)
    assert s.codes == ("KV102", "unknown-property")
    assert s.reason == "because"


def test_suppression_before_a_syntax_error_still_found():
    [s] = find_suppressions("a: 1  # kvlint: ignore[KV001]\nb: [\n")
    assert s.target_line == 1


def test_suppression_in_second_document(workspace, write):
    second = TYPO.replace("  dtyp: auto\n", "  dtyp: auto  # kvlint: ignore[KV102]\n")
    assert run(write, VALID_MANIFEST + "---\n" + second)["diagnostics"] == []
