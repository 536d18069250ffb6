"""The offline cough labeler (``cough_burst``, HARP stage 2): cough-like bursts found by an
energy-onset detector and a flatness / centroid / duration gate (:func:`detect_coughs`), memoised
per clip content (:class:`ContentMemo`, also used by the symptom keyword spotter and the VAD's
cough check).  The labeler protocol: :mod:`harp_lib.extract.labelers`.
"""
from __future__ import annotations

import hashlib
from collections import OrderedDict
from typing import Any, Callable

import numpy as np

from harp_lib.config import register
from harp_lib.core.labels import cough_label

__all__ = ["ContentMemo", "CoughBurstLabeler", "cached_detect_coughs", "detect_coughs"]


class ContentMemo:
    """Results of a pure function of an audio clip, kept per process and keyed by the clip's
    samples (sha1 of the float32 bytes) and the function's options.

    The answering stage listens to the same windows again and again (one consultation's window
    for its symptom and its cough question, the oracle windows of A6 and A7, ...); a labeler
    whose per-clip work is memoised this way hears each distinct clip once.  Bounded (LRU).

    >>> m, calls = ContentMemo(), []
    >>> f = lambda w: calls.append(1) or float(w.sum())
    >>> w = np.ones(160, np.float32)
    >>> m.get(w, ("sum",), lambda: f(w)), m.get(w.copy(), ("sum",), lambda: f(w)), len(calls)
    (160.0, 160.0, 1)
    """

    def __init__(self, maxsize: int = 4096):
        self.maxsize = int(maxsize)
        self._d: "OrderedDict[tuple, Any]" = OrderedDict()

    def get(self, wave: np.ndarray, extra: tuple, fn: Callable[[], Any]) -> Any:
        w = np.ascontiguousarray(wave, dtype=np.float32)
        key = (hashlib.sha1(w.tobytes()).hexdigest(), len(w), extra)
        if key in self._d:
            self._d.move_to_end(key)
        else:
            self._d[key] = fn()
            if len(self._d) > self.maxsize:
                self._d.popitem(last=False)
        return self._d[key]


_COUGH_MEMO = ContentMemo()


def cached_detect_coughs(wave: np.ndarray, sr: int = 16000, **options) -> list:
    """:func:`detect_coughs`, memoised on the clip's samples and the options (:class:`ContentMemo`)."""
    ev = _COUGH_MEMO.get(wave, (int(sr), tuple(sorted(options.items()))),
                         lambda: detect_coughs(wave, sr, **options))
    return list(ev)


def detect_coughs(wave: np.ndarray, sr: int = 16000, *, onset_db: float = 30.0,
                  onset_sec: float = 0.05, min_peak_db: float = -30.0, decay_db: float = 12.0,
                  decay_sec: float = 0.1, merge_sec: float = 0.1, event_db: float = 25.0,
                  max_event_sec: float = 0.8, min_event_sec: float = 0.35,
                  min_flatness: float = 0.007, max_flatness: float = 0.08,
                  min_centroid: float = 1100.0, max_centroid: float = 3500.0,
                  core_sec: float = 0.08, return_features: bool = False) -> list:
    """Cough-like bursts: an explosive, noisy, broadband onset followed by a fast decay.

    Returns ``[(start, end), ...]`` in seconds (10 ms frames).  A *candidate* starts where the
    frame level jumps at least ``onset_db`` above the mean of the preceding 150 ms within
    ``onset_sec``, peaks above ``min_peak_db`` dBFS and falls ``decay_db`` below the peak
    within ``decay_sec``; it lasts while the level stays within ``event_db`` of the peak (at
    most ``max_event_sec``).  Over its explosive phase (``core_sec`` from the onset peak;
    recordings are expected to have a noise floor, as real ones do: digital silence makes
    the phase read as less noisy) the candidate is kept as a cough when

    * it lasts at least ``min_event_sec`` (a plosive or a syllable onset is shorter),
    * the median spectral flatness is in ``[min_flatness, max_flatness]``: noisier than voiced
      speech (harmonic, flatness < 0.005) but not steady hiss (whispered / breathy speech,
      fricatives),
    * the median (magnitude-weighted) spectral centroid is in ``[min_centroid, max_centroid]`` Hz:
      broadband, above voiced speech, below sibilants.

    Candidates that start inside a kept event, or less than ``merge_sec`` after its end, are
    the same cough (its sub-bursts); back-to-back coughs with a short pause count separately.
    Onsets need 150 ms of history (none in the first 150 ms of a clip).
    ``return_features=True`` returns ``(start, end, features)`` for every candidate instead.

    >>> detect_coughs(np.zeros(16000, np.float32))
    []
    """
    import librosa  # heavy: librosa (numba, scipy)
    wave = np.asarray(wave, dtype=np.float32)
    if len(wave) < int(0.2 * sr):
        return []
    hop = int(0.01 * sr)
    S = np.abs(librosa.stft(wave, n_fft=512, hop_length=hop, win_length=int(0.025 * sr)))
    cands = _cough_candidates(S, sr, onset_db=onset_db, onset_sec=onset_sec, min_peak_db=min_peak_db,
                              decay_db=decay_db, decay_sec=decay_sec, event_db=event_db,
                              max_event_sec=max_event_sec, core_sec=core_sec)
    if return_features:
        return [(round(s, 3), round(e, 3), f) for s, e, f in cands]
    return _merge_coughs(cands, merge_sec=merge_sec, min_event_sec=min_event_sec,
                         min_flatness=min_flatness, max_flatness=max_flatness,
                         min_centroid=min_centroid, max_centroid=max_centroid)


def _cough_candidates(S: np.ndarray, sr: int, *, onset_db: float, onset_sec: float, min_peak_db: float,
                      decay_db: float, decay_sec: float, event_db: float, max_event_sec: float,
                      core_sec: float) -> list[tuple[float, float, dict]]:
    """Scan the frame levels of magnitude spectrogram ``S`` for onset-peak-decay candidates."""
    P = S ** 2
    db = 10 * np.log10(P.mean(0) / 512 * 4 + 1e-12)
    n = len(db)
    freqs = np.linspace(0, sr / 2, S.shape[0])
    k_on, k_dec = max(1, int(round(onset_sec / 0.01))), max(1, int(round(decay_sec / 0.01)))
    k_core = max(1, int(round(core_sec / 0.01)))
    cands: list[tuple[float, float, dict]] = []
    i = 15
    while i < n:
        prev = db[i - 15:i].mean()
        seg = db[i:i + k_on + 1]
        pk = i + int(np.argmax(seg))
        if db[pk] - prev >= onset_db and db[pk] >= min_peak_db:
            after = db[pk + 1: pk + 1 + k_dec]
            if len(after) and after.min() <= db[pk] - decay_db:
                e = pk
                while e + 1 < n and db[e + 1] > db[pk] - event_db and (e - i) * 0.01 < max_event_sec:
                    e += 1
                cands.append(_cough_candidate(S, P, db, freqs, i, pk, e, k_core))
                i = pk + 5
                continue
        i += 1
    return cands


def _cough_candidate(S: np.ndarray, P: np.ndarray, db: np.ndarray, freqs: np.ndarray, i: int, pk: int,
                     e: int, k_core: int) -> tuple[float, float, dict]:
    """One candidate's ``(start, end, features)``, flatness and centroid over its explosive phase."""
    n = len(db)
    core = np.arange(pk, min(n, pk + k_core))          # the explosive phase
    pc, mc = P[:, core] + 1e-12, S[:, core] + 1e-9
    flat = float(np.median(np.exp(np.log(pc).mean(0)) / pc.mean(0)))
    cent = float(np.median((freqs[:, None] * mc).sum(0) / mc.sum(0)))
    return (i * 0.01, (e + 1) * 0.01, {"peak_db": round(float(db[pk]), 1),
                                       "flatness": round(flat, 4), "centroid": round(cent, 1),
                                       "duration": round((e + 1 - i) * 0.01, 3)})


def _merge_coughs(cands: list, *, merge_sec: float, min_event_sec: float, min_flatness: float,
                  max_flatness: float, min_centroid: float, max_centroid: float) -> list:
    """Fold sub-bursts into the cough before and keep the candidates that pass the cough gate."""
    merged: list[list[float]] = []
    for s, e, f in cands:
        if merged and s < merged[-1][1] + merge_sec:     # a sub-burst of the cough before
            merged[-1][1] = max(e, merged[-1][1])
            continue
        if (f["duration"] >= min_event_sec and min_flatness <= f["flatness"] <= max_flatness
                and min_centroid <= f["centroid"] <= max_centroid):
            merged.append([s, e])
    return [(round(s, 3), round(e, 3)) for s, e in merged]


@register("labeler", "cough_burst")
class CoughBurstLabeler:
    """Counts cough-like bursts (see :func:`detect_coughs`) -> ``"{n} cough"`` / ``"no cough"``.

    Limits: sneezes have the same explosive, noisy, broadband burst and count as coughs; any
    other short, sudden, noisy sound (claps, knocks) can too; a cough that starts mid-speech
    without a level jump is missed; a cough split by a segment boundary is counted where its
    middle lies.
    """
    name = "cough_burst"
    segment_independent = True   # each clip is labelled on its own (label_turns may split the turns)
    model_id = "energy-onset burst detector + flatness/centroid/duration gate v2"

    def __init__(self, **options):
        self.options = options

    def label(self, wave, sr=16000, *, text="", speaker=None, context=None) -> dict:
        ev = cached_detect_coughs(wave, sr, **self.options)
        offset = float((context or {}).get("offset", 0.0))
        return {"primary": cough_label(len(ev)), "cough_count": len(ev),
                "events": ["cough"] * len(ev),
                "event_times": [[round(offset + s, 3), round(offset + e, 3)] for s, e in ev]}

    #: audio before each segment handed to :meth:`label_recording` (onsets need 150 ms history)
    pad_sec = 0.3

    def label_recording(self, waves, sr, texts, speakers, tags=None, offsets=None, pads=None) -> list[dict]:
        """``waves[i]`` may start ``pads[i]`` s before its segment (history for onsets);
        events whose middle lies in that pad belong to the previous segment and are dropped
        (a cough that starts a few ms before a segment boundary stays with the segment it
        sounds in)."""
        offsets = offsets if offsets is not None else [0.0] * len(waves)
        pads = pads if pads is not None else [0.0] * len(waves)
        out = []
        for w, o, p in zip(waves, offsets, pads):
            ev = [(s, e) for s, e in cached_detect_coughs(w, sr, **self.options) if (s + e) / 2 >= p - 1e-6]
            out.append({"primary": cough_label(len(ev)), "cough_count": len(ev), "events": ["cough"] * len(ev),
                        "event_times": [[round(o + s, 3), round(o + e, 3)] for s, e in ev]})
        return out
