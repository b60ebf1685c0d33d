"""Hostile input, round two (issue 24): the native adapters, caches and symbolic links.

One test per bullet of the issue. Each runs the real command and checks the exit code, the
finding or error, that no traceback or internal error is printed and that no input changed. Where
the process matters it runs in a subprocess (`kvlint`) under a timeout (TIMEOUT_S, a guard against
hangs, not a speed claim) and an address-space limit: unbounded work on large inputs, stdin that is
a real file, the parsed-data cache on disk (a fresh process has nothing cached in memory). The
others only check what the command reads and prints, and run it in this process (`kvlint_here`,
conftest.kvlint_in_process): the same click command, without an interpreter start per run. Large
inputs are generated at run time.
"""

from __future__ import annotations

import hashlib
import json
import marshal
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence

import pytest

from conftest import REPO_ROOT, VALID_MANIFEST, kvlint_in_process

# A hang guard, not a speed test (speed is measured in benchmarks/): the largest input here takes
# about 8 s of CPU alone, and a CI machine running tests in parallel can be several times slower.
TIMEOUT_S = 120
MEMORY_LIMIT = 2 * 1024 ** 3  # address space of a run: a MemoryError instead of swapping the CI machine
posix_only = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="links, FIFOs and owners are POSIX")


def _limit_memory() -> None:  # pragma: no cover - runs in the child
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def kvlint(args: Sequence[str], cwd: Path, env: Optional[Dict[str, str]] = None, stdin=subprocess.DEVNULL,
           cache: Optional[Path] = None) -> subprocess.CompletedProcess:
    environment = dict(os.environ)
    for name in ("GITHUB_STEP_SUMMARY", "GITHUB_ACTIONS", "KVLINT_CACHE_DIR"):
        environment.pop(name, None)
    environment["PYTHONPATH"] = str(REPO_ROOT)
    if cache is None:
        environment["KVLINT_NO_CACHE"] = "1"
    else:
        environment.pop("KVLINT_NO_CACHE", None)
        environment["KVLINT_CACHE_DIR"] = str(cache)
    environment.update(env or {})
    completed = subprocess.run(
        [sys.executable, "-m", "kvlint", *args], cwd=cwd, env=environment, capture_output=True, text=True,
        timeout=TIMEOUT_S, stdin=stdin, preexec_fn=_limit_memory if hasattr(os, "fork") else None,
    )
    assert "Traceback" not in completed.stderr + completed.stdout, completed.stderr
    assert "internal error" not in completed.stderr, completed.stderr
    return completed


def kvlint_here(args: Sequence[str], cwd: Path) -> subprocess.CompletedProcess:
    """The command in this process, with the same checks as `kvlint` (no traceback, no internal
    error) and the same environment (GitHub variables unset, no parsed-data cache)."""
    completed = kvlint_in_process(args, cwd)
    assert "Traceback" not in completed.stderr + completed.stdout, completed.stderr
    assert "internal error" not in completed.stderr, completed.stderr
    return completed


def digest(root: Path) -> Dict[str, str]:
    out = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink():
            out[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def diagnostics(completed: subprocess.CompletedProcess) -> List[dict]:
    return json.loads(completed.stdout)["diagnostics"]


def codes(completed: subprocess.CompletedProcess) -> List[str]:
    return [d["code"] for d in diagnostics(completed)]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "kvlint.toml").write_text("# defaults\n", encoding="utf-8")
    (root / "deploy.yaml").write_text(VALID_MANIFEST, encoding="utf-8")
    return root


K8S = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: llama
spec:
  template:
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.19.1
          args: ["--model", "meta-llama/Llama-3.1-8B-Instruct", "--kv-cache-dtype", "fp8"]
          resources:
            limits:
              nvidia.com/gpu: 1
      nodeSelector:
        nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3
"""


# --- Data loss ---------------------------------------------------------------------------------


@pytest.mark.parametrize("command", [["convert", "-"], ["check", "-"], ["capacity", "-"]])
def test_stdin_is_never_overwritten_by_the_output_file(project: Path, command: List[str]):
    source = project / ("d.yaml" if command[0] != "convert" else "k8s.yaml")
    source.write_text(VALID_MANIFEST if command[0] != "convert" else K8S, encoding="utf-8")
    before = digest(project)
    with open(source, "rb") as handle:
        completed = kvlint([*command, "-o", source.name], project, stdin=handle)
    assert completed.returncode == 2
    assert "standard input" in completed.stderr and "never writes onto its input" in completed.stderr
    assert digest(project) == before


@posix_only
def test_cache_writes_never_follow_planted_symlinks(project: Path, tmp_path: Path):
    cache = tmp_path / "cache"
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    # A link under every name the old code wrote through (<entry>.<pid>.tmp for a range of pids is
    # not plantable in a test, so: the entries themselves and a stray .tmp) must stay untouched.
    first = kvlint(["check", "deploy.yaml", "--output-format", "json"], project, cache=cache)
    assert first.returncode == 0
    entries = sorted(p for p in cache.iterdir() if p.suffix == ".marshal")
    assert entries and stat.S_IMODE(cache.stat().st_mode) == 0o700
    for entry in entries:
        entry.unlink()
        entry.symlink_to(victim)
    second = kvlint(["check", "deploy.yaml", "--output-format", "json"], project, cache=cache)
    assert second.returncode == 0 and diagnostics(second) == diagnostics(first)
    assert victim.read_text() == "precious\n"
    assert all(not p.is_symlink() and p.is_file() for p in entries)  # replaced by real entries
    assert not [p for p in cache.iterdir() if p.name.endswith(".tmp")]


# --- Reads outside the tree ------------------------------------------------------------------


@posix_only
def test_walk_does_not_follow_links_out_of_the_tree(project: Path, tmp_path: Path):
    outside = tmp_path / "outside"
    (outside / "more").mkdir(parents=True)
    script = "#!/bin/sh\nvllm serve meta-llama/Llama-3.1-8B-Instruct --api-key SECRET123 --kv-cache-dtype fp8\n"
    (outside / "script.sh").write_text(script)
    (outside / "more" / "run.sh").write_text(script)
    (outside / "m.yaml").write_text(VALID_MANIFEST.replace("kv_cache:\n  dtype: auto", "kv_cache:\n  dtype: SECRET123"))
    deploy = project / "deploy"
    deploy.mkdir()
    (deploy / "run.sh").symlink_to("../../outside/script.sh")
    (deploy / "linked.yaml").symlink_to(outside / "m.yaml")
    (deploy / "dir").symlink_to(outside / "more", target_is_directory=True)
    inside = deploy / "inside.yaml"
    inside.symlink_to(project / "deploy.yaml")  # a link inside the project is read as usual
    for fmt in ("json", "full", "github"):
        completed = kvlint_here(["check", ".", "--output-format", fmt], project)
        assert "SECRET123" not in completed.stdout + completed.stderr
        assert str(tmp_path) not in completed.stdout + completed.stderr  # shown relative to the project
        assert completed.returncode == 0
    found = diagnostics(kvlint_here(["check", ".", "--output-format", "json"], project))
    assert sorted((d["file"], d["code"], d["severity"]) for d in found) == [
        ("deploy/linked.yaml", "KV208", "info"), ("deploy/run.sh", "KV208", "info")]
    capacity = kvlint_here(["capacity", "."], project)
    assert capacity.returncode == 0 and "SECRET123" not in capacity.stdout + capacity.stderr


# --- Crashes: each a finding or one clean line, never an internal error ----------------------


@posix_only
@pytest.mark.parametrize("kind", ["loop", "nul", "long"])
def test_bad_config_path_is_one_clean_error(project: Path, kind: str):
    if kind == "loop":
        (project / "loop.toml").symlink_to("loop.toml")
        name = "loop.toml"
    elif kind == "nul":
        (project / "nul.toml").write_text("select = [\"ALL\"]\0\n")  # a NUL in the file (argv cannot hold one)
        name = "nul.toml"
    else:
        name = "c" * 5000
    before = digest(project)
    completed = kvlint_here(["check", "--config", name, "deploy.yaml"], project)
    assert completed.returncode == 2
    assert completed.stderr.startswith("kvlint: error: ") and completed.stderr.count("\n") == 1
    assert len(completed.stderr) < 1000  # the 5,000-character name is cut
    assert digest(project) == before


def _manifest_with(**model: str) -> str:
    extra = "".join(f"  {key}: {value}\n" for key, value in model.items())
    return VALID_MANIFEST.replace("  name: meta-llama/Llama-3.1-8B-Instruct\n",
                                  "  name: meta-llama/Llama-3.1-8B-Instruct\n" + extra)


@posix_only
def test_llamacpp_model_file_that_is_a_link_loop_is_a_finding(project: Path):
    (project / "loop.gguf").symlink_to("loop.gguf")
    (project / "run.sh").write_text("#!/bin/sh\nllama-server -m loop.gguf -c 4096\n")
    completed = kvlint_here(["check", "run.sh", "--output-format", "json"], project)
    assert completed.returncode in (0, 1)
    assert any(d["code"] == "KV203" and "loop.gguf" in d["message"] for d in diagnostics(completed))


def test_nul_in_a_model_name_is_a_finding(project: Path):
    (project / "nul.json").write_text(json.dumps(json.loads(json.dumps({
        "apiVersion": "kvlint/v1", "kind": "Deployment", "metadata": {"name": "x"},
        "engine": {"name": "vllm", "version": "0.19.1"}, "hardware": {"gpu": "H100-SXM-80GB"},
        "model": {"name": "meta\0llama"}, "kv_cache": {"dtype": "auto"}}))))
    completed = kvlint_here(["check", "nul.json", "--output-format", "full"], project)
    assert completed.returncode in (0, 1) and "KV203" in completed.stdout and "\0" not in completed.stdout
    assert "meta\\x00llama" in completed.stdout


def test_from_log_with_a_400_digit_token_count(project: Path):
    (project / "big.log").write_text("GPU KV cache size: " + "9" * 400 + " tokens\nmax_total_num_tokens=" + "9" * 400 + "\n")
    completed = kvlint_here(["capacity", "deploy.yaml", "--from-log", "big.log"], project)
    assert completed.returncode == 0
    assert "none of the capacity lines" in completed.stdout


def test_trtllm_options_with_infinities_are_findings(project: Path):
    (project / "trt.yaml").write_text(
        "max_batch_size: .inf\nmax_seq_len: .nan\nkv_cache_config:\n  free_gpu_memory_fraction: .inf\n  dtype: fp8\n")
    completed = kvlint_here(["check", "trt.yaml", "--output-format", "json"], project)
    assert completed.returncode == 1
    found = codes(completed)
    assert "KV005" not in found and found.count("KV320") == 3


def test_image_tag_with_a_5000_digit_version_is_a_finding(project: Path):
    (project / "k8s.yaml").write_text(K8S.replace("v0.19.1", "v0." + "9" * 5000 + ".1"))
    completed = kvlint_here(["check", "k8s.yaml", "--output-format", "json"], project)
    assert completed.returncode in (0, 1)
    found = diagnostics(completed)
    assert "KV005" not in codes(completed)
    assert any(d["code"] == "KV207" and "characters cut" in d["message"] for d in found)


@posix_only
@pytest.mark.parametrize("where", ["model.config", "ablation base", "base's model.config"])
def test_link_loop_as_model_config_or_ablation_base(project: Path, where: str):
    (project / "loop").symlink_to("loop")
    if where == "model.config":
        (project / "m.yaml").write_text(_manifest_with(config="loop/config.json"))
    else:
        base = "loop/base.yaml" if where == "ablation base" else "m2.yaml"
        (project / "m2.yaml").write_text(_manifest_with(config="loop/config.json"))
        (project / "m.yaml").write_text(
            "apiVersion: kvlint/v1\nkind: Ablation\nmetadata:\n  name: a\nbase: " + base
            + "\nvariants:\n  - name: v1\n    overrides:\n      kv_cache:\n        dtype: fp8\n")
    for command in (["check", "m.yaml", "--output-format", "json"], ["capacity", "m.yaml"]):
        completed = kvlint_here(command, project)
        assert completed.returncode in (0, 1), completed.stderr
        assert str(project) not in completed.stdout + completed.stderr  # no absolute machine path
    if where == "ablation base":
        assert "KV703" in codes(kvlint_here(["check", "m.yaml", "--output-format", "json"], project))


# --- Unbounded work: bounded before expanding --------------------------------------------------


def test_manifest_geometry_with_a_billion_layers_is_a_finding(project: Path):
    (project / "geo.yaml").write_text(VALID_MANIFEST.replace(
        "meta-llama/Llama-3.1-8B-Instruct", "custom/x\n  geometry:\n    num_layers: 1000000000\n"
        "    num_attention_heads: 32\n    num_kv_heads: 8\n    head_dim: 128\n    hidden_size: 4096"))
    completed = kvlint(["check", "geo.yaml", "--output-format", "json"], project)
    assert completed.returncode == 1
    assert any("more than the 10,000" in d["message"] for d in diagnostics(completed))
    assert kvlint(["capacity", "geo.yaml"], project).returncode == 1


def test_catalog_model_with_a_billion_layers_is_a_configuration_error(project: Path):
    catalog = project / "catalog"
    catalog.mkdir()
    text = (REPO_ROOT / "examples" / "org" / "catalog" / "models.yaml").read_text()
    (catalog / "models.yaml").write_text(text.replace("num_layers: 32", "num_layers: 1000000000", 1))
    (project / "kvlint.toml").write_text('catalog-dir = ["catalog"]\n')
    (project / "acme.yaml").write_text(VALID_MANIFEST.replace("meta-llama/Llama-3.1-8B-Instruct", "acme/llama-8b-ft"))
    completed = kvlint(["check", "acme.yaml"], project)
    assert completed.returncode == 2 and completed.stderr.count("\n") == 1


def test_gguf_with_a_64k_key_and_a_million_nested_arrays_is_refused_quickly():
    import struct

    from kvlint.catalog.gguf import GGUFError, parse_gguf

    key = b"k" * 65535
    data = (b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", len(key)) + key + struct.pack("<I", 9)
            + struct.pack("<IQ", 9, 1_000_000) + struct.pack("<IQ", 0, 0) * 1_000_000)
    with pytest.raises(GGUFError, match="arrays inside arrays") as raised:
        parse_gguf(data, "x.gguf")
    assert len(str(raised.value)) < 400  # the key is quoted cut short


@pytest.mark.parametrize("case", ["commands", "sh -c", "unknown flags", "repeated flags"])
def test_shell_input_is_bounded(project: Path, case: str):
    """Each input goes past the bound that applies to it (a few thousand past, not many times it:
    the shell reader's own linearity is tests/test_adapters_shell.py's), and without that bound it
    would give more than the 15,000 findings allowed here (3 or more per engine command checked,
    1 per repeated flag)."""
    from kvlint.adapters.cmdline import MAX_ARGUMENTS
    from kvlint.adapters.launch import MAX_COMMANDS, MAX_LAUNCHES

    commands = MAX_COMMANDS + 1_000  # each an engine command: past both MAX_COMMANDS and MAX_LAUNCHES
    flags = MAX_ARGUMENTS // 2 + 1_000  # two arguments each: past MAX_ARGUMENTS
    repeated = max(flags, 16_000)  # without the bound, one KV321 each: more than 15,000
    command = "vllm serve m --max-model-len 4096\n"
    text = {
        "commands": command * commands,
        "sh -c": "sh -c '" + command.replace("\n", "; ") * commands + "'\n",
        "unknown flags": "vllm serve m " + " ".join(f"--unknown-flag-{i} {i}" for i in range(flags)) + "\n",
        "repeated flags": "vllm serve m " + "--max-model-len 1 " * repeated + "\n",
    }[case]
    (project / "run.sh").write_text("#!/bin/sh\n" + text)
    completed = kvlint(["check", "run.sh", "--output-format", "json"], project)
    assert completed.returncode in (0, 1)
    found = diagnostics(completed)
    assert len(found) < 15_000
    notes = [d["message"] for d in found if d["code"] == "KV208"]
    if case in ("commands", "sh -c"):
        assert any(f"stopped reading this script after {MAX_COMMANDS} commands" in note for note in notes), notes
        assert any(f"checks the first {MAX_LAUNCHES} engine commands" in note for note in notes), notes
    else:
        assert any(f"stopped reading this command after {MAX_ARGUMENTS:,} arguments" in note for note in notes), notes


def test_from_log_patterns_are_linear_on_a_1mb_line(project: Path):
    (project / "long.log").write_text("Load weight end." * 65_000 + "\n" + "Load weight end. avail mem=" * 38_000 + "\n")
    completed = kvlint(["capacity", "deploy.yaml", "--from-log", "long.log"], project)
    assert completed.returncode == 0


# --- Caches: a bad entry costs only speed -------------------------------------------------------


@posix_only
@pytest.mark.parametrize("damage", ["huge list", "fifo", "dev zero", "wrong type", "foreign dir"])
def test_a_corrupt_cache_entry_costs_only_speed(project: Path, tmp_path: Path, damage: str):
    cache = tmp_path / "cache"
    first = kvlint(["check", "deploy.yaml", "--output-format", "json"], project, cache=cache)
    entries = sorted(p for p in cache.iterdir() if p.suffix == ".marshal")
    for entry in entries:
        entry.unlink()
        if damage == "huge list":  # marshal list of 2^31 items, then nothing
            entry.write_bytes(b"\xa9\x02" + b"[" + (1 << 31).to_bytes(4, "little"))
        elif damage == "fifo":
            os.mkfifo(entry)
        elif damage == "dev zero":
            entry.symlink_to("/dev/zero")
        elif damage == "wrong type":
            key = marshal.loads(marshal.dumps("x"))  # right shape, wrong key and data
            entry.write_bytes(marshal.dumps((key, compile("1", "<x>", "eval"))))
        else:
            entry.write_bytes(marshal.dumps(("forged", {"code": "KV999"})))
    if damage == "foreign dir":
        cache.chmod(0o777)  # group/world-writable: not used at all
    second = kvlint(["check", "deploy.yaml", "--output-format", "json"], project, cache=cache)
    assert second.returncode == first.returncode and diagnostics(second) == diagnostics(first)


# --- Wrong pass: each a finding, not a silent exit 0 -------------------------------------------


@pytest.mark.parametrize("base", ['"   "', '"\\t\\n"'])
def test_whitespace_only_ablation_base_is_an_empty_base(project: Path, base: str):
    text = ("apiVersion: kvlint/v1\nkind: Ablation\nmetadata:\n  name: a\nbase: " + base
            + "\nvariants:\n  - name: v1\n    overrides:\n      kv_cache:\n        dtype: fp8\n")
    (project / "a.yaml").write_text(text)
    completed = kvlint_here(["check", "a.yaml", "--output-format", "json"], project)
    assert completed.returncode == 1
    found = diagnostics(completed)
    assert [(d["code"], d["line"]) for d in found] == [("KV703", 5)]
    assert "the base is empty" in found[0]["message"]
    assert kvlint_here(["capacity", "a.yaml"], project).returncode == 1


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
def test_duplicate_key_in_an_engine_config_file_is_an_error(project: Path, engine: str):
    """As in a manifest (KV002, error): the file is still read, the last value winning."""
    command = {
        "vllm": "vllm serve meta-llama/Llama-3.1-8B-Instruct --config cfg.yaml",
        "sglang": "python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct --config cfg.yaml",
        "trtllm": "trtllm-serve meta-llama/Llama-3.1-8B-Instruct --extra_llm_api_options cfg.yaml",
    }[engine]
    config = {
        "vllm": "kv-cache-dtype: fp8\nmax-model-len: 8192\nkv-cache-dtype: auto\n",
        "sglang": "kv-cache-dtype: fp8_e5m2\ncontext-length: 8192\nkv-cache-dtype: auto\n",
        "trtllm": "kv_cache_config:\n  dtype: fp8\n  dtype: auto\nmax_seq_len: 8192\n",
    }[engine]
    (project / "run.sh").write_text("#!/bin/sh\n# kvlint: gpu=H100-SXM-80GB\n" + command + "\n")
    (project / "cfg.yaml").write_text(config)
    before = digest(project)
    completed = kvlint_here(["check", "run.sh", "--output-format", "json"], project)
    assert completed.returncode == 1
    found = [d for d in diagnostics(completed) if d["code"] in ("KV002", "KV208")]
    assert [(d["code"], d["severity"], d["line"]) for d in found] == [("KV002", "error", 3)]
    assert "cfg.yaml' line 3: duplicate key" in found[0]["message"]
    assert digest(project) == before


def test_duplicate_key_in_a_mounted_configmap_points_into_it(project: Path):
    k8s = K8S.replace('args: ["--model", "meta-llama/Llama-3.1-8B-Instruct", "--kv-cache-dtype", "fp8"]',
                      'args: ["--model", "meta-llama/Llama-3.1-8B-Instruct", "--config", "/etc/vllm/cfg.yaml"]\n'
                      "          volumeMounts:\n          - {name: cfg, mountPath: /etc/vllm}")
    k8s = k8s.replace("      nodeSelector:", "      volumes:\n      - name: cfg\n        configMap: {name: vllm-cfg}\n"
                      "      nodeSelector:")
    text = k8s + ("---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: vllm-cfg\ndata:\n  cfg.yaml: |\n"
                  "    kv-cache-dtype: fp8\n    kv-cache-dtype: auto\n")
    (project / "all.yaml").write_text(text)
    completed = kvlint_here(["check", "all.yaml", "--output-format", "json"], project)
    assert completed.returncode == 1
    found = [d for d in diagnostics(completed) if d["code"] in ("KV002", "KV208")]
    line = text.splitlines().index("    kv-cache-dtype: auto") + 1
    assert [(d["code"], d["line"], d["column"]) for d in found] == [("KV002", line, 5)]


PRODUCTION_STACK = """\
servingEngineSpec:
  modelSpec:
  - name: llama8b
    repository: vllm/vllm-openai
    tag: v0.19.1
    modelURL: meta-llama/Llama-3.1-8B-Instruct
    requestGPU: 1
    nodeSelectorTerms:
      - matchExpressions:
          - key: nvidia.com/gpu.product
            operator: In
            values: [NVIDIA-H100-80GB-HBM3]
    vllmConfig:
      maxModelLen: 8192
      extraArgs: EXTRA
"""


@pytest.mark.parametrize("extra", ['"--kv-cache-dtype fp8 --max-model-len 8192"', "true"])
def test_helm_extra_args_that_is_not_a_list_is_the_chart_error(project: Path, extra: str):
    """production-stack's deployment-vllm-multi.yaml does `range .extraArgs`: Go templates
    refuse a string, so Helm renders nothing; kvlint says so instead of dropping the flags."""
    text = PRODUCTION_STACK.replace("EXTRA", extra)
    (project / "values.yaml").write_text(text)
    completed = kvlint_here(["check", "values.yaml", "--output-format", "json"], project)
    assert completed.returncode == 1
    found = [d for d in diagnostics(completed) if d["severity"] == "error"]
    assert [(d["code"], d["line"]) for d in found] == [("KV005", text.splitlines().index("      extraArgs: " + extra) + 1)]
    assert "not a list" in found[0]["message"] and "range" in found[0]["message"]


def test_helm_extra_args_as_a_map_is_its_values_in_key_order(project: Path):
    text = PRODUCTION_STACK.replace("extraArgs: EXTRA", 'extraArgs:\n        b: "fp8"\n        a: "--kv-cache-dtype"')
    (project / "values.yaml").write_text(text)
    completed = kvlint_here(["check", "values.yaml", "--output-format", "json"], project)
    assert completed.returncode in (0, 1)
    assert not [d for d in diagnostics(completed) if d["code"] in ("KV005", "KV319", "KV320")]
    converted = kvlint_here(["convert", "values.yaml"], project)
    assert 'dtype: "fp8"' in converted.stdout


UNIT_HEAD = "# kvlint: gpu=H100-SXM-80GB\n# kvlint: engine-version=b4747\n"
UNIT_EXEC = "ExecStart=llama-server -m /models/llama-3.1-8b-instruct-q4_k_m.gguf -c 8192\n"


def _unit_kv(project: Path, text: str) -> str:
    (project / "llama.service").write_text(text)
    completed = kvlint_here(["convert", "llama.service"], project)
    assert completed.returncode == 0, completed.stderr
    return completed.stdout.split("kv_cache:", 1)[1].split("hardware:", 1)[0]


@pytest.mark.parametrize("case", ["empty Environment=", "UnsetEnvironment=NAME", "UnsetEnvironment=NAME=value"])
def test_systemd_environment_resets_and_unsets(project: Path, case: str):
    """systemd.exec(5): an empty Environment= resets the list; UnsetEnvironment= is applied last
    (NAME removes any assignment, NAME=value only that one)."""
    last = {
        "empty Environment=": "Environment=\n",
        "UnsetEnvironment=NAME": "UnsetEnvironment=LLAMA_ARG_CACHE_TYPE_K\n",
        "UnsetEnvironment=NAME=value": "UnsetEnvironment=LLAMA_ARG_CACHE_TYPE_K=q8_0\n",
    }[case]
    head = "[Service]\n" + ("UnsetEnvironment=LLAMA_ARG_CACHE_TYPE_K\n" if "Unset" in case else "")
    text = UNIT_HEAD + head.replace("UnsetEnvironment=LLAMA_ARG_CACHE_TYPE_K\n", "") \
        + "Environment=LLAMA_ARG_CACHE_TYPE_K=q8_0\n" + last + UNIT_EXEC
    assert "key_dtype" not in _unit_kv(project, text)
    # the list reset is not a blanket removal: what comes after the empty Environment= counts,
    # and an UnsetEnvironment=NAME=value with another value removes nothing
    after = text.replace(last, last + "Environment=LLAMA_ARG_CACHE_TYPE_K=q4_0\n") if case == "empty Environment=" \
        else text.replace("=q8_0\nUnset", "=q4_0\nUnset")
    kv = _unit_kv(project, after)
    assert ("key_dtype: \"q4_0\"" in kv) == (case != "UnsetEnvironment=NAME")


def test_systemd_env_wrapper_in_execstart_reaches_the_engine(project: Path):
    text = UNIT_HEAD + "[Service]\nEnvironment=LLAMA_ARG_CACHE_TYPE_K=f16\n" + UNIT_EXEC.replace(
        "ExecStart=", "ExecStart=/usr/bin/env LLAMA_ARG_CACHE_TYPE_K=q8_0 LLAMA_ARG_CACHE_TYPE_V=q4_0 ")
    kv = _unit_kv(project, text)
    assert 'key_dtype: "q8_0"  # ExecStart (line 5): env LLAMA_ARG_CACHE_TYPE_K=' in kv
    assert 'value_dtype: "q4_0"' in kv


@pytest.mark.parametrize("header", ["[Service ]", "[ Service]", "[service]"])
def test_systemd_near_miss_section_is_ignored_as_systemd_does(project: Path, header: str):
    """conf-parser.c takes the text between the brackets, unstripped, and compares it exactly:
    the section is unknown and its settings ignored; kvlint ignores them too, with an info."""
    text = UNIT_HEAD + header + "\nEnvironment=LLAMA_ARG_CACHE_TYPE_K=q8_0\n[Service]\n" + UNIT_EXEC
    assert "key_dtype" not in _unit_kv(project, text)
    completed = kvlint_here(["check", "llama.service", "--output-format", "json"], project)
    found = [d for d in diagnostics(completed) if d["code"] == "KV208"]
    assert [(d["severity"], d["line"], d["column"]) for d in found] == [("info", 3, 1)]
    assert "systemd" in found[0]["message"] and "ignores" in found[0]["message"]
    # a unit whose only [Service] is the near miss starts nothing: the info, no workload
    (project / "only.service").write_text(UNIT_HEAD + header + "\n" + UNIT_EXEC)
    completed = kvlint_here(["check", "only.service", "--output-format", "json"], project)
    assert completed.returncode == 0
    assert [(d["code"], d["line"]) for d in diagnostics(completed)] == [("KV208", 3)]
