"""kvlint.linear_regex: the same answer as Python's `re.search`, in time linear in the input.

The reference is `re` itself (the engine jsonschema uses for `pattern`), on hand-picked and on
generated patterns and strings. The catastrophic cases run in a subprocess with a timeout: that
timeout is a hang guard, not a speed claim (benchmarks/ holds no number for this).
"""

from __future__ import annotations

import random
import re
import subprocess
import sys

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from conftest import REPO_ROOT
from kvlint.linear_regex import MAX_COUNT, LinearPattern, PatternBudgetExceeded, UnsafePattern

PATTERNS = [
    r"^(a+)+$", r"a|b", r"^meta-llama/.*-FP8$", r"x{2,4}y?", r"[^a-c\d]+z", r"\w+\s\W", r"^$", r"$",
    r"a$", r"\Aab\Z", r"(ab|a)*c", r"(a*)*b", r"^.{3}$", r"(|a)+b", r"[\s\S]q", r"a{0}b", r".",
    r"\n$", r"^\n", r"(a|b)*a(a|b){3}", r"[-_.]fp8(_e4m3)?$", r"a*?b", r"(?:x|yz){1,3}?$", r"\d{2}",
    r"[é٣-٩]", r"^(?P<org>[^/]+)/", r"\$\^", r"a\Z", r"", r"(a{2,}|b)+c",
]
ALPHABET = "ab\ncxyz_1 -!é٣/"


@pytest.mark.parametrize("source", PATTERNS)
def test_agrees_with_re_on_every_short_string(source: str):
    """Every string of up to 4 characters over a small alphabet: the answer is re.search's."""
    linear, reference = LinearPattern(source), re.compile(source)
    alphabet = "ab\nc1é/-"
    strings = [""]
    for _ in range(4):
        strings += [s + c for s in strings if len(s) == len(strings[-1]) for c in alphabet]
    for text in strings:
        assert linear.search(text) == (reference.search(text) is not None), (source, text)


# A generated pattern: a sequence of atoms, each maybe repeated, maybe grouped with an alternative.
ATOMS = st.sampled_from(["a", "b", ".", "[ab]", "[^a]", r"\d", r"\w", r"\s", "\n", "é", "(?:a|bc)", "(a|)"])
REPEATS = st.sampled_from(["", "*", "+", "?", "{2}", "{1,3}", "*?", "{0,2}?"])
PIECES = st.tuples(ATOMS, REPEATS).map("".join)
GENERATED = st.builds(
    lambda start, pieces, end, wrap: ("^" if start else "") + ("(" + "".join(pieces) + ")+" if wrap else "".join(pieces))
    + ("$" if end else ""),
    st.booleans(), st.lists(PIECES, min_size=1, max_size=4), st.booleans(), st.booleans(),
)


@settings(max_examples=300, deadline=None)
@given(GENERATED, st.text(alphabet=ALPHABET, max_size=12))
@example("^(a|)+$", "\n")
@example("(a+)+$", "aaaa\n")
def test_agrees_with_re_on_generated_patterns(source: str, text: str):
    assert LinearPattern(source).search(text) == (re.search(source, text) is not None)


@pytest.mark.parametrize(
    "source, reason",
    [
        (r"(a)\1", "back-references"),
        (r"(?=a)b", "look-ahead"),
        (r"(?<!a)b", "look-ahead and look-behind"),
        (r"\bword", "word boundaries"),
        (r"(?i)abc", "inline flags"),
        (r"(?i:a)b", "inline flags"),
        (r"(a)?(?(1)b|c)", "conditional groups"),
        (r"a{101}", f"above {MAX_COUNT}"),
        (r"(", "not a valid regular expression"),
    ],
)
def test_constructs_that_need_backtracking_are_refused_with_a_reason(source: str, reason: str):
    with pytest.raises(UnsafePattern) as raised:
        LinearPattern(source)
    assert reason in str(raised.value)
    assert repr(source) in str(raised.value)  # the message names the pattern


@pytest.mark.skipif(sys.version_info < (3, 11), reason="atomic groups and possessive repeats are Python 3.11 syntax")
@pytest.mark.parametrize("source", [r"(?>a+)b", r"a*+a"])
def test_atomic_groups_and_possessive_repeats_are_refused(source: str):
    """They change the answer (`a*+a` never matches), so a DFA cannot stand in for them."""
    with pytest.raises(UnsafePattern):
        LinearPattern(source)


def test_nested_bounded_counts_are_refused_before_they_build_a_huge_automaton():
    with pytest.raises(UnsafePattern, match="too large"):
        LinearPattern(r"((a{100}){100}){100}")


def test_the_work_budget_ends_a_search_that_would_build_too_many_states(monkeypatch: pytest.MonkeyPatch):
    """A pattern whose DFA has 2**k states, on input that visits them: the budget, not memory, ends it."""
    import kvlint.linear_regex as module

    monkeypatch.setattr(module, "WORK_BUDGET", 50_000)
    pattern = LinearPattern("(a|b)*a(a|b){12}c")
    draw = random.Random(0)  # a fixed sequence of a's and b's: every 13-letter window occurs
    text = "".join(draw.choice("ab") for _ in range(200_000))
    with pytest.raises(PatternBudgetExceeded, match="automaton steps"):
        pattern.search(text)


HANG_GUARD_S = 60  # re.search would not finish any of these within hours


def test_catastrophic_patterns_on_long_values_finish():
    """(a+)+$ on forty a's and a '!' is exponential for re; .*.*=.*x on a megabyte is cubic."""
    script = (
        "from kvlint.linear_regex import LinearPattern\n"
        "print(LinearPattern(r'(a+)+$').search('a' * 40 + '!'))\n"
        "print(LinearPattern(r'(a|aa)+$').search('a' * 100_000 + '!'))\n"
        "print(LinearPattern(r'.*.*=.*x').search('a=' * 500_000))\n"
        "print(LinearPattern(r'^(\\w+\\s?)*$').search('word ' * 200_000 + '!'))\n"
        "print(LinearPattern(r'(a+)+$').search('a' * 1_000_000))\n"
    )
    completed = subprocess.run([sys.executable, "-c", script], cwd=REPO_ROOT, capture_output=True, text=True,
                               timeout=HANG_GUARD_S)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.split() == ["False", "False", "False", "False", "True"]
