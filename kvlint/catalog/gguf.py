"""A GGUF file's header and metadata -> `ModelGeometry`, the way llama.cpp reads it.

Reads the header and the key/value metadata only (never the tensor infos or tensor data), from
at most `MAX_HEADER_BYTES` of the file, through `kvlint.inputs.read_bounded` (non-blocking, regular
files only). Every count and length is checked against the bytes that are really left before
anything is allocated, nesting is capped, and any malformed file raises `GGUFError` (a
ValueError that `hf_config.read_config` turns into its ConfigError, and resolve into a finding) with one line saying what is wrong and where.

The format is ggml's `docs/gguf.md` (https://github.com/ggml-org/ggml/blob/master/docs/gguf.md):
magic "GGUF", uint32 version (2 or 3; version 1 used 32-bit counts and is refused), uint64 tensor
count, uint64 metadata count, then per key a gguf_string name (uint64 length + UTF-8 bytes), a
uint32 value type and the value. Files written big-endian are recognised by their byte-swapped
version number and read as such.

The keys and their defaults mirror llama.cpp b11312 (the release llama-cpp-python 0.3.36
vendors; https://github.com/ggml-org/llama.cpp/tree/b11312): key names in
`src/llama-arch.cpp` (`%s.block_count`, `%s.attention.head_count_kv`, `%s.attention.key_length`,
...), `n_embd_head_k = key_length`, else `embedding_length / head_count` (`src/llama-model.cpp`,
`load_hparams`), `head_count_kv` as a scalar or a per-layer array (`get_key_or_arr`; a layer with
0 KV heads has no KV cache), and the sliding-window layout of `load_swa_pattern`
(`src/llama-model.cpp`): a per-layer bool array in `%s.attention.sliding_window_pattern`, else a
uint32 period there, else the architecture's built-in period (`src/models/<arch>.cpp`), applied by
`llama_hparams::set_swa_pattern` (`src/llama-hparams.cpp`: layer il is SWA when
il % n < n - 1).
"""

from __future__ import annotations

import struct
from dataclasses import field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from kvlint.deployment import AttentionKind, LayerGeometry, ModelGeometry
from kvlint.inputs import InputError, read_bounded
from kvlint.records import dataclass

# Metadata of real models is a few MiB (a 262k-token vocabulary with merges is about 12 MiB);
# a file whose metadata runs past this is refused rather than read further.
MAX_HEADER_BYTES = 64 * 1024 * 1024
MAX_METADATA_KEYS = 1 << 16  # real files carry a few dozen
MAX_KEY_BYTES = 65535  # llama.cpp's gguf.cpp: key length fits a uint16 in practice
MAX_ARRAY_DEPTH = 4
MAX_KEPT_ARRAY = 1 << 16  # arrays kvlint keeps (per-layer values); longer ones are only skipped
MAX_NESTED_ARRAYS = 1 << 16  # arrays inside arrays in one file (llama.cpp writes none): each is a Python call
MAX_SHOWN_KEY = 120  # characters of a key quoted in a message (a key may be 64 KiB)

# GGUF value types (docs/gguf.md, `enum gguf_metadata_value_type`).
_UINT8, _INT8, _UINT16, _INT16, _UINT32, _INT32, _FLOAT32, _BOOL, _STRING, _ARRAY, _UINT64, _INT64, _FLOAT64 = range(13)
_SCALARS: Dict[int, Tuple[str, int]] = {
    _UINT8: ("B", 1), _INT8: ("b", 1), _UINT16: ("H", 2), _INT16: ("h", 2), _UINT32: ("I", 4),
    _INT32: ("i", 4), _FLOAT32: ("f", 4), _BOOL: ("?", 1), _UINT64: ("Q", 8), _INT64: ("q", 8),
    _FLOAT64: ("d", 8),
}
_TYPE_NAMES = {
    _UINT8: "uint8", _INT8: "int8", _UINT16: "uint16", _INT16: "int16", _UINT32: "uint32",
    _INT32: "int32", _FLOAT32: "float32", _BOOL: "bool", _STRING: "string", _ARRAY: "array",
    _UINT64: "uint64", _INT64: "int64", _FLOAT64: "float64",
}
_INTEGER_TYPES = frozenset({_UINT8, _INT8, _UINT16, _INT16, _UINT32, _INT32, _UINT64, _INT64})

# Built-in sliding-window layouts at b11312 (src/models/<file>.cpp, load_arch_hparams):
# architecture -> (period passed to load_swa_pattern, kind, default window or None, condition).
# "needs-window": only when %s.attention.sliding_window is present and > 0 (gemma3);
# "unless-zero-window": unless sliding_window is present and 0 (llama4);
# "64-layers": only the 64-layer model (exaone4.cpp: `if (hparams.n_layer() == 64)`).
_SWA_ARCHITECTURES: Dict[str, Tuple[int, AttentionKind, Optional[int], str]] = {
    "gemma2": (2, "sliding", 4096, "always"),  # gemma2.cpp: n_swa = 4096 default, pattern 2
    "gemma3": (6, "sliding", None, "needs-window"),  # gemma3.cpp
    "gemma3n": (5, "sliding", None, "always"),  # gemma3n.cpp
    "cohere2": (4, "sliding", None, "always"),  # cohere2.cpp
    "gpt-oss": (2, "sliding", None, "always"),  # openai-moe.cpp (LLM_ARCH_OPENAI_MOE = "gpt-oss")
    "exaone4": (4, "sliding", 4096, "64-layers"),  # exaone4.cpp
    "llama4": (4, "chunked", 8192, "unless-zero-window"),  # llama4.cpp: n_swa forced to 8192
}


class GGUFError(ValueError):
    """A file that is not a readable GGUF, or whose metadata gives no KV geometry.

    `kvlint.catalog.hf_config.read_config` turns it into its ConfigError; resolve reports either
    as a finding on model.config."""

    def __init__(self, message: str) -> None:
        self.message = message
        super().__init__(message)


@dataclass(frozen=True)
class GGUFHeader:
    """What kvlint keeps of a GGUF header: the version, counts and the small metadata values.

    `metadata` holds every scalar and string value, and arrays of at most MAX_KEPT_ARRAY scalars;
    longer arrays (the tokenizer's) are skipped and listed in `skipped_arrays` with their length.
    """

    version: int
    byte_order: str  # "little" | "big"
    tensor_count: int
    metadata: Dict[str, Any] = field(default_factory=dict)
    skipped_arrays: Dict[str, int] = field(default_factory=dict)
    header_bytes: int = 0  # bytes from the start of the file to the end of the metadata

    @property
    def architecture(self) -> Optional[str]:
        value = self.metadata.get("general.architecture")
        return value if isinstance(value, str) else None


class _Cursor:
    def __init__(self, data: bytes, where: str, order: str) -> None:
        self.data = memoryview(data)
        self.pos = 0
        self.nested = 0  # arrays met inside arrays, bounded by MAX_NESTED_ARRAYS
        self.where = where
        self.order = "<" if order == "little" else ">"
        self.truncated_by_cap = len(data) > MAX_HEADER_BYTES
        if self.truncated_by_cap:
            self.data = self.data[:MAX_HEADER_BYTES]

    def fail(self, message: str) -> GGUFError:
        return GGUFError(f"{self.where}: not a readable GGUF file: {message} (at byte {self.pos})")

    def need(self, n: int, what: str) -> None:
        if n < 0 or self.pos + n > len(self.data):
            if self.truncated_by_cap:
                raise GGUFError(
                    f"{self.where}: GGUF metadata runs past the first {MAX_HEADER_BYTES:,} bytes "
                    f"(reading {what} at byte {self.pos}); kvlint reads no further"
                )
            raise self.fail(f"the file ends inside {what}")

    def scalar(self, vtype: int, what: str) -> Any:
        code, size = _SCALARS[vtype]
        self.need(size, what)
        (value,) = struct.unpack_from(self.order + code, self.data, self.pos)
        self.pos += size
        return value

    def u32(self, what: str) -> int:
        return int(self.scalar(_UINT32, what))

    def u64(self, what: str) -> int:
        return int(self.scalar(_UINT64, what))

    def string(self, what: str, limit: Optional[int] = None) -> str:
        length = self.u64(f"the length of {what}")
        if limit is not None and length > limit:
            raise self.fail(f"{what} is {length:,} bytes long (at most {limit:,} allowed)")
        self.need(length, what)
        raw = bytes(self.data[self.pos : self.pos + length])
        self.pos += length
        return raw.decode("utf-8", errors="replace")

    def value(self, vtype: int, key: str, depth: int = 0) -> Tuple[Any, Optional[int]]:
        """(value, None), or (None, length) for an array that was skipped rather than kept."""
        if vtype in _SCALARS:
            return self.scalar(vtype, f"the value of {key!r}"), None
        if vtype == _STRING:
            return self.string(f"the value of {key!r}"), None
        if vtype != _ARRAY:
            raise self.fail(f"key {key!r} has unknown value type {vtype}")
        if depth >= MAX_ARRAY_DEPTH:
            raise self.fail(f"key {key!r} nests arrays more than {MAX_ARRAY_DEPTH} deep")
        if depth:
            self.nested += 1
            if self.nested > MAX_NESTED_ARRAYS:
                raise self.fail(f"it holds more than {MAX_NESTED_ARRAYS:,} arrays inside arrays")
        item_type = self.u32(f"the item type of {key!r}")
        count = self.u64(f"the length of {key!r}")
        if item_type in _SCALARS:
            size = _SCALARS[item_type][1]
            self.need(count * size, f"the {count:,} items of {key!r}")
            if count > MAX_KEPT_ARRAY:
                self.pos += count * size
                return None, count
            code = _SCALARS[item_type][0]
            values = list(struct.unpack_from(f"{self.order}{count}{code}", self.data, self.pos))
            self.pos += count * size
            return values, None
        if item_type == _STRING:
            # Each string takes at least its 8-byte length: a count the file cannot hold is refused
            # before any loop runs.
            self.need(count * 8, f"the {count:,} strings of {key!r}")
            length_at = struct.Struct(self.order + "Q").unpack_from
            data, pos, end = self.data, self.pos, len(self.data)
            for index in range(count):  # a tokenizer's vocabulary: skipped, never decoded
                if pos + 8 > end:
                    break
                pos += 8 + length_at(data, pos)[0]
                if pos > end:
                    break
            else:
                self.pos = pos
                return None, count
            self.pos = min(pos, end)
            self.need(end - self.pos + 1, f"string {index} of {key!r}")  # always raises here
            return None, count
        if item_type == _ARRAY:
            self.need(count * 12, f"the {count:,} arrays of {key!r}")  # 12 bytes: type + length
            for _ in range(count):
                self.value(_ARRAY, key, depth + 1)
            return None, count
        raise self.fail(f"array {key!r} has unknown item type {item_type}")


def parse_gguf(data: bytes, where: str) -> GGUFHeader:
    """Parse the header and metadata of a GGUF file held in `data` (its first bytes at least)."""
    if len(data) < 4 or bytes(data[:4]) != b"GGUF":
        raise GGUFError(f"{where}: not a GGUF file (it does not start with the magic bytes 'GGUF')")
    if len(data) < 8:
        raise GGUFError(f"{where}: not a readable GGUF file: the file ends inside the version")
    little = struct.unpack_from("<I", data, 4)[0]
    big = struct.unpack_from(">I", data, 4)[0]
    if little in (2, 3):
        order, version = "little", little
    elif big in (2, 3):
        order, version = "big", big
    elif little == 1 or big == 1:
        raise GGUFError(f"{where}: GGUF version 1 (32-bit counts) is not supported; re-convert the model with a current llama.cpp")
    else:
        raise GGUFError(f"{where}: unsupported GGUF version {little} (kvlint reads versions 2 and 3)")
    cursor = _Cursor(data, where, order)
    cursor.pos = 8
    tensor_count = cursor.u64("the tensor count")
    kv_count = cursor.u64("the metadata count")
    if kv_count > MAX_METADATA_KEYS:
        raise cursor.fail(f"it declares {kv_count:,} metadata keys (at most {MAX_METADATA_KEYS:,} allowed)")
    metadata: Dict[str, Any] = {}
    skipped: Dict[str, int] = {}
    for index in range(kv_count):
        key = cursor.string(f"the name of metadata key {index}", limit=MAX_KEY_BYTES)
        # messages quote the key cut short: a 64 KiB key repeated in every message built for
        # a million nested arrays was gigabytes of copying
        shown = key if len(key) <= MAX_SHOWN_KEY else f"{key[:MAX_SHOWN_KEY // 2]}...{key[-MAX_SHOWN_KEY // 4:]}"
        vtype = cursor.u32(f"the type of {shown!r}")
        value, skipped_length = cursor.value(vtype, shown)
        if key in metadata or key in skipped:
            raise cursor.fail(f"metadata key {shown!r} appears twice")
        if skipped_length is not None:
            skipped[key] = skipped_length
        else:
            metadata[key] = value
    return GGUFHeader(
        version=version,
        byte_order=order,
        tensor_count=tensor_count,
        metadata=metadata,
        skipped_arrays=skipped,
        header_bytes=cursor.pos,
    )


def read_gguf_header(path: Union[str, Path]) -> GGUFHeader:
    """Read a GGUF file's header and metadata (at most MAX_HEADER_BYTES of it). Raises GGUFError."""
    try:
        data = read_bounded(path, limit=MAX_HEADER_BYTES)
    except InputError as error:
        raise GGUFError(f"{path}: cannot read GGUF file: {error.message}") from None
    return parse_gguf(data, str(path))


# --- geometry ----------------------------------------------------------------------------------


def _int_value(header: GGUFHeader, key: str, where: str, required: bool = True, lo: int = 1) -> Optional[int]:
    value = header.metadata.get(key)
    if value is None:
        if key in header.skipped_arrays:
            raise GGUFError(f"{where}: GGUF key {key} is an array of {header.skipped_arrays[key]:,} values, expected a number")
        if required:
            raise GGUFError(f"{where}: GGUF metadata has no {key}; kvlint cannot size the KV cache without it")
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise GGUFError(f"{where}: GGUF key {key} is {_describe(value)}, expected an integer")
    if value < lo:
        raise GGUFError(f"{where}: GGUF key {key} is {value}, expected at least {lo}")
    return value


def _per_layer(header: GGUFHeader, key: str, n_layer: int, where: str, lo: int) -> Optional[List[int]]:
    """A llama.cpp `get_key_or_arr` value: one number for every layer, or an array of n_layer."""
    value = header.metadata.get(key)
    if value is None:
        if key in header.skipped_arrays:
            raise GGUFError(f"{where}: GGUF key {key} lists {header.skipped_arrays[key]:,} values for {n_layer} layers")
        return None
    if isinstance(value, list):
        if len(value) != n_layer:
            raise GGUFError(f"{where}: GGUF key {key} lists {len(value)} values for {n_layer} layers")
        out = []
        for item in value:
            if isinstance(item, bool) or not isinstance(item, int) or item < lo:
                raise GGUFError(f"{where}: GGUF key {key} holds {_describe(item)}, expected integers >= {lo}")
            out.append(item)
        return out
    number = _int_value(header, key, where, lo=lo)
    return [int(number)] * n_layer if number is not None else None


def _describe(value: Any) -> str:
    if isinstance(value, str):
        return f"the string {value[:40]!r}"
    if isinstance(value, list):
        return f"an array of {len(value)} values"
    return repr(value)


def _swa_flags(header: GGUFHeader, arch: str, n_layer: int, window: Optional[int], where: str) -> Tuple[List[bool], Optional[int], AttentionKind]:
    """Which layers are sliding-window (or chunked) layers, the window, and the kind."""
    builtin = _SWA_ARCHITECTURES.get(arch)
    pattern_key = f"{arch}.attention.sliding_window_pattern"
    raw = header.metadata.get(pattern_key)
    if builtin is None:
        if raw is None and not window:
            return [False] * n_layer, None, "full"
        if raw is None:
            raise GGUFError(
                f"{where}: GGUF gives {arch}.attention.sliding_window = {window} but no {pattern_key}, and "
                f"kvlint does not know which layers of architecture {arch!r} slide; give model.geometry.layer_types"
            )
        period, kind, default_window, condition = 0, "sliding", None, "always"
    else:
        period, kind, default_window, condition = builtin
        if condition == "needs-window" and not window:
            return [False] * n_layer, None, "full"
        if condition == "unless-zero-window" and window == 0:
            return [False] * n_layer, None, "full"
        if condition == "64-layers" and n_layer != 64:
            return [False] * n_layer, None, "full"
    if kind == "chunked" and default_window is not None:
        window = default_window  # llama4.cpp overwrites n_swa with 8192
    elif not window:
        window = default_window
    if window is None or window <= 0:
        raise GGUFError(f"{where}: GGUF marks sliding-window layers but gives no {arch}.attention.sliding_window")
    if isinstance(raw, list):
        if len(raw) < n_layer or any(not isinstance(flag, (bool, int)) for flag in raw):
            raise GGUFError(f"{where}: GGUF key {pattern_key} must list a bool for each of the {n_layer} layers")
        flags = [bool(flag) for flag in raw[:n_layer]]
    else:
        if raw is not None:
            if isinstance(raw, bool) or not isinstance(raw, int) or raw < 0:
                raise GGUFError(f"{where}: GGUF key {pattern_key} is {_describe(raw)}, expected a period or per-layer bools")
            period = raw
        # llama_hparams::set_swa_pattern (dense_first = false): 0 makes every layer SWA.
        flags = [period == 0 or (il % period) < (period - 1) for il in range(n_layer)]
    return flags, window, kind


def geometry_from_gguf(header: GGUFHeader, name: str) -> ModelGeometry:
    """The KV geometry llama.cpp derives from a GGUF header (see the module docstring)."""
    where = name
    arch = header.architecture
    if not arch:
        raise GGUFError(f"{where}: GGUF metadata has no general.architecture string")
    n_layer = int(_int_value(header, f"{arch}.block_count", where) or 0)
    if n_layer > MAX_KEPT_ARRAY:
        raise GGUFError(f"{where}: GGUF key {arch}.block_count is {n_layer:,}, more layers than kvlint accepts ({MAX_KEPT_ARRAY:,})")
    heads = _per_layer(header, f"{arch}.attention.head_count", n_layer, where, lo=0)
    if heads is None:
        raise GGUFError(f"{where}: GGUF metadata has no {arch}.attention.head_count")
    kv_heads = _per_layer(header, f"{arch}.attention.head_count_kv", n_layer, where, lo=0) or list(heads)
    n_head = max(heads)
    if n_head < 1:
        raise GGUFError(f"{where}: GGUF key {arch}.attention.head_count is 0 for every layer")
    key_length = _int_value(header, f"{arch}.attention.key_length", where, required=False)
    value_length = _int_value(header, f"{arch}.attention.value_length", where, required=False)
    if key_length is None or value_length is None:
        embd = _int_value(header, f"{arch}.embedding_length", where, required=False)
        if embd is None:
            raise GGUFError(
                f"{where}: GGUF metadata gives neither {arch}.attention.key_length nor {arch}.embedding_length"
            )
        # load_hparams: n_embd_head_k = n_embd / n_head by default (heads of layer 0).
        default_head = embd // heads[0] if heads[0] else 0
        if default_head < 1:
            raise GGUFError(f"{where}: {arch}.embedding_length {embd} is smaller than the head count {heads[0]}")
        key_length = key_length if key_length is not None else default_head
        value_length = value_length if value_length is not None else default_head
    key_length_swa = _int_value(header, f"{arch}.attention.key_length_swa", where, required=False)
    value_length_swa = _int_value(header, f"{arch}.attention.value_length_swa", where, required=False)
    window = _int_value(header, f"{arch}.attention.sliding_window", where, required=False, lo=0)
    flags, window, window_kind = _swa_flags(header, arch, n_layer, window, where)
    kv_lora_rank = _int_value(header, f"{arch}.attention.kv_lora_rank", where, required=False)
    rope_dim = _int_value(header, f"{arch}.rope.dimension_count", where, required=False)
    is_mla = kv_lora_rank is not None
    if is_mla and rope_dim is None:
        raise GGUFError(f"{where}: GGUF gives {arch}.attention.kv_lora_rank but no {arch}.rope.dimension_count")
    layers: List[LayerGeometry] = []
    for il in range(n_layer):
        if kv_heads[il] == 0:
            continue  # llama.cpp allocates no KV cache for a layer without KV heads
        sliding = flags[il]
        if is_mla:
            layers.append(LayerGeometry(index=il, kind="full", window=None, num_kv_heads=1,
                                        head_dim=int(kv_lora_rank or 0) + int(rope_dim or 0), v_head_dim=0, is_mla=True))
            continue
        k_dim = key_length_swa if sliding and key_length_swa else key_length
        v_dim = value_length_swa if sliding and value_length_swa else value_length
        layers.append(LayerGeometry(
            index=il,
            kind=window_kind if sliding else "full",
            window=window if sliding else None,
            num_kv_heads=kv_heads[il],
            head_dim=int(k_dim),
            v_head_dim=int(v_dim),
            has_sinks=arch == "gpt-oss",
        ))
    if not layers:
        raise GGUFError(f"{where}: no layer of this GGUF has KV heads ({arch}.attention.head_count_kv is 0 everywhere)")
    context = _int_value(header, f"{arch}.context_length", where, required=False)
    first = layers[0]
    file_type = header.metadata.get("general.file_type")
    return ModelGeometry(
        name=name,
        num_layers=n_layer,
        num_attention_heads=n_head,
        num_kv_heads=max(layer.num_kv_heads for layer in layers),
        head_dim=first.head_dim,
        layers=tuple(layers),
        max_position_embeddings=context,
        dtype="bfloat16" if file_type == 32 else "float16",  # llama_ftype 32 = MOSTLY_BF16
        kv_lora_rank=kv_lora_rank if is_mla else None,
        qk_rope_head_dim=rope_dim if is_mla else None,
        has_sinks=arch == "gpt-oss",
        source="gguf",
    )


def read_gguf_geometry(path: Union[str, Path], name: Optional[str] = None) -> ModelGeometry:
    """Read a GGUF file's header and build its geometry; `name` defaults to the path."""
    header = read_gguf_header(path)
    return geometry_from_gguf(header, name or str(path))


def is_gguf_path(path: Union[str, Path]) -> bool:
    """A model.config path kvlint reads as GGUF: one named *.gguf (any case)."""
    return Path(path).suffix.lower() == ".gguf"


__all__: Sequence[str] = (
    "GGUFError", "GGUFHeader", "MAX_HEADER_BYTES", "parse_gguf", "read_gguf_header", "geometry_from_gguf",
    "read_gguf_geometry", "is_gguf_path",
)
