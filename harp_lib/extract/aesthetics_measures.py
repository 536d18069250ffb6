"""Measurable production qualities of a music clip (:func:`aesthetic_features`): SNR, spectral
flatness, clipping and crest factor, roll-off, key clarity and off-scale energy, rhythmic pulse,
repetition and treble share.  :mod:`harp_lib.extract.aesthetics_labeler` scores them.
"""
from __future__ import annotations

import numpy as np

__all__ = ["aesthetic_features"]

_KRUMHANSL_MAJ = np.array([6.35, 2.23, 3.48, 2.33, 4.38, 4.09, 2.52, 5.19, 2.39, 3.66, 2.29, 2.88])
_KRUMHANSL_MIN = np.array([6.33, 2.68, 3.52, 5.38, 2.60, 3.53, 2.54, 4.75, 3.98, 2.69, 3.34, 3.17])
#: the 12 major and 12 harmonic-minor scales as pitch-class masks (off-scale chroma energy)
_SCALES = np.array([np.roll(m, k) for m in (np.array([1, 0, 1, 0, 1, 1, 0, 1, 0, 1, 0, 1.]),
                                            np.array([1, 0, 1, 1, 0, 1, 0, 1, 1, 0, 0, 1.])) for k in range(12)])


def aesthetic_features(wave: np.ndarray, sr: int = 16000) -> dict[str, float]:
    """Measurable production qualities of a music clip.

    * ``snr_db``: 95th / 10th percentile frame power (dB) - a noise floor fills quiet frames
    * ``flatness``: median spectral flatness (noise-like spectrum is high)
    * ``clip_frac``: fraction of samples within 1 % of full scale / of the clip's peak
    * ``crest_db``: peak over RMS level (dB); clipping flattens the peaks (clipped songs 4-10 dB,
      unclipped renders and recordings 15-25 dB), whatever the playback level
    * ``rolloff_hz``: median 95 % spectral roll-off of the louder half of the frames (above
      each frequency bin's noise floor, so hiss is not bandwidth); a
      low-passed ("muffled") mix loses its top end (9 kHz-band renders: 3.6-6 kHz; 2.2 kHz low-pass: ~2.2 kHz)
    * ``key_clarity``: best correlation of mean chroma with the 24 Krumhansl key profiles
      (wrong notes blur the key), median over 10 s windows (a song may change key); chroma after subtracting twice each frequency bin's 20th
      percentile power, so stationary hiss and hum do not blur it
    * ``pulse``: height of the strongest onset-autocorrelation peak at 0.25-2 s lags
      (timing jitter weakens it)
    * ``repetition``: mean of each beat-synchronous-ish chroma frame's best match 2-8 s away
    * ``off_scale``: share of the (floor-subtracted) chroma energy outside the best-fitting major /
      harmonic-minor scale, median over the same 10 s windows (wrong notes, a semitone or a
      tritone off, fall outside the scale: clean renders 0.21-0.24, songs with wrong notes 0.28-0.33)
    * ``treble_db``: share (dB) of the music's power above 2.5 kHz, estimated so that a stationary
      hiss does not count (:func:`_treble_db`): a low-passed ("muffled") mix has no treble of its
      own even under hiss, which ``rolloff_hz`` reads as bandwidth

    >>> f = aesthetic_features(np.zeros(16000 * 3, np.float32))
    >>> sorted(f)
    ['clip_frac', 'crest_db', 'flatness', 'key_clarity', 'off_scale', 'pulse', 'repetition', 'rolloff_hz', 'snr_db', 'treble_db']
    """
    import librosa  # heavy: librosa (numba, scipy)
    w = np.asarray(wave, dtype=np.float32)
    if len(w) < sr:
        w = np.pad(w, (0, sr - len(w)))
    hop = 512
    S = np.abs(librosa.stft(w, n_fft=2048, hop_length=hop))
    p = (S ** 2).mean(0) + 1e-12
    snr = float(10 * np.log10(np.percentile(p, 95) / np.percentile(p, 10)))
    flat = float(np.median(librosa.feature.spectral_flatness(S=S)[0]))
    peak = float(np.max(np.abs(w))) if np.any(w) else 0.0
    clip = float(np.mean(np.abs(w) >= 0.99 * peak)) if peak > 0.5 else 0.0
    crest = _crest_db(w, sr)
    rolloff = _rolloff_hz(S, p, sr)
    treble = _treble_db(S ** 2, sr)
    chroma, key, off_scale = _key_features(S, sr, hop)
    fps = sr / hop
    pulse = _pulse(S, sr, hop)
    rep = _repetition(chroma, fps)
    return {"snr_db": snr, "flatness": flat, "clip_frac": clip, "key_clarity": key, "pulse": pulse,
            "repetition": rep, "crest_db": crest, "rolloff_hz": rolloff, "off_scale": off_scale,
            "treble_db": treble}


def _crest_db(w: np.ndarray, sr: int) -> float:
    """Crest factor per 2 s block, median: a crossfade into another song does not set the peak."""
    blk = 2 * sr
    crests = []
    for i in range(0, max(1, len(w) - blk + 1), blk):
        b = w[i:i + blk].astype(np.float64)
        r = float(np.sqrt(np.mean(b ** 2)))
        if r > 1e-6:
            crests.append(20 * np.log10(float(np.max(np.abs(b))) / r))
    return float(np.median(crests)) if crests else 0.0


def _rolloff_hz(S: np.ndarray, p: np.ndarray, sr: int) -> float:
    """Median 95 % roll-off of the louder half of the frames, of the spectrum above each bin's
    noise floor: hiss must not read as bandwidth."""
    import librosa  # heavy: librosa (numba, scipy)
    loud = p >= np.percentile(p, 50)
    clean_spec = np.sqrt(np.maximum(S ** 2 - 2.0 * np.percentile(S ** 2, 20, axis=1, keepdims=True), 0.0)) + 1e-9
    roll = librosa.feature.spectral_rolloff(S=clean_spec, sr=sr, roll_percent=0.95)[0]
    return float(np.median(roll[loud])) if np.any(loud) else 0.0


def _key_features(S: np.ndarray, sr: int, hop: int) -> tuple[np.ndarray, float, float]:
    """``(chroma, key_clarity, off_scale)``: chroma after subtracting each bin's noise floor (a
    stationary hiss/hum blurs the key otherwise); key clarity and off-scale share per ~10 s
    window, median: a song may change key (a transposed repeat)."""
    import librosa  # heavy: librosa (numba, scipy)
    P2 = S ** 2
    P2 = np.maximum(P2 - 2.0 * np.percentile(P2, 20, axis=1, keepdims=True), 0.0)
    raw_chroma = librosa.feature.chroma_stft(S=P2 + 1e-12, sr=sr, norm=None)   # energy per pitch class
    chroma = librosa.util.normalize(raw_chroma, norm=np.inf, axis=0)           # librosa's default form
    profs = np.array([np.roll(prof, k) for prof in (_KRUMHANSL_MAJ, _KRUMHANSL_MIN) for k in range(12)])
    profs = (profs - profs.mean(1, keepdims=True)) / profs.std(1, keepdims=True)
    kw = max(1, int(10.0 * sr / hop))
    keys, offs = [], []
    for i in range(0, max(1, chroma.shape[1] - kw // 2), kw):
        cm = chroma[:, i:i + kw].mean(1)
        if cm.std() > 1e-9:
            keys.append(float(((cm - cm.mean()) / cm.std() @ profs.T).max() / 12))
            ce = raw_chroma[:, i:i + kw].sum(1)
            offs.append(1.0 - float((_SCALES @ (ce / max(float(ce.sum()), 1e-12))).max()))
    key = float(np.median(keys)) if keys else 0.0
    off_scale = float(np.median(offs)) if offs else 0.0
    return chroma, key, off_scale


def _pulse(S: np.ndarray, sr: int, hop: int) -> float:
    """Height of the strongest onset-autocorrelation peak at 0.25-2 s lags."""
    import librosa  # heavy: librosa (numba, scipy)
    onset = librosa.onset.onset_strength(S=librosa.power_to_db(S ** 2), sr=sr, hop_length=hop)
    fps = sr / hop
    o = onset - onset.mean()
    ac = np.correlate(o, o, mode="full")[len(o) - 1:]
    ac = ac / (ac[0] + 1e-12)
    lo, hi = int(0.25 * fps), min(len(ac) - 1, int(2.0 * fps))
    return float(ac[lo:hi].max()) if hi > lo else 0.0


def _repetition(chroma: np.ndarray, fps: float) -> float:
    """Mean of each (every 4th) chroma frame's best match 2-8 s away."""
    c = chroma / (np.linalg.norm(chroma, axis=0, keepdims=True) + 1e-9)
    step = 4
    cs = c[:, ::step]
    sim = cs.T @ cs
    lag_lo, lag_hi = int(2 * fps / step), int(8 * fps / step)
    best = [sim[i, i + lag_lo:i + lag_hi].max() for i in range(max(0, sim.shape[0] - lag_lo)) if i + lag_lo < sim.shape[0]]
    return float(np.mean(best)) if best else 0.0


def _treble_db(P: np.ndarray, sr: int, split_hz: float = 2500.0, win_frames: int = 312) -> float:
    """Treble share (dB, floor -60) of the music in a power spectrogram ``P`` (bins x frames):
    per ~10 s window the larger of two estimates, each blind to a stationary noise in its own way,
    then the median over the windows (a crossfade into a brighter neighbour spoils a window or two,
    not the song).

    * *floor*: the louder half of the frames' mean spectrum minus 9x each bin's 20th-percentile
      power (about twice a stationary noise's mean).  Exact without noise; under hiss it also
      removes sustained real treble.
    * *co-variation*: per bin, mean power of the frames whose band below 1.5 kHz is in its top half
      minus that of its bottom 30 %; summed with its sign over the treble bins (a noise's
      fluctuations cancel in the sum; clipped per bin they would read as -30 dB of treble), taken
      absolute.  Only treble that moves with the music counts, so hiss under a muffled mix reads
      near nothing; sustained treble moving with nothing reads low, which the floor estimate covers
      when there is no noise.

    Calibration renders: clean -25 to -9 dB; 2.2 kHz low-pass about -30; 900 Hz low-pass -45 to
    -60, with or without hiss (scripts/calibrate_aesthetics.py).
    """
    freqs = np.linspace(0.0, sr / 2, P.shape[0])
    hi, lo_band = freqs > split_hz, freqs < 1500.0
    k = max(1, int(round(P.shape[1] / win_frames)))
    shares = []
    for W in np.array_split(P, k, axis=1):
        p = W.sum(0)
        loud = p >= np.percentile(p, 50)
        music = np.maximum(W[:, loud].mean(1) - 9.0 * np.percentile(W, 20, axis=1), 0.0)
        tot = float(music.sum())
        floor_est = float(music[hi].sum()) / tot if tot > 0 else 0.0
        low = W[lo_band].sum(0)
        up, down = low >= np.percentile(low, 50), low <= np.percentile(low, 30)
        cov_est = 0.0
        if np.any(up) and np.any(down):
            d = W[:, up].mean(1) - W[:, down].mean(1)
            tot = float(np.maximum(d, 0.0).sum())
            cov_est = abs(float(d[hi].sum())) / tot if tot > 0 else 0.0
        shares.append(min(1.0, max(floor_est, cov_est, 1e-6)))
    return float(10 * np.log10(float(np.median(shares))))
