"""Speech activity detection: silero-vad v6 (weights ship in the wheel), run in float64.

The network runs in float64 numpy (:class:`harp_lib.extract.whisper_exact_vad.SileroF64`) with its
probabilities on a fixed grid, so the speech regions are the same on every CPU; the wheel's own
onnxruntime session picks its kernels by CPU (docs/testing.md "Cross-machine bytes").

>>> import numpy as np
>>> from harp_lib.config import create_backend
>>> create_backend("vad", "silero").speech(np.zeros(32000, np.float32), 16000)   # 2 s of silence
[]

On speech it returns spans such as ``[Span(start=0.2, end=4.4)]``.
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from harp_lib.config import BackendError, register
from harp_lib.core.timespan import Span, merge_spans
from harp_lib.extract.cough_labeler import detect_coughs
from harp_lib.extract.whisper_exact_vad import SileroF64

__all__ = ["SileroVAD", "SileroRescueVAD", "spans_to_frames", "energy_regions"]


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


def energy_regions(wave: np.ndarray, sr: int = 16000, *, above_floor_db: float = 25.0,
                   floor_pct: float = 10.0, bridge_sec: float = 0.3, min_sec: float = 1.0) -> list[Span]:
    """Sustained loud regions: 10 ms frames at least ``above_floor_db`` over the recording's
    noise floor (its ``floor_pct`` percentile level), pauses up to ``bridge_sec`` bridged,
    regions shorter than ``min_sec`` dropped.

    >>> w = np.r_[np.zeros(8000), 0.1 * np.sin(np.arange(24000) / 3), np.zeros(8000)].astype(np.float32)
    >>> w += np.random.default_rng(0).normal(scale=1e-3, size=len(w)).astype(np.float32)
    >>> energy_regions(w)
    [Span(start=0.5, end=2.0)]
    """
    hop = int(0.01 * sr)
    n = len(wave) // hop
    if n == 0:
        return []
    fr = np.asarray(wave[: n * hop], dtype=np.float64).reshape(n, hop)
    db = 10 * np.log10((fr ** 2).mean(1) + 1e-12)
    loud = db >= np.percentile(db, floor_pct) + above_floor_db
    spans: list[list[int]] = []
    for i in np.flatnonzero(loud):
        if spans and i - spans[-1][1] <= int(round(bridge_sec / 0.01)):
            spans[-1][1] = i + 1
        else:
            spans.append([i, i + 1])
    return [Span(round(a * 0.01, 3), round(b * 0.01, 3)) for a, b in spans if (b - a) * 0.01 >= min_sec]


def _overlap(a: Span, spans: Sequence[Span]) -> float:
    return sum(max(0.0, min(a.end, s.end) - max(a.start, s.start)) for s in spans)


class _Probabilities:
    """silero-vad's model interface (``reset_states``, ``model(chunk, sr)``) over probabilities
    computed beforehand in one float64 pass: ``get_speech_timestamps`` asks chunk by chunk."""

    def __init__(self, probs: np.ndarray):
        self.probs, self.i = probs, 0

    def reset_states(self) -> None:
        self.i = 0

    def __call__(self, chunk, sr):
        import torch  # heavy: torch (~1.2 s)
        p = self.probs[self.i]
        self.i += 1
        return torch.tensor([[p]], dtype=torch.float64)


@register("vad", "silero")
class SileroVAD:
    """silero-vad v6 speech regions (float64, the same on every CPU).

    Measures: the probability that each 32 ms frame holds speech, hysteresis-thresholded into
    regions.  Limits: laughter and singing can count as speech; coughs usually do not;
    hoarse or breathy (noise-excited) voices get near-zero probability.

    ``energy_rescue=True`` adds a second pass for such voices: :func:`energy_regions` (loud,
    sustained for at least ``rescue.min_sec``) that silero left (almost) untouched and that
    hold no cough-like burst (:func:`harp_lib.extract.cough_labeler.detect_coughs`) are speech too.
    Limits: any other sustained loud sound (music, a long sneeze) is then speech.

    Every pause of ``refresh_gap_sec`` or more is run through the network once more from a fresh
    state, and the speech found there is added: the LSTM state carries the level of loud speech
    for tens of seconds (even across digital silence), so a quiet voice after a loud one is
    missed (a real caller's first "Hello?", 24 dB below a flite line 7 s before it: probability
    0.31 after the line, 0.84 from a fresh state; tests/extract/test_quiet_after_loud.py).
    """
    name = "silero"
    model_id = "snakers4/silero-vad v6 (silero-vad wheel weights, float64 numpy)"

    def __init__(self, threshold: float = 0.5, min_speech_sec: float = 0.25,
                 min_silence_sec: float = 0.3, speech_pad_sec: float = 0.03,
                 energy_rescue: bool = False, rescue: Optional[dict] = None,
                 rescue_max_covered: float = 0.5, refresh_gap_sec: float = 3.0):
        try:
            self.model = SileroF64()
        except ImportError as e:  # pragma: no cover - part of the main install
            raise BackendError("vad 'silero' needs the silero-vad package (pip install silero-vad)") from e
        self.threshold, self.min_speech_sec = threshold, min_speech_sec
        self.min_silence_sec, self.speech_pad_sec = min_silence_sec, speech_pad_sec
        self.energy_rescue, self.rescue = energy_rescue, dict(rescue or {})
        self.rescue_max_covered = rescue_max_covered
        if isinstance(refresh_gap_sec, bool) or not isinstance(refresh_gap_sec, (int, float)) or refresh_gap_sec < 0:
            raise BackendError(f"vad 'silero': refresh_gap_sec = {refresh_gap_sec!r}; expected seconds >= 0 "
                               f"(0: no fresh pass over pauses)")
        self.refresh_gap_sec = float(refresh_gap_sec)

    def speech(self, wave: np.ndarray, sr: int = 16000) -> list[Span]:
        """Speech regions of a 16 kHz mono waveform, sorted, in seconds."""
        if sr != 16000:
            raise BackendError(f"silero VAD expects 16 kHz audio, got {sr} Hz (resample with harp_lib.core.audio)")
        wave = np.asarray(wave, dtype=np.float32)
        spans = self._regions(wave, sr)
        if self.refresh_gap_sec > 0:
            spans = self._refresh(wave, sr, spans)
        if self.energy_rescue:
            spans = self._rescue(wave, sr, spans)
        return spans

    def _regions(self, wave: np.ndarray, sr: int) -> list[Span]:
        """One pass of the network over ``wave`` from its initial state, thresholded into regions."""
        import torch  # heavy: torch (~1.2 s)
        from silero_vad import get_speech_timestamps  # heavy: silero_vad (torch)
        if wave.size < 512:
            return []
        pad = -len(wave) % 512                   # get_speech_timestamps zero-pads the last chunk too
        probs = self.model(np.pad(wave, (0, pad)))[:, 0]
        ts = get_speech_timestamps(torch.from_numpy(wave), _Probabilities(probs), threshold=self.threshold,
                                   sampling_rate=sr,
                                   min_speech_duration_ms=int(self.min_speech_sec * 1000),
                                   min_silence_duration_ms=int(self.min_silence_sec * 1000),
                                   speech_pad_ms=int(self.speech_pad_sec * 1000))
        return [Span(t["start"] / sr, t["end"] / sr) for t in ts]

    def _refresh(self, wave: np.ndarray, sr: int, spans: list[Span]) -> list[Span]:
        """``spans`` plus the regions a fresh pass finds in each pause of ``refresh_gap_sec`` or
        more after speech (a pause before the first region was already seen from the initial
        state), except those holding a cough-like burst (as in the energy pass): from a fresh
        state silero calls some coughs speech (ci consult_003 18.5 s, mini clinic 1726.3 s)."""
        n = len(wave) / sr
        extra = []
        for a, b in zip([s.end for s in spans], [s.start for s in spans[1:]] + [n]):
            if b - a < self.refresh_gap_sec:
                continue
            for s in self._regions(wave[int(round(a * sr)):int(round(b * sr))], sr):
                s = Span(round(a + s.start, 6), round(min(b, a + s.end), 6))
                if not detect_coughs(wave[int(max(0.0, s.start - 0.2) * sr):int((s.end + 0.2) * sr)], sr):
                    extra.append(s)
        return merge_spans(spans + extra) if extra else spans

    def _rescue(self, wave: np.ndarray, sr: int, spans: list[Span]) -> list[Span]:
        extra = []
        for r in energy_regions(wave, sr, **self.rescue):
            if _overlap(r, spans) > self.rescue_max_covered * r.duration:
                continue
            if detect_coughs(wave[int(r.start * sr):int(r.end * sr)], sr):
                continue
            extra.append(r)
        return merge_spans(spans + extra)


@register("vad", "silero_rescue")
class SileroRescueVAD(SileroVAD):
    """:class:`SileroVAD` with the energy pass on (``energy_rescue=True``): the clinical VAD,
    where hoarse and breathy patients' voices must count as speech (see ``SileroVAD``)."""
    name = "silero_rescue"
    model_id = "snakers4/silero-vad v6 (float64) + energy pass for noise-excited voices"

    def __init__(self, **options):
        options.setdefault("energy_rescue", True)
        super().__init__(**options)
