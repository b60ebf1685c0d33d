"""The load stage: safe YAML/JSON loading, positions, KV001-KV004 (kvlint/load.py)."""

from __future__ import annotations

import time

import pytest

from conftest import VALID_MANIFEST, check_json, codes_at
from kvlint.findings import Span
from kvlint.load import (
    MAX_DEPTH,
    MAX_DOCUMENTS,
    MAX_FILE_BYTES,
    MAX_NODES_PER_DOCUMENT,
    load_bytes,
    load_text,
)


def codes(loaded) -> list:
    return [(f.code, f.line, f.column) for f in loaded.findings]


# --- KV001 -----------------------------------------------------------------------------------


def test_kv001_points_at_the_parser_position():
    loaded = load_text("a: 1\nb: c: d\n", "x.yaml")
    assert codes(loaded) == [("KV001", 2, 5)]  # "mapping values are not allowed here", at ':'
    assert "mapping values are not allowed" in loaded.findings[0].message
    assert loaded.findings[0].message.startswith("invalid YAML:")
    assert loaded.documents == []


def test_kv001_unclosed_flow_mapping_points_where_the_parser_gave_up():
    loaded = load_text("a: 1\nb: {c: 1\n", "x.yaml")
    assert [f.code for f in loaded.findings] == ["KV001"]
    assert (loaded.findings[0].line, loaded.findings[0].column) == (3, 1)


def test_kv001_tab_indentation():
    loaded = load_text("a:\n\tb: 1\n", "x.yaml")
    assert [(f.code, f.line) for f in loaded.findings] == [("KV001", 2)]


def test_kv001_in_second_document_keeps_the_first(tmp_path):
    loaded = load_text("a: 1\n---\nb: [\n", "x.yaml")
    assert [f.code for f in loaded.findings] == ["KV001"]
    assert loaded.findings[0].document == 1
    assert len(loaded.documents) == 1 and loaded.documents[0].data == {"a": 1}


# --- KV002 -----------------------------------------------------------------------------------


def test_kv002_top_level_with_both_positions():
    loaded = load_text("a: 1\nb: 2\na: 3\n", "x.yaml")
    [finding] = loaded.findings
    assert (finding.code, finding.line, finding.column, finding.pointer) == ("KV002", 3, 1, "/a")
    assert "first defined at line 1, column 1" in finding.message
    assert [(r.line, r.column) for r in finding.related] == [(1, 1)]
    assert loaded.documents[0].data == {"a": 3, "b": 2}  # the last value wins, as in YAML


@pytest.mark.parametrize(
    "text, pointer, second, first",
    [
        ("x:\n  y:\n    z: 1\n    w: 2\n    z: 3\n", "/x/y/z", (5, 5), (3, 5)),
        ("l:\n  - k: 1\n  - k: 1\n    j: 0\n    k: 2\n", "/l/1/k", (5, 5), (3, 5)),
        ("a: {b: {c: 1, c: 2}}\n", "/a/b/c", (1, 15), (1, 9)),
        ('{"a": {"b": 1, "b": 2}}', "/a/b", (1, 16), (1, 8)),
    ],
)
def test_kv002_at_any_depth(text, pointer, second, first):
    loaded = load_text(text, "x.yaml")
    [finding] = loaded.findings
    assert finding.code == "KV002"
    assert finding.pointer == pointer
    assert (finding.line, finding.column) == second
    assert (finding.related[0].line, finding.related[0].column) == first
    assert f"first defined at line {first[0]}, column {first[1]}" in finding.message


def test_kv002_value_positions_follow_the_winning_duplicate():
    loaded = load_text("a: 1\na:\n  - 2\n", "x.yaml")
    document = loaded.documents[0]
    assert document.value_spans["/a"].line == 3
    assert document.key_spans["/a"].line == 2


# --- KV003 -----------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n"])
def test_kv003_empty_file(text):
    loaded = load_text(text, "x.yaml")
    assert [(f.code, f.line) for f in loaded.findings] == [("KV003", 1)]
    assert loaded.documents == []


def test_kv003_empty_document_between_separators():
    loaded = load_text("a: 1\n---\n---\nb: 2\n", "x.yaml")
    assert [f.code for f in loaded.findings] == ["KV003"]
    assert loaded.findings[0].document == 1
    assert "document 2 is empty" in loaded.findings[0].message
    assert [d.data for d in loaded.documents] == [{"a": 1}, {"b": 2}]


def test_kv003_explicit_null_document():
    loaded = load_text("---\n~\n", "x.yaml")
    assert [f.code for f in loaded.findings] == ["KV003"]


# --- KV004 -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, pointer",
    [
        ("a: !!python/object:os.system 16\n", "/a"),
        ("a: !!python/object/apply:os.system ['true']\n", "/a"),
        ("a: !custom {x: 1}\n", "/a"),
        ("a:\n  b: !Ref thing\n", "/a/b"),
        ("!!set {a, b}\n", ""),
    ],
)
def test_kv004_custom_tags_are_findings_not_objects(text, pointer):
    loaded = load_text(text, "x.yaml")
    assert [f.code for f in loaded.findings] == ["KV004"]
    assert loaded.findings[0].pointer == pointer
    assert "custom YAML tag" in loaded.findings[0].message


def test_kv004_custom_tag_never_runs_code(tmp_path):
    marker = tmp_path / "pwned"
    text = f"a: !!python/object/apply:os.system ['touch {marker}']\n"
    load_text(text, "x.yaml")
    assert not marker.exists()


def test_kv004_custom_tag_position_in_a_manifest_and_no_schema_noise(workspace, write):
    text = VALID_MANIFEST.replace("  dtype: auto\n", "  dtype: auto\n  block_size: !!python/object:os.system 16\n")
    write("m.yaml", text)
    report = check_json("m.yaml")
    # The refused value reads as null: one KV004, not an extra "must be integer, not null".
    assert codes_at(report) == [("KV004", 14, 15)]


def _billion_laughs(levels: int = 9) -> str:
    lines = ["l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for level in range(1, levels + 1):
        ref = f"*l{level - 1}"
        lines.append(f"l{level}: &l{level} [{', '.join([ref] * 9)}]")
    return "\n".join(lines) + "\n"


def test_kv004_billion_laughs_is_stopped_quickly():
    started = time.process_time()
    loaded = load_text(_billion_laughs(), "bomb.yaml")
    elapsed = time.process_time() - started
    assert [f.code for f in loaded.findings] == ["KV004"]
    assert f"{MAX_NODES_PER_DOCUMENT:,} nodes" in loaded.findings[0].message
    assert loaded.documents == []
    assert elapsed < 2.0, elapsed


def test_aliases_within_budget_are_expanded():
    loaded = load_text("base: &b {x: 1}\ncopy: *b\nmerged:\n  <<: *b\n  y: 2\n", "x.yaml")
    assert loaded.findings == []
    assert loaded.documents[0].data == {"base": {"x": 1}, "copy": {"x": 1}, "merged": {"x": 1, "y": 2}}


def _nested(levels: int) -> str:
    return "".join(" " * i + "k:\n" for i in range(levels)) + " " * levels + "v\n"


def test_kv004_nesting_depth_over_the_limit():
    loaded = load_text(_nested(MAX_DEPTH + 5), "x.yaml")
    assert [f.code for f in loaded.findings] == ["KV004"]
    assert "nesting deeper" in loaded.findings[0].message
    assert loaded.findings[0].line > MAX_DEPTH  # at the offending node, not at 1:1


def test_nesting_at_the_limit_is_accepted():
    loaded = load_text(_nested(MAX_DEPTH - 1), "x.yaml")
    assert loaded.findings == []


@pytest.mark.parametrize("text", [_nested(2500), "a: " + "[" * 5000 + "]" * 5000 + "\n"])
def test_kv004_extreme_nesting_is_unsafe_not_a_syntax_error(text):
    started = time.process_time()
    loaded = load_text(text, "x.yaml")
    assert [f.code for f in loaded.findings] == ["KV004"]
    assert time.process_time() - started < 5.0


def test_kv004_non_utf8_with_position():
    loaded = load_bytes(b"apiVersion: kvlint/v1\nkind: D\xe9ployment\n", "x.yaml")
    [finding] = loaded.findings
    assert (finding.code, finding.line, finding.column) == ("KV004", 2, 8)
    assert "UTF-8" in finding.message and "0xe9" in finding.message


def test_utf8_bom_and_non_ascii_text_are_fine():
    loaded = load_bytes("\ufeffa: \u00e9t\u00e9\n".encode("utf-8"), "x.yaml")
    assert loaded.findings == []
    assert loaded.documents[0].data == {"a": "\u00e9t\u00e9"}


def test_kv004_nul_bytes():
    loaded = load_bytes(b"a: 1\nb: \x00\x01\x02\n", "x.yaml")
    [finding] = loaded.findings
    assert (finding.code, finding.line) == ("KV004", 2)
    assert "NUL" in finding.message


def test_kv004_ten_megabytes_rejected_by_size_without_parsing():
    raw = b"a: " + b"x" * (10 * 1024 * 1024) + b"\n"
    started = time.process_time()
    loaded = load_bytes(raw, "big.yaml")
    assert time.process_time() - started < 1.0
    [finding] = loaded.findings
    assert finding.code == "KV004"
    assert f"{MAX_FILE_BYTES:,}-byte limit" in finding.message


def test_ten_thousand_documents_complete_with_kv004_past_the_limit():
    text = "".join(f"---\na: {i}\n" for i in range(10_000))
    started = time.process_time()
    loaded = load_text(text, "many.yaml")
    assert time.process_time() - started < 30
    assert len(loaded.documents) == MAX_DOCUMENTS
    [finding] = [f for f in loaded.findings if f.code == "KV004"]
    assert finding.document == MAX_DOCUMENTS
    assert finding.line == 2 * MAX_DOCUMENTS + 2  # the first document not read
    assert "1,000 documents" in finding.message


def test_ten_thousand_documents_through_the_cli(workspace, write):
    write("many.yaml", "".join(f"---\n{VALID_MANIFEST}" for _ in range(10_000)))
    report = check_json("many.yaml")
    assert report["summary"]["documents"] == MAX_DOCUMENTS
    assert [d["code"] for d in report["diagnostics"]] == ["KV004"]


def test_non_scalar_keys_are_kv004():
    loaded = load_text("? [a, b]\n: 1\nc: 2\n", "x.yaml")
    assert [f.code for f in loaded.findings] == ["KV004"]
    assert loaded.documents[0].data == {"c": 2}


# --- pointer -> positions ------------------------------------------------------------------


def test_pointer_spans_for_values_and_keys():
    text = (
        "apiVersion: kvlint/v1\n"  # 1
        "engine:\n"  # 2
        "  name: vllm\n"  # 3
        "  version: \"0.19.1\"\n"  # 4
        "list:\n"  # 5
        "  - first\n"  # 6
        "  - {inner: 7}\n"  # 7
        "'a/b~c': 1\n"  # 8
    )
    document = load_text(text, "x.yaml").documents[0]
    assert document.value_spans["/engine/name"] == Span(3, 9, 3, 13)
    assert document.key_spans["/engine/name"] == Span(3, 3, 3, 7)
    assert document.value_spans["/engine/version"] == Span(4, 12, 4, 20)
    assert document.key_spans["/engine"] == Span(2, 1, 2, 7)
    assert document.value_spans["/engine"].line == 3  # the mapping starts at its first key
    assert document.value_spans["/list/0"] == Span(6, 5, 6, 10)
    assert document.value_spans["/list/1/inner"] == Span(7, 13, 7, 14)
    assert document.key_spans["/list/1/inner"] == Span(7, 6, 7, 11)
    assert document.value_spans["/a~1b~0c"].line == 8  # RFC 6901 escaping


def test_span_falls_back_to_the_nearest_ancestor_key():
    document = load_text("engine:\n  name: vllm\n", "x.yaml").documents[0]
    assert document.span("/engine/name") == Span(2, 9, 2, 13)
    assert document.span("/engine/name", prefer_key=True) == Span(2, 3, 2, 7)
    # a pointer that does not exist (a missing property) lands on its parent's key
    assert document.span("/engine/version").line == 1
    root = document.span("/nowhere/deep")
    assert (root.line, root.column) == (1, 1)


# --- documents and formats -------------------------------------------------------------------


def test_multi_document_positions_are_file_lines():
    text = "a: 1\n---\nb: 2\n---\n# c\nc:\n  d: 3\n"
    loaded = load_text(text, "x.yaml")
    assert [d.index for d in loaded.documents] == [0, 1, 2]
    assert [d.start_line for d in loaded.documents] == [1, 3, 6]
    assert loaded.documents[2].value_spans["/c/d"].line == 7


def test_multi_document_findings_through_the_cli(workspace, write):
    second = VALID_MANIFEST.replace("  dtype: auto\n", "  dtyp: auto\n")
    write("two.yaml", VALID_MANIFEST + "---\n" + second)
    report = check_json("two.yaml")
    assert report["summary"]["documents"] == 2
    offset = VALID_MANIFEST.count("\n") + 1  # the second document starts after the '---'
    assert codes_at(report) == [("KV101", offset + 12, 1), ("KV102", offset + 13, 3)]
    assert all(d["line"] > offset for d in report["diagnostics"])


def test_json_input_with_positions(workspace, write):
    write(
        "m.json",
        '{\n  "apiVersion": "kvlint/v1",\n  "kind": "Deployment",\n'
        '  "metadata": {"name": "Llama8b"},\n'
        '  "engine": {"name": "vllm", "version": "0.19.1"},\n'
        '  "hardware": {"gpu": "H100-SXM-80GB"},\n'
        '  "model": {"name": "meta-llama/Llama-3.1-8B-Instruct"},\n'
        '  "kv_cache": {"dtype": "auto"}\n}\n',
    )
    report = check_json("m.json")
    assert codes_at(report) == [("KV105", 4, 24)]
    assert report["diagnostics"][0]["pointer"] == "/metadata/name"


def test_json_syntax_error_is_kv001(workspace, write):
    write("m.json", '{"apiVersion": "kvlint/v1",\n "kind": "Deployment" "x"}\n')
    report = check_json("m.json")
    assert [d["code"] for d in report["diagnostics"]] == ["KV001"]
    assert report["diagnostics"][0]["line"] == 2


def test_yaml12_exponent_floats_are_numbers():
    # docs/manifest.md writes `weights: {params: 70.6e9}`; YAML 1.1 resolvers read that as a string.
    data = load_text("a: 70.6e9\nb: 1e9\nc: '1e9'\nd: 1.5e+3\ne: v1e9\n", "x.yaml").documents[0].data
    assert data == {"a": 70.6e9, "b": 1e9, "c": "1e9", "d": 1500.0, "e": "v1e9"}


def test_spec_weights_params_example_is_valid(workspace, write):
    text = VALID_MANIFEST.replace(
        "  name: meta-llama/Llama-3.1-8B-Instruct\n",
        "  name: meta-llama/Llama-3.1-8B-Instruct\n  weights: {params: 8.0e9, dtype: bf16}\n",
    )
    write("m.yaml", text)
    report = check_json("m.yaml")
    assert [d for d in report["diagnostics"] if d["severity"] == "error"] == []


def test_scalars_are_plain_data():
    data = load_text("i: 3\nf: 0.5\nb: true\nn: null\nt: 2024-01-01\ns: '3'\n", "x.yaml").documents[0].data
    assert data == {"i": 3, "f": 0.5, "b": True, "n": None, "t": "2024-01-01", "s": "3"}
    assert type(data["t"]) is str


def test_load_never_raises_on_odd_inputs():
    for text in ["]", "{", "*undefined", "&a", "- - -", "? : :", "%YAML 9.9\n---\na: 1", "\t", "a: *x\n"]:
        loaded = load_text(text, "x.yaml")
        assert loaded.findings or loaded.documents, text
