"""Rules as data: loading `rules/KV*.yaml`, selecting them, evaluating their conditions.

A rule's condition is a JSON Schema over the facts document (kvlint/facts.py); the rule fires
when the facts validate. `for_each` names a list in the facts; the condition then sees the facts
plus `item`, and the rule can fire once per element.
"""

from __future__ import annotations

import re
from dataclasses import field
from functools import lru_cache
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

import yaml

from kvlint.records import dataclass
from kvlint.versions import VersionError, version_matches as matches_specifier
from kvlint import pointer as json_pointer
from kvlint.findings import Finding, severity_rank
from kvlint.resources import rules_dir
from kvlint.conditions import compile_condition
from kvlint.datacache import load_cached, load_cached_group
from kvlint.errors import RuleError
from kvlint.inputs import InputError, read_capped
from kvlint.linear_regex import LinearPattern, PatternBudgetExceeded, UnsafePattern
from kvlint.schema import first_error
from kvlint.text import printable

DOCS_BASE = "https://github.com/kvlint/kvlint/blob/main/docs/rules/"

try:
    _YamlLoader: Any = yaml.CSafeLoader
except AttributeError:  # pragma: no cover
    _YamlLoader = yaml.SafeLoader




@dataclass(frozen=True)
class Rule:
    """One rule as its YAML file defines it: code, name, severity, message, condition and sources."""

    code: str
    name: str
    severity: str
    summary: str
    rationale: str
    remediation: str
    sources: Tuple[Mapping[str, str], ...]
    # A template ("{dotted.path}" into the facts, or into `item`), or message cases: one
    # template per value of a fact, {"select": "item.kind", "cases": {value: template}}.
    message: Union[str, Mapping[str, Any]]
    stage: str = "facts"
    engines: Tuple[str, ...] = ()
    versions: str = ""
    kinds: Tuple[str, ...] = ()
    for_each: Optional[str] = None
    condition: Any = None
    pointer: str = ""
    examples: Tuple[Mapping[str, Any], ...] = ()
    path: str = ""
    builtin: bool = True
    docs_url: str = ""  # the rule file's `url`: an organisation rule's own docs page

    @property
    def url(self) -> str:
        return self.docs_url or f"{DOCS_BASE}{self.code}.md"

    def applies(self, engine: Optional[str], version: Optional[str], kind: str = "Deployment") -> bool:
        if self.kinds and kind not in self.kinds:
            return False
        if self.engines and engine not in self.engines:
            return False
        if self.versions:
            if not version:
                return False
            try:
                return matches_specifier(version, self.versions)
            except VersionError:  # "nightly", a hostile string: KV201 reports it; no release rule applies
                return False
        return True


@dataclass
class Rulebook:
    """The rules by code and by name, with their compiled conditions."""

    rules: Dict[str, Rule] = field(default_factory=dict)  # by code
    by_name: Dict[str, str] = field(default_factory=dict)  # name -> code
    _validators: Dict[str, Any] = field(default_factory=dict)
    # evaluate()'s rules per (stage, engine, version, kind), in code order: which
    # rules apply is a function of those four and the rule set (cleared by add()).
    _applicable: Dict[Tuple[Any, ...], List[Rule]] = field(default_factory=dict, repr=False, compare=False)

    def get(self, code_or_name: str) -> Optional[Rule]:
        key = code_or_name.strip()
        if key.upper() in self.rules:
            return self.rules[key.upper()]
        code = self.by_name.get(key.lower())
        return self.rules.get(code) if code else None

    def __iter__(self):
        return iter(sorted(self.rules.values(), key=lambda r: r.code))

    def add(self, rule: Rule) -> None:
        if rule.code in self.rules:
            raise RuleError(f"{rule.path}: rule code {rule.code} is already defined by {self.rules[rule.code].path}")
        if rule.name in self.by_name:
            raise RuleError(f"{rule.path}: rule name {rule.name} is already used by {self.by_name[rule.name]}")
        self.rules[rule.code] = rule
        self.by_name[rule.name] = rule.code
        self._applicable.clear()

    def expand(self, selectors: Iterable[str]) -> Tuple[List[str], List[str]]:
        """Codes matched by selectors (code, prefix, name or ALL) and the selectors matching nothing."""
        matched: List[str] = []
        unknown: List[str] = []
        for selector in selectors:
            codes = self.match(selector)
            if codes:
                matched.extend(codes)
            else:
                unknown.append(selector)
        return matched, unknown

    def match(self, selector: str) -> List[str]:
        token = selector.strip()
        if not token:
            return []
        if token.upper() == "ALL":
            return sorted(self.rules)
        rule = self.get(token)
        if rule:
            return [rule.code]
        prefix = token.upper()
        if re.fullmatch(r"[A-Z]+[0-9]{0,2}", prefix):
            return sorted(code for code in self.rules if code.startswith(prefix))
        return []

    def decorate(self, finding: Finding) -> Finding:
        """Fill name, severity and url from the rule metadata.

        A native adapter's finding (no rule name yet) may carry a lower severity than the rule's
        default when it knows the verdict is uncertain (an unknown flag on a release newer than
        every one kvlint read is a warning, on an unknown release an info): that severity stays."""
        rule = self.rules.get(finding.code)
        if rule is None or (finding.name == rule.name and finding.url == rule.url):
            return finding  # unknown, or already decorated (the check pipeline decorates twice)
        from dataclasses import replace

        severity = rule.severity
        if not finding.name and finding.severity and severity_rank(finding.severity) < severity_rank(rule.severity):
            severity = finding.severity
        return replace(finding, name=rule.name, severity=severity, url=rule.url)

    def condition_predicate(self, rule: Rule) -> Any:
        """A callable facts -> bool: compiled when possible, else jsonschema's is_valid.

        An organisation rule's `pattern`s are searched in linear time (kvlint.linear_regex): its
        file comes from the repository under review, and `re` backtracks. A pattern outside the
        linear subset is a RuleError naming the file (load_rulebook compiles every organisation
        rule up front, so that error comes before any manifest is read)."""
        predicate = self._validators.get(rule.code)
        if predicate is None:
            try:
                predicate = compile_condition(rule.condition, linear_patterns=not rule.builtin)
                if predicate is None:
                    predicate = _jsonschema_predicate(rule.condition, linear_patterns=not rule.builtin)
            except UnsafePattern as exc:
                raise RuleError(
                    f"{rule.path}: {rule.code}: {printable(str(exc))}; an organisation rule's condition may use only "
                    "patterns kvlint can search in linear time (see docs/security.md)"
                ) from None
            self._validators[rule.code] = predicate
        return predicate

    def _applying(self, stage: str, engine: Any, version: Any, kind: Any) -> List[Rule]:
        """The rules of `stage` with a condition that apply to this engine, release and kind, in
        code order (compiled only when evaluated, as before: a disabled rule is never compiled); remembered per rule set (one `plan` asks
        thousands of times for the same engine and release)."""
        key = (stage, engine, version, kind)
        try:
            hit = self._applicable.get(key)
        except TypeError:  # an unhashable value read from the facts: not remembered
            return _applying_rules(self, stage, engine, version, kind)
        if hit is None:
            hit = self._applicable[key] = _applying_rules(self, stage, engine, version, kind)
        return hit

    def evaluate(
        self,
        facts: Mapping[str, Any],
        enabled: Optional[Sequence[str]] = None,
        stage: str = "facts",
    ) -> List[Tuple[Rule, str, str]]:
        """(rule, message, pointer) for every rule of `stage` whose condition holds."""
        engine = _dig(facts, "engine.name")
        version = _dig(facts, "engine.version")
        kind = _dig(facts, "kind") or "Deployment"
        if isinstance(enabled, (list, tuple)):
            enabled = frozenset(enabled)  # membership once per rule: a list is searched each time
        fired: List[Tuple[Rule, str, str]] = []
        for rule in self._applying(stage, engine, version, kind):
            if enabled is not None and rule.code not in enabled:
                continue
            holds = _bounded(rule, self.condition_predicate(rule))
            if rule.for_each:
                items = json_pointer.resolve(facts, rule.for_each)
                for item in items if isinstance(items, list) else []:
                    context = dict(facts)
                    context["item"] = item
                    if holds(context):
                        fired.append((rule, render(message_template(rule.message, context), context),
                                      render(rule.pointer, context)))
            elif holds(facts):
                fired.append((rule, render(message_template(rule.message, facts), facts), render(rule.pointer, facts)))
        return fired


def _applying_rules(book: Rulebook, stage: str, engine: Any, version: Any, kind: Any) -> List[Rule]:
    return [rule for rule in book
            if rule.stage == stage and rule.condition is not None and rule.applies(engine, version, kind)]


def _bounded(rule: Rule, predicate: Any) -> Any:
    """The predicate, with a pattern's work budget running out reported as a RuleError on the file."""
    if rule.builtin:
        return predicate

    def holds(facts: Any) -> bool:
        try:
            return bool(predicate(facts))
        except PatternBudgetExceeded as exc:
            raise RuleError(f"{rule.path}: {rule.code}: {printable(str(exc))}; simplify the pattern") from None

    return holds


def _walk_schema(schema: Any):
    """Every subschema of a JSON Schema (the values under `properties`, `$defs`, ... are schemas,
    never keywords)."""
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, Mapping):
            yield node
            for keyword, value in node.items():
                if keyword in ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas"):
                    if isinstance(value, Mapping):
                        stack.extend(value.values())
                elif keyword not in ("const", "enum", "examples", "default"):
                    stack.append(value)


def _jsonschema_predicate(condition: Any, linear_patterns: bool) -> Any:
    """jsonschema's is_valid for a condition outside kvlint's compiled subset; with
    linear_patterns its `pattern` keyword searches with kvlint.linear_regex."""
    from jsonschema import Draft202012Validator, ValidationError, validators

    if not linear_patterns:
        return Draft202012Validator(condition).is_valid
    compiled: Dict[str, LinearPattern] = {}
    for node in _walk_schema(condition):
        if "patternProperties" in node:
            raise UnsafePattern("patternProperties is not supported (use propertyNames with a pattern)")
        if isinstance(node.get("pattern"), str):
            compiled.setdefault(node["pattern"], LinearPattern(node["pattern"]))

    def pattern(validator: Any, source: str, instance: Any, schema: Any):
        if not validator.is_type(instance, "string"):
            return
        search = compiled.get(source)
        if search is None:  # pragma: no cover - every pattern was compiled above
            search = compiled[source] = LinearPattern(source)
        if not search.search(instance):
            yield ValidationError(f"does not match {source!r}")

    return validators.extend(Draft202012Validator, {"pattern": pattern})(condition).is_valid


_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+)*)\}")


def _dig(data: Any, dotted: str) -> Any:
    current = data
    for part in dotted.split("."):
        if type(current) is dict or isinstance(current, Mapping):  # a dict first: typing's check is slow
            current = current.get(part)
        elif isinstance(current, list) and part.isdigit() and int(part) < len(current):
            current = current[int(part)]
        else:
            return None
    return current


def _format_value(value: Any) -> str:
    if value is None:
        return "unknown"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:,.2f}"
    if isinstance(value, int):
        return f"{value:,}" if abs(value) >= 10000 else str(value)
    if isinstance(value, (list, tuple)):
        return ", ".join(_format_value(v) for v in value) if value else "none"
    return str(value)


def message_templates(message: Union[str, Mapping[str, Any]]) -> List[str]:
    """Every template a rule's message may render."""
    return [message] if isinstance(message, str) else list(message["cases"].values())


def message_template(message: Union[str, Mapping[str, Any]], context: Mapping[str, Any]) -> str:
    """The template for these facts: the message, or the case named by the selected fact's value."""
    if isinstance(message, str):
        return message
    return message["cases"].get(str(_dig(context, message["select"])), message.get("default", "{item}"))


def render(template: str, context: Mapping[str, Any]) -> str:
    return _PLACEHOLDER.sub(lambda m: _format_value(_dig(context, m.group(1))), template)


def _rule_from_data(data: Mapping[str, Any], path: str, builtin: bool) -> Rule:
    applies = data.get("applies_to") or {}
    return Rule(
        code=data["code"],
        name=data["name"],
        severity=data["severity"],
        summary=data["summary"].strip(),
        rationale=data["rationale"].strip(),
        remediation=data["remediation"].strip(),
        sources=tuple(data["sources"]),
        message=data["message"].strip() if isinstance(data["message"], str) else data["message"],
        stage=data.get("stage", "facts"),
        engines=tuple(applies.get("engines", ())),
        versions=applies.get("versions", ""),
        kinds=tuple(applies.get("kinds", ())),
        for_each=data.get("for_each"),
        condition=data.get("condition"),
        pointer=data.get("pointer", ""),
        examples=tuple(data.get("examples", ())),
        path=path,
        builtin=builtin,
        docs_url=data.get("url", ""),
    )


def read_rule_file(path: Path, validate: bool) -> Rule:
    try:
        data = load_cached(path, lambda text: yaml.load(text, Loader=_YamlLoader))
    except (OSError, yaml.YAMLError, UnicodeDecodeError) as exc:
        raise RuleError(f"{path}: cannot read rule file: {exc}") from None
    if validate:
        problem = first_error(data, "rule.json")
        if problem:
            raise RuleError(f"{path}: invalid rule file: {problem}")
    elif not isinstance(data, dict) or "code" not in data:
        raise RuleError(f"{path}: not a rule file")
    return _rule_from_data(data, str(path), builtin=not validate)


def rule_files(directory: Path) -> List[Path]:
    # By name: the files share one directory, so this is Path order, without Path comparisons
    # (a start-up cost of ~460 of them per run).
    return sorted((p for p in directory.glob("*.yaml") if p.is_file()), key=lambda p: p.name)


# --- known engine defects (rules/defects/*.yaml), evaluated as KV8xx rules ----------------------

DEFECTS_SUBDIR = "defects"

_ENGINE_LABELS = {"vllm": "vLLM", "sglang": "SGLang", "tensorrt-llm": "TensorRT-LLM"}
_SYMPTOMS = {
    "startup-crash": "the engine fails at start-up or warm-up",
    "silent-wrong-output": "the output is silently wrong",
    "silent-capacity-loss": "KV capacity is silently lost",
    "silent-fallback": "a setting is silently not applied",
    "wrong-log-figure": "a logged figure is wrong; serving is unaffected",
}
_ESTABLISHED = {
    "reproduced": "reproduced",
    "fixed-upstream": "confirmed by the upstream fix",
    "code-reading": "established by reading the released code only, not reproduced",
    "reported-open": "reported upstream and still open, not reproduced by kvlint",
}


def defect_files(directory: Optional[Path] = None) -> List[Path]:
    """The known-defect files: rules/defects/*.yaml."""
    return rule_files((directory or rules_dir()) / DEFECTS_SUBDIR)


def defect_data() -> List[Tuple[Path, Any]]:
    """(path, parsed YAML) of each built-in known-defect file, from the same parsed-data cache
    entry as load_rulebook (one marshal read on a warm cache); a file that cannot be read or
    parsed comes with None (load_rulebook is the one that reports it)."""
    paths = defect_files()
    try:
        return list(zip(paths, load_cached_group(paths, parse_rule_yaml)))
    except (OSError, yaml.YAMLError, UnicodeDecodeError):
        pass
    pairs: List[Tuple[Path, Any]] = []
    for path in paths:
        try:
            pairs.append((path, load_cached(path, parse_rule_yaml)))
        except (OSError, yaml.YAMLError, UnicodeDecodeError):
            pairs.append((path, None))
    return pairs


def parse_rule_yaml(text: str) -> Any:
    """A built-in rule or defect file's YAML (safe, with the C loader where PyYAML has it)."""
    return yaml.load(text, Loader=_YamlLoader)


def code_url(location: Mapping[str, str]) -> str:
    """A GitHub link to a released-code location {repo, path, release}."""
    return f"https://github.com/{location['repo']}/blob/{location['release']}/{location['path']}"


def defect_evidence_link(data: Mapping[str, Any]) -> str:
    """The one link a defect finding names: the fix, else the issue (the issue first while the
    defect is open), else the released code."""
    evidence = data.get("evidence") or {}
    # an open defect's pull requests are attempts: its issue says more
    for key in ("fixes", "issues") if data.get("fixed_in") else ("issues", "fixes"):
        if evidence.get(key):
            return evidence[key][0]
    return code_url(evidence["code"][0])


def defect_releases(data: Mapping[str, Any]) -> str:
    """"vLLM >=0.25,<0.28, fixed in 0.28.0" or "SGLang >=0.5.2, not fixed"."""
    engine = _ENGINE_LABELS.get(data["engine"], data["engine"])
    fixed = f"fixed in {data['fixed_in']}" if data.get("fixed_in") else "no fixed release"
    return f"{engine} {data['affected'].replace(' ', '')} ({fixed})"


def defect_remedy(data: Mapping[str, Any]) -> str:
    remedy = data["remedy"]
    engine = _ENGINE_LABELS.get(data["engine"], data["engine"])
    parts = []
    if remedy.get("upgrade"):
        parts.append(f"upgrade to {engine} {remedy['upgrade']} or later")
    if remedy.get("configuration"):
        parts.append(remedy["configuration"].strip().rstrip("."))
    return "; or ".join(parts)


def defect_established(data: Mapping[str, Any]) -> str:
    """How the defect is known, as the finding says it."""
    if data["established"] == "fixed-upstream" and data.get("fixed_in"):
        return f"confirmed by the upstream fix in {data['fixed_in']}"
    return _ESTABLISHED[data["established"]]


def _defect_message(data: Mapping[str, Any]) -> Union[str, Mapping[str, Any]]:
    """The finding's template (or one per case), framed by the defect's id, releases, evidence and remedy."""

    def framed(finding: str) -> str:
        return (
            f"known defect {data['id']}: {finding.strip().rstrip('.')}. "
            f"Affects {defect_releases(data)}; {defect_established(data)}; "
            f"see {defect_evidence_link(data)}. Remedy: {defect_remedy(data)}"
        )

    finding = data["finding"]
    if isinstance(finding, str):
        return framed(finding)
    message: Dict[str, Any] = {"select": finding["select"],
                               "cases": {key: framed(text) for key, text in finding["cases"].items()}}
    if finding.get("default"):
        message["default"] = framed(finding["default"])
    return message


def _defect_sources(data: Mapping[str, Any]) -> Tuple[Mapping[str, str], ...]:
    evidence = data["evidence"]
    sources: List[Mapping[str, str]] = []
    sources += [{"url": url, "note": "fix"} for url in evidence.get("fixes", ())]
    sources += [{"url": url, "note": "issue"} for url in evidence.get("issues", ())]
    sources += [dict(location) for location in evidence.get("code", ())]
    return tuple(sources)


def rule_from_defect(data: Mapping[str, Any], path: str) -> Rule:
    """A known-defect file as a facts-stage rule: applies to the affected releases of its engine,
    fires on its trigger, and says which defect, which releases, the evidence and the remedy."""
    engine = _ENGINE_LABELS.get(data["engine"], data["engine"])
    rationale = (
        f"{data['description'].strip()}\n\n"
        f"- **Defect:** {data['id']} ({data['title'].strip()})\n"
        f"- **Affected releases:** {defect_releases(data)}\n"
        f"- **Symptom:** {data['symptom']}: {_SYMPTOMS[data['symptom']]}\n"
        f"- **Established:** {data['established']}: {defect_established(data)}\n"
        + (f"- **Release before:** no example: {data['no_release_before'].strip()}\n"
           if data.get("no_release_before") else "")
        + (f"- **Capacity:** `kvlint capacity` names it among its assumptions: \"{data['id']} "
           f"({data['code']}): {data['capacity_note'].strip()}\"\n" if data.get("capacity_note") else "")
        + "- **Severity policy:** [known defects](../defects.md)"
    )
    return Rule(
        code=data["code"],
        name=data["name"],
        severity=data["severity"],
        summary=f"{data['id']}: {data['title'].strip()} ({engine} {data['affected'].replace(' ', '')}).",
        rationale=rationale,
        remediation=defect_remedy(data)[:1].upper() + defect_remedy(data)[1:] + ".",
        sources=_defect_sources(data),
        message=_defect_message(data),
        stage="facts",
        engines=(data["engine"],),
        versions=data["affected"],
        kinds=("Deployment",),
        condition=data["trigger"],
        pointer=data.get("pointer", ""),
        examples=tuple(data.get("examples", ())),
        path=path,
        builtin=True,
    )


@lru_cache(maxsize=8)
def load_rulebook(extra_dirs: Tuple[str, ...] = ()) -> Rulebook:
    """Built-in rules (validated by the test suite) plus organisation rules (validated here)."""
    book = Rulebook()
    builtin = rule_files(rules_dir())
    try:
        parsed = load_cached_group(builtin, lambda text: yaml.load(text, Loader=_YamlLoader))
    except (OSError, yaml.YAMLError, UnicodeDecodeError) as exc:
        raise RuleError(f"{rules_dir()}: cannot read the built-in rules: {exc}") from None
    for path, data in zip(builtin, parsed):
        if not isinstance(data, dict) or "code" not in data:
            raise RuleError(f"{path}: not a rule file")
        book.add(_rule_from_data(data, str(path), builtin=True))
    defects = defect_files()
    try:
        parsed = load_cached_group(defects, lambda text: yaml.load(text, Loader=_YamlLoader))
    except (OSError, yaml.YAMLError, UnicodeDecodeError) as exc:
        raise RuleError(f"{rules_dir() / DEFECTS_SUBDIR}: cannot read the known-defect files: {exc}") from None
    for path, data in zip(defects, parsed):
        if not isinstance(data, dict) or "code" not in data or "trigger" not in data:
            raise RuleError(f"{path}: not a known-defect file")
        book.add(rule_from_defect(data, str(path)))
    for directory in extra_dirs:
        folder = Path(directory)
        if not folder.is_dir():
            raise RuleError(f"rules-dir {directory} is not a directory")
        for path in organisation_rule_files(folder):
            rule = read_organisation_rule(path)
            book.add(rule)
            if rule.condition is not None:
                book.condition_predicate(rule)  # an unsafe pattern ends the run here, naming the file
    return book


def organisation_rule_files(directory: Path) -> List[Path]:
    """The `*.yaml` entries of a rules-dir that are not directories: a FIFO, a device or a
    dangling link among them is a rule error, never silently skipped."""
    try:
        return sorted(p for p in directory.glob("*.yaml") if not p.is_dir())
    except OSError as exc:
        raise RuleError(f"rules-dir {directory}: cannot list it: {exc.strerror or exc}") from None


def read_organisation_rule(path: Path) -> Rule:
    """An organisation rule file: read bounded and non-blocking (kvlint.inputs, which also records
    it so that no output overwrites it), parsed safely, validated against schemas/rule.json."""
    try:
        raw = read_capped(path)
    except InputError as exc:
        raise RuleError(f"{path}: cannot read rule file: {exc.message}") from None
    try:
        text = raw.decode("utf-8")
        # an alias shares a node, and validating a tree of aliases of aliases walks 2**n nodes
        if any(isinstance(event, yaml.AliasEvent) for event in yaml.parse(text, Loader=_YamlLoader)):
            raise RuleError(f"{path}: invalid rule file: YAML aliases (*name) are not allowed in a rule file")
        data = yaml.load(text, Loader=_YamlLoader)
        problem = first_error(data, "rule.json")
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise RuleError(f"{path}: cannot read rule file: {exc}") from None
    except RecursionError:
        raise RuleError(f"{path}: invalid rule file: nested too deeply") from None
    if problem:
        raise RuleError(f"{path}: invalid rule file: {problem}")
    return _rule_from_data(data, str(path), builtin=False)
