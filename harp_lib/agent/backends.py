"""Registry entries of the agent stages (imported lazily by :func:`harp_lib.config.get_backend`).

========  ==========================================================
stage     names
========  ==========================================================
planner   ``rule`` (default), ``llm``, ``oracle`` (chosen by setups A6/A7)
answerer  ``rule`` (default), ``llm``
llm       ``openai`` (any OpenAI-compatible server, e.g. vLLM), ``transformers``, ``gguf``,
          ``local`` (llama.cpp + packaged Qwen2.5-Coder GGUF, :mod:`harp_lib.llm.local`)
========  ==========================================================

>>> from harp_lib.config import get_backend
>>> get_backend("planner", "oracle").__name__
'OraclePlanner'
"""
from __future__ import annotations

from harp_lib.config import register
from harp_lib.llm import GGUFClient, OpenAICompatClient, TransformersClient
from harp_lib.llm.local import LocalLLMClient
from harp_lib.agent.answerer import LLMAnswerer, RuleAnswerer
from harp_lib.agent.oracle import OraclePlanner
from harp_lib.agent.planner import LLMPlanner, RulePlanner

register("planner", "rule")(RulePlanner)
register("planner", "llm")(LLMPlanner)
register("planner", "oracle")(OraclePlanner)
register("answerer", "rule")(RuleAnswerer)
register("answerer", "llm")(LLMAnswerer)
register("llm", "openai")(OpenAICompatClient)
register("llm", "transformers")(TransformersClient)
register("llm", "gguf")(GGUFClient)
register("llm", "local")(LocalLLMClient)
