"""Hostile input, end to end through the console (docs/security.md).

Every case runs the real command and checks: it prints no traceback, exits with the documented
code, its JSON parses, and every input is byte-for-byte unchanged. A case that could hang or grow
(a FIFO, a device, a huge file, a multi-megabyte value, twenty concurrent runs) runs it in a
subprocess with a timeout (`kvlint`), and so finishes within seconds; the others run the same
click command in this process (`kvlint_here`, conftest.kvlint_in_process), without an interpreter
start per run. Risky files (FIFOs, devices, huge files, unreadable paths) are made at run time in
a temporary directory.
"""

from __future__ import annotations

import hashlib
import shutil
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Sequence

import pytest

from conftest import REPO_ROOT, VALID_MANIFEST, kvlint_in_process

TIMEOUT_S = 20  # a run that blocks on a FIFO would hit this; a normal one takes about a second
ROOT_USER = hasattr(os, "geteuid") and os.geteuid() == 0
posix_only = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs and permissions are POSIX")


def kvlint(args: Sequence[str], cwd: Path, env: Dict[str, str] = None) -> subprocess.CompletedProcess:
    environment = dict(os.environ)
    environment.pop("GITHUB_STEP_SUMMARY", None)
    environment.pop("GITHUB_ACTIONS", None)
    environment["PYTHONPATH"] = str(REPO_ROOT)
    environment.update(env or {})
    completed = subprocess.run(
        [sys.executable, "-m", "kvlint", *args], cwd=cwd, env=environment, capture_output=True,
        text=True, timeout=TIMEOUT_S, stdin=subprocess.DEVNULL,
    )
    assert "Traceback" not in completed.stderr + completed.stdout, completed.stderr
    return completed


def kvlint_here(args: Sequence[str], cwd: Path, env: Dict[str, str] = None) -> subprocess.CompletedProcess:
    """The command in this process, with the same check as `kvlint` (no traceback)."""
    completed = kvlint_in_process(args, cwd, env)
    assert "Traceback" not in completed.stderr + completed.stdout, completed.stderr
    return completed


def digest(root: Path) -> Dict[str, str]:
    """sha256 of every regular file under root (what must stay byte-for-byte unchanged)."""
    out = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink():
            out[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "kvlint.toml").write_text("# defaults\n", encoding="utf-8")
    (root / "deploy.yaml").write_text(VALID_MANIFEST, encoding="utf-8")
    return root


def diagnostics(completed: subprocess.CompletedProcess) -> List[dict]:
    return json.loads(completed.stdout)["diagnostics"]


# --- 1. never write onto an input ------------------------------------------------------------


@pytest.mark.parametrize("option", ["-o", "--sarif-file"])
def test_check_refuses_to_write_onto_a_manifest_it_reads(project: Path, option: str):
    before = digest(project)
    completed = kvlint_here(["check", "deploy.yaml", option, "deploy.yaml"], project)
    assert completed.returncode == 2
    assert completed.stderr.count("\n") == 1 and "never writes onto its input" in completed.stderr
    assert digest(project) == before


@posix_only
def test_check_refuses_hard_links_and_symlinks_to_inputs(project: Path):
    os.link(project / "deploy.yaml", project / "hard.json")
    os.symlink(project / "deploy.yaml", project / "soft.json")
    before = digest(project)
    for target in ("hard.json", "soft.json"):
        completed = kvlint_here(["check", "deploy.yaml", "-o", target], project)
        assert completed.returncode == 2, completed.stderr
        assert "is a file this run reads" in completed.stderr
    # the configuration is an input too
    completed = kvlint_here(["check", "deploy.yaml", "-o", "kvlint.toml"], project)
    assert completed.returncode == 2 and "kvlint.toml" in completed.stderr
    assert digest(project) == before
    assert os.path.islink(project / "soft.json")


def test_facts_and_convert_refuse_their_input(project: Path):
    before = digest(project)
    assert kvlint_here(["facts", "deploy.yaml", "-o", "deploy.yaml"], project).returncode == 2
    (project / "serve.sh").write_text(
        "#!/bin/sh\n# kvlint: gpu=H100-SXM-80GB engine-version=0.19.1\n"
        "vllm serve meta-llama/Llama-3.1-8B-Instruct --kv-cache-dtype fp8\n", encoding="utf-8")
    before = digest(project)
    assert kvlint_here(["convert", "serve.sh", "-o", "serve.sh"], project).returncode == 2
    assert digest(project) == before


def test_check_refuses_to_write_onto_an_ablation_base(project: Path):
    (project / "ablation.yaml").write_text(
        "apiVersion: kvlint/v1\nkind: Ablation\nmetadata: {name: a}\nbase: deploy.yaml\n"
        "variants:\n  - name: bf16\n", encoding="utf-8")
    before = digest(project)
    completed = kvlint_here(["check", "ablation.yaml", "--sarif-file", "deploy.yaml"], project)
    assert completed.returncode == 2 and "is a file this run reads" in completed.stderr
    assert digest(project) == before


@posix_only
def test_ablate_refuses_a_hard_link_to_its_deployment(project: Path):
    os.link(project / "deploy.yaml", project / "ablation.yaml")
    before = digest(project)
    completed = kvlint_here(["ablate", "deploy.yaml", "--out", "ablation.yaml", "--force"], project)
    assert completed.returncode == 2 and "never writes onto its input" in completed.stderr
    assert digest(project) == before


def test_output_is_written_atomically_and_keeps_an_existing_mode(project: Path):
    report = project / "report.json"
    report.write_text("old", encoding="utf-8")
    os.chmod(report, 0o640)
    completed = kvlint_here(["check", "deploy.yaml", "--output-format", "json", "-o", "report.json"], project)
    assert completed.returncode == 0, completed.stderr
    json.loads(report.read_text(encoding="utf-8"))
    assert (report.stat().st_mode & 0o777) == 0o640
    assert not [p for p in project.iterdir() if p.name.endswith(".tmp")]  # no temporary left behind


def test_a_failed_write_is_one_line_and_exit_2(project: Path):
    completed = kvlint_here(["check", "deploy.yaml", "-o", "missing-dir/report.txt"], project)
    assert completed.returncode == 2 and completed.stderr.startswith("kvlint: error: cannot write")


# --- 2. bounded reads ------------------------------------------------------------------------


@posix_only
def test_a_fifo_named_on_the_command_line_is_a_finding_not_a_hang(project: Path):
    os.mkfifo(project / "pipe.yaml")
    completed = kvlint(["check", "pipe.yaml", "deploy.yaml", "--output-format", "json"], project)
    assert completed.returncode == 1
    found = diagnostics(completed)
    assert [(d["code"], d["file"]) for d in found] == [("KV006", "pipe.yaml")]
    assert "a FIFO" in found[0]["message"]


@posix_only
def test_a_walk_reports_fifos_dangling_links_and_unreadable_paths_and_goes_on(project: Path):
    os.mkfifo(project / "pipe.yaml")
    os.symlink(project / "gone.yaml", project / "dangling.yaml")
    secret = project / "secret"
    secret.mkdir()
    (secret / "inner.yaml").write_text(VALID_MANIFEST, encoding="utf-8")
    locked = project / "locked.yaml"
    locked.write_text(VALID_MANIFEST, encoding="utf-8")
    os.chmod(secret, 0)
    os.chmod(locked, 0)
    try:
        completed = kvlint(["check", ".", "--output-format", "json"], project)
    finally:
        os.chmod(secret, 0o755)
        os.chmod(locked, 0o644)
    assert completed.returncode == 1, completed.stderr
    found = {d["file"]: d for d in diagnostics(completed)}
    assert found["pipe.yaml"]["code"] == "KV006"
    assert found["dangling.yaml"]["code"] == "KV006" and "dangling symbolic link" in found["dangling.yaml"]["message"]
    if not ROOT_USER:  # root reads through permissions
        assert found["secret"]["code"] == "KV006" and "Permission denied" in found["secret"]["message"]
        assert found["locked.yaml"]["code"] == "KV006" and "Permission denied" in found["locked.yaml"]["message"]
    assert "deploy.yaml" not in found  # the readable manifest was still checked, and is clean
    assert json.loads(completed.stdout)["summary"]["files"] >= 3


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_a_device_as_manifest_config_or_ablation_base_is_refused(project: Path):
    completed = kvlint(["check", "/dev/zero", "--output-format", "json"], project)
    assert completed.returncode == 1 and diagnostics(completed)[0]["code"] == "KV006"
    completed = kvlint(["check", "deploy.yaml", "--config", "/dev/zero"], project)
    assert completed.returncode == 2 and "a character device" in completed.stderr
    assert completed.stderr.count("\n") == 1
    (project / "kvlint.toml").write_text('allowed-roots = ["/dev"]\n', encoding="utf-8")  # else KV209
    (project / "ablation.yaml").write_text(
        "apiVersion: kvlint/v1\nkind: Ablation\nmetadata: {name: a}\nbase: /dev/zero\n"
        "variants:\n  - name: bf16\n    overrides: {}\n", encoding="utf-8")
    completed = kvlint(["check", "ablation.yaml", "--output-format", "json"], project)
    assert completed.returncode == 1
    assert any("a character device" in d["message"] for d in diagnostics(completed))


def test_a_huge_file_is_kv004_without_reading_it_all(project: Path):
    huge = project / "huge.yaml"
    with open(huge, "wb") as handle:  # sparse: 2 GiB that cost nothing on disk
        handle.write(b"apiVersion: kvlint/v1\n")
        handle.truncate(2 * 1024 ** 3)
    completed = kvlint(["check", "huge.yaml", "--output-format", "json"], project)
    assert completed.returncode == 1
    (finding,) = diagnostics(completed)
    assert finding["code"] == "KV004" and "byte limit" in finding["message"]


def test_capacity_and_facts_report_an_unreadable_file_as_a_problem(project: Path):
    if not hasattr(os, "mkfifo"):
        pytest.skip("POSIX")
    os.mkfifo(project / "pipe.yaml")
    completed = kvlint(["facts", "pipe.yaml", "deploy.yaml"], project)
    assert completed.returncode == 1 and "KV006" in completed.stderr
    assert len(json.loads(completed.stdout)) == 1


# --- 3. output escapes what it echoes --------------------------------------------------------

HOSTILE_NAME = "evil\\u001b[2J\\r\\n::error file=x::pwned\\u202e"  # YAML double-quoted escapes


def hostile_manifest(long_value: bool = False) -> str:
    text = VALID_MANIFEST.replace(
        "name: meta-llama/Llama-3.1-8B-Instruct", f'name: "{HOSTILE_NAME}"'
    )
    if long_value:
        text = text.replace("  dtype: auto", "  dtype: auto" + " " * 5000 + "# long comment " + "x" * 5000)
        text = text.replace("llama8b-bf16-h100", "llama8b-" + "y" * 10000)
    return text


@pytest.mark.parametrize("fmt", ["full", "concise", "github"])
def test_text_formats_escape_control_characters_and_never_start_a_workflow_command(project: Path, fmt: str):
    (project / "deploy.yaml").write_text(hostile_manifest(), encoding="utf-8")
    completed = kvlint_here(["check", "deploy.yaml", "--output-format", fmt], project)
    assert completed.returncode == 0, completed.stderr  # KV203 (unknown model) is a warning
    out = completed.stdout
    assert "\x1b" not in out and "\r" not in out and "\u202e" not in out
    for line in out.splitlines():
        stripped = line.lstrip()
        if fmt == "github" and stripped.startswith(("::error ", "::warning ", "::notice ")):
            # kvlint's own annotation: the input sits in its escaped message, on this one line
            assert stripped.startswith("::warning file=deploy.yaml,"), line
            continue
        assert not stripped.startswith("::"), line
    assert "pwned" in out  # echoed, escaped


def test_long_lines_are_cut_around_the_caret(project: Path):
    (project / "deploy.yaml").write_text(hostile_manifest(long_value=True), encoding="utf-8")
    completed = kvlint_here(["check", "deploy.yaml"], project)
    assert completed.returncode in (0, 1), completed.stderr
    assert max(len(line) for line in completed.stdout.splitlines() if " | " in line) < 200
    carets = [line for line in completed.stdout.splitlines() if line.strip().startswith("|") and "^" in line]
    assert carets


def test_json_and_sarif_parse_and_sarif_uris_are_percent_encoded(project: Path):
    (project / "my deploy#1%.yaml").write_text(hostile_manifest(), encoding="utf-8")
    completed = kvlint_here(["check", "my deploy#1%.yaml", "--output-format", "json", "--sarif-file", "out.sarif"], project)
    assert completed.returncode == 0, completed.stderr
    assert any(d["file"] == "my deploy#1%.yaml" for d in json.loads(completed.stdout)["diagnostics"])
    sarif = json.loads((project / "out.sarif").read_text(encoding="utf-8"))
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in sarif["runs"][0]["results"]}
    assert uris == {"my%20deploy%231%25.yaml"}


# --- 4. numbers are numbers ------------------------------------------------------------------


def manifest_with(old: str, new: str) -> str:
    assert old in VALID_MANIFEST
    return VALID_MANIFEST.replace(old, new)


def test_nan_and_infinities_are_findings_and_never_reach_the_rules(project: Path):
    (project / "deploy.yaml").write_text(manifest_with(
        "  dtype: auto\n", "  dtype: auto\n  block_size: .nan\ntargets:\n  max_scale_overhead: -.inf\n  min_concurrency: 1e999\n"),
        encoding="utf-8")
    completed = kvlint_here(["check", "deploy.yaml", "--output-format", "json"], project)
    assert completed.returncode == 1
    found = diagnostics(completed)
    finite = {d["message"].split(":")[0] for d in found if "not a finite number" in d["message"]}
    assert finite == {"/kv_cache/block_size", "/targets/max_scale_overhead", "/targets/min_concurrency"}
    assert all(d["code"] == "KV106" for d in found if "finite" in d["message"])
    assert not [d for d in found if "inf" in d["message"].replace("info", "") and "finite" not in d["message"]]


def test_nan_in_the_configuration_is_a_configuration_error(project: Path):
    (project / "kvlint.toml").write_text("max-scale-overhead = nan\n", encoding="utf-8")
    completed = kvlint_here(["check", "deploy.yaml"], project)
    assert completed.returncode == 2
    assert completed.stderr.strip().endswith("max-scale-overhead: nan is not a finite number")


def test_huge_integers_and_version_components_are_findings(project: Path):
    (project / "a.yaml").write_text(manifest_with("  dtype: auto\n", "  dtype: auto\n  block_size: " + "9" * 5000 + "\n"),
                                    encoding="utf-8")
    (project / "b.yaml").write_text(manifest_with('version: "0.19.1"', 'version: "0.' + "9" * 5000 + '.1"'), encoding="utf-8")
    (project / "c.yaml").write_text(manifest_with('version: "0.19.1"', 'version: "0.19.99999999999999999999999"'),
                                    encoding="utf-8")
    completed = kvlint_here(["check", "a.yaml", "b.yaml", "c.yaml", "--output-format", "json"], project)
    assert completed.returncode == 1, completed.stderr
    files = {d["file"] for d in diagnostics(completed)}
    assert files == {"a.yaml", "b.yaml", "c.yaml"}


def test_yaml_1_1_sexagesimal_and_yes_no_are_strings(project: Path):
    (project / "deploy.yaml").write_text(
        manifest_with('version: "0.19.1"', "version: 1:30").replace("name: llama8b-bf16-h100", "name: yes"),
        encoding="utf-8")
    completed = kvlint_here(["check", "deploy.yaml", "--output-format", "json"], project)
    found = diagnostics(completed)
    assert not [d for d in found if d["code"] == "KV103"], found  # `yes` is the string "yes"
    assert any("'1:30'" in d["message"] for d in found)  # not 90


def test_loader_reads_yaml_1_1_only_scalars_as_strings():
    from kvlint.load import load_bytes

    loaded = load_bytes(b"a: 1:30\nb: yes\nc: off\nd: true\ne: 1.5:00\nf: 12\ng: False\n", "x.yaml")
    assert loaded.documents[0].data == {"a": "1:30", "b": "yes", "c": "off", "d": True, "e": "1.5:00", "f": 12, "g": False}


# --- 5. paths stay in the project ------------------------------------------------------------

HF_CONFIG = json.dumps({
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
    "num_attention_heads": 32, "num_key_value_heads": 8, "num_hidden_layers": 32, "head_dim": 128,
    "torch_dtype": "bfloat16", "max_position_embeddings": 131072, "vocab_size": 128256,
})


def with_model_config(path: str) -> str:
    return manifest_with("  name: meta-llama/Llama-3.1-8B-Instruct\n",
                         f"  name: meta-llama/Llama-3.1-8B-Instruct\n  config: {json.dumps(path)}\n")


def kv209(project: Path, *names: str) -> Dict[str, List[str]]:
    completed = kvlint_here(["check", *names, "--output-format", "json"], project)
    assert completed.returncode in (0, 1), completed.stderr
    out: Dict[str, List[str]] = {}
    for d in diagnostics(completed):
        if d["code"] == "KV209":
            out.setdefault(d["file"], []).append(d["message"])
    return out


def test_model_config_and_ablation_base_must_stay_in_the_project(project: Path, tmp_path: Path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "config.json").write_text(HF_CONFIG, encoding="utf-8")
    (outside / "base.yaml").write_text(VALID_MANIFEST, encoding="utf-8")
    (project / "models").mkdir()
    (project / "models" / "config.json").write_text(HF_CONFIG, encoding="utf-8")
    if hasattr(os, "symlink"):
        os.symlink(outside, project / "escape")
    (project / "inside.yaml").write_text(with_model_config("models/config.json"), encoding="utf-8")
    (project / "absolute.yaml").write_text(with_model_config(str(outside / "config.json")), encoding="utf-8")
    (project / "dotdot.yaml").write_text(with_model_config("../outside/config.json"), encoding="utf-8")
    (project / "link.yaml").write_text(with_model_config("escape/config.json"), encoding="utf-8")
    (project / "ablation.yaml").write_text(
        "apiVersion: kvlint/v1\nkind: Ablation\nmetadata: {name: a}\nbase: ../outside/base.yaml\n"
        "variants:\n  - name: bf16\n", encoding="utf-8")
    found = kv209(project, "inside.yaml", "absolute.yaml", "dotdot.yaml", "link.yaml", "ablation.yaml")
    assert set(found) == {"absolute.yaml", "dotdot.yaml", "link.yaml", "ablation.yaml"}
    assert "is an absolute path" in found["absolute.yaml"][0]
    assert "leads outside the project" in found["dotdot.yaml"][0]
    assert "the ablation's base" in found["ablation.yaml"][0]
    # only what the manifest wrote is quoted, never where a path resolved to on this machine
    assert not any(str(tmp_path) in message for name in ("dotdot.yaml", "link.yaml", "ablation.yaml")
                   for message in found[name])

    # allowed-roots opens a directory explicitly
    (project / "kvlint.toml").write_text('allowed-roots = ["../outside"]\n', encoding="utf-8")
    assert kv209(project, "absolute.yaml", "dotdot.yaml", "link.yaml", "ablation.yaml") == {}


def test_capacity_reports_a_path_outside_the_project_as_a_problem(project: Path):
    (project / "deploy.yaml").write_text(with_model_config("/etc/hostname"), encoding="utf-8")
    completed = kvlint_here(["capacity", "deploy.yaml"], project)
    assert completed.returncode == 1 and "KV209" in completed.stderr


# --- 7. concurrent runs on a fresh cache -----------------------------------------------------


def test_twenty_concurrent_runs_on_a_fresh_cache_give_identical_output(project: Path, tmp_path: Path):
    home = tmp_path / "home"
    home.mkdir()
    (project / "broken.yaml").write_text(manifest_with("  dtype: auto\n", "  dtype: fp8_e5m2\n  block_size: 7\n"),
                                         encoding="utf-8")
    environment = dict(os.environ, HOME=str(home), PYTHONPATH=str(REPO_ROOT))
    for key in ("KVLINT_NO_CACHE", "KVLINT_CACHE_DIR", "XDG_CACHE_HOME", "GITHUB_STEP_SUMMARY", "GITHUB_ACTIONS"):
        environment.pop(key, None)
    command = [sys.executable, "-m", "kvlint", "check", ".", "--output-format", "json"]
    processes = [
        subprocess.Popen(command, cwd=project, env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         stdin=subprocess.DEVNULL, text=True)
        for _ in range(20)
    ]
    results = []
    for process in processes:
        out, err = process.communicate(timeout=120)
        assert "Traceback" not in err, err
        results.append((process.returncode, out, err))
    assert len({result for result in results}) == 1, {r[0] for r in results}
    code, out, _ = results[0]
    assert code == 1 and json.loads(out)["diagnostics"]
    assert list((home / ".cache" / "kvlint").iterdir())  # the cache was written
    # and a run reading the now-warm cache agrees
    again = subprocess.run(command, cwd=project, env=environment, capture_output=True, text=True, timeout=60)
    assert (again.returncode, again.stdout) == (code, out)


# --- 1b. outputs never land on what the run reads, wherever it came from --------------------


def test_outputs_refuse_a_model_config_the_manifest_reads(project: Path):
    (project / "models").mkdir()
    (project / "models" / "config.json").write_text(HF_CONFIG, encoding="utf-8")
    (project / "deploy.yaml").write_text(with_model_config("models/config.json"), encoding="utf-8")
    if hasattr(os, "link"):
        os.link(project / "models" / "config.json", project / "hard.json")
    before = digest(project)
    for command in (["check", "deploy.yaml", "-o", "models/config.json"],
                    ["check", "deploy.yaml", "--sarif-file", "models/config.json"],
                    ["capacity", "deploy.yaml", "-o", "models/config.json"],
                    ["facts", "deploy.yaml", "-o", "hard.json"]):
        completed = kvlint_here(command, project)
        assert completed.returncode == 2, (command, completed.stderr)
        assert "never writes onto its input" in completed.stderr and completed.stderr.count("\n") == 1
    assert digest(project) == before


@pytest.mark.skipif(not shutil.which("git"), reason="needs git")
def test_diff_refuses_to_write_onto_a_manifest_it_reads(project: Path):
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", "-c", "commit.gpgsign=false"]
    subprocess.run([*git, "init", "-q"], cwd=project, check=True)
    subprocess.run([*git, "add", "."], cwd=project, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "base"], cwd=project, check=True)
    before = digest(project)
    completed = kvlint_here(["diff", "--base", "HEAD", "deploy.yaml", "-o", "deploy.yaml"], project)
    assert completed.returncode == 2 and "never writes onto its input" in completed.stderr, completed.stderr
    assert digest(project) == before


@pytest.fixture
def org_project(tmp_path: Path) -> Path:
    """examples/org (a rules-dir and a catalog-dir) with a warm parsed-data cache: the data
    files are then not even read by the run that must still refuse to overwrite them."""
    root = tmp_path / "org"
    shutil.copytree(REPO_ROOT / "examples" / "org", root)
    return root


@pytest.mark.parametrize("target", [
    "rules/ORG101-require-targets.yaml",  # an organisation rule
    "catalog/gpus.yaml",  # a catalog file
    "rules/new-report.txt",  # a new file in a rules-dir would be read as data by the next run
    "catalog/engines/report.json",
])
def test_outputs_refuse_rules_dir_and_catalog_dir(org_project: Path, tmp_path: Path, target: str):
    cache = {"KVLINT_CACHE_DIR": str(tmp_path / "cache")}
    manifest = "llama8b-ft-acme-x1.yaml"
    assert kvlint_here(["check", manifest], org_project, cache).returncode in (0, 1)  # warms the cache
    before = digest(org_project)
    for option in ("-o", "--sarif-file"):
        completed = kvlint_here(["check", manifest, option, target], org_project, cache)
        assert completed.returncode == 2, completed.stderr
        assert "never writes onto its input" in completed.stderr and completed.stderr.count("\n") == 1
    completed = kvlint_here(["capacity", manifest, "-o", target], org_project, cache)
    assert completed.returncode == 2 and "never writes onto its input" in completed.stderr
    assert digest(org_project) == before


@posix_only
def test_outputs_refuse_hard_and_symbolic_links_into_a_catalog_dir(org_project: Path, tmp_path: Path):
    os.link(org_project / "catalog" / "gpus.yaml", org_project / "gpus-link.yaml.out")
    os.symlink(org_project / "rules" / "ORG101-require-targets.yaml", org_project / "rule-link.out")
    before = digest(org_project)
    for target in ("gpus-link.yaml.out", "rule-link.out"):
        completed = kvlint_here(["check", "llama8b-ft-acme-x1.yaml", "-o", target], org_project,
                           {"KVLINT_CACHE_DIR": str(tmp_path / "cache")})
        assert completed.returncode == 2 and "never writes onto its input" in completed.stderr, completed.stderr
    assert digest(org_project) == before


def test_capacity_from_log_refuses_a_fifo_and_an_output_onto_the_log(project: Path):
    log = project / "startup.log"
    log.write_text("INFO: GPU KV cache size: 1,000 tokens\n", encoding="utf-8")
    before = digest(project)
    completed = kvlint_here(["capacity", "deploy.yaml", "--from-log", "startup.log", "-o", "startup.log"], project)
    assert completed.returncode == 2 and "never writes onto its input" in completed.stderr, completed.stderr
    assert digest(project) == before
    if hasattr(os, "mkfifo"):
        os.mkfifo(project / "pipe.log")
        completed = kvlint(["capacity", "deploy.yaml", "--from-log", "pipe.log"], project)
        assert completed.returncode == 2 and "a FIFO" in completed.stderr and completed.stderr.count("\n") == 1


def test_an_ablation_base_files_own_model_config_must_stay_in_the_project(project: Path, tmp_path: Path):
    """The base file's model.config resolves relative to the base file, and gets the same KV209."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "config.json").write_text(HF_CONFIG, encoding="utf-8")
    (project / "bases" / "models").mkdir(parents=True)
    (project / "bases" / "models" / "config.json").write_text(HF_CONFIG, encoding="utf-8")
    (project / "bases" / "inside.yaml").write_text(with_model_config("models/config.json"), encoding="utf-8")
    (project / "bases" / "dotdot.yaml").write_text(with_model_config("../../outside/config.json"), encoding="utf-8")
    (project / "bases" / "absolute.yaml").write_text(with_model_config(str(outside / "config.json")), encoding="utf-8")
    for name in ("inside", "dotdot", "absolute"):
        (project / f"ablation-{name}.yaml").write_text(
            f"apiVersion: kvlint/v1\nkind: Ablation\nmetadata: {{name: a}}\nbase: bases/{name}.yaml\n"
            "variants:\n  - name: bf16\n", encoding="utf-8")
    found = kv209(project, "ablation-inside.yaml", "ablation-dotdot.yaml", "ablation-absolute.yaml")
    assert set(found) == {"ablation-dotdot.yaml", "ablation-absolute.yaml"}, found
    assert "model.config of the ablation's base 'bases/dotdot.yaml'" in found["ablation-dotdot.yaml"][0]
    assert "leads outside the project" in found["ablation-dotdot.yaml"][0]
    assert "is an absolute path" in found["ablation-absolute.yaml"][0]
    assert not any(str(tmp_path) in m for m in found["ablation-dotdot.yaml"])
    # capacity reports it as a problem too (exit 1), and allowed-roots opens the directory
    completed = kvlint_here(["capacity", "ablation-dotdot.yaml"], project)
    assert completed.returncode == 1 and "KV209" in completed.stderr, completed.stderr
    (project / "kvlint.toml").write_text('allowed-roots = ["../outside"]\n', encoding="utf-8")
    assert kv209(project, "ablation-dotdot.yaml", "ablation-absolute.yaml") == {}


def test_a_multi_megabyte_model_name_is_no_hang_in_did_you_mean(project: Path):
    """difflib against every catalog id is superlinear in the name; a 3 MB name gets no suggestion."""
    name = "org/" + "a=" * 1_500_000
    (project / "deploy.yaml").write_text(manifest_with("name: meta-llama/Llama-3.1-8B-Instruct", f"name: {name}"),
                                         encoding="utf-8")
    completed = kvlint(["check", "deploy.yaml", "--output-format", "json"], project)  # TIMEOUT_S is the hang guard
    (finding,) = [d for d in diagnostics(completed) if d["code"] == "KV203"]
    assert "characters cut" in finding["message"] and len(finding["message"]) < 1000


@pytest.mark.parametrize("value", [
    '"1' + " " * 2_000_000 + '!"',  # two adjacent \s* in the old size pattern: quadratic
    '"' + " " * 2_000_000 + '"',
    '"' + "9" * 400 + 'GiB"',  # float() of it is inf: int(inf) raised OverflowError
    "9" * 400,
])
def test_hostile_size_values_are_findings_in_bounded_time(project: Path, value: str):
    (project / "deploy.yaml").write_text(
        manifest_with("  gpu: H100-SXM-80GB\n", f"  gpu: H100-SXM-80GB\n  memory: {value}\n"), encoding="utf-8")
    completed = kvlint(["check", "deploy.yaml", "--output-format", "json"], project)  # TIMEOUT_S: the hang guard
    assert completed.returncode == 1, completed.stderr
    assert [d["pointer"] for d in diagnostics(completed) if d["severity"] == "error"] == ["/hardware/memory"]


def test_size_strings_still_parse_as_documented():
    from kvlint.units import parse_size

    assert parse_size(" 80 GiB ") == 80 * 2 ** 30 and parse_size("141GB") == 141 * 10 ** 9
    assert parse_size("1.5 TiB") == 3 * 2 ** 39 and parse_size("12") == 12
    assert parse_size("80 gb") is None and parse_size("9" * 400 + "GiB") is None
