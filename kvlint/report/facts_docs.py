"""docs/facts.md, generated from schemas/facts.json: every path a rule may read.

`python -m kvlint.report.facts_docs [FILE]` rewrites the page (default docs/facts.md); the test
suite fails when the page is stale.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Dict, Iterator, List, Tuple

from kvlint.resources import schemas_dir
from kvlint.text import markdown_cell

HEADER = """# The facts document

<!-- Generated from schemas/facts.json by `python -m kvlint.report.facts_docs`; do not edit. -->

Rule conditions, messages (`{dotted.path}`), pointers and `for_each` read one JSON document per
manifest: the *facts*. Resolve, capacity and the ablation check write it; rules never call the
catalog or compute anything themselves. `kvlint facts deploy.yaml` prints the facts of a
manifest, which is how a rule author sees what a condition will test.

The contract is [`schemas/facts.json`](../schemas/facts.json). A rule naming a path that is not
listed here fails the test suite, and so does a listed path that no module writes. Paths use
JSON Pointer syntax; `*` stands for every element of a list (what `for_each` iterates, read as
`item` in the condition and message). "null" in the type means the value may be unknown.
"""


def load_contract() -> Dict[str, Any]:
    with open(schemas_dir() / "facts.json", encoding="utf-8") as handle:
        return json.load(handle)


def contract_paths(contract: Dict[str, Any], kind: str) -> Iterator[Tuple[str, Dict[str, Any]]]:
    """(path, schema node) for every property of one document kind ("deployment"/"ablation")."""

    def walk(node: Dict[str, Any], path: str) -> Iterator[Tuple[str, Dict[str, Any]]]:
        for name, child in (node.get("properties") or {}).items():
            yield f"{path}/{name}", child
            yield from walk(child, f"{path}/{name}")
        if isinstance(node.get("items"), dict):
            yield f"{path}/*", node["items"]
            yield from walk(node["items"], f"{path}/*")

    yield from walk(contract["$defs"][kind], "")


def _type(node: Dict[str, Any]) -> str:
    kind = node.get("type")
    if kind is None:
        return "as written"
    return " or ".join(kind) if isinstance(kind, list) else kind


def render(contract: Dict[str, Any]) -> str:
    lines: List[str] = [HEADER]
    for kind, title in (("deployment", "Deployment (and each ablation variant)"), ("ablation", "Ablation (KV70x)")):
        lines += ["", f"## {title}", "", "| path | type | written by | meaning |", "|---|---|---|---|"]
        for path, node in contract_paths(contract, kind):
            lines.append(
                f"| `{path}` | {markdown_cell(_type(node))} | `{node.get('x-provider', '')}` | "
                f"{markdown_cell(node.get('description', ''))} |"
            )
    return "\n".join(lines) + "\n"


def main(argv: List[str]) -> int:
    target = Path(argv[0]) if argv else Path("docs") / "facts.md"
    target.write_text(render(load_contract()), encoding="utf-8")
    print(f"wrote {target}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv[1:]))
