"""The `schema` stage: JSON Schema validation whose errors become KV1xx findings.

One validator per schema file, built once per process (kubeconform's and check-jsonschema's
lesson: compiling the schema dominates the cost of validating small documents).
"""

from __future__ import annotations

import math
from functools import cache
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from kvlint.findings import Finding
from kvlint import pointer as json_pointer
from kvlint.load import Document
from kvlint.resources import schemas_dir
from kvlint.datacache import load_cached
from kvlint.units import size_hint
from kvlint.conditions import compile_condition

MANIFEST_SCHEMA = "manifest.v1.json"

_RANGE_KEYWORDS = {
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minItems",
    "maxItems",
    "minLength",
    "maxLength",
    "minProperties",
    "maxProperties",
    "multipleOf",
}


def _parse_json(text: str) -> Any:
    import json  # on use (start-up time): a run that finds the schema in the data cache skips it

    return json.loads(text)


@cache
def load_schema(name: str) -> Dict[str, Any]:
    # Through the parsed-data cache, like the rules and catalog: JSON data survives marshal as is.
    return load_cached(schemas_dir() / name, _parse_json)


@cache
def fast_check(name: str) -> Any:
    """The compiled validity predicate for a shipped schema (None if it cannot be compiled).

    Valid documents, the common case, never import jsonschema; invalid ones go through
    `validator_for` to get jsonschema's detailed errors.
    """
    return compile_condition(load_schema(name))


@cache
def validator_for(name: str) -> Any:
    from jsonschema import Draft202012Validator  # imported here: it is the costliest import

    return Draft202012Validator(load_schema(name))


def pointer_of(path: Iterable[Any]) -> str:
    return json_pointer.join(path)


def did_you_mean(word: str, choices: Sequence[str]) -> str:
    import difflib

    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    if not close:
        lowered = {c.lower(): c for c in choices}
        if word.lower() in lowered:
            close = [lowered[word.lower()]]
    return f"; did you mean {close[0]!r}?" if close else ""


def _describe(value: Any) -> str:
    import json  # on use, as in _parse_json

    text = json.dumps(value) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _finding(code: str, message: str, document: Document, pointer: str, on_key: bool) -> Finding:
    finding = Finding(
        code=code,
        name="",
        severity="error",
        message=message,
        file=document.file,
        pointer=pointer,
        document=document.index,
    )
    return finding.with_location(document.span(pointer, prefer_key=on_key))


def _leaf_errors(error: Any) -> List[Any]:
    """For anyOf/oneOf, the sub-error that best explains the failure (check-jsonschema's way)."""
    if error.validator in ("anyOf", "oneOf") and error.context:
        from jsonschema.exceptions import best_match

        best = best_match(error.context)
        if best is not None and best.validator not in ("type",):
            return _leaf_errors(best)
    return [error]


def _convert(error: Any, document: Document) -> List[Finding]:
    pointer = pointer_of(error.absolute_path)
    keyword = error.validator
    instance = error.instance
    if keyword in ("anyOf", "oneOf") and isinstance(instance, str):
        hint = size_hint(instance)
        if hint:
            return [_finding("KV105", hint, document, pointer, False)]
    if keyword in ("anyOf", "oneOf"):
        leaves = _leaf_errors(error)
        if leaves[0] is not error:
            return [f for leaf in leaves for f in _convert(leaf, document)]
        names = {
            "anyOf": "does not match any allowed form",
            "oneOf": "must match exactly one allowed form",
        }
        return [
            _finding("KV199", f"{_describe(instance)} {names[keyword]}: {error.message}", document, pointer, False)
        ]
    if keyword == "required":
        missing = [name for name in error.validator_value if name not in (instance or {})]
        where = f"in {pointer}" if pointer else "at the top level"
        return [
            _finding("KV101", f"missing required property {name!r} {where}", document, pointer, True)
            for name in missing
        ]
    if keyword in ("additionalProperties", "unevaluatedProperties"):
        allowed = sorted(error.schema.get("properties", {}))
        extras = [key for key in instance if key not in allowed]
        where = f"in {pointer}" if pointer else "at the top level"
        return [
            _finding(
                "KV102",
                f"unknown property {key!r} {where}{did_you_mean(key, allowed)}"
                + ("" if did_you_mean(key, allowed) else f" (allowed: {', '.join(allowed)})"),
                document,
                pointer + json_pointer.join([key]),
                True,
            )
            for key in extras
        ]
    if keyword == "type":
        expected = error.validator_value
        expected_text = " or ".join(expected) if isinstance(expected, list) else expected
        return [
            _finding(
                "KV103",
                f"{pointer or 'document'} must be {expected_text}, not {_describe(instance)}",
                document,
                pointer,
                False,
            )
        ]
    if keyword in ("enum", "const"):
        allowed_values = error.validator_value if keyword == "enum" else [error.validator_value]
        hint = ""
        if isinstance(instance, str):
            hint = did_you_mean(instance, [str(v) for v in allowed_values])
        listing = ", ".join(str(v) for v in allowed_values)
        return [
            _finding(
                "KV104",
                f"{_describe(instance)} is not allowed for {pointer or 'document'} "
                f"(expected {listing}){hint}",
                document,
                pointer,
                False,
            )
        ]
    if keyword in ("pattern", "format"):
        if isinstance(instance, str) and size_hint(instance):
            return [_finding("KV105", size_hint(instance) or "", document, pointer, False)]
        description = error.schema.get("description", "")
        suffix = f" ({description})" if description else f" (pattern {error.validator_value})"
        return [
            _finding(
                "KV105",
                f"{_describe(instance)} does not have the expected form for {pointer}{suffix}",
                document,
                pointer,
                False,
            )
        ]
    if keyword in _RANGE_KEYWORDS:
        return [_finding("KV106", f"{pointer or 'document'}: {error.message}", document, pointer, False)]
    return [_finding("KV199", f"{pointer or 'document'}: {error.message}", document, pointer, False)]


def validate_document(document: Document, schema_name: str = MANIFEST_SCHEMA) -> List[Finding]:
    if not isinstance(document.data, dict):
        return [
            _finding(
                "KV103",
                f"a manifest must be a mapping, not {type(document.data).__name__}",
                document,
                "",
                False,
            )
        ]
    return schema_findings(document.data, document, schema_name)


def schema_findings(data: Any, located: Any, schema_name: str = MANIFEST_SCHEMA) -> List[Finding]:
    """KV1xx findings of `data` against a schema, located through `located` (a `Document`, or
    anything with its `file`, `index` and `span(pointer, prefer_key)`: an ablation variant maps
    its pointers back into the ablation file)."""
    findings: List[Finding] = [
        _finding("KV106", f"{pointer or '/'}: {_FINITE_NAMES.get(repr(value), repr(value))} is not a finite number",
                 located, pointer, False)
        for pointer, value in non_finite(data)
    ]
    quick = fast_check(schema_name)
    if quick is not None and quick(data):
        return findings
    for error in validator_for(schema_name).iter_errors(data):
        if isinstance(error.instance, float) and not math.isfinite(error.instance):
            continue  # already said: not a finite number
        findings.extend(_convert(error, located))
    return findings


_FINITE_NAMES = {"nan": ".nan (not a number)", "inf": ".inf", "-inf": "-.inf"}


def _all_finite(data: Any) -> bool:
    """Whether data holds no NaN or infinity (non_finite's common answer, without building a
    pointer for every value it passes)."""
    if isinstance(data, float):
        return math.isfinite(data)
    if isinstance(data, (dict, list)):  # one frame per level, as non_finite (deep input)
        for value in data.values() if isinstance(data, dict) else data:
            if not _all_finite(value):
                return False
    return True


def non_finite(data: Any, pointer: str = "") -> List[Tuple[str, float]]:
    """(pointer, value) of every NaN or infinity in data. JSON Schema's `number` admits them and
    every bound compares false with NaN, so a finite value is required here (KV106)."""
    if not pointer and _all_finite(data):
        return []
    if isinstance(data, float):
        return [] if math.isfinite(data) else [(pointer, data)]
    found: List[Tuple[str, float]] = []
    if isinstance(data, dict):
        for key, value in data.items():
            found.extend(non_finite(value, f"{pointer}/{json_pointer.escape(str(key))}"))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            found.extend(non_finite(value, f"{pointer}/{index}"))
    return found


def finite_only(data: Any) -> Any:
    """data with every NaN or infinity replaced by its YAML spelling as a string, which the
    resolve stage reads as an unknown value (its KV106 is already reported): rules and capacity
    never compute with a non-finite number."""
    if isinstance(data, float) and not math.isfinite(data):
        return _FINITE_NAMES.get(repr(data), repr(data)).split(" ")[0]
    if isinstance(data, dict):
        return {key: finite_only(value) for key, value in data.items()}
    if isinstance(data, list):
        return [finite_only(value) for value in data]
    return data


def is_valid(data: Any, schema_name: str = MANIFEST_SCHEMA) -> bool:
    quick = fast_check(schema_name)
    if quick is not None:
        return quick(data)
    return validator_for(schema_name).is_valid(data)


def first_error(data: Any, schema_name: str) -> Optional[str]:
    if is_valid(data, schema_name):
        return None
    for error in validator_for(schema_name).iter_errors(data):
        where = pointer_of(error.absolute_path) or "top level"
        return f"{where}: {error.message}"
    return None
