"""The one audio entry point: probe, validate, load windows, resample, crop, write, crossfade.

Nothing else in harp_lib reads audio files or resamples.  Long files are read window by
window (soundfile seeks; compressed formats are decoded by ffmpeg with ``-ss``/``-t``), so a
4-hour podcast never has to sit in memory.

>>> import numpy as np, tempfile, os
>>> p = os.path.join(tempfile.mkdtemp(), "tone.wav")
>>> write(p, np.zeros(16000, dtype=np.float32), 16000)
>>> probe(p).duration
1.0
>>> load(p, sr=8000).shape
(8000,)
"""
from __future__ import annotations

import math
import os
import shutil
import struct
import subprocess
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Iterator, Optional, Sequence, Union

import numpy as np

from harp_lib.core.atomic import part_path
from harp_lib.core.timespan import Span
from harp_lib.core.errors import HarpError

__all__ = ["AudioError", "AudioInfo", "probe", "validate", "load", "read_window", "iter_windows",
           "to_mono", "resample", "crop", "write", "crossfade_concat", "rms_db", "DEFAULT_SR"]

DEFAULT_SR = 16000
#: Header vs decoded duration disagreement tolerated by :func:`validate` (as lhotse's QA).
DURATION_TOLERANCE_SEC = 0.5
#: plausible header values; anything outside is a corrupt or hostile header (a 1 Hz "WAV" would
#: make resampling to 16 kHz run for hours), refused as a content error of that file
MIN_SAMPLE_RATE, MAX_SAMPLE_RATE = 1000, 384000
MAX_CHANNELS = 64
_PCM_BYTES = {"PCM_S8": 1, "PCM_U8": 1, "PCM_16": 2, "PCM_24": 3, "PCM_32": 4, "FLOAT": 4, "DOUBLE": 8,
              "ULAW": 1, "ALAW": 1}
_UNCOMPRESSED = {"wav", "wavex", "aiff", "au", "w64", "rf64", "raw"}
_SF_EXTS = {".wav", ".flac", ".ogg", ".aiff", ".aif", ".au", ".caf", ".w64", ".rf64"}

PathLike = Union[str, os.PathLike]


class AudioError(HarpError, ValueError):
    """An audio file is missing, unreadable, empty or invalid.  The message names the file."""


@dataclass(frozen=True)
class AudioInfo:
    """What the file header says.

    ``frames`` is what can be decoded; ``header_frames`` what a WAV's ``data`` chunk announces
    (None for other formats or an unknown/streamed size).  They differ for a truncated file.
    """
    path: str
    sample_rate: int
    channels: int
    frames: int
    format: str
    header_frames: Optional[int] = None

    @property
    def duration(self) -> float:
        return round(self.frames / self.sample_rate, 3) if self.sample_rate else 0.0


def _sf():
    import soundfile  # heavy: soundfile (libsndfile); keeps `import harp_lib` light
    return soundfile


def _ffmpeg() -> str:
    exe = shutil.which("ffmpeg")
    if not exe:
        raise AudioError("ffmpeg is needed to read this format but is not installed "
                         "(run scripts/bootstrap.sh or apt-get install ffmpeg)")
    return exe


def _wav_header_frames(p: Path, channels: int) -> Optional[int]:
    """Frames announced by a RIFF/RF64 WAV's ``data`` chunk (None: not a WAV, or size unknown).

    libsndfile silently clamps a truncated file to the bytes present; this reads what the
    header promised so :func:`validate` can tell a truncated file from a short one.
    """
    try:
        with open(p, "rb") as fh:
            head = fh.read(12)
            if len(head) < 12 or head[:4] not in (b"RIFF", b"RF64") or head[8:12] != b"WAVE":
                return None
            block = None
            for _ in range(64):                       # a handful of chunks precede "data"
                ch = fh.read(8)
                if len(ch) < 8:
                    return None
                cid, size = ch[:4], struct.unpack("<I", ch[4:])[0]
                if cid == b"fmt ":
                    fmt = fh.read(size + (size & 1))
                    if len(fmt) >= 14:
                        block = struct.unpack("<H", fmt[12:14])[0]
                    continue
                if cid == b"data":
                    if size in (0, 0xFFFFFFFF) or head[:4] == b"RF64" or not block:
                        return None               # streamed / 64-bit sizes: unknown here
                    return size // (block or max(1, channels) * 2)
                fh.seek(size + (size & 1), os.SEEK_CUR)
    except (OSError, struct.error):
        return None
    return None


def probe(path: PathLike) -> AudioInfo:
    """Read the header of an audio file.

    Raises :class:`AudioError` for a missing, empty or undecodable file.
    """
    p = Path(path)
    if isinstance(path, str) and "://" in path:
        raise AudioError(f"{path}: expected a local audio file, got a URL")
    if not p.exists():
        raise AudioError(f"{p}: no such audio file")
    if p.is_dir():
        raise AudioError(f"{p}: is a directory, not an audio file")
    if p.stat().st_size == 0:
        raise AudioError(f"{p}: file is empty (0 bytes)")
    sf = _sf()
    try:
        info = sf.info(str(p))
        out = AudioInfo(str(p), int(info.samplerate), int(info.channels), int(info.frames),
                        info.format.lower(), _wav_header_frames(p, int(info.channels)))
        subtype = str(getattr(info, "subtype", "") or "")
    except Exception as sf_err:  # noqa: BLE001 - fall back to ffprobe for mp3/m4a/...
        ffprobe = shutil.which("ffprobe")
        if not ffprobe:
            raise AudioError(f"{p}: cannot read audio ({sf_err})") from None
        cmd = [ffprobe, "-v", "error", "-select_streams", "a:0", "-show_entries",
               "stream=sample_rate,channels,duration:format=format_name,duration", "-of",
               "default=noprint_wrappers=1", str(p)]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        fields = dict(line.split("=", 1) for line in out.stdout.splitlines() if "=" in line)
        try:
            sr = int(fields["sample_rate"])
            ch = int(fields["channels"])
            dur = float(fields.get("duration", "nan"))
            if math.isnan(dur):
                dur = float(fields.get("duration", "nan"))
        except (KeyError, ValueError):
            raise AudioError(f"{p}: not a readable audio file ({str(sf_err).strip()}; "
                             f"ffprobe: {out.stderr.strip() or 'no audio stream'})") from None
        if not math.isfinite(dur):
            raise AudioError(f"{p}: audio duration unknown")
        return _plausible(p, AudioInfo(str(p), sr, ch, int(round(dur * sr)), fields.get("format_name", "?")), "")
    return _plausible(p, out, subtype)


def _plausible(p: Path, info: AudioInfo, subtype: str) -> AudioInfo:
    """Refuse header values no real recording has: a sample rate outside
    [:data:`MIN_SAMPLE_RATE`, :data:`MAX_SAMPLE_RATE`], no or too many channels, or (PCM) more
    frames than the file's bytes can hold."""
    if not MIN_SAMPLE_RATE <= info.sample_rate <= MAX_SAMPLE_RATE:
        raise AudioError(f"{p}: implausible sample rate {info.sample_rate} Hz in the header (expected "
                         f"{MIN_SAMPLE_RATE}-{MAX_SAMPLE_RATE} Hz); corrupt header?")
    if not 1 <= info.channels <= MAX_CHANNELS:
        raise AudioError(f"{p}: implausible channel count {info.channels} in the header; corrupt header?")
    width = _PCM_BYTES.get(subtype.upper()) if info.format in _UNCOMPRESSED else None
    if width and info.frames * info.channels * width > p.stat().st_size:
        raise AudioError(f"{p}: header announces {info.frames} frames x {info.channels} channel(s) of "
                         f"{subtype}, more than the file's {p.stat().st_size} bytes hold; corrupt header?")
    return info


def validate(path: PathLike, *, decode: bool = True) -> AudioInfo:
    """Probe a file and check that it decodes to finite samples of the announced length.

    A WAV whose header announces more than :data:`DURATION_TOLERANCE_SEC` of audio beyond
    the bytes present is truncated (libsndfile would silently read the rest as missing).
    Decoding (``decode=True``) reads the file in 60 s windows, so memory stays bounded.
    """
    info = probe(path)
    if info.frames == 0:
        raise AudioError(f"{path}: contains no samples")
    if info.sample_rate <= 0:
        raise AudioError(f"{path}: invalid sample rate {info.sample_rate}")
    if info.header_frames is not None and \
            (info.header_frames - info.frames) / info.sample_rate > DURATION_TOLERANCE_SEC:
        raise AudioError(f"{path}: header says {info.header_frames / info.sample_rate:.2f} s but only "
                         f"{info.duration:.2f} s of samples are present (truncated file?)")
    if decode:
        decoded = 0
        for _, chunk in iter_windows(path, window=60.0, sr=None):
            decoded += len(chunk)   # load() refuses NaN / inf samples
        dur = decoded / info.sample_rate
        if abs(dur - info.duration) > DURATION_TOLERANCE_SEC:
            raise AudioError(f"{path}: header says {info.duration:.2f} s but {dur:.2f} s decode "
                             f"(truncated or corrupt file?)")
    return info


def to_mono(wave: np.ndarray) -> np.ndarray:
    """Average channels: ``(frames, channels)`` -> ``(frames,)``."""
    wave = np.asarray(wave)
    if wave.ndim == 1:
        return wave
    if wave.ndim == 2:
        if wave.shape[1] == 1:          # already mono: a view, no float64 copy of a long window
            return wave[:, 0]
        return wave.mean(axis=1, dtype=np.float64).astype(np.float32)
    raise AudioError(f"expected a 1-D or 2-D waveform, got shape {wave.shape}")


def resample(wave: np.ndarray, sr_in: int, sr_out: int) -> np.ndarray:
    """Polyphase resampling (scipy ``resample_poly``); exact ratio, deterministic."""
    if sr_in == sr_out:
        return np.asarray(wave, dtype=np.float32)
    from scipy.signal import resample_poly  # heavy: scipy.signal (~0.8 s)
    frac = Fraction(int(sr_out), int(sr_in)).limit_denominator(10000)
    out = resample_poly(np.asarray(wave, dtype=np.float64), frac.numerator, frac.denominator, axis=0)
    return out.astype(np.float32)


def _read_sf(p: Path, start: float, stop: Optional[float], info: AudioInfo) -> np.ndarray:
    sf = _sf()
    s = int(round(start * info.sample_rate))
    e = info.frames if stop is None else min(info.frames, int(round(stop * info.sample_rate)))
    if e <= s:
        return np.zeros((0, info.channels), dtype=np.float32)
    try:
        data, _ = sf.read(str(p), start=s, stop=e, dtype="float32", always_2d=True)
    except Exception as err:  # noqa: BLE001
        raise AudioError(f"{p}: cannot decode samples {s}-{e} ({err})") from None
    return data


def _read_ffmpeg(p: Path, start: float, stop: Optional[float], info: AudioInfo) -> np.ndarray:
    cmd = [_ffmpeg(), "-v", "error", "-nostdin", "-ss", f"{start:.3f}", "-i", str(p)]
    if stop is not None:
        cmd += ["-t", f"{max(0.0, stop - start):.3f}"]
    cmd += ["-f", "f32le", "-acodec", "pcm_f32le", "-ac", str(info.channels),
            "-ar", str(info.sample_rate), "-"]
    out = subprocess.run(cmd, capture_output=True, timeout=3600)
    if out.returncode != 0:
        raise AudioError(f"{p}: ffmpeg could not decode ({out.stderr.decode(errors='replace').strip()})")
    data = np.frombuffer(out.stdout, dtype=np.float32).copy()
    return data.reshape(-1, info.channels)


def load(path: PathLike, sr: Optional[int] = DEFAULT_SR, *, mono: bool = True,
         start: float = 0.0, end: Optional[float] = None) -> np.ndarray:
    """Load ``[start, end)`` seconds of a file as float32, downmixed and resampled.

    ``sr=None`` keeps the native rate.  Only the requested window is read from disk.
    """
    p = Path(path)
    info = probe(p)
    if start < 0 or (end is not None and end < start):
        raise AudioError(f"{p}: invalid window {start}-{end} s")
    # the decoder follows the content as well as the extension: a WAV named .mp3 is read by
    # libsndfile, an AAC/MP3 named .wav falls back to ffmpeg
    native = info.header_frames is not None or info.format in ("wav", "flac", "ogg")
    if native or p.suffix.lower() in _SF_EXTS:
        try:
            data = _read_sf(p, start, end, info)
        except AudioError:
            if native:
                raise
            data = _read_ffmpeg(p, start, end, info)
    else:
        data = _read_ffmpeg(p, start, end, info)
    if not np.all(np.isfinite(data)):
        bad = int(np.argmax(~np.isfinite(data).all(axis=-1))) if data.ndim > 1 else int(np.argmax(~np.isfinite(data)))
        raise AudioError(f"{p}: contains NaN or infinite samples (first at {start + bad / info.sample_rate:.3f} s); "
                         f"re-export the file or replace the bad samples")
    wave = to_mono(data) if mono else data
    if sr is not None and sr != info.sample_rate:
        wave = resample(wave, info.sample_rate, sr)
    return np.ascontiguousarray(wave, dtype=np.float32)


def read_window(path: PathLike, span: Span, sr: Optional[int] = DEFAULT_SR, *, mono: bool = True) -> np.ndarray:
    """Read one window of a (possibly very long) file without loading the rest."""
    return load(path, sr, mono=mono, start=span.start, end=None if math.isinf(span.end) else span.end)


def iter_windows(path: PathLike, window: float = 30.0, hop: Optional[float] = None,
                 sr: Optional[int] = DEFAULT_SR, *, mono: bool = True) -> Iterator[tuple[Span, np.ndarray]]:
    """Stream a file as consecutive (or overlapping, ``hop < window``) windows.

    Yields ``(span, samples)``; memory use is one window, whatever the file length.
    """
    info = probe(path)
    hop = window if hop is None else hop
    if window <= 0 or hop <= 0:
        raise AudioError(f"{path}: window and hop must be positive")
    t = 0.0
    total = info.duration
    while t < total:
        e = min(total, t + window)
        yield Span(t, e), load(path, sr, mono=mono, start=t, end=e)
        if e >= total:
            break
        t = round(t + hop, 6)


def crop(wave: np.ndarray, span: Span, sr: int, mode: str = "raise") -> np.ndarray:
    """Cut ``span`` out of an in-memory waveform.

    ``mode="raise"`` refuses spans that leave the signal; ``mode="pad"`` zero-pads them.

    >>> x = np.ones(16000, dtype=np.float32)
    >>> float(crop(x, Span(0.5, 1.5), 16000, mode="pad").sum())
    8000.0
    """
    if mode not in ("raise", "pad"):
        raise ValueError(f"mode must be 'raise' or 'pad', got {mode!r}")
    n = len(wave)
    s = int(round(span.start * sr))
    e = int(round(span.end * sr)) if not math.isinf(span.end) else n
    if s >= 0 and e <= n:
        return wave[s:e]
    if mode == "raise":
        raise AudioError(f"span {span.start:.3f}-{span.end:.3f} s lies outside the signal "
                         f"(0-{n / sr:.3f} s); use mode='pad' to zero-pad")
    out = np.zeros((e - s,) + wave.shape[1:], dtype=wave.dtype)
    lo, hi = max(s, 0), min(e, n)
    if hi > lo:
        out[lo - s: hi - s] = wave[lo:hi]
    return out


def write(path: PathLike, wave: np.ndarray, sr: int, *, subtype: str = "PCM_16") -> None:
    """Write a WAV/FLAC atomically; refuses NaN/inf and deletes half-written files.

    Samples are clipped to [-1, 1] before integer encoding.
    """
    p = Path(path)
    wave = np.asarray(wave, dtype=np.float32)
    if not np.all(np.isfinite(wave)):
        raise AudioError(f"{p}: refusing to write non-finite samples")
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = part_path(p)                      # unique per writer: two writers of one path never collide
    fmt = "FLAC" if p.suffix.lower() == ".flac" else "WAV"
    try:
        _sf().write(str(tmp), np.clip(wave, -1.0, 1.0), int(sr), subtype=subtype, format=fmt)
        os.replace(tmp, p)
    finally:
        if tmp.exists():
            tmp.unlink()


def crossfade_concat(waves: Sequence[np.ndarray], sr: int, fade: float = 3.0) -> tuple[np.ndarray, list[Span]]:
    """Join mono waveforms with linear crossfades of ``fade`` seconds.

    Returns the joined signal and each input's span in it (consecutive spans overlap by
    the crossfade, as in the paper's medleys).

    >>> a, b = np.ones(4 * 16000, np.float32), np.ones(4 * 16000, np.float32)
    >>> y, spans = crossfade_concat([a, b], 16000, fade=1.0)
    >>> len(y) / 16000, spans[1]
    (7.0, Span(start=3.0, end=7.0))
    """
    nf = int(round(fade * sr))
    total = sum(len(w) for w in waves) - nf * max(0, len(waves) - 1)
    out = np.zeros(max(total, 0), dtype=np.float32)
    spans: list[Span] = []
    pos = 0
    ramp_in = np.linspace(0.0, 1.0, nf, endpoint=False, dtype=np.float32) if nf else np.zeros(0, np.float32)
    for i, w in enumerate(waves):
        w = np.asarray(w, dtype=np.float32)
        if w.ndim != 1:
            raise AudioError("crossfade_concat expects mono waveforms")
        if i and len(w) < nf:
            raise AudioError(f"piece {i} ({len(w) / sr:.2f} s) is shorter than the {fade} s crossfade")
        start = pos - nf if i else 0
        seg = w.copy()
        if i and nf:
            seg[:nf] *= ramp_in
            out[start:start + nf] *= ramp_in[::-1]
        out[start:start + len(seg)] += seg
        spans.append(Span(start / sr, (start + len(seg)) / sr))
        pos = start + len(seg)
    return out, spans


def rms_db(wave: np.ndarray) -> float:
    """Root-mean-square level in dBFS (−inf for silence)."""
    wave = np.asarray(wave, dtype=np.float64)
    if wave.size == 0:
        return -math.inf
    r = math.sqrt(float(np.mean(wave ** 2)))
    return 20 * math.log10(r) if r > 0 else -math.inf
