"""Reporters: formatters only; they receive results and never compute anything.

`CHECK_FORMATS` is the registry of `kvlint check --output-format` values: name -> module and
function taking (CheckResult, Rulebook). A new output format is one module plus one line here.
Modules are imported when their format is used, so a run loads only its own reporter.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable, Dict, Tuple

CHECK_FORMATS: Dict[str, Tuple[str, str]] = {
    "full": ("kvlint.report.text", "format_full"),
    "concise": ("kvlint.report.text", "format_concise"),
    "json": ("kvlint.report.json_report", "format_json"),
    "github": ("kvlint.report.github", "format_github"),
    "sarif": ("kvlint.report.sarif", "format_sarif"),
}


def check_reporter(fmt: str) -> Callable[[Any, Any], str]:
    """The formatter for an output format, as f(result, rulebook) -> text."""
    module_name, function = CHECK_FORMATS[fmt]
    return getattr(importlib.import_module(module_name), function)
