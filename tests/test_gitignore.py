""".gitignore in directory walks: with git (`git check-ignore`) in a real work tree, and with
kvlint's own matcher when git is absent; `--no-respect-gitignore`; named files always checked."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from conftest import VALID_MANIFEST

from kvlint.pipeline import gitignore
from kvlint.pipeline.gitignore import PythonMatcher, parse

GITIGNORE = "build/\n*.gen.yaml\n!keep.gen.yaml\n/top-only.yaml\ndocs/**/draft.yaml\n"
TREE = {
    "a.yaml": VALID_MANIFEST,
    "build/b.yaml": VALID_MANIFEST,
    "build/sub/c.yaml": VALID_MANIFEST,
    "x.gen.yaml": VALID_MANIFEST,
    "keep.gen.yaml": VALID_MANIFEST,
    "top-only.yaml": VALID_MANIFEST,
    "sub/top-only.yaml": VALID_MANIFEST,  # anchored pattern: only at the top
    "sub/build/d.yaml": VALID_MANIFEST,  # `build/` matches at any depth
    "docs/draft.yaml": VALID_MANIFEST,
    "docs/a/b/draft.yaml": VALID_MANIFEST,
    "docs/final.yaml": VALID_MANIFEST,
    "nested/.gitignore": "*.yaml\n!ok.yaml\n",
    "nested/ok.yaml": VALID_MANIFEST,
    "nested/no.yaml": VALID_MANIFEST,
}
EXPECTED = ["a.yaml", "docs/final.yaml", "keep.gen.yaml", "nested/ok.yaml", "sub/top-only.yaml"]
EVERYTHING = sorted(p for p in TREE if p.endswith(".yaml"))


def _tree(write):
    write(".gitignore", GITIGNORE)
    for path, text in TREE.items():
        write(path, text)


def _files(cli, *args):
    result = cli(["check", "--show-files", *args])
    assert result.exit_code == 0, result.output
    return sorted(line for line in result.stdout.splitlines())


needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


@needs_git
def test_git_work_tree(workspace, write, cli):
    subprocess.run(["git", "init", "-q"], cwd=workspace, check=True)
    _tree(write)
    assert _files(cli) == EXPECTED
    assert _files(cli, "--no-respect-gitignore") == EVERYTHING
    assert _files(cli, "build/b.yaml") == ["build/b.yaml"]  # named: always checked
    assert _files(cli, "build") == ["build/b.yaml", "build/sub/c.yaml"]  # named directory: walked


@needs_git
def test_git_ignores_even_what_is_tracked(workspace, write, cli):
    subprocess.run(["git", "init", "-q"], cwd=workspace, check=True)
    _tree(write)
    subprocess.run(["git", "add", "-f", "x.gen.yaml"], cwd=workspace, check=True)
    assert "x.gen.yaml" not in _files(cli)  # as ruff: the patterns decide, not the index


@needs_git
def test_git_info_exclude_counts_in_a_work_tree(workspace, write, cli):
    subprocess.run(["git", "init", "-q"], cwd=workspace, check=True)
    write("a.yaml", VALID_MANIFEST)
    write("private/b.yaml", VALID_MANIFEST)
    (workspace / ".git" / "info").mkdir(exist_ok=True)
    (workspace / ".git" / "info" / "exclude").write_text("private/\n", encoding="utf-8")
    assert _files(cli) == ["a.yaml"]


def test_without_git(workspace, write, cli, monkeypatch):
    monkeypatch.setattr(gitignore.shutil, "which", lambda name: None)
    _tree(write)
    assert _files(cli) == EXPECTED
    assert _files(cli, "--no-respect-gitignore") == EVERYTHING
    assert _files(cli, "x.gen.yaml") == ["x.gen.yaml"]
    assert _files(cli, "build") == ["build/b.yaml", "build/sub/c.yaml"]


def test_not_a_work_tree_reads_gitignore_files_itself(workspace, write, cli):
    # no `git init`: git says it is not a work tree, so kvlint's matcher answers
    _tree(write)
    assert _files(cli) == EXPECTED


def test_configuration_turns_it_off(workspace, write, cli):
    _tree(write)
    write("kvlint.toml", "respect-gitignore = false\n")
    assert _files(cli) == EVERYTHING
    assert _files(cli, "--respect-gitignore") == EXPECTED


def test_the_check_itself_skips_ignored_files(workspace, write, cli):
    write(".gitignore", "build/\n")
    write("build/bad.yaml", VALID_MANIFEST.replace("  dtype: auto\n", "  dtyp: auto\n"))
    result = cli(["check"])
    assert result.exit_code == 0 and "build/bad.yaml" not in result.output
    assert cli(["check", "--no-respect-gitignore"]).exit_code == 1


@pytest.mark.parametrize("pattern, path, is_dir, ignored", [
    ("*.log", "a.log", False, True),
    ("*.log", "deep/er/a.log", False, True),
    ("/a.log", "deep/a.log", False, False),
    ("/a.log", "a.log", False, True),
    ("build/", "build", True, True),
    ("build/", "build", False, False),  # a file named build
    ("doc/*.txt", "doc/x.txt", False, True),
    ("doc/*.txt", "doc/sub/x.txt", False, False),  # `*` does not cross `/`
    ("**/logs", "a/b/logs", True, True),
    ("logs/**", "logs/a/b", False, True),
    ("a/**/b", "a/b", False, True),
    ("a/**/b", "a/x/y/b", False, True),
    ("f?le[0-9].yaml", "file7.yaml", False, True),
    ("f[!a]le.yaml", "fale.yaml", False, False),
    ("\\#name", "#name", False, True),
    ("# comment", "# comment", False, False),
])
def test_pattern_semantics(tmp_path, pattern, path, is_dir, ignored):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text(pattern + "\n", encoding="utf-8")
    assert PythonMatcher(tmp_path)(tmp_path / path, is_dir) is ignored


def test_negation_last_match_wins(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text("*.yaml\n!keep.yaml\n", encoding="utf-8")
    matcher = PythonMatcher(tmp_path)
    assert matcher(tmp_path / "x.yaml", False) and not matcher(tmp_path / "keep.yaml", False)


def test_gitignore_above_the_walked_directory(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text("gen/\n", encoding="utf-8")
    (tmp_path / "deploy" / "gen").mkdir(parents=True)
    assert PythonMatcher(tmp_path / "deploy")(tmp_path / "deploy" / "gen", True)


def test_no_work_tree_and_no_configuration_reads_nothing_above(tmp_path):
    (tmp_path / ".gitignore").write_text("*\n", encoding="utf-8")
    (tmp_path / "deploy").mkdir()
    assert not PythonMatcher(tmp_path / "deploy")(tmp_path / "deploy" / "a.yaml", False)
    assert PythonMatcher(tmp_path / "deploy", stop=tmp_path)(tmp_path / "deploy" / "a.yaml", False)


def test_parse_skips_blanks_and_comments():
    assert parse("\n# c\n   \n") == []
