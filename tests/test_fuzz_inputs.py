"""Fuzzing the inputs besides manifests: the configuration file, command-line values and native
deployment files. Whatever comes in, kvlint answers with findings or one usage/config line and
exit 2, never a traceback."""

from __future__ import annotations

import json
import resource
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from conftest import VALID_MANIFEST, invoke
from kvlint.config import from_table
from kvlint.errors import ConfigError

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
KEYS = ["select", "extend-select", "ignore", "fail-on", "output-format", "exclude", "per-file-ignores",
        "rules-dir", "catalog-dir", "max-scale-overhead", "max-capacity-regression", "native-formats",
        "defaults", "allowed-roots", "unknown-key"]
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=True),
                    st.text(max_size=20))
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                       st.dictionaries(st.text(max_size=10), inner, max_size=4)),
                      max_leaves=12)


@SETTINGS
@given(st.dictionaries(st.sampled_from(KEYS), VALUES, max_size=6))
@example({"select": None, "per-file-ignores": {"\n": None}})  # found by a random run: a key with a line break
def test_any_configuration_table_is_a_config_or_one_config_error(tmp_path_factory, table):
    path = tmp_path_factory.mktemp("cfg") / "kvlint.toml"
    path.write_text("", encoding="utf-8")
    try:
        from_table(table, path)
    except ConfigError as exc:
        assert "\n" not in str(exc).strip()


OPTIONS = ["--select", "--extend-select", "--ignore", "--fail-on", "--output-format", "--config"]


@SETTINGS
@given(st.lists(st.tuples(st.sampled_from(OPTIONS), st.text(max_size=30)), max_size=4))
def test_any_command_line_value_is_handled(tmp_path_factory, pairs):
    root = tmp_path_factory.mktemp("cli")
    (root / "kvlint.toml").write_text("# defaults\n", encoding="utf-8")
    (root / "d.yaml").write_text(VALID_MANIFEST, encoding="utf-8")
    args = ["check", "--output-format", "json"]
    for option, value in pairs:
        args += [option, value]
    import os

    cwd = os.getcwd()
    os.chdir(root)
    try:
        result = invoke(args + ["d.yaml"])
    finally:
        os.chdir(cwd)
    assert "Traceback" not in result.output
    assert result.exit_code in (0, 1, 2)


NATIVE_SNIPPETS = [
    "vllm serve m --kv-cache-dtype fp8", "python -m sglang.launch_server --model-path m", "trtllm-serve m",
    "--tensor-parallel-size", "-tp", "8", "'", '"', "\\", "$(X)", "${Y}", "&&", "|", ";", "#",
    "--compilation-config '{\"a\": [1,'", "-O3", "--no-enable-prefix-caching", "--kv-cache-dtype-skip-layers 0,1",
    "\n", "  ", "bash -c \"", "--max-model-len=1e9", "--gpu-memory-utilization nan",
]


@SETTINGS
@given(st.lists(st.sampled_from(NATIVE_SNIPPETS), max_size=25), st.sampled_from(["serve.sh", "Dockerfile"]))
def test_any_native_command_line_is_findings(tmp_path_factory, parts, name):
    root = tmp_path_factory.mktemp("native")
    (root / "kvlint.toml").write_text("# defaults\n", encoding="utf-8")
    head = "#!/bin/sh\nvllm serve m " if name == "serve.sh" else "FROM vllm/vllm-openai:v0.19.1\nCMD vllm serve m "
    (root / name).write_text(head + " ".join(parts) + "\n", encoding="utf-8")
    import os

    cwd = os.getcwd()
    os.chdir(root)
    try:
        result = invoke(["check", "--output-format", "json", name])
    finally:
        os.chdir(cwd)
    assert "Traceback" not in result.output
    assert result.exit_code in (0, 1), result.output
    json.loads(result.stdout)


def _limited() -> None:  # pragma: no cover - runs in the child
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


@pytest.mark.parametrize("content", [
    "#!/bin/sh\nvllm serve m " + " ".join(f"--x{i} {i}" for i in range(10_000)) + "\n",
    "#!/bin/sh\nvllm serve m --kv-cache-dtype 'fp8\n",
    "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec:\n  template:\n    spec:\n      containers:\n"
    "      - name: vllm\n        image: vllm/vllm-openai:v0.19.1\n        args: ['m', '--compilation-config', '{not json']\n",
])
def test_hostile_native_input_under_a_2_gib_memory_limit(tmp_path, content):
    name = "deploy.yaml" if content.startswith("apiVersion") else "serve.sh"
    (tmp_path / "kvlint.toml").write_text("# defaults\n", encoding="utf-8")
    (tmp_path / name).write_text(content, encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "kvlint", "check", "--output-format", "json", name], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60, preexec_fn=_limited)
    assert done.returncode in (0, 1), done.stderr
    assert "Traceback" not in done.stderr
    json.loads(done.stdout)
