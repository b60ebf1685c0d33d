"""kvlint.versions matches plain ranges without packaging.specifiers (start-up time): the answers
must be packaging's own, for every version and specifier, including those it hands back."""

from __future__ import annotations

import ast
import itertools
import os
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from kvlint.versions import VersionError, parse_specifier, version_matches

VERSIONS = [
    "0", "0.0", "0.17", "0.17.0", "0.17.1", "0.18.0rc1", "0.16.0rc2.dev367+g98b0205c3", "0.17.0.post1",
    "0.17.0+cu128", "1!0.17", "0.28", "0.28.0.0", "0.27.99", "1.0", "b4747", "b6327", "b7108", "v0.13.3",
    "0.13.3", "0.5.9", "10", "0.19.1", "0.19.0a1", "0.19.dev0",
]
BOUNDS = ["0", "0.17", "0.17.0", "0.17.1", "0.18", "0.28", "0.19", "0.13.3", "b6327", "b7108", "1", "0.16.0rc2",
          "0.17.post1", "v0.17", "0.19.*", "00.017"]
REPO_ROOT = Path(__file__).resolve().parents[1]
OPERATORS = ["<", "<=", ">", ">=", "==", "!=", "~=", "==="]


def _packaging(version: str, specifier: str) -> bool:
    """packaging's answer, with build tags read as their numbers (kvlint's documented rule)."""
    number = lambda text: text[1:] if text[:1] in "bB" and text[1:].isdigit() else text  # noqa: E731
    clauses = []
    for clause in specifier.split(","):
        op = next((o for o in ("===", "==", "!=", "~=", "<=", ">=", "<", ">") if clause.strip().startswith(o)), "")
        clauses.append(op + number(clause.strip()[len(op):].strip()) if op else clause)
    return SpecifierSet(",".join(clauses), prereleases=True).contains(Version(number(version)), prereleases=True)


def _specifiers():
    singles = [f"{op}{bound}" for op, bound in itertools.product(OPERATORS, BOUNDS)]
    yield ""
    yield from singles
    yield from (f"{a}, {b}" for a, b in itertools.product(singles[::3], singles[1::5]))


def test_every_answer_is_packagings():
    checked = 0
    for specifier in _specifiers():
        try:
            SpecifierSet(specifier.replace("b6327", "6327").replace("b7108", "7108"))
        except Exception:
            with pytest.raises(VersionError):
                version_matches("0.17", specifier)
            continue
        for version in VERSIONS:
            try:
                expected = _packaging(version, specifier)
            except Exception:
                continue  # not a version packaging reads ("1!0.17" is; none of these should fail)
            assert version_matches(version, specifier) is expected, (version, specifier)
            assert version_matches(Version(version.lstrip("bB")) if version[:1] in "bB" else Version(version),
                                   specifier) is expected, (version, specifier)
            checked += 1
    assert checked > 5000


@pytest.mark.parametrize("specifier", [">=0.17,foo", ">=0.17,,<0.18x", "=>0.17", ">=", "<0.17,~=", ">=0.17,<"])
def test_a_bad_clause_is_an_error_even_beside_plain_ones(specifier):
    with pytest.raises(VersionError):
        version_matches("0.17.1", specifier)
    with pytest.raises(VersionError):
        parse_specifier(specifier)


def test_a_check_of_a_vllm_manifest_loads_neither_specifiers_nor_the_ggml_catalog(tmp_path):
    """Start-up time: plain ranges need no packaging.specifiers, a vLLM manifest no ggml catalog."""
    manifest = tmp_path / "deploy.yaml"
    manifest.write_text((REPO_ROOT / "examples" / "llama70b-fp8-h100.yaml").read_text(encoding="utf-8"),
                        encoding="utf-8")
    code = ("import sys\n"
            "from kvlint.cli.lint import run_plain_check\n"
            f"try:\n    run_plain_check([{str(manifest)!r}])\nexcept SystemExit as exit_:\n    print('exit', exit_.code)\n"
            "print(sorted(m for m in sys.modules if m.startswith(('packaging', 'kvlint.resolve.', 'kvlint.catalog.', 'json'))))"
            )
    env = dict(os.environ, KVLINT_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("KVLINT_NO_CACHE", None)
    for run in ("cold", "warm"):  # the second run finds the parsed schema in the data cache
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=str(tmp_path),
                              env=env)
        assert done.returncode == 0, done.stderr
        *_, exit_line, loaded = done.stdout.strip().splitlines()
        assert exit_line == "exit 0"
        loaded = ast.literal_eval(loaded)  # a printed list of module names
        assert "packaging.version" in loaded and "kvlint.resolve.builder" in loaded  # the check ran
        assert not {"packaging.specifiers", "kvlint.resolve.llamacpp", "kvlint.catalog.ggml"} & set(loaded)
    assert "json" not in loaded, "a warm run should not need the json module"
