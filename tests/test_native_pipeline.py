"""Native deployment files in `kvlint check`, `capacity` and a directory walk."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from conftest import REPO_ROOT, invoke

NATIVE = REPO_ROOT / "tests" / "fixtures" / "native"

K8S = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: llama8b
spec:
  template:
    spec:
      nodeSelector:
        nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.19.1
          args:
            - --model=meta-llama/Llama-3.1-8B-Instruct
            - --kv-cache-dtype=fp8_e5m2
            - --max-model-len=32768
            - --gpu-memory-utilization=0.9
          resources:
            limits:
              nvidia.com/gpu: 1
"""

MANIFEST = """\
apiVersion: kvlint/v1
kind: Deployment
metadata:
  name: llama8b-vllm
engine:
  name: vllm
  version: "0.19.1"
hardware:
  gpu: H100-SXM-80GB
  count: 1
model:
  name: meta-llama/Llama-3.1-8B-Instruct
kv_cache:
  dtype: fp8_e5m2
memory:
  gpu_memory_utilization: 0.9
serving:
  max_model_len: 32768
"""


def _json(args, cwd: Path, monkeypatch):
    monkeypatch.chdir(cwd)
    result = invoke(args)
    assert "Traceback" not in result.output
    return result, json.loads(result.stdout)


def test_a_walk_reports_only_engine_workloads(tmp_path, monkeypatch):
    """Services, ConfigMaps, an nginx Deployment, a workflow and a Chart.yaml give nothing."""
    for name in ("k8s-mixed-no-engine.yaml", "k8s-deployment-args.yaml"):
        shutil.copy(NATIVE / name, tmp_path / name)
    (tmp_path / "Chart.yaml").write_text("apiVersion: v2\nname: x\nversion: 0.1.0\n", encoding="utf-8")
    (tmp_path / "ci.yml").write_text("on: push\njobs: {t: {runs-on: ubuntu-latest, steps: []}}\n", encoding="utf-8")
    (tmp_path / "kvlint.toml").write_text("# defaults\n", encoding="utf-8")
    result, report = _json(["check", "--output-format", "json", "."], tmp_path, monkeypatch)
    files = {d["file"] for d in report["diagnostics"]}
    assert files == {"k8s-deployment-args.yaml"}, report["diagnostics"]
    kv301 = [d for d in report["diagnostics"] if d["code"] == "KV301"]
    # The finding sits on the list item's value inside the Kubernetes file.
    assert [(d["line"], d["column"]) for d in kv301] == [(31, 32)]


def test_native_and_manifest_forms_agree(tmp_path, monkeypatch):
    (tmp_path / "kvlint.toml").write_text("# defaults\n", encoding="utf-8")
    (tmp_path / "k8s.yaml").write_text(K8S, encoding="utf-8")
    (tmp_path / "manifest.yaml").write_text(MANIFEST, encoding="utf-8")
    _, native = _json(["check", "--output-format", "json", "k8s.yaml"], tmp_path, monkeypatch)
    _, manifest = _json(["check", "--output-format", "json", "manifest.yaml"], tmp_path, monkeypatch)

    def findings(report):
        from conftest import manifest_terms

        return sorted((d["code"], manifest_terms(d["message"])) for d in report["diagnostics"])

    assert findings(native) == findings(manifest)
    assert ("KV301" in {code for code, _ in findings(native)})
    _, native_cap = _json(["capacity", "--format", "json", "k8s.yaml"], tmp_path, monkeypatch)
    _, manifest_cap = _json(["capacity", "--format", "json", "manifest.yaml"], tmp_path, monkeypatch)
    for key in ("per_token", "engine"):
        assert native_cap[0][key] == manifest_cap[0][key]


def test_native_formats_can_be_turned_off(tmp_path, monkeypatch):
    (tmp_path / "k8s.yaml").write_text(K8S, encoding="utf-8")
    (tmp_path / "kvlint.toml").write_text("native-formats = []\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    result = invoke(["check", "."])
    assert result.exit_code == 0
    assert "no manifests found" in result.stderr


def test_missing_facts_are_asked_for_not_guessed(tmp_path, monkeypatch):
    text = K8S.replace("      nodeSelector:\n        nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3\n", "")
    (tmp_path / "k8s.yaml").write_text(text, encoding="utf-8")
    (tmp_path / "kvlint.toml").write_text("# defaults\n", encoding="utf-8")
    _, report = _json(["check", "--output-format", "json", "k8s.yaml"], tmp_path, monkeypatch)
    codes = [d["code"] for d in report["diagnostics"]]
    assert codes.count("KV207") == 1 and "KV101" not in codes
    missing = next(d for d in report["diagnostics"] if d["code"] == "KV207")
    assert "kvlint.dev/gpu" in missing["message"] and "# kvlint: gpu=" in missing["message"]
    # The dtype check needs the GPU: it does not run, and nothing claims it passed.
    assert "KV301" not in codes


def test_a_suppression_comment_in_a_shell_script(tmp_path, monkeypatch):
    (tmp_path / "kvlint.toml").write_text("# defaults\n", encoding="utf-8")
    (tmp_path / "serve.sh").write_text(
        "#!/bin/sh\n# kvlint: gpu=H100-SXM-80GB engine-version=0.19.1\n"
        "# kvlint: ignore[KV301] -- e5m2 accepted for this benchmark\n"
        "vllm serve meta-llama/Llama-3.1-8B-Instruct --kv-cache-dtype fp8_e5m2\n",
        encoding="utf-8",
    )
    _, report = _json(["check", "--output-format", "json", "serve.sh"], tmp_path, monkeypatch)
    assert [d["code"] for d in report["diagnostics"]] == []


def test_hostile_native_input_is_a_finding(tmp_path, monkeypatch):
    (tmp_path / "kvlint.toml").write_text("# defaults\n", encoding="utf-8")
    many = " ".join(f"--x{i} {i}" for i in range(10_000))
    (tmp_path / "serve.sh").write_text(f"#!/bin/sh\nvllm serve m {many} --kv-cache-dtype 'fp8\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    result = invoke(["check", "--output-format", "json", "serve.sh"])
    assert result.exit_code == 1 and "Traceback" not in result.output
    codes = {d["code"] for d in json.loads(result.stdout)["diagnostics"]}
    assert {"KV005", "KV319"} <= codes


def test_convert_prints_a_manifest_that_checks_the_same(tmp_path, monkeypatch):
    (tmp_path / "kvlint.toml").write_text("# defaults\n", encoding="utf-8")
    (tmp_path / "k8s.yaml").write_text(K8S, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    converted = invoke(["convert", "k8s.yaml"])
    assert converted.exit_code == 0, converted.output
    assert "# container 'vllm' args[1]: --kv-cache-dtype" in converted.stdout
    (tmp_path / "converted.yaml").write_text(converted.stdout, encoding="utf-8")
    _, native = _json(["check", "--output-format", "json", "k8s.yaml"], tmp_path, monkeypatch)
    _, manifest = _json(["check", "--output-format", "json", "converted.yaml"], tmp_path, monkeypatch)
    # the same findings; the native file's messages speak its own flags where the manifest's speak
    # fields (native_terms), so those are mapped back before comparing word for word
    from conftest import manifest_terms

    assert sorted((d["code"], d["severity"], manifest_terms(d["message"])) for d in native["diagnostics"]) == sorted(
        (d["code"], d["severity"], d["message"]) for d in manifest["diagnostics"])


def test_the_configuration_schema_names_every_native_format():
    from kvlint.load import NATIVE_FORMATS

    schema = json.loads((REPO_ROOT / "schemas" / "config.json").read_text(encoding="utf-8"))
    assert tuple(schema["properties"]["native-formats"]["items"]["enum"]) == NATIVE_FORMATS


def test_defaults_in_the_configuration_supply_missing_facts(tmp_path, monkeypatch):
    """`[defaults]` by path glob fills what a native file does not say; the file's own value wins."""
    text = K8S.replace("      nodeSelector:\n        nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3\n", "")
    (tmp_path / "prod").mkdir()
    (tmp_path / "prod" / "k8s.yaml").write_text(text, encoding="utf-8")
    (tmp_path / "kvlint.toml").write_text(
        '[defaults]\n"prod/*" = { gpu = "H100-SXM-80GB", engine-version = "0.11.0" }\n', encoding="utf-8")
    _, report = _json(["check", "--output-format", "json", "prod/k8s.yaml"], tmp_path, monkeypatch)
    codes = [d["code"] for d in report["diagnostics"]]
    assert "KV207" not in codes and "KV301" in codes  # the dtype check runs on the default GPU
    kv301 = next(d for d in report["diagnostics"] if d["code"] == "KV301")
    assert "0.19.1" in kv301["message"]  # the image tag's release, not the default's
    converted = invoke(["convert", "prod/k8s.yaml"]).stdout
    assert "gpu: \"H100-SXM-80GB\"  # kvlint.toml [defaults] 'prod/*'" in converted


HELM_TEMPLATE = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "chart.fullname" . }}
spec:
  template:
    spec:
      containers:
        - name: vllm
          image: "vllm/vllm-openai:{{ .Values.image.tag }}"
          args:
            {{- toYaml .Values.args | nindent 12 }}
"""


def test_a_walk_leaves_helm_chart_templates_to_the_rendered_output(tmp_path, monkeypatch):
    """A chart's templates are not YAML until `helm template` renders them: a walk gives them no
    finding (no KV001 for template syntax); the rendered output on stdin is checked."""
    chart = tmp_path / "chart"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: chart\nversion: 0.1.0\n", encoding="utf-8")
    (chart / "values.yaml").write_text("image: {tag: v0.19.1}\nargs: [--kv-cache-dtype, fp8]\n", encoding="utf-8")
    (chart / "templates" / "deployment.yaml").write_text(HELM_TEMPLATE, encoding="utf-8")
    # `{{` under templates/ without a .Values action is a template too
    (chart / "templates" / "svc.yaml").write_text("apiVersion: v1\nkind: Service\nmetadata: {name: '{{ $name }}'}\n",
                                                  encoding="utf-8")
    (tmp_path / "k8s.yaml").write_text(K8S, encoding="utf-8")
    (tmp_path / "kvlint.toml").write_text("# defaults\n", encoding="utf-8")
    result, report = _json(["check", "--output-format", "json", "."], tmp_path, monkeypatch)
    assert {d["file"] for d in report["diagnostics"]} == {"k8s.yaml"}, report["diagnostics"]
    assert "KV001" not in {d["code"] for d in report["diagnostics"]}


def test_a_braced_value_outside_a_chart_is_still_read(tmp_path, monkeypatch):
    """Only Helm template actions or a templates/ directory mark a template: a workload whose
    argument merely contains braces (a JSON option) is read."""
    text = K8S.replace("            - --gpu-memory-utilization=0.9\n",
                       "            - --gpu-memory-utilization=0.9\n            - '--compilation-config={\"level\": 3}'\n")
    (tmp_path / "k8s.yaml").write_text(text, encoding="utf-8")
    (tmp_path / "kvlint.toml").write_text("# defaults\n", encoding="utf-8")
    _, report = _json(["check", "--output-format", "json", "."], tmp_path, monkeypatch)
    assert "KV301" in {d["code"] for d in report["diagnostics"]}


def test_a_helm_template_named_on_the_command_line_says_to_render_it(tmp_path, monkeypatch):
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "deployment.yaml").write_text(HELM_TEMPLATE, encoding="utf-8")
    (tmp_path / "kvlint.toml").write_text("# defaults\n", encoding="utf-8")
    result, report = _json(["check", "--output-format", "json", "templates/deployment.yaml"], tmp_path, monkeypatch)
    (finding,) = report["diagnostics"]
    line = HELM_TEMPLATE.splitlines().index('  name: {{ include "chart.fullname" . }}') + 1
    assert (finding["code"], finding["line"], finding["column"]) == ("KV005", line, len("  name: ") + 1)
    assert "helm template" in finding["message"] and result.exit_code == 1
    piped = invoke(["check", "--output-format", "json", "-"], input=HELM_TEMPLATE)
    assert [d["code"] for d in json.loads(piped.stdout)["diagnostics"]] == ["KV005"]
