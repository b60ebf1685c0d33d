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


@pytest.mark.parametrize("path", DEFECT_FILES, ids=lambda p: p.stem)
def test_a_defect_has_a_passing_example_on_the_release_before(path):
    """The acceptance rule of the KV8xx family: a passing example on the last catalogued release
    before the first bad one, unless the affected range starts at (or before) the engine's first
    catalogued release, where there is no release before to show."""
    from kvlint.catalog import load_catalogs

    defect = _read(path)
    specifier = SpecifierSet(defect["affected"])
    known = [Version(v) for v in load_catalogs().engines.known_versions(defect["engine"])]
    bad = [v for v in known if specifier.contains(v, prereleases=True)]
    assert bad, f"{path.name}: affected {defect['affected']} matches no catalogued {defect['engine']} release"
    before = [v for v in known if v < bad[0]]
    if not before or defect.get("no_release_before"):
        return
    passing = [e["manifest"] for e in defect["examples"] if not e["failing"]]
    assert any(re.search(rf'version: "?{re.escape(str(before[-1]))}"?\n', m) for m in passing), (
        f"{path.name}: add a passing example on {before[-1]}, the release before the first bad one ({bad[0]})")
    failing = [e["manifest"] for e in defect["examples"] if e["failing"]]
    assert any(re.search(rf'version: "?{re.escape(str(bad[0]))}"?\n', m) for m in failing), (
        f"{path.name}: add a failing example on the first bad release {bad[0]}")


def _codes(workspace, manifest: str) -> set:
    (workspace / "deploy.yaml").write_text(manifest, encoding="utf-8")
    result = invoke(["check", "--output-format", "json", "deploy.yaml"])
    assert result.exit_code in (0, 1), result.output
    return {d["code"] for d in json.loads(result.stdout)["diagnostics"]}


_GEMMA2_SKIP_FULL = """\
apiVersion: kvlint/v1
kind: Deployment
metadata:
  name: example
engine:
  name: vllm
  version: "{version}"
  attention_backend: TRITON_ATTN
hardware:
{hardware}
model:
  name: google/gemma-2-9b
kv_cache:
  dtype: {dtype}
  skip_layers: {skip}
"""


@pytest.mark.parametrize("version", ["0.25.0", "0.33.0"])
def test_v2_is_one_finding_kv608_where_the_planner_runs_and_kv807_where_it_cannot(workspace, version):
    """docs/defects.md: V2 (code reading) and KV608 (kvlint's planning arithmetic) describe one
    cause. With a GPU whose memory is known, KV608 reports it and the defect stays silent; with a
    GPU given by compute capability only, the arithmetic cannot run and the defect warns."""
    known = _GEMMA2_SKIP_FULL.format(version=version, hardware="  gpu: H100-SXM-80GB", dtype="fp8", skip="[1]")
    codes = _codes(workspace, known)
    assert "KV608" in codes and "KV807" not in codes, codes
    unknown = _GEMMA2_SKIP_FULL.format(version=version, hardware='  gpu: Custom-GPU\n  compute_capability: "9.0"',
                                       dtype="fp8", skip="[1]")
    codes = _codes(workspace, unknown)
    assert "KV807" in codes and "KV608" not in codes, codes


@pytest.mark.parametrize("skip, dtype", [("[sliding_window]", "fp8"), ("[0]", "fp8"), ("[1]", "bfloat16")])
def test_v2_needs_a_skipped_full_attention_layer_and_an_fp8_cache(workspace, skip, dtype):
    """Layer 0 of Gemma-2 slides (transformers Gemma2Config: sliding iff (i + 1) % 2), layer 1 is full."""
    manifest = _GEMMA2_SKIP_FULL.format(version="0.25.0", hardware='  gpu: Custom-GPU\n  compute_capability: "9.0"',
                                        dtype=dtype, skip=skip)
    assert "KV807" not in _codes(workspace, manifest)


_TRITON_BELOW_SM89 = """\
apiVersion: kvlint/v1
kind: Deployment
metadata:
  name: example
engine:
  name: vllm
  version: "{version}"
  attention_backend: TRITON_ATTN
hardware:
  gpu: A100-SXM-80GB
model:
  name: meta-llama/Llama-3.1-8B-Instruct
kv_cache:
  dtype: {dtype}
"""


@pytest.mark.parametrize("version", ["0.12.0", "0.23.0", "0.24.0", "0.25.1", "0.33.0"])
@pytest.mark.parametrize("dtype", ["fp8", "fp8_e4m3", "fp8_e5m2"])
def test_v6_triton_fp8_below_sm89_is_kv305_not_a_defect(workspace, version, dtype):
    """V6 (the reference's candidate) is an engine check, not a defect kvlint adds: every fp8 kind
    on TRITON_ATTN below SM89 fails, up to 0.23 compiling the kernel at warm-up ('type fp8e4nv not
    supported'; vllm issue 26431; fp8_e5m2 too, the impl views every fp8 cache as e4m3fn, v0.23.0
    triton_attn.py L596-602) and from 0.24.0 in TritonAttentionImpl.__init__ (v0.24.0
    triton_attn.py L471-481). KV305 reports it, once."""
    codes = _codes(workspace, _TRITON_BELOW_SM89.format(version=version, dtype=dtype))
    assert "KV305" in codes and not any(code.startswith("KV8") for code in codes), codes


def test_s2_fa3_e5m2_rewrite_is_kv301_not_a_defect(workspace):
    """S2 (SGLang switches fa3 to triton for fp8_e5m2 with a warning, sglang v0.5.9 server_args.py
    L1912) is catalogued behaviour (the catalog's rewrite fa3-e5m2-to-triton) that KV325 reports
    as a warning, not an error (the server starts); no KV8xx repeats it."""
    manifest = _TRITON_BELOW_SM89.format(version="0.5.9", dtype="fp8_e5m2").replace(
        "name: vllm", "name: sglang").replace("TRITON_ATTN", "fa3").replace("A100-SXM-80GB", "H100-SXM-80GB")
    codes = _codes(workspace, manifest)
    assert "KV325" in codes and "KV301" not in codes and not any(code.startswith("KV8") for code in codes), codes


def _capacity(workspace, manifest: str) -> dict:
    (workspace / "deploy.yaml").write_text(manifest, encoding="utf-8")
    result = invoke(["capacity", "--format", "json", "deploy.yaml"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)[0]


_DEEPSEEK_SKIP = """\
apiVersion: kvlint/v1
kind: Deployment
metadata:
  name: example
engine:
  name: vllm
  version: "{version}"
  attention_backend: FLASHMLA
hardware:
  gpu: H200-SXM-141GB
parallelism:
  tensor: 8
model:
  name: deepseek-ai/DeepSeek-V3
kv_cache:
  dtype: fp8
  skip_layers: {skip}
memory:
  kv_cache_memory: 20GiB
serving:
  max_model_len: 32768
"""


def test_capacity_plans_v1_as_the_release_allocates_and_names_the_defect(workspace):
    """V1: vLLM 0.19-0.25 never read the skip set in MLAAttention (v0.25.1 mla_attention.py), so the
    release allocates exactly what it allocates without one; 0.26.0 applies it (L403-410)."""
    ignored = _capacity(workspace, _DEEPSEEK_SKIP.format(version="0.25.1", skip="[0, 1]"))
    plain = _capacity(workspace, _DEEPSEEK_SKIP.format(version="0.25.1", skip="[]"))
    assert ignored["engine"]["num_blocks"] == plain["engine"]["num_blocks"]
    assert ignored["engine"]["kv_cache_tokens"] == plain["engine"]["kv_cache_tokens"]
    notes = [a for a in ignored["assumptions"] if a.startswith("known defect V1 (KV803)")]
    assert len(notes) == 1 and "fixed in 0.26.0" in notes[0], ignored["assumptions"]
    assert not any("known defect" in a for a in plain["assumptions"])
    applied = _capacity(workspace, _DEEPSEEK_SKIP.format(version="0.26.0", skip="[0, 1]"))
    assert applied["engine"]["kv_cache_tokens"] < plain["engine"]["kv_cache_tokens"]  # two layers at bf16
    assert not any("known defect" in a for a in applied["assumptions"])


@pytest.mark.parametrize("code, fixed", [("KV801", "0.28.0"), ("KV802", "0.20.1")])
def test_capacity_names_the_defects_that_change_its_figures(workspace, code, fixed):
    """V4 (int4 sliding pages sized as 8-bit) and V5 (the undercounting log line): `kvlint capacity`
    names the defect and its fixed release in its assumptions on the failing example, and not on
    the passing one on the fixed release."""
    defect = _read(next(p for p in DEFECT_FILES if _read(p)["code"] == code))
    failing = next(e for e in defect["examples"] if e["failing"])
    report = _capacity(workspace, failing["manifest"])
    notes = [a for a in report["assumptions"] if a.startswith(f"known defect {defect['id']} ({code})")]
    assert len(notes) == 1 and f"fixed in {fixed}" in notes[0], report["assumptions"]
    fixed_example = next(e for e in defect["examples"] if not e["failing"] and f'version: "{fixed}"' in e["manifest"])
    report = _capacity(workspace, fixed_example["manifest"])
    assert not any(a.startswith("known defect") for a in report["assumptions"]), report["assumptions"]


_QWEN3_NEXT_CONFIG = {  # the keys of Qwen/Qwen3-Next-80B-A3B-Instruct's config.json that matter here
    "model_type": "qwen3_next", "num_hidden_layers": 48, "full_attention_interval": 4,
    "num_attention_heads": 16, "num_key_value_heads": 2, "head_dim": 256, "hidden_size": 2048,
    "max_position_embeddings": 262144, "torch_dtype": "bfloat16",
}


def test_a_native_command_line_reaches_v3_through_speculative_config_and_the_hf_cache(workspace, monkeypatch):
    """vllm serve --speculative-config JSON (kept as engine.options.speculative_config by the native
    adapter) and a hybrid config in the local Hugging Face cache: the defect fires on the command
    line as on a manifest. transformers' Qwen3NextConfig: layer i is full attention iff
    (i + 1) % full_attention_interval == 0, so 36 of 48 layers are linear attention."""
    snapshot = workspace / "hub" / "models--Qwen--Qwen3-Next-80B-A3B-Instruct" / "snapshots" / "abc"
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text(json.dumps(_QWEN3_NEXT_CONFIG), encoding="utf-8")
    monkeypatch.setenv("HF_HUB_CACHE", str(workspace / "hub"))
    (workspace / "serve.sh").write_text(
        "#!/bin/sh\n# kvlint: gpu=H200-SXM-141GB engine-version=0.25.1\n"
        "vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct \\\n"
        "  --speculative-config '{\"method\": \"draft_model\", \"model\": \"Qwen/Qwen3-0.6B\", "
        "\"num_speculative_tokens\": 4}'\n", encoding="utf-8")
    facts = json.loads(invoke(["facts", "serve.sh"]).stdout)[0]
    assert facts["model"]["linear_layers"] == 36 and facts["model"]["hybrid_linear"] is True
    assert facts["speculative"]["method"] == "draft_model" and facts["speculative"]["model"] == "Qwen/Qwen3-0.6B"
    result = invoke(["check", "--select", "KV8", "--output-format", "json", "serve.sh"])
    assert {d["code"] for d in json.loads(result.stdout)["diagnostics"]} == {"KV805"}, result.output


@pytest.mark.parametrize("config, expected", [
    ({"layer_types": ["full_attention", "sliding_attention"]}, 0),
    ({"text_config": {"layer_types": ["linear_attention", "full_attention", "mamba"]}}, 2),
    ({"num_hidden_layers": 8, "full_attention_interval": 4}, 6),
    ({"num_hidden_layers": 8}, None),
    ({"num_hidden_layers": 8, "full_attention_interval": True}, None),
])
def test_linear_layer_count(config, expected):
    from kvlint.catalog.hf_config import linear_layer_count

    assert linear_layer_count(config) == expected


@pytest.mark.parametrize("raw", ['{"method": ', "[" * 100000, '"mtp"', 7])
def test_a_malformed_speculative_config_reads_as_unknown(workspace, raw):
    """A speculative_config that is not a JSON object (or not JSON) gives no speculative facts and
    no traceback."""
    manifest = _TRITON_BELOW_SM89.format(version="0.28.0", dtype="auto").replace("attention_backend: TRITON_ATTN", "")
    manifest = manifest.replace("  version: \"0.28.0\"\n", "  version: \"0.28.0\"\n  options:\n    speculative_config: "
                                + json.dumps(raw) + "\n")
    (workspace / "deploy.yaml").write_text(manifest, encoding="utf-8")
    result = invoke(["facts", "deploy.yaml"])
    assert result.exit_code in (0, 1), result.output
    assert json.loads(result.stdout)[0]["speculative"]["given"] is False


def test_s3_fa4_with_an_fp8_cache_is_kv301_not_a_defect(workspace):
    """S3 (FA4 has no fp8: sglang v0.5.9 flashattention_backend.py L782-786 leaves q in bf16, FA4
    asserts 'inputs must have the same dtype') is reported by KV301 from the catalog's fa4 list."""
    manifest = _TRITON_BELOW_SM89.format(version="0.5.9", dtype="fp8_e4m3").replace(
        "name: vllm", "name: sglang").replace("TRITON_ATTN", "fa4").replace("A100-SXM-80GB", "B200-180GB")
    codes = _codes(workspace, manifest)
    assert "KV301" in codes and not any(code.startswith("KV8") for code in codes), codes


def test_capacity_says_the_draft_kv_layers_are_not_counted(workspace):
    """A draft's attention layers take blocks from the same pool (that is why V3 exists); kvlint
    does not size them, and `kvlint capacity` says its figures are upper bounds then."""
    base = _TRITON_BELOW_SM89.format(version="0.28.0", dtype="fp8").replace("A100-SXM-80GB", "H100-SXM-80GB")
    plain = _capacity(workspace, base)
    drafted = _capacity(workspace, base + "speculative:\n  method: eagle3\n  num_speculative_tokens: 3\n")
    assert not any("speculative" in a for a in plain["assumptions"])
    assert [a for a in drafted["assumptions"] if "speculative-decoding draft (eagle3)" in a and "upper bounds" in a]
    assert drafted["engine"]["num_blocks"] == plain["engine"]["num_blocks"]


_ONE_GROUP = """\
apiVersion: kvlint/v1
kind: Deployment
metadata: {{name: one-group}}
engine: {{name: vllm, version: "0.19.1"}}
hardware: {{gpu: H100-SXM-80GB}}
model: {{name: meta-llama/Llama-3.1-8B-Instruct}}
kv_cache: {{dtype: auto}}
serving: {{max_model_len: {max_len}}}
"""


@pytest.mark.parametrize("max_len", [29000, 30001, 20000])
def test_v5_needs_several_kv_cache_groups(workspace, max_len):
    """V5's log line divides the blocks by the number of KV-cache groups
    (vllm/v1/core/kv_cache_utils.py v0.20.0 L1694-1698); with one group it prints every block's
    tokens, so a concurrency x max_model_len figure that differs only by block rounding is no
    under-report (a false KV802 on Llama-3.1-8B at 29,000 tokens, benchmarks/public_deployments)."""
    path = workspace / "m.yaml"
    path.write_text(_ONE_GROUP.format(max_len=max_len), encoding="utf-8")
    report = _capacity(workspace, path.read_text(encoding="utf-8"))
    assert len(report["engine"]["groups"]) == 1
    out = invoke(["check", "--output-format", "concise", "--select", "KV802", str(path)]).output
    assert "KV802" not in out, out


def test_v5_one_group_figures_do_differ_by_rounding(workspace):
    """The case above is not vacuous: at 29,000 tokens the two figures kvlint compares differ."""
    report = _capacity(workspace, _ONE_GROUP.format(max_len=29000))
    engine = report["engine"]
    assert int(engine["max_concurrency"] * 29000) != engine["kv_cache_tokens"]
