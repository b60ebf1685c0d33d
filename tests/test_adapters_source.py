"""Per-character positions of YAML string scalars (kvlint/adapters/source.py)."""

from __future__ import annotations

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kvlint.adapters.source import LineLocator, scalar_locator
from kvlint.load import load_text


def locate(text: str, ptr: str = "/a"):
    document = load_text(text, "x.yaml").documents[0]
    node = document.data
    for token in ptr.split("/")[1:]:
        node = node[int(token)] if isinstance(node, list) else node[token]
    return node, scalar_locator(text, LineLocator(text), document.value_spans[ptr], node)


def source_char(text: str, position):
    line, column = position
    row = text.splitlines()[line - 1]
    return row[column - 1] if column - 1 < len(row) else "\n"


def assert_maps_to_itself(text: str, value: str, located) -> None:
    """Every non-blank character of the value sits on the same character in the source (an
    escaped one on its backslash)."""
    for i, ch in enumerate(value):
        if ch in " \n\t":
            continue
        assert source_char(text, located.locator.position(i)) in (ch, "\\"), (i, ch)


def test_styles_rebuild_exactly():
    cases = [
        'a: vllm serve x --kv-cache-dtype fp8\n',
        'a: "vllm serve \\"x\\" --tp 2"\n',
        "a: 'it''s --x'\n",
        'a: vllm serve x\n  --kv-cache-dtype fp8\n\n  --y 2\nb: 1\n',
        'a: "vllm serve x\n  --kv \\\n  cache  \n  end"\n',
        'a:\n- |\n  exec vllm serve m \\\n    --kv-cache-dtype=fp8\n  echo done\n\nb: 2\n',
        'a:\n- >\n  exec vllm serve m\n  --tp 8\n\n  --kv-cache-dtype=fp8_e4m3\n    more\n  last\n',
        'a:\n  - >-\n    vllm serve m\n    --x 1\n',
        'a: |+\n  one\n\n\nb: 1\n',
        'a: |2\n    two-indented\n   x\n',
        'a: >\n\n  lead\n  fold\n',
        'a: |-  # comment on the header\n  vllm serve m\n',
    ]
    for text in cases:
        ptr = "/a/0" if "\n- " in text or "\n  - " in text else "/a"
        value, located = locate(text, ptr)
        assert located.exact, text
        assert_maps_to_itself(text, value, located)


def test_escapes_map_to_the_backslash():
    text = 'a: "tab\\there \\u00e9 \\x41"\n'
    value, located = locate(text)
    assert value == "tab\there é A"
    assert located.exact
    assert source_char(text, located.locator.position(value.index("é"))) == "\\"


def test_unrebuildable_scalar_degrades_to_its_start():
    text = "a: &anchor !!str vllm serve m\n"
    value, located = locate(text)
    assert value == "vllm serve m"
    assert not located.exact
    assert located.locator.position(5) == (1, 4)


_TEXT = st.text(
    alphabet=st.sampled_from(list("ab -=:#'\"\\\n\t{}[],&*!|>%@`$()0123456789é")), max_size=60
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_TEXT, st.sampled_from([None, "'", '"', "|", ">"]), st.integers(min_value=10, max_value=60))
def test_fuzz_rebuild_is_exact_or_degrades(value, style, width):
    try:
        dumped = yaml.safe_dump({"a": value}, default_style=style, width=width, allow_unicode=True)
    except yaml.YAMLError:
        return
    loaded = load_text(dumped, "x.yaml")
    if not loaded.documents or not isinstance(loaded.documents[0].data, dict):
        return
    parsed = loaded.documents[0].data.get("a")
    if not isinstance(parsed, str):
        return
    document = loaded.documents[0]
    located = scalar_locator(dumped, LineLocator(dumped), document.value_spans["/a"], parsed)
    assert located.text == parsed
    if located.exact:
        for i, ch in enumerate(parsed):
            if ch in " \n\t":
                continue
            got = source_char(dumped, located.locator.position(i))
            assert got == ch or got in "\\'", (dumped, i, ch, got)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("abc -_=.$/0123456789")), min_size=1, max_size=50),
       st.sampled_from(["'", '"', "|", ">"]))
def test_fuzz_ordinary_shell_text_is_always_exact(value, style):
    dumped = yaml.safe_dump({"a": value}, default_style=style, width=1000)
    loaded = load_text(dumped, "x.yaml").documents[0]
    parsed = loaded.data["a"]
    located = scalar_locator(dumped, LineLocator(dumped), loaded.value_spans["/a"], parsed)
    assert located.exact, dumped


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(alphabet="abcxyz-_=.,:/0123456789 é", min_size=1, max_size=30), st.sampled_from(["a: ", "a:   "]))
def test_plain_one_line_scalars_map_column_by_column(value, prefix):
    """A plain one-line scalar (the fast path): character i of the value is i columns after its
    first character in the file, one past the end after the last, the scalar start before it."""
    text = f"{prefix}{value}\n"
    try:
        document = load_text(text, "x.yaml").documents[0]
    except Exception:
        return
    node = document.data.get("a") if isinstance(document.data, dict) else None
    if not isinstance(node, str) or not node:
        return
    located = scalar_locator(text, LineLocator(text), document.value_spans["/a"], node)
    first = text.index(node, len(prefix)) + 1  # the value as written starts here (plain: no quotes, no escapes)
    assert [located.locator.position(i) for i in range(len(node))] == [(1, first + i) for i in range(len(node))]
    assert located.locator.position(len(node) + 2) == (1, first + len(node))
    assert located.locator.position(-1) == (1, first)
    assert_maps_to_itself(text, node, located)


def test_the_fast_path_is_taken_for_plain_args_only():
    from kvlint.adapters.source import RunLocator

    _, plain = locate("a: --kv-cache-dtype=fp8_e5m2\n")
    assert isinstance(plain.locator, RunLocator) and plain.locator.position(20) == (1, 24)
    _, quoted = locate("a: '--kv-cache-dtype=fp8'\n")
    assert not isinstance(quoted.locator, RunLocator) and quoted.locator.position(0) == (1, 5)
