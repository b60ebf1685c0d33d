"""Engine catalog: releases, cache dtypes, attention backends, features and defaults.

Data lives in `rules/catalog/engines/*.yaml` (plus an organisation's `catalog-dir`), one or
more files per engine; lists from every file of an engine are concatenated and, for the same
key (dtype literal, backend name+platform, feature, default), a later entry wins, so an extra
catalog can override built-in facts. Each file is validated by `schemas/catalog-engine.json`.

Facts are keyed by PEP 440-style version ranges; `EngineCatalog.release(engine, version)`
projects them onto one release. Conditions (`when`, `applies`, `require`) are small mappings
over the query (see the header of `vllm.yaml`); a list of mappings is any-of.
"""

from __future__ import annotations

from dataclasses import field
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

import yaml

from kvlint.errors import CatalogError
from kvlint.datacache import load_cached
from kvlint.records import dataclass
from kvlint.resources import catalog_dir, schemas_dir
from kvlint.versions import (
    VersionError,
    cc_text,
    parse_version,
    sm_name,
    version_matches,
)

try:  # libyaml is ~10x faster; this runs on every `kvlint check`
    _Loader: Any = yaml.CSafeLoader
except AttributeError:  # pragma: no cover
    _Loader = yaml.SafeLoader

ENGINE_DISPLAY = {"vllm": "vLLM", "sglang": "SGLang", "tensorrt-llm": "TensorRT-LLM"}
Cc = Tuple[int, int]




# --------------------------------------------------------------------------- values


@dataclass(frozen=True)
class Source:
    """Where a catalog fact comes from: repository, path and release, or a URL, with a note."""

    repo: Optional[str] = None
    path: Optional[str] = None
    release: Optional[str] = None
    url: Optional[str] = None
    note: Optional[str] = None

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> Source:
        return cls(*(data.get(k) for k in ("repo", "path", "release", "url", "note")))

    def __str__(self) -> str:
        if self.url:
            text = self.url
        else:
            text = f"{self.repo}:{self.path}" + (f"@{self.release}" if self.release else "")
        return f"{text} ({self.note})" if self.note else text


Sources = Tuple[Source, ...]


_SOURCES_MEMO: Dict[int, Tuple[Mapping[str, Any], Sources]] = {}


def _sources(entry: Mapping[str, Any]) -> Sources:
    # entries are the loaded catalog's own mappings, asked again for every check: memoized by
    # identity (the entry is kept alive with its answer, so its id is not reused)
    hit = _SOURCES_MEMO.get(id(entry))
    if hit is not None and hit[0] is entry:
        return hit[1]
    out = tuple(Source.from_data(s) for s in entry.get("sources") or ())
    _SOURCES_MEMO[id(entry)] = (entry, out)
    return out


@dataclass(frozen=True)
class Verdict:
    """Whether a configuration runs on an engine release, and if not, at which stage and why."""

    ok: bool
    reason: str = ""
    sources: Sources = ()
    stage: Optional[str] = None  # select | init | runtime | rewrite, for a failure
    problems: Tuple[Problem, ...] = ()

    def __bool__(self) -> bool:
        return self.ok


@dataclass(frozen=True)
class Problem:
    """One reason a configuration fails: the constraint that fails, at which stage, and its sources."""

    kind: str  # kv_dtype | head_size | block_size | compute_capability | sinks | per_head_scales | mla | platform | constraint id
    stage: str
    reason: str
    sources: Sources = ()
    # The two parts a rule message template joins (head sizes, block sizes, sinks, per-head
    # scales): who refuses ("vLLM 0.19.1 TRITON_ATTN on sm90") and the catalog's detail.
    where: str = ""
    detail: str = ""


@dataclass(frozen=True)
class DtypeInfo:
    """One `kv_cache_dtype` literal of an engine release: the cache format it stores and what it needs."""

    literal: str
    format: Optional[str]  # CacheFormatId, "model" (the model dtype) or None (no kvlint format)
    quantized: bool
    format_on_fnuz: Optional[str] = None
    quant_mode: Optional[str] = None
    scale_granularity: Optional[str] = None  # the implied/default granularity
    allowed_granularities: Tuple[str, ...] = ()
    scale_sources: Tuple[str, ...] = ()
    inline_scale_bytes_per_token_head: int = 0
    platforms: Tuple[str, ...] = ()
    mla_only: bool = False
    legacy_only: bool = False
    requires: Tuple[Mapping[str, Any], ...] = ()
    requires_message: str = ""
    note: str = ""
    verified: bool = True
    sources: Sources = ()

    @property
    def dynamic_per_token_head(self) -> bool:
        return self.scale_granularity == "per-token-head"

    def format_for(self, fp8_flavour: Optional[str] = None) -> Optional[str]:
        """Storage format on a GPU whose native FP8 is `fp8_flavour` ("e4m3" | "e4m3fnuz")."""
        if fp8_flavour == "e4m3fnuz" and self.format_on_fnuz:
            return self.format_on_fnuz
        return self.format


@dataclass(frozen=True)
class FeatureInfo:
    """Whether an engine release has a feature (available, deprecated, ignored, removed, absent)."""

    name: str
    available: bool
    status: str  # available | deprecated | ignored | removed | absent | unknown
    message: str = ""
    sources: Sources = ()
    verified: bool = True


@dataclass(frozen=True)
class DefaultInfo:
    """An engine release's default value for one setting."""

    name: str
    value: Any
    note: str = ""
    sources: Sources = ()
    verified: bool = True


@dataclass(frozen=True)
class RewriteInfo:
    """A setting an engine release changes on its own when a condition holds, and the message it logs."""

    id: str
    when: Mapping[str, Any]
    set: Mapping[str, Any]
    message: str
    sources: Sources = ()
    verified: bool = True
    # The release skips the rewrite when a setting is given explicitly and an environment switch
    # is on ({"explicit": "mem_fraction_static", "env": "SGLANG_AITER_HONOR_EXPLICIT_MEM_FRACTION"})
    skipped_when: Optional[Mapping[str, Any]] = None

    @property
    def by_model(self) -> bool:
        """A rewrite the engine makes for a model architecture while it builds its config, before
        the attention backend is selected (vLLM's verify_and_update_config)."""
        return "architectures" in self.when

    def applies(self, backend: Optional[str] = None, dtype: Optional[str] = None,
                page_size: Optional[int] = None, context_len: Optional[int] = None,
                architectures: Optional[Iterable[str]] = None) -> bool:
        w = self.when
        if "backends" in w and backend not in w["backends"]:
            return False
        if "dtypes" in w and dtype not in w["dtypes"]:
            return False
        if "dtype_prefix" in w and not (dtype or "").startswith(w["dtype_prefix"]):
            return False
        if "architectures" in w and not set(architectures or ()) & set(w["architectures"]):
            return False  # unknown architectures: not applied
        if "page_sizes_not_in" in w and (page_size is None or page_size in w["page_sizes_not_in"]):
            return False
        if "context_len_gt" in w and (context_len is None or context_len <= w["context_len_gt"]):
            return False
        return True


# --------------------------------------------------------------------------- conditions


@dataclass(frozen=True)
class Query:
    """What a condition can look at. None = unknown."""

    version: str
    platform: Optional[str] = None
    cc: Optional[Cc] = None
    head_size: Optional[int] = None
    dtype: Optional[str] = None
    quantized: Optional[bool] = None
    has_sinks: Optional[bool] = None
    block_size: Optional[int] = None
    fa: Optional[int] = None
    aiter: Optional[bool] = None


def _eval_one(cond: Mapping[str, Any], q: Query) -> Optional[bool]:
    """All-of over the keys; None when a key needs a fact the query does not have."""
    unknown = False
    for key, want in cond.items():
        if key == "versions":
            hit: Optional[bool] = version_matches(q.version, want)
        elif key == "platform":
            hit = None if q.platform is None else q.platform == want
        elif key == "cc":
            hit = None if q.cc is None else version_matches(cc_text(q.cc), want)
        elif key == "cc_major":
            hit = None if q.cc is None else q.cc[0] in want
        elif key == "fa":
            hit = None if q.fa is None else q.fa in want
        elif key == "head_sizes":
            hit = None if q.head_size is None else q.head_size in want
        elif key == "head_size":
            hit = None if q.head_size is None else version_matches(str(q.head_size), want)
        elif key == "has_sinks":
            hit = None if q.has_sinks is None else q.has_sinks == want
        elif key == "dtypes":
            hit = None if q.dtype is None else q.dtype in want
        elif key == "dtype_prefix":
            hit = None if q.dtype is None else q.dtype.startswith(want)
        elif key == "quantized":
            hit = None if q.quantized is None else q.quantized == want
        elif key == "block_sizes":
            hit = None if q.block_size is None else q.block_size in want
        elif key == "aiter":
            hit = bool(q.aiter) == want
        else:  # the schema forbids other keys
            raise KeyError(key)
        if hit is False:
            return False
        if hit is None:
            unknown = True
    return None if unknown else True


def eval_any(conds: Union[Mapping[str, Any], Sequence[Mapping[str, Any]], None], q: Query) -> Optional[bool]:
    if conds is None:
        return True
    if isinstance(conds, dict) or (not isinstance(conds, list) and isinstance(conds, Mapping)):
        conds = [conds]
    results = [_eval_one(c, q) for c in conds]
    if any(r is True for r in results):
        return True
    if any(r is None for r in results):
        return None
    return False


def _first_variant(variants: Sequence[Mapping[str, Any]], q: Query) -> Optional[Mapping[str, Any]]:
    for v in variants or ():
        if eval_any(v.get("when"), q) is True:
            return v
    return None


def _join(items: Sequence[str]) -> str:
    items = list(items)
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def _size_rule_text(v: Mapping[str, Any]) -> str:
    if "sizes" in v:
        return "one of " + ", ".join(str(s) for s in v["sizes"])
    parts = []
    if "multiple_of" in v:
        parts.append(f"a multiple of {v['multiple_of']}")
    if "powers_of_two_from" in v:
        parts.append(f"a power of two >= {v['powers_of_two_from']}")
    if "min" in v:
        parts.append(f">= {v['min']}")
    if "max" in v:
        parts.append(f"<= {v['max']}")
    return " and ".join(parts) or "any size"


def _size_ok(v: Mapping[str, Any], n: int) -> bool:
    if "sizes" in v and n not in v["sizes"]:
        return False
    if "multiple_of" in v and n % v["multiple_of"] != 0:
        return False
    if "powers_of_two_from" in v and (n < v["powers_of_two_from"] or n & (n - 1)):
        return False
    if "min" in v and n < v["min"]:
        return False
    if "max" in v and n > v["max"]:
        return False
    return True


# --------------------------------------------------------------------------- backends


def names_block_sizes(value: Any) -> bool:
    """Whether `'"block_sizes"' in json.dumps(value, default=str)`, without loading json (start-up
    time): some key or string (or, for other objects, their str()) is `block_sizes` or ends with
    `"block_sizes` (json escapes that quote, the closing one it leaves)."""
    if isinstance(value, str):
        return value == "block_sizes" or value.endswith('"block_sizes')
    if isinstance(value, dict):
        return any((isinstance(k, str) and names_block_sizes(k)) or names_block_sizes(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return any(names_block_sizes(item) for item in value)
    if value is None or isinstance(value, (int, float)):
        return False
    return names_block_sizes(str(value))


@dataclass(frozen=True)
class BackendInfo:
    """One attention backend as an engine release has it: platforms, dtypes, head sizes, block sizes."""

    name: str
    engine: str
    version: str  # the release this view is for
    platforms: Tuple[str, ...]
    mla: bool
    data: Mapping[str, Any] = field(repr=False, compare=False)
    flash_attn_versions: Tuple[Mapping[str, Any], ...] = field(default=(), repr=False, compare=False)
    validated_selector: bool = True
    sparse: bool = False
    reported_name: Optional[str] = None
    requires_package: Optional[str] = None
    note: str = ""
    verified: bool = True
    sources: Sources = ()

    # -- helpers
    @property
    def checks_known(self) -> bool:
        """False for a backend the catalog lists only by name, device and attention kind
        (`checks: unknown`): its dtype, head-size, block-size, GPU, sink and scale checks are not
        modelled, so accepts() reports only the device and the attention kind, and the linter
        says the rest is unknown (KV344)."""
        return self.data.get("checks") != "unknown"

    @property
    def label(self) -> str:
        return f"{ENGINE_DISPLAY.get(self.engine, self.engine)} {self.version} {self.name}"

    def fa_version(self, gpu_cc: Optional[Cc], head_size: Optional[int] = None,
                   has_sinks: Optional[bool] = None, quantized: Optional[bool] = None) -> Optional[int]:
        """FlashAttention version vLLM's get_flash_attn_version picks for the layer (None when
        unknown). Sinks and a quantized cache matter from 0.29 (SM100 head size 256 falls back
        to FA2 with either: fa_utils.py _fa4_hd256_fallback_reason); an entry that asks for one
        of them does not match while it is unknown."""
        if not self.flash_attn_versions or gpu_cc is None:
            return None
        memo = self.__dict__.setdefault("_fa_memo", {})
        key = (gpu_cc, head_size, has_sinks, quantized)
        if key not in memo:
            memo[key] = None
            q = Query(self.version, cc=gpu_cc, head_size=head_size, has_sinks=has_sinks, quantized=quantized)
            for entry in self.flash_attn_versions:
                if eval_any(entry.get("when"), q) is True:
                    memo[key] = int(entry["fa"])
                    break
        return memo[key]

    def _query(self, dtype: Optional[str], gpu_cc: Optional[Cc], head_size: Optional[int],
               block_size: Optional[int], platform: Optional[str], has_sinks: Optional[bool],
               quantized: Optional[bool], aiter: Optional[bool] = None) -> Query:
        return Query(self.version, platform, gpu_cc, head_size, dtype, quantized, has_sinks,
                     block_size, self.fa_version(gpu_cc, head_size, has_sinks, quantized), aiter)

    def listed_dtypes(self, is_mla: Optional[bool] = None) -> Tuple[str, ...]:
        """Literals on the backend's list at this release (before GPU conditions). An entry with
        `mla` lists dtypes for models of that attention kind only (SGLang's FP4 check names its
        backends per kind); with the kind unknown every entry counts."""
        memo = self.__dict__.setdefault("_listed", {})  # a view of one release never changes
        cached = memo.get(is_mla)
        if cached is not None:
            return cached
        out: List[str] = []
        for entry in self.data.get("kv_cache_dtypes") or ():
            if is_mla is not None and entry.get("mla") is not None and entry["mla"] != is_mla:
                continue
            if version_matches(self.version, entry.get("versions", "")):
                out.extend(d for d in entry["dtypes"] if d not in out)
        memo[is_mla] = tuple(out)
        return tuple(out)

    def _constraints(self) -> List[Mapping[str, Any]]:
        cached = self.__dict__.get("_live_constraints")
        if cached is None:
            cached = tuple(c for c in self.data.get("constraints") or ()
                           if version_matches(self.version, c.get("versions", "")))
            object.__setattr__(self, "_live_constraints", cached)
        return list(cached)

    def _gate_stage(self) -> str:
        return "select" if self.validated_selector else "init"

    def _dtype_problems(self, q: Query, quantized_of: Mapping[str, bool],
                        is_mla: Optional[bool] = None) -> List[Problem]:
        probs: List[Problem] = []
        if q.dtype is None:
            return probs
        if q.dtype not in self.listed_dtypes(is_mla):
            probs.append(Problem("kv_dtype", self._gate_stage(), "", self.sources))
        for c in self._constraints():
            if eval_any(c.get("applies"), q) is not True:
                continue
            req = c.get("require")
            if req is not None and eval_any(req, q) is not False:
                continue
            probs.append(Problem(f"constraint:{c['id']}", c.get("stage", "select"), c["message"],
                                 _sources(c) or self.sources))
        return probs

    def accepted_dtypes(self, gpu_cc: Optional[Cc] = None, head_size: Optional[int] = None,
                        platform: Optional[str] = None, *, quantized_of: Optional[Mapping[str, bool]] = None,
                        stages: Iterable[str] = ("select", "init", "runtime"),
                        is_mla: Optional[bool] = None) -> Tuple[str, ...]:
        """Listed literals that pass every constraint of the given stages on this GPU."""
        memo_key = None
        if not quantized_of:
            memo_key = (gpu_cc, head_size, platform, tuple(stages), is_mla)
            hit = self.__dict__.setdefault("_accepted_memo", {}).get(memo_key)
            if hit is not None:
                return hit
        quantized_of = quantized_of or {}
        stages = set(stages)
        out = []
        for d in self.listed_dtypes(is_mla):
            q = self._query(d, gpu_cc, head_size, None, platform, None,
                            quantized_of.get(d, guess_quantized(d)))
            if not any(p.stage in stages for p in self._dtype_problems(q, quantized_of, is_mla)):
                out.append(d)
        if memo_key is not None:
            self.__dict__["_accepted_memo"][memo_key] = tuple(out)
        return tuple(out)

    def block_rule(self, gpu_cc: Optional[Cc] = None, head_size: Optional[int] = None,
                   dtype: Optional[str] = None, quantized: Optional[bool] = None) -> Optional[Mapping[str, Any]]:
        q = self._query(dtype, gpu_cc, head_size, None, None, None, quantized)
        return _first_variant(self.data.get("block_sizes") or (), q)

    def preferred_block_size(self, gpu_cc: Optional[Cc] = None, head_size: Optional[int] = None,
                             dtype: Optional[str] = None, quantized: Optional[bool] = None) -> Optional[int]:
        q = self._query(dtype, gpu_cc, head_size, None, None, None, quantized)
        v = _first_variant(self.data.get("preferred_block_size") or (), q)
        return None if v is None else int(v["size"])

    def supports_block_size(self, block_size: int, gpu_cc: Optional[Cc] = None,
                            head_size: Optional[int] = None, dtype: Optional[str] = None,
                            quantized: Optional[bool] = None) -> bool:
        rule = self.block_rule(gpu_cc, head_size, dtype, quantized)
        if rule is None:
            return True
        if "sizes" in rule:  # vLLM: the framework block may be a multiple of a kernel block
            if self.engine == "vllm" and not rule.get("exact"):
                return any(block_size % s == 0 for s in rule["sizes"])
            return block_size in rule["sizes"]
        return _size_ok(rule, block_size)

    def refuses_other_kind(self, platform: Optional[str] = None) -> Optional[bool]:
        """Whether the release refuses, at start-up, a model of the other attention kind (MLA vs
        not) on this backend: the catalog's `kind_checked` (true, or a gate whose `require` says
        where); None when the catalog does not say."""
        gate = self.data.get("kind_checked")
        if gate is None or isinstance(gate, bool):
            return gate
        return eval_any(gate.get("require"), self._query(None, None, None, None, platform, None, None)) is True

    def _gate(self, name: str, q: Query) -> Tuple[Optional[bool], str, Sources]:
        gate = self.data.get(name)
        if gate is None or isinstance(gate, bool):
            return gate, "", self.sources
        ok = eval_any(gate.get("require"), q)
        return (True if ok is None else ok), gate.get("message", ""), _sources(gate) or self.sources

    # -- the check
    def accepts(self, dtype_literal: Optional[str], gpu_cc: Optional[Cc] = None,
                head_size: Optional[int] = None, block_size: Optional[int] = None, *,
                platform: Optional[str] = None, has_sinks: bool = False,
                per_head_scales: bool = False, is_mla: Optional[bool] = None,
                quantized: Optional[bool] = None, aiter: Optional[bool] = None,
                kinds: Optional[Iterable[str]] = None, sparse: Optional[bool] = None) -> Verdict:
        """Would this backend run this configuration? `kinds` limits the checks (selection).
        `sparse`: whether the MLA model has a sparse-attention indexer (index_topk); a vLLM MLA
        backend of the other kind (sparse vs dense) is refused like one of the other attention kind.

        Unknown facts (None) never produce a failure. The reason is a sentence for a lint
        message naming the release, the backend and the GPU.

        Answers are memoized per backend view (a view of one release never changes; a Verdict is
        immutable), and the checks other than the block size are shared by every block size
        unless one of the backend's conditions asks for the block size.
        """
        if quantized is None and dtype_literal is not None:
            quantized = guess_quantized(dtype_literal)
        if platform is None and gpu_cc is not None:
            platform = "cuda"  # only NVIDIA GPUs have a compute capability
        kinds_key = None if kinds is None else tuple(kinds)
        memo = self.__dict__.setdefault("_accepts_memo", {})
        full_key = (dtype_literal, gpu_cc, head_size, block_size, platform, has_sinks, per_head_scales,
                    is_mla, quantized, aiter, kinds_key, sparse)
        hit = memo.get(full_key)
        if hit is not None:
            return hit
        bkey = block_size if self._conditions_ask_block_size() else None
        parts_key = (dtype_literal, gpu_cc, head_size, bkey, platform, has_sinks, per_head_scales,
                     is_mla, quantized, aiter, sparse)
        parts_memo = self.__dict__.setdefault("_problems_memo", {})
        parts = parts_memo.get(parts_key)
        if parts is None:
            parts = parts_memo[parts_key] = self._problems(dtype_literal, gpu_cc, head_size, bkey, platform,
                                                           has_sinks, per_head_scales, is_mla, quantized, aiter,
                                                           sparse)
        before_block, after_block = parts
        on = f" on {sm_name(gpu_cc)}" if gpu_cc else ""
        probs: List[Problem] = list(before_block)
        if block_size is not None and self.checks_known:
            bmemo = self.__dict__.setdefault("_block_problem_memo", {})
            bk = (block_size, gpu_cc, head_size, dtype_literal, quantized)
            if bk not in bmemo:
                bmemo[bk] = None
                if not self.supports_block_size(block_size, gpu_cc, head_size, dtype_literal, quantized):
                    rule = self.block_rule(gpu_cc, head_size, dtype_literal, quantized) or {}
                    bmemo[bk] = Problem("block_size", self._gate_stage(),
                                        f"{self.label}{on} needs a block size {_size_rule_text(rule)}, not {block_size}",
                                        self.sources, where=f"{self.label}{on}", detail=_size_rule_text(rule))
            if bmemo[bk] is not None:
                probs.append(bmemo[bk])
        probs.extend(after_block)

        if kinds is not None:
            wanted = set(kinds)
            probs = [p for p in probs if p.kind in wanted or (p.kind.startswith("constraint:") and "kv_dtype" in wanted and p.stage == "select")]
        if not probs:
            verdict = Verdict(True, f"{self.label}{on} accepts {dtype_literal}" if dtype_literal else f"{self.label}{on} accepts this configuration", self.sources)
        else:
            order = {"select": 0, "rewrite": 1, "init": 2, "runtime": 3}
            first = min(probs, key=lambda p: order.get(p.stage, 9))
            srcs = tuple(dict.fromkeys(s for p in probs for s in p.sources))  # first-seen order
            verdict = Verdict(False, "; ".join(p.reason for p in probs), srcs, first.stage, tuple(probs))
        memo[full_key] = verdict
        return verdict

    def _conditions_ask_block_size(self) -> bool:
        """Whether a condition of this backend (a constraint, gate or size rule's `when`) reads
        the block size; the block-size rule itself is checked separately."""
        cached = self.__dict__.get("_asks_block")
        if cached is None:
            cached = names_block_sizes({k: v for k, v in self.data.items() if k != "block_sizes"})
            self.__dict__["_asks_block"] = cached
        return cached

    def _problems(self, dtype_literal: Optional[str], gpu_cc: Optional[Cc], head_size: Optional[int],
                  block_size: Optional[int], platform: Optional[str], has_sinks: bool, per_head_scales: bool,
                  is_mla: Optional[bool], quantized: Optional[bool],
                  aiter: Optional[bool], sparse: Optional[bool] = None) -> Tuple[Tuple[Problem, ...], Tuple[Problem, ...]]:
        """Every problem but the block size's: (those listed before it, those after it)."""
        q = self._query(dtype_literal, gpu_cc, head_size, block_size, platform, has_sinks, quantized, aiter)
        on = f" on {sm_name(gpu_cc)}" if gpu_cc else ""
        gate_stage = self._gate_stage()
        probs: List[Problem] = []
        if platform and self.platforms and platform not in self.platforms:
            probs.append(Problem("platform", gate_stage,
                                 f"{self.label} does not run on {platform} (only {', '.join(self.platforms)})", self.sources))
        if is_mla is not None and is_mla != self.mla:
            probs.append(Problem("mla", gate_stage,
                                 f"{self.label} is {'an MLA' if self.mla else 'a non-MLA'} backend; the model is {'MLA' if is_mla else 'not MLA'}",
                                 self.sources))
        elif is_mla and self.mla and sparse is not None and sparse != self.sparse and self.engine == "vllm":
            # validate_configuration: use_sparse != cls.is_sparse() -> "sparse not supported" /
            # "non-sparse not supported" (vllm/attention/backends/abstract.py v0.11.1 L203-207,
            # vllm/v1/attention/backend.py v0.30.0 L316-320)
            probs.append(Problem("mla", gate_stage,
                                 f"{self.label} is a {'sparse' if self.sparse else 'dense'} MLA backend; the model is "
                                 f"{'sparse MLA (its config has index_topk)' if sparse else 'dense MLA (no index_topk)'}",
                                 self.sources))
        if not self.checks_known:  # only the device and the attention kind are catalogued
            return tuple(probs), ()
        for p in self._dtype_problems(q, {}, is_mla):
            if p.kind == "kv_dtype":
                accepted = self.accepted_dtypes(gpu_cc, head_size, platform, stages=("select",), is_mla=is_mla)
                shown = [d for d in accepted if guess_quantized(d)] if quantized else list(accepted)
                what = _join(shown) if shown else ("no quantized cache dtype" if quantized else "none")
                extra = ""
                if dtype_literal in self.accepted_dtypes(None, None, None, stages=()):
                    extra = ""
                reason = f"{self.label}{on} accepts {what}, not {dtype_literal}{extra}"
                probs.append(Problem("kv_dtype", p.stage, reason, p.sources))
            else:
                reason = f"{self.label}{on} with {dtype_literal}: {p.reason}"
                probs.append(Problem(p.kind, p.stage, reason, p.sources))

        if head_size is not None:
            rule = _first_variant(self.data.get("head_sizes") or (), q)
            if rule is not None and not _size_ok(rule, head_size):
                probs.append(Problem("head_size", gate_stage,
                                     f"{self.label}{on} supports head sizes {_size_rule_text(rule)}, not {head_size}", self.sources,
                                     where=f"{self.label}{on}", detail=_size_rule_text(rule)))
        before = tuple(probs)
        probs = []
        if gpu_cc is not None:
            ok, msg, src = self._gate("compute_capability", q)
            if ok is False:
                probs.append(Problem("compute_capability", gate_stage,
                                     f"{self.label} does not run on {sm_name(gpu_cc)}: {msg}", src))
        if has_sinks:
            ok, msg, src = self._gate("sinks", q)
            if ok is False:
                probs.append(Problem("sinks", gate_stage,
                                     f"{self.label}{on} does not support attention sinks" + (f": {msg}" if msg else ""), src,
                                     where=f"{self.label}{on}", detail=msg))
        if per_head_scales:
            ok, msg, src = self._gate("per_head_scales", q)
            if not ok:
                # ROCm AITER FA answers to FLASH_ATTN: say so, or "ROCM_AITER_FA" puzzles a manifest
                # that pinned FLASH_ATTN (AiterFlashAttentionBackend.get_name() returns "FLASH_ATTN":
                # vllm/v1/attention/backends/rocm_aiter_fa.py, v0.33.0).
                alias = (f" (what {self.reported_name} selects on {', '.join(self.platforms)})"
                         if self.reported_name and self.reported_name != self.name else "")
                probs.append(Problem("per_head_scales", gate_stage,
                                     f"{self.label}{alias}{on} does not take static per-head KV scales" + (f": {msg}" if msg else ""), src,
                                     where=f"{self.label}{alias}{on}", detail=msg))

        return before, tuple(probs)


def guess_quantized(literal: str) -> bool:
    return literal not in ("auto", "bfloat16", "float16", "bf16", "fp16", "float32", "half", "float")


# --------------------------------------------------------------------------- release view


@dataclass(frozen=True)
class SelectionRule:
    """How an engine release's automatic backend selection orders backends for one platform and GPU."""

    platform: str
    mla: bool
    gpu: Mapping[str, Any]
    order: Tuple[Union[str, Mapping[str, Any]], ...]
    validates: Union[str, Tuple[str, ...]]
    note: str = ""
    verified: bool = True
    sources: Sources = ()


@dataclass(frozen=True)
class EngineRelease:
    """The catalog's view of one engine release: dtypes, backends, features, defaults, selection, rewrites."""

    engine: str
    version: str
    dtypes: Mapping[str, DtypeInfo]
    backends: Tuple[BackendInfo, ...]
    features: Mapping[str, FeatureInfo]
    defaults: Mapping[str, DefaultInfo]
    selection_rules: Tuple[SelectionRule, ...]
    rewrites: Tuple[RewriteInfo, ...]
    sources: Sources = ()

    @property
    def label(self) -> str:
        return f"{ENGINE_DISPLAY.get(self.engine, self.engine)} {self.version}"

    def dtype(self, literal: str) -> Optional[DtypeInfo]:
        return self.dtypes.get(literal)

    def check_dtype(self, literal: str, gpu_cc: Optional[Cc] = None, platform: Optional[str] = None) -> Verdict:
        """Is the literal a cache dtype of this release, usable on this GPU/platform?"""
        info = self.dtype(literal)
        if info is None:
            return Verdict(False, f"{self.label} does not accept kv_cache_dtype {literal!r} "
                           f"(accepted: {', '.join(self.dtypes)})", self.sources, "select")
        if platform and info.platforms and platform not in info.platforms:
            return Verdict(False, f"{self.label} kv_cache_dtype {literal} is for {', '.join(info.platforms)} only",
                           info.sources, "init")
        if info.requires and gpu_cc is not None:
            if eval_any(list(info.requires), Query(self.version, platform, gpu_cc)) is False:
                return Verdict(False, f"{self.label} kv_cache_dtype {literal} does not run on {sm_name(gpu_cc)}: "
                               f"{info.requires_message}", info.sources, "init")
        return Verdict(True, f"{self.label} accepts kv_cache_dtype {literal}", info.sources)

    def backend(self, name: str, platform: Optional[str] = None, is_mla: Optional[bool] = None) -> Optional[BackendInfo]:
        """A backend by the engine's spelling (case-insensitive for vLLM/TensorRT-LLM enum names).

        On ROCm, vLLM's AITER FA reports itself as FLASH_ATTN (`reported_name`), so
        `backend("FLASH_ATTN", platform="rocm")` returns ROCM_AITER_FA.
        """
        memo = self.__dict__.setdefault("_backend_memo", {})  # a release view never changes
        mkey = (name, platform, is_mla)
        if mkey in memo:
            return memo[mkey]

        def norm(s: str) -> str:
            return s.upper() if self.engine in ("vllm", "tensorrt-llm") else s

        key = norm(name)

        def pick(cands: List[BackendInfo]) -> Optional[BackendInfo]:
            if platform:
                cands = [b for b in cands if platform in b.platforms]
            if is_mla is not None:
                cands = [b for b in cands if b.mla == is_mla] or cands
            return cands[0] if cands else None

        found = pick([b for b in self.backends if norm(b.name) == key])
        if found is None and platform:
            found = pick([b for b in self.backends if b.reported_name and norm(b.reported_name) == key])
        if found is None and not platform:
            found = pick([b for b in self.backends if norm(b.name) == key])
        memo[mkey] = found
        return found

    def backend_names(self) -> Tuple[str, ...]:
        return tuple(dict.fromkeys(b.name for b in self.backends))

    def feature(self, name: str) -> FeatureInfo:
        info = self.features.get(name)
        if info is None:
            return FeatureInfo(name, False, "unknown", f"the catalog says nothing about {name} for {self.label}")
        return info

    def default(self, name: str, fallback: Any = None) -> Any:
        info = self.defaults.get(name)
        return fallback if info is None else info.value

    def default_info(self, name: str) -> Optional[DefaultInfo]:
        return self.defaults.get(name)

    def rewrites_for(self, backend: Optional[str] = None, dtype: Optional[str] = None,
                     page_size: Optional[int] = None, context_len: Optional[int] = None,
                     architectures: Optional[Iterable[str]] = None) -> Tuple[RewriteInfo, ...]:
        return tuple(r for r in self.rewrites if r.applies(backend, dtype, page_size, context_len, architectures))

    def selection_rule(self, platform: str, is_mla: bool, gpu_cc: Optional[Cc]) -> Optional[SelectionRule]:
        q = Query(self.version, platform, gpu_cc)
        for rule in self.selection_rules:
            if rule.platform != platform or rule.mla != is_mla:
                continue
            if not rule.gpu or _eval_one(rule.gpu, q) is True:
                return rule
        return None


# --------------------------------------------------------------------------- catalog


@dataclass(frozen=True)
class EngineCatalog:
    """The engines' catalog data, with each release's view built on first use."""

    # engine -> merged document (lists concatenated in file order)
    data: Mapping[str, Mapping[str, Any]]
    files: Tuple[str, ...] = ()
    _cache: Dict[Tuple[str, str], Optional[EngineRelease]] = field(default_factory=dict, repr=False, compare=False)
    _versions: Dict[str, Tuple[str, ...]] = field(default_factory=dict, repr=False, compare=False)

    def engines(self) -> Tuple[str, ...]:
        return tuple(self.data)

    def known_versions(self, engine: str) -> Tuple[str, ...]:
        """Every catalogued version of `engine`, oldest first (computed once per engine: the
        catalog's data does not change once loaded, and every resolve asks)."""
        hit = self._versions.get(engine)
        if hit is None:
            hit = self._versions[engine] = self._known_versions(engine)
        return hit

    def _known_versions(self, engine: str) -> Tuple[str, ...]:
        doc = self.data.get(engine) or {}
        seen: List[str] = []
        for group in doc.get("releases", ()):
            seen.extend(v for v in group["versions"] if v not in seen)
        return tuple(sorted(seen, key=parse_version))

    def release(self, engine: str, version: str) -> Optional[EngineRelease]:
        key = (engine, str(version))
        if key not in self._cache:
            self._cache[key] = self._build(engine, str(version))
        return self._cache[key]

    def unchanged_lines(self, engine: str) -> Tuple[str, ...]:
        """Minor lines ("0.20") whose catalogued releases all behave alike (the derived tables of
        every release of the line are equal): a later patch of such a line is checked as its newest
        catalogued release."""
        out: List[str] = []
        for group in (self.data.get(engine) or {}).get("releases", ()):
            out.extend(x for x in group.get("unchanged_lines", ()) if x not in out)
        return tuple(out)

    def checked_release(self, engine: str, version: str) -> Tuple[Optional[EngineRelease], Optional[str]]:
        """The catalogued release whose compatibility facts are checked for `version`, and a note
        when it is not `version` itself; (None, None) when none may stand in (KV201).

        * a catalogued release: itself;
        * a pre-release, dev or local build ("0.16.0rc2.dev367+g98b0205c3.d20260221",
          "0.19.1+cu128") of a catalogued release: that release (the one it builds toward or from;
          an assumption, said in the note); a post-release (".postN") is not: it is checked as
          the newest catalogued release of its own line (X, X.post1, ...) only when `unchanged_lines`
          lists X, else None;
        * a version newer than the newest catalogued release: the newest one;
        * a patch release the catalog does not list (or a build of one): the newest catalogued
          release of its minor line, only when that line is in `unchanged_lines`.
        """
        exact = self.release(engine, version) if version else None
        if exact is not None:
            return exact, None
        known = self.known_versions(engine) if engine in self.data else ()
        if not known or not version:
            return None, None
        try:
            wanted = parse_version(version)
        except VersionError:
            return None, None
        label = ENGINE_DISPLAY.get(engine, engine)
        if wanted.is_postrelease:
            # a re-release (".postN") may change anything (SGLang 0.5.6.post1 resolves differently
            # from 0.5.6), and is how an organisation marks its own build (examples/org): only a
            # catalog that lists it knows it, or one that lists its release among `unchanged_lines`
            # (the derived tables of that release and of its post releases are all alike)
            line = wanted.base_version
            same_post = [v for v in known if parse_version(v).base_version == line and parse_version(v) <= wanted]
            if same_post and line in self.unchanged_lines(engine):
                return self.release(engine, same_post[-1]), (
                    f"{label} {version} is not in kvlint's catalog; it is checked as {same_post[-1]}: "
                    f"the {line} releases kvlint knows (post releases included) all behave alike")
            return None, None
        base = parse_version(wanted.base_version)
        if str(base) in known or base.public in known:
            return self.release(engine, str(base)), (
                f"{label} {version} is checked as {base}, the release it builds toward or from "
                f"(a pre-release, dev or local build is assumed to behave like it)")
        newest = known[-1]
        if base > parse_version(newest):
            return self.release(engine, newest), (
                f"{label} {version} is newer than the newest release kvlint knows; it is checked as {newest}")
        line = ".".join(str(x) for x in (base.release + (0, 0))[:2])
        same_line = [v for v in known if ".".join(v.split(".")[:2]) == line and parse_version(v) <= base]
        if same_line and line in self.unchanged_lines(engine):
            return self.release(engine, same_line[-1]), (
                f"{label} {version} is not in kvlint's catalog; it is checked as {same_line[-1]}: "
                f"the {line} releases kvlint knows all behave alike")
        return None, None

    def modelled_release(self, engine: str, version: str) -> Tuple[Optional[EngineRelease], Optional[str]]:
        """The catalogued release whose behaviour stands in for `version`, and a note when it is
        not `version` itself: the newest catalogued release at or below it (a patch release the
        catalog does not list), the newest for a newer or unreadable version, the oldest for an
        older one. (None, None) when the catalog knows no release of the engine."""
        exact = self.release(engine, version) if version else None
        if exact is not None:
            return exact, None
        known = self.known_versions(engine) if engine in self.data else ()
        if not known:
            return None, None
        label = ENGINE_DISPLAY.get(engine, engine)
        try:
            wanted = parse_version(version)
        except VersionError:
            return self.release(engine, known[-1]), (
                f"{label} version {version!r} not understood: {known[-1]} rules applied")
        base = parse_version(wanted.base_version)
        if base != wanted and base.public in known or str(base) in known:
            # A pre-release, dev build or local build of a catalogued release: the release it builds toward or from.
            return self.release(engine, str(base)), (
                f"{label} {version} is a build of {base}; {base} rules are applied")
        if wanted > parse_version(known[-1]):
            return self.release(engine, known[-1]), (
                f"{label} {version} is newer than the last release modelled ({known[-1]}); its rules are applied")
        if wanted < parse_version(known[0]):
            return self.release(engine, known[0]), (
                f"{label} {version} predates the releases modelled ({known[0]}+); {known[0]} rules are applied")
        below = [v for v in known if parse_version(v) <= wanted]
        return self.release(engine, below[-1]), (
            f"{label} {version} is not in the catalog; {below[-1]} rules are applied")

    def entries(self, engine: str, section: str) -> Tuple[Mapping[str, Any], ...]:
        return tuple((self.data.get(engine) or {}).get(section, ()))

    def _build(self, engine: str, version: str) -> Optional[EngineRelease]:
        doc = self.data.get(engine)
        if doc is None:
            return None
        try:
            wanted = parse_version(version)
        except VersionError:
            return None
        rel_sources: Sources = ()
        for group in doc.get("releases", ()):
            if any(parse_version(v) == wanted for v in group["versions"]):
                rel_sources = _sources(group)
                break
        else:
            return None

        def live(entry: Mapping[str, Any]) -> bool:
            return version_matches(version, entry.get("versions", ""))

        features: Dict[str, FeatureInfo] = {}
        for f in doc.get("features", ()):
            if live(f):
                status = f["status"]
                features[f["name"]] = FeatureInfo(f["name"], status in ("available", "deprecated"), status,
                                                  f.get("message", ""), _sources(f), f.get("verified", True))
        defaults = {d["name"]: DefaultInfo(d["name"], d["value"], d.get("note", ""), _sources(d), d.get("verified", True))
                    for d in doc.get("defaults", ()) if live(d)}
        dtypes: Dict[str, DtypeInfo] = {}
        for d in doc.get("dtypes", ()):
            if not live(d):
                continue
            scales = d.get("scales") or {}
            dtypes[d["literal"]] = DtypeInfo(
                literal=d["literal"], format=d.get("format"), quantized=bool(d.get("quantized")),
                format_on_fnuz=d.get("format_on_fnuz"), quant_mode=d.get("quant_mode"),
                scale_granularity=scales.get("granularity"),
                allowed_granularities=tuple(scales.get("allowed", ())),
                scale_sources=tuple(scales.get("sources", ())),
                inline_scale_bytes_per_token_head=int(scales.get("inline_bytes_per_token_head", 0)),
                platforms=tuple(d.get("platforms", ())), mla_only=bool(d.get("mla_only")),
                legacy_only=bool(d.get("legacy_only")), requires=tuple(d.get("requires", ())),
                requires_message=d.get("requires_message", ""), note=d.get("note", ""),
                verified=d.get("verified", True), sources=_sources(d))
        fa_versions = tuple(e for e in doc.get("flash_attn_versions", ()))
        validated = features.get("validated_selector")
        validated_selector = True if validated is None else validated.available
        backends: Dict[Tuple[str, Tuple[str, ...]], BackendInfo] = {}
        for b in doc.get("backends", ()):
            if not live(b):
                continue
            platforms = tuple(b.get("platforms", ()))
            backends[(b["name"], platforms, bool(b.get("mla")))] = BackendInfo(
                name=b["name"], engine=engine, version=version, platforms=platforms, mla=bool(b.get("mla")),
                data=b, flash_attn_versions=fa_versions if b["name"] == "FLASH_ATTN" else (),
                validated_selector=validated_selector, sparse=bool(b.get("sparse")),
                reported_name=b.get("reported_name"), requires_package=b.get("requires_package"),
                note=b.get("note", ""), verified=b.get("verified", True), sources=_sources(b))
        rules = tuple(
            SelectionRule(r["platform"], bool(r["mla"]), r.get("gpu") or {}, tuple(r["order"]),
                          r["validates"] if isinstance(r["validates"], str) else tuple(r["validates"]),
                          r.get("note", ""), r.get("verified", True), _sources(r))
            for r in doc.get("selection", ()) if live(r))
        rewrites = tuple(RewriteInfo(r["id"], r.get("when", {}), r.get("set", {}), r.get("message", ""),
                                     _sources(r), r.get("verified", True), r.get("skipped_when"))
                         for r in doc.get("rewrites", ()) if live(r))
        return EngineRelease(engine, version, dtypes, tuple(backends.values()), features, defaults,
                             rules, rewrites, rel_sources)


_OTHER_CATALOG_PARTS = ("gpus", "models")
_LIST_SECTIONS = ("releases", "defaults", "features", "flash_attn_versions", "dtypes", "backends",
                  "selection", "rewrites")
_VALIDATOR: Dict[str, Any] = {}  # cache: the compiled schema validator


def schema_path() -> Path:
    return schemas_dir() / "catalog-engine.json"


def _validator() -> Any:
    if "v" not in _VALIDATOR:
        import json

        from jsonschema import Draft202012Validator

        schema = json.loads(schema_path().read_text(encoding="utf-8"))
        _VALIDATOR["v"] = Draft202012Validator(schema)
    return _VALIDATOR["v"]


def _check_versions(doc: Mapping[str, Any], file: Path) -> None:
    """Specifiers and release numbers must parse: the schema cannot say that."""
    for section in _LIST_SECTIONS:
        for i, entry in enumerate(doc.get(section) or ()):
            try:
                for v in entry.get("versions", ()) if section == "releases" else ():
                    parse_version(v)
                if section != "releases" and "versions" in entry:
                    version_matches("0", entry["versions"])
            except VersionError as exc:
                raise CatalogError(f"/{section}/{i}/versions: {exc}", file) from None


def load_engine_file(path: Path, validate: bool = True) -> Mapping[str, Any]:
    try:
        doc = load_cached(path, lambda text: yaml.load(text, Loader=_Loader))
    except (OSError, yaml.YAMLError) as exc:
        raise CatalogError(f"cannot read catalog file: {exc}", path) from None
    if not isinstance(doc, dict):
        raise CatalogError("a catalog file must be a mapping with an `engine` key", path)
    if not validate:
        return doc
    errors = sorted(_validator().iter_errors(doc), key=lambda e: list(e.absolute_path))
    if errors:
        err = errors[0]
        where = "/" + "/".join(str(p) for p in err.absolute_path)
        raise CatalogError(f"{where}: {err.message}", path)
    _check_versions(doc, path)
    return doc


def builtin_engines_dir() -> Path:
    return catalog_dir() / "engines"


def load_engine_catalog(dirs: Optional[Sequence[Union[str, Path]]] = None,
                        validate: Optional[bool] = None) -> EngineCatalog:
    """Load and merge every `*.yaml`/`*.yml` in `dirs` (default: the built-in engines dir).

    An extra catalog dir may hold engine files directly or in an `engines/` subfolder.
    `validate=None` validates every file except the built-in ones, which the test suite
    validates (tests/test_catalog_engines.py) and which ship unchanged in the wheel: schema
    validation costs ~30 ms per run against ~15 ms for parsing. `validate=True` checks all.
    """
    if dirs is None:
        dirs = [builtin_engines_dir()]
    builtin = builtin_engines_dir().resolve()
    merged: Dict[str, Dict[str, Any]] = {}
    files: List[str] = []
    for d in dirs:
        d = Path(d)
        if (d / "engines").is_dir():
            d = d / "engines"
        if not d.is_dir():
            raise CatalogError("catalog directory does not exist", d)
        for path in sorted(list(d.glob("*.yaml")) + list(d.glob("*.yml"))):
            if path.stem in _OTHER_CATALOG_PARTS and path.parent.name != "engines":
                continue  # a catalog-dir's gpus.yaml / models.yaml, read by their own loaders
            check = validate if validate is not None else d.resolve() != builtin
            doc = load_engine_file(path, validate=check)
            files.append(str(path))
            target = merged.setdefault(doc["engine"], {"engine": doc["engine"]})
            if "display_name" in doc:
                target["display_name"] = doc["display_name"]
            for section in _LIST_SECTIONS:
                if section in doc:
                    target.setdefault(section, []).extend(doc[section])
    return EngineCatalog(merged, tuple(files))
