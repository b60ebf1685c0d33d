"""JSON Schema, compiled to Python predicates for the common case.

kvlint uses JSON Schema twice on every manifest: the manifest schema itself and the rule
conditions (a rule's `condition` is a JSON Schema: schemas/rule.json). jsonschema's general validator
is the reference, but importing it costs more than linting a manifest, and interpreting thirty
rule conditions per document costs more than the rest of the lint. So the keyword subset kvlint's
own schemas use is compiled once into closures:

* rule conditions are evaluated with the compiled predicate only;
* a manifest is first checked with the compiled predicate; only when it is *invalid* is
  jsonschema imported to produce the detailed errors (kvlint/schema.py).

A schema using any keyword outside the subset compiles to None and the caller falls back to
jsonschema, so semantics never drift from JSON Schema's. Differential tests
(tests/test_conditions.py) run both on every rule, every example and fuzzed manifests.

With `linear_patterns`, a `pattern` is searched by kvlint.linear_regex (linear in the value,
whatever the pattern) instead of `re`: an organisation's rule files come from the repository
under review, and `re` backtracks. A pattern outside that engine's subset raises UnsafePattern.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Dict, List, Mapping, Optional

from kvlint import pointer as json_pointer
from kvlint.linear_regex import LinearPattern

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
# Keywords that never affect validity.
_ANNOTATIONS = {"description", "title", "$comment", "examples", "default", "$schema", "$id", "$defs", "deprecated", "readOnly", "writeOnly"}


class _Unsupported(Exception):
    pass


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


def compile_condition(
    schema: Any, root: Optional[Mapping[str, Any]] = None, linear_patterns: bool = False
) -> Optional[Predicate]:
    """A predicate equivalent to validating against `schema`, or None if outside the subset.

    `root` is the document `$ref`s resolve against (default: the schema itself). With
    `linear_patterns`, `pattern` is searched in linear time (kvlint.linear_regex), and a pattern
    outside that engine's subset raises UnsafePattern.
    """
    try:
        return _Compiler(root if root is not None else schema, linear_patterns).compile(schema)
    except _Unsupported:
        return None


class _Compiler:
    def __init__(self, root: Any, linear_patterns: bool = False):
        self.root = root
        self.linear_patterns = linear_patterns
        self.refs: Dict[str, Predicate] = {}

    def compile(self, schema: Any) -> Predicate:
        if schema is True:
            return lambda v: True
        if schema is False:
            return lambda v: False
        if not isinstance(schema, Mapping):
            raise _Unsupported(repr(schema))
        checks: List[Predicate] = []
        for keyword, value in schema.items():
            if keyword in _ANNOTATIONS or keyword in ("then", "else"):
                continue
            if keyword == "additionalProperties":
                checks.append(self._additional(schema, value))
                continue
            if keyword == "if":
                checks.append(self._conditional(schema))
                continue
            checks.append(self._keyword(keyword, value))
        if not checks:
            return lambda v: True
        if len(checks) == 1:
            return checks[0]
        return lambda v: all(check(v) for check in checks)

    def _ref(self, ref: str) -> Predicate:
        if not ref.startswith("#"):
            raise _Unsupported(ref)
        if ref not in self.refs:
            self.refs[ref] = lambda v: compiled[0](v)  # placeholder for recursive references
            target: Any = self.root
            for token in json_pointer.split(ref[1:]):
                if not isinstance(target, Mapping) or token not in target:
                    raise _Unsupported(ref)
                target = target[token]
            compiled = [self.compile(target)]
            self.refs[ref] = compiled[0]
        return self.refs[ref]

    def _additional(self, schema: Mapping[str, Any], value: Any) -> Predicate:
        if "patternProperties" in schema:
            raise _Unsupported("patternProperties")
        known = set(schema.get("properties", {}))
        extra = self.compile(value)
        return lambda v: not isinstance(v, dict) or all(extra(v[k]) for k in v if k not in known)

    def _conditional(self, schema: Mapping[str, Any]) -> Predicate:
        test = self.compile(schema["if"])
        then = self.compile(schema.get("then", True))
        otherwise = self.compile(schema.get("else", True))
        return lambda v: then(v) if test(v) else otherwise(v)

    def _keyword(self, keyword: str, value: Any) -> Predicate:
        if keyword == "$ref":
            return self._ref(value)
        if keyword == "type":
            names = value if isinstance(value, list) else [value]
            if not all(name in _TYPES for name in names):
                raise _Unsupported(keyword)
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
            items = [(name, self.compile(sub)) for name, sub in value.items()]
            return lambda v: not isinstance(v, dict) or all(p(v[n]) for n, p in items if n in v)
        if keyword == "items":
            item = self.compile(value)
            return lambda v: not isinstance(v, list) or all(item(x) for x in v)
        if keyword in ("allOf", "anyOf", "oneOf"):
            parts = [self.compile(sub) for sub in value]
            if keyword == "allOf":
                return lambda v: all(p(v) for p in parts)
            if keyword == "anyOf":
                return lambda v: any(p(v) for p in parts)
            return lambda v: sum(1 for p in parts if p(v)) == 1
        if keyword == "not":
            inner = self.compile(value)
            return lambda v: not inner(v)
        if keyword == "pattern":
            if self.linear_patterns:
                search = LinearPattern(value).search
                return lambda v: not isinstance(v, str) or search(v)
            regex = re.compile(value)
            return lambda v: not isinstance(v, str) or regex.search(v) is not None
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
        if keyword == "maxLength":
            return lambda v: not isinstance(v, str) or len(v) <= value
        if keyword == "minItems":
            return lambda v: not isinstance(v, list) or len(v) >= value
        if keyword == "maxItems":
            return lambda v: not isinstance(v, list) or len(v) <= value
        if keyword == "minProperties":
            return lambda v: not isinstance(v, dict) or len(v) >= value
        if keyword == "uniqueItems":
            if not value:
                return lambda v: True
            return lambda v: not isinstance(v, list) or all(
                not json_equal(v[i], v[j]) for i in range(len(v)) for j in range(i + 1, len(v))
            )
        if keyword == "contains":
            inner = self.compile(value)
            return lambda v: not isinstance(v, list) or any(inner(x) for x in v)
        raise _Unsupported(keyword)
