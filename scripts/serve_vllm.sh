#!/usr/bin/env bash
# Serve the paper's models with vLLM behind an OpenAI-compatible API, then check that the
# audio we send actually reaches the model.
#
#   scripts/serve_vllm.sh omni     # Qwen/Qwen3-Omni-30B-A3B-Instruct (planner + answerer, audio), port 8091
#   scripts/serve_vllm.sh judge    # Qwen/Qwen3-4B-Instruct-2507 (evaluate.llm_judges.qwen), port 8092
#   scripts/serve_vllm.sh text     # Qwen/Qwen3-30B-A3B-Instruct-2507-FP8 (text-only planner)
#   scripts/serve_vllm.sh check    # probe a running server: audio tokens grow with clip length
#
# Environment: PORT (8091 for omni/text = params.yaml llm.base_url, 8092 for judge =
# evaluate.llm_judges.qwen.base_url), TP (tensor parallel size; default 1: one GPU.  The paper
# served Qwen3-Omni with TP=2 on two GPUs -- set TP=2 when you have them), MAX_LEN, GPU_UTIL
# (fraction of GPU memory this server may take), CUDA_VISIBLE_DEVICES (which GPU), HF_HOME
# (weights cache).
#
# Two servers on one GPU (omni + judge): each vLLM server pre-allocates GPU_UTIL of the WHOLE
# GPU, so two servers at the old 0.90 default run out of memory.  The defaults split it: omni
# 0.70, judge 0.20 (0.90 together).  Qwen3-Omni-30B-A3B in bf16 is ~66 GB of weights: with TP=1 it
# needs a ~141 GB GPU (H200: 0.70 = ~98 GB); on 80 GB GPUs serve it with TP=2 and put the judge on
# another GPU: CUDA_VISIBLE_DEVICES=2 GPU_UTIL=0.90 scripts/serve_vllm.sh judge.  Start omni first.
# vLLM is not a harp_lib dependency: install it in its own environment on the GPU machine
# (pip install "vllm>=0.11" -- Qwen3-Omni support; check the model card for the exact version).
# Structured output: our client sends OpenAI `response_format` (json_schema), which vLLM
# honours; the older vLLM-only `guided_json` field is ignored by newer vLLM releases.
set -euo pipefail

MODE="${1:-omni}"
PORT_SET="${PORT:-}"
PORT="${PORT:-8091}"
export PYTORCH_CUDA_ALLOC_CONF="${PYTORCH_CUDA_ALLOC_CONF:-expandable_segments:True}"
HERE="$(cd "$(dirname "$0")/.." && pwd)"
PY="${PY:-$HERE/.venv/bin/python}"

case "$MODE" in
  omni)
    MODEL="${MODEL:-Qwen/Qwen3-Omni-30B-A3B-Instruct}"
    # 32k context holds: plan/answer prompt + 2 reference snippets + up to ~6 sets x 120 s of
    # 16 kHz audio at 12.5 audio tokens/s (~1500 tokens per 120 s clip).
    # --limit-mm-per-prompt: up to 8 audio parts per request (6 sets + A/B/E snippets); no
    # images or videos (0 also skips reserving encoder memory for them).
    exec vllm serve "$MODEL" --port "$PORT" \
      --tensor-parallel-size "${TP:-1}" --max-model-len "${MAX_LEN:-32768}" \
      --gpu-memory-utilization "${GPU_UTIL:-0.70}" \
      --limit-mm-per-prompt '{"audio": 8, "image": 0, "video": 0}' \
      --no-enable-prefix-caching --enforce-eager --disable-custom-all-reduce \
      --served-model-name "$MODEL"
    ;;
  text)
    MODEL="${MODEL:-Qwen/Qwen3-30B-A3B-Instruct-2507-FP8}"
    exec vllm serve "$MODEL" --port "$PORT" \
      --tensor-parallel-size "${TP:-1}" --max-model-len "${MAX_LEN:-16384}" \
      --gpu-memory-utilization "${GPU_UTIL:-0.90}" --served-model-name "$MODEL"
    ;;
  judge)
    MODEL="${MODEL:-Qwen/Qwen3-4B-Instruct-2507}"
    exec vllm serve "$MODEL" --port "${PORT_SET:-8092}" \
      --tensor-parallel-size "${TP:-1}" --max-model-len "${MAX_LEN:-16384}" \
      --gpu-memory-utilization "${GPU_UTIL:-0.20}" --served-model-name "$MODEL"
    ;;
  check)
    MODEL="${MODEL:-Qwen/Qwen3-Omni-30B-A3B-Instruct}"
    # Sends 10 s, 60 s and 120 s clips and asserts the prompt token count grows by
    # ~12.5 tokens per second of audio between them (Qwen3-Omni's audio encoder rate).
    # A flat count past 30 s means the server's feature extractor truncates the clip, i.e.
    # the model would never hear most of a 120 s evidence set: the check exits non-zero.
    exec "$PY" -m harp_lib.app.cli llm-probe --base-url "http://localhost:$PORT/v1" --model "$MODEL" \
      --tokens-per-sec "${AUDIO_TOKENS_PER_SEC:-12.5}"
    ;;
  *)
    echo "usage: $0 omni|judge|text|check" >&2
    exit 2
    ;;
esac
