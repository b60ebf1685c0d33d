"""Gate semantics: `--strict` / `strict = true` fails a run in which a check could not run, and
`kvlint capacity` exits as `kvlint check` does on the capacity gate (KV6xx)."""

from __future__ import annotations

import json
import re


from conftest import REPO_ROOT, VALID_MANIFEST

from kvlint.findings import COULD_NOT_RUN

# A Kubernetes workload that names no GPU: KV207 (a warning) says the GPU checks did not run.
NO_GPU = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: llama8b
spec:
  template:
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.19.1
          args: ["--model", "meta-llama/Llama-3.1-8B-Instruct"]
"""
KV207_AT = "KV207 deployment-fact-missing (k8s.yaml:9:11)"
# A manifest for a GPU the catalog does not know: KV202, a warning.
UNKNOWN_GPU = VALID_MANIFEST.replace("gpu: H100-SXM-80GB", "gpu: Z9000-1TB")
TOO_LONG = (REPO_ROOT / "tests" / "fixtures" / "ci" / "llama8b-head.yaml").read_text(encoding="utf-8")  # KV603
FITS = (REPO_ROOT / "tests" / "fixtures" / "ci" / "llama8b-base.yaml").read_text(encoding="utf-8")


def test_could_not_run_codes_are_rules_that_say_so():
    files = {p.name.split("-", 1)[0]: p for p in (REPO_ROOT / "rules").glob("KV*.yaml")}
    assert set(COULD_NOT_RUN) <= set(files)
    for code in COULD_NOT_RUN:  # none is an error already: --strict is what makes them fail
        assert re.search(r"^severity: (warning|info)$", files[code].read_text(encoding="utf-8"), flags=re.M), code


def test_without_strict_a_check_that_could_not_run_passes(workspace, write, cli):
    write("k8s.yaml", NO_GPU)
    result = cli(["check", "--output-format", "concise", "k8s.yaml"])
    assert result.exit_code == 0, result.output
    assert "KV207 [warning]" in result.stdout and "could not run (--strict" not in result.output


def test_strict_fails_and_the_summary_names_the_checks(workspace, write, cli):
    write("k8s.yaml", NO_GPU)
    result = cli(["check", "--strict", "--output-format", "concise", "k8s.yaml"])
    assert result.exit_code == 1, result.output
    lines = result.stdout.splitlines()
    assert lines[-2] == "Found 0 errors, 1 warning, 0 infos in 1 file (1 document)."
    assert lines[-1] == f"1 check could not run (--strict fails on them): {KV207_AT}"


def test_strict_from_the_configuration_and_no_strict_overrides_it(workspace, write, cli):
    write("kvlint.toml", "strict = true\n")
    write("k8s.yaml", NO_GPU)
    assert cli(["check", "k8s.yaml"]).exit_code == 1
    assert cli(["check", "--no-strict", "k8s.yaml"]).exit_code == 0
    write("kvlint.toml", 'strict = "yes"\n')  # a configuration error, exit 2
    bad = cli(["check", "k8s.yaml"])
    assert bad.exit_code == 2 and "strict" in bad.stderr


def test_strict_in_pyproject(workspace, write, cli):
    (workspace / "kvlint.toml").unlink()
    write("pyproject.toml", "[tool.kvlint]\nstrict = true\n")
    write("m.yaml", UNKNOWN_GPU)
    result = cli(["check", "--output-format", "concise", "m.yaml"])
    assert result.exit_code == 1, result.output
    assert "could not run (--strict fails on them): KV202 unknown-gpu (m.yaml:" in result.stdout


def test_strict_keeps_json_as_documented_and_says_it_on_stderr(workspace, write, cli):
    write("k8s.yaml", NO_GPU)
    result = cli(["check", "--strict", "--output-format", "json", "k8s.yaml"])
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert set(report) == {"version", "summary", "diagnostics"}
    assert result.stderr == f"kvlint: 1 check could not run (--strict fails on them): {KV207_AT}\n"


def test_strict_passes_a_clean_run_and_exit_zero_still_wins(workspace, write, cli):
    write("m.yaml", VALID_MANIFEST)
    assert cli(["check", "--strict", "m.yaml"]).exit_code == 0
    write("k8s.yaml", NO_GPU)
    assert cli(["check", "--strict", "--exit-zero", "k8s.yaml"]).exit_code == 0


def test_a_suppressed_could_not_run_finding_does_not_fail(workspace, write, cli):
    write("k8s.yaml", NO_GPU)
    assert cli(["check", "--strict", "--ignore", "KV207", "k8s.yaml"]).exit_code == 0


def test_strict_names_at_most_ten_and_counts_the_rest(workspace, write, cli):
    for i in range(12):
        write(f"d{i:02}/k8s.yaml", NO_GPU)
    result = cli(["check", "--strict", "--output-format", "concise", "."])
    assert result.exit_code == 1
    last = result.stdout.splitlines()[-1]
    assert last.startswith("12 checks could not run (--strict fails on them): KV207 deployment-fact-missing (d00/k8s.yaml:9:11), ")
    assert last.endswith(", and 2 more") and last.count("KV207") == 10


# --- kvlint capacity's exit code: the capacity gate, as check -----------------------------------


def test_capacity_exits_one_when_one_sequence_does_not_fit(workspace, write, cli):
    write("long.yaml", TOO_LONG)
    result = cli(["capacity", "long.yaml"])
    assert result.exit_code == 1, result.output
    assert "Per token" in result.stdout  # the figures are still printed
    assert result.stderr == ("kvlint capacity: long.yaml:19:18: KV603 one sequence of 131,072 tokens needs 8.00 GiB of KV "
                             "cache but the pool holds 4.00 GiB per GPU (65,536 tokens)\n")
    assert cli(["check", "long.yaml"]).exit_code == 1  # consistent with check
    assert cli(["capacity", "--exit-zero", "long.yaml"]).exit_code == 0


def test_capacity_exits_zero_when_the_plan_holds(workspace, write, cli):
    write("ok.yaml", FITS)
    result = cli(["capacity", "--format", "json", "ok.yaml"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)[0]["engine"]["fits_one_sequence"] is True


def test_capacity_target_missed_fails_and_ignore_is_respected(workspace, write, cli):
    write("plan.yaml", (REPO_ROOT / "examples" / "broken" / "plan-overstates-capacity.yaml").read_text(encoding="utf-8"))
    result = cli(["capacity", "plan.yaml"])
    assert result.exit_code == 1 and ": KV602 the plan assumes 4,000,000 KV tokens" in result.stderr
    write("kvlint.toml", 'ignore = ["KV602"]\n')
    assert cli(["capacity", "plan.yaml"]).exit_code == 0
