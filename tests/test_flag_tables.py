"""The vLLM and SGLang flag tables generated from each release's own argument parser
(kvlint/adapters/flag_data/*.json, tools/derive/flags_derive.py), and kvlint's command-line
parser reading them.

That the data is exactly what the derivation produces cannot be checked offline (it needs the
wheels); these tests check the files' shape and provenance, boundaries read in the released code,
and that the parser reads flags the way the derived releases do.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Optional

import pytest

from kvlint.adapters import flags
from kvlint.adapters.cmdline import arg_from_word, find_invocation, parse_command
from kvlint.adapters.shell import parse
from kvlint.adapters.source import LineLocator

DATA = Path(flags.__file__).resolve().parent / "flag_data"
TAKES = {"bool", "flag", "value", "list", "json", "optional", "value2", "remainder"}
SIG_KEYS = {"takes", "dest", "neg", "dict", "choices", "deprecated", "hidden"}
# SGLang releases kvlint's catalog knows (rules/catalog/engines/sglang.yaml; one truth table each)
SGLANG_TABLES = Path(__file__).resolve().parent.parent / "tools" / "derive" / "tables" / "sglang"


def _doc(engine: str) -> dict:
    return json.loads((DATA / f"{engine}.json").read_text(encoding="utf-8"))


def _has(doc: dict, spelling: str, release: str) -> Optional[dict]:
    i = doc["releases"].index(release)
    for first, last, sig in doc["options"].get(spelling, []):
        if first <= i <= last:
            return doc["signatures"][sig]
    return None


# --- (a) shape and provenance ----------------------------------------------------------------------


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_data_shape_and_provenance(engine: str) -> None:
    doc = _doc(engine)
    assert doc["format"] == "kvlint/flag-table/v1"
    assert doc["engine"] == engine
    assert doc["generated_by"] == "tools/derive/flags_derive.py"
    releases = doc["releases"]
    assert releases == sorted(releases, key=flags.version_key), "releases ascending"
    assert len(set(releases)) == len(releases)
    assert not set(releases) & set(doc["not_built"])
    package = "vllm" if engine == "vllm" else "sglang"
    for release in releases:
        source = doc["sources"][release]
        assert source.startswith(f"{package}=={release} wheel: ")
        assert re.search(r"(engine/arg_utils\.py|srt/server_args\.py)", source), source
    assert set(doc["sources"]) == set(releases)
    assert all(set(sig) <= SIG_KEYS and sig["takes"] in TAKES and sig["dest"] for sig in doc["signatures"])
    assert len({json.dumps(s, sort_keys=True) for s in doc["signatures"]}) == len(doc["signatures"])
    for spelling, intervals in doc["options"].items():
        assert spelling.startswith("-"), spelling
        assert intervals, spelling
        previous = -1
        for first, last, sig in intervals:
            assert previous < first <= last < len(releases), (spelling, intervals)
            assert 0 <= sig < len(doc["signatures"])
            previous = last
        # adjacent intervals differ (the generator merges equal neighbours)
        for (_, last, sig), (first, _, nxt) in zip(intervals, intervals[1:]):
            assert first > last + 1 or sig != nxt, (spelling, intervals)
    # every release registers the model/help options (a built parser, not an empty one)
    for release in releases:
        assert _has(doc, "--help", release)
        assert _has(doc, "--kv-cache-dtype", release)
        assert sum(1 for s in doc["options"] if _has(doc, s, release)) > 150


def test_data_files_stay_small() -> None:
    assert sum(p.stat().st_size for p in DATA.glob("*.json")) < 1_500_000


def test_vllm_covers_every_index_release_from_0_11() -> None:
    """Derived or listed as not built: nothing between 0.11.0 and the newest derived is skipped."""
    doc = _doc("vllm")
    derived = doc["releases"] + list(doc["not_built"])
    assert doc["releases"][0] == "0.11.0"
    expected = {
        "0.11.0", "0.11.1", "0.11.2", "0.12.0", "0.13.0", "0.14.0", "0.14.1", "0.15.0", "0.15.1",
        "0.16.0", "0.17.0", "0.17.1", "0.18.0", "0.18.1", "0.19.0", "0.19.1", "0.20.0", "0.20.1",
        "0.20.2", "0.21.0", "0.22.0", "0.22.1", "0.23.0", "0.24.0", "0.25.0", "0.25.1", "0.26.0",
        "0.27.0", "0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0",
    }
    assert expected <= set(derived)


def test_sglang_covers_the_catalogued_releases() -> None:
    doc = _doc("sglang")
    tables = {p.stem for p in SGLANG_TABLES.glob("*.json")}
    assert tables and tables <= set(doc["releases"]) | set(doc["not_built"])


def test_the_data_is_read_lazily_and_once() -> None:
    flags._TABLES.clear()
    assert "vllm" not in flags._TABLES
    flags.lookup("vllm", "--block-size")
    table = flags._TABLES["vllm"]
    flags.lookup("vllm", "--max-model-len", "0.19.0")
    assert flags._TABLES["vllm"] is table


# --- (b) SGLang --cuda-graph-max-bs is a value ----------------------------------------------------


def _run(text: str, release: Optional[str]):
    locator = LineLocator(text)
    command = parse(text).commands[0]
    argv = [arg_from_word(w, locator, f"word {i}") for i, w in enumerate(command.words)]
    return parse_command(argv, find_invocation(argv), release, {})


SGLANG_CMD = (
    "python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct "
    "--cuda-graph-max-bs 8 --kv-cache-dtype fp8_e4m3"
)


def test_sglang_cuda_graph_max_bs_takes_a_value_on_0_5_12() -> None:
    """0.5.12 server_args.py: `--cuda-graph-max-bs`, type=int (one value), `--cuda-graph-bs`
    nargs='+', `--mamba-scheduler-strategy` choices auto/no_buffer/extra_buffer — the hand-written
    table had all three as switches."""
    parsed = _run(SGLANG_CMD, "0.5.12")
    assert [p.kind for p in parsed.problems] == []
    settings = {s.pointer: s.value for s in parsed.settings}
    assert settings["/engine/options/cuda_graph_max_bs"] == "8"
    assert settings["/kv_cache/dtype"] == "fp8_e4m3"
    for spelling, takes in (("--cuda-graph-max-bs", "value"), ("--cuda-graph-bs", "list"),
                            ("--mamba-scheduler-strategy", "value")):
        assert flags.lookup("sglang", spelling, "0.5.12").takes == takes
    sig = _has(_doc("sglang"), "--mamba-scheduler-strategy", "0.5.12")
    assert sig["choices"] == ["auto", "extra_buffer", "no_buffer"]


def test_sglang_script_end_to_end(write, run_json) -> None:
    write("launch.sh", "#!/bin/sh\n# kvlint: engine-version=0.5.12 gpu=H100-SXM-80GB\n" + SGLANG_CMD + "\n")
    report = run_json("launch.sh")
    codes = [d["code"] for d in report["diagnostics"]]
    assert "KV320" not in codes and "KV319" not in codes, report["diagnostics"]


def test_sglang_cuda_graph_max_bs_is_gone_from_0_5_20() -> None:
    """0.5.20 moved the CUDA-graph knobs to arg_groups/fields/exec_.py as per-phase
    `--cuda-graph-max-bs-decode` / `-prefill` (no `--cuda-graph-max-bs`): argparse finds the old
    spelling an ambiguous prefix of the two and SGLang refuses to start."""
    doc = _doc("sglang")
    assert _has(doc, "--cuda-graph-max-bs", "0.5.19")
    assert not _has(doc, "--cuda-graph-max-bs", "0.5.20")
    assert _has(doc, "--cuda-graph-max-bs-decode", "0.5.20")
    parsed = _run(SGLANG_CMD, "0.5.20")
    assert [p.kind for p in parsed.problems] == ["ambiguous-flag"]
    assert "--cuda-graph-max-bs-decode" in parsed.problems[0].message


def test_a_spelling_the_release_lacks_is_read_as_its_abbreviation() -> None:
    """SGLang 0.4.10.post2-0.5.1 register --speculative-draft-model-path only (derived); argparse
    (allow_abbrev) reads --speculative-draft-model as that, and 0.5.2 adds the short spelling."""
    doc = _doc("sglang")
    assert not _has(doc, "--speculative-draft-model", "0.5.1")
    assert _has(doc, "--speculative-draft-model", "0.5.2")
    parsed = _run("python -m sglang.launch_server --model-path m --speculative-draft-model d", "0.5.1")
    assert [(p.kind, p.severity) for p in parsed.problems] == [("abbreviated-flag", "info")]
    assert {s.pointer: s.value for s in parsed.settings}["/engine/options/speculative_draft_model_path"] == "d"


def test_the_arity_of_the_release_asked_about() -> None:
    """`--hybrid-kvcache-ratio` is nargs='?' in 0.4.10.post2-0.5.2 and a switch from 0.5.9
    (derived): the release decides how the next word is read."""
    assert flags.lookup("sglang", "--hybrid-kvcache-ratio", "0.5.2").takes == "optional"
    assert flags.lookup("sglang", "--hybrid-kvcache-ratio", "0.5.9").takes == "flag"
    parsed = _run("python -m sglang.launch_server --model-path m --hybrid-kvcache-ratio 0.5", "0.5.2")
    assert [p.kind for p in parsed.problems] == []


# --- (c) boundaries read in the released code -----------------------------------------------------


def test_vllm_boundaries() -> None:
    doc = _doc("vllm")
    # vllm/config/cache.py deprecated calculate_kv_scales in 0.19.0; 0.28.0 no longer has it
    assert _has(doc, "--calculate-kv-scales", "0.27.1")
    assert not _has(doc, "--calculate-kv-scales", "0.28.0")
    assert not _has(doc, "--kv-cache-dtype-skip-layers", "0.18.1")
    assert _has(doc, "--kv-cache-dtype-skip-layers", "0.19.0")
    assert not _has(doc, "--attention-backend", "0.12.0")
    assert _has(doc, "--attention-backend", "0.13.0")
    spec = flags.lookup("vllm", "--attention-backend")
    assert spec.added == "0.13.0"
    assert "added in 0.13.0" in flags.release_problem(spec, "0.12.0")
    assert flags.release_problem(spec, "0.13.0") is None
    removed = flags.lookup("vllm", "--calculate-kv-scales")
    assert removed.removed == "0.28.0"
    assert "removed in vLLM 0.28.0" in flags.release_problem(removed, "0.28.0")


def test_vllm_0_33_enable_disable_pairs_come_from_the_parser() -> None:
    """0.33.0's EnableDisableAction registers `--disable-x` for `--enable-x` (argparse_utils.py);
    the data has it as a spelling of its own that sets the flag to False."""
    doc = _doc("vllm")
    sig = _has(doc, "--disable-prefix-caching", "0.33.0")
    assert sig and sig["takes"] == "bool" and sig.get("neg") and sig["dest"] == "enable_prefix_caching"
    assert not _has(doc, "--disable-prefix-caching", "0.32.0")
    assert _has(doc, "--no-enable-prefix-caching", "0.32.0")["neg"]


def test_releases_between_and_after_derived_ones() -> None:
    spec = flags.lookup("vllm", "--kv-cache-dtype-skip-layers")
    # not derived: a patch release is checked as the nearest earlier derived release
    assert flags.release_problem(spec, "0.18.2") is not None
    assert flags.release_problem(spec, "0.19.2") is None
    # newer than every derived release: what the newest has is accepted, a removal stays a removal,
    # and an unknown spelling is no certain refusal (the release may have added it)
    newest = flags.derived_releases("vllm")[-1]
    later = ".".join(newest.split(".")[:1] + [str(int(newest.split(".")[1]) + 5), "0"])
    assert flags.release_problem(spec, later) is None
    assert flags.release_problem(flags.lookup("vllm", "--calculate-kv-scales"), later) is not None
    assert flags.unknown_is_certain("vllm", newest)
    assert not flags.unknown_is_certain("vllm", later)
    parsed = _run("vllm serve m --flag-from-the-future 1", later)
    assert [(p.kind, p.severity) for p in parsed.problems] == [("unknown-flag", "warning")]
    parsed = _run("vllm serve m --flag-from-the-future 1", newest)
    assert [(p.kind, p.severity) for p in parsed.problems] == [("unknown-flag", "error")]


# --- (d) the mapped spellings exist -------------------------------------------------------------


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_every_mapped_spelling_is_derived(engine: str) -> None:
    doc = _doc(engine)
    for spelling, mapped in flags._MAPPED[engine].items():
        intervals = doc["options"].get(spelling)
        assert intervals, f"{spelling} is in no derived {engine} release"
        dests = {doc["signatures"][sig]["dest"] for _, _, sig in intervals}
        # SGLang renamed some destinations (0.5.14: tensor_parallel_size -> tp_size); the mapped
        # dest is the newest one
        newest = doc["signatures"][intervals[-1][2]]["dest"]
        assert mapped["dest"] == newest or mapped["dest"] in dests, (spelling, mapped["dest"], dests)
        spec = flags.lookup(engine, spelling)
        assert spec.field == mapped["field"] and spec.present
