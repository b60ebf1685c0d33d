"""The package layout holds: layers point down, no import cycles, no private names across modules.

The contracts live in pyproject.toml ([tool.importlinter]); docs/ARCHITECTURE.md draws them.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Set

import pytest

from conftest import REPO_ROOT

try:  # Python 3.11+
    import tomllib
except ModuleNotFoundError:  # pragma: no cover
    import tomli as tomllib

PACKAGE = REPO_ROOT / "kvlint"


def _modules(root: Path = PACKAGE) -> Dict[str, Path]:
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _imports(name: str, path: Path, modules: Dict[str, Path], tree: ast.AST) -> List[ast.AST]:
    """(node, imported kvlint module) for every import in the file's tree, inside functions too."""
    is_package = path.name == "__init__.py"
    found = []
    for node in ast.walk(tree):
        targets: List[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = name.split(".") if is_package else name.split(".")[:-1]
            if node.level:
                base = base[: len(base) - (node.level - 1)]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            targets = [f"{prefix}.{a.name}" if f"{prefix}.{a.name}" in modules else prefix for a in node.names]
        for target in targets:
            while target and target not in modules and "." in target:
                target = target.rsplit(".", 1)[0]
            if target in modules and target != name:
                found.append((node, target))
    return found


def _type_checking_nodes(tree: ast.AST) -> Set[int]:
    """id() of every node under an `if TYPE_CHECKING:` of this tree (the ids of one tree's nodes mean
    nothing for another parse of the same file)."""
    ids: Set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            ids.update(id(child) for child in ast.walk(node))
    return ids


def _contracts() -> dict:
    with open(REPO_ROOT / "pyproject.toml", "rb") as handle:
        return tomllib.load(handle)["tool"]["importlinter"]


def _lint_imports(root: Path) -> subprocess.CompletedProcess:
    # no_logo came after import-linter 2.1, the declared floor (tests/constraints-min.txt)
    code = ("import inspect, sys; from importlinter.cli import lint_imports; options = {'no_cache': True}; "
            "options.update(no_logo=True) if 'no_logo' in inspect.signature(lint_imports).parameters else None; "
            "sys.exit(lint_imports(**options))")
    return subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True,
                          env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"})


def test_import_linter_contracts_hold():
    done = _lint_imports(REPO_ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "broken" in done.stdout and " 0 broken" in done.stdout


def test_a_lower_layer_importing_a_higher_one_breaks_the_contract(tmp_path):
    """The contract can fail: on a scratch copy, make the loader import the CLI."""
    shutil.copytree(PACKAGE, tmp_path / "kvlint", ignore=shutil.ignore_patterns("__pycache__", "_data"))
    shutil.copy(REPO_ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    target = tmp_path / "kvlint" / "load.py"
    target.write_text(target.read_text(encoding="utf-8") + "\nimport kvlint.cli.options  # upward\n", encoding="utf-8")
    done = _lint_imports(tmp_path)
    assert done.returncode != 0
    assert "kvlint layers point down BROKEN" in done.stdout
    assert "kvlint.load -> kvlint.cli.options" in done.stdout


def test_every_module_sits_in_a_layer():
    """A new top-level module or package must be placed in the layers contract."""
    layers = next(c for c in _contracts()["contracts"] if c["type"] == "layers")["layers"]
    placed = {name.strip() for layer in layers for name in layer.replace(":", "|").split("|")}
    top_level = {".".join(name.split(".")[:2]) for name in _modules() if name != "kvlint"}
    assert top_level - placed == set(), "modules missing from [tool.importlinter] layers"
    assert placed - top_level == set(), "layers naming modules that do not exist"


# Imports placed inside functions on purpose: a heavy dependency, or a command loading only
# what it needs. Each such import must not close a cycle (checked below) and is commented in place.
def test_no_import_cycles_counting_imports_inside_functions():
    modules = _modules()
    graph: Dict[str, Set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip = _type_checking_nodes(tree)
        for node, target in _imports(name, path, modules, tree):
            if id(node) in skip:
                continue
            # A package's __init__ importing its own submodules is how packages re-export; a
            # submodule importing its package's __init__ is the cycle we look for.
            graph[name].add(target)
    cycles = []
    state: Dict[str, int] = {}
    stack: List[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_no_private_name_crosses_a_module_boundary():
    """`from kvlint.x import _name` and `kvlint_module._name` are refused: make it public or
    move it. (Within one module, underscore names are the norm.)"""
    offenders = []
    modules = _modules()
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("kvlint") or (
                isinstance(node, ast.ImportFrom) and node.level
            ):
                for alias in node.names:
                    if alias.name.startswith("_") and not alias.name.startswith("__"):
                        offenders.append(f"{path.relative_to(REPO_ROOT)}:{node.lineno}: imports {alias.name}")
    for path in sorted((REPO_ROOT / "tests").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("kvlint"):
                for alias in node.names:
                    if alias.name.startswith("_") and not alias.name.startswith("__"):
                        offenders.append(f"{path.relative_to(REPO_ROOT)}:{node.lineno}: imports {alias.name}")
    assert not offenders, "\n".join(offenders)


@pytest.mark.parametrize("command", [["--help"], ["check", "--help"], ["rules"]])
def test_cheap_commands_do_not_load_the_pipeline_or_torch(command):
    """`kvlint --help` and `kvlint rules` load neither the check pipeline nor torch/numpy."""
    code = (
        "import sys\nfrom kvlint.cli import main\n"
        f"try:\n    main({command!r})\nexcept SystemExit:\n    pass\n"
        "loaded = [m for m in ('kvlint.pipeline.check', 'kvlint.resolve', 'torch', 'numpy', 'jsonschema') if m in sys.modules]\n"
        "print('LOADED', loaded)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO_ROOT)
    assert "LOADED []" in done.stdout, done.stdout + done.stderr
