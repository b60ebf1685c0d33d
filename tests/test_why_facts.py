"""Release boundaries that the hand-written catalog once had wrong, each proved by the derived cell
(the release's own code, tools/derive/tables/vllm/<release>.json) and by kvlint's verdict on both
sides of the boundary. The whole grid is compared by test_derived_agreement; these name the facts.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from packaging.version import Version

from conftest import invoke

TABLES = Path(__file__).resolve().parent.parent / "tools" / "derive" / "tables" / "vllm"
sys.path.insert(0, str(TABLES.parent.parent))

import table  # noqa: E402

RELEASES = sorted((p.stem for p in TABLES.glob("*.json")), key=Version)

MANIFEST = """\
apiVersion: kvlint/v1
kind: Deployment
metadata: {{name: why}}
engine: {{name: vllm, version: "{version}", attention_backend: {backend}}}
hardware: {{gpu: {gpu}, count: 8}}
parallelism: {{tensor: 8}}
model: {{name: deepseek-ai/DeepSeek-V3}}
kv_cache: {{dtype: fp8}}
"""


def _table(version: str) -> dict:
    return json.loads((TABLES / f"{version}.json").read_text(encoding="utf-8"))


def _code_accepts(version: str, backend: str, device: str, dtype: str, head: int) -> bool:
    entry = _table(version)["backends"].get(backend)
    if entry is None or "reasons" not in entry.get("validate", {}):
        return False
    cell = {"device": device, "variant": "plain", "kv_cache_dtype": dtype, "head_size": head, "block_size": 64}
    return not any(table.lookup(tree, cell) for tree in entry["validate"]["reasons"].values())


def _codes(tmp_path, version: str, backend: str, gpu: str) -> set:
    path = tmp_path / "m.yaml"
    path.write_text(MANIFEST.format(version=version, backend=backend, gpu=gpu))
    out = invoke(["check", "--output-format", "concise", "--select", "KV2,KV3", str(path)]).output
    return {word for line in out.splitlines() for word in line.split() if word.startswith("KV")}


def test_triton_mla_takes_fp8_from_0_18(tmp_path) -> None:
    accepting = [v for v in RELEASES if _code_accepts(v, "TRITON_MLA", "sm90", "fp8", 576)]
    assert accepting and accepting[0] == "0.18.0"
    assert accepting == [v for v in RELEASES if Version(v) >= Version("0.18.0")]
    assert "KV301" in _codes(tmp_path, "0.17.1", "TRITON_MLA", "H200-141GB")
    assert "KV301" not in _codes(tmp_path, "0.18.0", "TRITON_MLA", "H200-141GB")


def test_tokenspeed_mla_exists_from_0_21(tmp_path) -> None:
    having = [v for v in RELEASES if "TOKENSPEED_MLA" in _table(v)["backends"]]
    assert having == [v for v in RELEASES if Version(v) >= Version("0.21.0")]
    assert _code_accepts("0.21.0", "TOKENSPEED_MLA", "sm100", "fp8", 576)
    assert "KV204" in _codes(tmp_path, "0.20.2", "TOKENSPEED_MLA", "B200-180GB")
    assert not _codes(tmp_path, "0.21.0", "TOKENSPEED_MLA", "B200-180GB") & {"KV204", "KV301", "KV323"}
