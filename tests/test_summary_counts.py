"""The summary counts engine workloads as documents and files that hold one (or a finding) as
checked files: a Kubernetes file of Services and ConfigMaps only is not a checked file."""

from __future__ import annotations

import json

from conftest import REPO_ROOT, VALID_MANIFEST

WORKLOAD = (REPO_ROOT / "examples" / "kubernetes" / "llama70b-vllm.yaml").read_text(encoding="utf-8")
SERVICES = """\
apiVersion: v1
kind: Service
metadata:
  name: vllm
spec:
  ports: [{port: 8000}]
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data: {a: b}
"""


def _summary(cli, *args):
    result = cli(["check", "--output-format", "json", *args])
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)["summary"], result


def test_services_and_configmaps_are_not_checked_files(workspace, write, cli):
    write("deploy/workload.yaml", WORKLOAD)  # a Deployment (the workload) and its Service
    write("deploy/services.yaml", SERVICES)
    summary, _ = _summary(cli)
    assert (summary["files"], summary["documents"]) == (1, 1)
    text = cli(["check", "--output-format", "concise"]).stdout.splitlines()[-1]
    assert text.endswith("in 1 file (1 document).") or text.endswith("(1 document in 1 file).")


def test_a_services_file_alone_checks_nothing(workspace, write, cli):
    write("services.yaml", SERVICES)
    summary, result = _summary(cli, "services.yaml")
    assert (summary["files"], summary["documents"]) == (0, 0)
    assert "no manifests found" in result.stderr and "Kubernetes workloads" in result.stderr


def test_files_with_findings_count_without_a_workload(workspace, write, cli):
    write("broken.yaml", "apiVersion: kvlint/v1\nkind: [\n")
    write("ok.yaml", VALID_MANIFEST)
    summary, _ = _summary(cli)
    assert summary["files"] == 2 and summary["documents"] == 1 and summary["errors"] >= 1
