"""The ggml engines' catalog: llama.cpp and Ollama facts by release, loaded from YAML data.

Data lives in `rules/catalog/ggml/llama.cpp.yaml` and `ollama.yaml`, validated by
`schemas/catalog-ggml.json` (the test suite validates the built-in files). llama.cpp versions are
build tags ("b4747"), Ollama's are PEP 440 ("0.13.3", "v0.30.0"); both go through
`kvlint.versions`. A fact that holds for a range the data marks `verified: false` keeps that mark,
so a finding built on it can say the boundary is not pinned.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Tuple

import yaml

from kvlint.catalog.engines import Source, Sources
from kvlint.datacache import load_cached
from kvlint.deployment import GGML_ENGINES
from kvlint.errors import CatalogError
from kvlint.records import dataclass
from kvlint.resources import catalog_dir, schemas_dir
from kvlint.versions import VersionError, parse_version, version_matches

__all__ = ["CacheType", "Fact", "GgmlCatalog", "KernelVerdict", "LibraryTag", "load_ggml_catalog", "schema_path"]


def _sources(entry: Mapping[str, Any]) -> Sources:
    return tuple(Source.from_data(s) for s in entry.get("sources") or ())


def _matches(version: str, spec: str) -> bool:
    try:
        return version_matches(version, spec)
    except VersionError:
        return False


# An unpinned boundary is dated by its PR; its build number is estimated from the date (about ten
# builds a day). A build this many builds past the estimate is on the new side whatever the error.
BOUNDARY_MARGIN = 500


def _lower_bound(spec: str) -> Optional[int]:
    low = re.search(r">=\s*b([0-9]+)", spec)
    return int(low.group(1)) if low else None


def _upper_bound(spec: str) -> Optional[int]:
    high = re.search(r"<=?\s*b([0-9]+)", spec)
    return int(high.group(1)) if high else None


def _far_from_boundary(build: str, spec: str) -> bool:
    """True when `build` lies more than BOUNDARY_MARGIN builds inside both bounds of the specifier."""
    low, high = _lower_bound(spec), _upper_bound(spec)
    if low is None and high is None:
        return False
    try:
        number = int(parse_version(build).release[0])
    except (VersionError, IndexError):
        return False
    return (low is None or number - low > BOUNDARY_MARGIN) and (high is None or high - number > BOUNDARY_MARGIN)


@dataclass(frozen=True)
class Fact:
    """One llama.cpp or Ollama fact for a release, with its sources and whether its range is verified."""

    name: str
    value: Any
    verified: bool = True
    note: str = ""
    sources: Sources = ()


@dataclass(frozen=True)
class CacheType:
    """A llama.cpp cache type: `bytes` per block of `block` elements, scale included."""

    name: str
    block: int
    bytes: int
    quantized: bool
    versions: str
    verified: bool = True
    sources: Sources = ()
    payload_bits: Optional[int] = None  # a quantized block's bits per element without its scale

    def row_bytes(self, n: int) -> int:
        """ggml_row_size(type, n) = n / blck_size * type_size; n must be a multiple of the block."""
        return n // self.block * self.bytes


@dataclass(frozen=True)
class KernelVerdict:
    """Whether a flash-attention kernel exists for (backend, build option, build, K, V, head size)."""

    exists: Optional[bool]  # None: the catalog has no entry for this backend/build
    reason: str = ""
    unsupported: str = "cpu_fallback"  # what -fa on does without a kernel: cpu_fallback | abort
    verified: bool = True
    note: str = ""
    sources: Sources = ()
    lower_bound: Optional[int] = None  # the build number the matching entry starts at
    converted: bool = False  # a kernel runs, but with K and V converted to f16 (the pair is not compiled in)


# A weights quantization suffix of an Ollama tag: it changes the weights, not the KV-cache geometry.
_QUANT_SUFFIX = re.compile(r"^(i?q[0-9][a-z0-9_]*|fp16|f16|bf16|fp32|f32|mxfp4)$", re.IGNORECASE)


@dataclass(frozen=True)
class LibraryTag:
    """An Ollama library reference and the Hugging Face model it pulls (None: not mapped)."""

    name: str
    hf_id: Optional[str]
    family: Optional[str]  # a family the table lists, else None
    sizes: Tuple[str, ...]  # the family's mapped tags
    verified: bool
    sources: Sources


class GgmlCatalog:
    def __init__(self, docs: Mapping[str, Mapping[str, Any]]):
        self.docs = docs
        llama = docs.get("llama.cpp") or {}
        self.cache_types: Tuple[CacheType, ...] = tuple(
            CacheType(t["name"], int(t["block"]), int(t["bytes"]), bool(t["quantized"]), t["versions"],
                      t.get("verified", True), _sources(t), t.get("payload_bits"))
            for t in llama.get("cache_types", ()))

    # -- releases -------------------------------------------------------------------------------

    def known_range(self, engine: str) -> Optional[Tuple[str, str]]:
        rng = (self.docs.get(engine) or {}).get("known_range")
        return (rng["first"], rng["last"]) if rng else None

    def known(self, engine: str, version: str) -> bool:
        """The version reads and lies within the catalogued range of the engine."""
        rng = self.known_range(engine)
        if rng is None or not version:
            return False
        try:
            v = parse_version(version)
            return parse_version(rng[0]) <= parse_version(v.base_version) <= parse_version(rng[1])
        except VersionError:
            return False

    def setting(self, engine: str, name: str, version: str) -> Optional[Fact]:
        for entry in (self.docs.get(engine) or {}).get("settings", ()):
            if entry["name"] == name and _matches(version, entry["versions"]):
                verified = entry.get("verified", True) or (engine == "llama.cpp" and _far_from_boundary(version, entry["versions"]))
                return Fact(name, entry["value"], verified, entry.get("note", ""), _sources(entry))
        return None

    def setting_sources(self, engine: str, name: str) -> Sources:
        out: List[Source] = []
        for entry in (self.docs.get(engine) or {}).get("settings", ()):
            if entry["name"] == name:
                out.extend(_sources(entry))
        return tuple(out)

    def ollama_build(self, version: str) -> Optional[Fact]:
        """The llama.cpp build whose cache rules an Ollama release follows."""
        for entry in (self.docs.get("ollama") or {}).get("llama_cpp", ()):
            if _matches(version, entry["versions"]):
                return Fact("llama_cpp", entry["build"], entry.get("verified", True), entry.get("note", ""), _sources(entry))
        return None

    # -- cache types ----------------------------------------------------------------------------

    def cache_type(self, name: str) -> Optional[CacheType]:
        """The layout of a type name, whatever build accepts it."""
        for t in self.cache_types:
            if t.name == name:
                return t
        return None

    def accepted_types(self, build: str) -> Tuple[str, ...]:
        return tuple(t.name for t in self.cache_types if _matches(build, t.versions))

    def fork_type(self, name: str) -> bool:
        """A name that forks or unmerged PRs use; upstream llama.cpp rejects it."""
        forks = (self.docs.get("llama.cpp") or {}).get("fork_types") or {}
        low = name.lower()
        return low in (n.lower() for n in forks.get("names", ())) or any(low.startswith(p) for p in forks.get("prefixes", ()))

    def fork_sources(self) -> Sources:
        return _sources((self.docs.get("llama.cpp") or {}).get("fork_types") or {})

    # -- flash attention ------------------------------------------------------------------------

    def forced_off(self, architecture: Optional[str], build: str) -> Optional[Fact]:
        if not architecture:
            return None
        for entry in (self.docs.get("llama.cpp") or {}).get("fa_forced_off", ()):
            if entry["architecture"] == architecture and _matches(build, entry["versions"]):
                return Fact("fa_forced_off", entry["message"], entry.get("verified", True), "", _sources(entry))
        return None

    def kernel(self, backend: Optional[str], build: str, all_quants: bool, k: str, v: str,
               head_k: Optional[int], head_v: Optional[int]) -> KernelVerdict:
        verdict = self._kernel(backend, build, all_quants, k, v, head_k, head_v)
        if verdict.verified or verdict.lower_bound is None:
            return verdict
        # An unpinned boundary matters only if the build just before it gives another answer.
        before = self._kernel(backend, f"b{verdict.lower_bound - 1}", all_quants, k, v, head_k, head_v)
        if before.exists == verdict.exists and before.unsupported == verdict.unsupported and before.converted == verdict.converted:
            return replace(verdict, verified=True)
        return verdict

    def _kernel(self, backend: Optional[str], build: str, all_quants: bool, k: str, v: str,
                head_k: Optional[int], head_v: Optional[int]) -> KernelVerdict:
        if not backend:
            return KernelVerdict(None, "the ggml backend is unknown (set engine.build.backend)")
        for entry in (self.docs.get("llama.cpp") or {}).get("fa_kernels", ()):
            if backend not in entry["backends"] or not _matches(build, entry["versions"]):
                continue
            if "all_quants" in entry and bool(entry["all_quants"]) != bool(all_quants):
                continue
            common = dict(unsupported=entry.get("unsupported", "cpu_fallback"),
                          verified=entry.get("verified", True) or _far_from_boundary(build, entry["versions"]),
                          note=entry.get("note", ""), sources=_sources(entry),
                          lower_bound=_lower_bound(entry["versions"]))
            types = entry["types"]
            if not types:
                return KernelVerdict(False, "this build has no flash-attention kernel on this backend", **common)
            missing = [t for t in dict.fromkeys((k, v)) if t not in types]
            if missing:
                return KernelVerdict(False, f"no kernel for {' or '.join(missing)} (kernels: {', '.join(types)})", **common)
            if entry["pairs"] == "same" and k != v:
                return KernelVerdict(False, f"K and V must be the same type (K {k}, V {v})", **common)
            sizes = entry.get("head_sizes")
            quantized = any((self.cache_type(t) or CacheType(t, 1, 2, False, "")).quantized for t in (k, v))
            if sizes is not None and quantized and head_k is not None and head_k not in sizes:
                return KernelVerdict(False, f"no quantized kernel for head size {head_k} (head sizes {', '.join(map(str, sizes))})", **common)
            if head_k is not None and head_v is not None and head_k != head_v and backend not in ("cpu", "vulkan"):
                return KernelVerdict(None, f"K/V head sizes {head_k}/{head_v} differ: kernel availability not modelled", **common)
            compiled = entry.get("compiled")
            if compiled is not None and f"{k}-{v}" not in compiled:
                return KernelVerdict(True, f"the {k}-{v} kernel is not compiled in (compiled: {', '.join(compiled)})",
                                     converted=True, **common)
            return KernelVerdict(True, "", **common)
        return KernelVerdict(None, f"no catalog entry for {backend} at {build}")

    def slowdown(self) -> Tuple[str, Sources]:
        entry = (self.docs.get("llama.cpp") or {}).get("fallback_slowdown") or {}
        return entry.get("text", ""), _sources(entry)

    # -- Ollama library tags --------------------------------------------------------------------

    def ollama_families(self) -> Tuple[str, ...]:
        return tuple(str(e["family"]) for e in (self.docs.get("ollama") or {}).get("library", ()))

    def ollama_library_model(self, name: str) -> Optional[LibraryTag]:
        """The Hugging Face model an Ollama library tag (`qwen2.5:7b`, `library/llama3.1:8b-instruct-q8_0`)
        pulls, from the catalog's `library` table: mapped (hf_id set) or not (hf_id None: a family
        or tag the table does not list, `latest`, a base or dated variant). None when the name is
        not an Ollama library reference at all (a Hugging Face id, a user namespace)."""
        text = name.strip()
        if text.lower().startswith("library/"):
            text = text[len("library/"):]
        if "/" in text or not text:
            return None
        family, _, tag = text.partition(":")
        tag = tag.lower() or "latest"
        for entry in (self.docs.get("ollama") or {}).get("library", ()):
            if str(entry["family"]) != family.lower():
                continue
            tags = entry["tags"]
            found = next((k for k in sorted(tags, key=len, reverse=True) if tag == k or tag.startswith(k + "-")), None)
            if found is None:
                return LibraryTag(text, None, family.lower(), tuple(tags), entry.get("verified", True), _sources(entry))
            rest = [p for p in tag[len(found):].split("-") if p]
            if rest and rest[0] == "instruct" and entry.get("instruct_suffix"):
                rest = rest[1:]
            if len(rest) == 1 and _QUANT_SUFFIX.match(rest[0]):
                rest = []
            return LibraryTag(text, None if rest else str(tags[found]), family.lower(), tuple(tags),
                              entry.get("verified", True), _sources(entry))
        return LibraryTag(text, None, None, (), True, ()) if ":" in text else None

    # -- Ollama environment ---------------------------------------------------------------------

    def ollama_env(self) -> Mapping[str, Any]:
        return (self.docs.get("ollama") or {}).get("env") or {}


def schema_path() -> Path:
    return schemas_dir() / "catalog-ggml.json"


def validate_file(path: Path) -> None:
    """Schema check of one ggml catalog file (the test suite runs it on the built-in ones)."""
    from jsonschema import Draft202012Validator  # on use: only tests and organisation catalogs validate

    doc = _read(path)
    validator = Draft202012Validator(json.loads(schema_path().read_text(encoding="utf-8")))
    errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
    if errors:
        where = "/" + "/".join(str(p) for p in errors[0].absolute_path)
        raise CatalogError(f"{where}: {errors[0].message}", path)
    for section in ("cache_types", "settings", "fa_forced_off", "fa_kernels", "llama_cpp"):
        for i, entry in enumerate(doc.get(section) or ()):
            try:
                version_matches("0", entry["versions"])
            except VersionError as exc:
                raise CatalogError(f"/{section}/{i}/versions: {exc}", path) from None


def _read(path: Path) -> Mapping[str, Any]:
    try:
        doc = load_cached(path, yaml.safe_load)
    except (OSError, yaml.YAMLError) as exc:
        raise CatalogError(f"cannot read catalog file: {exc}", path) from None
    if not isinstance(doc, dict) or doc.get("engine") not in GGML_ENGINES:
        raise CatalogError("a ggml catalog file must be a mapping with `engine: llama.cpp` or `engine: ollama`", path)
    return doc


def builtin_dir() -> Path:
    return catalog_dir() / "ggml"


@lru_cache(maxsize=4)
def load_ggml_catalog(directory: Optional[str] = None) -> GgmlCatalog:
    d = Path(directory) if directory else builtin_dir()
    docs: Dict[str, Mapping[str, Any]] = {}
    if d.is_dir():
        for path in sorted(d.glob("*.yaml")):
            doc = _read(path)
            docs[doc["engine"]] = doc
    return GgmlCatalog(docs)
