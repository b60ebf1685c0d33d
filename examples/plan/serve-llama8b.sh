#!/bin/sh
# Llama 3.1 8B on one H100 with vLLM 0.19.1: the deployment docs/plan.md improves with
# `kvlint plan examples/plan/serve-llama8b.sh --concurrency 24`.
# kvlint: gpu=H100-SXM-80GB engine-version=0.19.1
exec vllm serve meta-llama/Llama-3.1-8B-Instruct \
  --max-model-len 32768 \
  --gpu-memory-utilization 0.90
