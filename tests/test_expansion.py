"""Parameter expansion as the shell does it (kvlint/adapters/expansion.py), checked against what
POSIX sh prints for the same words: every expected value below is bash's own output."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from kvlint.adapters.expansion import ShellState, Unresolved, parameter, unknown
from kvlint.adapters.compose_vars import interpolate

VARIABLES = {"SET": "value", "EMPTY": "", "N": "6"}

CASES = [
    ("$SET", "value"),
    ("${SET}", "value"),
    ("${SET:-d}", "value"),
    ("${EMPTY:-d}", "d"),
    ("${EMPTY-d}", ""),
    ("${UNSET-d}", "d"),
    ("${SET:+alt}", "alt"),
    ("${EMPTY:+alt}", ""),
    ("${EMPTY+alt}", "alt"),
    ("${UNSET+alt}", ""),
    ("${#SET}", "5"),
    ("$((N / 4 + 1))", "2"),
    ("$((N * (2 - 3)))", "-6"),
    ("${UNSET:-${SET}}", "value"),
]


@pytest.mark.parametrize("ref, expected", CASES)
def test_parameter_expansion_matches_the_shell(ref, expected):
    state = ShellState(dict(VARIABLES), (), "sh")
    assert parameter(ref, state) == expected


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_the_expected_values_are_bash_s():
    script = "SET=value; EMPTY=; N=6; unset UNSET; " + "; ".join(
        f"printf '%s\\n' \"{ref}\"" for ref, _ in CASES)
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True).stdout
    assert out.split("\n")[:-1] == [expected for _, expected in CASES]


@pytest.mark.parametrize("ref", ["$UNSET", "$(nproc)", "`hostname`", "${SET%lue}", "${SET/v/w}", "$?", "$$"])
def test_what_the_file_cannot_decide_is_unresolved(ref):
    assert isinstance(parameter(ref, ShellState(dict(VARIABLES), (), "sh")), Unresolved)


def test_assign_default_sets_the_variable():
    state = ShellState({}, (), "sh")
    assert parameter("${CTX:=4096}", state) == "4096"
    assert state.variables["CTX"] == "4096"


def test_unknown_value_is_unresolved_even_with_a_default():
    state = ShellState({"X": unknown("assigned on some paths only")}, (), "sh")
    result = parameter("${X:-fallback}", state)
    assert isinstance(result, Unresolved) and "some paths" in result.what


def test_positional_parameters_unknown_for_a_script_file():
    state = ShellState({}, None, "serve.sh")
    assert isinstance(parameter('$1', state), Unresolved)
    assert isinstance(parameter('$@', state), Unresolved)
    assert parameter("$0", state) == "serve.sh"


@pytest.mark.parametrize("text, variables, expected, unresolved", [
    ("img:${TAG:-v1}", {}, "img:v1", ()),
    ("img:${TAG:-v1}", {"TAG": "v2"}, "img:v2", ()),
    ("$$HOME/x", {}, "$HOME/x", ()),
    ("${A:?need A}", {}, "${A:?need A}", ("${A}, which must be set when the stack is started (need A)",)),
    ("${A-}", {}, "", ()),
    ("$A", {}, "$A", ("$A",)),
    ("${A:-${B:-z}}", {}, "z", ()),
])
def test_compose_interpolation(text, variables, expected, unresolved):
    result = interpolate(text, variables)
    assert (result.text, result.unresolved) == (expected, unresolved)
    assert len(result.offsets) == len(result.text)
