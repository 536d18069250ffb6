"""SongEval medleys: the paper's song domain built from ``ASLP-lab/SongEval`` (CC BY-NC-SA 4.0).

Raw layout (``datasets.song.src``)::

    metadata.jsonl      one song per line: file_name ("mp3/x.mp3"), annotation [per-rater dicts
                        with Coherence, Musicality, Memorability, Clarity, Naturalness 1-5], gender
    mp3/                the songs
    languages.jsonl     {file_name, language, probability}: Whisper language ID (see
                        :func:`detect_languages`, or ``harp prepare song --detect-language``)

What :func:`prepare_song` does (paper, with HARP_REFERENCE §7 fixed):

1. keep English songs (probability > 0.5) lasting 150-300 s (1006 in the paper);
2. bucket by rounded grand mean, shuffle each bucket, interleave the buckets round-robin and deal
   the pool to 50 tracks in turn, then shuffle inside each track;
3. join each track with 3 s crossfades (:func:`harp_lib.core.audio.crossfade_concat`); a song spans
   from where its crossfade starts to its last sample;
4. one ground-truth segment per song (1-based ``SONG_NN``), one 5 s interior snippet per song;
5. per track, shuffle the songs and pair them consecutively (10 pairs: 3 time, 3 position,
   4 audio); winner "tie" when |mean_a - mean_b| < 0.25.

Seeds come from :func:`~harp_lib.corpora.datasets.common.stable_seed` (never ``hash()``), so two runs
give byte-identical queries; queries carry ``query_id`` and nothing is rewritten in place.
"""
from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterator, Optional

import numpy as np
from tqdm.auto import tqdm

from harp_lib.core import audio
from harp_lib.core.atomic import write_text
from harp_lib.core.labels import AESTHETIC_DIMENSIONS, tier_of
from harp_lib.core.schema import Query, Recording, Segment, round_time
from harp_lib.corpora.datasets.common import spoken_time
from harp_lib.tasks.song import question
from harp_lib.core.timespan import Span, format_time, ordinal
from harp_lib.corpora.datasets.common import Expected, SourceError, check_source, require_source, rng_for, write_corpus

__all__ = ["SongParams", "SongItem", "SongEvalSource", "prepare_song", "detect_languages",
           "song_expected", "pair_songs", "song_time_ref"]

SONGEVAL_URL = "https://huggingface.co/datasets/ASLP-lab/SongEval (CC BY-NC-SA 4.0)"


@dataclass(frozen=True)
class SongParams:
    """Knobs of the song corpus (params.yaml ``datasets.song``); defaults are the paper's."""
    src: str = "data/raw/songeval"
    metadata: str = "metadata.jsonl"
    languages: str = "languages.jsonl"
    language: str = "en"
    min_language_prob: float = 0.5      # Whisper LID probability to accept a song as English
    min_song_sec: float = 150.0         # song duration filter (paper)
    max_song_sec: float = 300.0
    expected_songs: Optional[int] = 1006   # songs left after filtering in the paper (reported, not enforced)
    n_tracks: int = 50                  # medleys (paper)
    crossfade_sec: float = 3.0          # pydub crossfade in the paper
    snippet_sec: float = 5.0            # audio-query reference snippets
    snippet_margin_sec: float = 5.0     # snippets stay this far inside the song
    tie_delta: float = 0.25             # |delta| below this is a tie
    pairs_per_track: int = 10
    method_counts: dict = field(default_factory=lambda: {"time": 3, "position": 3, "audio": 4})
    time_step_sec: float = 30.0         # time queries name multiples of 30 s ...
    time_margin_sec: float = 30.0       # ... whose ±30 s window stays inside the song
    seed: int = 42
    sample_rate: int = 16000
    audio: str = "convert"              # medleys are always written as WAV (kept for symmetry)


@dataclass(frozen=True)
class SongItem:
    """One SongEval song with its rater means."""
    file_name: str
    path: Path
    duration: float
    scores: dict            # dimension -> mean over raters
    overall: float          # grand mean over raters x dimensions
    gender: Optional[str]
    n_raters: int


def song_expected(p: SongParams) -> list[Expected]:
    return [Expected(p.metadata, "SongEval metadata (per-rater aesthetic scores)", SONGEVAL_URL),
            Expected("mp3", "SongEval songs", SONGEVAL_URL, glob="*.*"),
            Expected(p.languages, "Whisper language ID of every song",
                     "run `harp prepare song --detect-language` (openai-whisper large-v3, GPU "
                     "recommended) or copy the file from a machine that ran it")]


def _rater_scores(ann, where: str) -> dict:
    out = {}
    low = {str(k).lower(): v for k, v in ann.items()}
    for d in AESTHETIC_DIMENSIONS:
        if d.lower() not in low:
            raise SourceError(f"{where}: rater annotation lacks {d!r} (has {sorted(ann)})")
        out[d] = float(low[d.lower()])
    return out


class SongEvalSource:
    """Reads a raw SongEval folder.

    >>> # SongEvalSource("data/raw/songeval").songs()  -> list of SongItem (English, 150-300 s)
    """

    def __init__(self, root, params: SongParams = SongParams()):
        self.root, self.params = Path(root), params

    def check(self) -> list[str]:
        return check_source(self.root, song_expected(self.params), "SongEval")

    def languages(self) -> dict[str, tuple[str, float]]:
        p = self.root / self.params.languages
        out = {}
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
            if line.strip():
                row = json.loads(line)
                try:
                    out[row["file_name"]] = (str(row["language"]), float(row["probability"]))
                except KeyError as e:
                    raise SourceError(f"{p} line {i}: missing key {e}") from None
        return out

    def iter_metadata(self) -> Iterator[tuple[str, dict]]:
        p = self.root / self.params.metadata
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
            if line.strip():
                yield f"{p} line {i}", json.loads(line)

    def songs(self, *, progress: bool = False) -> list[SongItem]:
        """English songs within the duration limits, sorted by file name."""
        require_source(self.root, song_expected(self.params), "SongEval")
        p = self.params
        langs = self.languages()
        rows = list(self.iter_metadata())
        out = []
        for where, row in tqdm(rows, desc="songeval: filter", disable=not progress):
            fn = row.get("file_name")
            if not fn:
                raise SourceError(f"{where}: no file_name")
            lang, prob = langs.get(fn, (None, 0.0))
            if lang != p.language or prob <= p.min_language_prob:
                continue
            path = self.root / fn
            if not path.exists():
                raise SourceError(f"{where}: song {path} is listed but missing; re-download {SONGEVAL_URL}")
            dur = audio.probe(path).duration
            if not (p.min_song_sec <= dur <= p.max_song_sec):
                continue
            anns = row.get("annotation") or []
            if isinstance(anns, dict):
                anns = list(anns.values())
            raters = [_rater_scores(a, where) for a in anns]
            if not raters:
                raise SourceError(f"{where}: song {fn} has no rater annotations")
            scores = {d: round(float(np.mean([r[d] for r in raters])), 4) for d in AESTHETIC_DIMENSIONS}
            overall = round(float(np.mean([r[d] for r in raters for d in AESTHETIC_DIMENSIONS])), 4)
            out.append(SongItem(fn, path, dur, scores, overall, row.get("gender"), len(raters)))
        return sorted(out, key=lambda s: s.file_name)


def deal_tracks(songs: list[SongItem], p: SongParams) -> dict[str, list[SongItem]]:
    """Score-balanced medley assignment: bucket, shuffle, interleave, deal, shuffle in track."""
    buckets: dict[int, list[SongItem]] = {}
    for s in songs:
        b = min(5, max(1, int(math.floor(s.overall + 0.5))))
        buckets.setdefault(b, []).append(s)
    shuffled = {b: [items[i] for i in rng_for(p.seed, "bucket", b).permutation(len(items))]
                for b, items in sorted(buckets.items())}
    pool: list[SongItem] = []
    depth = max((len(v) for v in shuffled.values()), default=0)
    for i in range(depth):
        pool += [v[i] for _, v in sorted(shuffled.items()) if i < len(v)]
    n = min(p.n_tracks, len(pool))
    names = [f"track_{t + 1:02d}" for t in range(n)]
    tracks = {name: [] for name in names}
    for i, s in enumerate(pool):
        tracks[names[i % n]].append(s)
    return {name: [items[i] for i in rng_for(p.seed, "track", name).permutation(len(items))]
            for name, items in tracks.items()}


def song_time_ref(span: Span, p: SongParams) -> float:
    """The middle multiple of ``time_step_sec`` whose ±margin window lies inside the song.

    >>> song_time_ref(Span(100, 300), SongParams())    # options 150, 180, 210, 240, 270
    210.0
    """
    lo = math.ceil((span.start + p.time_margin_sec) / p.time_step_sec)
    hi = math.floor((span.end - p.time_margin_sec) / p.time_step_sec)
    if hi < lo:
        return span.middle
    options = list(range(lo, hi + 1))
    return float(options[(len(options) - 1) // 2] * p.time_step_sec)


def pair_songs(track: str, n_songs: int, p: SongParams) -> list[tuple[str, int, int]]:
    """``(method, i, j)`` pairs (0-based song positions) for one track, seeded by its name.

    >>> pairs = pair_songs("track_01", 4, SongParams(method_counts={"time": 1, "audio": 1}))
    >>> [m for m, _, _ in pairs], sorted(i for _, a, b in pairs for i in (a, b))
    (['time', 'audio'], [0, 1, 2, 3])
    """
    order = [int(i) for i in rng_for(p.seed, "pairs", track).permutation(n_songs)]
    methods = [m for m, k in p.method_counts.items() for _ in range(int(k))]
    n_pairs = min(p.pairs_per_track, n_songs // 2, len(methods))
    return [(methods[k], order[2 * k], order[2 * k + 1]) for k in range(n_pairs)]


def _say_time(t: float, step: float) -> str:
    if step >= 30 and abs(t / 30.0 - round(t / 30.0)) < 1e-9:
        return spoken_time(t)
    return f"around {format_time(t)}"


def _filtered_songs(src, p: SongParams, progress: bool) -> list[SongItem]:
    """The songs passing the language / duration filters (step 1); SourceError if under two."""
    songs = SongEvalSource(src, p).songs(progress=progress)
    if len(songs) < 2:
        raise SourceError(f"SongEval at {src}: only {len(songs)} song(s) pass the language/duration "
                          f"filters ({p.language}, {p.min_song_sec}-{p.max_song_sec} s); check {p.languages}")
    return songs


def _write_medley(track: str, items: list[SongItem], out: Path, p: SongParams) -> tuple:
    """Join one track's songs with crossfades and write it (step 3): ``(medley, spans, Recording)``."""
    sr = p.sample_rate
    waves = [audio.load(s.path, sr) for s in items]
    medley, spans = audio.crossfade_concat(waves, sr, fade=p.crossfade_sec)
    rel = f"recordings/{track}.wav"
    audio.write(out / rel, medley, sr)
    rec = Recording(track, "song", rel, round_time(len(medley) / sr), sr,
                    custom={"songs": len(items), "crossfade_sec": p.crossfade_sec})
    return medley, spans, rec


def _song_segment(track: str, k: int, s: SongItem, span: Span, medley: np.ndarray, snippet_no: int,
                  out: Path, p: SongParams) -> tuple[Segment, str]:
    """Write song ``k``'s interior snippet and make its ground-truth segment (step 4): ``(segment, ref)``."""
    sr = p.sample_rate
    inner = Span(span.start + p.snippet_margin_sec, max(span.start + p.snippet_margin_sec,
                                                        span.end - p.snippet_margin_sec))
    if inner.duration < p.snippet_sec:
        raise SourceError(f"{s.file_name}: {span.duration:.1f} s is too short for a "
                          f"{p.snippet_sec} s snippet {p.snippet_margin_sec} s inside the song")
    c = inner.middle
    snip = Span(c - p.snippet_sec / 2, c + p.snippet_sec / 2)
    ref = f"references/snippet_{snippet_no:04d}.wav"
    audio.write(out / ref, audio.crop(medley, snip, sr), sr)
    seg = Segment(f"{track}_{k:04d}", track, span.start, span.end, f"SONG_{k:02d}", "",
                  labels={"primary": tier_of(s.overall), "scores": dict(s.scores),
                          "overall": s.overall},
                  custom={"song_index": k, "file_name": s.file_name, "gender": s.gender,
                          "n_raters": s.n_raters, "snippet": ref,
                          "snippet_start": snip.start, "snippet_end": snip.end})
    return seg, ref


def _pair_query(track: str, q_no: int, method: str, song_info: list, i: int, j: int, p: SongParams) -> Query:
    """The pairwise query about songs ``i`` and ``j`` of a track, asked by ``method`` (step 5)."""
    a, b = song_info[i], song_info[j]
    delta = round(a[0].overall - b[0].overall, 4)
    winner = "tie" if abs(delta) < p.tie_delta else ("A" if delta > 0 else "B")
    ia, ib = i + 1, j + 1
    if method == "time":
        text = question("time", _say_time(a[4], p.time_step_sec), _say_time(b[4], p.time_step_sec))
        refs = {}
    elif method == "position":
        text = question("position", ordinal(ia), ordinal(ib))
        refs = {}
    else:
        text = question("audio")
        refs = {"A": a[3], "B": b[3]}
    return Query(
        f"{track}-{method}-{q_no:02d}", "song", track, method, text,
        ground_truth={"winner": winner, "delta": delta, "mean_a": a[0].overall, "mean_b": b[0].overall},
        judge_info={"type": "pairwise", "song_a": ia, "song_b": ib,
                    "scores_a": dict(a[0].scores), "scores_b": dict(b[0].scores),
                    "start_a": a[1].start, "end_a": a[1].end, "start_b": b[1].start, "end_b": b[1].end},
        references=refs, gt_segment_ids=(a[2].id, b[2].id), time_ref=a[4],
        custom={"song_a": {"index": ia, "time_ref": a[4], "file_name": a[0].file_name},
                "song_b": {"index": ib, "time_ref": b[4], "file_name": b[0].file_name}})


def _corpus_info(src, p: SongParams, songs: list[SongItem]) -> dict:
    """The corpus info written beside the data, with a warning when the song count differs from the paper's."""
    info = {"corpus": "SongEval medleys", "source": str(src), "params": asdict(p),
            "songs_after_filter": len(songs)}
    if p.expected_songs is not None and len(songs) != p.expected_songs:
        info["warning"] = (f"{len(songs)} songs passed the filters; the paper had {p.expected_songs} "
                           f"(language ID can differ with the Whisper version)")
    return info


def prepare_song(src, out, params: SongParams = SongParams(), *, progress: bool = True) -> dict:
    """Build the song domain folder ``out`` from a raw SongEval folder ``src``; returns counts.

    >>> # prepare_song("data/raw/songeval", "data/corpora/song")
    """
    p, out = params, Path(out)
    songs = _filtered_songs(src, p, progress)
    tracks = deal_tracks(songs, p)
    recs, segs, queries = [], [], []
    snippet_no = 0
    for track, items in tqdm(sorted(tracks.items()), desc="songeval: medleys", disable=not progress):
        medley, spans, rec = _write_medley(track, items, out, p)
        recs.append(rec)
        song_info = []
        for k, (s, span) in enumerate(zip(items, spans), 1):
            snippet_no += 1
            seg, ref = _song_segment(track, k, s, span, medley, snippet_no, out, p)
            segs.append(seg)
            song_info.append((s, span, seg, ref, song_time_ref(span, p)))
        for q_no, (method, i, j) in enumerate(pair_songs(track, len(items), p), 1):
            queries.append(_pair_query(track, q_no, method, song_info, i, j, p))
    return write_corpus(out, recs, segs, queries, _corpus_info(src, p, songs))


def detect_languages(src, params: SongParams = SongParams(), *, model: str = "large-v3",
                     device: Optional[str] = None) -> Path:
    """Whisper language ID of every song (paper path; needs ``openai-whisper`` and its weights).

    Round 1 reads the first 30 s; songs not detected as en/zh or below the probability
    threshold are re-checked on 30-60 s.  Writes ``languages.jsonl`` in ``src``.
    """
    try:
        import whisper  # noqa: F401 - paper extra, imported only here
    except ImportError:
        raise SourceError("language ID needs openai-whisper (pip install openai-whisper; see "
                          "docs/paper.md), or copy languages.jsonl from a machine that has it") from None
    import torch  # heavy: torch (~1.2 s)
    p, root = params, Path(src)
    m = whisper.load_model(model, device=device)
    rows = []
    for where, row in tqdm(list(SongEvalSource(root, p).iter_metadata()), desc="whisper LID"):
        path = root / row["file_name"]
        lang, prob = None, 0.0
        for start in (0.0, 30.0):
            wave = audio.load(path, 16000, start=start, end=start + 30.0)
            mel = whisper.log_mel_spectrogram(whisper.pad_or_trim(torch.from_numpy(wave)),
                                              n_mels=m.dims.n_mels).to(m.device)
            _, probs = m.detect_language(mel)
            lang = max(probs, key=probs.get)
            prob = float(probs[lang])
            if lang in ("en", "zh") and prob >= p.min_language_prob:
                break
        rows.append({"file_name": row["file_name"], "language": lang, "probability": round(prob, 4)})
    dst = root / p.languages
    write_text(dst, "".join(json.dumps(r) + "\n" for r in rows))
    return dst
