"""Paper backends for emotion: the categorical WavLM SER labeler, continuous SER (CSER: per-second
A/V/D) and the emotion2vec embedding."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

import numpy as np

from harp_lib.config import register
from harp_lib.core.labels import normalize_label
from harp_lib.extract.embedders import l2norm
from harp_lib.extract.paper import _resample, require
from harp_lib.extract.paper_models import BackendLoadError, paper_backend


@register("labeler", "wavlm_ser")
@paper_backend("wavlm_ser")
class WavLMSER:
    """3loi/SER-Odyssey-Baseline-WavLM-Categorical: first 15 s, config mean/std, softmax."""
    name = "wavlm_ser"
    model_id = "3loi/SER-Odyssey-Baseline-WavLM-Categorical"

    def __init__(self, max_sec: float = 15.0):
        self.torch = require("torch", "wavlm_ser", "labeler 'wavlm_ser'")
        tr = require("transformers", "wavlm_ser", "labeler 'wavlm_ser'")
        self.model = tr.AutoModelForAudioClassification.from_pretrained(self.model_id, trust_remote_code=True).eval()
        self.max_sec = max_sec

    def label(self, wave, sr=16000, *, text="", speaker=None, context=None) -> dict:
        w = _resample(wave, sr, 16000)[: int(self.max_sec * 16000)]
        cfg = self.model.config
        w = (w - getattr(cfg, "mean", 0.0)) / (getattr(cfg, "std", 1.0) + 1e-6)
        x = self.torch.from_numpy(w.astype(np.float32))[None]
        with self.torch.inference_mode():
            logits = self.model(x, self.torch.ones_like(x))
        logits = getattr(logits, "logits", logits)
        p = self.torch.softmax(logits[0], -1).numpy()
        names = [normalize_label("emotion", cfg.id2label[i]) for i in range(len(p))]
        scores = {n: round(float(v), 4) for n, v in zip(names, p)}
        return {"primary": names[int(np.argmax(p))], "scores": scores}


def _cser_model(torch):
    nn = torch.nn

    class CSER(nn.Module):
        """WavLM-Large per-second features -> 2 x BiLSTM(2 layers, 512, dropout 0.5) -> 3."""

        def __init__(self, wavlm):
            super().__init__()
            self.wavlm = wavlm
            self.lstm1 = nn.LSTM(1024, 512, num_layers=2, batch_first=True, bidirectional=True, dropout=0.5)
            self.lstm2 = nn.LSTM(1024, 512, num_layers=2, batch_first=True, bidirectional=True, dropout=0.5)
            self.head = nn.Linear(1024, 3)

        def per_second(self, wave):  # wave: (n,) float tensor at 16 kHz
            feats = []
            n = wave.shape[0]
            for s in range(0, max(1, n), 30 * 16000):
                h = self.wavlm(wave[s:s + 30 * 16000][None]).last_hidden_state[0]
                feats.append(h)
            h = torch.cat(feats)[: int(np.ceil(n / 320))]
            t = int(np.ceil(h.shape[0] / 50))
            h = torch.nn.functional.pad(h, (0, 0, 0, t * 50 - h.shape[0]))
            return h.view(t, 50, -1).mean(1)

        def forward(self, wave):
            x = self.per_second(wave)[None]
            x, _ = self.lstm1(x)
            x, _ = self.lstm2(x)
            return self.head(x)[0].clamp(0, 1)  # (T, 3): arousal, valence, dominance

    return CSER


@register("labeler", "cser")
@paper_backend("cser")
class CSERLabeler:
    """Continuous SER (HARP_REFERENCE §2.3): per-second A/V/D from WavLM-Large + BiLSTMs;
    checkpoint from $HARP_CSER_CKPT (released on HF as cjli/harp)."""
    name = "cser"
    model_id = "microsoft/wavlm-large + CSER BiLSTM (cjli/harp)"

    def __init__(self, ckpt: Optional[str] = None):
        torch = require("torch", "cser", "labeler 'cser'")
        tr = require("transformers", "cser", "labeler 'cser'")
        ckpt = ckpt or os.environ.get("HARP_CSER_CKPT")
        if not ckpt or not Path(ckpt).exists():
            raise BackendLoadError("labeler 'cser' needs its checkpoint: set HARP_CSER_CKPT=/path/to/epoch_200.pt "
                                   "(released on Hugging Face as cjli/harp; `harp fetch-weights --backend cser` "
                                   "downloads it and prints the export line)"
                                   f"{'; not found: ' + ckpt if ckpt else ''}")
        wavlm = tr.WavLMModel.from_pretrained("microsoft/wavlm-large")
        self.model = _cser_model(torch)(wavlm)
        state = torch.load(ckpt, map_location="cpu", weights_only=True)
        self.model.load_state_dict(state.get("model", state), strict=False)
        self.model.eval()
        self.torch = torch

    def label(self, wave, sr=16000, *, text="", speaker=None, context=None) -> dict:
        w = self.torch.from_numpy(_resample(wave, sr, 16000))
        with self.torch.inference_mode():
            avd = self.model(w).numpy()
        out = {}
        for j, k in enumerate(("arousal", "valence", "dominance")):
            out[k] = round(float(avd[:, j].mean()), 4)
            out[k + "_trace"] = {"mean": out[k], "std": round(float(avd[:, j].std()), 4)}
        return out


@register("domain_emb", "emotion2vec")
@paper_backend("emotion2vec")
class Emotion2VecEmbedder:
    """emotion2vec_base through funasr, utterance-level 768-d embedding."""
    name = "emotion2vec"
    model_id = "emotion2vec/emotion2vec_base"
    dim = 768

    def __init__(self):
        funasr = require("funasr", "emotion2vec", "domain_emb 'emotion2vec'")
        self.model = funasr.AutoModel(model=self.model_id, hub="hf", disable_update=True)
        if getattr(self.model, "model", None) is None:
            raise RuntimeError(f"funasr.AutoModel({self.model_id!r}) built no model")

    def embed(self, waves, sr=16000):
        rows = []
        for w in waves:
            r = self.model.generate(_resample(w, sr, 16000), granularity="utterance", extract_embedding=True)
            rows.append(np.asarray(r[0]["feats"]).reshape(-1))
        return l2norm(np.asarray(rows))
