"""The position-keeping shell tokenizer (kvlint/adapters/shell.py)."""

from __future__ import annotations

import time

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kvlint.adapters.shell import Operator, Word, parse, tokenize


def words(text: str):
    return [(w.text, text[w.start:w.end]) for c in parse(text).commands for w in c.words]


def test_quotes_escapes_and_continuations_keep_source_offsets():
    text = "vllm serve 'my model' --x=\"a b\" c\\ d \\\n  --kv-cache-dtype fp8"
    script = parse(text)
    assert len(script.commands) == 1
    got = [w.text for w in script.commands[0].words]
    assert got == ["vllm", "serve", "my model", "--x=a b", "c d", "--kv-cache-dtype", "fp8"]
    fp8 = script.commands[0].words[-1]
    assert text[fp8.offsets[0]:fp8.offsets[-1] + 1] == "fp8"
    quoted = script.commands[0].words[3]
    # every character of the value maps to the same character in the source
    assert all(text[o] == ch for ch, o in zip(quoted.text, quoted.offsets))
    assert quoted.quoted and not quoted.expansion


def test_separators_comments_redirections_and_heredocs():
    text = (
        "set -e; export A=1 && B=2 vllm serve m | tee log # not: vllm serve x\n"
        "cat <<EOF > f.yaml\nvllm serve inside-heredoc\nEOF\n"
        "python3 -m sglang.launch_server --model-path q 2>&1 &\n"
    )
    commands = [[w.text for w in c.words] for c in parse(text).commands]
    assert ["set", "-e"] in commands
    assert ["export", "A=1"] in commands
    assert ["vllm", "serve", "m"] in commands
    assert ["tee", "log"] in commands
    assert ["cat"] in commands
    assert ["python3", "-m", "sglang.launch_server", "--model-path", "q"] in commands
    assert not any("inside-heredoc" in c for c in commands)
    assignment = [c for c in parse(text).commands if c.words and c.words[0].text == "vllm"][0]
    assert [a.text for a in assignment.assignments] == ["B=2"]


def test_expansions_are_kept_verbatim_and_flagged():
    text = 'vllm serve $MODEL --tp "${TP:-2}" --x $(nproc) --y `date` --z "$(echo ")")"'
    got = {w.text: w.expansion for c in parse(text).commands for w in c.words}
    assert got["$MODEL"] and got["${TP:-2}"] and got["$(nproc)"] and got["`date`"]
    assert got['$(echo ")")'] is True
    assert got["vllm"] is False


def test_unterminated_quote_is_a_problem_not_an_exception():
    text = "vllm serve m --kv-cache-dtype 'fp8\n--max-model-len 4096\n"
    script = parse(text)
    assert [p.code for p in script.problems] == ["unterminated-quote"]
    assert script.problems[0].start == text.index("'")
    assert script.commands[0].words[4].text.startswith("fp8")


def test_unterminated_expansions_and_heredoc():
    for text, code in (
        ("echo $(date", "unterminated-expansion"),
        ("echo ${A", "unterminated-expansion"),
        ("echo `date", "unterminated-expansion"),
        ("cat <<EOF\nline\n", "unterminated-heredoc"),
        ('vllm serve "m', "unterminated-quote"),
    ):
        assert [p.code for p in parse(text).problems] == [code], text


def test_ten_thousand_arguments_are_linear():
    text = "vllm serve m " + " ".join(f"--flag-{i} {i}" for i in range(10_000))
    started = time.process_time()
    script = parse(text)
    elapsed = time.process_time() - started
    assert len(script.commands[0].words) == 3 + 20_000
    assert elapsed < 2.0  # a quadratic tokenizer takes minutes here


def test_long_quoted_and_continued_input_is_linear():
    text = "vllm serve m \\\n" + " \\\n".join(f"'--a-{i}' \"{i}\"" for i in range(5_000))
    started = time.process_time()
    script = parse(text)
    assert len(script.commands[0].words) == 3 + 10_000
    assert time.process_time() - started < 2.0


_ALPHABET = st.sampled_from(list("ab -=\\'\"$(){}`#;&|<>\n\t.0123456789EOF"))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_ALPHABET, max_size=200).map("".join))
def test_fuzz_never_raises_and_offsets_are_in_range(text):
    tokens, problems = tokenize(text)
    for token in tokens:
        assert isinstance(token, (Word, Operator))
        assert 0 <= token.start <= token.end <= len(text)
        if isinstance(token, Word):
            assert len(token.offsets) == len(token.text)
            assert all(0 <= o < len(text) for o in token.offsets)
            assert list(token.offsets) == sorted(token.offsets)
    for problem in problems:
        assert 0 <= problem.start <= problem.end <= len(text)
    script = parse(text)
    for command in script.commands:
        assert 0 <= command.start <= command.end <= len(text)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_fuzz_arbitrary_unicode(text):
    tokens, _ = tokenize(text)
    for token in tokens:
        if isinstance(token, Word):
            assert all(0 <= o < len(text) for o in token.offsets)
