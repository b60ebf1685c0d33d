"""`kvlint convert` of an unrendered Helm chart template says to render it first (task E,
item 6), detected as `kvlint check` detects templates (kvlint.pipeline.native): a one-line
error, exit 2, instead of "no engine workload found" and exit 0. The rendered output of the
same template (what `helm template` prints: the actions replaced by values) converts."""

from __future__ import annotations

from conftest import CliRunner

from kvlint.cli.app import main

# A chart's templates/deployment.yaml, as Helm charts write them (Go template actions).
TEMPLATE = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-vllm
spec:
  template:
    spec:
      containers:
        - name: vllm
          image: "vllm/vllm-openai:{{ .Values.image.tag }}"
          args: ["--model", "{{ .Values.model }}", "--kv-cache-dtype", "fp8"]
          resources:
            limits:
              nvidia.com/gpu: 1
      nodeSelector:
        nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3
"""
RENDERED = (TEMPLATE.replace("{{ .Release.Name }}", "prod").replace("{{ .Values.image.tag }}", "v0.19.1")
            .replace("{{ .Values.model }}", "meta-llama/Llama-3.1-8B-Instruct"))


def _convert(args, stdin=None):
    return CliRunner().invoke(main, ["convert", *args], input=stdin)


def test_template_file_says_render_it_first(tmp_path):
    path = tmp_path / "chart" / "templates" / "deployment.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(TEMPLATE)
    result = _convert([str(path)])
    assert result.exit_code == 2
    assert "no engine workload found" not in result.output
    assert "Helm chart template" in result.output
    assert "helm template RELEASE CHART | kvlint convert -" in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_template_on_stdin_says_render_it_first():
    result = _convert(["-"], stdin=TEMPLATE)
    assert result.exit_code == 2
    assert "helm template RELEASE CHART | kvlint convert -" in result.output


def test_rendered_output_converts():
    result = _convert(["-"], stdin=RENDERED)
    assert result.exit_code in (0, 1), result.output  # 1: a fact is missing (listed as such)
    assert 'dtype: "fp8"' in result.output
    assert '"0.19.1"' in result.output
