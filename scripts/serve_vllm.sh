#!/usr/bin/env bash
# Serve the paper's models with vLLM behind an OpenAI-compatible API, then check that the
# audio we send actually reaches the model.
#
#   scripts/serve_vllm.sh omni     # Qwen/Qwen3-Omni-30B-A3B-Instruct (planner + answerer, audio)
#   scripts/serve_vllm.sh text     # Qwen/Qwen3-30B-A3B-Instruct-2507-FP8 (text-only planner)
#   scripts/serve_vllm.sh check    # probe a running server: audio tokens grow with clip length
#
# Environment: PORT (default 8091, = params.yaml llm.base_url), TP (tensor parallel size;
# default 2 for omni as in the paper, 1 for text), MAX_LEN, GPU_UTIL, HF_HOME (weights cache).
# vLLM is not a harp_lib dependency: install it in its own environment on the GPU machine
# (pip install "vllm>=0.11" -- Qwen3-Omni support; check the model card for the exact version).
set -euo pipefail

MODE="${1:-omni}"
PORT="${PORT:-8091}"
export PYTORCH_CUDA_ALLOC_CONF="${PYTORCH_CUDA_ALLOC_CONF:-expandable_segments:True}"
HERE="$(cd "$(dirname "$0")/.." && pwd)"
PY="${PY:-$HERE/.venv/bin/python}"

case "$MODE" in
  omni)
    MODEL="${MODEL:-Qwen/Qwen3-Omni-30B-A3B-Instruct}"
    # 32k context holds: plan/answer prompt + 2 reference snippets + up to ~6 sets x 120 s of
    # 16 kHz audio at 12.5 audio tokens/s (~1500 tokens per 120 s clip).
    # --limit-mm-per-prompt: up to 8 audio parts per request (6 sets + A/B/E snippets).
    exec vllm serve "$MODEL" --port "$PORT" \
      --tensor-parallel-size "${TP:-2}" --max-model-len "${MAX_LEN:-32768}" \
      --gpu-memory-utilization "${GPU_UTIL:-0.90}" \
      --limit-mm-per-prompt '{"audio": 8}' \
      --no-enable-prefix-caching --enforce-eager --disable-custom-all-reduce \
      --served-model-name "$MODEL"
    ;;
  text)
    MODEL="${MODEL:-Qwen/Qwen3-30B-A3B-Instruct-2507-FP8}"
    exec vllm serve "$MODEL" --port "$PORT" \
      --tensor-parallel-size "${TP:-1}" --max-model-len "${MAX_LEN:-16384}" \
      --gpu-memory-utilization "${GPU_UTIL:-0.90}" --served-model-name "$MODEL"
    ;;
  check)
    MODEL="${MODEL:-Qwen/Qwen3-Omni-30B-A3B-Instruct}"
    # Sends 10 s, 60 s and 120 s clips and asserts the prompt token count grows by
    # ~12.5 tokens per second of audio between them (Qwen3-Omni's audio encoder rate).
    # A flat count past 30 s means the server's feature extractor truncates the clip, i.e.
    # the model would never hear most of a 120 s evidence set: the check exits non-zero.
    exec "$PY" -m harp_lib.cli llm-probe --base-url "http://localhost:$PORT/v1" --model "$MODEL" \
      --tokens-per-sec "${AUDIO_TOKENS_PER_SEC:-12.5}"
    ;;
  *)
    echo "usage: $0 omni|text|check" >&2
    exit 2
    ;;
esac
