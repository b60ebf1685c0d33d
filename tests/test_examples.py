"""The bundled examples: every manifest under examples/ checks clean; every file under
examples/broken/ yields exactly the findings its `# expect:` header names.

Generic: a new example is tested here without touching this file. Each example is run through
the real CLI from the repository root (so the root kvlint.toml applies, as for a user running
`kvlint check examples/...`), except examples/org/, which is checked with its own kvlint.toml.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Dict, List, Optional, Set

import pytest

from conftest import REPO_ROOT, invoke

EXAMPLES = REPO_ROOT / "examples"
BROKEN = EXAMPLES / "broken"
ORG = EXAMPLES / "org"
MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
_MARKER = re.compile(r"apiVersion[\"']?\s*:\s*[\"']?kvlint/")
_EXPECT = re.compile(r"^#\s*expect:\s*(?P<codes>.+?)\s*$", re.MULTILINE)


def _is_manifest(path: Path) -> bool:
    """A kvlint/v1 manifest, or a native deployment file (examples/kubernetes, a shell script)."""
    if path.suffix == ".sh":
        return True
    if path.suffix not in MANIFEST_SUFFIXES:
        return False
    return bool(_MARKER.search(path.read_text(encoding="utf-8"))) or "kubernetes" in path.relative_to(EXAMPLES).parts


def _clean_examples() -> List[Path]:
    out = []
    for path in sorted(EXAMPLES.rglob("*")):
        if not path.is_file() or BROKEN in path.parents:
            continue
        if path.parent.name == "catalog" or "catalog" in path.relative_to(EXAMPLES).parts:
            continue  # org catalog data, not manifests
        if "rules" in path.relative_to(EXAMPLES).parts:
            continue  # org rule files
        if _is_manifest(path):
            out.append(path)
    return out


CLEAN = _clean_examples()
BROKEN_FILES = sorted(p for p in BROKEN.rglob("*") if p.is_file() and p.suffix in MANIFEST_SUFFIXES)


def _config_for(path: Path) -> Optional[Path]:
    return ORG / "kvlint.toml" if ORG in path.parents else None


def _check(path: Path, monkeypatch: pytest.MonkeyPatch) -> Dict[str, Any]:
    monkeypatch.chdir(REPO_ROOT)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    args = ["check", "--output-format", "json"]
    config = _config_for(path)
    if config is not None:
        args += ["--config", str(config)]
    result = invoke([*args, str(path.relative_to(REPO_ROOT))])
    assert result.exit_code in (0, 1), f"exit {result.exit_code}: {result.output}"
    assert "Traceback" not in result.output
    return json.loads(result.stdout)


def _listing(diagnostics: List[Dict[str, Any]]) -> str:
    return "\n".join(f"  {d['line']}:{d['column']} {d['code']} [{d['severity']}] {d['message']}" for d in diagnostics)


def expected_codes(path: Path) -> Set[str]:
    """The codes named by the file's `# expect: KV302, KV501` header."""
    match = _EXPECT.search(path.read_text(encoding="utf-8"))
    assert match, f"{path.relative_to(REPO_ROOT)} has no '# expect: CODE[, CODE]' header"
    codes = {c.strip() for c in match.group("codes").split(",") if c.strip()}
    assert codes and all(re.fullmatch(r"[A-Z]{2,5}[0-9]{3}", c) for c in codes), match.group(0)
    return codes


def test_there_are_examples_of_each_kind():
    names = {p.name for p in CLEAN}
    assert len(CLEAN) >= 9, names
    assert any(p.suffix == ".json" for p in CLEAN), "no JSON manifest"
    multi = [p for p in CLEAN if p.suffix in (".yaml", ".yml") and "\n---\n" in p.read_text(encoding="utf-8")]
    assert multi, "no multi-document YAML example"
    assert len(BROKEN_FILES) >= 12, [p.name for p in BROKEN_FILES]


@pytest.mark.parametrize("path", CLEAN, ids=[str(p.relative_to(EXAMPLES)) for p in CLEAN])
def test_example_checks_clean(path: Path, monkeypatch: pytest.MonkeyPatch):
    report = _check(path, monkeypatch)
    assert report["summary"]["files"] == 1, "the example was excluded or not recognised as a manifest"
    assert report["summary"]["documents"] >= 1
    loud = [d for d in report["diagnostics"] if d["severity"] in ("error", "warning")]
    assert not loud, f"{path.relative_to(REPO_ROOT)} is not clean:\n{_listing(loud)}"


@pytest.mark.parametrize("path", BROKEN_FILES, ids=[p.name for p in BROKEN_FILES])
def test_broken_example_yields_its_codes(path: Path, monkeypatch: pytest.MonkeyPatch):
    expected = expected_codes(path)
    report = _check(path, monkeypatch)
    got = {d["code"] for d in report["diagnostics"]}
    missing = expected - got
    assert not missing, f"{path.name}: expected {sorted(missing)}; got:\n{_listing(report['diagnostics'])}"
    # The header names every error and warning the file produces (infos may come along).
    loud = {d["code"] for d in report["diagnostics"] if d["severity"] in ("error", "warning")}
    unexplained = loud - expected
    assert not unexplained, f"{path.name}: header does not name {sorted(unexplained)}:\n{_listing(report['diagnostics'])}"


def test_check_examples_directory_from_repo_root_is_clean(monkeypatch: pytest.MonkeyPatch):
    """`kvlint check examples/` as in the README: broken/ (and examples/org, which needs its own
    catalog) are excluded by the root kvlint.toml; everything else passes."""
    monkeypatch.chdir(REPO_ROOT)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    result = invoke(["check", "--output-format", "json", "examples"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    checked = {d["file"] for d in report["diagnostics"]}
    assert not any("broken" in f for f in checked)
    root_level = [p for p in CLEAN if ORG not in p.parents]
    assert report["summary"]["files"] == len(root_level)
    assert report["summary"]["errors"] == 0 and report["summary"]["warnings"] == 0


def test_broken_directory_named_on_the_command_line_is_checked(monkeypatch: pytest.MonkeyPatch):
    """The root kvlint.toml excludes examples/broken from a walk of examples/, but naming the
    directory itself checks it (README: `kvlint check examples/broken` shows the findings)."""
    monkeypatch.chdir(REPO_ROOT)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    result = invoke(["check", "--output-format", "json", "examples/broken"])
    assert result.exit_code == 1, result.output
    report = json.loads(result.stdout)
    assert report["summary"]["files"] == len(BROKEN_FILES)
    files = {str(p.relative_to(REPO_ROOT)) for p in BROKEN_FILES}
    assert {d["file"] for d in report["diagnostics"]} == files


def test_expect_header_parser(tmp_path: Path):
    sample = tmp_path / "x.yaml"
    sample.write_text("# expect: KV302, KV501\n# text\napiVersion: kvlint/v1\n", encoding="utf-8")
    assert expected_codes(sample) == {"KV302", "KV501"}
