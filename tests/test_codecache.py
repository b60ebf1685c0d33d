"""Start-up shortcuts change nothing but time: the compiled-dataclass-methods table
(kvlint.cli.codecache) makes the same classes; commands load on use; a plain `kvlint check
PATH...` runs without click (kvlint.cli.lint) and prints what the click command prints."""

from __future__ import annotations

import builtins
import dataclasses
import marshal
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

from conftest import REPO_ROOT
from kvlint.cli import codecache


_POINT = """
import dataclasses

@dataclasses.dataclass(frozen=True)
class Point:
    x: int
    y: int = 2
    tags: tuple = dataclasses.field(default_factory=tuple)
"""


def _make_class(module_name="kvlint.codecache_probe"):
    """A fresh frozen dataclass defined in a module named `module_name` (the table keeps only
    kvlint's own classes)."""
    module = types.ModuleType(module_name)
    sys.modules[module_name] = module
    try:
        exec(_POINT, module.__dict__)
    finally:
        del sys.modules[module_name]
    return module.Point


def _codes(cls):
    """The generated methods' code, compared by what runs (bytecode, constants, names)."""
    out = {}
    for name in ("__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__"):
        code = getattr(cls, name).__code__
        out[name] = (code.co_code, code.co_consts, code.co_names, code.co_varnames, code.co_freevars)
    return out


@pytest.fixture
def table(tmp_path, monkeypatch):
    path = tmp_path / "pycache" / "dataclass-methods.marshal"
    monkeypatch.setattr(codecache, "table_path", lambda: str(path))
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    return path


def test_classes_are_the_same_with_the_table_cold_and_warm(table):
    plain = _make_class()
    with codecache.cached_dataclass_methods():
        cold = _make_class()
    assert table.is_file()  # the table grew, so it was written
    written = table.stat().st_mtime_ns

    real_compile = builtins.compile

    def no_compiling(*args, **kwargs):
        raise AssertionError("a warm table compiles nothing")

    with codecache.cached_dataclass_methods():
        builtins.compile = no_compiling
        try:
            warm = _make_class()
        finally:
            builtins.compile = real_compile
    assert table.stat().st_mtime_ns == written  # nothing new: not rewritten
    assert _codes(plain) == _codes(cold) == _codes(warm)
    for cls in (cold, warm):
        point = cls(1)
        assert (point.x, point.y, point.tags, repr(point)) == (1, 2, (), "Point(x=1, y=2, tags=())")
        assert point == cls(1, 2) and hash(point) == hash(cls(1, 2)) and point != cls(1, 3)
        with pytest.raises(dataclasses.FrozenInstanceError):
            point.x = 3  # type: ignore[misc]
    assert "exec" not in vars(dataclasses)  # the hook is gone after the block


def test_classes_of_other_packages_are_compiled_as_usual_and_not_kept(table):
    with codecache.cached_dataclass_methods():
        cls = _make_class("someone_else.models")
    assert cls(1) == cls(1, 2) and not table.exists()
    with codecache.cached_dataclass_methods():
        _make_class()
    _, entries = marshal.loads(table.read_bytes())
    assert len(entries) == 6  # __init__, __repr__, __eq__, __hash__, __setattr__, __delattr__


def test_a_damaged_or_foreign_table_is_ignored_and_rewritten(table):
    table.parent.mkdir(parents=True)
    for content in (b"not marshal data", marshal.dumps(("another Python", {})), marshal.dumps([1, 2])):
        table.write_bytes(content)
        with codecache.cached_dataclass_methods():
            cls = _make_class()
        assert cls(5).y == 2
        stored = marshal.loads(table.read_bytes())
        assert stored[0] != "another Python" and len(stored[1]) >= 6


def test_a_table_entry_that_is_not_code_is_compiled_afresh(table):
    with codecache.cached_dataclass_methods():
        _make_class()
    header, entries = marshal.loads(table.read_bytes())
    table.write_bytes(marshal.dumps((header, {source: "not code" for source in entries})))
    with codecache.cached_dataclass_methods():
        cls = _make_class()
    assert repr(cls(0)) == "Point(x=0, y=2, tags=())"


def test_no_table_under_kvlint_no_cache_or_without_bytecode_writing(tmp_path, monkeypatch):
    monkeypatch.setenv("KVLINT_NO_CACHE", "1")
    assert codecache.table_path() is None
    monkeypatch.delenv("KVLINT_NO_CACHE")
    path = tmp_path / "t.marshal"
    monkeypatch.setattr(codecache, "table_path", lambda: str(path))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    with codecache.cached_dataclass_methods():
        assert _make_class()(1).x == 1
    assert not path.exists()


def test_the_table_sits_with_kvlints_bytecode(monkeypatch, tmp_path):
    monkeypatch.delenv("KVLINT_NO_CACHE", raising=False)
    monkeypatch.setattr(sys, "pycache_prefix", None)
    package = Path(codecache.__file__).resolve().parent.parent
    assert Path(codecache.table_path()).parent == package / "__pycache__"
    monkeypatch.setattr(sys, "pycache_prefix", str(tmp_path))
    assert Path(codecache.table_path()).parent == tmp_path / str(package).lstrip(os.sep)
    assert sys.implementation.cache_tag in Path(codecache.table_path()).name


def _console(args, cwd, env):
    code = "import sys\nfrom kvlint.cli import run\nsys.argv = ['kvlint'] + sys.argv[1:]\nrun()\n"
    return subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, env=env, capture_output=True, text=True)


def test_console_script_output_is_the_same_with_the_table_cold_warm_and_off(tmp_path):
    manifest = REPO_ROOT / "examples" / "llama70b-fp8-h100.yaml"
    broken = tmp_path / "broken.yaml"
    broken.write_text(manifest.read_text(encoding="utf-8").replace("dtype: fp8_e4m3", "dtype: fp9"))
    (tmp_path / "kvlint.toml").write_text("# defaults\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "KVLINT_NO_CACHE")}
    env.update(PYTHONPYCACHEPREFIX=str(tmp_path / "pycache"), KVLINT_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=str(REPO_ROOT))
    args = ["check", str(manifest), str(broken)]
    cold = _console(args, tmp_path, env)
    tables = list((tmp_path / "pycache").rglob("dataclass-methods.*.marshal"))
    assert len(tables) == 1
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
    (["check", "a.yaml", "--output-format", "json"], None),
    (["check", "-v", "a.yaml"], None),
    (["check", ""], None),
    (["--verbose", "check", "a.yaml"], None),
    (["rules"], None),
    ([], None),
])
def test_plain_check_is_only_paths(argv, expected):
    from kvlint.cli.lint import plain_check_paths

    assert plain_check_paths(argv) == expected


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
    probe = "import sys, os\nfrom kvlint.cli import run\nsys.argv = ['kvlint'] + sys.argv[1:]\n" \
            "real = os._exit\nos._exit = lambda code: (print('CLICK', 'click' in sys.modules, file=sys.stderr), real(code))\nrun()\n"
    clicked = "import sys\nfrom kvlint.cli import main\nmain(sys.argv[1:])\n"
    cases = [[str(good)], ["bad.yaml"], ["esc\x1b[31m.yaml", "bad.yaml"], ["missing.yaml"], ["broken.yaml"], []]
    for args in cases:
        runs = [subprocess.run([sys.executable, "-c", code, "check", *args], cwd=tmp_path, env=env,
                               capture_output=True, text=True) for code in (plain, clicked)]
        assert (runs[0].returncode, runs[0].stdout, runs[0].stderr) == (runs[1].returncode, runs[1].stdout, runs[1].stderr)
        assert runs[0].returncode in (0, 1, 2) and (runs[0].stdout or runs[0].stderr)
    probed = subprocess.run([sys.executable, "-c", probe, "check", "bad.yaml"], cwd=tmp_path, env=env,
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
