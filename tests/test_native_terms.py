"""Findings on a native file speak its own terms: the flag the user wrote, not a manifest field,
and a finding on a setting the file leaves to its default points at the value that decides it
(kvlint.pipeline.native.native_terms)."""

from __future__ import annotations

import json
import textwrap

from conftest import invoke

POD = textwrap.dedent("""
    apiVersion: v1
    kind: Pod
    metadata: {name: p, annotations: {kvlint.dev/gpu: A100-SXM4-80GB}}
    spec:
      containers:
      - name: engine
        image: vllm/vllm-openai:v0.19.1
        args: ["--model", "Qwen/Qwen2.5-7B-Instruct", "--kv-cache-dtype=fp8_e5m2"]
""").lstrip("\n")


def _diagnostics(tmp_path, monkeypatch, name: str, text: str):
    (tmp_path / "kvlint.toml").write_text("# no defaults\n", encoding="utf-8")
    (tmp_path / name).write_text(text, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    result = invoke(["check", "--output-format", "json", name])
    return json.loads(result.stdout)["diagnostics"]


def test_auto_backend_finding_points_at_the_cache_dtype_and_names_the_flag(tmp_path, monkeypatch):
    (kv307,) = [d for d in _diagnostics(tmp_path, monkeypatch, "pod.yaml", POD) if d["code"] == "KV307"]
    line = POD.splitlines()[7]
    assert (kv307["line"], kv307["column"]) == (8, line.index("fp8_e5m2") + 1)
    assert kv307["message"].startswith("--attention-backend auto:")
    assert "attention_backend" not in kv307["message"].replace("--attention-backend", "")


def test_remedy_uses_the_flag_the_user_wrote(tmp_path, monkeypatch):
    text = POD.replace("A100-SXM4-80GB", "H100-SXM-80GB")
    (kv301,) = [d for d in _diagnostics(tmp_path, monkeypatch, "pod.yaml", text) if d["code"] == "KV301"]
    assert "or use --kv-cache-dtype fp8," in kv301["message"]
    assert "kv_cache.dtype" not in kv301["message"]


def test_manifest_keeps_its_field_names(tmp_path, monkeypatch):
    manifest = textwrap.dedent("""
        apiVersion: kvlint/v1
        kind: Deployment
        metadata: {name: m}
        engine: {name: vllm, version: "0.19.1"}
        model: {name: Qwen/Qwen2.5-7B-Instruct}
        hardware: {gpu: H100-SXM-80GB}
        kv_cache: {dtype: fp8_e5m2}
    """).lstrip("\n")
    (tmp_path / "kvlint.toml").write_text("# no defaults\n", encoding="utf-8")
    (tmp_path / "m.yaml").write_text(manifest, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    report = json.loads(invoke(["check", "--output-format", "json", "m.yaml"]).stdout)
    (kv301,) = [d for d in report["diagnostics"] if d["code"] == "KV301"]
    assert "or use kv_cache.dtype fp8," in kv301["message"]
