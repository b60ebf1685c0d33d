"""SGLang's weight-load memory wired into its KV pool: `kvlint capacity` on QwQ-32B as the real
start-up of benchmarks/capacity_logs/sglang-l4x4-qwq-32b.yaml (SGLang 0.4.3.post4, 4 x L4) ran it,
against the "mem usage" that log printed; with the model's widths missing or a checkpoint of another
size, kvlint keeps params x dtype and says why."""

from __future__ import annotations

import json

GiB = 1 << 30

QWQ_MANIFEST = """\
apiVersion: kvlint/v1
kind: Deployment
metadata: {{name: qwq}}
engine: {{name: sglang, version: 0.4.3.post4}}
hardware: {{gpu: L4-24GB, count: 4}}
parallelism: {{tensor: 4}}
model:
  name: Qwen/QwQ-32B
  geometry: {{num_layers: 64, num_attention_heads: 40, num_kv_heads: 8, head_dim: 128,
             max_position_embeddings: 131072, vocab_size: 152064{dims}}}
  weights: {{params: {params}, dtype: {dtype}}}
kv_cache: {{dtype: auto}}
serving: {{max_model_len: 131072}}
"""


def _capacity(tmp_path, dims=", hidden_size: 5120, intermediate_size: 27648", params=32_763_876_352,
              dtype="bf16"):
    from conftest import CliRunner

    from kvlint.cli import main

    path = tmp_path / "qwq.yaml"
    path.write_text(QWQ_MANIFEST.format(dims=dims, params=params, dtype=dtype))
    result = CliRunner().invoke(main, ["capacity", "--format", "json", str(path)])
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)[0]


def test_sglang_pool_subtracts_what_the_load_holds(tmp_path):
    entry = _capacity(tmp_path)
    weights = entry["engine"]["pool_terms"]["weights"]
    assert abs(weights / GiB - 15.54) <= 0.005  # the log's "mem usage=15.54 GB"
    assert any("float32 rotary cos/sin cache (64 MiB" in a for a in entry["assumptions"])
    plain = _capacity(tmp_path, dims="")
    assert plain["engine"]["pool_terms"]["weights"] == 2 * 32_763_876_352 // 4
    assert any("lacks hidden_size, intermediate_size" in a for a in plain["assumptions"])
    # the difference is all in the pool: same device, fraction and baseline
    assert (plain["engine"]["pool_bytes_per_gpu"] - entry["engine"]["pool_bytes_per_gpu"]
            == weights - plain["engine"]["pool_terms"]["weights"])


def test_a_checkpoint_of_another_size_keeps_params_x_dtype(tmp_path):
    # an int4 checkpoint of the same geometry: not this dense 16-bit layout, so not modelled
    entry = _capacity(tmp_path, dtype="int4")
    assert entry["engine"]["pool_terms"]["weights"] == -(-32_763_876_352 // 2 // 4)
    assert any("not that of a dense Qwen2/Llama-style 16-bit model" in a for a in entry["assumptions"])


def test_the_widths_come_from_config_json_too(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the config must lie inside the project kvlint reads from
    # model.config: config.json's hidden_size / intermediate_size reach the term (vocab_size from
    # model.geometry, which overrides the config's geometry field by field)
    config = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 5120,
              "intermediate_size": 27648, "num_hidden_layers": 64, "num_attention_heads": 40,
              "num_key_value_heads": 8, "max_position_embeddings": 131072, "vocab_size": 152064,
              "tie_word_embeddings": False, "torch_dtype": "bfloat16"}
    (tmp_path / "config.json").write_text(json.dumps(config))
    from conftest import CliRunner

    from kvlint.cli import main

    path = tmp_path / "qwq.yaml"
    path.write_text(QWQ_MANIFEST.replace(
        "  geometry: {{num_layers: 64, num_attention_heads: 40, num_kv_heads: 8, head_dim: 128,\n"
        "             max_position_embeddings: 131072, vocab_size: 152064{dims}}}\n",
        "  config: config.json\n  geometry: {{vocab_size: 152064}}\n").format(params=32_763_876_352, dtype="bf16"))
    result = CliRunner().invoke(main, ["capacity", "--format", "json", str(path)])
    assert result.exit_code in (0, 1), result.output
    weights = json.loads(result.stdout)[0]["engine"]["pool_terms"]["weights"]
    assert abs(weights / GiB - 15.54) <= 0.005
