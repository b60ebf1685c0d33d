"""Shared fixtures: a clean manifest, a tmp workspace to run the CLI in, JSON output parsing.

Kept small and generic on purpose; test modules with their own needs define helpers locally.
"""

from __future__ import annotations

import functools
import json
import re
import subprocess
from pathlib import Path
from typing import Any, Callable, Dict, Optional, Sequence

import pytest
from click.testing import CliRunner as ClickRunner
from click.testing import Result

# KVLINT_TEST_FAIL_ON_SKIP=1 (CI's smoke-cpu job): a skip that is not marked `gpu` fails.
from fail_on_skip import pytest_make_collect_report, pytest_runtest_makereport  # noqa: F401

# Property tests are a gate in CI, so by default they draw the same examples every run (a
# failure reproduces, a pass stays a pass). KVLINT_FUZZ_RANDOM=1 explores new examples instead;
# whatever that finds becomes an @example on the test.
import os as _os

from hypothesis import settings as _settings

_settings.register_profile("kvlint-ci", derandomize=True, database=None)
_settings.register_profile("kvlint-explore")
_settings.load_profile("kvlint-explore" if _os.environ.get("KVLINT_FUZZ_RANDOM") else "kvlint-ci")

REPO_ROOT = Path(__file__).resolve().parent.parent

# The suite never asks the real Hugging Face Hub for a model's config.json (kvlint.hub): every
# kvlint it runs, in process or as a subprocess, is offline, its endpoint is a loopback port
# nothing listens on (kvlint's hub cache is keyed by endpoint, so configs a developer's own runs
# cached are never read either), and no token of the developer's is sent anywhere. The tests of
# the fetch itself (tests/test_hub.py) undo this for their local test hub.
_os.environ["HF_HUB_OFFLINE"] = "1"
_os.environ["HF_ENDPOINT"] = "http://127.0.0.1:9"
for _name in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"):
    _os.environ.pop(_name, None)

# Bytecode as an installed tool has it. With PYTHONDONTWRITEBYTECODE set (some CI images and
# sandboxes set it), every `python -m kvlint` a test starts compiles kvlint from source, about
# twice the CPU of a start from bytecode, and every xdist worker re-rewrites every test module.
# Writes go to the usual __pycache__ folders (git-ignored), atomically, so workers may race.
if _os.environ.pop("PYTHONDONTWRITEBYTECODE", None) is not None:
    import sys as _sys

    _sys.dont_write_bytecode = False

# The passing example of rules/KV101-missing-required.yaml: designed to stay clean as the semantic
# stages grow (a catalogued vLLM release, model and GPU, an unquantized cache).
VALID_MANIFEST = """\
apiVersion: kvlint/v1
kind: Deployment
metadata:
  name: llama8b-bf16-h100
engine:
  name: vllm
  version: "0.19.1"
hardware:
  gpu: H100-SXM-80GB
model:
  name: meta-llama/Llama-3.1-8B-Instruct
kv_cache:
  dtype: auto
"""


@pytest.fixture
def valid_manifest() -> str:
    return VALID_MANIFEST


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty directory, made the cwd, with no kvlint config above it and no CI environment.

    A `pyproject.toml` without `[tool.kvlint]` stops nothing, so config discovery is pinned by a
    `kvlint.toml` that sets nothing: tests that need a config overwrite it.
    """
    root = tmp_path / "ws"
    root.mkdir()
    (root / "kvlint.toml").write_text("# empty: defaults\n", encoding="utf-8")
    monkeypatch.chdir(root)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    return root


@pytest.fixture
def write(workspace: Path) -> Callable[[str, str], Path]:
    """write(relative_path, text) -> the file's path inside the workspace."""

    def _write(relative: str, text: str) -> Path:
        path = workspace / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path

    return _write


def _click_keeps_stderr_apart() -> bool:
    from importlib.metadata import version

    from packaging.version import Version

    return Version(version("click")) >= Version("8.2")


class _OutputIsBoth(Result):
    """click 8.1's result, with `output` as click 8.2 gives it: what went to stdout and stderr."""

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


class CliRunner(ClickRunner):
    """click.testing.CliRunner with stdout and stderr apart on every click kvlint supports. click
    8.2 keeps them apart by itself (its `output` is both, interleaved); click 8.1, the last on
    Python 3.9, mixes stderr into stdout unless told not to, and then its `output` is stdout alone:
    there it gets `mix_stderr=False` and an `output` of stdout then stderr. Every test imports
    this one (`from conftest import CliRunner`)."""

    SEPARATES = _click_keeps_stderr_apart()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if not self.SEPARATES:
            kwargs.setdefault("mix_stderr", False)
        super().__init__(*args, **kwargs)

    def invoke(self, *args: Any, **kwargs: Any) -> Result:  # type: ignore[override]
        result = super().invoke(*args, **kwargs)
        if not self.SEPARATES and not getattr(self, "mix_stderr", False):
            result.__class__ = _OutputIsBoth
        return result


def invoke(args: Sequence[str], input: Any = None, env: Dict[str, str] = None) -> Result:
    """Run the real CLI in-process (click.testing), never catching exceptions silently."""
    from kvlint.cli import main

    runner = CliRunner()
    return runner.invoke(main, list(args), input=input, env=env, catch_exceptions=False)


@pytest.fixture
def cli() -> Callable[..., Result]:
    return invoke


@functools.cache
def _capacity_logs() -> tuple:
    import sys

    sys.path.insert(0, str(REPO_ROOT / "benchmarks"))
    import capacity_accuracy

    return tuple(capacity_accuracy.load_logs(capacity_accuracy.LOGS))


def capacity_logs() -> list:
    """benchmarks/capacity_logs/*.yaml as capacity_accuracy.load_logs returns them, parsed once per
    process (five test modules read them, three at import for their parameters): the tests only
    read these documents, never change them."""
    return list(_capacity_logs())


def kvlint_in_process(args: Sequence[str], cwd: Path, env: Optional[Dict[str, Optional[str]]] = None,
                      input: Any = None) -> subprocess.CompletedProcess:
    """`python -m kvlint ARGS` in `cwd`, run in this process (the click group through
    click.testing, catch_exceptions=False) and returned as subprocess.run would return it.

    For tests whose point is what the command does, not the process it runs in: a subprocess
    costs a fresh interpreter importing kvlint (about half a second of CPU) per run. It is not
    for tests that need a memory or time limit, a real stdin file, a fresh process's empty
    in-memory caches, or the console script itself: those keep a subprocess.

    As in those subprocess helpers, the GitHub variables are unset and the parsed-data cache is off
    (KVLINT_NO_CACHE) unless `env` says otherwise; stdin is empty. stdout and stderr are decoded
    strictly as UTF-8 and without newline translation (a subprocess with text=True turns a lone
    carriage return into a line break; here it stays visible to the test).
    """
    from kvlint.cli import main

    environment: Dict[str, Optional[str]] = {
        "GITHUB_STEP_SUMMARY": None, "GITHUB_ACTIONS": None, "KVLINT_CACHE_DIR": None, "KVLINT_NO_CACHE": "1"}
    environment.update(env or {})
    if environment.get("KVLINT_CACHE_DIR"):
        environment["KVLINT_NO_CACHE"] = None
    previous = _os.getcwd()
    _os.chdir(cwd)
    try:
        result = CliRunner().invoke(main, list(args), input=input if input is not None else "", env=environment,
                                    catch_exceptions=False, prog_name="kvlint")
    finally:
        _os.chdir(previous)
    return subprocess.CompletedProcess(
        ["kvlint", *args], result.exit_code, result.stdout_bytes.decode("utf-8"),
        (result.stderr_bytes or b"").decode("utf-8"))


def check_json(*args: str, input: Any = None) -> Dict[str, Any]:
    """`kvlint check --output-format json ARGS`, parsed; asserts a clean exit (0 or 1)."""
    result = invoke(["check", "--output-format", "json", *args], input=input)
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)


@pytest.fixture
def run_json() -> Callable[..., Dict[str, Any]]:
    return check_json


def codes_at(report: Dict[str, Any]) -> list:
    """[(code, line, column)] of a JSON report, in report order."""
    return [(d["code"], d["line"], d["column"]) for d in report["diagnostics"]]


# A native file's messages name the flag the user wrote where a manifest's name the field
# (kvlint.pipeline.native.native_terms); these tests compare everything else word for word.
NATIVE_TERMS = {
    "--kv-cache-dtype": "kv_cache.dtype", "--attention-backend": "attention_backend",
    "--max-model-len": "serving.max_model_len", "--context-length": "serving.max_model_len",
    "--kv-cache-memory-bytes": "memory.kv_cache_memory",
    "--gpu-memory-utilization": "memory.gpu_memory_utilization",
    "-m": "model.config",  # llama.cpp's model file
}
_NATIVE_TERM = re.compile(
    r"(?<![\w-])(?:" + "|".join(re.escape(k) for k in sorted(NATIVE_TERMS, key=len, reverse=True)) + r")(?![\w-])")


def manifest_terms(message: str) -> str:
    return _NATIVE_TERM.sub(lambda m: NATIVE_TERMS[m.group(0)], message)
