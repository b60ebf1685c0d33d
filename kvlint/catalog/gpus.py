"""The GPU part of the catalog: device memory as the runtime reports it, compute capability or gfx
arch, native FP8 flavour and FP4 support.

Built-in data: `rules/catalog/gpus.yaml`. A `catalog-dir` may add `gpus.yaml` (or `gpus/*.yaml`);
an entry whose id matches an earlier one replaces it, so organisations can correct a figure (for
example a measured CUDA total) without forking. Files outside the built-in directory are validated
against `schemas/catalog-gpu.json`; the built-in ones are validated by the test suite, which keeps
`jsonschema` off the hot path of every `kvlint check`.
"""

from __future__ import annotations

import re
from functools import lru_cache, cache
from pathlib import Path
from typing import Any, Dict, Iterable, List, Literal, Mapping, Optional, Sequence, Tuple, Union

import yaml

from kvlint.deployment import GpuInfo
from kvlint.records import dataclass
from kvlint.resources import catalog_dir, schemas_dir
from kvlint.errors import CatalogError
from kvlint.datacache import load_cached
from kvlint.catalog.index import build_alias_index

try:  # libyaml is ~10x faster; fall back to the pure-Python loader where it is missing
    _SafeLoader: Any = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - depends on how PyYAML was built
    _SafeLoader = yaml.SafeLoader

PathLike = Union[str, Path]
GPU_SCHEMA = "catalog-gpu.json"




@dataclass(frozen=True)
class Source:
    """Where a catalog fact comes from: repo + path (+ release/commit), or a URL."""

    repo: Optional[str] = None
    path: Optional[str] = None
    release: Optional[str] = None
    commit: Optional[str] = None
    url: Optional[str] = None
    note: Optional[str] = None

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> Source:
        return cls(**{key: data.get(key) for key in cls.__dataclass_fields__})

    def __str__(self) -> str:
        if self.url:
            where = self.url
        else:
            pin = self.release or self.commit
            where = f"{self.repo} {self.path}" + (f" @ {pin}" if pin else "")
        return f"{where} ({self.note})" if self.note else where


def read_catalog_yaml(path: Path) -> Any:
    try:
        return load_cached(path, lambda text: yaml.load(text, Loader=_SafeLoader))  # noqa: S506
    except yaml.YAMLError as error:
        raise CatalogError(f"not valid YAML: {error}", str(path)) from None
    except OSError as error:
        raise CatalogError(f"cannot read: {error.strerror}", str(path)) from None


def validate_with_schema(data: Any, schema_name: str, path: Path) -> None:
    """Validate a user-supplied catalog file; raises CatalogError naming the first problem."""
    from jsonschema import Draft202012Validator  # deferred: the costliest import kvlint has

    schema = _schema(schema_name)
    errors = sorted(Draft202012Validator(schema).iter_errors(data), key=lambda e: list(e.path))
    if errors:
        error = errors[0]
        where = "/" + "/".join(str(part) for part in error.path)
        raise CatalogError(f"{where}: {error.message} (schema {schema_name})", str(path))


@cache
def _schema(name: str) -> Dict[str, Any]:
    import json

    with open(schemas_dir() / name, encoding="utf-8") as handle:
        return json.load(handle)


def catalog_files(dirs: Sequence[Path], single: str) -> List[Tuple[Path, bool]]:
    """`<dir>/<single>.yaml|yml` and `<dir>/<single>/*.yaml|yml` of each dir, in order, with a flag
    saying whether the file is built-in data (validated by the tests rather than at load time)."""
    builtin = catalog_dir().resolve()
    found: List[Tuple[Path, bool]] = []
    for directory in dirs:
        directory = Path(directory)
        is_builtin = directory.resolve() == builtin
        for suffix in (".yaml", ".yml"):
            candidate = directory / f"{single}{suffix}"
            if candidate.is_file():
                found.append((candidate, is_builtin))
        sub = directory / single
        if sub.is_dir():
            for candidate in sorted(sub.iterdir()):
                if candidate.suffix in (".yaml", ".yml") and candidate.is_file():
                    found.append((candidate, is_builtin))
    return found


def normalize_gpu_name(name: str) -> str:
    """Case-, space-, hyphen- and underscore-insensitive key: "NVIDIA H100 80GB HBM3" ->
    "nvidiah10080gbhbm3"."""
    return re.sub(r"[\s\-_]+", "", name).lower()


# Words that nvidia-smi / rocm-smi put in front of the product name; a name that matches nothing is
# retried without them ("NVIDIA GeForce RTX 4090" -> "RTX 4090", "Tesla T4" -> "T4").
# (Compiled on first use, through re's cache: a name found as written needs neither.)
_VENDOR_PREFIX = r"nvidia|amd|tesla|geforce|instinct|radeon|quadro"
_VENDOR_PREFIXES = r"^(nvidia|amd|tesla|geforce|instinct|radeon|quadro)+"


@dataclass(frozen=True)
class GpuEntry:
    """One GPU of the catalog: memory, compute capability, FP8/FP4 support, and what is unverified."""

    id: str
    name: str
    aliases: Tuple[str, ...]
    vendor: Literal["nvidia", "amd", "apple"]
    architecture: Optional[str]
    compute_capability: Optional[Tuple[int, int]]
    arch: Optional[str]
    memory_bytes: Optional[int]  # None: unknown, the manifest must give hardware.memory
    memory_basis: str  # cuda | rocm | nvidia-smi | rocm-smi | spec | unknown
    nvidia_smi_mib: Optional[int]
    fp8: Optional[Literal["e4m3", "e4m3fnuz"]]
    fp4: bool
    verified: bool
    unverified_fields: Tuple[str, ...]
    notes: Optional[str]
    sources: Tuple[Source, ...]
    file: str

    @property
    def memory_known(self) -> bool:
        return self.memory_bytes is not None

    @property
    def memory_is_runtime_total(self) -> bool:
        """True when memory_bytes is what the CUDA/ROCm runtime reports (not nvidia-smi or spec)."""
        return self.memory_basis in ("cuda", "rocm", "rocm-smi")

    def info(self, memory_override: Optional[int] = None) -> GpuInfo:
        """The resolved `GpuInfo`; `memory_override` (the manifest's hardware.memory) wins.

        When neither the catalog nor the override knows the memory (`memory_known` is False:
        B300, RTX 5090, RTX PRO 6000), `memory_bytes` is None - an unknown that stays unknown, as
        everywhere in a Deployment - rather than an exception in the middle of resolve.
        """
        memory = memory_override if memory_override is not None else self.memory_bytes
        return GpuInfo(
            id=self.id,
            vendor=self.vendor,
            memory_bytes=int(memory) if memory is not None else None,  # type: ignore[arg-type]
            compute_capability=self.compute_capability,
            arch=self.arch,
            fp8=self.fp8,
            fp4=self.fp4,
            memory_basis="manifest" if memory_override is not None else self.memory_basis,
        )


def gpu_from_capability(name: str, cc: Tuple[int, int], memory_bytes: Optional[int]) -> GpuInfo:
    """A GPU the catalog does not know, described by the manifest: an NVIDIA GPU of compute
    capability `cc`. FP8 tensor cores start at SM 8.9 (Ada) and 9.0 (Hopper), FP4 at SM 10.0
    (Blackwell) (https://docs.nvidia.com/cuda/cuda-c-programming-guide/#compute-capabilities,
    "Features and Technical Specifications")."""
    return GpuInfo(
        id=name,
        vendor="nvidia",
        memory_bytes=memory_bytes,
        compute_capability=cc,
        arch=f"sm{cc[0]}{cc[1]}",
        fp8="e4m3" if cc >= (8, 9) else None,
        fp4=cc >= (10, 0),
        memory_basis="manifest" if memory_bytes is not None else None,
    )


class GpuCatalog:
    """GPUs by id and alias. Lookups ignore case, spaces, hyphens and underscores."""

    def __init__(self, entries: Iterable[GpuEntry]) -> None:
        self._entries, self._index = build_alias_index(entries, normalize_gpu_name)

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self._entries.values())

    @property
    def ids(self) -> List[str]:
        return list(self._entries)

    def get(self, gpu_id: str) -> Optional[GpuEntry]:
        return self._entries.get(gpu_id)

    def lookup(self, name: str) -> Optional[GpuEntry]:
        if not isinstance(name, str) or not name.strip():
            return None
        key = normalize_gpu_name(name)
        found = self._index.get(key)
        while found is None:  # "NVIDIA Tesla T4" -> "Tesla T4" -> "T4"
            match = re.match(_VENDOR_PREFIX, key)
            if not match or match.end() == len(key):
                break
            key = key[match.end():]
            found = self._index.get(key)
        return self._entries[found] if found is not None else None

    def suggest(self, name: str, n: int = 3, compute_capability: Optional[Tuple[int, int]] = None) -> List[str]:
        """Catalog ids close to `name` (did-you-mean), best first: only GPUs of the same model
        (the token holding the model number: "rtx3090", "h100", "mi300x" must match), and of the
        same compute capability when it is given, so a suggestion never names a GPU of another
        architecture (an RTX 3090 is not offered the FP8-capable RTX 4090; an MI300 is offered
        the MI300X)."""
        if not isinstance(name, str) or not name.strip():
            return []
        import difflib  # only for a did-you-mean: difflib is a start-up cost of every run

        key = normalize_gpu_name(name)
        stripped = re.sub(_VENDOR_PREFIXES, "", key) or key
        model = _model_token(name)
        keys = list(self._index)
        matches: List[str] = []
        for probe in (key, stripped):
            matches += difflib.get_close_matches(probe, keys, n=n * 3, cutoff=0.6)
        ids: List[str] = []
        for match in sorted(set(matches), key=lambda m: (-max(
            difflib.SequenceMatcher(None, key, m).ratio(),
            difflib.SequenceMatcher(None, stripped, m).ratio(),
        ), m)):
            gpu_id = self._index[match]
            entry = self._entries.get(gpu_id)
            if model and not _same_model(model, _model_token(gpu_id)):
                continue
            if compute_capability is not None and entry is not None and entry.compute_capability != compute_capability:
                continue
            if gpu_id not in ids:
                ids.append(gpu_id)
        return ids[:n]


def _same_model(written: str, candidate: str) -> bool:
    """"mi300" and "mi300x", "l40" and "l40s" name one model; "3090" and "4090" do not."""
    digits = [re.sub(r"\D", "", token) for token in (written, candidate)]
    return digits[0] == digits[1] and (candidate.startswith(written) or written.startswith(candidate))


def _model_token(name: str) -> str:
    """The model part of a GPU name as written: its first word holding a digit ("H100 80G" ->
    "h100", "NVIDIA GeForce RTX 3090" -> "3090", "MI300X-192GB" -> "mi300x")."""
    for word in re.split(r"[\s_\-/]+", name.lower()):
        if any(ch.isdigit() for ch in word):
            return word
    return ""


def _parse_compute_capability(value: Any, file: str, gpu_id: str) -> Optional[Tuple[int, int]]:
    if value is None:
        return None
    match = re.fullmatch(r"(\d+)\.(\d+)", str(value).strip())
    if not match:
        raise CatalogError(f"{gpu_id}: compute_capability {value!r} is not 'major.minor'", file)
    return int(match.group(1)), int(match.group(2))


def _entry(data: Mapping[str, Any], file: str) -> GpuEntry:
    gpu_id = data.get("id")
    if not isinstance(gpu_id, str) or not gpu_id:
        raise CatalogError("a GPU entry has no id", file)
    for key in ("vendor", "fp8", "fp4", "sources"):
        if key not in data:
            raise CatalogError(f"{gpu_id}: missing {key}", file)
    if not data["sources"]:
        raise CatalogError(f"{gpu_id}: at least one source is required", file)
    cc = _parse_compute_capability(data.get("compute_capability"), file, gpu_id)
    arch = data.get("arch") or (f"sm{cc[0]}{cc[1]}" if cc else None)
    fp8 = data["fp8"]
    memory = data.get("memory_bytes")
    if memory is not None and (not isinstance(memory, int) or memory <= 0):
        raise CatalogError(f"{gpu_id}: memory_bytes must be a positive integer or null", file)
    return GpuEntry(
        id=gpu_id,
        name=str(data.get("name") or gpu_id),
        aliases=tuple(str(alias) for alias in data.get("aliases") or ()),
        vendor=data["vendor"],
        architecture=data.get("architecture"),
        compute_capability=cc,
        arch=arch,
        memory_bytes=memory,
        memory_basis=str(data.get("memory_basis") or ("unknown" if memory is None else "spec")),
        nvidia_smi_mib=data.get("nvidia_smi_mib"),
        fp8=None if fp8 in (None, "none") else fp8,
        fp4=bool(data["fp4"]),
        verified=bool(data.get("verified", False)),
        unverified_fields=tuple(data.get("unverified_fields") or ()),
        notes=data.get("notes"),
        sources=tuple(Source.from_data(source) for source in data["sources"]),
        file=file,
    )


def read_entry_file(path: Path, builtin: bool, schema_name: str, list_key: str, make_entry: Any) -> List[Any]:
    """The entries of one catalog file: `list_key` items built with `make_entry(item, file)`.

    Organisation files are validated against their schema here; built-in files are validated by
    the test suite instead, which keeps jsonschema out of every `kvlint check`.
    """
    data = read_catalog_yaml(path)
    if data is None:
        return []
    if not builtin:
        validate_with_schema(data, schema_name, path)
    if not isinstance(data, dict) or not isinstance(data.get(list_key), list):
        raise CatalogError(f"expected a mapping with a '{list_key}' list", str(path))
    return [make_entry(item, str(path)) for item in data[list_key] if isinstance(item, dict)]


def _load_file(path: Path, builtin: bool) -> List[GpuEntry]:
    entries: List[GpuEntry] = read_entry_file(path, builtin, GPU_SCHEMA, "gpus", _entry)
    seen: Dict[str, str] = {}
    for entry in entries:
        for spelling in (entry.id, *entry.aliases):
            key = normalize_gpu_name(spelling)
            if seen.get(key, entry.id) != entry.id:
                raise CatalogError(
                    f"{spelling!r} names both {seen[key]} and {entry.id}", str(path)
                )
            seen[key] = entry.id
    return entries


@lru_cache(maxsize=8)
def _load_cached(dirs: Tuple[str, ...]) -> GpuCatalog:
    entries: List[GpuEntry] = []
    for path, builtin in catalog_files([Path(d) for d in dirs], "gpus"):
        entries.extend(_load_file(path, builtin))
    return GpuCatalog(entries)


def load_gpu_catalog(dirs: Optional[Sequence[PathLike]] = None) -> GpuCatalog:
    """Load `gpus.yaml` (and `gpus/*.yaml`) from each directory, built-in catalog first when
    `dirs` is None. Cached per process and per directory list. Raises `CatalogError`."""
    if dirs is None:
        dirs = [catalog_dir()]
    return _load_cached(tuple(str(Path(d)) for d in dirs))
