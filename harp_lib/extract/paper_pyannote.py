"""Paper backends of the pyannote family: speaker diarization (community-1), the VAD built on
its turns, and pyannote/embedding speaker vectors (gated: HF_TOKEN)."""
from __future__ import annotations

import os
from typing import Optional

import numpy as np

from harp_lib.config import BackendError, register
from harp_lib.core.timespan import Span, merge_spans
from harp_lib.extract.diarization import speaker_bounds
from harp_lib.extract.embedders import l2norm
from harp_lib.extract.paper import _device, hf_token, require
from harp_lib.extract.paper_models import paper_backend
from harp_lib.extract.turns import Turn, relabel_by_first_appearance


@register("diarization", "pyannote")
@paper_backend("diarization_pyannote")
class PyannoteDiarizer:
    """pyannote/speaker-diarization-community-1 (pyannote.audio 4, gated: HF_TOKEN).

    ``num_speakers`` / ``min_speakers`` / ``max_speakers`` go to the pipeline call as given."""
    name = "pyannote"
    model_id = "pyannote/speaker-diarization-community-1"

    def __init__(self, checkpoint: str = model_id, num_speakers: Optional[int] = None,
                 min_speakers: Optional[int] = None, max_speakers: Optional[int] = None):
        try:
            speaker_bounds(num_speakers, min_speakers, max_speakers)  # one error line before any download
        except ValueError as e:
            raise BackendError(f"diarization 'pyannote': {e}") from None
        # passed to the pipeline as given (it applies num over min/max itself)
        self.counts = {k: int(v) for k, v in (("num_speakers", num_speakers), ("min_speakers", min_speakers),
                                               ("max_speakers", max_speakers)) if v is not None}
        os.environ.setdefault("PYANNOTE_METRICS_ENABLED", "0")
        audio = require("pyannote.audio", "pyannote", "diarization 'pyannote'")
        torch = require("torch", "pyannote", "diarization 'pyannote'")
        tok = hf_token(f"diarization 'pyannote' ({checkpoint})")
        self.pipeline = audio.Pipeline.from_pretrained(checkpoint, token=tok)
        if self.pipeline is None:
            raise RuntimeError(f"{checkpoint}: Pipeline.from_pretrained returned None (licence not accepted, "
                               f"or the pipeline is not in the cache)")
        self.pipeline.to(torch.device(_device(torch)))
        self.torch = torch

    def segment(self, wave, sr=16000, speech=None) -> list[Turn]:
        wav = self.torch.from_numpy(np.asarray(wave, np.float32))[None]
        out = self.pipeline({"waveform": wav, "sample_rate": sr}, **self.counts)
        ann = getattr(out, "speaker_diarization", out)
        turns = [Turn(s.start, s.end, str(lab)) for s, _, lab in ann.itertracks(yield_label=True)]
        return relabel_by_first_appearance(turns)


@register("vad", "pyannote")
@paper_backend("diarization_pyannote")
class PyannoteVAD:
    """Speech regions = union of the pyannote diarization turns."""
    name = "pyannote"
    model_id = PyannoteDiarizer.model_id

    def __init__(self):
        self.diar = PyannoteDiarizer()

    def speech(self, wave, sr=16000):
        return merge_spans(Span(t.start, t.end) for t in self.diar.segment(wave, sr))


@register("audio_emb", "pyannote_embedding")
@paper_backend("pyannote_embedding")
class PyannoteEmbedder:
    """pyannote/embedding speaker vectors (512-d, whole-window inference; gated: HF_TOKEN)."""
    name = "pyannote_embedding"
    model_id = "pyannote/embedding"
    dim = 512

    def __init__(self):
        audio = require("pyannote.audio", "pyannote_embedding", "audio_emb 'pyannote_embedding'")
        torch = require("torch", "pyannote_embedding", "audio_emb 'pyannote_embedding'")
        tok = hf_token("audio_emb 'pyannote_embedding'")
        model = audio.Model.from_pretrained(self.model_id, token=tok)
        self.inference = audio.Inference(model, window="whole", device=torch.device(_device(torch)))
        self.torch = torch

    def embed(self, waves, sr=16000):
        rows = [np.asarray(self.inference({"waveform": self.torch.from_numpy(np.asarray(w, np.float32))[None],
                                           "sample_rate": sr})).reshape(-1) for w in waves]
        return l2norm(np.asarray(rows)) if rows else np.zeros((0, self.dim), np.float32)
