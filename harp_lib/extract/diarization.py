"""Offline speaker diarization: silero speech regions -> resemblyzer d-vectors on sliding
windows -> spectral clustering with the speaker count estimated by the eigengap -> clusters
that are a voice *mode* (several voices in one rendering, e.g. breathy or hoarse speech)
given back to the voices by pitch (:func:`dissolve_voice_modes`) -> two clusters that are one
voice on a rescaled spectrum (played faster or slower, as a resampled rendering or a tape-speed
change) merged (:meth:`SpectralDiarizer.merge_rescaled_voices`).

Measures: who speaks when, as ``SPEAKER_xx`` labels consistent over the whole recording
(numbered by first appearance).  Limits: one speaker per window (overlapped speech goes to
one of them); speaker changes inside a window are placed at the midpoint between window
centres (resolution ``1 / rate`` s); very similar voices can be merged.

>>> from harp_lib.extract.diarization import estimate_speakers
>>> import numpy as np
>>> e = np.repeat(np.eye(3), 20, axis=0) + 0.01        # three clean clusters
>>> estimate_speakers(e / np.linalg.norm(e, axis=1, keepdims=True), max_speakers=6)
3
>>> estimate_speakers(e / np.linalg.norm(e, axis=1, keepdims=True), max_speakers=4, min_speakers=4)   # a given count
4

The speaker count can be given (``num_speakers``) or bounded (``min_speakers`` /
``max_speakers``), as in pyannote's pipeline: :func:`speaker_bounds`.
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from harp_lib.config import register
from harp_lib.core.timespan import Span
from harp_lib.extract.embedders import load_voice_encoder  # noqa: F401  (re-exported: the encoder lives with the embedders)
from harp_lib.extract.turns import Turn, relabel_by_first_appearance
from harp_lib.extract.vad import SileroVAD

__all__ = ["SpectralDiarizer", "speaker_bounds", "estimate_speakers", "spectral_labels", "load_voice_encoder",
           "window_pitch", "dissolve_voice_modes", "rescale"]


def speaker_bounds(num_speakers: Optional[int] = None, min_speakers: Optional[int] = None,
                   max_speakers: Optional[int] = None) -> tuple[int, Optional[int]]:
    """``(min, max)`` speaker counts from a given count or bounds, as pyannote's pipeline reads
    them: ``num_speakers`` overrides both bounds; no minimum is 1, no maximum is None (unbounded).
    A count that is not a positive integer, or a minimum above the maximum, is a ``ValueError``
    whose one line says which.

    >>> speaker_bounds(), speaker_bounds(2), speaker_bounds(min_speakers=2, max_speakers=4)
    ((1, None), (2, 2), (2, 4))
    >>> speaker_bounds(3, max_speakers=2)     # the count wins over the bounds
    (3, 3)
    """
    for what, v in (("num_speakers", num_speakers), ("min_speakers", min_speakers), ("max_speakers", max_speakers)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1):
            raise ValueError(f"{what} must be a positive integer, got {v!r}")
    if num_speakers is not None:
        return int(num_speakers), int(num_speakers)
    lo = 1 if min_speakers is None else int(min_speakers)
    if max_speakers is not None and lo > max_speakers:
        raise ValueError(f"min_speakers ({lo}) is above max_speakers ({max_speakers}); give min <= max, "
                         f"or num_speakers for an exact count")
    return lo, None if max_speakers is None else int(max_speakers)


def _affinity(emb: np.ndarray, prune: float) -> np.ndarray:
    """Cosine affinity, row-wise pruned to the top ``prune`` fraction, symmetrised."""
    a = np.clip(emb @ emb.T, 0.0, 1.0)
    n = len(a)
    keep = max(2, int(np.ceil(prune * n)))
    if keep < n:
        thr = -np.partition(-a, keep - 1, axis=1)[:, keep - 1:keep]
        a = np.where(a >= thr, a, a * 0.01)
    a = 0.5 * (a + a.T)
    np.fill_diagonal(a, 1.0)
    return a


def _laplacian_eig(a: np.ndarray):
    d = a.sum(axis=1)
    dinv = 1.0 / np.sqrt(np.maximum(d, 1e-12))
    lap = np.eye(len(a)) - dinv[:, None] * a * dinv[None, :]
    vals, vecs = np.linalg.eigh(lap)
    return vals, vecs


def estimate_speakers(emb: np.ndarray, max_speakers: int = 8, prune: float = 0.3,
                      min_speakers: int = 1) -> int:
    """Number of speakers = position of the largest eigengap of the normalised Laplacian,
    searched over ``min_speakers..max_speakers`` (never more than there are windows)."""
    n = len(emb)
    lo = max(1, min(int(min_speakers), n))
    m = min(int(max_speakers), n - 1)
    if n < 3 or lo >= m:
        return max(lo, min(m, 1)) if n >= 1 else 1
    vals, _ = _laplacian_eig(_affinity(emb, prune))
    gaps = np.diff(vals[: m + 1])
    return int(np.argmax(gaps[lo - 1:])) + lo


def spectral_labels(emb: np.ndarray, k: int, prune: float = 0.3, seed: int = 0) -> np.ndarray:
    """Cluster rows of ``emb`` into ``k`` groups (normalised spectral embedding + k-means)."""
    if k <= 1 or len(emb) <= k:
        return np.zeros(len(emb), dtype=int) if k <= 1 else np.arange(len(emb))
    from sklearn.cluster import KMeans  # heavy: scikit-learn (~1.6 s)
    _, vecs = _laplacian_eig(_affinity(emb, prune))
    u = vecs[:, :k]
    u = u / np.maximum(np.linalg.norm(u, axis=1, keepdims=True), 1e-12)
    return KMeans(k, n_init=10, random_state=seed).fit_predict(u)


def window_pitch(wave: np.ndarray, sr: int, centres: np.ndarray, half: float = 0.8) -> np.ndarray:
    """Median F0 (semitones re 100 Hz) of each d-vector window, NaN where too little is voiced.

    The signal is low-passed at 1 kHz and tracked at 4 kHz (``librosa.yin``, 60-400 Hz, 10 ms
    hop), so breath or band noise above 1 kHz (breathy / hoarse voice) does not move the F0;
    only frames at or above the window's median level count.
    """
    import librosa  # heavy: librosa (numba, scipy)
    from scipy.signal import butter, sosfiltfilt  # heavy: scipy.signal (~0.8 s)
    out = np.full(len(centres), np.nan)
    if len(centres) == 0 or len(wave) < sr // 4:
        return out
    y = sosfiltfilt(butter(6, 1000.0, "low", fs=sr, output="sos"), np.asarray(wave, np.float64))
    y = librosa.resample(y.astype(np.float32), orig_sr=sr, target_sr=4000)
    f0 = librosa.yin(y, fmin=60, fmax=400, sr=4000, frame_length=256, hop_length=40)
    lev = librosa.feature.rms(y=y, frame_length=256, hop_length=40)[0][: len(f0)]
    for i, c in enumerate(centres):
        a, b = max(0, int((c - half) * 100)), int((c + half) * 100)
        f, r = f0[a:b], lev[a:b]
        keep = r >= np.median(r) if len(r) else r
        if keep.sum() > 10:
            out[i] = 12 * np.log2(np.median(f[keep]) / 100.0)
    return out


def _split_count(emb: np.ndarray, max_speakers: int, prune: float, max_points: int) -> int:
    sub = emb[:: max(1, int(np.ceil(len(emb) / max_points)))]
    return estimate_speakers(sub, max_speakers, prune)


def dissolve_voice_modes(emb: np.ndarray, labels: np.ndarray, pitch: np.ndarray, regions: np.ndarray,
                         min_groups: int = 3, min_windows: int = 40, max_speakers: int = 8,
                         prune: float = 0.3, max_points: int = 1500, min_speakers: int = 1) -> np.ndarray:
    """Give the windows of a *voice-mode* cluster back to the voices by pitch (issue 27).

    A voice-mode cluster holds several voices in one rendering (e.g. breathy or hoarse speech
    of every voice): its own windows split (eigengap) into ``min_groups`` or more groups, and
    those groups' median F0 point at two or more different other clusters.  Each speech region's
    windows of such a cluster go to the other cluster whose F0 median is nearest in units of its
    inter-quartile range (at least 0.5 st); regions without F0 go to the nearest d-vector centroid.
    No cluster is dissolved that would leave fewer than ``min_speakers`` clusters.
    """
    labels = np.asarray(labels).copy()
    ids = [int(k) for k in np.unique(labels)]
    if len(ids) < 3 or not np.isfinite(pitch).any():
        return labels
    e = emb / np.maximum(np.linalg.norm(emb, axis=1, keepdims=True), 1e-12)
    groups = {k: (_split_count(e[labels == k], max_speakers, prune, max_points)
                  if (labels == k).sum() >= min_windows else 1) for k in ids}
    cand = [k for k in ids if groups[k] >= min_groups]
    main = [k for k in ids if k not in cand and np.isfinite(pitch[labels == k]).sum() >= min_windows // 2]
    if not cand or len(main) < 2:
        return labels
    med = np.array([np.nanmedian(pitch[labels == k]) for k in main])
    iqr = np.array([max(0.5, float(np.subtract(*np.nanpercentile(pitch[labels == k], [75, 25])))) for k in main])
    cents = np.stack([e[labels == k].mean(0) for k in main])

    def nearest(idx: np.ndarray) -> int:
        f = pitch[idx][np.isfinite(pitch[idx])]
        if len(f):
            return main[int(np.argmin(np.abs(np.median(f) - med) / iqr))]
        return main[int(np.argmax(cents @ e[idx].mean(0)))]

    for m in cand:
        if len(np.unique(labels)) - 1 < min_speakers:
            break
        idx = np.flatnonzero(labels == m)
        sub = spectral_labels(e[idx], groups[m], prune)
        if len({nearest(idx[sub == g]) for g in np.unique(sub)}) < 2:
            continue                      # one voice in several styles: a speaker, keep it
        for r in np.unique(regions[idx]):
            ii = idx[regions[idx] == r]
            labels[ii] = nearest(ii)
    return labels


def rescale(x: np.ndarray, semitones: float, sr: int = 16000) -> np.ndarray:
    """``x`` played ``2 ** (semitones / 12)`` times faster (pitch *and* formants moved by
    ``semitones``, duration scaled inversely): the tape-speed change, by band-limited resampling."""
    import librosa  # heavy: librosa (numba, scipy)
    target = int(round(sr / 2.0 ** (semitones / 12.0)))
    if target == sr:
        return np.asarray(x, np.float32)
    return librosa.resample(np.asarray(x, np.float32), orig_sr=sr, target_sr=target, res_type="soxr_hq")


def _mode_filter(labels: np.ndarray, width: int) -> np.ndarray:
    if width <= 1 or len(labels) <= 2:
        return labels
    out = labels.copy()
    h = width // 2
    for i in range(len(labels)):
        win = labels[max(0, i - h): i + h + 1]
        vals, counts = np.unique(win, return_counts=True)
        best = vals[counts == counts.max()]
        out[i] = labels[i] if labels[i] in best else best[0]
    return out


@register("diarization", "spectral")
class SpectralDiarizer:
    """resemblyzer + spectral clustering diarizer (eigengap speaker count); see module doc."""
    name = "spectral"
    model_id = "resemblyzer-0.1.4 GE2E d-vector + spectral clustering"

    def __init__(self, rate: float = 4.0, max_speakers: int = 8, prune: float = 0.3,
                 merge_cos: float = 0.92, max_points: int = 1500, smooth: int = 5,
                 join_gap_sec: float = 1.0, seed: int = 0, mode_groups: int = 3,
                 rescale_max_st: float = 6.0, rescale_share: float = 0.8, rescale_regions: int = 8,
                 rescale_min_windows: int = 40, vad: Optional[dict] = None, min_speakers: int = 1,
                 num_speakers: Optional[int] = None):
        speaker_bounds(max_speakers=max_speakers)                      # a positive integer, or one error line
        # the count found lies in min_speakers..max_speakers (a higher minimum lifts the search range);
        # num_speakers fixes it (both bounds)
        self.min_speakers, hi = speaker_bounds(num_speakers, min_speakers)
        self.num_speakers = num_speakers
        self.max_speakers = hi if hi is not None else max(int(max_speakers), self.min_speakers)
        self.rate, self.prune = rate, prune
        self.mode_groups = mode_groups
        self.rescale_max_st, self.rescale_share = rescale_max_st, rescale_share
        self.rescale_regions, self.rescale_min_windows = rescale_regions, rescale_min_windows
        self.merge_cos, self.max_points, self.smooth = merge_cos, max_points, smooth
        self.join_gap_sec, self.seed = join_gap_sec, seed
        self.vad_options = dict(vad or {})
        self._vad = None
        self.encoder = load_voice_encoder()

    # -- windows ------------------------------------------------------------------------
    def _partials(self, x: np.ndarray):
        """d-vectors of the 1.6 s windows (``rate`` per second) of one clip, and their sample
        slices: the clip levelled to -30 dBFS (raised only), as every d-vector here is made."""
        from resemblyzer.audio import normalize_volume  # heavy: resemblyzer (torch, ~1.7 s)
        x = normalize_volume(np.asarray(x, np.float32), -30, increase_only=True)
        _, partials, slices = self.encoder.embed_utterance(x, return_partials=True, rate=self.rate, min_coverage=0.5)
        return np.asarray(partials, np.float32), slices

    def window_embeddings(self, wave: np.ndarray, sr: int, speech: Sequence[Span]):
        """d-vectors of 1.6 s windows (``rate`` per second) inside each speech region.

        Returns ``(emb (n, 256), centres (n,), region index (n,))``.
        """
        embs, centres, regions = [], [], []
        for ri, sp in enumerate(speech):
            s, e = int(sp.start * sr), min(len(wave), int(sp.end * sr))
            if e - s < int(0.2 * sr):
                continue
            partials, slices = self._partials(wave[s:e])
            for p, sl in zip(partials, slices):
                c = (sl.start + min(sl.stop, e - s)) / 2 / sr
                embs.append(p)
                centres.append(sp.start + min(c, (e - s) / sr))
                regions.append(ri)
        if not embs:
            return np.zeros((0, 256), np.float32), np.zeros(0), np.zeros(0, int)
        return np.asarray(embs, np.float32), np.asarray(centres), np.asarray(regions)

    def cluster(self, emb: np.ndarray) -> np.ndarray:
        """Labels for every window: cluster a strided subset, assign the rest to centroids."""
        n = len(emb)
        if n == 0:
            return np.zeros(0, int)
        stride = max(1, int(np.ceil(n / self.max_points)))
        sub = emb[::stride]
        k = estimate_speakers(sub, self.max_speakers, self.prune, self.min_speakers)
        lab = spectral_labels(sub, k, self.prune, self.seed)
        cents = np.stack([sub[lab == c].mean(0) for c in np.unique(lab)])
        # merge clusters whose centroids are nearly the same voice (guards over-splitting), never
        # below min_speakers
        while len(cents) > max(1, self.min_speakers):
            cn = cents / np.linalg.norm(cents, axis=1, keepdims=True)
            sim = cn @ cn.T
            np.fill_diagonal(sim, -1)
            i, j = np.unravel_index(np.argmax(sim), sim.shape)
            if sim[i, j] < self.merge_cos:
                break
            cents = np.delete(np.vstack([cents, (cents[i] + cents[j]) / 2]), [i, j], axis=0)
        cn = cents / np.linalg.norm(cents, axis=1, keepdims=True)
        return np.argmax(emb @ cn.T, axis=1)

    def rescaled_share(self, wave: np.ndarray, sr: int, emb: np.ndarray, labels: np.ndarray,
                       centres: np.ndarray, regions: np.ndarray, z: int, y: int, semitones: float) -> float:
        """Share of cluster ``z``'s d-vectors, re-computed on its audio moved by ``semitones``
        (:func:`rescale`), whose nearest cluster centroid is ``y``.

        The audio is the span of ``z``'s windows in each of its ``rescale_regions`` speech
        regions with the most such windows (ties: earlier region first).
        """
        ids = [int(k) for k in np.unique(labels)]
        e = emb / np.maximum(np.linalg.norm(emb, axis=1, keepdims=True), 1e-12)
        cents = np.stack([e[labels == k].mean(0) for k in ids])
        cents /= np.maximum(np.linalg.norm(cents, axis=1, keepdims=True), 1e-12)
        own = np.flatnonzero(labels == z)
        regs, counts = np.unique(regions[own], return_counts=True)
        order = sorted(range(len(regs)), key=lambda i: (-counts[i], regs[i]))[: self.rescale_regions]
        half = 0.8                                   # half a 1.6 s d-vector window
        parts = []
        for i in order:
            c = centres[own[regions[own] == regs[i]]]
            a, b = int(max(0.0, c.min() - half) * sr), int((c.max() + half) * sr)
            parts.append(self._partials(rescale(wave[a:b], semitones, sr))[0])
        p = np.concatenate(parts) if parts else np.zeros((0, emb.shape[1]), np.float32)
        if not len(p):
            return 0.0
        near = np.argmax(p @ cents.T, axis=1)
        return float(np.mean(near == ids.index(y)))

    def merge_rescaled_voices(self, wave: np.ndarray, sr: int, emb: np.ndarray, labels: np.ndarray,
                              centres: np.ndarray, regions: np.ndarray, pitch: np.ndarray) -> np.ndarray:
        """Merge two clusters that are one voice on a rescaled spectrum (issue 27).

        Playing speech faster or slower moves its pitch and its formants together, and the
        GE2E d-vector then lands in a cluster of its own: a rendering made by resampling (the
        benchmark's ``rms`` voice takes its emotional pitch that way, so its sad speech is the
        same voice 2.6 semitones down) or a tape-speed / sample-rate change in a real archive.
        For every pair of clusters (``rescale_min_windows`` windows or more each) whose median
        F0 lie at most ``rescale_max_st`` semitones apart, ``z``'s audio is moved to ``y``'s
        pitch and re-embedded; the pair is one voice when, in **both** directions, at least
        ``rescale_share`` of the re-embedded windows are nearest to the other cluster.  Two
        different voices fail: a rescaled voice keeps its own timbre and stays nearest itself
        (or lands nowhere).  The larger cluster keeps its label.  No pair is merged that would
        leave fewer than ``min_speakers`` clusters.
        """
        labels = np.asarray(labels).copy()
        ids = [int(k) for k in np.unique(labels)]
        if self.rescale_max_st <= 0 or len(ids) < 2 or not np.isfinite(pitch).any():
            return labels
        big = [k for k in ids if (labels == k).sum() >= self.rescale_min_windows
               and np.isfinite(pitch[labels == k]).any()]
        med = {k: float(np.nanmedian(pitch[labels == k])) for k in big}
        pairs = sorted(((abs(med[b] - med[a]), a, b) for i, a in enumerate(big) for b in big[i + 1:]
                        if abs(med[b] - med[a]) <= self.rescale_max_st))
        parent = {k: k for k in ids}

        def root(k: int) -> int:
            while parent[k] != k:
                k = parent[k]
            return k

        for _, a, b in pairs:
            if root(a) == root(b):
                continue
            if len({root(k) for k in ids}) - 1 < self.min_speakers:
                break
            if self.rescaled_share(wave, sr, emb, labels, centres, regions, a, b, med[b] - med[a]) < self.rescale_share:
                continue
            if self.rescaled_share(wave, sr, emb, labels, centres, regions, b, a, med[a] - med[b]) < self.rescale_share:
                continue
            keep, drop = (a, b) if ((labels == a).sum(), -a) >= ((labels == b).sum(), -b) else (b, a)
            parent[root(drop)] = root(keep)
        return np.array([root(int(k)) for k in labels])

    def segment(self, wave: np.ndarray, sr: int = 16000, speech: Optional[Sequence[Span]] = None) -> list[Turn]:
        """Speaker turns ``[Turn(start, end, "SPEAKER_xx")]`` sorted by start."""
        if speech is None:
            if self._vad is None:
                self._vad = SileroVAD(**self.vad_options)
            speech = self._vad.speech(wave, sr)
        speech = list(speech)
        emb, centres, regions = self.window_embeddings(wave, sr, speech)
        labels = self.cluster(emb)
        n_clusters = len(set(labels.tolist()))
        pitch = None
        if (self.mode_groups and n_clusters >= 3) or (self.rescale_max_st > 0 and n_clusters >= 2):
            pitch = window_pitch(wave, sr, centres)
        if self.mode_groups and n_clusters >= 3:
            labels = dissolve_voice_modes(emb, labels, pitch, regions,
                                          self.mode_groups, max_speakers=self.max_speakers,
                                          prune=self.prune, max_points=self.max_points,
                                          min_speakers=self.min_speakers)
        if self.rescale_max_st > 0 and pitch is not None:
            labels = self.merge_rescaled_voices(wave, sr, emb, labels, centres, regions, pitch)
        return self.turns(speech, labels, centres, regions)

    def turns(self, speech: Sequence[Span], labels: np.ndarray, centres: np.ndarray,
              regions: np.ndarray) -> list[Turn]:
        """Speaker turns from the window labels: cut inside a speech region where the (mode-filtered)
        label changes, same-speaker turns joined across pauses up to ``join_gap_sec``."""
        turns: list[Turn] = []
        default = str(labels[0]) if len(labels) else "0"
        for ri, sp in enumerate(speech):
            idx = np.flatnonzero(regions == ri)
            if len(idx) == 0:
                # too short to embed: take the nearest embedded window's speaker
                if len(centres):
                    j = int(np.argmin(np.abs(centres - sp.middle)))
                    turns.append(Turn(sp.start, sp.end, str(labels[j])))
                else:
                    turns.append(Turn(sp.start, sp.end, default))
                continue
            lab = _mode_filter(labels[idx], self.smooth)
            cs = centres[idx]
            s = sp.start
            for i in range(1, len(idx)):
                if lab[i] != lab[i - 1]:
                    cut = (cs[i] + cs[i - 1]) / 2
                    turns.append(Turn(s, cut, str(lab[i - 1])))
                    s = cut
            turns.append(Turn(s, sp.end, str(lab[-1])))
        # join consecutive turns of the same speaker across short pauses
        joined: list[Turn] = []
        for t in sorted(turns, key=lambda t: t.start):
            if joined and joined[-1].speaker == t.speaker and t.start - joined[-1].end <= self.join_gap_sec:
                joined[-1] = Turn(joined[-1].start, t.end, t.speaker)
            else:
                joined.append(t)
        return relabel_by_first_appearance(joined)
