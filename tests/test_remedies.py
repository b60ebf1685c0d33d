"""A remedy kvlint names would fix the finding: applied to the manifest, the finding goes away.

Over a deterministic grid drawn from the catalog (every catalogued vLLM release and a few SGLang
ones × one GPU per architecture × the release's cache dtypes × auto and every backend × sinks ×
static per-head scales × head sizes × block sizes), every manifest on which KV301, KV302, KV303, KV305,
KV306, KV310, KV311, KV315 or KV316 fires with a concrete suggestion gets each suggestion applied
mechanically (pin that backend, move to that release, change that dtype, scale granularity or
block size; nothing else), is checked again, and must lose that finding without gaining a new
error. The suggestion must also be what the finding's message names.

The search behind the suggestions is kvlint/resolve/remedy.py; the catalog it reads is held to
each release's own code by tests/test_derived_agreement.py. `test_a_broken_search_is_caught`
shows this test can fail: a search that suggests a backend without checking it is caught.
"""

from __future__ import annotations

import copy
import json
import itertools
from collections import Counter
from typing import Any, Dict, Iterator, List, Optional, Tuple

import pytest
import yaml

from kvlint.analysis import CheckContext, analyze_deployment, findings_from_facts
from kvlint.catalog import load_catalogs
from kvlint.config import load_config
from kvlint.load import load_bytes
from kvlint.rulebook import load_rulebook
from kvlint.schema import validate_document

TARGETS = {"kv_dtype": ("KV301", "KV303", "KV305"), "per_head_scales": ("KV302",), "block_size": ("KV310",),
           "head_size": ("KV311",), "sinks": ("KV315",), "selection": ("KV316",), "fp4": ("KV306",),
           "compute_capability": ("KV323",), "mla": ("KV324",)}
GPUS = ("A100-80GB", "L40S-48GB", "H100-SXM-80GB", "B200-180GB", "RTX-5090-32GB", "MI300X-192GB")
# (model, head_dim written into model.geometry or None): head size 128, 64 with sinks, an odd 96
# and 256, and an MLA model.
MODELS = (("meta-llama/Llama-3.1-8B-Instruct", None), ("openai/gpt-oss-20b", None),
          ("meta-llama/Llama-3.1-8B-Instruct", 96), ("meta-llama/Llama-3.1-8B-Instruct", 256),
          ("deepseek-ai/DeepSeek-V3", None))
BLOCKS = (None, 24, 16, 128)


def _context() -> CheckContext:
    rulebook = load_rulebook(())
    return CheckContext(config=load_config(None), rulebook=rulebook, enabled={r.code for r in rulebook})


CONTEXT = _context()
CATALOGS = load_catalogs(())


def lint(data: Dict[str, Any]) -> Tuple[List[Any], Dict[str, Any]]:
    """(findings, facts) of one manifest, as `kvlint check` computes them."""
    loaded = load_bytes(json.dumps(data).encode(), "m.yaml")
    document = loaded.documents[0]
    analysis = analyze_deployment(document.data, "m.yaml", None)
    findings = list(validate_document(document)) + findings_from_facts(analysis.facts, document, CONTEXT)
    return findings, analysis.facts


def manifest(engine: str, version: str, gpu: str, model: str, head: Optional[int], dtype: str,
             backend: str, per_head: bool, block: Optional[int]) -> Dict[str, Any]:
    data: Dict[str, Any] = {
        "apiVersion": "kvlint/v1", "kind": "Deployment", "metadata": {"name": "grid"},
        "engine": {"name": engine, "version": version, "attention_backend": backend},
        "hardware": {"gpu": gpu}, "model": {"name": model}, "kv_cache": {"dtype": dtype},
    }
    if head is not None:
        data["model"]["geometry"] = {"head_dim": head}
    if per_head:
        data["model"]["kv_scales"] = "per-head"
        data["kv_cache"]["scales"] = {"granularity": "per-head", "source": "checkpoint"}
    if block is not None:
        data["kv_cache"]["block_size"] = block
    return data


def grid() -> Iterator[Dict[str, Any]]:
    """A deterministic sample of the grid: half the (GPU, dtype) cells of every release, with a
    stride through the other axes, so each release meets backends, models, block sizes and scale
    layouts in turn."""
    turn = itertools.count()
    for engine, versions in (("vllm", CATALOGS.engines.known_versions("vllm")),
                             ("sglang", CATALOGS.engines.known_versions("sglang")[-3:])):
        for version in versions:
            release = CATALOGS.engines.release(engine, version)
            backends = ("auto",) + release.backend_names()
            dtypes = list(release.dtypes)
            for i, (gpu, dtype) in enumerate(itertools.product(GPUS, dtypes)):
                if (i + len(version)) % 2:  # half of the cells, a different half on alternate releases
                    continue
                n = next(turn)
                model, head = MODELS[n % len(MODELS)]
                per_head = dtype.startswith("fp8") and n % 3 == 0
                block = BLOCKS[(n // 3) % len(BLOCKS)] if engine == "vllm" else None
                yield manifest(engine, version, gpu, model, head, dtype, backends[n % len(backends)], per_head, block)


def apply(data: Dict[str, Any], fix: Dict[str, Any]) -> Dict[str, Any]:
    """The manifest with one suggestion applied, nothing else changed."""
    out = copy.deepcopy(data)
    if fix["release"]:
        out["engine"]["version"] = fix["release"]
    if fix["backend"]:
        out["engine"]["attention_backend"] = fix["backend"]
    if fix["env"]:
        out["engine"].setdefault("env", {})[fix["env"]] = fix["backend"]
    if fix["dtype"]:
        out["kv_cache"]["dtype"] = fix["dtype"]
    if fix["block_size"]:
        out["kv_cache"]["block_size"] = fix["block_size"]
    if fix["granularity"]:
        out["kv_cache"]["scales"]["granularity"] = fix["granularity"]
        if out["model"].get("kv_scales") == "per-head":
            out["model"]["kv_scales"] = fix["granularity"]
    return out


def named(fix: Dict[str, Any], message: str) -> bool:
    """The finding's message names the suggestion."""
    words = [fix["backend"], fix["env"], fix["dtype"], fix["granularity"],
             f"block_size {fix['block_size']}" if fix["block_size"] else None,
             f" {fix['release']}" if fix["release"] else None]
    return all(w in message for w in words if w)


def check_remedies(cases: Iterator[Dict[str, Any]]) -> Tuple[Counter, List[str]]:
    """Apply every suggestion of every targeted finding; (what was applied, the failures)."""
    applied: Counter = Counter()
    failures: List[str] = []
    for data in cases:
        findings, facts = lint(data)
        fired = {f.code: f for f in findings}
        errors = {f.code for f in findings if f.severity == "error"}
        for fix in facts.get("remedies", ()):
            targets = [fired[c] for c in TARGETS[fix["problem"]] if c in fired]
            if not targets:
                continue  # computed for a problem no rule reports here
            finding = targets[0]
            where = f"{yaml.safe_dump(data['engine'], default_flow_style=True).strip()} " \
                    f"{data['hardware']['gpu']} {data['model']} {data['kv_cache']}: {finding.code} {fix}"
            if not named(fix, finding.message):
                failures.append(f"{where}: not named in {finding.message!r}")
                continue
            after, _ = lint(apply(data, fix))
            still = [f.message for f in after if f.code == finding.code]
            new = sorted({f.code for f in after if f.severity == "error"} - errors)
            if still or new:
                failures.append(f"{where}: after the fix {finding.code} {still} new errors {new}")
            applied[(finding.code, fix["action"])] += 1
    return applied, failures


@pytest.fixture(scope="module")
def outcome() -> Tuple[Counter, List[str]]:
    return check_remedies(grid())


def test_every_suggestion_fixes_its_finding(outcome) -> None:
    applied, failures = outcome
    assert not failures, f"{len(failures)} remedies do not fix their finding:\n" + "\n".join(failures[:20])


def test_the_grid_exercises_every_rule_and_kind_of_remedy(outcome) -> None:
    """The grid is not vacuous: each rule fires with a suggestion, and each kind of change
    (pin a backend, move release, dtype, granularity, block size) is applied."""
    applied, _ = outcome
    codes = {code for code, _ in applied}
    actions = {action for _, action in applied}
    assert {"KV301", "KV302", "KV303", "KV306", "KV310", "KV311", "KV315", "KV316", "KV323", "KV324"} <= codes, applied
    assert {"backend", "release", "dtype", "granularity", "block_size"} <= actions, applied


def test_a_broken_search_is_caught(monkeypatch) -> None:
    """The check can fail: a search that names every backend of the release without asking the
    catalog whether it accepts the configuration is caught on the first manifests of the grid."""
    from kvlint.resolve.remedy import RemedySearch

    def unchecked(self, release):
        return (name for name in self.candidates(release) if name not in (self.setup.current, self.setup.pinned))

    monkeypatch.setattr(RemedySearch, "_other_backends", unchecked)
    _, failures = check_remedies(itertools.islice(grid(), 120))
    assert failures and all("after the fix" in f for f in failures), failures[:3]


# -- the phrases, on a small catalog whose facts the test states (so the expected text follows
# from them, not from kvlint's output): backend A takes fp8 before 2.0 and again from 3.0, B takes
# only the model dtype.

def _toy(versions: List[str]) -> Any:
    from kvlint.catalog import Catalogs
    from kvlint.catalog.engines import EngineCatalog

    src = [{"url": "https://example.com/toy"}]
    doc = {
        "engine": "toy",
        "releases": [{"versions": versions, "sources": src}],
        "dtypes": [{"literal": "auto", "format": "model", "sources": src},
                   {"literal": "fp8", "format": "fp8_e4m3", "quantized": True, "sources": src},
                   {"literal": "fp8_e5m2", "format": "fp8_e5m2", "quantized": True, "sources": src},
                   {"literal": "int8", "format": "int8", "quantized": True, "sources": src}],
        "backends": [
            {"name": "A", "platforms": ["cuda"], "mla": False, "sources": src,
             "kv_cache_dtypes": [{"dtypes": ["auto"]}, {"dtypes": ["fp8"], "versions": "<2"},
                                 {"dtypes": ["fp8"], "versions": ">=3"}]},
            {"name": "B", "platforms": ["cuda"], "mla": False, "sources": src,
             "kv_cache_dtypes": [{"dtypes": ["auto"]}]},
        ],
    }
    return Catalogs(engines=EngineCatalog({"toy": doc}), gpus=CATALOGS.gpus, models=CATALOGS.models)


def _remedy(versions: List[str], version: str, literal: str, pinned: str) -> Tuple[str, List[Any]]:
    from kvlint.resolve.remedy import RemedySearch, Setup

    catalogs = _toy(versions)
    gpu = CATALOGS.gpus.get("H100-SXM-80GB").info()
    setup = Setup("toy", literal, literal, gpu, 128, None, False, False, False, pinned, pinned, "bf16")
    return RemedySearch(catalogs, catalogs.engines.release("toy", version), setup).remedy("kv_dtype")


@pytest.mark.parametrize("versions, version, literal, pinned, text, fix", [
    # another backend of this release takes it
    (["1.0", "2.0", "3.0"], "1.0", "fp8", "B", "; on this release and GPU A accepts this configuration",
     {"action": "backend", "backend": "A"}),
    # the pinned backend takes it again from 3.0; a same-format dtype does not help on 2.0
    (["1.0", "2.0", "3.0"], "2.0", "fp8", "A", "; no backend of this release accepts it here; A does from toy 3.0",
     {"action": "release", "backend": "A", "release": "3.0"}),
    # no later release: the newest earlier one that did
    (["1.0", "2.0"], "2.0", "fp8", "A",
     "; no later catalogued toy release accepts this on H100-SXM-80GB; A on toy 1.0 did",
     {"action": "release", "backend": "A", "release": "1.0"}),
    # nothing anywhere
    (["1.0", "2.0", "3.0"], "1.0", "int8", "A", "; no catalogued toy release accepts this on H100-SXM-80GB", None),
    # fp8_e5m2 -> fp8: same storage size, accepted by the pinned backend here
    (["1.0", "2.0", "3.0"], "1.0", "fp8_e5m2", "A",
     "; no catalogued toy release accepts this on H100-SXM-80GB; use kv_cache.dtype fp8, which A accepts here",
     {"action": "dtype", "dtype": "fp8"}),
])
def test_remedy_phrases_follow_the_catalog(versions, version, literal, pinned, text, fix) -> None:
    said, found = _remedy(versions, version, literal, pinned)
    assert said == text
    if fix is None:
        assert found == []
    else:
        assert len(found) == 1 and {k: getattr(found[0], k) for k in fix} == fix
