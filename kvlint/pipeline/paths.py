"""Paths a manifest names stay inside the project (KV209).

`model.config` (a Hugging Face config.json) and an ablation's `base:` are written by whoever
writes the manifest, often a pull request's author; kvlint reads them. They resolve relative to
the manifest and must stay inside the project root (the directory of the configuration file, or
the git top level when there is none) or a directory the configuration allows (`allowed-roots`).
An absolute path, or one that leaves the roots through `..` or a symbolic link, is a KV209
finding, and the path is taken out of the document before the resolve stage, so it is never read.
"""

from __future__ import annotations

import copy
import os
from dataclasses import replace
from pathlib import Path
from typing import Any, List, Optional, Sequence, Tuple

from kvlint import pointer as json_pointer
from kvlint.config import Config
from kvlint.findings import Finding
from kvlint.load import Document


def project_root(config: Config) -> Tuple[Path, str]:
    """(root, how it was found): the directory of the configuration file, else the git top level
    above the current directory, else the current directory."""
    if config.path is not None:
        return Path(config.path).resolve().parent, "the directory of the configuration file"
    here = Path.cwd().resolve()
    for folder in (here, *here.parents):
        if (folder / ".git").exists():
            return folder, "the git top level"
    return here, "the current directory"


def resolved(path: Any) -> Optional[Path]:
    """The real path of path, or None when it has none (a NUL in it, a name too long). Unlike
    Path.resolve() on Python 3.11, a symbolic-link loop does not raise (RuntimeError): its last
    component stays unresolved, and reading it later fails with the system's reason."""
    try:
        return Path(os.path.realpath(path))
    except (OSError, ValueError, RuntimeError):
        return None


def _inside(target: Optional[Path], roots: Sequence[Path]) -> bool:
    return target is not None and any(target == root or root in target.parents for root in roots)


def path_problem(written: str, manifest: Optional[Path], config: Config) -> Optional[str]:
    """Why a path written in a manifest may not be read, or None when it may. The message names
    no resolved path: findings never reveal where the CI machine keeps things."""
    root, how = project_root(config)
    extra = [r for r in (resolved(entry) for entry in config.allowed_roots) if r is not None]
    if "\0" in written:
        return f"{written!r} is not a path (it holds a NUL character)"
    if os.path.isabs(written):
        if _inside(resolved(written), extra):
            return None
        return f"{written!r} is an absolute path; write it relative to the manifest, inside the project"
    base = manifest.parent if manifest is not None else Path.cwd()
    if _inside(resolved(base / written), [root, *extra]):
        return None
    return f"{written!r} leads outside the project ({how})"


def _paths_of(data: Any) -> List[Tuple[str, str, str]]:
    """(pointer, what, path) of every path a document names that kvlint would read."""
    if not isinstance(data, dict):
        return []
    found: List[Tuple[str, str, str]] = []

    def model_config(holder: Any, prefix: str) -> None:
        model = holder.get("model") if isinstance(holder, dict) else None
        if isinstance(model, dict) and isinstance(model.get("config"), str) and model["config"].strip():
            found.append((f"{prefix}/model/config", "model.config", model["config"]))

    if data.get("kind") == "Ablation":
        base = data.get("base")
        if isinstance(base, str) and base.strip():
            found.append(("/base", "the ablation's base", base))
        model_config(base, "/base")
        variants = data.get("variants")
        for index, variant in enumerate(variants if isinstance(variants, list) else []):
            if isinstance(variant, dict):
                model_config(variant.get("overrides"), f"/variants/{index}/overrides")
    else:
        model_config(data, "")
    return found


def contain_paths(document: Document, config: Config, manifest: Optional[Path]) -> Tuple[Document, List[Finding]]:
    """The document with every path outside the project taken out, and a KV209 for each."""
    problems = []
    for pointer, what, written in _paths_of(document.data):
        reason = path_problem(written, manifest, config)
        if reason is not None:
            problems.append((pointer, what, reason))
    if not problems:
        return document, []
    data = copy.deepcopy(document.data)
    findings: List[Finding] = []
    for pointer, what, reason in problems:
        tokens = json_pointer.split(pointer)
        holder = data
        for token in tokens[:-1]:
            holder = holder[int(token)] if isinstance(holder, list) else holder[token]
        del holder[tokens[-1]]
        findings.append(Finding(
            code="KV209", name="", severity="error", file=document.file, pointer=pointer, document=document.index,
            message=f"{what} {reason}; kvlint does not read it (a directory listed in `allowed-roots` in the "
                    "configuration may be read)",
        ).with_location(document.span(pointer)))
    return replace(document, data=data), findings
