"""Rule conditions compiled to Python predicates.

Rule conditions are JSON Schema (DESIGN.md: "JSON Schema is the condition language"). Evaluating
thirty-odd conditions per manifest through jsonschema's general validator costs more than the rest
of the lint, so the subset the rules use is compiled once into closures; any keyword outside the
subset falls back to jsonschema, so the semantics stay exactly JSON Schema's. A differential test
(tests/test_conditions.py) runs both on every rule and every example's facts.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Mapping, Optional

Predicate = Callable[[Any], bool]

_TYPES: Dict[str, Predicate] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "integer": lambda v: (isinstance(v, int) and not isinstance(v, bool))
    or (isinstance(v, float) and v.is_integer()),
}
_ANNOTATIONS = {"description", "title", "$comment", "examples", "default"}


def json_equal(a: Any, b: Any) -> bool:
    """Equality as JSON Schema defines it: true is not 1, 1 is 1.0."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def compile_condition(schema: Any) -> Optional[Predicate]:
    """A predicate equivalent to validating against `schema`, or None if outside the subset."""
    if schema is True:
        return lambda v: True
    if schema is False:
        return lambda v: False
    if not isinstance(schema, Mapping):
        return None
    checks: List[Predicate] = []
    for keyword, value in schema.items():
        check = _compile_keyword(keyword, value)
        if check is None:
            if keyword in _ANNOTATIONS:
                continue
            return None
        checks.append(check)
    if not checks:
        return lambda v: True
    if len(checks) == 1:
        return checks[0]
    return lambda v: all(check(v) for check in checks)


def _compile_keyword(keyword: str, value: Any) -> Optional[Predicate]:
    if keyword == "type":
        names = value if isinstance(value, list) else [value]
        if not all(name in _TYPES for name in names):
            return None
        tests = [_TYPES[name] for name in names]
        return lambda v: any(test(v) for test in tests)
    if keyword == "const":
        return lambda v: json_equal(v, value)
    if keyword == "enum":
        return lambda v: any(json_equal(v, option) for option in value)
    if keyword == "required":
        names = list(value)
        return lambda v: not isinstance(v, dict) or all(name in v for name in names)
    if keyword == "properties":
        compiled = {}
        for name, sub in value.items():
            predicate = compile_condition(sub)
            if predicate is None:
                return None
            compiled[name] = predicate
        items = list(compiled.items())
        return lambda v: not isinstance(v, dict) or all(p(v[n]) for n, p in items if n in v)
    if keyword in ("allOf", "anyOf", "oneOf"):
        parts = [compile_condition(sub) for sub in value]
        if any(p is None for p in parts):
            return None
        if keyword == "allOf":
            return lambda v: all(p(v) for p in parts)  # type: ignore[misc]
        if keyword == "anyOf":
            return lambda v: any(p(v) for p in parts)  # type: ignore[misc]
        return lambda v: sum(1 for p in parts if p(v)) == 1  # type: ignore[misc]
    if keyword == "not":
        inner = compile_condition(value)
        if inner is None:
            return None
        return lambda v: not inner(v)
    if keyword == "minimum":
        return lambda v: not _number(v) or v >= value
    if keyword == "maximum":
        return lambda v: not _number(v) or v <= value
    if keyword == "exclusiveMinimum":
        return lambda v: not _number(v) or v > value
    if keyword == "exclusiveMaximum":
        return lambda v: not _number(v) or v < value
    if keyword == "minLength":
        return lambda v: not isinstance(v, str) or len(v) >= value
    if keyword == "minItems":
        return lambda v: not isinstance(v, list) or len(v) >= value
    return None
