"""Streaming extraction for long recordings: the waveform stays on disk.

A 4-hour 16 kHz recording is 0.9 GB as float32; holding it (plus every turn's copy) in
memory would blow the 2 GB budget of ``harp bench long``.  Above ``scale.stream_above_sec``
the pipeline therefore gets a :class:`LazyWave` instead of an array: slicing it reads just
that window through :func:`harp_lib.core.audio.load` (soundfile seeks), VAD runs chunk by chunk
(:func:`speech_regions`), and per-turn clips are a lazy sequence (:func:`clips`) that reads
one clip at a time as embedders and labelers iterate.  Diarization keeps one d-vector per
window for the whole file (57,600 x 256 float32 = 59 MB for 4 h) and clusters them
globally, so speaker labels stay consistent across chunks.

>>> import numpy as np, tempfile, os
>>> from harp_lib.core import audio
>>> p = os.path.join(tempfile.mkdtemp(), "x.wav")
>>> audio.write(p, np.linspace(-0.5, 0.5, 16000).astype(np.float32), 16000)
>>> w = LazyWave(p, 16000)
>>> len(w), w[100:104].shape
(16000, (4,))
>>> [c.shape for c in clips(w, [(0.0, 0.5), (0.5, 1.0)], 16000)]
[(8000,), (8000,)]
"""
from __future__ import annotations

import os
from collections.abc import Sequence as _SequenceABC
from pathlib import Path
from typing import Optional, Sequence, Union

import numpy as np

from harp_lib.core import audio
from harp_lib.core.timespan import Span

__all__ = ["LazyWave", "LazyClips", "open_wave", "speech_regions", "clips", "DEFAULT_STREAM_ABOVE_SEC",
           "DEFAULT_CHUNK_SEC"]

#: Fallbacks when params.yaml has no ``scale:`` section (the commented copies live there).
DEFAULT_STREAM_ABOVE_SEC = 1800.0
DEFAULT_CHUNK_SEC = 600.0


class LazyWave:
    """A read-only, 1-D, float32 view of a mono audio file that reads only what is sliced.

    Supports ``len``, ``shape``, ``dtype``, ``ndim``, ``size`` and slicing with a step of 1
    (``wave[a:b]`` returns a NumPy array of samples ``a..b``).  ``np.asarray(wave)`` loads
    the whole file (deliberately allowed, for code that truly needs it; the long-file path
    avoids it).
    """

    dtype = np.dtype(np.float32)
    ndim = 1

    def __init__(self, path: Union[str, os.PathLike], sr: int = audio.DEFAULT_SR):
        self.path = Path(path)
        self.sr = int(sr)
        info = audio.probe(self.path)
        self.duration = info.duration
        self._n = int(round(info.frames * self.sr / info.sample_rate))
        self.reads = 0                      # number of disk reads (tests and the bench look at it)

    def __len__(self) -> int:
        return self._n

    @property
    def shape(self) -> tuple[int]:
        return (self._n,)

    @property
    def size(self) -> int:
        return self._n

    def __getitem__(self, key):
        if isinstance(key, slice):
            a, b, step = key.indices(self._n)
            if step != 1:
                raise IndexError(f"{self.path}: LazyWave supports contiguous slices only (step {step})")
            if b <= a:
                return np.zeros(0, np.float32)
            self.reads += 1
            out = audio.load(self.path, self.sr, start=a / self.sr, end=b / self.sr)
            # resampling rounding may give a sample more or less; the caller asked for b - a
            if len(out) != b - a:
                out = np.pad(out, (0, max(0, b - a - len(out))))[: b - a]
            return out
        if isinstance(key, (int, np.integer)):
            i = int(key) + (self._n if key < 0 else 0)
            return self[i:i + 1][0]
        raise IndexError(f"{self.path}: LazyWave supports integer and slice indexing, got {type(key).__name__}")

    def __array__(self, dtype=None, copy=None):
        arr = self[0:self._n]
        return arr.astype(dtype) if dtype is not None else arr

    def __repr__(self) -> str:
        return f"LazyWave({str(self.path)!r}, sr={self.sr}, duration={self.duration})"


class LazyClips(_SequenceABC):
    """Clips ``[(start, end)]`` (seconds) of a :class:`LazyWave`, read one at a time on access."""

    def __init__(self, wave: LazyWave, spans: Sequence[tuple[float, float]], sr: int):
        self.wave, self.sr = wave, int(sr)
        self.spans = [(float(a), float(b)) for a, b in spans]

    def __len__(self) -> int:
        return len(self.spans)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return LazyClips(self.wave, self.spans[i], self.sr)
        a, b = self.spans[i]
        return self.wave[int(a * self.sr):int(b * self.sr)]


def open_wave(path: Union[str, os.PathLike], sr: int, duration: Optional[float] = None,
              stream_above_sec: Optional[float] = DEFAULT_STREAM_ABOVE_SEC):
    """The whole waveform as an array, or a :class:`LazyWave` when longer than ``stream_above_sec``.

    ``stream_above_sec=None`` never streams; ``0`` always does.

    >>> open_wave  # doctest: +ELLIPSIS
    <function open_wave at ...>
    """
    if duration is None:
        duration = audio.probe(path).duration
    if stream_above_sec is not None and float(duration) > float(stream_above_sec):
        return LazyWave(path, sr)
    return audio.load(path, sr=sr)


def speech_regions(vad, wave, sr: int, chunk_sec: float = DEFAULT_CHUNK_SEC,
                   join_gap_sec: Optional[float] = None) -> list[Span]:
    """VAD over an array (one call) or a :class:`LazyWave` (chunk by chunk, joined at the seams).

    A region cut by a chunk edge is re-joined with its continuation when the gap at the seam
    is at most ``join_gap_sec`` (default: the VAD's ``min_silence_sec``, else 0.3 s).
    """
    if not isinstance(wave, LazyWave):
        return list(vad.speech(wave, sr))
    gap = float(join_gap_sec if join_gap_sec is not None else getattr(vad, "min_silence_sec", 0.3))
    n = len(wave)
    step = max(1, int(chunk_sec * sr))
    out: list[Span] = []
    for a in range(0, n, step):
        b = min(n, a + step)
        off = a / sr
        for s in vad.speech(wave[a:b], sr):
            s = Span(s.start + off, s.end + off)
            if out and s.start - out[-1].end <= gap and abs(out[-1].end - off) <= gap + 0.1:
                out[-1] = Span(out[-1].start, s.end)
            else:
                out.append(s)
    return out


def clips(wave, spans, sr: int):
    """Per-turn clips: a list of array slices, or a :class:`LazyClips` for a :class:`LazyWave`.

    ``spans`` holds objects with ``start``/``end`` or ``(start, end)`` tuples.
    """
    pairs = [(s.start, s.end) if hasattr(s, "start") else (s[0], s[1]) for s in spans]
    if isinstance(wave, LazyWave):
        return LazyClips(wave, pairs, sr)
    return [wave[int(a * sr):int(b * sr)] for a, b in pairs]
