"""Silero VAD v6 in float64 numpy (:class:`SileroF64`), probabilities on the grid of
:mod:`harp_lib.extract.whisper_exact_grid`: the VAD inside the exact Whisper engine's decoded
stretch (:mod:`harp_lib.extract.whisper_exact`) and the ``silero`` VAD backend's network.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import numpy as np

from harp_lib.extract.whisper_exact_grid import canon
from harp_lib.extract.whisper_exact_weights import _silero_weights, silero_weights_path

__all__ = ["SileroF64"]


# ------------------------------------------------------------------ VAD
class SileroF64:
    """Silero VAD v6 in float64 numpy: speech probability per 512-sample chunk (32 ms at 16 kHz).

    The same network as faster-whisper's ``silero_vad_v6.onnx`` (max difference to it ~1e-6 on
    real speech; tests/extract/test_whisper_exact.py), called the same way: each chunk sees the
    previous chunk's last 64 samples, the LSTM state runs over the whole input.  Probabilities
    are returned on the :data:`GRID`.
    """

    def __init__(self, path: Optional[Path] = None):
        self.w = _silero_weights(Path(path or silero_weights_path()))

    @staticmethod
    def _conv(x, w, b, stride):
        """1-d convolution, kernel 3, padding 1: ``x`` (N, C, L) -> (N, O, L')."""
        xp = np.pad(x, ((0, 0), (0, 0), (1, 1)))
        L = (xp.shape[2] - 3) // stride + 1
        cols = np.stack([xp[:, :, k: k + stride * (L - 1) + 1: stride] for k in range(3)], -1)  # N,C,L,3
        return np.einsum("nclk,ock->nol", cols, w, optimize=True) + b[None, :, None]

    def features(self, chunks: np.ndarray) -> np.ndarray:
        """LSTM inputs (N, 128) of ``chunks`` (N, 576): STFT magnitude and the conv stack."""
        w = self.w
        x = np.pad(chunks, ((0, 0), (0, 64)), mode="reflect")                  # N, 640
        frames = np.stack([x[:, i * 128: i * 128 + 256] for i in range(4)], 1)  # N, 4, 256
        spec = frames @ w["stft_conv.weight"][:, 0, :].T                        # N, 4, 258
        mag = np.sqrt(spec[..., :129] ** 2 + spec[..., 129:] ** 2).transpose(0, 2, 1)  # N, 129, 4
        h = np.maximum(self._conv(mag, w["conv1.weight"], w["conv1.bias"], 1), 0)
        h = np.maximum(self._conv(h, w["conv2.weight"], w["conv2.bias"], 2), 0)
        h = np.maximum(self._conv(h, w["conv3.weight"], w["conv3.bias"], 2), 0)
        h = np.maximum(self._conv(h, w["conv4.weight"], w["conv4.bias"], 1), 0)
        return h[:, :, 0]

    def __call__(self, audio: np.ndarray, num_samples: int = 512, context_size_samples: int = 64):
        """faster-whisper's ``SileroVADModel`` interface: ``(N, 1)`` probabilities of ``audio``
        (1-d, a multiple of 512 samples)."""
        audio = np.asarray(audio, dtype=np.float64)
        if audio.ndim != 1 or len(audio) % num_samples:
            raise ValueError(f"SileroF64 expects 1-d audio of a multiple of {num_samples} samples")
        chunks = audio.reshape(-1, num_samples)
        context = np.zeros((len(chunks), context_size_samples))
        context[1:] = chunks[:-1, -context_size_samples:]
        batched = np.concatenate([context, chunks], 1)
        w = self.w
        gates_x = np.concatenate([self.features(batched[i: i + 4096]) for i in range(0, len(batched), 4096)]) \
            @ w["lstm_cell.weight_ih"].T + w["lstm_cell.bias_ih"] + w["lstm_cell.bias_hh"]
        w_hh = w["lstm_cell.weight_hh"].T
        h, c = np.zeros(128), np.zeros(128)
        hs = np.empty((len(chunks), 128))
        for t in range(len(chunks)):
            g = gates_x[t] + h @ w_hh
            i, f, gg, o = g[:128], g[128:256], g[256:384], g[384:]
            c = c / (1 + np.exp(-f)) + np.tanh(gg) / (1 + np.exp(-i))
            h = np.tanh(c) / (1 + np.exp(-o))
            hs[t] = h
        z = np.maximum(hs, 0) @ w["final_conv.weight"][0, :, 0] + w["final_conv.bias"][0]
        return canon(1 / (1 + np.exp(-z)))[:, None]
