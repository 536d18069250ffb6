"""Speech activity detection: silero-vad through onnxruntime (weights ship in the wheel).

>>> from harp_lib.config import create_backend          # doctest: +SKIP
>>> create_backend("vad", "silero").speech(wave, 16000)  # doctest: +SKIP
[Span(start=0.2, end=4.4)]
"""
from __future__ import annotations

import numpy as np

from ..config import BackendError, register
from ..timespan import Span

__all__ = ["SileroVAD", "spans_to_frames"]


def spans_to_frames(spans, duration: float, step: float = 0.01) -> np.ndarray:
    """Boolean frame mask (``step`` seconds per frame) of a list of spans.

    >>> spans_to_frames([Span(0.0, 0.02)], 0.05).astype(int).tolist()
    [1, 1, 0, 0, 0]
    """
    n = int(round(duration / step))
    mask = np.zeros(n, dtype=bool)
    for sp in spans:
        s, e = sp if isinstance(sp, tuple) else (sp.start, sp.end)
        mask[max(0, int(round(s / step))): min(n, int(round(e / step)))] = True
    return mask


@register("vad", "silero")
class SileroVAD:
    """silero-vad v6 (ONNX) speech regions.

    Measures: the probability that each 32 ms frame holds speech, hysteresis-thresholded into
    regions.  Limits: laughter and singing can count as speech; coughs usually do not.
    """
    name = "silero"
    model_id = "snakers4/silero-vad (onnx, silero-vad wheel)"

    def __init__(self, threshold: float = 0.5, min_speech_sec: float = 0.25,
                 min_silence_sec: float = 0.3, speech_pad_sec: float = 0.03):
        try:
            from silero_vad import load_silero_vad
        except ImportError as e:  # pragma: no cover - part of the main install
            raise BackendError("vad 'silero' needs the silero-vad and onnxruntime packages "
                               "(pip install silero-vad onnxruntime)") from e
        self.model = load_silero_vad(onnx=True)
        self.threshold, self.min_speech_sec = threshold, min_speech_sec
        self.min_silence_sec, self.speech_pad_sec = min_silence_sec, speech_pad_sec

    def speech(self, wave: np.ndarray, sr: int = 16000) -> list[Span]:
        """Speech regions of a 16 kHz mono waveform, sorted, in seconds."""
        import torch
        from silero_vad import get_speech_timestamps
        if sr != 16000:
            raise BackendError(f"silero VAD expects 16 kHz audio, got {sr} Hz (resample with harp_lib.audio)")
        wave = np.asarray(wave, dtype=np.float32)
        if wave.size < 512:
            return []
        ts = get_speech_timestamps(torch.from_numpy(wave), self.model, threshold=self.threshold,
                                   sampling_rate=sr,
                                   min_speech_duration_ms=int(self.min_speech_sec * 1000),
                                   min_silence_duration_ms=int(self.min_silence_sec * 1000),
                                   speech_pad_ms=int(self.speech_pad_sec * 1000))
        self.model.reset_states()
        return [Span(t["start"] / sr, t["end"] / sr) for t in ts]
