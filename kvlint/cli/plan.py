"""`kvlint plan`: search the KV-cache configurations of a deployment and write the best one."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from kvlint.cli.options import EXIT_FINDINGS, EXIT_OK, build_context, load_settings, write_output
from kvlint.cli.params import config_option, output_file_option, output_format_option
from kvlint.errors import UsageError

EMIT_FORMS = ("manifest", "vllm", "sglang", "llama-server", "patch")


@click.command()
@click.argument("path", required=False, type=click.Path(dir_okay=False))
@click.option("--model", help="Hugging Face model id (looked up in the model catalog).")
@click.option("--model-config", type=click.Path(dir_okay=False), help="The model's config.json (wins over the catalog).")
@click.option("--weights", help="The checkpoint's size (15GB, 16.1GiB) when the model catalog does not have it.")
@click.option("--gpu", help="GPU: a catalog id or alias (H100-SXM-80GB, h100, MI300X).")
@click.option("--gpus", "gpu_count", type=click.IntRange(1, 1024), default=1, show_default=True,
              help="GPUs per replica; tensor x pipeline factorizations of it are searched.")
@click.option("--engine", type=click.Choice(("vllm", "sglang", "tensorrt-llm", "llama.cpp")), default="vllm", show_default=True)
@click.option("--release", default=None,
              help="Engine release, or `newest` (the newest catalogued; default for a new deployment). "
                   "With FILE: plan the file on another release.")
@click.option("--context", type=click.IntRange(min=1), help="Target context length (max_model_len).")
@click.option("--concurrency", type=click.FloatRange(min=0), help="Target: sequences of the context that fit at once.")
@click.option("--kv-tokens", type=click.IntRange(min=0), help="Target: KV tokens the pool must hold.")
@click.option("--checkpoint-kv-scales", type=click.Choice(("none", "per-tensor", "per-head")),
              help="The KV scales the checkpoint carries (model.kv_scales; default: the catalog's or the file's).")
@click.option("--emit", "emit_form", type=click.Choice(EMIT_FORMS), default=None,
              help="What to write for the chosen configuration: a kvlint/v1 manifest (default for a new "
                   "deployment), a vllm, sglang or llama-server command line, or a patch to FILE (default with FILE).")
@output_format_option(("text", "markdown", "json"), "text", "text, markdown (job summary, PR comment) or json")
@output_file_option(help="Write the chosen configuration here (the report stays on stdout); never FILE itself.")
@click.option("--kv-cache-dtype", "dtypes", multiple=True, help="Search only this cache dtype (repeatable).")
@click.option("--attention-backend", "backends", multiple=True,
              help="Search only this attention backend, or auto (repeatable).")
@click.option("--max-candidates", type=click.IntRange(min=1), default=None,
              help="Stop after this many candidates (the search space is enumerated in a fixed order).")
@config_option
def plan(path, model, model_config, weights, gpu, gpu_count, engine, release, context, concurrency, kv_tokens,
         checkpoint_kv_scales, emit_form, fmt, output_file, dtypes, backends, max_candidates, config_path):
    """Search the KV-cache configurations of a deployment and write the best one.

    Either the facts of a new deployment (--model or --model-config, --gpu, --gpus, --engine,
    --release) or FILE, an existing deployment (a kvlint manifest or a native file kvlint reads)
    whose configuration is the baseline row. Every candidate (cache dtype, scales, attention
    backend, skip set, block size, tensor/pipeline split, context, memory fraction) is judged by
    the same rules, defect catalog and capacity model as `kvlint check`; candidates with an
    error are dropped, the rest ranked on KV capacity against the targets and on risk.

    Exit 0 when a configuration passes (and meets the targets), 1 when none does, none meets
    the targets or the capacity is unknown, 2 on a usage error.
    """
    # Imported on use: only this command searches; `kvlint check` never loads kvlint.plan.
    from kvlint.plan.emit import emit
    from kvlint.plan.request import request_from_file, request_from_options
    from kvlint.plan.run import dumps, plan as run_plan, result_json
    from kvlint.plan.search import Targets
    from kvlint.report.plan_report import render_markdown, render_text

    config = load_settings(config_path)
    context_ = build_context(config)
    targets = Targets(context=context, concurrency=concurrency, kv_tokens=kv_tokens)
    if path is not None:
        if model or model_config or gpu or weights:
            raise UsageError("with FILE the model and GPU are the file's; drop --model/--model-config/--weights/--gpu")
        pinned = None
        if release is not None:
            pinned = request_from_file(path, targets, checkpoint_kv_scales, config).release
        request = request_from_file(path, targets, checkpoint_kv_scales, config, release=release)
        form = emit_form or ("manifest" if request.source_format == "kvlint" else "patch")
        if form == "patch" and pinned is not None and pinned != request.release:
            raise UsageError(f"--release {request.release}: {path} pins {request.engine} {pinned}, which a patch of "
                             "engine flags cannot change; use --emit manifest (or a command line)")
    else:
        if not gpu:
            raise UsageError("give the GPU: --gpu (a catalog id such as H100-SXM-80GB), or plan an existing FILE")
        request = request_from_options(model, model_config, gpu, gpu_count, engine, release or "newest", targets,
                                       checkpoint_kv_scales, config, weights=weights)
        form = emit_form or "manifest"
        if form == "patch":
            raise UsageError("--emit patch needs FILE, the deployment to patch")
    if output_file is not None and path is not None and Path(output_file).resolve() == Path(path).resolve():
        raise UsageError(f"--output-file {output_file} is the file being planned; kvlint never modifies its input")
    result, manifest = run_plan(request, config, context_.rulebook, context_.enabled, limit=max_candidates,
                               dtypes=dtypes, backends=backends)
    emitted = None
    if manifest is not None:
        header = (f"Written by kvlint plan ({result.engine} {result.release}): {result.chosen.candidate.label()}\n"
                  "Every setting was judged by kvlint check's rules and capacity model.")
        source_text = None
        if form == "patch":
            source_text = Path(path).read_text(encoding="utf-8")
        else:  # model.config is relative to the file written (or to the current directory)
            from kvlint.ablation.check import rebase_model_config

            source_dir = request.manifest_path.parent if request.manifest_path is not None else Path.cwd()
            rebase_model_config(manifest, source_dir, Path(output_file).parent if output_file else Path.cwd())
        emitted = emit(form, manifest, request.engine, request.release, header, source_text=source_text,
                       document=request.document, baseline=request.base, path=path or "")
    if fmt == "json":
        report = dumps(result_json(result, emitted if output_file is None else None))
    elif fmt == "markdown":
        report = render_markdown(result, emitted, output_file)
    else:
        report = render_text(result, emitted, output_file)
    if output_file is not None and emitted is not None:
        write_output(emitted, output_file)
    write_output(report, None)
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary and fmt == "markdown":
        with open(summary, "a", encoding="utf-8") as handle:
            handle.write(render_markdown(result, emitted, output_file))
    met = result.chosen is not None and result.chosen.meets in ("yes", None)
    sys.exit(EXIT_OK if manifest is not None and met else EXIT_FINDINGS)
