"""gpt-oss's MXFP4 MoE experts as vLLM holds them on the GPU, against the checkpoint's bytes.

The model catalog sizes gpt-oss's weights as the checkpoint stores them (expert weights at 4 bits
plus one E8M0 scale per 32, bf16 biases). vLLM does not keep that layout: `Mxfp4MoEMethod` pads the
expert dimensions for the MoE kernel it picks and `process_weights_after_loading` converts the
tensors, and "Model loading took" (the weights vLLM subtracts from the KV budget) counts what
stays. Per MoE layer and GPU, with E experts, hidden H and the tensor-parallel share I = 2880 / tp
of intermediate_size, rounded up as below (Hp, Ip):

* Marlin (every CUDA GPU below SM90; SM90 on 0.10.x and, without the optional triton_kernels
  package, 0.11.x): Ip = roundup(I, 128), Hp = roundup(H, 256)
  (quantization/mxfp4.py `Mxfp4MoEMethod.create_weights` L187-206 v0.11.0; fused_moe/oracle/
  mxfp4.py `mxfp4_round_up_hidden_size_and_intermediate_size` L380-385 v0.19.0). The repack keeps
  the bytes (utils/marlin_utils_fp4.py `prepare_moe_fp4_layer_for_marlin` L195-297 v0.11.0,
  `prepare_moe_mxfp4_layer_for_marlin` L520-631 v0.19.0): w13 E x 2Ip x Hp/2 B, its E8M0 scales
  E x 2Ip x Hp/32 B, bf16 bias E x 2Ip x 2 B; w2 E x Hp x Ip/2, scales E x Hp x Ip/32, bias E x Hp x 2.
  gpt-oss-120b at tp 1: H 2880 -> 3072 and I 2880 -> 2944, +9.0% on the experts.
* Triton / triton_kernels matmul_ogs (SM90 from 0.12, which vendors triton_kernels; 0.11.x where
  triton_kernels is installed): Ip = roundup(I, 64), Hp = H (mxfp4.py L224-226 v0.11.0; oracle
  L398-399 v0.19.0). `_swizzle_mxfp4` (utils/mxfp4_utils.py L16-64 v0.11.0, L22-90 v0.19.0)
  writes Hopper-swizzled copies of the weights (HopperMXValueLayout: the packed K dimension padded
  to 64 first from 0.17 to 0.19, then M to 16 and K to 32 bytes) and of the scales
  (HopperMXScaleLayout, num_warps 8: rows padded to 256, columns to 2); the loaded weights are
  deleted (`del layer.w13_weight`, mxfp4.py L613-616 v0.11.0, oracle L744-745 v0.19.0) but the
  loaded scale parameters stay registered on the layer (never replaced for Triton: mxfp4.py
  L599-611 v0.11.0, L299-308 v0.19.0), and the biases become float32 (L581-585 v0.11.0, oracle
  L725-726 v0.19.0). gpt-oss-120b at tp 1: +6.2% on the experts (+8.3% on 0.17-0.19).
* FlashInfer TRT-LLM (SM100 with flashinfer installed: a dependency from 0.11.1, an extra of
  0.11.0): Ip = roundup(I, 256), Hp = roundup(H, 256) (mxfp4.py L207-214 v0.11.0, oracle L386-388
  v0.19.0); the shuffles reshape back to those shapes, the biases become float32 (L351-352, L463-468
  v0.11.0; oracle L457-458 v0.19.0). gpt-oss-120b at tp 1: +13.9%.
* FlashInfer CUTLASS BF16 on SM90 (VLLM_USE_FLASHINFER_MOE_MXFP4_BF16=1): 128 / 128, bf16 biases.

The expected bytes per layer in tests/test_capacity_mxfp4_layout.py are the release's own
create_weights and layout code run on the meta device (tools/derive/vllm_mxfp4_probe.py ->
tools/derive/tables/vllm_mxfp4_moe/<release>.json), not this module's arithmetic.

kvlint's catalog gives the checkpoint's bytes split evenly over tp; the term is what vLLM holds
per GPU less that share of the experts (w2's bias is whole on every rank). Which backend each GPU
family takes and the Triton details per release are the engine catalog's `mxfp4_moe_layout`
(rules/catalog/engines/vllm.yaml, from each wheel; releases before 0.11 take 0.11.0's). Releases
the catalog gives no such fact (from 0.26, whose MoE code was reorganised), SM100 on 0.11.0,
SM110/SM120, ROCm, and a manifest that states its own model.weights get no term (said in a note).
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

from kvlint.deployment import Deployment
from kvlint.records import dataclass

GiB = 1 << 30

# config.json of each checkpoint: num_hidden_layers, num_local_experts, hidden_size,
# intermediate_size, vocab_size, num_attention_heads, num_key_value_heads, head_dim
# (https://huggingface.co/openai/gpt-oss-120b/blob/main/config.json,
# https://huggingface.co/openai/gpt-oss-20b/blob/main/config.json).
@dataclass(frozen=True)
class MoeDims:
    layers: int
    experts: int
    hidden: int = 2880
    intermediate: int = 2880
    vocab: int = 201088
    heads: int = 64
    kv_heads: int = 8
    head_dim: int = 64

    def checkpoint_bytes(self) -> int:
        """The whole checkpoint: the experts as stored plus every other parameter in bf16 (untied
        embedding and lm_head, q/k/v/o with biases, sinks, two norms and the router per layer, the
        final norm). The model catalog's figure for the same model; the term applies only to it."""
        h, q, kv = self.hidden, self.heads * self.head_dim, self.kv_heads * self.head_dim
        per_layer = (q + 2 * kv) * (h + 1) + q * h + h + self.heads + 2 * h + self.experts * (h + 1)
        return self.layers * checkpoint_layer_bytes(self) + 2 * (2 * self.vocab * h + self.layers * per_layer + h)


GPT_OSS_MXFP4 = {
    "openai/gpt-oss-120b": MoeDims(layers=36, experts=128),
    "openai/gpt-oss-20b": MoeDims(layers=24, experts=32),
}


def _up(x: int, m: int) -> int:
    return -(-x // m) * m


def checkpoint_layer_bytes(d: MoeDims) -> int:
    """One MoE layer's experts as the checkpoint stores them (all ranks)."""
    e, h, i = d.experts, d.hidden, d.intermediate
    return e * (2 * i * h // 2 + 2 * i * h // 32 + 2 * i * 2 + h * i // 2 + h * i // 32 + h * 2)


def layer_bytes(d: MoeDims, tp: int, backend: str, hopper_prepad: bool = False, keeps_scales: bool = True) -> int:
    """One MoE layer's experts as vLLM keeps them on one GPU (module docstring)."""
    e, h, i = d.experts, d.hidden, d.intermediate // tp
    if backend == "marlin":
        ip, hp, bias = _up(i, 128), _up(h, 256), 2
    elif backend == "flashinfer_trtllm":
        ip, hp, bias = _up(i, 256), _up(h, 256), 4
    elif backend == "flashinfer_cutlass":
        ip, hp, bias = _up(i, 128), _up(h, 128), 2
    elif backend == "triton":
        ip, hp = _up(i, 64), h
        total = 0
        # (rows, packed K bytes) of w13 and w2 as the value layout sees them after its transpose
        for m, k in ((2 * ip, hp // 2), (hp, ip // 2)):
            if hopper_prepad:
                m, k = _up(m, 64), _up(k, 64)
            total += e * _up(m, 16) * _up(k, 32)  # swizzled weights
        for m, k in ((2 * ip, hp // 32), (hp, ip // 32)):
            total += e * _up(m, 256) * _up(k, 2)  # swizzled scales
            if keeps_scales:
                total += e * m * k  # the loaded scale parameter, still on the layer
        return total + e * (2 * ip + hp) * 4  # float32 biases
    else:
        raise ValueError(backend)
    return e * (2 * ip * hp // 2 + 2 * ip * hp // 32 + 2 * ip * bias + hp * ip // 2 + hp * ip // 32 + hp * bias)


def backends(deployment: Deployment) -> Tuple[Optional[str], Tuple[str, ...], str, Dict[str, Any]]:
    """(the backend taken, other backends the install can give, why, the release's layout fact)
    from the engine catalog's `mxfp4_moe_layout`; backend None where the layout is not modelled."""
    fact = deployment.release_default("mxfp4_moe_layout") or {}
    cc = deployment.gpu.compute_capability if deployment.gpu else None
    if not fact:
        return None, (), f"vLLM {deployment.engine_version}'s MXFP4 MoE code is not catalogued", fact
    if cc is None:
        return None, (), "the GPU's compute capability is unknown", fact
    if deployment.env_flag(fact.get("marlin_env")):
        return "marlin", (), f"{fact['marlin_env']}=1", fact
    if cc[0] == 9 and deployment.env_flag(fact.get("sm90_flashinfer_env")):
        return "flashinfer_cutlass", (), f"{fact['sm90_flashinfer_env']}=1 on SM90 takes FlashInfer CUTLASS", fact
    for rule in fact.get("by_sm") or ():
        if ("below" in rule and cc[0] < rule["below"]) or rule.get("major") == cc[0]:
            why = rule.get("why") or f"SM{cc[0]}{cc[1]} takes {rule.get('backend')}"
            return rule.get("backend"), tuple(rule.get("install_alternatives") or ()), why, fact
    return None, (), f"SM{cc[0]}{cc[1]}'s MXFP4 MoE backend is not modelled", fact


def vllm_mxfp4_moe(deployment: Deployment) -> Tuple[int, Optional[Tuple[float, float, str]], str]:
    """(bytes per GPU vLLM holds beyond the catalog's even share of the checkpoint, band term on the
    pool or None, sentence); (0, None, "") for a model this does not apply to."""
    model = deployment.model
    dims = GPT_OSS_MXFP4.get(model.name.lower()) if model is not None else None
    if dims is None or not _catalog_weights(deployment, dims):
        return 0, None, ""
    backend, others, why, fact = backends(deployment)
    if backend is None:
        return 0, None, f"vLLM's layout of the MXFP4 experts is not modelled ({why}): weights are the checkpoint's"
    tp, pp = max(1, deployment.tensor_parallel), max(1, deployment.pipeline_parallel)
    layers = -(-dims.layers // pp)
    share = checkpoint_layer_bytes(dims) * layers // tp
    prepad, keeps = fact.get("hopper_value_prepad"), bool(fact.get("triton_keeps_loaded_scales", True))
    if prepad is None and (backend == "triton" or "triton" in others):
        # the release's Hopper value layout was not read: padded taken, unpadded in the band
        prepad, others = True, others + ("triton_no_prepad",)
        why += "; whether its Hopper value layout pads to 64 first was not read (taken: it does)"

    def held(b: str) -> int:
        name, pad = ("triton", False) if b == "triton_no_prepad" else (b, bool(prepad))
        return layers * layer_bytes(dims, tp, name, pad, keeps)

    extra = held(backend) - share
    band = None
    if others:
        alt = [held(b) - share - extra for b in others]
        low, high = -max(0, max(alt)), -min(0, min(alt))
        band = (float(low), float(high), (
            f"the MXFP4 experts' layout is not settled by the manifest ({why}): pool "
            f"{low / GiB:+.2f}..{high / GiB:+.2f} GiB"))
    return extra, band, (f"plus {extra / GiB:.2f} GiB for vLLM's {backend} layout of the MXFP4 experts "
                         f"({why}; padded and converted tensors, kvlint/capacity/vllm_mxfp4.py)")


def _catalog_weights(deployment: Deployment, dims: MoeDims) -> bool:
    """True when the weights are the MXFP4 checkpoint's (the catalog's figure), not a figure the
    manifest states (model.weights) or another checkpoint of the same name."""
    return deployment.memory.weights_bytes == dims.checkpoint_bytes()
