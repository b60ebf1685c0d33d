"""Organisation extensions: `rules-dir` (own rules, same format as rules/) and `catalog-dir` (own
GPUs, models, engine releases, same schemas as rules/catalog/), using the copyable example in
examples/org/. Broken extension files are configuration errors: exit 2, one line, no traceback.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List

import pytest
import yaml

from conftest import REPO_ROOT, invoke

ORG = REPO_ROOT / "examples" / "org"
ORG_RULES = sorted((ORG / "rules").glob("*.yaml"))
ORG_MANIFEST = ORG / "llama8b-ft-acme-x1.yaml"
UNKNOWN_CODES = {"KV201", "KV202", "KV203"}


@pytest.fixture
def org(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of examples/org (so tests may break files in it), made the cwd. Each test gets a
    fresh path, so the per-process rulebook/catalog caches (keyed by directory) never mix."""
    root = tmp_path / "org"
    shutil.copytree(ORG, root)
    monkeypatch.chdir(root)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    return root


def _check(*args: str) -> Dict[str, Any]:
    result = invoke(["check", "--output-format", "json", *args])
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)


def _codes(report: Dict[str, Any]) -> List[str]:
    return [d["code"] for d in report["diagnostics"]]


def _assert_config_error(result, *words: str) -> None:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("kvlint: error: ")
    assert "internal error" not in lines[0], lines[0]
    for word in words:
        assert word in lines[0], lines[0]


# ----------------------------------------------------------------------------- catalog-dir


def test_org_manifest_needs_the_org_catalog(tmp_path, monkeypatch):
    """Without catalog-dir the private GPU, model and engine build are unknown..."""
    (tmp_path / "kvlint.toml").write_text("# defaults\n", encoding="utf-8")
    shutil.copy(ORG_MANIFEST, tmp_path / "m.yaml")
    monkeypatch.chdir(tmp_path)
    codes = set(_codes(_check("m.yaml")))
    assert UNKNOWN_CODES <= codes


def test_org_catalog_resolves_gpu_model_and_engine_build(org):
    """...with examples/org/kvlint.toml they resolve, and the manifest is clean."""
    report = _check(ORG_MANIFEST.name)
    assert report["summary"]["documents"] == 1
    assert not set(_codes(report)) & UNKNOWN_CODES, report["diagnostics"]
    assert [d for d in report["diagnostics"] if d["severity"] in ("error", "warning")] == []


def test_org_catalog_facts_reach_the_capacity(org):
    result = invoke(["capacity", "--format", "json", ORG_MANIFEST.name])
    assert result.exit_code == 0, result.output
    [doc] = json.loads(result.stdout)
    gpus = yaml.safe_load((org / "catalog" / "gpus.yaml").read_text())["gpus"]
    memory = next(g["memory_bytes"] for g in gpus if g["id"] == "ACME-X1-64GB")
    # vLLM: pool = ceil(memory x 0.9) - weights - non-KV; weights from the org model entry
    # (8,030,261,248 params in bf16), non-KV the estimate for one GPU under 70 GiB: the activation
    # peak at the 2,048 batched tokens vLLM defaults to there (2.25 GiB x 2048 / 8192) and 0.25 GiB
    # of non-torch memory.
    import math

    non_kv = int(int(2.25 * 2**30) * 2048 / 8192) + int(0.25 * 2**30)
    assert doc["engine"]["pool_terms"]["non_kv"] == non_kv
    # vLLM loads the rotary cos/sin cache with the weights: max_position_embeddings 131,072 x
    # head_dim 128 x 2 B from the org model entry (rotary_embedding/base.py, v0.19.0)
    rope = 131072 * 128 * 2
    assert doc["engine"]["pool_terms"]["rope_cache"] == rope
    assert doc["engine"]["pool_bytes_per_gpu"] == math.ceil(memory * 0.9) - 2 * 8030261248 - rope - non_kv
    # the org model's geometry: 32 layers x 8 KV heads x 128 x (K+V) at 1 byte (fp8)
    assert doc["per_token"]["payload_bytes"] == 32 * 8 * 128 * 2
    assert doc["engine"]["max_concurrency"] > 0


def test_org_gpu_alias_and_model_alias(org):
    text = ORG_MANIFEST.read_text().replace("gpu: ACME-X1-64GB", "gpu: acme x1").replace(
        "name: acme/llama-8b-ft", "name: acme/llama-8b-support"
    )
    (org / "alias.yaml").write_text(text, encoding="utf-8")
    assert not set(_codes(_check("alias.yaml"))) & UNKNOWN_CODES


def test_org_engine_release_applies_version_keyed_facts(org):
    """The internal build 0.19.1.post1 gets vLLM's release-specific checks: 0.19 ignores
    VLLM_ATTENTION_BACKEND (KV313), which an unknown release would skip."""
    text = ORG_MANIFEST.read_text().replace(
        "  attention_backend: FLASH_ATTN\n", "  attention_backend: FLASH_ATTN\n  env: {VLLM_ATTENTION_BACKEND: FLASHINFER}\n"
    )
    (org / "env.yaml").write_text(text, encoding="utf-8")
    assert "KV313" in _codes(_check("env.yaml"))


def test_catalog_dir_with_only_gpus_yaml(tmp_path, monkeypatch):
    """A catalog-dir need not have an engines/ folder: its gpus.yaml is not read as an engine file."""
    (tmp_path / "cat").mkdir()
    shutil.copy(ORG / "catalog" / "gpus.yaml", tmp_path / "cat" / "gpus.yaml")
    (tmp_path / "kvlint.toml").write_text('catalog-dir = ["cat"]\n', encoding="utf-8")
    (tmp_path / "m.yaml").write_text(
        "apiVersion: kvlint/v1\nkind: Deployment\nmetadata: {name: x}\n"
        'engine: {name: vllm, version: "0.19.1"}\nhardware: {gpu: ACME-X1-64GB}\n'
        "model: {name: meta-llama/Llama-3.1-8B-Instruct}\nkv_cache: {dtype: auto}\n",
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    result = invoke(["check", "--output-format", "json", "m.yaml"])
    assert result.exit_code == 0, result.output
    assert "KV202" not in _codes(json.loads(result.stdout))


@pytest.mark.parametrize(
    "relative, old, new, words",
    [
        ("catalog/gpus.yaml", "vendor: nvidia", "vendor: acme", ["gpus.yaml", "vendor"]),
        ("catalog/models.yaml", "  num_layers: 32\n", "", ["models.yaml", "num_layers"]),
        ("catalog/engines/vllm-acme.yaml", 'versions: ["0.19.1.post1"]', 'versions: "0.19.1.post1"', ["vllm-acme.yaml"]),
        ("catalog/gpus.yaml", "gpus:\n", "gpus: [\n", ["gpus.yaml"]),
    ],
    ids=["gpu-bad-enum", "model-missing-field", "engine-wrong-type", "gpu-yaml-syntax"],
)
@pytest.mark.parametrize("command", ["check", "capacity"])
def test_invalid_catalog_file_is_a_configuration_error(org, relative, old, new, words, command):
    target = org / relative
    text = target.read_text(encoding="utf-8")
    assert old in text
    target.write_text(text.replace(old, new, 1), encoding="utf-8")
    _assert_config_error(invoke([command, ORG_MANIFEST.name]), *words)


def test_missing_catalog_dir_is_a_configuration_error(org):
    (org / "kvlint.toml").write_text('catalog-dir = ["no-such-dir"]\n', encoding="utf-8")
    _assert_config_error(invoke(["check", ORG_MANIFEST.name]), "no-such-dir")


# ----------------------------------------------------------------------------- rules-dir


def test_org_rule_is_listed_and_documented(org):
    listed = json.loads(invoke(["rules", "--format", "json"]).stdout)
    org_rule = next(r for r in listed if r["code"] == "ORG101")
    assert org_rule["name"] == "require-targets"
    assert org_rule["url"] == "https://wiki.acme.example/serving/kvlint/ORG101"
    doc = invoke(["rule", "require-targets"])
    assert doc.exit_code == 0 and doc.stdout.startswith("# ORG101 require-targets\n")


def test_org_rule_fires_and_can_be_ignored(org):
    text = ORG_MANIFEST.read_text()
    stripped = text[: text.index("targets:")]
    (org / "no-targets.yaml").write_text(stripped, encoding="utf-8")
    report = _check("no-targets.yaml")
    mine = [d for d in report["diagnostics"] if d["code"] == "ORG101"]
    assert len(mine) == 1, report["diagnostics"]
    assert mine[0]["severity"] == "error" and mine[0]["name"] == "require-targets"
    assert mine[0]["pointer"] == "/metadata/name"
    assert mine[0]["line"] == stripped.splitlines().index("  name: llama8b-ft-fp8-acme-x1") + 1
    assert mine[0]["url"] == "https://wiki.acme.example/serving/kvlint/ORG101"
    assert "llama8b-ft-fp8-acme-x1" in mine[0]["message"]
    assert invoke(["check", "no-targets.yaml"]).exit_code == 1
    assert "ORG101" not in _codes(_check("--ignore", "ORG101", "no-targets.yaml"))
    assert "ORG101" not in _codes(_check("--ignore", "ORG", "no-targets.yaml"))
    assert "ORG101" not in _codes(_check(ORG_MANIFEST.name))  # it sets targets.min_concurrency


def _org_rule_examples():
    cases = []
    for path in ORG_RULES:
        rule = yaml.safe_load(path.read_text(encoding="utf-8"))
        for index, example in enumerate(rule["examples"]):
            cases.append(pytest.param(rule["code"], example, id=f"{rule['code']}-{index}"))
    return cases


@pytest.mark.parametrize("code, example", _org_rule_examples())
def test_org_rule_examples(org, code, example):
    """The org rules' own examples, run as the test suite runs the built-in ones."""
    (org / "example.yaml").write_text(example["manifest"], encoding="utf-8")
    report = _check("example.yaml")
    hits = [d for d in report["diagnostics"] if d["code"] == code]
    if example.get("failing"):
        assert hits, report["diagnostics"]
        if "line" in example:
            assert example["line"] in [d["line"] for d in hits]
    else:
        assert not hits, hits


def test_org_rules_validate_against_the_rule_schema():
    from jsonschema import Draft202012Validator

    schema = json.loads((REPO_ROOT / "schemas" / "rule.json").read_text(encoding="utf-8"))
    assert ORG_RULES
    for path in ORG_RULES:
        Draft202012Validator(schema).validate(yaml.safe_load(path.read_text(encoding="utf-8")))


@pytest.mark.parametrize(
    "mutate, words",
    [
        (lambda t: t.replace("severity: error", "severity: fatal"), ["ORG101-require-targets.yaml", "invalid rule file"]),
        (lambda t: t[: t.index("examples:")], ["invalid rule file", "examples"]),
        (lambda t: t.replace("code: ORG101", "code: KV302"), ["KV302", "already defined"]),
        (lambda t: t.replace("summary: Every", "summary: [Every"), ["cannot read rule file"]),
    ],
    ids=["bad-severity", "no-examples", "duplicate-code", "yaml-syntax"],
)
@pytest.mark.parametrize("command", [["check"], ["rules"], ["rule", "ORG101"]])
def test_invalid_org_rule_file_is_a_configuration_error(org, mutate, words, command):
    path = org / "rules" / "ORG101-require-targets.yaml"
    path.write_text(mutate(path.read_text(encoding="utf-8")), encoding="utf-8")
    args = command + ([ORG_MANIFEST.name] if command == ["check"] else [])
    _assert_config_error(invoke(args), *words)


def test_missing_rules_dir_is_a_configuration_error(org):
    (org / "kvlint.toml").write_text('rules-dir = ["nope"]\n', encoding="utf-8")
    _assert_config_error(invoke(["check", ORG_MANIFEST.name]), "nope")


# ----------------------------------------------------------------------------- the folder itself


def test_checking_the_org_folder_skips_its_rule_and_catalog_files(org):
    """`kvlint check .` in the org folder walks past rules/ and catalog/ (rule files embed
    manifests in their examples; catalog files are not manifests) and checks the manifest."""
    report = _check(".")
    assert report["summary"]["files"] == 1, report
    assert report["diagnostics"] == [] or all(d["severity"] == "info" for d in report["diagnostics"])


def test_org_folder_from_the_repository_root_as_a_subprocess():
    done = subprocess.run(
        [sys.executable, "-m", "kvlint", "check", "--config", "examples/org/kvlint.toml", "examples/org"],
        capture_output=True, text=True, cwd=REPO_ROOT,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 file" in done.stdout
