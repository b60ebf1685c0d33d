"""Real public deployment files that ran (tests/data/native_corpus, one folder per case with its
source, licence and the evidence that it started): kvlint must not claim that any of them is
wrong. An error, or a warning other than a check it could not run (KV201-KV203, KV207: a fact the
file does not state or the catalog does not know) or a true style note (KV206 an unpinned image,
KV321 an abbreviated or deprecated flag spelling) or an undecided estimate (KV610: the pool's
band straddles the target), is a false finding and fails the case.

The facts a case's source states outside the file (the GPU named in a README) are given as a
user would: `[defaults]` in a kvlint.toml beside the copy. `benchmarks/native_corpus.py` reports
the same run with every finding, per split, carrier and engine.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import List

import pytest
import yaml
from conftest import CliRunner

from kvlint.cli import main

CORPUS = Path(__file__).parent / "data" / "native_corpus"
# KV610: the capacity estimate's band straddles the target, so kvlint says it cannot decide
NOT_CLAIMS = {"KV201", "KV202", "KV203", "KV207", "KV206", "KV321", "KV610"}
DEFAULT_KEYS = ("gpu", "engine-version", "model")


def cases() -> List[Path]:
    return sorted(p.parent for p in CORPUS.glob("*/case.yaml"))


def case_params():
    """Each case; one whose case.yaml has `xfail_reason` (a known false finding, kept as data) is a
    strict xfail, so the suite stays green while the miss stays visible and a fix turns it red."""
    params = []
    for folder in cases():
        case = yaml.safe_load((folder / "case.yaml").read_text(encoding="utf-8"))
        reason = case.get("xfail_reason")
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        params.append(pytest.param(folder, marks=marks, id=folder.name))
    return params


def test_corpus_is_large_and_documented():
    found = cases()
    assert len(found) >= 30
    repos = set()
    for folder in found:
        case = yaml.safe_load((folder / "case.yaml").read_text(encoding="utf-8"))
        assert case["id"] == folder.name
        assert case["source"]["repo"] and case["source"].get("url") and case["evidence"]
        assert case["split"] in ("fit", "holdout") and case["outcome"] in ("starts", "refused", "fallback")
        repos.add(case["source"]["repo"])
    assert len(repos) >= 12


@pytest.mark.parametrize("folder", case_params())
def test_no_false_finding_on_a_file_that_ran(folder: Path, tmp_path: Path, monkeypatch):
    case = yaml.safe_load((folder / "case.yaml").read_text(encoding="utf-8"))
    if case["outcome"] != "starts":
        pytest.skip("a case whose engine refused or fell back is measured by the benchmark")
    work = tmp_path / folder.name
    shutil.copytree(folder, work, ignore=shutil.ignore_patterns("case.yaml"))
    facts = {k: v for k, v in (case.get("facts") or {}).items() if k in DEFAULT_KEYS}
    if facts:
        body = ", ".join(f"{key} = {json.dumps(str(value))}" for key, value in facts.items())
        (work / "kvlint.toml").write_text(f'[defaults]\n"*" = {{ {body} }}\n', encoding="utf-8")
    monkeypatch.chdir(work)
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    try:
        runner = CliRunner(mix_stderr=False)  # click < 8.2 mixes stderr into stdout by default
    except TypeError:
        runner = CliRunner()  # click 8.2+: stdout and stderr are always apart
    result = runner.invoke(main, ["check", "--output-format", "json", "."])
    assert result.exit_code in (0, 1), result.output
    report = json.loads(result.stdout)
    claims = [
        f"{d['code']} {d['severity']} {d.get('file')}:{d.get('line')}: {d['message']}"
        for d in report["diagnostics"]
        if d["severity"] == "error" or (d["severity"] == "warning" and d["code"] not in NOT_CLAIMS)
    ]
    assert not claims, "\n".join(claims)
    assert os.listdir(work)  # kvlint read the copy and left it in place
