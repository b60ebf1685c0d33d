"""Remedies checked against the catalog: what would make a refused configuration run.

When a backend refuses a deployment (its cache dtype, static per-head scales, block size, head
size or attention sinks) or `attention_backend: auto` finds no valid backend, the finding says
what would fix it, and every suggestion is first checked with the same catalog facts the verdict
used (`EngineRelease.backend`, `BackendInfo.accepts`, `predict_backend`, which
tests/test_derived_agreement.py holds to each release's own code):

(a) the other backends of this release that accept the whole configuration on this GPU;
(b) else the first later catalogued release whose pinned backend (with `auto`: whose selection)
    accepts it, else the first later release where some backend does; when no later release
    does, the newest earlier one that did; when none does, that is said;
(c) a change of the setting at fault that the pinned backend (or `auto`) accepts here:
    per-tensor instead of per-head scales, another block size, a cache dtype of the same
    storage format (fp8 flavours count as one).

Nothing the manifest already has is suggested. Each suggestion is also recorded whole in the
facts (`remedies`), so it can be applied mechanically (tests/test_remedies.py does).
"""

from __future__ import annotations

import functools
from contextlib import contextmanager
from typing import Any, Dict, Iterator, List, Optional, Tuple

import yaml

from kvlint.catalog import Catalogs
from kvlint.catalog.engines import ENGINE_DISPLAY, BackendInfo, EngineRelease
from kvlint.catalog.selection import predict_backend
from kvlint.deployment import GpuInfo
from kvlint.conditions import Predicate, compile_condition
from kvlint.records import dataclass
from kvlint.resolve.mla_block import forced_block
from kvlint.datacache import load_cached_group
from kvlint.resources import rules_dir
from kvlint.versions import parse_version, version_matches

# Block sizes tried after the backend's own preferred and listed ones (vLLM's CacheConfig
# BlockSize literal holds 1, 8, 16, 32, 64, 128, 256: vllm/config/cache.py, v0.19.1).
_BLOCK_CANDIDATES = (16, 32, 64, 128, 256, 8, 1)
_FP8_FORMATS = frozenset({"fp8_e4m3", "fp8_e4m3fnuz", "fp8_e5m2"})


@dataclass(frozen=True)
class Setup:
    """The failing configuration as the verdict saw it."""

    engine: str
    literal: str  # the dtype literal the backend was asked about
    written: str  # the dtype literal the manifest writes ("auto" may stand for fp8)
    gpu: Optional[GpuInfo]
    head: Optional[int]
    block: Optional[int]
    sinks: bool
    per_head: bool
    is_mla: Optional[bool]
    pinned: Optional[str]  # the backend the manifest pins; None with `auto`
    current: Optional[str]  # the backend that refused (pinned, or the one auto selected)
    model_format: str  # the storage format of the model dtype ("bf16")
    # vLLM 0.11-0.17 replace an MLA model's block size (mla_block.py), `block` is the size this
    # release runs with; another release is judged with its own: the written size and the model
    # facts the rule reads.
    written_block: Optional[int] = None
    mla_sparse: Optional[bool] = None
    qk_nope: Optional[int] = None

    @property
    def platform(self) -> Optional[str]:
        if self.gpu is None:
            return None
        return {"amd": "rocm", "apple": "metal"}.get(self.gpu.vendor, "cuda")

    @property
    def cc(self) -> Optional[Tuple[int, int]]:
        return self.gpu.compute_capability if self.gpu else None

    @property
    def gpu_name(self) -> str:
        return self.gpu.id if self.gpu else "this GPU"


@dataclass(frozen=True)
class Suggestion:
    """One change that makes the configuration run, as facts: what to set, all else unchanged."""

    problem: str  # kv_dtype | per_head_scales | block_size | head_size | sinks | selection
    action: str  # backend | release | dtype | granularity | block_size
    backend: Optional[str] = None  # the backend to pin (None: leave the backend as it is)
    release: Optional[str] = None  # the release to move to
    dtype: Optional[str] = None
    granularity: Optional[str] = None
    block_size: Optional[int] = None
    env: Optional[str] = None  # the variable that pins `backend` on a release without the flag

    def fact(self) -> Dict[str, Any]:
        return {"problem": self.problem, "action": self.action, "backend": self.backend,
                "release": self.release, "dtype": self.dtype, "granularity": self.granularity,
                "block_size": self.block_size, "env": self.env}


# remedy()'s answers while remembered_remedies() is open, by (release, problem, setup); else None.
_REMEMBERED: List[Optional[Dict[Tuple[Any, ...], Tuple[Any, ...]]]] = [None]


@contextmanager
def remembered_remedies() -> Iterator[None]:
    """Within it, RemedySearch.remedy answers a question it has answered before from that answer:
    for one run that judges many configurations against the same catalogs (`kvlint plan`, the
    derived-table comparisons), where the same refusal recurs thousands of times. Opened for one
    run and dropped after it, so nothing outlives the run that asked."""
    previous = _REMEMBERED[0]
    if previous is None:
        _REMEMBERED[0] = {}
    try:
        yield
    finally:
        _REMEMBERED[0] = previous


class RemedySearch:
    """Searches one release's catalog (and the later ones) for what accepts a configuration."""

    def __init__(self, catalogs: Catalogs, release: EngineRelease, setup: Setup):
        self.catalogs = catalogs
        self.release = release
        self.setup = setup

    # -- the one question: does this run, and on which backend?

    def serves(self, release: EngineRelease, pinned: Optional[str], literal: Optional[str] = None,
               block: Optional[int] = -1, per_head: Optional[bool] = None) -> Optional[str]:
        """The backend that runs the configuration (with the changes given) on `release`, pinned
        or left to auto; None when kvlint's verdict on it would still be a refusal."""
        s = self.setup
        literal = s.literal if literal is None else literal
        block = self._block_on(release, pinned) if block == -1 else block
        per_head = s.per_head if per_head is None else per_head
        # The answer depends only on the release and these facts; a release view is cached for
        # the catalog's lifetime, so it keeps the answers (a search asks every release, and a
        # directory of manifests asks the same questions again).
        memo = release.__dict__.setdefault("_serves_memo", {})
        # mla_sparse decides vLLM's sparse/dense MLA backends (_sparse): part of the question
        key = (pinned, literal, block, per_head, s.gpu, s.head, s.sinks, s.is_mla, self._sparse())
        if key not in memo:
            memo[key] = self._serves(release, pinned, literal, block, per_head)
        return memo[key]

    def _block_on(self, release: EngineRelease, pinned: Optional[str]) -> Optional[int]:
        """The block size `release` runs this configuration with: the one the verdict saw on this
        release; on another, the written one unless that release replaces it (vLLM 0.11-0.17, MLA)."""
        s = self.setup
        if release is self.release or not s.is_mla or s.engine != "vllm" or s.platform != "cuda":
            return s.block
        decided, forced = forced_block(release.default("mla_block_size_override"), explicit=pinned, cc=s.cc,
                                       sparse=s.mla_sparse, qk_nope=s.qk_nope, block=s.written_block)
        return forced.size if decided and forced else s.written_block

    def _serves(self, release: EngineRelease, pinned: Optional[str], literal: str, block: Optional[int],
                per_head: bool) -> Optional[str]:
        s = self.setup
        if release.dtype(literal) is None:
            return None
        if pinned is None:
            if s.gpu is None:
                return None
            chosen = predict_backend(release, s.cc, s.gpu.vendor, literal, s.head, bool(s.is_mla),
                                     has_sinks=s.sinks, block_size=block, per_head_scales=per_head,
                                     sparse=self._sparse())
            if chosen is None or chosen.backend is None or chosen.fails:
                return None
            return None if self._crashes(release, chosen.backend, literal) else chosen.backend
        info = release.backend(pinned, platform=s.platform, is_mla=s.is_mla)
        if info is None or not self._accepts(info, literal, block, per_head):
            return None
        return None if self._crashes(release, info.name, literal) else info.name

    def _crashes(self, release: EngineRelease, backend: str, literal: str) -> bool:
        """A known defect (rules/defects) fails start-up on `release` with this backend, cache dtype
        and GPU (V11: FLASHINFER with an fp8 cache on SM90, vLLM 0.11-0.16): the catalog accepts
        the configuration, but it is no remedy. Only triggers over the engine, backend, cache and
        GPU facts can match here; the facts of the rest of the deployment are not known."""
        s = self.setup
        fmt = self._format(release, literal)
        facts = {
            "engine": {"name": s.engine, "version": release.version},
            "backend": {"name": backend},
            "kv_cache": {"dtype": literal, "format": fmt, "fp8": bool(fmt and fmt.startswith("fp8"))},
            "gpu": {"cc": f"{s.cc[0]}.{s.cc[1]}"} if s.cc else {},
        }
        return any(engine == s.engine and version_matches(release.version, affected) and trigger(facts)
                   for engine, affected, trigger in _startup_crash_defects())

    def _accepts(self, info: BackendInfo, literal: str, block: Optional[int], per_head: bool) -> bool:
        s = self.setup
        return info.accepts(literal, s.cc, s.head, block, platform=s.platform, has_sinks=s.sinks,
                            per_head_scales=per_head, is_mla=s.is_mla, sparse=self._sparse()).ok

    def _sparse(self) -> Optional[bool]:
        """vLLM: whether the MLA model is sparse (index_topk), so a backend of the other MLA kind
        is no remedy; None elsewhere."""
        s = self.setup
        return s.mla_sparse if s.engine == "vllm" and s.is_mla else None

    def candidates(self, release: EngineRelease) -> Iterator[str]:
        """Backends of a release that could be pinned for this platform and model kind (remembered
        on the release view, as `serves` is: they depend on nothing else)."""
        s = self.setup
        memo = release.__dict__.setdefault("_candidates_memo", {})
        key = (s.platform, s.is_mla, self._sparse())
        names = memo.get(key)
        if names is None:
            names = memo[key] = tuple(self.list_candidates(release))
        return iter(names)

    def list_candidates(self, release: EngineRelease) -> Iterator[str]:
        """candidates() built afresh: the release's backends of this platform and model kind that
        a remedy may pin (not sparse for a dense model, not model-specific, checks modelled)."""
        s = self.setup
        seen = set()
        for b in release.backends:
            # sparse and model-specific backends (SGLang's nsa, dual_chunk_flash_attn...) serve
            # one model family: never a remedy for another model (a vLLM sparse-MLA backend is
            # one for a sparse-MLA model, whose kind accepts() checks); nor is a backend whose checks
            # the catalog does not model (it could not be checked against this configuration)
            if b.name in seen or (b.sparse and not self._sparse()) or b.data.get("model_specific") or not b.checks_known:
                continue
            if s.platform and b.platforms and s.platform not in b.platforms:
                continue
            if s.is_mla is not None and b.mla != bool(s.is_mla):
                continue
            seen.add(b.name)
            yield b.name

    def _other_backends(self, release: EngineRelease) -> Iterator[str]:
        s = self.setup
        return (name for name in self.candidates(release)
                if name not in (s.current, s.pinned) and self.serves(release, name) == name)

    def other_backends(self, release: EngineRelease) -> List[str]:
        """(a) Backends of `release`, other than the one that refused, that run it all here."""
        return list(self._other_backends(release))

    def _versions(self) -> Tuple[List[EngineRelease], List[EngineRelease]]:
        here = parse_version(self.release.version)
        later, earlier = [], []
        for version in self.catalogs.engines.known_versions(self.setup.engine):
            other = self.catalogs.engines.release(self.setup.engine, version)
            if other is None or parse_version(version) == here:
                continue
            (later if parse_version(version) > here else earlier).append(other)
        return later, earlier[::-1]

    def other_release(self, problem: str) -> Tuple[Optional[Suggestion], bool]:
        """(b) The first later release that runs it (as pinned, or with auto), else the first
        later one where some backend does; failing that the newest earlier one. The flag is True
        when the suggestion is an earlier release."""
        later, earlier = self._versions()
        for releases, earlier_flag in ((later, False), (earlier, True)):
            for release in releases:
                if self.serves(release, self.setup.pinned) is not None:
                    return Suggestion(problem, "release", backend=self.setup.pinned, release=release.version), earlier_flag
            for release in releases:
                first = next(self._other_backends(release), None)
                if first is not None:
                    return Suggestion(problem, "release", backend=first, release=release.version), earlier_flag
        return None, False

    # -- (c) the setting at fault

    def granularity_change(self, problem: str) -> Optional[Suggestion]:
        if not self.setup.per_head or self.serves(self.release, self.setup.pinned, per_head=False) is None:
            return None
        return Suggestion(problem, "granularity", granularity="per-tensor")

    def block_change(self, problem: str) -> Optional[Suggestion]:
        s = self.setup
        if s.block is None:
            return None
        tried: List[int] = []
        info = self.release.backend(s.current, platform=s.platform, is_mla=s.is_mla) if s.current else None
        if info is not None:
            preferred = info.preferred_block_size(s.cc, s.head, s.literal)
            rule = info.block_rule(s.cc, s.head, s.literal) or {}
            tried += [preferred] if preferred else []
            tried += list(rule.get("sizes", ()))
        for size in list(dict.fromkeys(tried + list(_BLOCK_CANDIDATES))):
            if size != s.block and self.serves(self.release, s.pinned, block=size) is not None:
                return Suggestion(problem, "block_size", block_size=size)
        return None

    def dtype_change(self, problem: str) -> Optional[Suggestion]:
        s = self.setup
        if s.written != s.literal:  # the cache dtype is implied (auto with checkpoint scales)
            return None
        wanted = self._format(self.release, s.literal)
        if wanted is None:
            return None
        for literal in self.release.dtypes:
            if literal == s.literal:
                continue
            fmt = self._format(self.release, literal)
            same = fmt == wanted or (fmt in _FP8_FORMATS and wanted in _FP8_FORMATS)
            if same and self.serves(self.release, s.pinned, literal=literal) is not None:
                return Suggestion(problem, "dtype", dtype=literal)
        return None

    def _format(self, release: EngineRelease, literal: str) -> Optional[str]:
        info = release.dtype(literal)
        if info is None:
            return None
        fmt = info.format_for(self.setup.gpu.fp8 if self.setup.gpu else None)
        if fmt == "model" or (fmt is None and not info.quantized):
            return self.setup.model_format
        return fmt

    def _pin_env(self, release: EngineRelease) -> Optional[str]:
        """vLLM before --attention-backend existed (the catalog's attention_backend_cli feature):
        a backend is pinned with VLLM_ATTENTION_BACKEND (vllm/attention/selector.py, v0.11.0)."""
        if self.setup.engine == "vllm" and release.feature("attention_backend_cli").status == "absent":
            return "VLLM_ATTENTION_BACKEND"
        return None

    def fp8_instead(self, problem: str) -> Tuple[str, List[Suggestion]]:
        """An FP4 cache on a GPU without FP4 (KV306): the FP8 cache dtypes of this release that run
        the whole configuration here, on the pinned backend (or auto), else on another backend;
        else the model dtype (`auto`) when that runs."""
        s = self.setup
        fp8 = [lit for lit in self.release.dtypes if self._format(self.release, lit) in _FP8_FORMATS]
        for literal in fp8:
            if self.serves(self.release, s.pinned, literal=literal) is not None:
                return (f"; kv_cache.dtype {literal} runs here on {s.pinned or 'the backend attention_backend auto selects'}",
                        [Suggestion(problem, "dtype", dtype=literal)])
        env = self._pin_env(self.release)
        pin = f" (pin it with {env})" if env else ""
        for literal in fp8:
            for name in self.candidates(self.release):
                if name != s.pinned and self.serves(self.release, name, literal=literal) == name:
                    return (f"; kv_cache.dtype {literal} runs here on {name}{pin}",
                            [Suggestion(problem, "dtype", backend=name, dtype=literal, env=env)])
        if "auto" in self.release.dtypes and self.serves(self.release, s.pinned, literal="auto") is not None:
            return (f"; no FP8 cache dtype of {self.release.label} runs this configuration on {s.gpu_name}; "
                    f"kv_cache.dtype auto (the model dtype) does", [Suggestion(problem, "dtype", dtype="auto")])
        return f"; no FP8 cache dtype of {self.release.label} runs this configuration on {s.gpu_name}", []

    # -- the remedy

    def remedy(self, problem: str) -> Tuple[str, List[Suggestion]]:
        """(the text a message appends, starting "; ", the suggestions it names).

        Within remembered_remedies(), the answer is kept: it depends only on the engine catalog,
        this release, the setup (a frozen record of every fact the search reads) and the problem;
        each call gets its own list (the suggestions themselves are immutable)."""
        memo = _REMEMBERED[0]
        if memo is None:
            text, found = self._remedy(problem)
            return text, list(found)
        key = (id(self.release), problem, self.setup)
        hit = memo.get(key)
        if hit is None or hit[0] is not self.release or hit[1] is not self.catalogs.engines:
            hit = memo[key] = (self.release, self.catalogs.engines, *self._remedy(problem))
        return hit[2], list(hit[3])

    def _remedy(self, problem: str) -> Tuple[str, Tuple[Suggestion, ...]]:
        s = self.setup
        found: List[Suggestion] = []
        parts: List[str] = []
        label = ENGINE_DISPLAY.get(s.engine, s.engine)
        backends = self.other_backends(self.release)
        env = self._pin_env(self.release)
        if backends:
            found += [Suggestion(problem, "backend", backend=name, env=env) for name in backends]
            parts.append(f"on this release and GPU {', '.join(backends)} "
                         f"{'accepts' if len(backends) == 1 else 'accept'} this configuration"
                         + (f" (pin it with {env}: {self.release.label} has no --attention-backend)" if env else ""))
        else:
            move, earlier = self.other_release(problem)
            target = self.catalogs.engines.release(s.engine, move.release) if move else None
            env = self._pin_env(target) if target is not None and move and move.backend else None
            if move is not None and env:
                move = Suggestion(problem, "release", backend=move.backend, release=move.release, env=env)
            pin = f" (pin it with {env}: {target.label} has no --attention-backend)" if env and target else ""
            if move is None or target is None:
                parts.append(f"no catalogued {label} release accepts this on {s.gpu_name}")
            elif earlier:
                found.append(move)
                parts.append(f"no later catalogued {label} release accepts this on {s.gpu_name}; "
                             f"{move.backend or 'attention_backend auto'} on {target.label} did{pin}")
            elif move.backend is None:
                found.append(move)
                chosen = self.serves(target, None)
                parts.append(f"no backend of this release accepts it here; from {target.label} "
                             f"attention_backend auto selects {chosen}, which does")
            else:
                found.append(move)
                parts.append(f"no backend of this release accepts it here; {move.backend} does from {target.label}{pin}")
        who = s.pinned or "attention_backend auto"
        changes = {
            "kv_dtype": (self.dtype_change,),
            "per_head_scales": (self.granularity_change,),
            "block_size": (self.block_change,),
            "selection": (self.dtype_change, self.block_change),
        }.get(problem, ())
        for change in changes:
            suggestion = change(problem)
            if suggestion is None:
                continue
            found.append(suggestion)
            what = {
                "dtype": lambda x: f"kv_cache.dtype {x.dtype}",
                "granularity": lambda x: "per-tensor KV scales (a per-tensor calibrated checkpoint)",
                "block_size": lambda x: f"kv_cache.block_size {x.block_size}",
            }[suggestion.action](suggestion)
            joiner = "or use" if backends or len(found) > 1 else "use"
            parts.append(f"{joiner} {what}, which {who} accepts here")
        return "; " + "; ".join(parts), tuple(found)


try:
    _YamlLoader: Any = yaml.CSafeLoader
except AttributeError:  # pragma: no cover
    _YamlLoader = yaml.SafeLoader


def _defect_documents() -> List[Any]:
    """The parsed known-defect files, in name order; None for one that cannot be read or parsed.
    Through kvlint.datacache, from the same cache entry the rulebook reads for the same files (a
    pure-Python parse of them all cost about a second a process)."""
    directory = rules_dir() / "defects"
    paths = sorted((p for p in directory.glob("*.yaml") if p.is_file()), key=lambda p: p.name)
    try:
        return load_cached_group(paths, lambda text: yaml.load(text, Loader=_YamlLoader))  # noqa: S506
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        pass
    documents: List[Any] = []
    for path in paths:
        try:
            documents.append(yaml.load(path.read_text(encoding="utf-8"), Loader=_YamlLoader))  # noqa: S506
        except (OSError, UnicodeDecodeError, yaml.YAMLError):
            documents.append(None)
    return documents


@functools.lru_cache(maxsize=1)
def _startup_crash_defects() -> Tuple[Tuple[str, str, Predicate], ...]:
    """(engine, affected releases, trigger) of each known defect that fails start-up and is an
    error (established by a reproduction or an upstream fix: docs/defects.md)."""
    found = []
    for data in _defect_documents():
        if not isinstance(data, dict) or data.get("symptom") != "startup-crash" or data.get("severity") != "error":
            continue
        trigger = compile_condition(data.get("trigger"))
        if trigger is not None and isinstance(data.get("engine"), str) and isinstance(data.get("affected"), str):
            found.append((data["engine"], data["affected"], trigger))
    return tuple(found)
