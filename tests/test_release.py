"""Releases: the distribution name, the version in one place, the changelog, the release workflow,
README links that work on the package page, and tools/check_dist.py (which the release workflow
runs on the built distributions) on good and broken inputs."""

from __future__ import annotations

import importlib.util
import io
import re
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
import yaml

from conftest import REPO_ROOT

import kvlint

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python < 3.11
    import tomli as tomllib

PYPROJECT = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
README = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
RELEASE = yaml.safe_load((REPO_ROOT / ".github" / "workflows" / "release.yml").read_text(encoding="utf-8"))

_spec = importlib.util.spec_from_file_location("check_dist", REPO_ROOT / "tools" / "check_dist.py")
check_dist = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check_dist)


def test_distribution_name_command_and_import_name():
    project = PYPROJECT["project"]
    assert project["name"] == "kvcache-lint" == check_dist.DIST_NAME
    assert project["scripts"] == {"kvlint": "kvlint.cli:run"}
    assert PYPROJECT["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"] == ["kvlint"]
    assert project["optional-dependencies"]["dev"][0] == "kvcache-lint[test]"


def test_version_is_written_once():
    assert "version" not in PYPROJECT["project"] and PYPROJECT["project"]["dynamic"] == ["version"]
    assert PYPROJECT["tool"]["hatch"]["version"] == {"path": "kvlint/__init__.py"}
    assert check_dist.source_version() == kvlint.__version__
    assert re.fullmatch(r"\d+\.\d+\.\d+", kvlint.__version__)


def test_metadata_urls_classifiers_license():
    project = PYPROJECT["project"]
    assert set(project["urls"]) >= {"Homepage", "Repository", "Issues", "Changelog"}
    assert all(url.startswith("https://github.com/kvlint/kvlint") for url in project["urls"].values())
    assert "License :: OSI Approved :: Apache Software License" in project["classifiers"]
    declared = re.findall(r"Programming Language :: Python :: (3\.\d+)$", "\n".join(project["classifiers"]), flags=re.M)
    assert declared == ["3.9", "3.10", "3.11", "3.12", "3.13"]
    assert project["requires-python"] == f">={declared[0]}"
    assert "Apache License" in (REPO_ROOT / "LICENSE").read_text(encoding="utf-8")


def test_snippets_name_the_current_release_tag():
    """The Action and pre-commit snippets pin the tag of kvlint/__init__.py's version."""
    tag = f"v{kvlint.__version__}"
    assert f"rev: {tag}" in README and f"uses: kvlint/kvlint@{tag}" in README
    assert f"uses: kvlint/kvlint@{tag}" in (REPO_ROOT / "examples" / "ci" / "kvlint-workflow.yml").read_text(encoding="utf-8")
    assert f"rev: {tag}" in (REPO_ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8")
    assert f"pipx install 'kvcache-lint=={kvlint.__version__}'" in README


def test_readme_install_section():
    install = README.split("## Install\n", 1)[1].split("\n## ", 1)[0]
    for command in ("pipx install kvcache-lint", "uv tool install kvcache-lint", "pip install 'kvcache-lint[smoke]'"):
        assert command in install, command
    assert "kvlint[" not in README  # the extras belong to the distribution's name


def test_readme_links_are_absolute_and_point_at_files_that_exist():
    assert check_dist.relative_links(README) == []
    links = re.findall(r"\]\(https://github\.com/kvlint/kvlint/(blob|tree)/main/([^)#\s]*)", README)
    assert len(links) > 15
    for kind, path in links:
        target = REPO_ROOT / path
        assert target.exists(), path
        assert (kind == "tree") == target.is_dir(), (kind, path)


def test_relative_link_detection_is_not_vacuous():
    text = "[a](docs/x.md) [b](https://example.org/y) [c](#anchor) ![d](img/logo.png) [e](mailto:x@y.z)"
    assert check_dist.relative_links(text) == ["docs/x.md", "img/logo.png"]


def test_changelog_keeps_a_changelog():
    changelog = (REPO_ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert changelog.startswith("# Changelog\n")
    assert "https://keepachangelog.com/en/1.1.0/" in changelog
    assert "\n## [Unreleased]\n" in changelog
    assert re.search(r"^\[Unreleased\]: https://", changelog, flags=re.M)
    assert check_dist.changelog_has_release("0.2.0", "## [0.2.0] - 2027-01-05\n")
    assert not check_dist.changelog_has_release("0.2.0", "## [Unreleased]\n## [0.2.1] - 2027-01-05\n")


def test_release_workflow_publishes_tags_with_trusted_publishing():
    triggers = RELEASE[True] if True in RELEASE else RELEASE["on"]  # YAML 1.1 reads `on` as true
    assert triggers["push"] == {"tags": ["v*"]}
    assert "pull_request" in triggers and "workflow_dispatch" in triggers
    assert RELEASE["permissions"] == {"contents": "read"}
    build, publish = RELEASE["jobs"]["build"], RELEASE["jobs"]["publish"]
    runs = "\n".join(step.get("run", "") for step in build["steps"])
    assert "python -m build" in runs and "twine check --strict dist/*" in runs
    assert "python tools/check_dist.py dist/ --tag" in runs
    assert publish["needs"] == "build"
    assert "refs/tags/v" in publish["if"] and "push" in publish["if"]
    assert publish["permissions"] == {"id-token": "write"}
    assert publish["environment"]["name"] == "pypi"
    assert publish["steps"][-1]["uses"].startswith("pypa/gh-action-pypi-publish@")
    assert not any("password" in (step.get("with") or {}) for step in publish["steps"])  # no token


# --- tools/check_dist.py on synthetic distributions ---------------------------------------------


def _wheel(dist: Path, version: str, name: str = "kvcache-lint", relative_link: bool = False,
           drop_rule: bool = False) -> Path:
    stem = f"kvcache_lint-{version}"
    readme = "# kvlint\n\nsee [docs](docs/x.md)\n" if relative_link else "# kvlint\n\nsee [docs](https://x.org/d)\n"
    metadata = (f"Metadata-Version: 2.3\nName: {name}\nVersion: {version}\nSummary: s\nProject-URL: Homepage, https://x\n"
                "License: Apache-2.0\nClassifier: Programming Language :: Python :: 3\nRequires-Python: >=3.9\n"
                f"Description-Content-Type: text/markdown\n\n{readme}")
    path = dist / f"{stem}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as wheel:
        wheel.writestr("kvlint/__init__.py", f'__version__ = "{version}"\n')
        wheel.writestr("kvlint/_data/schemas/manifest.v1.json", "{}")
        rules = sorted(p.name for p in (REPO_ROOT / "rules").glob("KV*.yaml"))
        for rule in rules[1:] if drop_rule else rules:
            wheel.writestr(f"kvlint/_data/rules/{rule}", "")
        wheel.writestr(f"{stem}.dist-info/METADATA", metadata)
        wheel.writestr(f"{stem}.dist-info/entry_points.txt", "[console_scripts]\nkvlint = kvlint.cli:run\n")
        wheel.writestr(f"{stem}.dist-info/licenses/LICENSE", "Apache License")
    return path


def _sdist(dist: Path, version: str) -> Path:
    root = f"kvcache_lint-{version}"
    path = dist / f"{root}.tar.gz"
    with tarfile.open(path, "w:gz") as sdist:
        files = {"PKG-INFO": f"Metadata-Version: 2.3\nName: kvcache-lint\nVersion: {version}\n\n"}
        for needed in ("pyproject.toml", "README.md", "CHANGELOG.md", "LICENSE", "kvlint/__init__.py",
                       "schemas/manifest.v1.json"):
            files.setdefault(needed, "x")
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"{root}/{name}")
            info.size = len(data)
            sdist.addfile(info, io.BytesIO(data))
    return path


def test_check_dist_accepts_good_distributions(tmp_path, capsys):
    _wheel(tmp_path, kvlint.__version__)
    _sdist(tmp_path, kvlint.__version__)
    assert check_dist.main([str(tmp_path)]) == 0
    assert capsys.readouterr().out == f"check_dist: kvcache-lint {kvlint.__version__}: wheel and sdist ok\n"


@pytest.mark.parametrize("broken, expected", [
    (dict(name="kvlint"), "Name is 'kvlint', not 'kvcache-lint'"),
    (dict(relative_link=True), "README link 'docs/x.md' is relative"),
    (dict(drop_rule=True), "rule files differ from rules/: missing ['KV001-yaml-syntax.yaml']"),
])
def test_check_dist_names_each_problem(tmp_path, capsys, broken, expected):
    _wheel(tmp_path, kvlint.__version__, **broken)
    _sdist(tmp_path, kvlint.__version__)
    assert check_dist.main([str(tmp_path)]) == 1
    assert expected in capsys.readouterr().out


def test_check_dist_refuses_a_tag_that_is_not_the_version(tmp_path, capsys):
    _wheel(tmp_path, kvlint.__version__)
    _sdist(tmp_path, kvlint.__version__)
    assert check_dist.main([str(tmp_path), "--tag", "v9.9.9"]) == 1
    out = capsys.readouterr().out
    assert f"tag v9.9.9 does not match kvlint/__init__.py's __version__ {kvlint.__version__}" in out


def test_check_dist_wants_one_wheel_of_this_version(tmp_path, capsys):
    _wheel(tmp_path, "9.9.9")
    _sdist(tmp_path, kvlint.__version__)
    assert check_dist.main([str(tmp_path)]) == 1
    assert f"expected one wheel kvcache_lint-{kvlint.__version__}-py3-none-any.whl" in capsys.readouterr().out
