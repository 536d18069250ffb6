"""Paper backends for general audio embeddings: OpenBEATS (AudioSet) and LAION-CLAP (audio and
text in one space)."""
from __future__ import annotations

import os
import tempfile
from typing import Optional

import numpy as np

from harp_lib.config import register
from harp_lib.extract.embedders import l2norm
from harp_lib.extract.paper import _resample, require
from harp_lib.extract.paper_models import paper_backend


@register("audio_emb", "openbeats")
@paper_backend("openbeats")
class OpenBeatsEmbedder:
    """espnet/OpenBEATS-Large-i2-as20k, mean-pooled patch embeddings (1024-d), in memory."""
    name = "openbeats"
    model_id = "espnet/OpenBEATS-Large-i2-as20k"
    dim = 1024

    def __init__(self, chunk_seconds: float = 15.0):
        ob = require("openbeats.model", "openbeats", "audio_emb 'openbeats'")
        self.model = ob.OpenBeats.from_pretrained(self.model_id)
        self.chunk_seconds = chunk_seconds

    def embed(self, waves, sr=16000):
        import soundfile as sf  # heavy: soundfile (libsndfile), only when audio is read
        rows = []
        with tempfile.TemporaryDirectory() as d:
            for i, w in enumerate(waves):
                p = os.path.join(d, f"{i}.wav")
                sf.write(p, np.asarray(w, np.float32), sr)
                out = self.model.encode_file(p, chunk_seconds=self.chunk_seconds)
                pe = np.asarray(getattr(out, "patch_embeddings", out))
                rows.append(pe.reshape(-1, pe.shape[-1]).mean(0))
        return l2norm(np.asarray(rows))


@register("audio_emb", "clap")
@paper_backend("clap")
class ClapEmbedder:
    """LAION-CLAP (630k-audioset-best), 512-d; audio and text share the space, so
    ``embed_text`` gives text-to-audio search.  Fixed 10 s windows (non-fusion CLAP crops
    randomly otherwise).  Needs its own numpy<2 environment (docs/environments.md)."""
    name = "clap"
    model_id = "laion/clap 630k-audioset-best"
    dim = 512
    CKPT_REPO, CKPT_FILE = "lukewys/laion_clap", "630k-audioset-best.pt"

    def __init__(self, ckpt: Optional[str] = None):
        lc = require("laion_clap", "clap", "audio_emb 'clap'")   # builds bert/roberta/bart tokenizers
        ckpt = ckpt or os.environ.get("HARP_CLAP_CKPT")
        if not ckpt:
            # from the HF cache (honours HF_HUB_OFFLINE); laion_clap's own load_ckpt() would wget
            # it into site-packages, bypassing both
            hub = require("huggingface_hub", "clap", "audio_emb 'clap'")
            ckpt = hub.hf_hub_download(self.CKPT_REPO, self.CKPT_FILE)
        self.model = lc.CLAP_Module(enable_fusion=False)           # roberta-base text branch
        # transformers 5 builds an EMPTY tokenizer (5 tokens) when roberta-base's files are not
        # in the offline cache, instead of raising: text embeddings would be silently wrong
        n = len(getattr(self.model, "tokenize", None) or ())
        if n < 1000:
            raise FileNotFoundError(f"roberta-base tokenizer has {n} tokens: its files are not in the HF cache")
        self.model.load_ckpt(ckpt, verbose=False)

    def embed(self, waves, sr=16000):
        rows = []
        for w in waves:
            x = _resample(w, sr, 48000)
            n = 480000
            wins = [x[i:i + n] for i in range(0, max(1, len(x)), n)] or [x]
            wins = [np.pad(v, (0, n - len(v))) for v in wins]
            e = self.model.get_audio_embedding_from_data(x=np.stack(wins), use_tensor=False)
            rows.append(np.asarray(e).mean(0))
        return l2norm(np.asarray(rows))

    def embed_text(self, texts):
        return l2norm(np.asarray(self.model.get_text_embedding(list(texts), use_tensor=False)))
