"""Configuration: discovery, validation, CLI overrides, per-file-ignores (kvlint/config.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import VALID_MANIFEST, check_json
from kvlint.config import Config, discover, load_config, split_csv

TYPO = VALID_MANIFEST.replace("  dtype: auto\n", "  dtyp: auto\n  dtype: auto\n")  # KV102
BAD_NAME = VALID_MANIFEST.replace("name: llama8b-bf16-h100", "name: Llama_8B")  # KV105 at 4:9 (no semantic effect)


def found(report) -> set:
    return {d["code"] for d in report["diagnostics"]}


@pytest.fixture
def project(workspace: Path) -> Path:
    """workspace/ without the pinning kvlint.toml, so each test writes its own."""
    (workspace / "kvlint.toml").unlink()
    return workspace


def test_kvlint_toml_discovered_upward_from_cwd(project, monkeypatch, write):
    write("kvlint.toml", 'ignore = ["KV102"]\n')
    write("deep/er/m.yaml", TYPO + "---\n" + BAD_NAME)
    monkeypatch.chdir(project / "deep" / "er")
    assert found(check_json("m.yaml")) == {"KV105"}
    assert discover(Path.cwd()) == (project / "kvlint.toml").resolve()


def test_pyproject_tool_kvlint_discovered(project, monkeypatch, write):
    write("pyproject.toml", '[project]\nname = "x"\n\n[tool.kvlint]\nignore = ["unknown-property"]\n')
    write("sub/m.yaml", TYPO)
    monkeypatch.chdir(project / "sub")
    assert found(check_json("m.yaml")) == set()


def test_pyproject_without_table_does_not_stop_the_search(project, monkeypatch, write):
    write("kvlint.toml", 'ignore = ["KV102"]\n')
    write("pkg/pyproject.toml", '[project]\nname = "x"\n')
    write("pkg/m.yaml", TYPO)
    monkeypatch.chdir(project / "pkg")
    assert found(check_json("m.yaml")) == set()


def test_kvlint_toml_wins_over_pyproject_in_the_same_directory(project, write):
    write("kvlint.toml", 'ignore = ["KV102"]\n')
    write("pyproject.toml", '[tool.kvlint]\nignore = ["KV105"]\n')
    write("m.yaml", TYPO + "---\n" + BAD_NAME)
    assert found(check_json("m.yaml")) == {"KV105"}


@pytest.mark.parametrize(
    "name, text",
    [
        ("kvlint.toml", 'selec = ["KV1"]\n'),
        ("pyproject.toml", '[tool.kvlint]\nfail_on = "warning"\n'),
    ],
)
def test_unknown_key_is_exit_two_one_line(project, write, cli, name, text):
    write(name, text)
    write("m.yaml", VALID_MANIFEST)
    result = cli(["check", "m.yaml"])
    assert result.exit_code == 2
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("kvlint: error: ") and "unknown configuration key" in line
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    "text, needle",
    [
        ('fail-on = "sometimes"\n', "fail-on"),
        ('select = "KV1"\n', "select"),
        ("select = [\n", "invalid TOML"),
    ],
)
def test_invalid_values_are_exit_two(project, write, cli, text, needle):
    write("kvlint.toml", text)
    write("m.yaml", VALID_MANIFEST)
    result = cli(["check", "m.yaml"])
    assert result.exit_code == 2
    assert needle in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_unknown_selector_in_config_is_exit_two(project, write, cli):
    write("kvlint.toml", 'ignore = ["KV9999"]\n')
    write("m.yaml", VALID_MANIFEST)
    result = cli(["check", "m.yaml"])
    assert result.exit_code == 2 and "KV9999" in result.stderr


def test_cli_overrides_config(project, write, cli):
    write("kvlint.toml", 'select = ["KV102"]\nfail-on = "warning"\noutput-format = "json"\n')
    write("m.yaml", TYPO + "---\n" + BAD_NAME)
    # config alone: select KV102, json output
    assert found(json.loads(cli(["check", "m.yaml"]).stdout)) == {"KV102"}
    # --select replaces the config's select; --output-format replaces the config's
    result = cli(["check", "--select", "KV105", "--output-format", "concise", "m.yaml"])
    assert "KV105" in result.stdout and "KV102" not in result.stdout
    # --fail-on replaces the config's: a warning-only run passes with --fail-on error
    write("w.yaml", VALID_MANIFEST.replace("  dtype: auto\n", "  dtype: auto  # kvlint: ignore[KV102]\n"))
    assert cli(["check", "--select", "ALL", "w.yaml"]).exit_code == 1
    assert cli(["check", "--select", "ALL", "--fail-on", "error", "w.yaml"]).exit_code == 0


def test_cli_ignore_adds_to_config_ignore(project, write):
    write("kvlint.toml", 'ignore = ["KV102"]\n')
    write("m.yaml", TYPO + "---\n" + BAD_NAME)
    assert found(check_json("--ignore", "KV105", "m.yaml")) == set()


def test_explicit_config_path(project, write, cli):
    write("conf/strict.toml", 'ignore = ["KV105"]\n')
    write("m.yaml", BAD_NAME)
    assert found(check_json("--config", "conf/strict.toml", "m.yaml")) == set()
    missing = cli(["check", "--config", "conf/nope.toml", "m.yaml"])
    assert missing.exit_code == 2 and "does not exist" in missing.stderr


def test_per_file_ignores_relative_to_the_config(project, monkeypatch, write):
    write("kvlint.toml", '[per-file-ignores]\n"legacy/*.yaml" = ["KV102", "pattern-mismatch"]\n')
    write("legacy/old.yaml", TYPO + "---\n" + BAD_NAME)
    write("new/m.yaml", TYPO)
    monkeypatch.chdir(project / "new")  # the glob is relative to the config file, not the cwd
    report = check_json("../legacy/old.yaml", "m.yaml")
    assert [(d["file"], d["code"]) for d in report["diagnostics"]] == [("m.yaml", "KV102")]


def test_exclude_relative_to_the_config(project, monkeypatch, write):
    write("kvlint.toml", 'exclude = ["drafts"]\n')
    write("drafts/m.yaml", TYPO)
    write("live/m.yaml", TYPO)
    monkeypatch.chdir(project / "live")
    assert check_json("..")["summary"]["files"] == 1


def test_rules_dir_adds_organisation_rules(project, write, cli):
    rule = (Path(__file__).resolve().parent.parent / "rules" / "KV102-unknown-property.yaml").read_text()
    org = rule.replace("code: KV102", "code: ORG102").replace("name: unknown-property", "name: org-unknown")
    write("org-rules/ORG102-org-unknown.yaml", org)
    write("kvlint.toml", 'rules-dir = ["org-rules"]\n')
    listing = cli(["rules", "--format", "json"])
    assert "ORG102" in [r["code"] for r in json.loads(listing.stdout)]
    # (a fresh directory: the rulebook is cached per directory list within one process)
    write("bad-rules/ORG103-broken.yaml", "code: ORG103\n")
    write("kvlint.toml", 'rules-dir = ["bad-rules"]\n')
    broken = cli(["rules"])
    assert broken.exit_code == 2 and "invalid rule file" in broken.stderr


def test_load_config_defaults_and_values(project, write):
    assert load_config(start=project) == Config()
    path = write("kvlint.toml", 'select = ["KV1"]\nextend-select = ["KV0"]\nfail-on = "info"\n'
                 'exclude = ["x"]\nrules-dir = ["r"]\n')
    config = load_config(start=project)
    assert config.path == path.resolve()
    assert config.select == ("KV1",) and config.extend_select == ("KV0",)
    assert config.fail_on == "info" and config.exclude == ("x",)
    assert config.rules_dirs == (str((project / "r").resolve()),)
    assert config.root == project.resolve()


def test_split_csv():
    assert split_csv(["KV1, KV2", "KV3", ""]) == ("KV1", "KV2", "KV3")
    assert split_csv(None) == ()
