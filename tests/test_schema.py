"""The schema stage: shipped schemas, KV1xx families, positions, size hints (kvlint/schema.py)."""

from __future__ import annotations

import json

import pytest
from jsonschema import Draft202012Validator

from conftest import REPO_ROOT, VALID_MANIFEST, check_json, codes_at
from kvlint.load import load_text
from kvlint.schema import did_you_mean, validate_document, validator_for
from kvlint.units import parse_size, size_hint


def validate(text: str):
    loaded = load_text(text, "m.yaml")
    assert loaded.findings == [], loaded.findings
    return validate_document(loaded.documents[0])


def with_kv_cache_extra(extra: str) -> str:
    return VALID_MANIFEST + extra


@pytest.mark.parametrize("path", sorted((REPO_ROOT / "schemas").glob("*.json")), ids=lambda p: p.name)
def test_shipped_schemas_are_valid_draft_2020_12(path):
    schema = json.loads(path.read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    assert schema.get("$schema") == "https://json-schema.org/draft/2020-12/schema"


def test_valid_manifest_has_no_schema_findings():
    assert validate(VALID_MANIFEST) == []


def test_validator_is_built_once():
    assert validator_for("manifest.v1.json") is validator_for("manifest.v1.json")


def test_kv101_missing_top_level_property_points_at_the_document():
    text = VALID_MANIFEST.replace('engine:\n  name: vllm\n  version: "0.19.1"\n', "")
    [finding] = validate(text)
    assert (finding.code, finding.line, finding.column) == ("KV101", 1, 1)
    assert "'engine'" in finding.message and "top level" in finding.message


def test_kv101_missing_nested_property_points_at_the_parent_key():
    text = VALID_MANIFEST.replace('  version: "0.19.1"\n', "")
    [finding] = validate(text)
    assert (finding.code, finding.line, finding.column, finding.pointer) == ("KV101", 5, 1, "/engine")
    assert "'version'" in finding.message


def test_kv102_did_you_mean_at_the_key():
    text = VALID_MANIFEST.replace("kv_cache:\n", "kv_cach:\n")
    findings = validate(text)
    kv102 = [f for f in findings if f.code == "KV102"]
    assert [(f.line, f.column, f.pointer) for f in kv102] == [(12, 1, "/kv_cach")]
    assert "did you mean 'kv_cache'?" in kv102[0].message


def test_kv102_without_a_close_match_lists_the_allowed_keys():
    [finding] = validate(VALID_MANIFEST + "zzzzqqq: 1\n")
    assert finding.code == "KV102"
    assert "did you mean" not in finding.message
    assert "allowed:" in finding.message and "kv_cache" in finding.message


def test_did_you_mean_is_case_insensitive_fallback():
    assert did_you_mean("FLASH", ["flash"]) == "; did you mean 'flash'?"
    assert did_you_mean("xyz", ["flash"]) == ""


def test_kv103_wrong_type_at_the_value():
    [finding] = validate(VALID_MANIFEST + "parallelism:\n  tensor: eight\n")
    assert (finding.code, finding.line, finding.column) == ("KV103", 15, 11)
    assert "integer" in finding.message


def test_kv103_document_that_is_not_a_mapping():
    loaded = load_text("- a\n- b\n", "m.yaml")
    [finding] = validate_document(loaded.documents[0])
    assert finding.code == "KV103" and "mapping" in finding.message


def test_kv104_invalid_value_with_suggestion():
    [finding] = validate(VALID_MANIFEST.replace("name: vllm", "name: vlm"))
    assert (finding.code, finding.line, finding.column) == ("KV104", 6, 9)
    assert "did you mean 'vllm'?" in finding.message


@pytest.mark.parametrize("size, number, unit", [("80G", "80", "G"), ("80g", "80", "g"), ("80Gi", "80", "Gi"), ("1.5T", "1.5", "T")])
def test_kv105_ambiguous_size_unit_names_both_spellings(size, number, unit):
    findings = validate(VALID_MANIFEST + f"memory:\n  kv_cache_memory: {size}\n")
    assert [(f.code, f.line, f.column) for f in findings] == [("KV105", 15, 20)]
    message = findings[0].message
    big = unit[0].upper()
    assert f"{number}{big}iB" in message and f"{number}{big}B" in message
    assert "powers of 2" in message and "powers of 10" in message


def test_kv105_size_hint_also_for_hardware_memory():
    findings = validate(VALID_MANIFEST.replace("  gpu: H100-SXM-80GB\n", "  gpu: H100-SXM-80GB\n  memory: 80G\n"))
    assert [f.code for f in findings] == ["KV105"]
    assert "80GiB" in findings[0].message and "80GB" in findings[0].message


@pytest.mark.parametrize("size", ["80GiB", "80GB", "512MiB", 1024, "1.5TB"])
def test_valid_sizes_pass(size):
    assert validate(VALID_MANIFEST + f"memory:\n  kv_cache_memory: {size}\n") == []


def test_unknown_unit_hint():
    assert "unknown unit 'XB'" in (size_hint("80XB") or "")
    assert size_hint("80GiB") is None


def test_parse_size():
    assert parse_size("80GiB") == 80 * 2**30
    assert parse_size("80GB") == 80 * 10**9
    assert parse_size(17) == 17
    assert parse_size("80G") is None
    assert parse_size(True) is None


def test_kv105_pattern_mismatch_names_the_form():
    [finding] = validate(VALID_MANIFEST.replace("name: llama8b-bf16-h100", "name: Llama_8B"))
    assert (finding.code, finding.line, finding.column) == ("KV105", 4, 9)


def test_kv106_out_of_range():
    [finding] = validate(VALID_MANIFEST + "memory:\n  gpu_memory_utilization: 1.5\n")
    assert (finding.code, finding.line) == ("KV106", 15)
    assert "1.5" in finding.message


def test_kv199_other_schema_errors():
    text = VALID_MANIFEST.replace(
        "  name: meta-llama/Llama-3.1-8B-Instruct\n",
        "  name: meta-llama/Llama-3.1-8B-Instruct\n  weights: {bytes: 16GB, params: 8.0e9, dtype: bf16}\n",
    )
    findings = validate(text)
    assert [(f.code, f.line) for f in findings] == [("KV199", 12)]


def test_several_errors_in_one_document_are_all_reported(workspace, write):
    text = VALID_MANIFEST.replace("name: vllm", "name: vlm").replace("kv_cache:\n", "kv_cach:\n")
    write("m.yaml", text)
    found = {code for code, _, _ in codes_at(check_json("m.yaml"))}
    assert {"KV104", "KV102", "KV101"} <= found


def test_schema_command_prints_the_manifest_schema(cli):
    result = cli(["schema"])
    assert result.exit_code == 0
    assert json.loads(result.stdout) == json.loads((REPO_ROOT / "schemas" / "manifest.v1.json").read_text())
    result = cli(["schema", "--name", "rule"])
    assert json.loads(result.stdout)["title"] == "kvlint rule file"
