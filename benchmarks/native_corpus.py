#!/usr/bin/env python3
"""What does kvlint say about real public deployment files that ran?

Reads every tests/data/native_corpus/<case-id>/case.yaml (format and split rule in that folder's
README.md): a real native file (compose, Kubernetes, shell script, Dockerfile, engine config,
TensorRT-LLM options, production-stack or Ollama Helm values), copied verbatim from a public
repository, whose source records that it ran (outcome `starts`) or was refused / fell back.

Each case is checked from its own temporary copy of its folder (case.yaml left out), so no project
kvlint.toml applies. The case's `facts` (the GPU, release or model its source states elsewhere)
are given the way a user would: a `kvlint.toml` in that folder with
`[defaults] "*" = { gpu = "...", ... }` (README.md, docs/native.md). Then
`kvlint check --output-format json .` runs there.

Per case it reports: files kvlint read, engine launches found (documents), findings by code and
severity, and the false findings: every error or warning on a case whose outcome is `starts`.
Those are split three ways, each counted and listed: `blind` (KV201, KV202, KV203, KV207: kvlint
says a check could not run because the file does not state a fact, or the catalog does not know
the release, GPU or model; KV610, a capacity estimate whose band straddles the target: kvlint
says it cannot decide; true, and the measure of what kvlint does not know), `style` (KV206
an unpinned image, KV321 an abbreviated or deprecated flag spelling: true statements about a file
that ran) and `false` (every other error or warning: a claim that the file that ran is wrong). Summaries per split (fit /
holdout: the holdout third of the source repositories must not be used to tune kvlint), per
carrier, the most frequent codes, and KV208 (a value kvlint could not resolve) by kind.

Output is deterministic (cases sorted by id, codes sorted). This is a measurement: findings are
reported, not asserted; the script exits 0 unless the corpus cannot be read.

    .venv/bin/python benchmarks/native_corpus.py [--json] [--cases-dir DIR] [--kvlint CMD]
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Dict, List, Optional

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from capacity_accuracy import find_kvlint  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
CASES_DIR = ROOT / "tests" / "data" / "native_corpus"
REQUIRED = ("id", "source", "carrier", "engine", "outcome", "evidence", "features", "split")
STYLE_CODES = {"KV206", "KV321"}
BLIND_CODES = {"KV201", "KV202", "KV203", "KV207", "KV610"}
# The keys `[defaults]` in kvlint.toml takes (kvlint/config.py rejects any other); a case fact
# under another key (gpu-count, gpu-compute-capability, gpu-memory) cannot be given without
# editing the verbatim file, so it is reported per case as `facts_not_given`.
DEFAULTS_KEYS = ("gpu", "engine-version", "model")
SEV_LETTER = {"error": "e", "warning": "w", "info": "i"}


class CorpusError(Exception):
    pass


def load_cases(cases_dir: Path) -> List[dict]:
    if not cases_dir.is_dir():
        raise CorpusError(f"no corpus folder {cases_dir}")
    cases = []
    for case_file in sorted(cases_dir.glob("*/case.yaml")):
        try:
            case = yaml.safe_load(case_file.read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError) as exc:
            raise CorpusError(f"{case_file}: {exc}") from exc
        if not isinstance(case, dict):
            raise CorpusError(f"{case_file}: not a mapping")
        missing = [key for key in REQUIRED if key not in case]
        if missing:
            raise CorpusError(f"{case_file}: missing {', '.join(missing)}")
        if case["id"] != case_file.parent.name:
            raise CorpusError(f"{case_file}: id {case['id']!r} is not the folder name")
        case["_dir"] = case_file.parent
        cases.append(case)
    if not cases:
        raise CorpusError(f"no cases under {cases_dir}")
    return sorted(cases, key=lambda c: c["id"])


def toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    return json.dumps(str(value))  # a JSON string is a valid TOML basic string


def defaults_toml(facts: Optional[dict]) -> str:
    facts = {k: v for k, v in (facts or {}).items() if k in DEFAULTS_KEYS}
    if not facts:
        return ""
    body = ", ".join(f"{key} = {toml_value(value)}" for key, value in facts.items())
    return f'[defaults]\n"*" = {{ {body} }}\n'


def kv208_kind(message: str) -> str:
    low = message.lower()
    for needle, kind in (
        ("command substitution", "command-substitution"),
        ("assigned on some paths only", "conditional-assignment"),
        ("a loop variable", "loop-variable"),
        ("the arguments the script is started with", "script-arguments"),
        ("an argument the script is started with", "script-arguments"),
        ("xargs", "standard-input"),
        ("placeholder", "template-placeholder"),
        ("not set in this file", "environment-variable"),
        ("neither the file nor the `.env`", "compose-variable"),
        ("must be set", "required-variable"),
        ("valuefrom", "secret-or-field"),
    ):
        if needle in low:
            return kind
    if re.search(r"depends on \S+", message):
        if "$(" in message:
            return "command-substitution"
        return "variable"
    low = message.lower()
    if "config" in low and "file" in low:
        return "config-file"
    if "statement" in low or "key" in low:
        return "statement-key"
    return "other"


def run_case(kvlint: List[str], case: dict) -> dict:
    with tempfile.TemporaryDirectory(prefix="kvlint-native-corpus-") as tmp:
        work = Path(tmp) / case["id"]
        shutil.copytree(case["_dir"], work, ignore=shutil.ignore_patterns("case.yaml"))
        toml = defaults_toml(case.get("facts"))
        if toml:
            (work / "kvlint.toml").write_text(toml, encoding="utf-8")
        proc = subprocess.run(kvlint + ["check", "--output-format", "json", "."], cwd=work,
                              capture_output=True, text=True)
    result = {"rc": proc.returncode, "files": 0, "documents": 0, "diagnostics": []}
    try:
        report = json.loads(proc.stdout)
        result["files"] = report["summary"]["files"]
        result["documents"] = report["summary"]["documents"]
        result["diagnostics"] = report["diagnostics"]
    except (ValueError, KeyError, TypeError):
        result["error"] = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
    return result


def summarise_case(case: dict, result: dict) -> dict:
    codes = Counter()
    false, style, blind = [], [], []
    kv208 = Counter()
    for diag in result["diagnostics"]:
        sev = diag.get("severity", "?")
        codes[(diag["code"], sev)] += 1
        if diag["code"] == "KV208":
            kv208[kv208_kind(diag.get("message", ""))] += 1
        if case["outcome"] == "starts" and sev in ("error", "warning"):
            entry = {"code": diag["code"], "severity": sev, "file": diag.get("file"),
                     "line": diag.get("line"), "message": diag.get("message", "")}
            (style if diag["code"] in STYLE_CODES else blind if diag["code"] in BLIND_CODES
             else false).append(entry)
    return {
        "id": case["id"], "carrier": case["carrier"], "engine": case["engine"],
        "split": case["split"], "outcome": case["outcome"], "repo": case["source"]["repo"],
        "facts": sorted(k for k in (case.get("facts") or {}) if k in DEFAULTS_KEYS),
        "facts_not_given": sorted(k for k in (case.get("facts") or {}) if k not in DEFAULTS_KEYS),
        "rc": result["rc"], "kvlint_error": result.get("error"),
        "files": result["files"], "documents": result["documents"],
        "codes": {f"{code}/{sev}": n for (code, sev), n in sorted(codes.items())},
        "false_errors": sum(1 for f in false if f["severity"] == "error"),
        "false_warnings": sum(1 for f in false if f["severity"] == "warning"),
        "style_warnings": len(style),
        "blind_warnings": len(blind),
        "false_findings": false, "style_findings": style, "blind_findings": blind,
        "kv208_by_kind": dict(sorted(kv208.items())),
    }


def group_totals(rows: List[dict], key: str) -> Dict[str, dict]:
    groups: Dict[str, dict] = {}
    for row in rows:
        g = groups.setdefault(row[key], {"cases": 0, "starts_cases": 0, "documents": 0,
                                         "no_launch_found": 0, "false_errors": 0,
                                         "false_warnings": 0, "style_warnings": 0, "blind_warnings": 0,
                                         "cases_with_false_findings": 0, "kvlint_errors": 0})
        g["cases"] += 1
        g["starts_cases"] += row["outcome"] == "starts"
        g["documents"] += row["documents"]
        g["no_launch_found"] += row["documents"] == 0
        g["false_errors"] += row["false_errors"]
        g["false_warnings"] += row["false_warnings"]
        g["style_warnings"] += row["style_warnings"]
        g["blind_warnings"] += row["blind_warnings"]
        g["cases_with_false_findings"] += bool(row["false_errors"] or row["false_warnings"])
        g["kvlint_errors"] += bool(row["kvlint_error"]) or row["rc"] not in (0, 1)
    return dict(sorted(groups.items()))


def build_report(rows: List[dict]) -> dict:
    code_totals: Counter = Counter()
    false_codes: Counter = Counter()
    kv208: Counter = Counter()
    for row in rows:
        for key, n in row["codes"].items():
            code_totals[key] += n
        for f in row["false_findings"]:
            false_codes[f"{f['code']}/{f['severity']}"] += 1
        kv208.update(row["kv208_by_kind"])
    every = {"all": group_totals([dict(r, _all="all") for r in rows], "_all")["all"]}
    return {
        "cases": rows,
        "totals": every["all"],
        "by_split": group_totals(rows, "split"),
        "by_carrier": group_totals(rows, "carrier"),
        "by_engine": group_totals(rows, "engine"),
        "codes": dict(sorted(code_totals.items(), key=lambda kv: (-kv[1], kv[0]))),
        "false_codes": dict(sorted(false_codes.items(), key=lambda kv: (-kv[1], kv[0]))),
        "kv208_by_kind": dict(sorted(kv208.items())),
    }


def short_codes(codes: Dict[str, int]) -> str:
    parts = []
    for key, n in codes.items():
        code, sev = key.split("/")
        parts.append(f"{code}{SEV_LETTER.get(sev, '?')}" + (f"x{n}" if n > 1 else ""))
    return " ".join(parts) or "-"


def print_table(title: str, groups: Dict[str, dict]) -> None:
    print(f"\n{title}")
    print(f"  {'':<16} {'cases':>5} {'docs':>5} {'none':>5} {'f.err':>6} {'f.warn':>6} "
          f"{'style':>6} {'blind':>6} {'cases w/ false':>15}")
    for name, g in groups.items():
        print(f"  {name:<16} {g['cases']:>5} {g['documents']:>5} {g['no_launch_found']:>5} "
              f"{g['false_errors']:>6} {g['false_warnings']:>6} {g['style_warnings']:>6} "
              f"{g['blind_warnings']:>6} {g['cases_with_false_findings']:>9}/{g['starts_cases']}")


def print_report(report: dict) -> None:
    print("kvlint on the native corpus (tests/data/native_corpus): real public files that ran")
    print("docs = engine launches found; f.err / f.warn = errors / warnings on a case that "
          "started (style: KV206, KV321; blind: KV201-KV203, KV207, a check that could not run)\n")
    print(f"{'case':<44} {'carrier':<14} {'split':<7} {'out':<7} {'files':>5} {'docs':>4} "
          f"{'f.e':>3} {'f.w':>3} {'sty':>3}  codes")
    for row in report["cases"]:
        print(f"{row['id']:<44} {row['carrier']:<14} {row['split']:<7} {row['outcome']:<7} "
              f"{row['files']:>5} {row['documents']:>4} {row['false_errors']:>3} "
              f"{row['false_warnings']:>3} {row['style_warnings']:>3}  {short_codes(row['codes'])}"
              + (f"  [kvlint error: {row['kvlint_error'][0]}]" if row["kvlint_error"] else ""))
    not_given = [(r["id"], r["facts_not_given"]) for r in report["cases"] if r["facts_not_given"]]
    if not_given:
        print("\ncase facts [defaults] cannot carry (not given to kvlint): " + "; ".join(
            f"{cid}: {', '.join(keys)}" for cid, keys in not_given))
    print("\nerrors and warnings on cases that started (false, then style and blind):")
    for row in report["cases"]:
        for f in row["false_findings"] + row["style_findings"] + row["blind_findings"]:
            tag = ("style" if f["code"] in STYLE_CODES else "blind" if f["code"] in BLIND_CODES
                   else f["severity"])
            msg = f["message"] if len(f["message"]) <= 150 else f["message"][:147] + "..."
            print(f"  {row['id']}: {f['code']} {tag} {f['file']}:{f['line']}: {msg}")
    t = report["totals"]
    print(f"\ntotals: {t['cases']} cases, {t['documents']} engine launches, "
          f"{t['no_launch_found']} cases with none found; false errors {t['false_errors']}, "
          f"false warnings {t['false_warnings']}, style {t['style_warnings']}, "
          f"blind {t['blind_warnings']}; "
          f"{t['cases_with_false_findings']}/{t['starts_cases']} started cases have a false "
          f"finding; kvlint failures {t['kvlint_errors']}")
    print_table("by split", report["by_split"])
    print_table("by carrier", report["by_carrier"])
    print_table("by engine", report["by_engine"])
    print("\nfalse-finding codes: " + (", ".join(f"{k} {v}" for k, v in
                                                  report["false_codes"].items()) or "none"))
    print("all codes: " + ", ".join(f"{k} {v}" for k, v in report["codes"].items()))
    print("KV208 unresolved values by kind: " + (", ".join(
        f"{k} {v}" for k, v in report["kv208_by_kind"].items()) or "none"))


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--cases-dir", type=Path, default=CASES_DIR)
    parser.add_argument("--kvlint", help="kvlint command (default: the venv's, as capacity_accuracy)")
    args = parser.parse_args(argv)
    try:
        cases = load_cases(args.cases_dir)
    except CorpusError as exc:
        print(f"native_corpus: {exc}", file=sys.stderr)
        return 2
    kvlint = find_kvlint(args.kvlint)
    rows = [summarise_case(case, run_case(kvlint, case)) for case in cases]
    report = build_report(rows)
    if args.json:
        print(json.dumps(report, indent=2, sort_keys=False))
    else:
        print_report(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
