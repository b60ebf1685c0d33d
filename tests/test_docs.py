"""docs/rules/ is generated from the rule files and must not go stale; `kvlint rule` and
`kvlint rules` document every rule.

Regenerate the pages with `kvlint rules --write-docs docs/rules` (or `python -m kvlint.report.rule_docs`).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
import yaml

from conftest import REPO_ROOT, invoke
from kvlint.report.rule_docs import INDEX, render_rule_docs
from kvlint.rulebook import DOCS_BASE, load_rulebook

DOCS_DIR = REPO_ROOT / "docs" / "rules"
RULE_FILES = sorted((REPO_ROOT / "rules").glob("*.yaml")) + sorted((REPO_ROOT / "rules" / "defects").glob("*.yaml"))
REGENERATE = "run `kvlint rules --write-docs docs/rules` and commit the result"


def _codes_in_rule_files():
    return sorted(yaml.safe_load(p.read_text(encoding="utf-8"))["code"] for p in RULE_FILES)


@pytest.fixture(scope="module")
def pages():
    return render_rule_docs(load_rulebook(()))


def test_one_page_per_rule_file_plus_index(pages):
    assert sorted(pages) == sorted([f"{code}.md" for code in _codes_in_rule_files()] + [INDEX])


def test_pages_on_disk_are_current(pages):
    problems = []
    for name, text in sorted(pages.items()):
        path = DOCS_DIR / name
        if not path.is_file():
            problems.append(f"missing {path.relative_to(REPO_ROOT)}")
        elif path.read_text(encoding="utf-8") != text:
            problems.append(f"stale {path.relative_to(REPO_ROOT)}")
    assert not problems, "; ".join(problems) + f": {REGENERATE}"


def test_no_orphan_pages(pages):
    """A page for a rule that no longer exists (or a hand-written page) would mislead."""
    on_disk = {p.name for p in DOCS_DIR.glob("*.md")}
    assert on_disk - set(pages) == set(), f"pages without a rule: {sorted(on_disk - set(pages))}"


def test_rule_urls_point_at_the_pages(pages):
    assert DOCS_BASE.endswith("/docs/rules/")
    for rule in load_rulebook(()):
        assert rule.url == DOCS_BASE + f"{rule.code}.md"
        assert rule.url.rsplit("/", 1)[1] in pages


def test_index_lists_every_rule_with_a_link(pages):
    index = pages[INDEX]
    for rule in load_rulebook(()):
        row = [line for line in index.splitlines() if line.startswith(f"| [{rule.code}]({rule.code}.md) ")]
        assert len(row) == 1, rule.code
        assert f"`{rule.name}`" in row[0] and rule.severity in row[0]
    linked = re.findall(r"\]\(([A-Z]+[0-9]+\.md)\)", index)
    assert sorted(linked) == sorted(n for n in pages if n != INDEX)


def test_page_holds_the_whole_rule(pages):
    raw = yaml.safe_load((REPO_ROOT / "rules" / "KV302-per-head-scales-need-flash-attn.yaml").read_text())
    page = pages["KV302.md"]
    assert page.startswith("# KV302 per-head-scales-need-flash-attn\n")
    assert raw["rationale"].strip() in page
    assert raw["remediation"].strip() in page
    for example in raw["examples"]:
        assert example["manifest"].rstrip("\n") in page
    assert "## Example: fails" in page and "## Example: passes" in page
    for source in raw["sources"]:
        assert (source.get("url") or source["path"]) in page


def test_kvlint_rule_prints_the_page(pages, workspace):
    result = invoke(["rule", "KV302"])
    assert result.exit_code == 0, result.output
    assert result.stdout == pages["KV302.md"]
    by_name = invoke(["rule", "per-head-scales-need-flash-attn"])
    assert by_name.exit_code == 0 and by_name.stdout == result.stdout
    as_json = json.loads(invoke(["rule", "kv302", "--format", "json"]).stdout)
    assert as_json["code"] == "KV302" and as_json["url"] == DOCS_BASE + "KV302.md"
    assert as_json["rationale"] and as_json["remediation"] and as_json["sources"]


def test_kvlint_rule_unknown_is_a_usage_error(workspace):
    result = invoke(["rule", "KV999"])
    assert result.exit_code == 2
    assert "no rule 'KV999'" in result.stderr and "Traceback" not in result.output


def test_kvlint_rules_json_lists_every_rule(workspace):
    result = invoke(["rules", "--format", "json"])
    assert result.exit_code == 0, result.output
    listed = json.loads(result.stdout)
    assert [r["code"] for r in listed] == _codes_in_rule_files()
    for entry in listed:
        assert {"code", "name", "severity", "summary", "url"} <= set(entry)
        assert entry["url"] == DOCS_BASE + f"{entry['code']}.md"


def test_write_docs_option_writes_the_same_pages(pages, workspace):
    out = workspace / "site" / "rules"
    first = invoke(["rules", "--write-docs", str(out)])
    assert first.exit_code == 0, first.output
    assert {p.name: p.read_text(encoding="utf-8") for p in out.iterdir()} == pages
    again = invoke(["rules", "--write-docs", str(out)])
    assert again.exit_code == 0 and again.stdout.startswith("0 page(s) written")
    (out / "KV302.md").write_text("edited by hand\n", encoding="utf-8")
    fixed = invoke(["rules", "--write-docs", str(out)])
    assert fixed.stdout.startswith("1 page(s) written")
    assert (out / "KV302.md").read_text(encoding="utf-8") == pages["KV302.md"]


def test_write_docs_into_a_file_path_is_a_usage_error(workspace):
    (workspace / "afile").write_text("x", encoding="utf-8")
    result = invoke(["rules", "--write-docs", str(workspace / "afile" / "sub")])
    assert result.exit_code == 2
    assert "Traceback" not in result.output


def test_python_m_kvlint_docs(pages, tmp_path):
    out = tmp_path / "rules"
    done = subprocess.run([sys.executable, "-m", "kvlint.report.rule_docs", str(out)], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert {p.name: p.read_text(encoding="utf-8") for p in out.iterdir()} == pages
