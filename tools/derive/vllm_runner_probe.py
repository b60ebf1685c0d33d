"""Runs one vLLM release's own model-runner choice (vllm/config/vllm.py `use_v2_model_runner` and,
where the release has it, `_is_default_v2_model_runner_model`) for the architectures of kvlint's
model catalog, for tests/test_capacity_sampler_runner.py.

    .venv/bin/python tools/derive/vllm_runner_probe.py tools/derive/.cache/vllm-0.2*.* ...

writes tools/derive/tables/vllm_model_runner.json, one entry per release (each release in its own
process: their modules cannot share one interpreter).

The root is an extracted wheel (`wheels.fetch_release_source`). The release's module is imported
under tools/derive/stubs.py (sm90, CUDA) and its methods are called unbound on a stand-in for the
VllmConfig that carries only what they read: the model config's runner type, architectures and
is_moe / is_quantized / is_hybrid / is_attention_free flags (from each architecture's config.json:
experts or not), no speculative config, no unsupported features, VLLM_USE_V2_MODEL_RUNNER unset.
So the answer is the release's default for a plain `vllm serve` of that model; the features that
send a release back to V1 (speculative methods, prefill context parallel, ...) are not exercised.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from types import SimpleNamespace

HERE = Path(__file__).resolve().parent

# architecture -> has experts (config.json num_local_experts / num_experts / n_routed_experts > 0)
ARCHITECTURES = {
    "LlamaForCausalLM": False, "MistralForCausalLM": False, "Qwen2ForCausalLM": False, "Qwen3ForCausalLM": False,
    "Gemma2ForCausalLM": False, "Gemma3ForCausalLM": False, "Gemma3ForConditionalGeneration": False,
    "Phi3ForCausalLM": False,
    "MixtralForCausalLM": True, "Qwen2MoeForCausalLM": True, "Qwen3MoeForCausalLM": True, "DeepseekV2ForCausalLM": True,
    "DeepseekV3ForCausalLM": True, "GptOssForCausalLM": True, "Llama4ForConditionalGeneration": True,
    "GraniteMoeForCausalLM": True,
}


def _stand_in(cls, arch: str, moe: bool, quantized: bool):
    model = SimpleNamespace(runner_type="generate", architectures=[arch], is_moe=moe, is_quantized=quantized,
                            is_hybrid=False, is_attention_free=False, is_diffusion=False,
                            hf_config=SimpleNamespace())
    parallel = SimpleNamespace(prefill_context_parallel_size=1, decode_context_parallel_size=1,
                               pipeline_parallel_size=1, tensor_parallel_size=1, data_parallel_size=1,
                               enable_dbo=False, use_ubatching=False, distributed_executor_backend="mp")
    this = SimpleNamespace(model_config=model, speculative_config=None, parallel_config=parallel,
                           attention_config=SimpleNamespace(hisparse_config=None), watermark_config=None)
    # the release's own private helpers (the default-architecture rule, the speculative-decoding
    # checks, which see no speculative config), bound to the stand-in
    for name, member in vars(cls).items():
        if name.startswith("_") and not name.startswith("__") and callable(member):
            setattr(this, name, member.__get__(this))
    this._get_v2_model_runner_unsupported_features = lambda: []
    return this


def _deps(root: Path) -> Path:
    """The dependency dir whose transformers the release accepts (README: deps, deps-tf5)."""
    version = next(Path(root).glob("vllm-*.dist-info")).name[len("vllm-"):-len(".dist-info")]
    major_minor = tuple(int(x) for x in version.split(".")[:2])
    return HERE / ".cache" / ("deps-tf5" if major_minor >= (0, 24) else "deps")


def main(root: Path) -> dict:
    sys.path[:0] = [str(root), str(HERE), str(_deps(root))]
    os.environ.pop("VLLM_USE_V2_MODEL_RUNNER", None)
    import stubs

    stubs.install(root, stubs.DEVICES["sm90"])
    stubs.set_platform(stubs.DEVICES["sm90"])
    import vllm.config.vllm as config_module
    from vllm.config.vllm import VllmConfig

    # triton is a dependency of every CUDA install of these releases (the wheel's Requires-Dist);
    # this CPU machine has none, and the release falls back to V1 without it
    if hasattr(config_module, "HAS_TRITON"):
        config_module.HAS_TRITON = True

    version = next(Path(root).glob("vllm-*.dist-info")).name[len("vllm-"):-len(".dist-info")]
    out = {"generator": "tools/derive/vllm_runner_probe.py", "vllm": version,
           "what": "VllmConfig.use_v2_model_runner for a plain generate model of each architecture (CUDA, sm90)",
           "has_use_v2_model_runner": hasattr(VllmConfig, "use_v2_model_runner"), "cases": {}}
    if not out["has_use_v2_model_runner"]:
        return out
    prop = VllmConfig.use_v2_model_runner
    for arch, moe in ARCHITECTURES.items():
        row = {}
        for quantized in (False, True):
            row["quantized" if quantized else "unquantized"] = bool(prop.fget(_stand_in(VllmConfig, arch, moe, quantized)))
        out["cases"][arch] = {"moe": moe, **row}
    return out


TABLE = HERE / "tables" / "vllm_model_runner.json"


if __name__ == "__main__":
    if sys.argv[1] == "--one":
        Path(sys.argv[3]).write_text(json.dumps(main(Path(sys.argv[2]).resolve())))
        sys.exit(0)
    import subprocess
    import tempfile

    releases = {}
    for root in sys.argv[1:]:
        with tempfile.NamedTemporaryFile(suffix=".json") as tmp:
            subprocess.run([sys.executable, __file__, "--one", root, tmp.name], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            result = json.loads(Path(tmp.name).read_text())
        releases[result.pop("vllm")] = result
    ordered = dict(sorted(releases.items(), key=lambda kv: tuple(int(x) for x in kv[0].split("."))))
    TABLE.write_text(json.dumps({"generator": "tools/derive/vllm_runner_probe.py",
                                 "what": "VllmConfig.use_v2_model_runner for a plain generate model of each "
                                         "architecture (CUDA, sm90, Triton present, no unsupported feature)",
                                 "releases": ordered}, indent=1) + "\n")
