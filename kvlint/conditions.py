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


def _always(v: Any) -> bool:
    return True


# The predicate of `true` and of a schema without assertions: a caller may drop it from a
# conjunction (identity-compared, so it is one function object).
_ALWAYS: Predicate = _always


def _all_of(checks: List[Predicate]) -> Predicate:
    """The conjunction of checks, as one call with a plain loop (the per-document cost of a
    condition is mostly these calls: a generator inside all() costs twice a loop)."""
    checks = [check for check in checks if check is not _ALWAYS]
    if not checks:
        return _ALWAYS
    if len(checks) == 1:
        return checks[0]
    if len(checks) == 2:
        first, second = checks
        return lambda v: first(v) and second(v)

    def all_of(v: Any) -> bool:
        for check in checks:
            if not check(v):
                return False
        return True

    return all_of


def _equal_to(value: Any) -> Predicate:
    """json_equal(v, value) with the type tests of a scalar `value` decided once: a string equals
    only a str, true/false only the same bool, null only None, a number any int or float but a
    bool (JSON Schema: true is not 1, 1 is 1.0)."""
    if type(value) is str:
        return lambda v: type(v) is str and v == value
    if value is None:
        return lambda v: v is None
    if value is True or value is False:
        return lambda v: v is value
    return lambda v: json_equal(v, value)


def _one_of_values(options: Any) -> Predicate:
    """enum: json_equal to one of the options; the options that are plain strings are looked up
    in a set (a str equals a string option only when it is a str, as json_equal says)."""
    strings = frozenset(o for o in options if type(o) is str)
    others = [o for o in options if type(o) is not str]
    if not others:
        return lambda v: type(v) is str and v in strings
    return lambda v: (type(v) is str and v in strings) or any(json_equal(v, option) for option in others)


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
            return _ALWAYS
        if schema is False:
            return lambda v: False
        if not isinstance(schema, Mapping):
            raise _Unsupported(repr(schema))
        fused = self._object(schema)
        if fused is not None:
            return fused
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
        return _all_of(checks)

    def _object(self, schema: Mapping[str, Any]) -> Optional[Predicate]:
        """The commonest shape of a condition and of the manifest schema's sections, `type:
        object` with `properties` and `required`, as one call instead of one per keyword (the
        same answer: on a non-object only `type` can fail; on an object `required` and
        `properties` are tried in the schema's order, so a check that raises is reached exactly
        when it would be). None for any other shape."""
        keywords = [k for k in schema if k not in _ANNOTATIONS and k not in ("then", "else")]
        if not keywords or not set(keywords) <= {"type", "properties", "required"}:
            return None
        if "type" in schema and schema["type"] != "object":
            return None
        if not isinstance(schema.get("properties", {}), Mapping):
            return None
        typed = "type" in schema
        names = list(schema.get("required", ()))
        items = [(name, self.compile(sub)) for name, sub in schema.get("properties", {}).items()]
        items = [(name, check) for name, check in items if check is not _ALWAYS]
        required_first = "required" in schema and (
            "properties" not in schema or keywords.index("required") < keywords.index("properties"))

        def object_check(v: Any) -> bool:
            if not isinstance(v, dict):
                return not typed
            if required_first:
                for name in names:
                    if name not in v:
                        return False
            for name, check in items:
                if name in v and not check(v[name]):
                    return False
            if not required_first:
                for name in names:
                    if name not in v:
                        return False
            return True

        return object_check

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
        if extra is _ALWAYS:
            return _ALWAYS

        def additional(v: Any) -> bool:
            if isinstance(v, dict):
                for k in v:
                    if k not in known and not extra(v[k]):
                        return False
            return True

        return additional

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
            if len(tests) == 1:
                return tests[0]
            return lambda v: any(test(v) for test in tests)
        if keyword == "const":
            return _equal_to(value)
        if keyword == "enum":
            return _one_of_values(value)
        if keyword == "required":
            names = list(value)

            def required(v: Any) -> bool:
                if isinstance(v, dict):
                    for name in names:
                        if name not in v:
                            return False
                return True

            return required
        if keyword == "properties":
            items = [(name, self.compile(sub)) for name, sub in value.items()]
            items = [(name, check) for name, check in items if check is not _ALWAYS]

            def properties(v: Any) -> bool:
                if isinstance(v, dict):
                    for name, check in items:
                        if name in v and not check(v[name]):
                            return False
                return True

            return properties
        if keyword == "items":
            item = self.compile(value)
            return lambda v: not isinstance(v, list) or all(item(x) for x in v)
        if keyword in ("allOf", "anyOf", "oneOf"):
            parts = [self.compile(sub) for sub in value]
            if keyword == "allOf":
                return _all_of(parts)
            if keyword == "anyOf":
                def any_of(v: Any) -> bool:
                    for part in parts:
                        if part(v):
                            return True
                    return False

                return any_of
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
