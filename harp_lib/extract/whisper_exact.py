"""Whisper whose transcript does not depend on the CPU: float64 arithmetic, every decision on a grid.

Why: CTranslate2's int8 kernels (and faster-whisper's onnxruntime Silero VAD) pick their code
path from the CPU they run on.  A token whose two best log-probabilities lie closer than the
kernels' rounding differences flips between machines, and with it a word and everything
downstream (issue 38: an Intel Sapphire Rapids host wrote "what a joy!" where the AMD host wrote
"what a joy.").  Pinning the ISA narrows that, it cannot remove it.

How: the same weights (the CTranslate2 ``model.bin``, float16) run here in float64 torch, and
the VAD inside the decoded stretch is the same Silero v6 network (``silero-vad``'s safetensors)
in float64 numpy.  float64 GEMMs from different kernels (AVX-512, AVX2, SSE, any thread count)
differ by ~1e-13 in a log-probability; before any comparison the value goes onto a fixed grid
(:data:`~harp_lib.extract.whisper_exact_grid.GRID`, 2^-24 ~ 6e-8), so two machines disagree only when a value falls within ~1e-13
of a grid boundary *and* that value decides something, a chance of about 1e-6 per decision.
The decisions are: the greedy argmax (ties: the lowest token id), Whisper's timestamp rule
(timestamp mass vs best text token), the no-speech and log-probability thresholds, the VAD's
speech threshold, and the word-alignment DTW, whose cost matrix is put on the grid so that
its path sums are exact.  faster-whisper still orchestrates (windows, prompts, timestamp
segments, word merging): :class:`ExactWhisperModel` gives it this engine instead of
``ctranslate2.models.Whisper``.  tests/extract/test_cross_cpu.py runs the stage's
transcription under other CPU models (qemu-user) and asserts identical bytes.

Decoding follows OpenAI's reference (greedy; suppress-blank, suppress-tokens and timestamp
rules; cross-attention DTW word alignment over the model's alignment heads); the int8
CTranslate2 transcript and this one differ in places (docs/testing.md "Cross-machine bytes").

Cost: one 30-s window's encoder is ~37 GFLOP; float64 runs it at ~15 GFLOP/s per core here
versus CTranslate2 int8's 1.4 s (docs/performance.md).

This module is the faster-whisper glue (:func:`ExactWhisperModel`); the parts are the grid
(:mod:`harp_lib.extract.whisper_exact_grid`), the weight readers
(:mod:`harp_lib.extract.whisper_exact_weights`), the float64 Silero VAD
(:mod:`harp_lib.extract.whisper_exact_vad`) and the float64 Whisper
(:mod:`harp_lib.extract.whisper_exact_decoder`).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import tokenizers

from harp_lib.extract.whisper_exact_decoder import ExactWhisper
from harp_lib.extract.whisper_exact_vad import SileroF64

__all__ = ["ExactWhisperModel"]


# ------------------------------------------------------------------ faster-whisper glue
def _features_class():
    from faster_whisper.feature_extractor import FeatureExtractor  # heavy: faster_whisper (CTranslate2)

    class Float64Features(FeatureExtractor):
        """faster-whisper's log-mel front end in float64 (its own casts everything to float32)."""

        def __init__(self, **kw):
            super().__init__(**kw)
            self.mel_filters = self.get_mel_filters(self.sampling_rate, self.n_fft,
                                                    n_mels=kw.get("feature_size", 80)).astype(np.float64)

        def __call__(self, waveform, padding=160, chunk_length=None):
            if chunk_length is not None:
                self.n_samples = chunk_length * self.sampling_rate
                self.nb_max_frames = self.n_samples // self.hop_length
            wave = np.asarray(waveform, dtype=np.float64)
            if padding:
                wave = np.pad(wave, (0, padding))
            window = np.hanning(self.n_fft + 1)[:-1]
            stft = self.stft(wave, self.n_fft, self.hop_length, window=window, return_complex=True)
            mel = self.mel_filters @ (np.abs(stft[..., :-1]) ** 2)
            log_spec = np.log10(np.clip(mel, 1e-10, None))
            log_spec = np.maximum(log_spec, log_spec.max() - 8.0)
            return (log_spec + 4.0) / 4.0

    return Float64Features


def ExactWhisperModel(model_path, threads: int = 1):
    """A ``faster_whisper.WhisperModel`` running :class:`ExactWhisper` and :class:`SileroF64`."""
    from faster_whisper import WhisperModel  # heavy: faster_whisper (CTranslate2)
    from faster_whisper.utils import get_logger
    import faster_whisper.vad as fw_vad

    class _Model(WhisperModel):
        def __init__(self, path: str, threads: int):    # WhisperModel.__init__ would load ctranslate2
            self.logger = get_logger()
            self.model = ExactWhisper(path, threads)
            self.hf_tokenizer = tokenizers.Tokenizer.from_file(str(Path(path) / "tokenizer.json"))
            self.feat_kwargs = self._get_feature_kwargs(str(path))
            self.feature_extractor = _features_class()(**self.feat_kwargs)
            self.input_stride = 2
            self.num_samples_per_token = self.feature_extractor.hop_length * self.input_stride
            self.frames_per_second = self.feature_extractor.sampling_rate // self.feature_extractor.hop_length
            self.tokens_per_second = self.feature_extractor.sampling_rate // self.num_samples_per_token
            self.time_precision = 0.02
            self.max_length = 448
            self.vad = SileroF64()

        def encode(self, features):
            return self.model.encode(features)

        def transcribe(self, audio, *args, **kwargs):
            # faster-whisper's VAD filter asks faster_whisper.vad.get_vad_model() for its network
            # inside this call (the segments generator runs later, with no VAD)
            saved = fw_vad.get_vad_model
            fw_vad.get_vad_model = lambda: self.vad
            try:
                return super().transcribe(np.asarray(audio, dtype=np.float64), *args, **kwargs)
            finally:
                fw_vad.get_vad_model = saved

    return _Model(str(model_path), threads)
