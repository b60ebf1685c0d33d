"""Rule documentation pages, generated from the rule files (`docs/rules/`).

One Markdown page per rule, named `{CODE}.md` so that each rule's `url`
(`rulebook.DOCS_BASE + CODE + ".md"`) points at it, plus an index `README.md`. The page text is
`format_rule_doc`, the same text `kvlint rule CODE` prints, so the two cannot drift apart.

Regenerate with `kvlint rules --write-docs docs/rules` or `python -m kvlint.report.rule_docs [DIR]`;
tests/test_docs.py fails when a page on disk is stale or missing.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence

from kvlint.text import markdown_cell
from kvlint.report.text import format_rule_doc

INDEX = "README.md"
DEFAULT_DIR = Path("docs") / "rules"

# What the first digit of a built-in code stands for (the rule families of docs/rules/README.md).
FAMILIES = {
    "KV0": "Input (load stage)",
    "KV1": "Schema",
    "KV2": "Catalog: unknown engine, GPU, model, backend, dtype",
    "KV3": "Compatibility: engine, backend, GPU, cache dtype, scales",
    "KV4": "Skip layers",
    "KV5": "Scales and calibration",
    "KV6": "Capacity",
    "KV7": "Ablations",
    "KV8": "Known engine defects",
    "KV9": "Suppressions and configuration",
}


def page_name(rule) -> str:
    return f"{rule.code}.md"


def _family(code: str) -> str:
    return FAMILIES.get(code[:3], "Organisation rules" if not code.startswith("KV") else "Other")



def render_index(rules: Sequence) -> str:
    lines: List[str] = [
        "# kvlint rules",
        "",
        "<!-- Generated from rules/*.yaml and rules/defects/*.yaml by `kvlint rules --write-docs docs/rules`; do not edit. -->",
        "",
        f"{len(rules)} rules. Each has a stable code and a kebab-case name; both are accepted by",
        "`--select`, `--ignore`, `# kvlint: ignore[...]` and `kvlint rule`.",
        "",
    ]
    current: Optional[str] = None
    for rule in rules:
        family = _family(rule.code)
        if family != current:
            if current is not None:
                lines.append("")
            lines += [f"## {family}", "", "| code | name | severity | summary |", "|---|---|---|---|"]
            current = family
        lines.append(
            f"| [{rule.code}]({page_name(rule)}) | `{rule.name}` | {rule.severity} | {markdown_cell(rule.summary)} |"
        )
    return "\n".join(lines) + "\n"


def render_rule_docs(rulebook: Iterable) -> Dict[str, str]:
    """{file name: Markdown} for every rule in the rulebook plus the index page."""
    rules = sorted(rulebook, key=lambda r: r.code)
    pages: Dict[str, str] = {page_name(rule): format_rule_doc(rule) for rule in rules}
    pages[INDEX] = render_index(rules)
    return pages


def write_rule_docs(rulebook: Iterable, directory: Path) -> List[Path]:
    """Write the pages into `directory` (created if needed); the paths whose content changed."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    changed: List[Path] = []
    for name, text in sorted(render_rule_docs(rulebook).items()):
        target = directory / name
        if target.is_file() and target.read_text(encoding="utf-8") == text:
            continue
        target.write_text(text, encoding="utf-8")
        changed.append(target)
    return changed


def main(argv: Optional[Sequence[str]] = None) -> int:
    """`python -m kvlint.report.rule_docs [DIR]`: regenerate the built-in rule pages (default docs/rules)."""
    from kvlint.rulebook import load_rulebook

    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) > 1 or (args and args[0] in ("-h", "--help")):
        print("usage: python -m kvlint.report.rule_docs [DIR]   (default: docs/rules)", file=sys.stderr)
        return 2
    directory = Path(args[0]) if args else DEFAULT_DIR
    try:
        changed = write_rule_docs(load_rulebook(()), directory)
    except OSError as exc:
        print(f"kvlint: error: cannot write {directory}: {exc.strerror}", file=sys.stderr)
        return 2
    print(f"{len(changed)} page(s) written to {directory}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
