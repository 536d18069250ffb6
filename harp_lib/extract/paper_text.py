"""Paper backends for speech as text: openai-whisper large-v3-turbo ASR and the
BAAI/bge-small-en-v1.5 text embedding."""
from __future__ import annotations

from typing import Optional

import numpy as np

from harp_lib.config import register
from harp_lib.extract.paper import _device, _resample, require
from harp_lib.extract.paper_models import hub_offline, paper_backend, whisper_cache


@register("asr", "whisper")
@paper_backend("whisper")
class WhisperASR:
    """openai-whisper large-v3-turbo, one call per segment, word timestamps."""
    name = "whisper"
    model_id = "openai-whisper large-v3-turbo"

    def __init__(self, model: str = "large-v3-turbo", language: Optional[str] = "en"):
        whisper = require("whisper", "whisper", "asr 'whisper'")
        torch = require("torch", "whisper", "asr 'whisper'")
        root = whisper_cache()
        if hub_offline() and not (root / f"{model}.pt").is_file():
            # openai-whisper would download from its own URL: offline runs never do
            raise FileNotFoundError(f"{root / (model + '.pt')} does not exist")
        self.model = whisper.load_model(model, device=_device(torch), download_root=str(root))
        self.fp16 = _device(torch) == "cuda"
        self.language = language

    def transcribe(self, wave, sr=16000, speech=None) -> dict:
        if speech is not None and len(speech) == 0:
            return {"text": "", "words": []}
        r = self.model.transcribe(_resample(wave, sr, 16000), fp16=self.fp16, language=self.language,
                                  word_timestamps=True)
        words = [[w["word"].strip(), round(w["start"], 3), round(w["end"], 3)]
                 for s in r.get("segments", []) for w in s.get("words", [])]
        return {"text": r["text"].strip(), "words": words}


@register("text_emb", "bge_small")
@paper_backend("bge_small")
class BgeSmallEmbedder:
    """BAAI/bge-small-en-v1.5 through sentence-transformers, normalised (384-d)."""
    name = "bge_small"
    model_id = "BAAI/bge-small-en-v1.5"
    dim = 384

    def __init__(self):
        st = require("sentence_transformers", "bge_small", "text_emb 'bge_small'")
        self.model = st.SentenceTransformer(self.model_id)

    def embed(self, texts):
        return np.asarray(self.model.encode(list(texts), normalize_embeddings=True), np.float32)
