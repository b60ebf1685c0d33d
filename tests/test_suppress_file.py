"""`# kvlint: ignore-file` (every rule) and `# kvlint: ignore-file[KV301,KV5]` anywhere in a
file's comments: the whole file's findings of those codes are dropped; a selector that drops
nothing is KV901, an unknown one KV902 (as the per-line `# kvlint: ignore[...]`)."""

from __future__ import annotations

from conftest import VALID_MANIFEST, codes_at

from kvlint.load import find_suppressions

TYPO = VALID_MANIFEST.replace("  dtype: auto\n", "  dtyp: auto\n  dtype: auto\n")  # KV102 at 13:3
TWO = TYPO.replace("  name: vllm\n", "  name: vllm\n  colour: blue\n")  # and KV102 at 7:3
SCRIPT = ("#!/bin/sh\n# kvlint: gpu=H100-SXM-80GB engine-version=0.19.1\n{comment}"
          "vllm serve meta-llama/Llama-3.1-8B-Instruct --kv-cache-dtype fp8_e5m2\n")


def _codes(run_json, write, name, text):
    write(name, text)
    return codes_at(run_json(name))


def test_bare_ignore_file_drops_every_finding(workspace, write, run_json):
    assert [c for c, _, _ in _codes(run_json, write, "a.yaml", TWO)] == ["KV102", "KV102"]
    assert _codes(run_json, write, "b.yaml", "# kvlint: ignore-file -- generated\n" + TWO) == []


def test_codes_prefixes_and_names(workspace, write, run_json):
    for selector in ("KV102", "KV1", "unknown-property", "KV501, KV102"):
        text = TWO + f"# kvlint: ignore-file[{selector}]\n"
        found = _codes(run_json, write, "a.yaml", text)
        if selector == "KV501, KV102":  # KV501 dropped nothing
            assert [c for c, _, _ in found] == ["KV901"], found
        else:
            assert found == [], (selector, found)


def test_anywhere_in_the_comments_but_not_in_a_value(workspace, write, run_json):
    text = TWO.replace("  name: llama8b-bf16-h100\n", "  name: llama8b-bf16-h100  # kvlint: ignore-file[KV102]\n")
    assert _codes(run_json, write, "a.yaml", text) == []
    quoted = TWO.replace("  name: llama8b-bf16-h100\n", "  name: 'x # kvlint: ignore-file'\n")
    assert [c for c, _, _ in _codes(run_json, write, "b.yaml", quoted)].count("KV102") == 2


def test_unused_and_unknown(workspace, write, run_json):
    found = _codes(run_json, write, "a.yaml", "# kvlint: ignore-file[KV5]\n" + VALID_MANIFEST)
    assert found == [("KV901", 1, 1)]
    report = run_json("a.yaml")
    assert "whole-file suppression of KV5 suppressed nothing" in report["diagnostics"][0]["message"]
    assert _codes(run_json, write, "b.yaml", "# kvlint: ignore-file\n" + VALID_MANIFEST) == [("KV901", 1, 1)]
    assert [c for c, _, _ in _codes(run_json, write, "c.yaml", "# kvlint: ignore-file[KV999]\n" + VALID_MANIFEST)] == ["KV902"]


def test_with_a_per_line_suppression(workspace, write, run_json):
    text = TWO.replace("  dtyp: auto\n", "  dtyp: auto  # kvlint: ignore[KV102]\n") + "# kvlint: ignore-file[KV102]\n"
    assert _codes(run_json, write, "a.yaml", text) == []  # each one dropped one finding


def test_in_a_shell_script(workspace, write, run_json):
    assert [c for c, _, _ in _codes(run_json, write, "serve.sh", SCRIPT.format(comment=""))] == ["KV301"]
    text = SCRIPT.format(comment="# kvlint: ignore-file[KV301] -- e5m2 accepted\n")
    assert _codes(run_json, write, "serve2.sh", text) == []


def test_find_suppressions_parses_the_forms():
    found = find_suppressions("# kvlint: ignore-file\na: 1  # kvlint: ignore-file[KV3, KV501] -- why\n")
    assert [(s.line, s.codes, s.whole_file, s.reason) for s in found] == [
        (1, ("ALL",), True, ""), (2, ("KV3", "KV501"), True, "why")]
    assert find_suppressions("# kvlint: ignore-files\n") == []
