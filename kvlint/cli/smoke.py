"""`kvlint smoke`: run the quantized KV kernels and prove nothing fell back."""

from __future__ import annotations

import json
import sys

import click

from kvlint.cli.options import write_output
from kvlint.cli.params import config_option, output_file_option, output_format_option
from kvlint.config import load_config


@click.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("--device", type=click.Choice(("auto", "cuda", "cpu")), default="auto", help="Where to run the kernels (default: CUDA when visible).")
@output_format_option(("text", "json"), "text", "Readable report or JSON")
@click.option("--layers", type=click.IntRange(min=1), default=None, help="Attention-check at most N layers per layer group.")
@output_file_option()
@config_option
def smoke(paths, device, fmt, layers, output_file, config_path):
    """Run the quantized KV kernels on the device and prove nothing fell back.

    llama.cpp and Ollama deployments create a real llama.cpp context on the CPU (llama-cpp-python,
    pip install 'kvcache-lint[llamacpp]') and compare its KV allocation and start-up with kvlint's prediction.

    Exit 0 passed, 1 failed, 2 usage or internal error, 3 could not run here.
    """
    # Imported on use: the smoke test is the only command that may load torch.
    from kvlint.pipeline.documents import deployment_analyses
    from kvlint.smoke import run_smoke

    config = load_config(config_path)
    analyses, problems = deployment_analyses(paths, config)
    for problem in problems:
        click.echo(f"kvlint smoke: {problem}", err=True)
    # llama.cpp / Ollama deployments run on the real engine (kvlint.smoke.llamacpp, CPU, no torch).
    from kvlint.smoke.llamacpp import GGML_ENGINES, run_llamacpp_smoke

    ggml = [(a.deployment, a.facts) for a in analyses if a.deployment is not None and a.deployment.engine in GGML_ENGINES]
    deployments = [
        a.deployment for a in analyses
        if a.deployment is not None and a.deployment.layers and a.deployment.engine not in GGML_ENGINES
    ]
    if ggml and not deployments:
        code, text = run_llamacpp_smoke(ggml, fmt)
        write_output(text.rstrip("\n") + "\n", output_file)
        sys.exit(code)
    outcome = run_smoke(deployments, device=device, layers=layers, fmt=fmt)
    if not ggml:
        write_output(outcome.text.rstrip("\n") + "\n", output_file)
        sys.exit(outcome.exit_code)
    code, text = run_llamacpp_smoke(ggml, fmt)
    if fmt == "json":
        document = json.loads(outcome.text)
        document["llamacpp"] = json.loads(text)
        text = json.dumps(document, indent=2)
    else:
        text = outcome.text.rstrip("\n") + "\n" + text
    codes = {outcome.exit_code, code}
    final = next(c for c in (2, 1, 3, 0) if c in codes)
    write_output(text.rstrip("\n") + "\n", output_file)
    sys.exit(final)
