"""CLI habits as ruff users expect them: one `--output-format` and `-o/--output-file` across
commands (the old spellings still accepted, hidden), `--quiet`, `--statistics`, `--show-files`,
`--show-settings`, colour only for a terminal (NO_COLOR / FORCE_COLOR), documented completion."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO_ROOT, VALID_MANIFEST

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python < 3.11
    import tomli as tomllib

TYPO = VALID_MANIFEST.replace("  dtype: auto\n", "  dtyp: auto\n  dtype: auto\n")  # KV102 at 13:3
FITS = (REPO_ROOT / "tests" / "fixtures" / "ci" / "llama8b-base.yaml").read_text(encoding="utf-8")
ESC = "\x1b["


# --- --output-format and -o/--output-file on every command that prints a report -----------------


@pytest.mark.parametrize("args", [["capacity", "ok.yaml"], ["rules"], ["rule", "KV302"]])
def test_output_format_everywhere_and_format_is_a_hidden_alias(workspace, write, cli, args):
    write("ok.yaml", FITS)
    new = cli([*args, "--output-format", "json"])
    old = cli([*args, "--format", "json"])
    assert new.exit_code == 0 == old.exit_code, new.output
    assert new.stdout == old.stdout and json.loads(new.stdout)
    help_text = cli([args[0], "--help"]).stdout
    assert "--output-format [text|json]" in help_text and "--format" not in help_text.replace("--output-format", "")


def test_output_format_and_format_that_disagree_are_a_usage_error(workspace, cli):
    result = cli(["rules", "--output-format", "json", "--format", "text"])
    assert result.exit_code == 2
    assert "--output-format json and --format text disagree" in result.stderr


@pytest.mark.parametrize("args, legacy", [
    (["capacity", "ok.yaml"], None), (["rules"], None), (["rule", "KV302"], None),
    (["schema"], "--output"), (["check", "ok.yaml"], None),
])
def test_output_file_everywhere(workspace, write, cli, args, legacy):
    write("ok.yaml", FITS)
    printed = cli(args).stdout
    for flag in ("-o", "--output-file") + ((legacy,) if legacy else ()):
        target = workspace / f"out{flag.strip('-')}.txt"
        result = cli([*args, flag, str(target)])
        assert result.exit_code == 0, result.output
        assert result.stdout == "" and target.read_text(encoding="utf-8") == printed


def test_ablate_takes_output_file_and_the_old_out(workspace, write, cli):
    write("ok.yaml", FITS)
    assert cli(["ablate", "ok.yaml", "--output-file", "a.yaml"]).exit_code == 0
    assert cli(["ablate", "ok.yaml", "--out", "b.yaml"]).exit_code == 0
    assert (workspace / "a.yaml").read_text() == (workspace / "b.yaml").read_text() != ""
    again = cli(["ablate", "ok.yaml", "-o", "a.yaml"])
    assert again.exit_code == 2 and "a.yaml exists; pass --force" in again.stderr


def test_diff_takes_output_format(workspace, write, cli):
    subprocess.run(["git", "init", "-q"], cwd=workspace, check=True)
    write("ok.yaml", FITS)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t.invalid", "-c", "commit.gpgsign=false",
                    "commit", "-qam", "x", "--allow-empty"], cwd=workspace, check=True)
    result = cli(["diff", "--base", "HEAD", "--output-format", "json"])
    assert result.exit_code == 0, result.output
    assert "deployments" in json.loads(result.stdout)


# --- --quiet, --statistics ----------------------------------------------------------------------


def test_quiet_prints_only_findings_and_nothing_on_success(workspace, write, cli):
    write("bad.yaml", TYPO)
    write("ok.yaml", VALID_MANIFEST)
    bad = cli(["check", "-q", "--output-format", "concise", "bad.yaml"])
    assert bad.exit_code == 1
    assert bad.stdout.splitlines() == [line for line in bad.stdout.splitlines() if line.startswith("bad.yaml:13:3: KV102 ")]
    assert len(bad.stdout.splitlines()) == 1
    ok = cli(["check", "--quiet", "ok.yaml"])
    assert ok.exit_code == 0 and ok.stdout == ""
    empty = workspace / "empty"
    empty.mkdir()
    nothing = cli(["check", "--quiet", "empty"])
    assert nothing.stdout == "" and nothing.stderr == ""  # no "no manifests found" warning either


def test_quiet_leaves_json_whole(workspace, write, cli):
    write("bad.yaml", TYPO)
    report = json.loads(cli(["check", "-q", "--output-format", "json", "bad.yaml"]).stdout)
    assert report["summary"]["errors"] == 1


def test_statistics_counts_per_code(workspace, write, cli):
    write("a.yaml", TYPO)
    write("b.yaml", TYPO)
    write("c.yaml", VALID_MANIFEST.replace("name: llama8b-bf16-h100", "name: Llama_8B"))  # KV105
    result = cli(["check", "--statistics", "."])
    assert result.exit_code == 1
    assert result.stdout == ("2  KV102  [error] unknown-property\n"
                             "1  KV105  [error] pattern-mismatch\n"
                             "Found 3 errors, 0 warnings, 0 infos in 3 files (3 documents).\n")
    as_json = json.loads(cli(["check", "--statistics", "--output-format", "json", "."]).stdout)
    assert as_json == [{"code": "KV102", "name": "unknown-property", "severity": "error", "count": 2},
                       {"code": "KV105", "name": "pattern-mismatch", "severity": "error", "count": 1}]
    sarif = cli(["check", "--statistics", "--output-format", "sarif", "."])
    assert sarif.exit_code == 2 and "--statistics prints text or json" in sarif.stderr


# --- --show-files, --show-settings --------------------------------------------------------------


def test_show_files_lists_what_a_check_would_read(workspace, write, cli):
    write("kvlint.toml", 'exclude = ["skip"]\n')
    write("deploy/a.yaml", VALID_MANIFEST)
    write("deploy/notes.yaml", "just: yaml\n")  # neither a manifest nor a native deployment file
    write("skip/b.yaml", VALID_MANIFEST)
    write("c.json", json.dumps({"apiVersion": "kvlint/v1"}))
    result = cli(["check", "--show-files"])
    assert result.exit_code == 0, result.output
    assert result.stdout == "c.json\ndeploy/a.yaml\n"
    assert cli(["check", "--show-files", "skip"]).stdout == "skip/b.yaml\n"  # named: checked


def test_show_settings_prints_the_resolved_configuration_as_toml(workspace, write, cli):
    write("kvlint.toml", 'ignore = ["KV501"]\nfail-on = "warning"\nper-file-ignores = { "staging/*.yaml" = ["KV601"] }\n'
                         '[defaults]\n"deploy/*" = { gpu = "H100-SXM-80GB" }\n')
    result = cli(["check", "--show-settings", "--fail-on", "error", "--strict"])
    assert result.exit_code == 0, result.output
    first, _, rest = result.stdout.partition("\n")
    assert first == f"# kvlint settings (configuration: {workspace / 'kvlint.toml'})"
    settings = tomllib.loads(result.stdout)
    assert settings["ignore"] == ["KV501"]
    assert settings["fail-on"] == "error" and settings["strict"] is True  # the command line wins
    assert settings["per-file-ignores"] == {"staging/*.yaml": ["KV601"]}
    assert settings["defaults"] == {"deploy/*": {"gpu": "H100-SXM-80GB"}}
    assert settings["select"] == ["ALL"] and settings["max-scale-overhead"] == 0.03
    assert "# max-capacity-regression: not set" in rest
    # every key it prints is a configuration key kvlint accepts
    schema = json.loads((REPO_ROOT / "schemas" / "config.json").read_text(encoding="utf-8"))
    assert set(settings) <= set(schema["properties"])


# --- colour --------------------------------------------------------------------------------------


def test_colour_only_when_asked_and_never_into_a_file(workspace, write, cli):
    write("bad.yaml", TYPO)
    plain = cli(["check", "--output-format", "concise", "bad.yaml"])  # not a terminal
    assert ESC not in plain.stdout
    forced = cli(["check", "--output-format", "concise", "bad.yaml"], env={"FORCE_COLOR": "1"})
    assert forced.stdout.startswith("\x1b[1mbad.yaml:13:3:\x1b[0m \x1b[31;1mKV102\x1b[0m \x1b[31m[error]\x1b[0m ")
    assert forced.exit_code == 1
    assert ESC not in cli(["check", "bad.yaml"], env={"FORCE_COLOR": "1", "NO_COLOR": "1"}).stdout
    assert ESC not in cli(["check", "--output-format", "json", "bad.yaml"], env={"FORCE_COLOR": "1"}).stdout
    cli(["check", "-o", "report.txt", "bad.yaml"], env={"FORCE_COLOR": "1"})
    assert ESC not in (workspace / "report.txt").read_text(encoding="utf-8")


def _kvlint(*args: str, cwd: Path, env_extra=None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR", "GITHUB_STEP_SUMMARY")}
    env.update(env_extra or {})
    return subprocess.run([str(Path(sys.executable).parent / "kvlint"), *args], cwd=str(cwd), env=env,
                          capture_output=True, text=True, timeout=120)


def test_real_process_colour_quiet_and_statistics(workspace, write):
    write("bad.yaml", TYPO)
    piped = _kvlint("check", "--output-format", "concise", "bad.yaml", cwd=workspace)
    assert piped.returncode == 1 and ESC not in piped.stdout  # a pipe is not a terminal
    forced = _kvlint("check", "--quiet", "--output-format", "concise", "bad.yaml", cwd=workspace,
                     env_extra={"FORCE_COLOR": "1"})
    assert forced.returncode == 1
    assert forced.stdout.startswith("\x1b[1mbad.yaml:13:3:\x1b[0m") and len(forced.stdout.splitlines()) == 1
    stats = _kvlint("check", "--statistics", "bad.yaml", cwd=workspace)
    assert stats.stdout.splitlines()[0] == "1  KV102  [error] unknown-property"


def test_shell_completion_works_as_the_readme_says(workspace):
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    assert 'eval "$(_KVLINT_COMPLETE=bash_source kvlint)"' in readme
    script = _kvlint(cwd=workspace, env_extra={"_KVLINT_COMPLETE": "bash_source"})
    assert script.returncode == 0 and "_kvlint_completion" in script.stdout
    words = _kvlint(cwd=workspace, env_extra={"_KVLINT_COMPLETE": "bash_complete", "COMP_WORDS": "kvlint check --sh",
                                              "COMP_CWORD": "2"})
    assert "plain,--show-files" in words.stdout and "plain,--show-settings" in words.stdout
