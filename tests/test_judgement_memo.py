"""The memos that make one process's thousands of judgements cheaper (`kvlint plan`, the derived
agreement comparisons) answer exactly what the uncached code answers, change when an input
changes, and never hand a caller an object another caller can change under it.

Each memo is tested against the function it stands in front of, called without the memo.
"""

from __future__ import annotations

import copy
import dataclasses
import math
from typing import Any, ClassVar, Dict, List

import pytest

from kvlint.catalog import load_catalogs
from kvlint.catalog.engines import load_engine_catalog
from kvlint.catalog.selection import predict_backend, select_backend
from kvlint.conditions import compile_condition, json_equal
from kvlint.deployment import LayerPlan
from kvlint.plan.space import copy_manifest
from kvlint.records import dataclass, replace
from kvlint.resolve.builder import layer_plans
from kvlint.resolve.remedy import RemedySearch, Setup, remembered_remedies
from kvlint.schema import non_finite

CATALOGS = load_catalogs(())


def _gpu(name: str) -> Any:
    return CATALOGS.gpus.lookup(name).info(None)


def _mla_setup(sparse: bool) -> Setup:
    # a DeepSeek-style MLA model (latent head 576) pinned to vLLM's sparse FlashMLA backend
    return Setup("vllm", "auto", "auto", _gpu("H100-SXM-80GB"), 576, None, False, False, True,
                 "FLASHMLA_SPARSE", "FLASHMLA_SPARSE", "bf16", None, sparse, 128)


# -- RemedySearch.serves: its memo is keyed on the model's sparsity too -----------------------

@pytest.mark.parametrize("first", [True, False])
def test_serves_tells_a_sparse_mla_model_from_a_dense_one_in_either_order(first: bool) -> None:
    """vLLM routes an MLA model by its sparsity (index_topk): FLASHMLA_SPARSE serves a sparse
    one, FLASH_ATTN_MLA a dense one. The per-release memo once left sparsity out of its key, so
    whichever model was asked about first decided the answer for the other."""
    release = load_engine_catalog().release("vllm", "0.33.0")  # a fresh view: nothing remembered yet
    answers = {}
    for sparse in (first, not first):
        search = RemedySearch(CATALOGS, release, _mla_setup(sparse))
        answers[sparse] = (search.serves(release, "FLASHMLA_SPARSE"), search.serves(release, "FLASH_ATTN_MLA"))
    assert answers[True] == ("FLASHMLA_SPARSE", None)
    assert answers[False] == (None, "FLASH_ATTN_MLA")


@pytest.mark.parametrize("first", [True, False])
def test_pinnable_candidates_follow_platform_kind_and_sparsity_in_either_order(first: bool) -> None:
    """The backends a remedy may pin, remembered per release view, equal the list built afresh
    for every (platform, MLA, sparse) asked, whichever was asked first."""
    setups = [_mla_setup(True), _mla_setup(False), _refused_setup(), _refused_setup("MI300X")]
    if not first:
        setups.reverse()
    release = load_engine_catalog().release("vllm", "0.33.0")  # a fresh view: nothing remembered yet
    seen = set()
    for setup in setups:
        search = RemedySearch(CATALOGS, release, setup)
        remembered = list(search.candidates(release))
        assert remembered == list(search.list_candidates(release)) and list(search.candidates(release)) == remembered
        seen.add(tuple(remembered))
    assert len(seen) == 4  # sparse MLA, dense MLA, CUDA and ROCm each pin different backends


# -- remembered_remedies ---------------------------------------------------------------------

def _refused_setup(gpu: str = "A100-80GB", literal: str = "fp8_e4m3") -> Setup:
    # vLLM 0.33.0 FLASH_ATTN with an FP8 cache on an A100 (no FP8 there): a refusal with remedies
    return Setup("vllm", literal, literal, _gpu(gpu), 128, 16, False, False, False,
                 "FLASH_ATTN", "FLASH_ATTN", "bf16")


def test_a_remembered_remedy_equals_a_fresh_search() -> None:
    release = CATALOGS.engines.release("vllm", "0.33.0")
    setup = _refused_setup()
    fresh = RemedySearch(CATALOGS, release, setup).remedy("kv_dtype")
    assert fresh[0].startswith("; ") and fresh[1], fresh  # a remedy with suggestions: worth comparing
    with remembered_remedies():
        first = RemedySearch(CATALOGS, release, setup).remedy("kv_dtype")
        again = RemedySearch(CATALOGS, release, setup).remedy("kv_dtype")
    assert first == fresh and again == fresh


def test_a_remembered_remedy_changes_with_its_inputs() -> None:
    release = CATALOGS.engines.release("vllm", "0.33.0")
    with remembered_remedies():
        a100 = RemedySearch(CATALOGS, release, _refused_setup("A100-80GB")).remedy("kv_dtype")
        other_problem = RemedySearch(CATALOGS, release, _refused_setup("A100-80GB")).remedy("block_size")
        other_release = CATALOGS.engines.release("vllm", "0.19.1")
        older = RemedySearch(CATALOGS, other_release, _refused_setup("A100-80GB")).remedy("kv_dtype")
    assert other_problem == RemedySearch(CATALOGS, release, _refused_setup("A100-80GB")).remedy("block_size")
    assert older == RemedySearch(CATALOGS, other_release, _refused_setup("A100-80GB")).remedy("kv_dtype")
    assert other_problem != a100


def test_a_remembered_remedy_hands_each_caller_its_own_list() -> None:
    release = CATALOGS.engines.release("vllm", "0.33.0")
    with remembered_remedies():
        text, found = RemedySearch(CATALOGS, release, _refused_setup()).remedy("kv_dtype")
        count = len(found)
        found.clear()
        found.append("not a suggestion")
        _, again = RemedySearch(CATALOGS, release, _refused_setup()).remedy("kv_dtype")
    assert len(again) == count and "not a suggestion" not in again


def test_nothing_is_remembered_outside_the_scope(monkeypatch) -> None:
    """`kvlint check` never opens the scope: each search runs (a file judged after another gets
    no answer kept from it), and the scope's memo is gone once it closes."""
    calls: List[str] = []
    real = RemedySearch._remedy

    def counted(self, problem):
        calls.append(problem)
        return real(self, problem)

    monkeypatch.setattr(RemedySearch, "_remedy", counted)
    release = CATALOGS.engines.release("vllm", "0.33.0")
    for _ in range(2):
        RemedySearch(CATALOGS, release, _refused_setup()).remedy("kv_dtype")
    assert len(calls) == 2
    with remembered_remedies():
        for _ in range(3):
            RemedySearch(CATALOGS, release, _refused_setup()).remedy("kv_dtype")
    assert len(calls) == 3
    RemedySearch(CATALOGS, release, _refused_setup()).remedy("kv_dtype")
    assert len(calls) == 4


# -- predict_backend ------------------------------------------------------------------------

PREDICT_CASES = [
    ("vllm", "0.33.0", (9, 0), "nvidia", "fp8", 128, False, False),
    ("vllm", "0.33.0", (8, 0), "nvidia", "fp8", 128, False, False),
    ("vllm", "0.33.0", (9, 0), "nvidia", "auto", 64, False, True),
    ("vllm", "0.19.1", (10, 0), "nvidia", "auto", 576, True, False),
    ("sglang", "0.5.9", (9, 0), "nvidia", "fp8_e4m3", 128, False, False),
    ("vllm", "0.33.0", (9, 4), "amd", "auto", 128, False, False),
]


@pytest.mark.parametrize("case", PREDICT_CASES)
def test_a_remembered_prediction_equals_a_fresh_one(case) -> None:
    engine, version, cc, vendor, literal, head, mla, sinks = case
    release = CATALOGS.engines.release(engine, version)
    fresh = select_backend(release, cc, vendor, literal, head, mla, sinks, None, False, frozenset(), False, None, None)
    assert predict_backend(release, cc, vendor, literal, head, mla, has_sinks=sinks) == fresh
    assert predict_backend(release, cc, vendor, literal, head, mla, has_sinks=sinks) == fresh


def test_a_remembered_prediction_changes_with_its_inputs() -> None:
    """vLLM 0.33.0's selection: FP8 on an H100 runs on FLASH_ATTN; on an A100, or as fp8_e5m2, it
    falls back to FLASHINFER. Each answer is asked after the others were remembered."""
    release = CATALOGS.engines.release("vllm", "0.33.0")
    asked = [((9, 0), "fp8"), ((8, 0), "fp8"), ((9, 0), "fp8_e5m2"), ((9, 0), "fp8")]
    chosen = [predict_backend(release, cc, "nvidia", literal, 128, False).backend for cc, literal in asked]
    assert chosen == ["FLASH_ATTN", "FLASHINFER", "FLASHINFER", "FLASH_ATTN"]
    for cc, literal in asked:
        assert predict_backend(release, cc, "nvidia", literal, 128, False) == select_backend(
            release, cc, "nvidia", literal, 128, False, False, None, False, frozenset(), False, None, None)


# -- layer_plans and the per-layers answers of the capacity layout ---------------------------

def _fresh_plans(layers, fmt, keep, skip, quantized):
    return tuple(LayerPlan(geometry=layer, cache_format=keep if (layer.index in skip and quantized) else fmt,
                           skipped=layer.index in skip and quantized) for layer in layers)


def test_layer_plans_equal_the_plans_built_fresh_and_follow_every_input() -> None:
    geometry = CATALOGS.models.lookup("google/gemma-3-27b-it").geometry()
    layers = geometry.layers
    cases = [("fp8_e4m3", "bf16", {0, 5}, True), ("fp8_e4m3", "bf16", {0, 5}, False),
             ("fp8_e4m3", "bf16", set(), True), ("fp8_e5m2", "bf16", {0, 5}, True),
             ("fp8_e4m3", "fp16", {0, 5}, True), ("bf16", "bf16", {1}, False)]
    answers = []
    for fmt, keep, skip, quantized in cases:
        got = layer_plans(layers, fmt, keep, skip, quantized)
        assert got == _fresh_plans(layers, fmt, keep, skip, quantized)
        assert layer_plans(layers, fmt, keep, skip, quantized) is got  # remembered
        answers.append(got)
    # an unquantized cache keeps no layer at the model dtype: the skip set is then no input
    assert answers[1] == answers[2]
    distinct = [answers[i] for i in (0, 2, 3, 4, 5)]
    assert len(set(distinct)) == len(distinct)  # every other input changes the answer
    # equal layers in another tuple: an equal answer, computed for that tuple
    copy_of_layers = tuple(copy.copy(layer) for layer in layers)
    other = layer_plans(copy_of_layers, "fp8_e4m3", "bf16", {0, 5}, True)
    assert other == answers[0] and other[0].geometry is copy_of_layers[0]


def test_layout_answers_of_a_layers_tuple_equal_the_computation() -> None:
    from kvlint.capacity import layout

    geometry = CATALOGS.models.lookup("google/gemma-3-27b-it").geometry()
    skip_all_full = {layer.index for layer in geometry.layers if layer.kind == "full"}
    for skip in (set(), {0, 1, 2}, skip_all_full):
        plans = layer_plans(geometry.layers, "fp8_e4m3", "bf16", skip, True)

        class Holder:
            layers = plans

        assert layout.requested_format(Holder) == layout.most_common_format(plans)
        assert layout.requested_format(Holder) == ("fp8_e4m3" if len(skip) < len(plans) else "bf16")
    # a list is never remembered: changing it changes the answer
    mutable = list(layer_plans(geometry.layers, "fp8_e4m3", "bf16", set(), True))

    class ListHolder:
        layers = mutable

    assert layout.requested_format(ListHolder) == "fp8_e4m3"
    mutable[:] = [replace(p, cache_format="bf16") for p in mutable]
    assert layout.requested_format(ListHolder) == "bf16"


def teststage_layers_key_is_equal_exactly_when_the_plans_are() -> None:
    from kvlint.capacity.vllm import StageLayers, stage_layers

    geometry = CATALOGS.models.lookup("meta-llama/Llama-3.1-8B-Instruct").geometry()
    plans = layer_plans(geometry.layers, "fp8_e4m3", "bf16", set(), True)
    same = tuple(copy.copy(p) for p in plans)
    other = layer_plans(geometry.layers, "fp8_e4m3", "bf16", {3}, True)
    key = stage_layers(plans, 0, len(plans))
    assert isinstance(key, StageLayers) and stage_layers(plans, 0, len(plans)) is key
    assert key == StageLayers(same) and hash(key) == hash(StageLayers(same))
    assert key != StageLayers(other) and key != stage_layers(plans, 0, 16)
    assert {key: 1}.get(StageLayers(same)) == 1


# -- records.replace ------------------------------------------------------------------------

@dataclass(frozen=True)
class _Frozen:
    a: int
    b: str = "x"
    c: List[int] = dataclasses.field(default_factory=list)
    derived: int = dataclasses.field(init=False, default=0)

    def __post_init__(self):
        object.__setattr__(self, "derived", self.a * 2)


@dataclass
class _WithClassVar:
    a: int
    kind: ClassVar[str] = "k"


@dataclass
class _WithInitVar:
    a: int
    scale: dataclasses.InitVar[int] = 1

    def __post_init__(self, scale):
        self.a = self.a * scale


def test_replace_is_dataclasses_replace() -> None:
    item = _Frozen(3, "y", [1])
    for changes in ({}, {"a": 5}, {"b": "z", "c": [2]}):
        assert replace(item, **changes) == dataclasses.replace(item, **changes)
        assert replace(item, **changes).derived == dataclasses.replace(item, **changes).derived
    with pytest.raises(ValueError):
        replace(item, derived=1)  # init=False, as dataclasses says
    with pytest.raises(TypeError):
        replace(item, nonsense=1)
    with pytest.raises(TypeError):
        replace(object())
    assert replace(_WithClassVar(1), a=2) == dataclasses.replace(_WithClassVar(1), a=2)
    assert replace(_WithInitVar(2), scale=3).a == dataclasses.replace(_WithInitVar(2), scale=3).a == 6


# -- conditions: the decided-once const/enum and the loops ----------------------------------

class _Text(str):
    pass


VALUES: List[Any] = [True, False, 1, 0, 1.0, 0.0, 2, "1", "a", "", _Text("a"), None, [], {}, [1], {"a": 1}]


@pytest.mark.parametrize("option", [True, False, None, 1, 1.0, "a", "", [1], {"a": 1}])
def test_compiled_const_and_enum_agree_with_json_equality(option: Any) -> None:
    const = compile_condition({"const": option})
    enum = compile_condition({"enum": [option, "zzz"]})
    for value in VALUES:
        assert const(value) == json_equal(value, option), (option, value)
        assert enum(value) == (json_equal(value, option) or json_equal(value, "zzz")), (option, value)


def test_compiled_objects_check_what_they_name() -> None:
    schema: Dict[str, Any] = {"type": "object", "required": ["a"], "additionalProperties": {"type": "integer"},
                              "properties": {"a": {"anyOf": [{"const": "x"}, {"type": "integer"}]}, "b": True}}
    check = compile_condition(schema)
    assert check({"a": "x"}) and check({"a": 3, "b": "anything", "c": 4})
    assert not check({"a": "y"}) and not check({"b": 1}) and not check({"a": 3, "c": "no"}) and not check([])


# -- the plan's copy of its base manifest and the finite-number scan -------------------------

def test_a_plan_copy_is_a_deepcopy() -> None:
    shared = {"x": [1, 2.5, {"y": None}]}
    base = {"a": shared, "b": shared, "c": (1, [2]), "d": "text", 3: True}
    copied = copy_manifest(base, {})
    assert copied == copy.deepcopy(base)
    assert copied["a"] is copied["b"] and copied["a"] is not shared  # shared stays shared, as deepcopy
    assert copied["c"][1] is not base["c"][1]
    copied["a"]["x"].append(9)
    assert shared["x"] == [1, 2.5, {"y": None}]


def test_non_finite_still_finds_every_non_finite_number() -> None:
    data = {"a": [1.0, {"b": math.nan}], "c": math.inf, "d": "nan", "e": {"f": [-math.inf]}}
    assert [p for p, _ in non_finite(data)] == ["/a/1/b", "/c", "/e/f/0"]
    assert non_finite({"a": [1.0, {"b": 2}], "c": "inf"}) == []


@pytest.mark.parametrize("schema", [
    {"type": "object", "properties": {"a": {"const": True}, "b": {"enum": ["x", "y"]}}, "required": ["a"]},
    {"required": ["a"], "properties": {"a": {"const": True}}},
    {"properties": {"a": {"type": "object", "properties": {"c": {"minimum": 2}}, "required": ["c"]}}},
    {"type": "object", "description": "annotations only besides", "required": []},
])
def test_compiled_object_shapes_agree_with_jsonschema(schema: Dict[str, Any]) -> None:
    """`type: object` + `properties` + `required` compile to one check: the same answers as
    jsonschema's validator on objects, non-objects, missing and wrong members."""
    from jsonschema import Draft202012Validator

    reference = Draft202012Validator(schema)
    check = compile_condition(schema)
    values = VALUES + [{"a": True}, {"a": False}, {"a": True, "b": "x"}, {"a": True, "b": "z"}, {"b": "x"},
                       {"a": {"c": 3}}, {"a": {"c": 1}}, {"a": {}}, {"a": {"c": "3"}}]
    for value in values:
        assert check(value) == reference.is_valid(value), (schema, value)
