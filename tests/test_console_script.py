"""Start-up shortcuts change nothing but the time: commands load on use; a plain `kvlint check
PATH...` runs without click (kvlint.cli.lint) and prints what the click command prints; the
parsed-data cache (kvlint.datacache) gives the same output cold, warm and off."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import REPO_ROOT


def _console(args, cwd, env):
    code = "import sys\nfrom kvlint.cli import run\nsys.argv = ['kvlint'] + sys.argv[1:]\nrun()\n"
    return subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, env=env, capture_output=True, text=True)


def test_console_script_output_is_the_same_with_the_data_cache_cold_warm_and_off(tmp_path):
    manifest = REPO_ROOT / "examples" / "llama70b-fp8-h100.yaml"
    broken = tmp_path / "broken.yaml"
    broken.write_text(manifest.read_text(encoding="utf-8").replace("dtype: fp8_e4m3", "dtype: fp9"))
    (tmp_path / "kvlint.toml").write_text("# defaults\n")
    env = {k: v for k, v in os.environ.items() if k not in ("KVLINT_NO_CACHE",)}
    env.update(KVLINT_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=str(REPO_ROOT))
    args = ["check", str(manifest), str(broken)]
    cold = _console(args, tmp_path, env)
    assert any((tmp_path / "cache").iterdir())  # the cold run wrote the cache the warm run reads
    warm = _console(args, tmp_path, env)
    off = _console(args, tmp_path, {**env, "KVLINT_NO_CACHE": "1"})
    assert cold.returncode == 1 and "broken.yaml" in cold.stdout  # the fp9 typo is a finding
    assert (cold.returncode, cold.stdout, cold.stderr) == (warm.returncode, warm.stdout, warm.stderr)
    assert (warm.returncode, warm.stdout, warm.stderr) == (off.returncode, off.stdout, off.stderr)


def test_check_loads_no_other_command():
    """`kvlint check` imports its own command module only (the group loads commands on use)."""
    manifest = REPO_ROOT / "examples" / "llama70b-fp8-h100.yaml"
    code = (
        "import sys\nfrom kvlint.cli import main\n"
        f"try:\n    main(['check', {str(manifest)!r}])\nexcept SystemExit:\n    pass\n"
        "print('LOADED', sorted(m for m in sys.modules if m.startswith('kvlint.cli.')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO_ROOT)
    loaded = "['kvlint.cli.app', 'kvlint.cli.check', 'kvlint.cli.lint', 'kvlint.cli.options', 'kvlint.cli.params']"
    assert f"LOADED {loaded}" in done.stdout, done.stdout + done.stderr


@pytest.mark.parametrize("argv, expected", [
    (["check"], []),
    (["check", "a.yaml", "missing/dir"], ["a.yaml", "missing/dir"]),
    (["check", "-"], None),  # stdin
    (["check", "--", "a.yaml"], None),
    (["check", "a.yaml", "--output-format", "json"], None),  # an option: see plain_check_arguments
    (["check", "-v", "a.yaml"], None),
    (["check", ""], None),
    (["--verbose", "check", "a.yaml"], None),
    (["rules"], None),
    ([], None),
])
def test_plain_check_is_only_paths(argv, expected):
    from kvlint.cli.lint import plain_check_paths

    assert plain_check_paths(argv) == expected


@pytest.mark.parametrize("argv, expected", [
    (["check", "a.yaml", "--output-format", "json"], (["a.yaml"], "json")),
    (["check", "--output-format=github", "a.yaml", "b.yaml"], (["a.yaml", "b.yaml"], "github")),
    (["check", "--output-format", "sarif"], ([], "sarif")),
    (["check", "a.yaml"], (["a.yaml"], None)),
    (["check", "a.yaml", "--output-format", "GitHub"], None),  # click.Choice is case-sensitive
    (["check", "a.yaml", "--output-format", "nope"], None),
    (["check", "a.yaml", "--output-format"], None),
    (["check", "a.yaml", "--output-format="], None),
    (["check", "--output-format", "json", "--output-format", "json", "a.yaml"], None),
    (["check", "--output-format", "json", "-q", "a.yaml"], None),
    (["check", "-o", "json", "a.yaml"], None),  # -o is --output-file
])
def test_plain_check_takes_one_known_output_format(argv, expected):
    from kvlint.cli.lint import plain_check_arguments

    assert plain_check_arguments(argv) == expected


def test_unreadable_path_or_completion_request_goes_through_click(tmp_path, monkeypatch):
    from kvlint.cli import lint

    manifest = tmp_path / "m.yaml"
    manifest.write_text("x: 1\n")
    assert lint.plain_check_paths(["check", str(manifest)]) == [str(manifest)]
    monkeypatch.setattr(lint.os, "access", lambda path, mode: False)  # as for a user without read permission
    assert lint.plain_check_paths(["check", str(manifest)]) is None
    monkeypatch.undo()
    monkeypatch.setenv("_KVLINT_COMPLETE", "bash_complete")
    assert lint.plain_check_paths(["check", str(manifest)]) is None


def test_plain_check_prints_what_the_click_command_prints(tmp_path):
    """The console script's plain path against the click group, on passing, failing, missing,
    unparsable and escape-laden inputs, in one process each (and without importing click)."""
    good = REPO_ROOT / "examples" / "llama70b-fp8-h100.yaml"
    text = good.read_text(encoding="utf-8")
    (tmp_path / "bad.yaml").write_text(text.replace("dtype: fp8_e4m3", "dtype: fp9  # ünïcödé"))
    (tmp_path / "esc\x1b[31m.yaml").write_text(text.replace("dtype: fp8_e4m3", "dtype: fp9"))
    (tmp_path / "broken.yaml").write_text("apiVersion: kvlint/v1\nkind: Deployment\nmetadata: {name: [\n")
    (tmp_path / "kvlint.toml").write_text("# defaults\n")
    env = {k: v for k, v in os.environ.items() if k not in ("KVLINT_NO_CACHE",)}
    env.update(PYTHONPATH=str(REPO_ROOT), KVLINT_CACHE_DIR=str(tmp_path / "cache"))
    plain = "import sys\nfrom kvlint.cli import run\nsys.argv = ['kvlint'] + sys.argv[1:]\nrun()\n"
    probe = "import sys\nfrom kvlint.cli import run\nsys.argv = ['kvlint'] + sys.argv[1:]\n" \
            "try:\n    run()\nfinally:\n    print('CLICK', 'click' in sys.modules, file=sys.stderr)\n"
    clicked = "import sys\nfrom kvlint.cli import main\nmain(sys.argv[1:])\n"
    cases = [[str(good)], ["bad.yaml"], ["esc\x1b[31m.yaml", "bad.yaml"], ["missing.yaml"], ["broken.yaml"], [],
             ["--output-format", "github", "bad.yaml"], ["bad.yaml", "--output-format=json"],
             ["--output-format", "sarif", "broken.yaml"], ["--output-format", "concise", "missing.yaml"]]
    for args in cases:
        runs = [subprocess.run([sys.executable, "-c", code, "check", *args], cwd=tmp_path, env=env,
                               capture_output=True, text=True) for code in (plain, clicked)]
        assert (runs[0].returncode, runs[0].stdout, runs[0].stderr) == (runs[1].returncode, runs[1].stdout, runs[1].stderr)
        assert runs[0].returncode in (0, 1, 2) and (runs[0].stdout or runs[0].stderr)
    for args in (["bad.yaml"], ["--output-format", "github", "bad.yaml"]):
        probed = subprocess.run([sys.executable, "-c", probe, "check", *args], cwd=tmp_path, env=env,
                                capture_output=True, text=True)
        assert "CLICK False" in probed.stderr and probed.returncode == 1


@pytest.mark.parametrize("encoding", ["utf-8", "ascii", "latin-1"])
@pytest.mark.parametrize("text", ["plain line", "ünïcödé", "red \x1b[31mwarning\x1b[0m", ""])
@pytest.mark.parametrize("nl", [True, False])
def test_echo_writes_what_click_echo_writes(monkeypatch, encoding, text, nl):
    import io

    import click

    from kvlint.cli.options import echo

    written = []
    for function in (echo, lambda message, nl: click.echo(message, nl=nl)):
        raw = io.BytesIO()
        stream = io.TextIOWrapper(raw, encoding=encoding, errors="replace", write_through=True)
        monkeypatch.setattr(sys, "stdout", stream)
        function(text, nl=nl)
        stream.flush()
        written.append(raw.getvalue())
    monkeypatch.undo()
    assert written[0] == written[1]
