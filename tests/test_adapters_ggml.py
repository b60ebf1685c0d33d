"""llama.cpp and Ollama native forms: each fixture's manifest values and native positions.

The expected values are what the fixture says read the way llama.cpp's common/arg.cpp and Ollama's
envconfig read them (the command line wins over LLAMA_ARG_*, `-fa` is a switch at b4747, K and V
default to f16, Ollama's unsigned variables ignore a non-number), and the positions are found in
the fixture's text, not taken from the adapter.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import List, Tuple

import jsonschema
import pytest

from kvlint.adapters import Adapted, adapt, sniff
from kvlint.adapters.cmdline import Arg, Invocation, parse_command, stoi
from kvlint.adapters.images import engine_from_image
from kvlint.adapters.source import LineLocator
from kvlint.load import load_text

from conftest import REPO_ROOT

GGML = REPO_ROOT / "tests" / "fixtures" / "native-ggml"
SCHEMA = json.loads((REPO_ROOT / "schemas" / "manifest.v1.json").read_text())


def read(name: str):
    path = GGML / name
    text = path.read_text()
    documents = load_text(text, str(path)).documents if path.suffix == ".yaml" else None
    return adapt(str(path), text, documents)


def only(name: str) -> Adapted:
    result = read(name)
    assert len(result.workloads) == 1, [w.name for w in result.workloads]
    return result.workloads[0]


def at(workload: Adapted, ptr: str) -> Tuple[int, int]:
    span = workload.value_spans[ptr]
    return (span.line, span.column)


def where(name: str, needle: str, occurrence: int = 1) -> Tuple[int, int]:
    """(line, column) of the n-th occurrence of `needle` in the fixture."""
    seen = 0
    for number, line in enumerate((GGML / name).read_text().splitlines(), start=1):
        start = 0
        while (index := line.find(needle, start)) >= 0:
            seen += 1
            if seen == occurrence:
                return (number, index + 1)
            start = index + 1
    raise AssertionError(f"{needle!r} not in {name}")


def kinds(workload: Adapted) -> List[Tuple[str, str]]:
    return [(p.code, p.kind) for p in workload.problems]


def valid(workload: Adapted) -> None:
    """Schema-valid, except for the facts the file does not give (the pipeline asks for them)."""
    missing = {part for ptr in workload.missing for part in ptr.strip("/").split("/")}
    errors = [
        e.message for e in jsonschema.Draft202012Validator(SCHEMA).iter_errors(workload.manifest)
        if not (e.validator == "required" and any(f"'{name}'" in e.message for name in missing))
    ]
    assert errors == [], errors


def test_llama_server_script_long_flags_env_and_an_equals_flag():
    w = only("llama-server.sh")
    m = w.manifest
    valid(w)
    assert m["engine"]["name"] == "llama.cpp"
    assert m["engine"]["version"] == "b6840"  # the `# kvlint:` comment
    assert m["engine"]["flash_attention"] == "on"
    # -ctk q8_0 -ctv q4_0: the pair differs, so the shared dtype stays llama.cpp's f16 default
    assert m["kv_cache"] == {"dtype": "f16", "key_dtype": "q8_0", "value_dtype": "q4_0"}
    assert m["serving"] == {
        "context_size": 32768, "max_num_seqs": 4, "kv_unified": True, "swa_full": True,
        "ubatch_size": 256,  # LLAMA_ARG_UBATCH: no -ub flag on the command line
    }
    assert m["engine"]["options"]["defrag_thold"] == "0.1"
    assert m["engine"]["env"] == {"LLAMA_ARG_UBATCH": "256"}
    # "$MODEL" resolved from the script; a relative .gguf is also model.config (GGUF geometry)
    assert m["model"] == {
        "name": "models/Meta-Llama-3.1-8B-Instruct-Q8_0.gguf",
        "config": "models/Meta-Llama-3.1-8B-Instruct-Q8_0.gguf",
    }
    assert at(w, "/kv_cache/value_dtype") == where("llama-server.sh", "q4_0")
    assert at(w, "/serving/ubatch_size") == where("llama-server.sh", "256")
    # `--ctx-size=16384` is not `--ctx-size 16384` to llama.cpp: it refuses to start
    (bad,) = [p for p in w.problems if p.kind == "unknown-flag"]
    assert bad.code == "KV319" and "--ctx-size 16384" in bad.message
    assert (bad.span.line, bad.span.column) == where("llama-server.sh", "--ctx-size=16384")


def test_docker_run_llama_server_image_tag_env_and_switch_fa():
    w = only("docker-llama-server.sh")
    m = w.manifest
    valid(w)
    assert m["engine"]["version"] == "b4747"
    assert m["engine"]["build"] == {"backend": "cuda"}  # :server-cuda-…
    assert m["engine"]["flash_attention"] == "on"  # LLAMA_ARG_FLASH_ATTN=1
    assert m["engine"]["env"] == {"LLAMA_ARG_FLASH_ATTN": "1"}
    assert m["kv_cache"] == {"dtype": "f16", "value_dtype": "q8_0"}
    assert m["serving"] == {"context_size": 8192}
    assert m["hardware"] == {"gpu": "RTX-4090"}
    assert at(w, "/engine/flash_attention") == (5, where("docker-llama-server.sh", "=1")[1] + 1)
    assert at(w, "/engine/version") == where("docker-llama-server.sh", "ghcr.io/ggml-org")
    assert at(w, "/kv_cache/value_dtype") == where("docker-llama-server.sh", "q8_0")


def test_docker_run_ollama():
    result = read("docker-ollama.sh")
    (w,) = result.workloads  # `docker exec … ollama run` starts no server
    m = w.manifest
    valid(w)
    assert m["engine"] == {
        "name": "ollama", "version": "0.13.3", "flash_attention": "on",
        "env": {"OLLAMA_FLASH_ATTENTION": "1", "OLLAMA_KV_CACHE_TYPE": "q4_0"},
    }
    assert m["kv_cache"] == {"dtype": "q4_0"}
    assert at(w, "/kv_cache/dtype") == (6, where("docker-ollama.sh", "q4_0")[1])
    assert set(w.missing) == {"/hardware/gpu", "/model/name"}


def test_kubernetes_ollama_env_and_a_misspelt_variable_kept():
    result = read("k8s-ollama.yaml")
    (w,) = result.workloads  # the Namespace and the Service are not deployments
    m = w.manifest
    valid(w)
    assert m["engine"]["name"] == "ollama" and m["engine"]["version"] == "0.13.3"
    assert "flash_attention" not in m["engine"]  # OLLAMA_FLASH_ATTN is not Ollama's variable
    assert m["engine"]["env"]["OLLAMA_FLASH_ATTN"] == "1"
    assert m["kv_cache"] == {"dtype": "q8_0"}
    assert m["serving"] == {"max_model_len": 32768, "max_num_seqs": 4}
    assert m["hardware"] == {"gpu": "NVIDIA-L4", "count": 1}
    assert m["model"]["name"] == "meta-llama/Llama-3.1-8B-Instruct"
    assert at(w, "/engine/env/OLLAMA_FLASH_ATTN") == (where("k8s-ollama.yaml", "OLLAMA_FLASH_ATTN")[0] + 1, 18)
    assert w.key_spans["/engine/env/OLLAMA_FLASH_ATTN"].column == where("k8s-ollama.yaml", "OLLAMA_FLASH_ATTN")[1]
    assert at(w, "/serving/max_model_len") == where("k8s-ollama.yaml", '"32768"')


def test_kubernetes_llama_server_args_after_the_image_entrypoint():
    w = only("k8s-llama-server.yaml")
    m = w.manifest
    valid(w)
    assert m["engine"]["version"] == "b6840" and m["engine"]["build"] == {"backend": "cuda"}
    assert m["engine"]["flash_attention"] == "on"
    assert m["kv_cache"] == {"dtype": "q8_0", "key_dtype": "q8_0", "value_dtype": "q8_0"}
    # -np from LLAMA_ARG_N_PARALLEL; LLAMA_ARG_CACHE_TYPE_K loses to -ctk (llama.cpp warns)
    assert m["serving"] == {"context_size": 32768, "max_num_seqs": 4}
    assert m["model"] == {"name": "/models/Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf"}  # absolute: no config
    (conflict,) = [p for p in w.problems if p.kind == "conflicting-facts"]
    assert conflict.code == "KV322" and "overridden by the command line" in conflict.message
    assert (conflict.span.line, conflict.span.column) == where("k8s-llama-server.yaml", "q4_0")
    assert at(w, "/kv_cache/key_dtype") == where("k8s-llama-server.yaml", "q8_0")


def test_compose_ollama_rocm_and_llama_vulkan():
    result = read("compose.yaml")
    ollama, llama = result.workloads
    assert ollama.manifest["engine"]["build"] == {"backend": "hip"}  # :0.12.6-rocm
    assert ollama.manifest["engine"]["version"] == "0.12.6"
    assert ollama.manifest["engine"]["flash_attention"] == "on"  # "true"
    assert "max_model_len" not in ollama.manifest.get("serving", {})  # "8k" is ignored by Ollama
    (ignored,) = [p for p in ollama.problems if p.kind == "invalid-flag-value"]
    assert (ignored.span.line, ignored.span.column) == where("compose.yaml", "8k")
    m = llama.manifest
    valid(llama)
    assert m["engine"]["build"] == {"backend": "vulkan"} and m["engine"]["version"] == "b7108"
    assert m["engine"]["flash_attention"] == "auto"
    assert m["serving"] == {"context_size": 16384, "max_num_seqs": 2}
    assert m["hardware"] == {"gpu": "RTX-4090", "count": 1}
    (bad,) = [p for p in llama.problems if p.kind == "invalid-flag-value"]
    assert bad.severity == "error" and "invalid boolean value" in bad.message
    assert at(llama, "/engine/flash_attention") == where("compose.yaml", "auto")


def test_dockerfile_env_and_exec_cmd():
    w = only("Dockerfile.llamacpp")
    m = w.manifest
    valid(w)
    assert m["engine"]["version"] == "b4747" and m["engine"]["build"] == {"backend": "cuda"}
    assert m["engine"]["flash_attention"] == "on"  # `-fa` is a switch at b4747
    assert m["serving"] == {"context_size": 16384, "max_num_seqs": 2}
    assert m["kv_cache"]["dtype"] == "q8_0"
    assert at(w, "/serving/context_size") == where("Dockerfile.llamacpp", "16384")
    assert at(w, "/kv_cache/value_dtype") == where("Dockerfile.llamacpp", "q8_0", occurrence=2)
    assert not w.problems


def test_systemd_unit_and_drop_in():
    unit = only("ollama.service")
    assert unit.manifest["engine"]["name"] == "ollama"
    assert unit.manifest["kv_cache"] == {"dtype": "q8_0"}
    assert at(unit, "/kv_cache/dtype") == where("ollama.service", "q8_0")
    assert set(unit.missing) == {"/engine/version", "/hardware/gpu", "/model/name"}
    drop_in = only("ollama.service.d/override.conf")
    m = drop_in.manifest
    valid(drop_in)
    assert m["engine"]["version"] == "0.13.3" and m["engine"]["flash_attention"] == "on"
    assert m["kv_cache"] == {"dtype": "q4_0"}
    assert m["serving"] == {"max_model_len": 16384, "max_num_seqs": 2}
    assert at(drop_in, "/kv_cache/dtype") == where("ollama.service.d/override.conf", "q4_0")
    assert at(drop_in, "/serving/max_num_seqs") == (5, where("ollama.service.d/override.conf", "=2")[1] + 1)


def test_systemd_llama_server_exec_start_with_continuations():
    w = only("llama-server.service")
    m = w.manifest
    valid(w)
    assert m["engine"]["flash_attention"] == "auto"  # LLAMA_ARG_FLASH_ATTN=auto
    assert m["serving"] == {"context_size": 16384, "max_num_seqs": 2}
    assert m["kv_cache"] == {"dtype": "f16", "value_dtype": "q8_0"}
    assert at(w, "/serving/context_size") == where("llama-server.service", "16384")
    assert at(w, "/engine/flash_attention") == where("llama-server.service", "auto")


def test_modelfile_num_ctx():
    w = only("Modelfile")
    m = w.manifest
    valid(w)
    assert m["engine"]["name"] == "ollama"
    assert m["model"] == {"name": "llama3.2"}
    assert m["serving"] == {"max_model_len": 4096}
    assert at(w, "/serving/max_model_len") == where("Modelfile", "4096", occurrence=2)  # not the comment
    assert set(w.missing) == {"/engine/version", "/hardware/gpu"}


def test_ollama_helm_values():
    w = only("ollama-values.yaml")
    m = w.manifest
    valid(w)
    assert m["engine"]["version"] == "0.13.3" and m["engine"]["build"] == {"backend": "cuda"}
    assert m["hardware"] == {"gpu": "NVIDIA-L40S", "count": 2}
    assert m["model"] == {"name": "qwen2.5:14b"}
    assert m["kv_cache"] == {"dtype": "q8_0"}
    assert m["serving"] == {"max_model_len": 16384, "max_num_seqs": 2}
    assert at(w, "/hardware/count") == where("ollama-values.yaml", "2")


def test_helm_release_and_values_without_a_tag():
    text = (
        "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: ollama}\nspec:\n"
        "  chart: {spec: {chart: ollama}}\n  values:\n    ollama:\n      gpu: {enabled: true, type: amd}\n"
        "    extraEnv:\n      - {name: OLLAMA_KV_CACHE_TYPE, value: q8_0}\n"
    )
    (w,) = adapt("release.yaml", text).workloads
    assert w.name == "ollama-helm/ollama"
    assert w.manifest["engine"]["build"] == {"backend": "hip"}  # appVersion-rocm
    assert w.manifest["kv_cache"] == {"dtype": "q8_0"}
    assert "/engine/version" in w.missing and "appVersion" in w.missing["/engine/version"]


@pytest.mark.parametrize("name, fmt", [
    ("llama-server.sh", "shell"), ("docker-ollama.sh", "shell"), ("k8s-ollama.yaml", "kubernetes"),
    ("compose.yaml", "compose"), ("Dockerfile.llamacpp", "dockerfile"), ("ollama.service", "systemd"),
    ("ollama.service.d/override.conf", "systemd"), ("llama-server.service", "systemd"),
    ("Modelfile", "modelfile"), ("ollama-values.yaml", "helm-ollama"),
])
def test_sniff(name, fmt):
    path = GGML / name
    assert sniff(str(path), path.read_bytes()[:4096]) == fmt


def test_sniff_leaves_unrelated_units_and_conf_files_alone():
    nginx = b"[Unit]\nDescription=nginx\n[Service]\nExecStart=/usr/sbin/nginx\n"
    assert sniff("/etc/systemd/system/nginx.service", nginx) is None
    assert sniff("/etc/systemd/system/nginx.service.d/override.conf", nginx) is None
    assert sniff("/etc/ollama.conf", b"[Service]\nEnvironment=OLLAMA_KV_CACHE_TYPE=q8_0\n") is None
    assert sniff("Modelfile", b"# nothing here\n") is None


def test_walk_finds_only_ggml_units(tmp_path):
    from kvlint.config import Config
    from kvlint.pipeline.discovery import discover_files

    (tmp_path / "nginx.service").write_text("[Service]\nExecStart=/usr/sbin/nginx\n")
    (tmp_path / "app.conf").write_text("[Service]\nEnvironment=OLLAMA_HOST=0.0.0.0\n")
    unit_dir = tmp_path / "ollama.service.d"
    unit_dir.mkdir()
    (unit_dir / "override.conf").write_text((GGML / "ollama.service.d" / "override.conf").read_text())
    (tmp_path / "Modelfile").write_text((GGML / "Modelfile").read_text())
    config = Config(path=tmp_path / "kvlint.toml")
    found = sorted(Path(p).relative_to(tmp_path).as_posix() for p in discover_files([str(tmp_path)], config))
    assert found == ["Modelfile", "ollama.service.d/override.conf"]


# --- the parser's reading of single values --------------------------------------------------------


def argv(*words: str) -> List[Arg]:
    text = " ".join(words)
    locator = LineLocator(text)
    out, offset = [], 0
    for word in words:
        out.append(Arg(word, tuple(range(offset, offset + len(word))), locator,
                       locator.span(offset, offset + len(word)), f"argv[{len(out)}]"))
        offset += len(word) + 1
    return out


def parse(release, *words):
    args = argv("llama-server", *words)
    return parse_command(args, Invocation("llama.cpp", "llama-server", 1, 0), release)


def settings(parsed):
    return {s.pointer: s.value for s in parsed.settings}


@pytest.mark.parametrize("release, words, expected, problem", [
    # b4747 registers -fa without a value: `on` is then a stray argument
    ("b4747", ("-fa", "on"), "on", "unexpected-argument"),
    ("b4747", ("-fa", "-c", "4096"), "on", None),
    # the tri-state builds need a value: on|off|auto, 1|0|-1, true|false, enabled|disabled
    ("b6840", ("-fa", "-1"), "auto", None),
    ("b6840", ("-fa", "disabled"), "off", None),
    ("b6840", ("-fa", "-c", "4096"), None, "invalid-flag-value"),
    ("b6840", ("-fa", "maybe"), None, "invalid-flag-value"),
    # an unknown build in between: both forms are read
    (None, ("-fa", "off"), "off", None),
    (None, ("-fa",), "on", None),
])
def test_flash_attn_by_build(release, words, expected, problem):
    parsed = parse(release, *words)
    assert settings(parsed).get("/engine/flash_attention") == expected
    assert [p.kind for p in parsed.problems] == ([problem] if problem else [])


def test_std_stoi_reading():
    # std::stoi stops at the first non-digit: -c 32k is 32 cells, not 32,000
    assert stoi("32k") == (32, "k")
    assert stoi(" 4096") == (4096, "")
    assert stoi("k32") == (None, "k32")
    parsed = parse("b6840", "-c", "32k", "-np", "-1", "-c", "0")
    values = settings(parsed)
    assert values["/serving/context_size"] == 0  # the last -c wins; 0 = the training context
    assert values["/engine/options/parallel"] == -1  # auto slots: no max_num_seqs
    warned = [p for p in parsed.problems if p.kind == "invalid-flag-value"]
    assert len(warned) == 1 and "as 32" in warned[0].message


def test_switch_pairs_and_underscores():
    values = settings(parse("b6840", "--kv_unified", "-no-kvu", "--no-context-shift", "-hf", "org/repo:Q4_K_M"))
    assert values["/serving/kv_unified"] is False  # the later -no-kvu wins
    assert values["/engine/options/context_shift"] is False
    assert values["/model/name"] == "org/repo:Q4_K_M"


@pytest.mark.parametrize("image, engine, release, backend, serves", [
    ("ghcr.io/ggml-org/llama.cpp:server-b4747", "llama.cpp", "b4747", "cpu", True),
    ("ghcr.io/ggml-org/llama.cpp:server-cuda-b6840", "llama.cpp", "b6840", "cuda", True),
    ("ghcr.io/ggml-org/llama.cpp:full-rocm-b7108", "llama.cpp", "b7108", "hip", False),
    ("ghcr.io/ggml-org/llama.cpp:light-intel-b5000", "llama.cpp", "b5000", "sycl", False),
    ("ghcr.io/ggml-org/llama.cpp:server-musa", "llama.cpp", None, "musa", True),
    ("ollama/ollama:0.13.3", "ollama", "0.13.3", None, True),
    ("ollama/ollama:0.12.6-rocm", "ollama", "0.12.6", "hip", True),
    ("ollama/ollama:rocm", "ollama", None, "hip", True),
    ("ollama/ollama", "ollama", None, None, True),
])
def test_images(image, engine, release, backend, serves):
    found = engine_from_image(image)
    assert (found.engine, found.release, found.backend, found.serves) == (engine, release, backend, serves)
    if release is None:
        assert found.floating and found.why_unknown


def test_unknown_llama_arg_variable_is_reported_on_its_name():
    text = "#!/bin/sh\nexport LLAMA_ARG_CTX_LEN=8192\nllama-server -m m.gguf\n"
    (w,) = adapt("run.sh", text).workloads
    (unknown,) = [p for p in w.problems if p.kind == "unknown-flag"]
    assert "LLAMA_ARG_CTX_SIZE" in unknown.message  # the suggestion
    assert (unknown.span.line, unknown.span.column) == (2, 8)
    assert "context_size" not in w.manifest.get("serving", {})


# --- through the pipeline -------------------------------------------------------------------------


def _check(tmp_path, monkeypatch, *names: str):
    import shutil

    from conftest import invoke

    (tmp_path / "kvlint.toml").write_text("# defaults\n", encoding="utf-8")
    for name in names:
        target = tmp_path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(GGML / name, target)
    monkeypatch.chdir(tmp_path)
    result = invoke(["check", "--output-format", "json", "."])
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)["diagnostics"]


def _location(d):
    name = d["file"].replace("\\", "/")
    return (d["code"], name[2:] if name.startswith("./") else name, d["line"], d["column"])


def test_walk_reports_on_the_native_lines(tmp_path, monkeypatch):
    diagnostics = _check(tmp_path, monkeypatch, "llama-server.sh", "ollama.service.d/override.conf", "Modelfile")
    found = {_location(d) for d in diagnostics}
    # the `--ctx-size=16384` word llama.cpp refuses
    assert ("KV319", "llama-server.sh", *where("llama-server.sh", "--ctx-size=16384")) in found
    # a Modelfile says nothing of the server's release: asked for, on the FROM line
    assert ("KV207", "Modelfile", 2, 1) in found
    # the drop-in states everything: no missing fact
    assert not [d for d in diagnostics if d["code"] == "KV207" and "override.conf" in d["file"]]


@pytest.mark.parametrize("name", ["llama-server.sh", "k8s-llama-server.yaml", "ollama.service.d/override.conf"])
def test_converted_manifest_checks_the_same(tmp_path, monkeypatch, name):
    """The manifest `kvlint convert` prints gives the same findings as the native file."""
    from conftest import invoke

    native = _check(tmp_path, monkeypatch, name)
    converted = invoke(["convert", name])
    assert converted.exit_code == 0, converted.output
    (tmp_path / "converted.yaml").write_text(converted.stdout, encoding="utf-8")
    result = invoke(["check", "--output-format", "json", "converted.yaml"])
    manifest = json.loads(result.stdout)["diagnostics"]
    # the native-only problems (flag spellings, overridden variables) come from the file's text
    native_only = {"KV319", "KV320", "KV321", "KV322", "KV207", "KV206"}
    # the same findings; the native file's messages speak its own flags where the manifest's speak
    # fields (native_terms), so those are mapped back before comparing word for word
    from conftest import manifest_terms

    assert sorted((d["code"], d["severity"], manifest_terms(d["message"])) for d in native
                  if d["code"] not in native_only) == sorted(
        (d["code"], d["severity"], d["message"]) for d in manifest if d["code"] not in native_only)
