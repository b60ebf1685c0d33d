#!/usr/bin/env python3
"""How often does kvlint's verdict match what really happened to public deployments?

Reads every benchmarks/public_deployments/*.yaml (a real deployment from a public issue, pull
request or published log, with the engine's known outcome; format in that folder's README.md),
runs the venv's `kvlint check --output-format json` on it (its `manifest:` as a kvlint/v1
Deployment, or its `native:` file verbatim, each from its own temporary folder so no project
kvlint.toml applies) and maps kvlint's findings to a predicted outcome:

* refused: an error of an engine-compatibility rule, KV2xx or KV3xx (KV209, a kvlint input
  error, excepted), or KV604 (max_model_len above the model's limit), KV608 (the engine cannot
  plan the KV layout), KV805 and KV808 (known defects that fail start-up); also the
  start-up-failure defect warnings KV806 and KV807;
* capacity-fail: an error of KV603 (one max_model_len sequence does not fit the pool) or KV606
  (no pool left);
* fallback: KV313 (the engine ignores a backend or cache setting it was given), KV325 (it switches
  the named attention backend), KV331 (llama.cpp runs flash attention off the GPU kernel), KV335
  (Ollama keeps the cache at f16). KV307 (backend `auto` skips the first-choice backend) is not a
  fallback: the deployment asked for `auto` and gets what `auto` selects; `--auto-is-fallback`
  counts it as one;
* starts: none of the above.

The first that applies wins, in that order (an engine refuses before it sizes the cache, and sizes
the cache before it serves). kvlint's exit 2 or an unreadable report is `kvlint-error`, a miss.
Findings that say kvlint could not see a fact (KV201 release, KV202 GPU, KV203 model geometry,
KV207 a fact the native file does not state) are listed per case as blind spots: the checks that
need the fact did not run, which is often why a failure is missed.

Two more columns keep the figure honest. `seen`: the case's source is cited by kvlint's own rules,
catalog or capacity fit (rules/, kvlint/, benchmarks/capacity_logs/), so kvlint was partly built
from it and a match there is not independent evidence; the totals are also given for the unseen
cases. `ambiguous`: the case file says why its outcome or its manifest is uncertain; the totals are
also given without those cases.

Prints one row per case (expected, predicted, match, seen, kvlint's codes with severity e/w/i) and
the totals: matches overall, unseen only, unambiguous only, by expected outcome, by engine, and the
confusion table. `--json` prints the same as JSON. Output is deterministic (cases sorted by id). This is a measurement: a miss is
reported, not asserted; the script exits 0 unless the case files cannot be read.

    .venv/bin/python benchmarks/public_deployments.py [--json] [--auto-is-fallback] [--cases-dir DIR]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import List, Optional, Set

import yaml

# The runner helpers are capacity_accuracy's (the same kvlint lookup and manifest bodies).
sys.path.insert(0, str(Path(__file__).resolve().parent))
from capacity_accuracy import find_kvlint, full_manifest  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CASES = HERE / "public_deployments"
# where kvlint's own sources are cited: rule files, catalog, code, the capacity benchmark's logs
CITING = [(ROOT / "rules", "*.yaml"), (ROOT / "kvlint", "*.py"), (HERE / "capacity_logs", "*.yaml")]
GITHUB_REF = re.compile(r"github\.com/([\w.-]+/[\w.-]+)/(?:issues|pull)/(\d+)(?!\d)|([\w.-]+/[\w.-]+)#(\d+)(?!\d)")

OUTCOMES = ("starts", "refused", "fallback", "capacity-fail")
REFUSED_ERROR_EXTRA = {"KV604", "KV608", "KV805", "KV808"}
REFUSED_ANY_SEVERITY = {"KV806", "KV807"}
NOT_ENGINE = {"KV209"}
CAPACITY_ERRORS = {"KV603", "KV606"}
FALLBACK = {"KV313", "KV325", "KV331", "KV335"}
AUTO_FALLBACK = {"KV307"}
BLIND_SPOTS = {"KV201": "release", "KV202": "gpu", "KV203": "geometry", "KV207": "fact"}
SEVERITY_MARK = {"error": "e", "warning": "w", "info": "i"}


def load_cases(directory: Path) -> List[dict]:
    cases = []
    for path in sorted(directory.glob("*.yaml")):
        try:
            with open(path, encoding="utf-8") as f:
                doc = yaml.safe_load(f)
        except yaml.YAMLError as exc:
            raise SystemExit(f"{path}: not valid YAML: {exc}")
        if not isinstance(doc, dict) or "id" not in doc:
            raise SystemExit(f"{path}: not a case file (no id)")
        doc["_path"] = path
        cases.append(doc)
    return sorted(cases, key=lambda d: d["id"])


def write_case(doc: dict, folder: Path) -> Path:
    """Write the deployment file kvlint is to read: the manifest as <id>.yaml, or the native file
    under its own name, verbatim."""
    folder.mkdir(parents=True, exist_ok=True)
    if "native" in doc:
        path = folder / Path(doc["native"]["file"]).name
        path.write_text(doc["native"]["text"], encoding="utf-8")
    else:
        path = folder / f"{doc['id']}.yaml"
        path.write_text(yaml.safe_dump(full_manifest(doc), sort_keys=False), encoding="utf-8")
    return path


def github_key(url: str) -> Optional[str]:
    m = GITHUB_REF.search(url)
    if not m:
        return None
    repo, number = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
    return f"{repo.lower()}#{number}"


def cited_sources(roots=None) -> tuple:
    """(GitHub issue/PR keys, full text) of everything kvlint's rules, catalog, code and capacity
    logs cite, to tell which cases kvlint has already seen."""
    keys: Set[str] = set()
    texts = []
    for root, pattern in roots or CITING:
        for path in sorted(root.rglob(pattern)):
            text = path.read_text(encoding="utf-8", errors="replace")
            texts.append(text)
            for m in GITHUB_REF.finditer(text):
                repo, number = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
                keys.add(f"{repo.lower()}#{number}")
    return keys, "\n".join(texts)


def seen_by_kvlint(url: str, cited: tuple) -> bool:
    keys, text = cited
    key = github_key(url)
    return key in keys if key else url in text


def run_check(kvlint: List[str], doc: dict) -> dict:
    """Run `kvlint check --output-format json` on one case, from a temporary folder of its own.
    Returns {"returncode", "diagnostics", "error"}."""
    with tempfile.TemporaryDirectory(prefix="kvlint-public-") as tmp:
        path = write_case(doc, Path(tmp) / doc["id"])
        proc = subprocess.run(kvlint + ["check", "--output-format", "json", path.name], cwd=path.parent,
                              capture_output=True, text=True)
    result = {"returncode": proc.returncode, "diagnostics": [], "error": None}
    if proc.returncode not in (0, 1):
        result["error"] = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
        return result
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError as exc:
        result["error"] = f"unreadable JSON report: {exc}"
        return result
    result["diagnostics"] = report.get("diagnostics", [])
    return result


def predict(diagnostics: List[dict], auto_is_fallback: bool = False) -> str:
    """The outcome kvlint's findings predict (the mapping in the module docstring)."""
    errors = {d["code"] for d in diagnostics if d.get("severity") == "error"}
    codes = {d["code"] for d in diagnostics}
    if any((c[:3] in ("KV2", "KV3") or c in REFUSED_ERROR_EXTRA) and c not in NOT_ENGINE for c in errors) \
            or codes & REFUSED_ANY_SEVERITY:
        return "refused"
    if errors & CAPACITY_ERRORS:
        return "capacity-fail"
    if codes & (FALLBACK | (AUTO_FALLBACK if auto_is_fallback else set())):
        return "fallback"
    return "starts"


def code_list(diagnostics: List[dict]) -> List[str]:
    """Distinct codes with their severity mark, in code order: ['KV305e', 'KV307w']."""
    seen = {}
    for d in diagnostics:
        mark = SEVERITY_MARK.get(d.get("severity"), "?")
        key = d["code"]
        # an error outranks a warning of the same code, a warning an info
        if key not in seen or "ewi?".index(mark) < "ewi?".index(seen[key]):
            seen[key] = mark
    return [f"{code}{mark}" for code, mark in sorted(seen.items())]


def evaluate(cases: List[dict], kvlint: List[str], auto_is_fallback: bool = False) -> List[dict]:
    rows = []
    cited = cited_sources()
    for doc in cases:
        result = run_check(kvlint, doc)
        diags = result["diagnostics"]
        predicted = "kvlint-error" if result["error"] else predict(diags, auto_is_fallback)
        engine = (doc.get("facts") or {}).get("engine") or \
            ((doc.get("manifest") or {}).get("engine") or {}).get("name") or "?"
        rows.append({
            "id": doc["id"], "engine": str(engine).split()[0], "expected": doc["outcome"],
            "predicted": predicted, "match": predicted == doc["outcome"],
            "codes": code_list(diags),
            "blind_spots": sorted({BLIND_SPOTS[d["code"]] for d in diags if d["code"] in BLIND_SPOTS}),
            "input": "native" if "native" in doc else "manifest",
            "exit": result["returncode"], "kvlint_error": result["error"],
            "url": doc["source"]["url"],
            "seen": seen_by_kvlint(doc["source"]["url"], cited),
            "ambiguous": bool(doc.get("ambiguous")),
        })
    return rows


def summarize(rows: List[dict]) -> dict:
    def tally(key):
        out = {}
        for value in sorted({r[key] for r in rows}):
            sel = [r for r in rows if r[key] == value]
            out[value] = {"cases": len(sel), "matched": sum(r["match"] for r in sel)}
        return out
    confusion = Counter((r["expected"], r["predicted"]) for r in rows)

    def part(sel):
        return {"cases": len(sel), "matched": sum(r["match"] for r in sel)}
    return {
        "cases": len(rows), "matched": sum(r["match"] for r in rows),
        "unseen": part([r for r in rows if not r["seen"]]),
        "unambiguous": part([r for r in rows if not r["ambiguous"]]),
        "unseen_unambiguous": part([r for r in rows if not r["seen"] and not r["ambiguous"]]),
        "by_expected": tally("expected"), "by_engine": tally("engine"), "by_input": tally("input"),
        "confusion": {f"{e} -> {p}": n for (e, p), n in sorted(confusion.items())},
        "with_blind_spots": {"cases": sum(bool(r["blind_spots"]) for r in rows),
                             "matched": sum(r["match"] for r in rows if r["blind_spots"])},
        "misses": [r["id"] for r in rows if not r["match"]],
    }


def print_table(rows: List[dict], summary: dict) -> None:
    width = max([len(r["id"]) for r in rows] + [4])
    head = (f"{'case':<{width}}  {'expected':<13} {'predicted':<13} {'match':<5} {'seen':<4} {'amb':<3}  "
            "kvlint codes [blind spots]")
    print(head)
    print("-" * len(head))
    for r in rows:
        codes = " ".join(r["codes"]) or "-"
        blind = f" [{', '.join(r['blind_spots'])}]" if r["blind_spots"] else ""
        err = f" ({r['kvlint_error']})" if r["kvlint_error"] else ""
        print(f"{r['id']:<{width}}  {r['expected']:<13} {r['predicted']:<13} {'yes' if r['match'] else 'NO':<5} "
              f"{'yes' if r['seen'] else '-':<4} {'yes' if r['ambiguous'] else '-':<3}  {codes}{blind}{err}")
    print()
    print("seen: kvlint's rules, catalog or capacity fit cite the source; amb: the case file says why its "
          "outcome or manifest is uncertain")
    print("codes: e error, w warning, i info; blind spots: facts kvlint could not see (release, gpu, "
          "geometry, fact), so the checks that need them did not run")
    print()
    s = summary
    pct = 100.0 * s["matched"] / s["cases"] if s["cases"] else 0.0
    print(f"kvlint matches {s['matched']} of {s['cases']} public deployments ({pct:.1f}%)")
    for label, key in (("sources kvlint does not cite", "unseen"), ("unambiguous cases", "unambiguous"),
                       ("both", "unseen_unambiguous")):
        print(f"  {label}: {s[key]['matched']} of {s[key]['cases']}")
    for title, key in (("by expected outcome", "by_expected"), ("by engine", "by_engine"),
                       ("by input form", "by_input")):
        cells = ", ".join(f"{k} {v['matched']}/{v['cases']}" for k, v in s[key].items())
        print(f"  {title}: {cells}")
    b = s["with_blind_spots"]
    print(f"  cases with a blind spot: {b['matched']}/{b['cases']} matched")
    print()
    print("confusion (expected -> predicted):")
    for pair, n in s["confusion"].items():
        print(f"  {pair:<32} {n}")
    if s["misses"]:
        print()
        print("misses: " + ", ".join(s["misses"]))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print rows and summary as JSON")
    parser.add_argument("--cases-dir", type=Path, default=CASES)
    parser.add_argument("--auto-is-fallback", action="store_true",
                        help="count KV307 (backend auto skips its first choice) as a predicted fallback")
    parser.add_argument("--kvlint", help="kvlint command, e.g. 'python -m kvlint' (default: the kvlint beside "
                        "this Python)")
    args = parser.parse_args(argv)

    cases = load_cases(args.cases_dir)
    bad = [d["id"] for d in cases if d.get("outcome") not in OUTCOMES]
    if bad:
        raise SystemExit(f"cases with an outcome outside {OUTCOMES}: {', '.join(bad)}")
    rows = evaluate(cases, find_kvlint(args.kvlint), args.auto_is_fallback)
    summary = summarize(rows)
    if args.json:
        print(json.dumps({"rows": rows, "summary": summary}, indent=2, sort_keys=True))
    else:
        print_table(rows, summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
