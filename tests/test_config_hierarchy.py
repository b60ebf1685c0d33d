"""Nearest configuration per file, as ruff does it: each file checked uses the closest
`.kvlint.toml`, `kvlint.toml` or `pyproject.toml [tool.kvlint]` in its directory or above;
`--config` is used for every file; `--show-settings PATH` shows PATH's."""

from __future__ import annotations

import json
import os
import sys

import pytest

from conftest import REPO_ROOT, VALID_MANIFEST

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python < 3.11
    import tomli as tomllib

TYPO = VALID_MANIFEST.replace("  dtype: auto\n", "  dtyp: auto\n  dtype: auto\n")  # KV102


def _codes_by_file(result) -> dict:
    assert result.exit_code in (0, 1), result.output
    found: dict = {}
    for d in json.loads(result.stdout)["diagnostics"]:
        found.setdefault(d["filename"] if "filename" in d else d["file"], set()).add(d["code"])
    return found


def _kv102_files(cli, *args) -> set:
    return {f for f, codes in _codes_by_file(cli(["check", "--output-format", "json", *args])).items() if "KV102" in codes}


def test_each_file_uses_its_nearest_configuration(workspace, write, cli):
    write("top.yaml", TYPO)
    write("team/kvlint.toml", 'ignore = ["KV102"]\n')
    write("team/a.yaml", TYPO)
    write("team/deep/b.yaml", TYPO)  # no configuration of its own: team's
    write("other/.kvlint.toml", 'ignore = ["KV102"]\n')
    write("other/c.yaml", TYPO)
    write("py/pyproject.toml", '[tool.kvlint]\nignore = ["KV102"]\n')
    write("py/d.yaml", TYPO)
    write("plain/pyproject.toml", '[project]\nname = "x"\n')  # no [tool.kvlint]: not a configuration
    write("plain/e.yaml", TYPO)
    assert _kv102_files(cli) == {"top.yaml", "plain/e.yaml"}
    # a directory or file named from elsewhere uses its own nearest configuration too
    assert _kv102_files(cli, "team") == set()
    assert _kv102_files(cli, "team/deep/b.yaml") == set()
    os.chdir(workspace / "team")
    assert _kv102_files(cli, "../top.yaml") == {"../top.yaml"}


def test_dot_kvlint_toml_comes_first_in_a_directory(workspace, write, cli):
    write("d/.kvlint.toml", 'ignore = ["KV102"]\n')
    write("d/kvlint.toml", "# not this one\n")
    write("d/a.yaml", TYPO)
    assert _kv102_files(cli, "d") == set()


def test_config_option_is_used_for_every_file(workspace, write, cli):
    write("team/kvlint.toml", 'ignore = ["KV102"]\n')
    write("team/a.yaml", TYPO)
    write("strict.toml", 'select = ["KV102"]\n')
    assert _kv102_files(cli, "--config", "strict.toml") == {"team/a.yaml"}


def test_command_line_selection_applies_to_every_configuration(workspace, write, cli):
    write("team/kvlint.toml", 'ignore = ["KV102"]\n')
    write("team/a.yaml", TYPO)
    write("b.yaml", TYPO)
    assert _kv102_files(cli, "--ignore", "KV102") == set()
    assert _kv102_files(cli, "--select", "KV1") == {"b.yaml"}  # team still ignores KV102


def test_a_parent_exclude_prunes_a_folder_unless_it_is_named(workspace, write, cli):
    write("kvlint.toml", 'exclude = ["team"]\n')
    write("team/kvlint.toml", "# its own\n")
    write("team/a.yaml", TYPO)
    assert cli(["check", "--show-files"]).stdout == ""
    assert cli(["check", "--show-files", "team"]).stdout == "team/a.yaml\n"


def test_a_folders_rules_dir_is_its_own_and_not_linted(workspace, write, cli):
    rule = (REPO_ROOT / "examples" / "org" / "rules" / "ORG101-require-targets.yaml").read_text(encoding="utf-8")
    write("org/kvlint.toml", 'rules-dir = ["rules"]\n')
    write("org/rules/ORG101-require-targets.yaml", rule)
    write("org/a.yaml", VALID_MANIFEST)
    files = cli(["check", "--show-files"]).stdout
    assert files == "org/a.yaml\n"
    report = json.loads(cli(["check", "--output-format", "json"]).stdout)
    assert "ORG101" in {d["code"] for d in report["diagnostics"]}  # the folder's own rule ran


def test_examples_org_from_the_repository_root(monkeypatch, cli):
    monkeypatch.chdir(REPO_ROOT)
    result = cli(["check", "examples/org"])
    assert result.exit_code == 0, result.output
    assert result.stdout.strip().endswith("(1 document in 1 file).")
    assert cli(["check", "--show-files", "examples/org"]).stdout == "examples/org/llama8b-ft-acme-x1.yaml\n"


def test_show_settings_for_a_path(workspace, write, cli):
    write("kvlint.toml", 'fail-on = "warning"\n')
    write("team/kvlint.toml", 'ignore = ["KV102"]\n')
    write("team/a.yaml", TYPO)
    for target in ("team/a.yaml", "team"):
        result = cli(["check", "--show-settings", target])
        assert result.exit_code == 0, result.output
        assert result.stdout.startswith(f"# kvlint settings (configuration: {workspace / 'team' / 'kvlint.toml'})")
        assert tomllib.loads(result.stdout)["ignore"] == ["KV102"]
    here = tomllib.loads(cli(["check", "--show-settings"]).stdout)
    assert here["ignore"] == [] and here["fail-on"] == "warning"
    forced = cli(["check", "--show-settings", "--config", "kvlint.toml", "team/a.yaml"]).stdout
    assert tomllib.loads(forced)["ignore"] == []


def test_resolver_reads_each_configuration_once(tmp_path):
    from kvlint.config import Config, ConfigResolver

    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "kvlint.toml").write_text('ignore = ["KV102"]\n', encoding="utf-8")
    resolver = ConfigResolver(Config())
    first = resolver.for_directory(tmp_path / "a" / "b")
    assert first.ignore == ("KV102",)
    assert resolver.for_directory(tmp_path / "a") is first
    assert resolver.for_path(str(tmp_path / "a" / "b" / "x.yaml")) is first
    assert resolver.for_path("-") is resolver.base


@pytest.mark.parametrize("name", ["kvlint.toml", ".kvlint.toml"])
def test_discover_finds_both_names(tmp_path, name):
    from kvlint.config import discover

    (tmp_path / name).write_text("", encoding="utf-8")
    (tmp_path / "sub").mkdir()
    assert discover(tmp_path / "sub") == (tmp_path / name).resolve()
