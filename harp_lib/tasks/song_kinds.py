"""Question kinds about the songs of a user's own music recording (``--domain song``).

The song pipeline cuts a medley into songs (:class:`~harp_lib.extract.songs.KernelCPDSongs`) and
then, like every pipeline, into index segments of at most ``extract.max_seg_sec.song`` (15 s):
a 5-song medley is ~76 segments.  Every chunk keeps its song's tag (``SONG_01``, ``SONG_02`` ...;
:func:`harp_lib.core.timespan.song_spans`), so :func:`songs_of` joins the chunks back into
:class:`Song` records -- the unit these kinds count, order and rank:

* ``n_songs`` -- "How many songs are there?"
* ``song_span`` -- "When does the third song start?", "How long is the last track?"
* ``song_at`` -- "What song is playing at 2:30?"
* ``song_rank`` -- "Which song is the best / clearest / most upbeat / calmest?", from the
  aesthetics labeler's five scores (song-level, averaged over the song's chunks); "upbeat / fast /
  lively" and "calm / slow / mellow" from the pace measured from the audio at answer time
  (:func:`song_pace`: librosa's tempo of each song, with its note-onset rate as a check said next
  to it).  No label measures mood; without the audio the pace falls back to Coherence (the
  strength of a steady rhythmic pulse) as a *stated proxy*, and the rationale says so.

>>> from harp_lib.core.schema import Segment
>>> segs = [Segment("a", "m", 0, 15, "SONG_01"), Segment("b", "m", 15, 30, "SONG_01"),
...         Segment("c", "m", 30, 42, "SONG_02")]
>>> [(s.index, s.start, s.end, s.chunks) for s in songs_of(segs)]
[(1, 0.0, 30.0, 2), (2, 30.0, 42.0, 1)]
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Optional, Sequence

from harp_lib.core import audio
from harp_lib.understand.intent import Intent
from harp_lib.understand.time_words import time_mentions
from harp_lib.core.labels import AESTHETIC_DIMENSIONS, tier_of
from harp_lib.core.timespan import LocalizeError, format_time
from harp_lib.tasks.recording import Facts, QuestionKind, Reply, _song_ordinals, window
from harp_lib.tasks.registry import register

__all__ = ["Song", "songs_of", "BOUNDARY_TOL"]

#: seconds: how close to a detected song boundary a time is called "near the change" (the
#: segmenter places boundaries within ~3 s of the crossfade middle on real music:
#: tests/extract/test_realmusic.py)
BOUNDARY_TOL = 3.0
_TAG = re.compile(r"SONG_(\d+)")
#: words of a question comparing two songs (the benchmark's time / position / audio tasks)
_CONTRAST = r"\b(or|versus|vs|between|compar\w*|than|both|two|better|worse|prefer\w*)\b"


@dataclass(frozen=True)
class Song:
    """One detected song: ``index`` (1-based, in time order), ``[start, end)`` seconds, how many
    index segments (``chunks``) it spans, its tag and ``labels`` -- the aesthetics scores averaged
    over its chunks (``{"scores": {dim: 1-5}, "overall": x, "primary": tier}``; ``{}`` unscored)."""
    index: int
    start: float
    end: float
    tag: str
    chunks: int = 1
    labels: dict = field(default_factory=dict)
    text: str = ""

    @property
    def length(self) -> float:
        return self.end - self.start

    @property
    def speaker(self) -> str:       # shown in evidence rows where a speech segment shows its speaker
        return f"song {self.index}"

    @property
    def id(self) -> str:
        return self.tag


def _mean_scores(chunks: Sequence) -> dict:
    """Duration-weighted mean of the chunks' aesthetics scores (``{}`` when none is scored)."""
    acc: dict[str, float] = {}
    w_tot = 0.0
    for c in chunks:
        sc = (c.labels or {}).get("scores") or {}
        if not all(isinstance(sc.get(d), (int, float)) for d in AESTHETIC_DIMENSIONS):
            continue
        w = max(1e-6, c.end - c.start)
        w_tot += w
        for d in AESTHETIC_DIMENSIONS:
            acc[d] = acc.get(d, 0.0) + w * float(sc[d])
    if not w_tot:
        return {}
    scores = {d: round(acc[d] / w_tot, 3) for d in AESTHETIC_DIMENSIONS}
    overall = round(sum(scores.values()) / len(scores), 3)
    return {"scores": scores, "overall": overall, "primary": tier_of(overall)}


def songs_of(segments: Iterable) -> tuple[Song, ...]:
    """The songs of a recording: its segments (or :class:`~harp_lib.tasks.recording.Facts`) grouped
    by song tag (``SONG_NN``), in time order.  Segments without a tag are no song."""
    segs = segments.segments if isinstance(segments, Facts) else segments
    groups: dict[str, list] = {}
    for s in sorted(segs, key=lambda s: s.start):
        if _TAG.fullmatch(getattr(s, "speaker", None) or ""):
            groups.setdefault(s.speaker, []).append(s)
    out = [(min(c.start for c in cs), max(c.end for c in cs), tag, cs) for tag, cs in groups.items()]
    return tuple(Song(i, round(a, 3), round(b, 3), tag, len(cs), _mean_scores(cs))
                 for i, (a, b, tag, cs) in enumerate(sorted(out, key=lambda x: x[0]), 1))


def _listing(songs: Sequence[Song]) -> str:
    return ", ".join(f"{s.index}. {format_time(s.start)}–{format_time(s.end)}" for s in songs)


class SongKind(QuestionKind):
    """A question kind that reads the songs (:func:`songs_of`) of a song-pipeline recording."""
    domains = ("song",)

    def needs(self, facts: Facts) -> Optional[str]:
        why = super().needs(facts)
        if why is None and not songs_of(facts):
            return "no segment carries a song tag (SONG_NN): re-ingest the file with --domain song"
        return why


@register
class SongCount(SongKind):
    name, order = "n_songs", 12
    example = "How many songs are there?"

    def parse(self, text, low):
        if re.search(r"\b(?:how many|(?:the|what|which) number of|^number of)\s+(?:different\s+)?(?:songs|tracks|pieces|"
                     r"tunes)\b", low):
            return Intent(self.name, reason="asks how many songs")
        return None

    def reply(self, it, facts):
        songs = songs_of(facts)
        why = (f"Song segmentation found {len(songs)} song(s) (joined from {len(facts.segments)} index segments "
               f"of at most 15 s by their song tag): {_listing(songs)}.")
        return Reply(("full recording · song boundaries (segmentation)",), songs, str(len(songs)), why, len(songs))


@register
class SongSpan(SongKind):
    name, order = "song_span", 14
    example = "When does the third song start, and how long is it?"

    def parse(self, text, low):
        ords = _song_ordinals(low)
        if ords and re.search(r"\b(when|what time|start|starts|begin|begins|come on|end|ends|stop|stops|how long|"
                              r"length|duration|where)\b", low) and not re.search(r"\b(better|worse|prefer)", low):
            return Intent(self.name, ordinals=ords[:1], reason="asks where a song (by position) starts / ends")
        return None

    def reply(self, it, facts):
        songs = songs_of(facts)
        plan = ("full recording · song boundaries (segmentation), songs in order",)
        n = it.ordinals[0] if it.ordinals else None
        if n is None or n == 0 or n < -1 or n > len(songs):
            return self.cannot(f"segmentation found {len(songs)} song(s); there is no song {n}", plan)
        s = songs[-1] if n == -1 else songs[n - 1]
        ans = f"{format_time(s.start)}–{format_time(s.end)} ({s.length:.1f} s long)"
        why = (f"Song {s.index} of {len(songs)} (segmentation) starts at {format_time(s.start)} ({s.start:.1f} s) "
               f"and ends at {format_time(s.end)} ({s.end:.1f} s): {s.length:.1f} s.")
        return Reply(plan, (s,), ans, why, {"start": round(s.start, 2), "end": round(s.end, 2),
                                            "length": round(s.length, 2), "song": s.index})


@register
class SongAt(SongKind):
    name, order = "song_at", 13
    example = "What song is playing at 2:30?"

    def parse(self, text, low):
        times = time_mentions(text)
        if len(times) == 1 and not _song_ordinals(low) and not re.search(_CONTRAST, low) and (
                re.search(r"\b(?:what|which)\s+(?:songs?|tracks?|pieces?|tunes?|music)\s+(?:is\s+|was\s+)?(?:playing|"
                          r"plays|played|on|at|it|heard|comes on|do (?:i|we|you) hear)\b", low)
                or re.search(r"\bwhat(?:'s| is| was) (?:playing|on)\b", low)):
            return Intent(self.name, times=(times[0],), reason="asks which song plays at a time")
        return None

    def reply(self, it, facts):
        songs = songs_of(facts)
        try:
            w = window(it, facts.duration)
        except LocalizeError as e:
            return self.cannot(f"the time {it.time!r} could not be read ({e})")
        t = (w.start + min(w.end, facts.duration)) / 2
        plan = (f"{it.time} (at {format_time(t)}) · song boundaries (segmentation)",)
        if t > facts.duration:
            return self.cannot(f"{format_time(t)} is after the end of the recording ({format_time(facts.duration)})",
                               plan)
        s = min(songs, key=lambda s: (0 if s.start <= t < s.end else 1, min(abs(s.start - t), abs(s.end - t))))
        edge = min((b for b in [x.start for x in songs[1:]]), key=lambda b: abs(b - t), default=None)
        near = edge is not None and abs(edge - t) <= BOUNDARY_TOL
        why = (f"At {format_time(t)} ({t:.1f} s) song {s.index} of {len(songs)} plays "
               f"({format_time(s.start)}–{format_time(s.end)}).")
        if near:
            why += (f" That is {abs(edge - t):.1f} s from the change of song at {format_time(edge)}: the segmenter "
                    f"places changes within ~{BOUNDARY_TOL:.0f} s, so it may be the crossfade into the neighbour.")
        return Reply(plan, (s,), f"song {s.index} ({format_time(s.start)}–{format_time(s.end)})", why, s.index)


#: words of a "which song is the most ..." question -> (what ranks them: an aesthetics score or the
#: measured ``pace``, highest?, stated proxy?)
_RANK_WORDS = (
    (r"upbeat|energetic|lively|livel\w+|danceable|fast|fastest|faster|quick\w*|groov\w+|driving|busiest",
     "pace", True, False),
    (r"calm\w*|relax\w*|mellow\w*|chill\w*|slow|slowest|slower|gentle\w*|peaceful|soothing|laid.back",
     "pace", False, False),
    (r"clear\w*|clean\w*|crisp\w*", "Clarity", True, False),
    (r"coherent|consistent|steadiest|rhythmic", "Coherence", True, False),
    (r"memorable|catchi\w+", "Memorability", True, False),
    (r"natural\w*", "Naturalness", True, False),
    (r"musical\w*", "Musicality", True, False),
    (r"worst|weakest|poorest|lowest quality", "overall", False, False),
    (r"best|greatest|strongest|highest quality|favou?rite|finest|nicest", "overall", True, False),
)
_PROXY = ("the pace could not be measured ({why}), so Coherence (the aesthetics labeler's strength of a steady "
          "rhythmic pulse, 1-5) is used as a stated proxy: a steady strong beat is not always a fast or happy one")
#: seconds left out at each end of a song before its pace is measured (the changes of song are
#: crossfades; a song shorter than 4x this is measured whole)
PACE_TRIM = 3.0
_PACE_SR = 22050


@lru_cache(maxsize=8)
def _measure_pace(path: str, mtime: float, spans: tuple) -> tuple[tuple[float, float], ...]:
    import librosa  # heavy: librosa (numba, scipy)
    out = []
    for a, b in spans:
        if b - a > 4 * PACE_TRIM:
            a, b = a + PACE_TRIM, b - PACE_TRIM
        y = audio.load(path, sr=_PACE_SR, start=a, end=b)
        env = librosa.onset.onset_strength(y=y, sr=_PACE_SR)
        bpm = float(librosa.feature.tempo(onset_envelope=env, sr=_PACE_SR)[0])
        onsets = librosa.onset.onset_detect(onset_envelope=env, sr=_PACE_SR)
        out.append((round(bpm, 1), round(len(onsets) / max(1e-6, len(y) / _PACE_SR), 2)))
    return tuple(out)


def song_pace(facts: Facts, songs: Sequence[Song]) -> tuple[Optional[list[tuple[float, float]]], str]:
    """(``[(tempo BPM, note onsets per second), ...]`` per song, measured from the recording's audio
    with librosa -- tempo from the onset-strength autocorrelation, onsets by peak picking -- over each
    song less :data:`PACE_TRIM` s at each end, "") or (None, why not)."""
    if not facts.audio:
        return None, "the recording's audio is not at hand"
    try:
        p = Path(facts.audio)
        return list(_measure_pace(str(p), p.stat().st_mtime, tuple((s.start, s.end) for s in songs))), ""
    except Exception as e:  # noqa: BLE001 - an unreadable file: the stated proxy, and why
        return None, f"{Path(facts.audio).name}: {type(e).__name__}: {e}"


@register
class SongRank(SongKind):
    name, order = "song_rank", 15
    example = "Which song is the best?"

    def parse(self, text, low):
        if _song_ordinals(low) or time_mentions(text) or re.search(_CONTRAST, low) or not re.search(
                r"\b(?:which|what)\b.*\b(?:songs?|tracks?|pieces?|tunes?)\b|"
                r"\b(?:songs?|tracks?|pieces?|tunes?)\b.*\b(?:which|what)\b", low):
            return None
        for words, label, high, proxy in _RANK_WORDS:
            m = re.search(rf"\b(most |least )?({words})\b", low)
            if m:
                top = high != (m.group(1) == "least ")
                return Intent(self.name, dimension=label, polarity=1 if top else -1, keywords=(m.group(2),),
                              reason=f"asks which song ranks {'top' if top else 'bottom'} on {label}"
                                     + (" (a stated proxy)" if proxy else ""))
        return None

    def reply(self, it, facts):
        songs = songs_of(facts)
        side = "max" if it.polarity > 0 else "min"
        paced, why_not = song_pace(facts, songs) if it.dimension == "pace" else (None, "")
        if paced:
            return _pace_reply(it, songs, paced, side)
        label = it.dimension if it.dimension in AESTHETIC_DIMENSIONS else "overall"   # (an LLM intent: valence ...)
        if it.dimension == "pace":
            label = "Coherence"
        scored = [s for s in songs if s.labels]
        plan = (f"full recording · songs (segmentation) ranked by aesthetics {label}",)
        if not scored:
            return self.cannot("the aesthetics labeler scored none of the songs (extract.backends.labelers.song: "
                               "aesthetics)", plan)
        def val(s):
            return s.labels["overall"] if label == "overall" else s.labels["scores"][label]
        ranked = sorted(scored, key=val, reverse=side == "max")
        top = ranked[0]
        word = it.keywords[0] if it.keywords else ""
        proxy = it.dimension == "pace"
        what = "overall aesthetics score (mean of the five 1-5 scores)" if label == "overall" else f"{label} score"
        why = (f"{'Highest' if side == 'max' else 'Lowest'} {what} of {len(scored)} song(s): song {top.index} "
               f"({format_time(top.start)}–{format_time(top.end)}) at {val(top):.2f}; all: "
               + ", ".join(f"song {s.index} {val(s):.2f}" for s in scored) + ".")
        if len(ranked) > 1 and abs(val(ranked[0]) - val(ranked[1])) < 0.05:
            why += f" Song {ranked[1].index} is within 0.05 ({val(ranked[1]):.2f}): nearly a tie."
        if proxy:
            why = f"{word!r}: {_PROXY.format(why=why_not)}. " + why
        why += " The scores measure production and regularity, not taste."
        return Reply(plan, (top,), f"song {top.index} ({format_time(top.start)}–{format_time(top.end)})", why,
                     {"song": top.index, "label": label, "score": round(val(top), 3), "proxy": bool(proxy)})


def _pace_reply(it: Intent, songs: Sequence[Song], paced: Sequence[tuple[float, float]], side: str) -> Reply:
    """The fastest / slowest song by measured tempo, the onset rate as a check said next to it."""
    word = it.keywords[0] if it.keywords else ("fast" if side == "max" else "calm")
    rev = side == "max"
    by_bpm = sorted(range(len(songs)), key=lambda i: paced[i][0], reverse=rev)
    by_rate = sorted(range(len(songs)), key=lambda i: paced[i][1], reverse=rev)
    top = songs[by_bpm[0]]
    why = (f"{word!r} is read as the pace, measured from the audio (librosa, each song less {PACE_TRIM:.0f} s at "
           f"each end): {'fastest' if rev else 'slowest'} tempo of {len(songs)} song(s) is song {top.index} "
           f"({format_time(top.start)}–{format_time(top.end)}) at {paced[by_bpm[0]][0]:.0f} BPM; all: "
           + ", ".join(f"song {s.index} {b:.0f} BPM / {r:.2f} onsets/s" for s, (b, r) in zip(songs, paced)) + ".")
    if by_rate[0] != by_bpm[0]:
        why += (f" The onset rate (notes per second) puts song {songs[by_rate[0]].index} first instead: the two "
                f"measures disagree, so the pace is close.")
    elif len(songs) > 1 and abs(paced[by_bpm[0]][0] - paced[by_bpm[1]][0]) < 3.0:
        why += f" Song {songs[by_bpm[1]].index} is within 3 BPM: nearly a tie."
    why += " Tempo and onsets measure pace, not mood."
    return Reply((f"full recording · songs (segmentation) ranked by measured tempo ({'max' if rev else 'min'}), "
                  f"onset rate as a check",), (top,), f"song {top.index} ({format_time(top.start)}–{format_time(top.end)})",
                 why, {"song": top.index, "label": "tempo", "score": paced[by_bpm[0]][0],
                       "onset_rate": paced[by_bpm[0]][1], "proxy": False})
