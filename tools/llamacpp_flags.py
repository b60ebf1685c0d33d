"""Print llama.cpp's option registrations (common/arg.cpp) as a Python table for
kvlint/adapters/llamacpp_flags.py.

    python tools/llamacpp_flags.py path/to/llama.cpp/common/arg.cpp

Each `add_opt(common_arg({...}, [{neg...},] [VALUE_HINT,] HELP, HANDLER).set_env("X")...)`
becomes `spelling: (takes, dest, env)`: takes is `flag` (handler without a value), `bool`
(a positive and a negative spelling, no value), `value` (one value) or `value2` (two values);
dest is the first long spelling without dashes; env the LLAMA_ARG_* name or None.
"""

from __future__ import annotations

import re
import sys

_STRINGS = re.compile(r'"((?:[^"\\]|\\.)*)"')


def _balanced(text: str, start: int) -> int:
    depth = 0
    i = start
    in_str = False
    while i < len(text):
        ch = text[i]
        if in_str:
            if ch == "\\":
                i += 2
                continue
            if ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return len(text)


def registrations(source: str):
    for match in re.finditer(r"add_opt\(\s*common_arg\(", source):
        open_paren = source.index("(", match.start())
        end = _balanced(source, open_paren)
        body = source[open_paren:end]
        lists = re.findall(r"\{\s*(\"[^{}]*?\")\s*\}", body[: body.find("[]") if "[]" in body else len(body)])
        if not lists:
            continue
        args = _STRINGS.findall(lists[0])
        neg = _STRINGS.findall(lists[1]) if len(lists) > 1 and body.find("{", body.find("}") + 1) < body.find('"', body.find("}") + 1) else []
        handler = re.search(r"\[\]\s*\(\s*common_params\s*&[^,)]*(,[^)]*)?\)", body)
        params = handler.group(1) or "" if handler else ""
        if not params:
            takes = "flag"
        elif "bool" in params:
            takes = "bool"
        elif params.count(",") >= 2:
            takes = "value2"
        else:
            takes = "value"
        # `body` is the whole add_opt(...): common_arg(...) and its .set_env / .set_examples
        found = re.search(r'\.set_env\("([A-Z0-9_]+)"\)', body)
        env_name = found.group(1) if found else None
        long = [a for a in args if a.startswith("--")]
        dest = (long[0] if long else args[0]).lstrip("-").replace("-", "_")
        if "arg_removed(" in body:
            takes += "-removed"  # registered only to refuse it with a message
        yield args, neg, takes, dest, env_name


def main(path: str) -> None:
    source = open(path, encoding="utf-8").read()
    seen = {}
    for args, neg, takes, dest, env in registrations(source):
        for spelling in args:
            seen.setdefault(spelling, (takes, dest, env))
        for spelling in neg:
            seen.setdefault(spelling, ("bool-neg", dest, env))
    for spelling in sorted(seen):
        print(f"    {spelling!r}: {seen[spelling]!r},")


if __name__ == "__main__":
    main(sys.argv[1])
