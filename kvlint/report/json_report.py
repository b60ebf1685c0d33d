"""`--output-format json`: the documented report object (README.md, "Machine-readable output")."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvlint.text import json_text

if TYPE_CHECKING:  # type-only: the reporters must not load the pipeline they report on
    from kvlint.pipeline.check import CheckResult



def format_json(result: CheckResult, rulebook: object = None) -> str:
    document = {
        "version": 1,
        "summary": {
            "files": len(result.files),
            "documents": result.documents,
            "errors": result.count("error"),
            "warnings": result.count("warning"),
            "infos": result.count("info"),
        },
        "diagnostics": [
            {
                "code": f.code,
                "name": f.name,
                "severity": f.severity,
                "message": f.message,
                "file": f.file,
                "line": f.line,
                "column": f.column,
                "pointer": f.pointer,
                "url": f.url,
            }
            for f in result.findings
        ],
    }
    return json_text(document) + "\n"
