"""`kvlint smoke`: build the KV layout on the device, run the quantized kernel, prove nothing fell back.

This package imports torch lazily: importing `kvlint.smoke` (as the CLI does to register the
command) costs nothing; torch is imported by `run_smoke` only. Exit codes (README.md):
0 passed, 1 failed (a check failed or something fell back), 2 usage or internal error,
3 could not run here (no torch, no CUDA for --device cuda, nothing buildable). A smoke test that
did not run is never reported as passed.
"""

from __future__ import annotations

import importlib.util
import json
import traceback
from dataclasses import field
from typing import TYPE_CHECKING, Dict, Optional, Sequence

from kvlint.records import dataclass

if TYPE_CHECKING:  # pragma: no cover
    from kvlint.deployment import Deployment

EXIT_PASSED, EXIT_FAILED, EXIT_ERROR, EXIT_NOT_RUN = 0, 1, 2, 3

INSTALL_HINT = "pip install 'kvcache-lint[smoke]'"

__all__ = ["SmokeOutcome", "run_smoke", "EXIT_PASSED", "EXIT_FAILED", "EXIT_ERROR", "EXIT_NOT_RUN"]


@dataclass(frozen=True)
class SmokeOutcome:
    """What a smoke test run ends with: its exit code and what it prints."""

    exit_code: int
    text: str  # what the command prints (text table or JSON document)
    renderings: Dict[str, str] = field(default_factory=dict)  # "text" and "json", when the test ran


def _not_run(message: str, fmt: str) -> SmokeOutcome:
    if fmt == "json":
        summary = {"verdict": "not-run", "passed": 0, "failed": 0, "skipped": 0, "message": message}
        return SmokeOutcome(EXIT_NOT_RUN, json.dumps({"version": 1, "summary": summary, "deployments": []}, indent=2))
    return SmokeOutcome(EXIT_NOT_RUN, f"kvlint smoke: not run: {message}")


def _error(message: str, fmt: str) -> SmokeOutcome:
    if fmt == "json":
        summary = {"verdict": "error", "passed": 0, "failed": 0, "skipped": 0, "message": message}
        return SmokeOutcome(EXIT_ERROR, json.dumps({"version": 1, "summary": summary, "deployments": []}, indent=2))
    return SmokeOutcome(EXIT_ERROR, f"kvlint smoke: error: {message}")


def torch_available() -> bool:
    return importlib.util.find_spec("torch") is not None


def run_smoke(
    deployments: Sequence[Deployment],
    device: str = "auto",
    layers: Optional[int] = None,
    fmt: str = "text",
    settings: Optional[object] = None,
) -> SmokeOutcome:
    """Run the smoke test on each deployment. Never raises; the outcome carries the exit code.

    device: "auto" (CUDA when visible, else CPU), "cuda" (exit 3 without one) or "cpu".
    layers: at most this many layers per layer group get the attention check (all when None);
            every layer's cache is still allocated and measured.
    fmt: "text" or "json".
    settings: a `kvlint.smoke.runner.SmokeSettings` overriding the device defaults (tests).
    """
    if fmt not in ("text", "json"):
        return _error(f"unknown format {fmt!r}: expected text or json", "text")
    if device not in ("auto", "cuda", "cpu"):
        return _error(f"unknown device {device!r}: expected auto, cuda or cpu", fmt)
    if layers is not None and layers < 1:
        return _error(f"--layers must be at least 1, got {layers}", fmt)
    if not torch_available():
        return _not_run(f"torch is not installed; the smoke test needs it: {INSTALL_HINT}", fmt)
    import warnings

    # torch warns at import when numpy is absent; the smoke test never needs numpy.
    warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
    try:
        from kvlint.smoke.device import DeviceUnavailable, select_device

        try:
            info = select_device(device)
        except DeviceUnavailable as exc:
            return _not_run(str(exc), fmt)
        from kvlint.smoke import report
        from kvlint.smoke.runner import FAILED, PASSED, SmokeSettings, run_deployment

        chosen = settings if settings is not None else SmokeSettings.for_device(info, layers)
        results = [run_deployment(d, info, chosen) for d in deployments]  # type: ignore[arg-type]
        passed = sum(r.status == PASSED for r in results)
        failed = sum(r.status == FAILED for r in results)
        skipped = len(results) - passed - failed
        if failed:
            verdict, code = "failed", EXIT_FAILED
        elif skipped or not results:
            verdict, code = "not-run", EXIT_NOT_RUN
        else:
            verdict, code = "passed", EXIT_PASSED
        summary = {"verdict": verdict, "passed": passed, "failed": failed, "skipped": skipped}
        if not results:
            summary["message"] = "no deployments to test"
        elif skipped and not failed:
            summary["message"] = "some layer groups could not be built here; not a pass"
        renderings = {"json": report.to_json(results, summary), "text": report.to_text(results, summary)}
        return SmokeOutcome(code, renderings[fmt], renderings)
    except Exception as exc:  # exit 2, never a traceback on the terminal
        detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        return _error(f"internal error: {detail}", fmt)
