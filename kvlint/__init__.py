"""kvlint: a linter and CI gate for LLM-serving deployments with a quantized KV cache."""

__version__ = "0.1.0"
