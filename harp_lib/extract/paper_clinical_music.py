"""Paper labelers for the clinical and music domains: the CoughKit cough classifier and the
laion music-aesthetics heads on the music-whisper encoder."""
from __future__ import annotations

import numpy as np

from harp_lib.config import register
from harp_lib.core.labels import cough_label, tier_of
from harp_lib.extract.paper import _resample, require
from harp_lib.extract.paper_models import paper_backend


@register("labeler", "coughkit")
@paper_backend("coughkit")
class CoughKitLabeler:
    """CoughKit XGBoost cough classifier over energy-segmented sub-windows (threshold 0.8)."""
    name = "coughkit"
    model_id = "bagustris/coughkit (XGBoost)"

    def __init__(self, threshold: float = 0.8):
        ck = require("coughkit", "coughkit", "labeler 'coughkit'")
        self.ck, self.threshold = ck, threshold
        self.clf, self.scaler = ck.load_cough_classifier(), ck.load_scaler()

    def label(self, wave, sr=16000, *, text="", speaker=None, context=None) -> dict:
        w = _resample(wave, sr, 16000)
        probs = [float(self.ck.classify_cough(seg, 16000, self.clf, self.scaler))
                 for seg in self.ck.segment_cough(w, 16000)[0]]
        n = sum(p >= self.threshold for p in probs)
        return {"primary": cough_label(n), "cough_count": n, "max_cough_prob": max(probs, default=0.0)}


@register("labeler", "music_aesthetics")
@paper_backend("music_aesthetics")
class MusicAestheticsLabeler:
    """laion/music-whisper encoder + laion/music-aesthetics heads (HARP_REFERENCE §2.3):
    30 s centre crop/pad -> (1500, 768) -> 10 blocks x (mean, max, min) = 23040 -> 1024 -> 256
    -> five 256 -> 64 -> 1 heads (raw 1-5); overall = mean; tier High/Mid/Low."""
    name = "music_aesthetics"
    model_id = "laion/music-whisper + laion/music-aesthetics"
    METRICS = ("Naturalness", "Clarity", "Musicality", "Coherence", "Memorability")

    def __init__(self):
        torch = require("torch", "music_aesthetics", "labeler 'music_aesthetics'")
        tr = require("transformers", "music_aesthetics", "labeler 'music_aesthetics'")
        hub = require("huggingface_hub", "music_aesthetics", "labeler 'music_aesthetics'")
        nn = torch.nn
        self.encoder = tr.WhisperModel.from_pretrained("laion/music-whisper").get_encoder().eval()
        self.fe = tr.WhisperFeatureExtractor.from_pretrained("laion/music-whisper")
        self.bottleneck = nn.Sequential(nn.Linear(23040, 1024), nn.ReLU(), nn.Dropout(0.3),
                                        nn.Linear(1024, 256), nn.ReLU(), nn.LayerNorm(256))
        self.heads = nn.ModuleDict({m: nn.Sequential(nn.Linear(256, 64), nn.ReLU(), nn.Linear(64, 1))
                                    for m in self.METRICS})
        get = lambda f: hub.hf_hub_download("laion/music-aesthetics", f)  # noqa: E731
        self.bottleneck.load_state_dict(torch.load(get("stage1_bottleneck.pt"), map_location="cpu", weights_only=True))
        for m in self.METRICS:
            self.heads[m].load_state_dict(torch.load(get(f"expert_{m}.pt"), map_location="cpu", weights_only=True))
        self.bottleneck.eval(), self.heads.eval()
        self.torch = torch

    def label(self, wave, sr=16000, *, text="", speaker=None, context=None) -> dict:
        w = _resample(wave, sr, 16000)
        n = 30 * 16000
        w = w[(len(w) - n) // 2:(len(w) - n) // 2 + n] if len(w) > n else np.pad(w, ((n - len(w)) // 2, n - len(w) - (n - len(w)) // 2))
        feats = self.fe(w, sampling_rate=16000, return_tensors="pt").input_features
        with self.torch.inference_mode():
            h = self.encoder(feats).last_hidden_state[0].view(10, 150, -1)
            x = self.torch.cat([h.mean(1), h.amax(1), h.amin(1)], -1).reshape(1, -1)
            z = self.bottleneck(x)
            scores = {m: round(float(self.heads[m](z)[0, 0]), 3) for m in self.METRICS}
        overall = round(float(np.mean(list(scores.values()))), 3)
        return {"primary": tier_of(overall), "scores": scores, "overall": overall}
