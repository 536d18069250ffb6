"""Paper backends on MERT-v1-95M: song boundaries (window embeddings + KernelCPD) and the
mean-pooled music embedding."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from harp_lib.config import register
from harp_lib.extract.embedders import l2norm
from harp_lib.extract.paper import _device, _resample, require
from harp_lib.extract.paper_models import paper_backend
from harp_lib.extract.songs import window_times
from harp_lib.extract.turns import Turn


class _Mert:
    model_id = "m-a-p/MERT-v1-95M"
    sr = 24000

    def __init__(self, what: str, layer: int = -1):
        torch = require("torch", "mert", what)
        tr = require("transformers", "mert", what)
        self.model = tr.AutoModel.from_pretrained(self.model_id,
                             trust_remote_code=True).eval()
        self.proc = tr.Wav2Vec2FeatureExtractor.from_pretrained(self.model_id,
                            trust_remote_code=True)
        self.device = _device(torch)
        self.model.to(self.device)
        self.torch, self.layer = torch, layer

    def embed_24k(self, waves: Sequence[np.ndarray]) -> np.ndarray:
        out = []
        with self.torch.inference_mode():
            for w in waves:
                x = self.proc(w, sampling_rate=self.sr, return_tensors="pt")
                x = {k: v.to(self.device) for k, v in x.items()}
                h = self.model(**x, output_hidden_states=True).hidden_states[self.layer]
                out.append(h.mean(1)[0].float().cpu().numpy())
        return np.asarray(out)


@register("song_boundaries", "mert")
@paper_backend("mert")
class MertSongs:
    """MERT-v1-95M window embeddings (10 s windows, 2 s hop, last layer, L2-normalised) ->
    ruptures KernelCPD(rbf, min 90 s, pen 12) -> SONG_NN (HARP_REFERENCE §2.2)."""
    name = "mert"
    model_id = _Mert.model_id

    def __init__(self, min_song_sec: float = 90.0, win_sec: float = 10.0, hop_sec: float = 2.0,
                 pen: float = 12.0):
        self.mert = _Mert("song_boundaries 'mert'")
        require("ruptures", "mert", "song_boundaries 'mert'")
        self.min_song_sec, self.win_sec, self.hop_sec, self.pen = min_song_sec, win_sec, hop_sec, pen

    def segment(self, wave, sr=16000, speech=None) -> list[Turn]:
        import ruptures as rpt  # heavy: ruptures (~0.8 s)
        w24 = _resample(wave, sr, 24000)
        dur = len(w24) / 24000
        starts = window_times(dur, self.win_sec, self.hop_sec)
        x = l2norm(self.mert.embed_24k([w24[int(s * 24000): int((s + self.win_sec) * 24000)] for s in starts]))
        bkps = []
        if len(x) > 1:
            bkps = rpt.KernelCPD(kernel="rbf", min_size=max(1, int(self.min_song_sec / self.hop_sec))) \
                .fit(x).predict(pen=self.pen)[:-1]
        edges = [0.0, *[float(starts[b]) for b in bkps], dur]
        return [Turn(a, b, f"SONG_{i + 1:02d}") for i, (a, b) in enumerate(zip(edges[:-1], edges[1:]))]


@register("domain_emb", "mert")
@paper_backend("mert")
class MertEmbedder:
    """MERT-v1-95M mean last-layer embedding at 24 kHz (768-d)."""
    name = "mert"
    model_id = _Mert.model_id
    dim = 768

    def __init__(self):
        self.mert = _Mert("domain_emb 'mert'")

    def embed(self, waves, sr=16000):
        return l2norm(self.mert.embed_24k([_resample(w, sr, 24000) for w in waves]))
