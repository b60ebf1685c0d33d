"""The shell reader against the shell itself: each script runs in real bash with a stand-in
`vllm` program that records the arguments it receives, and kvlint must find exactly those
arguments for the engine (kvlint/adapters/launch.py ShellRunner, expansion.py). The expected
values are bash's, not kvlint's. Where kvlint does not evaluate what bash does (a `case` pattern,
an unexported variable in a child shell), it may leave an argument unresolved (None below): that is a
KV208, never a wrong value."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import List, Optional

import pytest

from kvlint.adapters import launch
from kvlint.adapters.launch import ReleaseFor, run_script
from kvlint.adapters.source import LineLocator

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")

SCRIPTS = {
    "plain": 'vllm serve Qwen/Qwen2.5-7B-Instruct --kv-cache-dtype fp8\n',
    "variables": 'M=Qwen/Qwen2.5-7B-Instruct\nD="fp8"\nvllm serve "$M" --kv-cache-dtype $D --max-model-len ${LEN:-8192}\n',
    "split": 'EXTRA="--kv-cache-dtype fp8   --max-model-len 4096"\nvllm serve m $EXTRA "$EXTRA"\n',
    "empty unquoted vanishes": 'E=""\nvllm serve m $E --kv-cache-dtype fp8 "$E"\n',
    "arrays": 'A=(--kv-cache-dtype "fp8 e4m3")\nA+=(--tp 2)\nvllm serve m "${A[@]}" ${A[1]}\n',
    "sh -c with arguments": 'sh -c \'exec vllm serve "$@"\' launcher m --kv-cache-dtype fp8\n',
    "bash -euo pipefail -c": 'bash -euo pipefail -c \'vllm serve "$1" --tp "$2"\' x m 4\n',
    "set --": 'set -- m --kv-cache-dtype fp8\nvllm serve "$@"\n',
    "shift": 'set -- drop m --tp 2\nshift\nvllm serve "$@"\n',
    "env": 'env VLLM_X=1 vllm serve m --kv-cache-dtype fp8\n',
    "env -S": "env -S 'vllm serve m --kv-cache-dtype fp8'\n",
    "eval": 'ARGS="--kv-cache-dtype fp8"\neval "vllm serve m $ARGS"\n',
    "nested": 'sh -c "bash -c \'vllm serve m --tp 8\'"\n',
    "here-document": "bash <<'EOF'\nD=fp8\nvllm serve m --kv-cache-dtype $D\nEOF\n",
    "here-string": "bash <<< 'vllm serve m --tp 2'\n",
    "nohup": 'nohup vllm serve m --tp 2 > /dev/null 2>&1 &\nwait\n',
    "timeout": 'timeout 30 vllm serve m --tp 2\n',
    "if branch": 'X=1\nif [ "$X" = 1 ]; then T=4; vllm serve m --tp $T; fi\n',
    "case": 'set -- long\ncase "$1" in\n  long) L=131072 ;;\n  *) L=4096 ;;\nesac\nvllm serve m --max-model-len $L\n',
    "function": 'serve() { vllm serve "$1" --tp "$2"; }\nserve m 2\n',
    "function keyword, called twice": 'function serve {\n  vllm serve "$1" --tp ${2:-1}\n}\nserve a\nserve b 4\n',
    "defaults chain": 'vllm serve ${MODEL:-${FALLBACK:-m}} --max-model-len $(( 4 * 1024 ))\n',
    "escapes and quotes": "vllm serve m --served-model-name 'a b' \"c\\\"d\" e\\ f\n",
    "line continuation": 'vllm serve m \\\n  --kv-cache-dtype fp8 \\\n  --tp 2\n',
    "subshell": 'D=auto\n(D=fp8)\nvllm serve m --kv-cache-dtype $D\n',
    "a child shell sees exported variables only": (
        'A=4\nexport B=2\nbash -c \'vllm serve m --tp "$B" --served-model-name "x$A"\'\n'),
    "prefix assignment reaches the child, not this expansion": (
        'T=1\nT=8 bash -c \'vllm serve m --tp $T --pp \'"$T"\n'),
    "dollar star": 'set -- a b\nvllm serve m --served-model-name "$*" $*\n',
    "env assignment reaches the child": "env T=2 bash -c 'vllm serve m --tp $T'\n",
}


def _bash(tmp_path: Path, text: str) -> List[List[str]]:
    shim_dir = tmp_path / "bin"
    shim_dir.mkdir()
    shim = shim_dir / "vllm"
    shim.write_text(
        f"#!{sys.executable}\nimport json, os, sys\n"
        "with open(os.environ['KVLINT_RECORD'], 'a') as f:\n"
        "    f.write(json.dumps(sys.argv[2:]) + '\\n')\n",
        encoding="utf-8",
    )
    shim.chmod(shim.stat().st_mode | stat.S_IXUSR)
    record = tmp_path / "record.jsonl"
    script = tmp_path / "serve.sh"
    script.write_text(text, encoding="utf-8")
    env = {"PATH": f"{shim_dir}{os.pathsep}{os.environ.get('PATH', '')}", "KVLINT_RECORD": str(record),
           "HOME": str(tmp_path)}
    subprocess.run(["bash", str(script)], env=env, check=True, timeout=30, cwd=tmp_path)
    return [json.loads(line) for line in record.read_text(encoding="utf-8").splitlines()]


def _kvlint(text: str, monkeypatch) -> List[List[Optional[str]]]:
    seen: List[List[Optional[str]]] = []
    parse = launch.parse_command

    def spy(argv, invocation, *args, **kwargs):
        seen.append([None if a.unresolved else a.text for a in argv[invocation.first:]])
        return parse(argv, invocation, *args, **kwargs)

    monkeypatch.setattr(launch, "parse_command", spy)
    result = run_script(text, LineLocator(text), "script", {}, ReleaseFor())
    assert not [p for p in result.problems if p.severity == "error"]
    return seen


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_kvlint_finds_the_arguments_bash_passes(name, tmp_path, monkeypatch):
    text = SCRIPTS[name]
    found, ran = _kvlint(text, monkeypatch), _bash(tmp_path, text)
    assert len(found) == len(ran)
    for mine, theirs in zip(found, ran):
        assert len(mine) == len(theirs), (mine, theirs)
        assert all(a is None or a == b for a, b in zip(mine, theirs)), (mine, theirs)
    if name not in UNDECIDED:
        assert None not in [a for args in found for a in args]


# kvlint leaves these to run time on purpose: the branch a `case` takes, and an unexported variable in a child shell (the caller's environment may export it)
UNDECIDED = {"case", "a child shell sees exported variables only"}
