"""The hostile-input acceptance corpus (docs/security.md): one case or more for each class of the
attack that was tried on kvlint, run through the console under the same checks each time:

- it finishes (a subprocess timeout is the hang guard) under a 2 GiB address-space limit;
- no traceback; the exit code documented for it;
- `check` prints parseable JSON and writes parseable SARIF;
- every input file is byte-for-byte unchanged.

Cases whose input is a few lines and whose point is the verdict (a non-finite number, the rule
selection, an ablation's base) run the same click command in this process (`in_process=True`,
conftest.kvlint_in_process) under the same checks but the timeout and the memory limit: those
guard against hangs and growth these inputs cannot cause, and an interpreter start per run costs
about half a second of CPU.

The risky inputs (FIFOs, /dev/zero on stdin, deep and huge JSON, a damaged cache) are made at
run time. Classes covered elsewhere are named at the end of this file.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence

import pytest

from conftest import REPO_ROOT, VALID_MANIFEST, kvlint_in_process
from test_hostile_inputs import HF_CONFIG, digest, with_model_config

TIMEOUT_S = 30
MEMORY_LIMIT = 2 << 30
posix_only = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def run(project: Path, args: Sequence[str], env: Optional[Dict[str, str]] = None, stdin=subprocess.DEVNULL,
        in_process: bool = False):
    if in_process:
        assert stdin is subprocess.DEVNULL
        completed = kvlint_in_process(args, project, {"KVLINT_NO_CACHE": None, **(env or {})})
        assert "Traceback" not in completed.stdout + completed.stderr, completed.stderr[-2000:]
        assert "internal error" not in completed.stderr, completed.stderr
        return completed
    environment = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    for key in ("GITHUB_STEP_SUMMARY", "GITHUB_ACTIONS"):
        environment.pop(key, None)
    environment.update(env or {})
    completed = subprocess.run([sys.executable, "-m", "kvlint", *args], cwd=project, env=environment,
                               capture_output=True, text=True, timeout=TIMEOUT_S, stdin=stdin,
                               preexec_fn=_limit_memory)
    assert "Traceback" not in completed.stdout + completed.stderr, completed.stderr[-2000:]
    assert "internal error" not in completed.stderr, completed.stderr
    return completed


def check(project: Path, target: str, expected_exit: int, tmp_path: Path, stdin=subprocess.DEVNULL,
          env: Optional[Dict[str, str]] = None, in_process: bool = False) -> List[dict]:
    """`kvlint check` with JSON on stdout and SARIF to a file outside the project: the exit code,
    both documents parse, the inputs are unchanged. Returns the diagnostics."""
    before = digest(project)
    sarif = tmp_path / "out.sarif"
    completed = run(project, ["check", target, "--output-format", "json", "--sarif-file", str(sarif)], env, stdin,
                    in_process)
    assert completed.returncode == expected_exit, (completed.returncode, completed.stderr, completed.stdout[:2000])
    report = json.loads(completed.stdout)
    assert json.loads(sarif.read_text(encoding="utf-8"))["version"] == "2.1.0"
    assert digest(project) == before
    return report["diagnostics"]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "models").mkdir(parents=True)
    (root / "kvlint.toml").write_text("# defaults\n", encoding="utf-8")
    (root / "deploy.yaml").write_text(VALID_MANIFEST, encoding="utf-8")
    return root


def unknown_model_with_config(project: Path, config_text: Optional[str], name: str = "config.json") -> None:
    """deploy.yaml names a model outside the catalog, so its geometry must come from model.config."""
    if config_text is not None:
        (project / "models" / name).write_text(config_text, encoding="utf-8")
    (project / "deploy.yaml").write_text(
        with_model_config(f"models/{name}").replace("meta-llama/Llama-3.1-8B-Instruct", "acme/private-model"),
        encoding="utf-8")


def kv203_reason(found: List[dict]) -> str:
    (finding,) = [d for d in found if d["code"] == "KV203"]
    return finding["message"]


def stated_config_reason(found: List[dict]) -> str:
    """The KV211 error a model.config the manifest names and kvlint cannot read or use gets (the
    stated-facts policy, docs/security.md); KV203 (a warning: the model is unknown) says it too."""
    (finding,) = [d for d in found if d["code"] == "KV211"]
    assert finding["severity"] == "error"
    assert finding["message"] in kv203_reason(found)
    return finding["message"]


# --- hangs under the size limit ---------------------------------------------------------------


def test_thousands_of_kvlint_comment_lines(project: Path, tmp_path: Path):
    (project / "deploy.yaml").write_text(
        VALID_MANIFEST + "".join(f"# kvlint: ignore[KV101] -- and kvlint: {i}\n" for i in range(20_000)),
        encoding="utf-8")
    found = check(project, "deploy.yaml", 0, tmp_path)  # every suppression is unused, and says so (KV901)
    assert len(found) == 20_000 and {d["code"] for d in found} == {"KV901"}


def test_a_config_json_with_ten_million_layers(project: Path, tmp_path: Path):
    unknown_model_with_config(project, HF_CONFIG.replace('"num_hidden_layers": 32', '"num_hidden_layers": 10000000'))
    assert "more than the 10,000" in stated_config_reason(check(project, "deploy.yaml", 1, tmp_path))


def test_a_config_json_with_an_interval_and_a_huge_layer_count(project: Path, tmp_path: Path):
    """full_attention_interval made the linear-layer count a loop over every layer."""
    unknown_model_with_config(project, HF_CONFIG.replace(
        '"num_hidden_layers": 32', '"num_hidden_layers": 1000000000000000000, "full_attention_interval": 4'))
    assert "hybrid" in kv203_reason(check(project, "deploy.yaml", 0, tmp_path))


@posix_only
def test_a_fifo_as_model_config(project: Path, tmp_path: Path):
    os.mkfifo(project / "models" / "config.json")
    unknown_model_with_config(project, None)
    assert "a FIFO" in stated_config_reason(check(project, "deploy.yaml", 1, tmp_path))


@posix_only
def test_a_fifo_as_ablation_base_in_check_and_capacity(project: Path, tmp_path: Path):
    os.mkfifo(project / "base.yaml")
    (project / "ablation.yaml").write_text(
        "apiVersion: kvlint/v1\nkind: Ablation\nmetadata: {name: a}\nbase: base.yaml\nvariants:\n  - name: bf16\n",
        encoding="utf-8")
    found = check(project, "ablation.yaml", 1, tmp_path)
    assert any(d["code"] == "KV703" and "a FIFO" in d["message"] for d in found)
    completed = run(project, ["capacity", "ablation.yaml"])
    assert completed.returncode == 1 and "KV703" in completed.stderr  # was exit 0 with no output


# --- unbounded reads --------------------------------------------------------------------------


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_stdin_from_an_endless_stream(project: Path, tmp_path: Path):
    with open("/dev/zero", "rb") as endless:
        found = check(project, "-", 1, tmp_path, stdin=endless)
    assert [d["code"] for d in found] == ["KV004"]


# --- quadratic output -------------------------------------------------------------------------


def test_ten_thousand_findings_on_one_long_line(project: Path):
    keys = ", ".join(f"k{i}: 1" for i in range(10_000))
    (project / "deploy.yaml").write_text(
        VALID_MANIFEST.replace("metadata:\n  name: llama8b-bf16-h100\n", f"metadata: {{name: x, {keys}}}\n"),
        encoding="utf-8")
    before = digest(project)
    completed = run(project, ["check", "deploy.yaml"])  # the full format, with an excerpt per finding
    assert completed.returncode == 1
    lines = completed.stdout.splitlines()
    assert sum(1 for line in lines if ": KV102 " in line) == 10_000
    assert max(len(line) for line in lines if " | " in line) < 200  # the 130,000-character line is cut
    assert len(completed.stdout) < 10_000 * 1_000
    assert digest(project) == before


# --- internal errors where a finding is due ---------------------------------------------------


@pytest.mark.parametrize("config_text, reason", [
    ('{"a": ' * 100_000 + "1" + "}" * 100_000, "nested too deeply"),
    (HF_CONFIG.replace('"head_dim": 128', '"head_dim": 1e309'), "got inf"),
    (HF_CONFIG.replace('"num_key_value_heads": 8', '"num_key_value_heads": Infinity'), "got inf"),
    (HF_CONFIG.replace('"num_key_value_heads": 8', '"num_key_value_heads": NaN'), "got nan"),
    (HF_CONFIG.replace('"num_attention_heads": 32', '"num_attention_heads": 1' + "0" * 400), "digits"),
])
def test_a_hostile_config_json_is_a_finding(project: Path, tmp_path: Path, config_text: str, reason: str):
    unknown_model_with_config(project, config_text)
    assert reason in stated_config_reason(check(project, "deploy.yaml", 1, tmp_path))


@pytest.mark.parametrize("old, new", [
    ("  name: meta-llama/Llama-3.1-8B-Instruct\n",
     "  name: acme/x\n  geometry: {num_layers: .inf, num_kv_heads: 8, head_dim: 128}\n"),
    ("  dtype: auto\n", "  dtype: auto\nserving:\n  max_model_len: 1e309\n"),
])
def test_infinite_numbers_in_the_manifest_are_kv106(project: Path, tmp_path: Path, old: str, new: str):
    assert old in VALID_MANIFEST
    (project / "deploy.yaml").write_text(VALID_MANIFEST.replace(old, new), encoding="utf-8")
    found = check(project, "deploy.yaml", 1, tmp_path, in_process=True)
    assert any(d["code"] == "KV106" and "not a finite number" in d["message"] for d in found), found


# --- the cache can only cost speed ------------------------------------------------------------


def _warm_cache(project: Path, cache: Path) -> str:
    completed = run(project, ["check", "deploy.yaml", "--output-format", "json"], {"KVLINT_CACHE_DIR": str(cache)})
    entries = [p for p in cache.iterdir() if p.name.endswith(".marshal")]
    assert entries, "the run wrote no cache entry"
    return completed.stdout


@pytest.mark.parametrize("damage", ["garbage", "truncated", "foreign", "fifo", "directory"])
def test_a_damaged_cache_entry_is_ignored_and_rewritten(project: Path, tmp_path: Path, damage: str):
    import marshal

    if damage == "fifo" and not hasattr(os, "mkfifo"):
        pytest.skip("FIFOs are POSIX")
    cache = tmp_path / "cache"
    expected = _warm_cache(project, cache)
    for entry in [p for p in cache.iterdir() if p.name.endswith(".marshal")]:
        data = entry.read_bytes()
        entry.unlink()
        if damage == "garbage":
            entry.write_bytes(b"i\x07\x00\x00\x00")  # a valid marshal stream: the integer 7
        elif damage == "truncated":
            entry.write_bytes(data[: len(data) // 2])
        elif damage == "foreign":  # another entry's key with data of the wrong shape
            entry.write_bytes(marshal.dumps(("another key", {"code": 1})))
        elif damage == "fifo":
            os.mkfifo(entry)
        else:
            entry.mkdir()
    cache_env = {"KVLINT_CACHE_DIR": str(cache)}
    for _ in range(2):  # the damaged run, then the run after it
        completed = run(project, ["check", "deploy.yaml", "--output-format", "json"], cache_env)
        assert completed.returncode == 0 and completed.stdout == expected
    if damage != "directory":  # a regular entry replaces what was there
        assert all(p.is_file() for p in cache.iterdir() if p.name.endswith(".marshal"))


def test_no_home_directory_runs_without_a_cache(project: Path):
    expected = run(project, ["check", "deploy.yaml", "--output-format", "json"], {"KVLINT_NO_CACHE": "1"}).stdout
    script = (
        "import os, pwd, sys\n"
        "def unknown(uid): raise KeyError(uid)\n"
        "pwd.getpwuid = unknown  # a container user with no passwd entry\n"
        "for key in ('HOME', 'XDG_CACHE_HOME', 'KVLINT_CACHE_DIR', 'KVLINT_NO_CACHE'): os.environ.pop(key, None)\n"
        "from kvlint.cli import main\n"
        "sys.argv = ['kvlint', 'check', 'deploy.yaml', '--output-format', 'json']\n"
        "main()\n"
    )
    environment = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    completed = subprocess.run([sys.executable, "-c", script], cwd=project, env=environment, capture_output=True,
                               text=True, timeout=TIMEOUT_S)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == expected
    assert not (project / "~").exists()  # no cache written into the repository


# --- wrong exit 0 -----------------------------------------------------------------------------


@pytest.mark.parametrize("args, config", [
    (["--select", ""], "# defaults\n"),
    ([], "select = []\n"),
    (["--select", "KV1", "--ignore", "KV1"], "# defaults\n"),
])
def test_a_selection_that_enables_nothing_is_a_usage_error(project: Path, args: List[str], config: str):
    (project / "kvlint.toml").write_text(config, encoding="utf-8")
    completed = run(project, ["check", "deploy.yaml", *args], in_process=True)
    assert completed.returncode == 2 and completed.stdout == ""
    assert "enables no rule" in completed.stderr and completed.stderr.count("\n") == 1


@pytest.mark.parametrize("args", [["--select", "KV3"], ["--ignore", "KV0"]])
def test_deselecting_the_loader_s_findings_is_said(project: Path, args: List[str]):
    """A narrowed selection may hide a file kvlint cannot parse; it is allowed, but never silent."""
    (project / "deploy.yaml").write_text("apiVersion: kvlint/v1\nkind: [\n", encoding="utf-8")
    completed = run(project, ["check", "deploy.yaml", *args], in_process=True)
    assert completed.returncode == 0
    assert completed.stderr.startswith("kvlint: warning: the rule selection turns off KV001,")
    assert run(project, ["check", "deploy.yaml"], in_process=True).returncode == 1  # the default reports the syntax error


def test_capacity_fails_on_an_ablation_whose_base_check_rejects(project: Path, tmp_path: Path):
    (project / "base.yaml").write_text(VALID_MANIFEST.replace('version: "0.19.1"', "version: 19"), encoding="utf-8")
    for base in ("base.yaml", "''"):  # a schema-invalid base, and a blank one
        (project / "ablation.yaml").write_text(
            f"apiVersion: kvlint/v1\nkind: Ablation\nmetadata: {{name: a}}\nbase: {base}\nvariants:\n  - name: bf16\n",
            encoding="utf-8")
        found = check(project, "ablation.yaml", 1, tmp_path, in_process=True)
        assert any(d["pointer"] == "/base" and d["severity"] == "error" for d in found), found
        completed = run(project, ["capacity", "ablation.yaml"], in_process=True)
        assert completed.returncode == 1 and "ablation.yaml:4:7: KV" in completed.stderr, completed.stderr


# Covered in other files: writing onto inputs, FIFOs and devices as manifests and in walks,
# huge files, unreadable paths, hostile sizes and model names, NaN, YAML 1.1 scalars, escaping,
# SARIF URIs, paths outside the project and twenty concurrent runs (tests/test_hostile_inputs.py);
# catastrophic patterns and hostile rule files (tests/test_hostile_rules.py); bounded messages
# (tests/test_bounded_messages.py); YAML bombs, deep nesting and duplicate keys (tests/test_load.py);
# the configuration, command-line values and native files under fuzzing (tests/test_fuzz_inputs.py,
# tests/test_adapters_hostile.py).
