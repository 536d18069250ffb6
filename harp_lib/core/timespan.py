"""Time spans and natural-language time localisation.

:class:`Span` is a frozen, ordered interval in seconds with interval algebra
(``&`` intersection, ``|`` hull, ``in``).  :func:`localize` turns the time phrases that
planners and queries use into a :class:`Span`, and raises :class:`LocalizeError` on
anything it cannot read (the reference code silently dropped such evidence sets).

>>> Span(10, 20) & Span(15, 30)
Span(start=15.0, end=20.0)
>>> 12 in Span(10, 20)
True
>>> localize("around 3 and a half minutes")
Span(start=180.0, end=240.0)
>>> localize("12:30 to 15:00")
Span(start=750.0, end=900.0)
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Iterable, Mapping, Optional, Sequence, Union
from harp_lib.core.errors import HarpError

__all__ = ["Span", "BoundsError", "check_bounds", "LocalizeError", "localize", "point_time", "song_spans", "format_time", "ordinal", "merge_spans", "DEFAULT_POINT_WINDOW"]

#: Half-width in seconds of the window around a point ("around 3 min" -> 2:30-3:30).
#: The pipeline passes ``agent.point_window_sec`` from params.yaml.
DEFAULT_POINT_WINDOW = 30.0


def _r(t: float) -> float:
    if math.isinf(t):
        return t
    return round(float(t), 3) + 0.0


class BoundsError(HarpError, ValueError):
    """A record's time bounds are wrong (:func:`check_bounds`); ``field`` names the bound."""

    def __init__(self, message: str, field: str):
        super().__init__(message)
        self.field = field


def check_bounds(start: Optional[float], end: Optional[float], what: str) -> tuple[Optional[float], Optional[float]]:
    """The bounds of a record's span (a segment, an evidence item, a plan set's window: ``what``),
    checked and rounded once: finite seconds from 0, the end not before the start (compared rounded);
    None is a bound left open.  Stricter than a :class:`Span` (which may end at ``inf``, start below 0).

    >>> check_bounds(0.1 + 0.2, 1.0004, "segment a")
    (0.3, 1.0)
    """
    out = []
    for name, v in (("start", start), ("end", end)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v)):
            raise BoundsError(f"{name} must be a finite number of seconds, got {v!r}", name)
        out.append(None if v is None else _r(v))
    s, e = out
    if s is not None and e is not None and s < 0:
        raise BoundsError(f"{what} starts before 0 s ({s})", "start")
    if s is not None and e is not None and e < s:
        raise BoundsError(f"{what} ends ({e}) before it starts ({s})", "end")
    return s, e


@dataclass(frozen=True, order=True)
class Span:
    """A time interval ``[start, end]`` in seconds (``end`` may be ``inf``).

    Times are rounded to the millisecond on creation so float drift never decides an overlap.

    >>> Span(0, 10).overlaps(Span(10, 20))     # touching is not overlapping
    False
    >>> (Span(0, 10) | Span(20, 30)).duration
    30.0
    """
    start: float
    end: float

    def __post_init__(self):
        s, e = self.start, self.end
        if isinstance(s, bool) or isinstance(e, bool):
            raise TypeError("span bounds must be numbers")
        s, e = float(s), float(e)
        if math.isnan(s) or math.isnan(e) or math.isinf(s):
            raise ValueError(f"invalid span bounds ({self.start}, {self.end})")
        if e < s:
            raise ValueError(f"span ends ({e}) before it starts ({s})")
        object.__setattr__(self, "start", _r(s))
        object.__setattr__(self, "end", _r(e))

    # -- measures --------------------------------------------------------------------
    @property
    def duration(self) -> float:
        return _r(self.end - self.start)

    @property
    def middle(self) -> float:
        return _r((self.start + self.end) / 2)

    # -- algebra ---------------------------------------------------------------------
    def overlaps(self, other: "Span") -> bool:
        """Strictly positive overlap (the hit-rate rule of the paper)."""
        return self.start < other.end and other.start < self.end

    def overlap(self, other: "Span") -> float:
        """Length of the intersection in seconds (0 when disjoint)."""
        return _r(max(0.0, min(self.end, other.end) - max(self.start, other.start)))

    def __and__(self, other: "Span") -> Optional["Span"]:
        """Intersection, or ``None`` when the spans do not overlap."""
        lo, hi = max(self.start, other.start), min(self.end, other.end)
        return Span(lo, hi) if lo < hi else None

    def __or__(self, other: "Span") -> "Span":
        """Hull: the smallest span containing both."""
        return Span(min(self.start, other.start), max(self.end, other.end))

    def __contains__(self, item: Union[float, int, "Span"]) -> bool:
        if isinstance(item, Span):
            return self.start <= item.start and item.end <= self.end
        return self.start <= float(item) <= self.end

    def shift(self, dt: float) -> "Span":
        return Span(self.start + dt, self.end + dt)

    def pad(self, before: float, after: Optional[float] = None) -> "Span":
        """Grow the span (clamped at 0)."""
        after = before if after is None else after
        return Span(max(0.0, self.start - before), self.end + after)

    def clip(self, lo: float = 0.0, hi: float = math.inf) -> "Span":
        """Clamp into ``[lo, hi]``; a span entirely outside collapses to the nearest edge."""
        s = min(max(self.start, lo), hi)
        e = min(max(self.end, lo), hi)
        return Span(s, e)

    def iou(self, other: "Span") -> float:
        u = (self | other).duration
        return self.overlap(other) / u if u > 0 else 0.0

    def to_tuple(self) -> tuple[float, float]:
        return (self.start, self.end)

    def __repr__(self) -> str:
        return f"Span(start={self.start}, end={self.end})"

    def __str__(self) -> str:
        return f"{format_time(self.start)}–{format_time(self.end)}"


def format_time(t: float) -> str:
    """``m:ss`` (or ``h:mm:ss``) for display.

    >>> format_time(754.2)
    '12:34'
    """
    if math.isinf(t):
        return "end"
    t = int(round(t))
    h, rem = divmod(t, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class LocalizeError(HarpError, ValueError):
    """A time phrase could not be turned into a window."""


# ---------------------------------------------------------------------------------------
# Number words
# ---------------------------------------------------------------------------------------
_UNITS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
    "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18,
    "nineteen": 19, "a": 1, "an": 1,
}
_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70,
         "eighty": 80, "ninety": 90}
_ORDINALS = {
    "first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7,
    "eighth": 8, "ninth": 9, "tenth": 10, "eleventh": 11, "twelfth": 12, "thirteenth": 13,
    "fourteenth": 14, "fifteenth": 15, "sixteenth": 16, "seventeenth": 17, "eighteenth": 18,
    "nineteenth": 19, "twentieth": 20, "last": -1,
}


def merge_spans(spans: Iterable[Span]) -> list[Span]:
    """The union of ``spans`` as sorted, disjoint spans (overlapping or touching ones joined).

    >>> merge_spans([Span(5, 8), Span(0, 2), Span(1, 3), Span(3, 4)])
    [Span(start=0.0, end=4.0), Span(start=5.0, end=8.0)]
    """
    out: list[Span] = []
    for sp in sorted(spans, key=lambda s: s.start):
        if out and sp.start <= out[-1].end:
            out[-1] = out[-1] | sp
        else:
            out.append(sp)
    return out


def ordinal(n: int) -> str:
    """``1st, 2nd, 3rd, 4th, 11th, 21st``: how song queries name a position (:func:`localize` reads it).

    >>> [ordinal(n) for n in (1, 2, 3, 4, 11, 12, 21, 112)]
    ['1st', '2nd', '3rd', '4th', '11th', '12th', '21st', '112th']
    """
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _words_to_numbers(text: str) -> str:
    """Replace spelled numbers by digits: 'three and a half' -> '3.5', 'twenty one' -> '21'."""
    tokens = re.findall(r"[a-z]+|\d+(?:\.\d+)?|[^a-z\d\s]+|\s+", text)
    out: list[str] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok in _TENS or (tok in _UNITS and tok not in ("a", "an")):
            val = _TENS.get(tok, _UNITS.get(tok))
            j = i + 1
            # twenty[-]one
            if tok in _TENS:
                k = j
                while k < len(tokens) and tokens[k] in (" ", "-"):
                    k += 1
                if k < len(tokens) and tokens[k] in _UNITS and tokens[k] not in ("a", "an", "zero"):
                    val += _UNITS[tokens[k]]
                    j = k + 1
            out.append(str(val))
            i = j
            continue
        out.append(tok)
        i += 1
    s = "".join(out)
    s = re.sub(r"\b(?:an?|1)\s+(hour|minute|second)s?\s+and\s+(?:a\s+)?half\b", r"1.5 \1s", s)
    s = re.sub(r"\b(\d+(?:\.\d+)?)\s+(hours?|minutes?|seconds?)\s+and\s+(?:a\s+)?half\b",
               lambda m: f"{float(m.group(1)) + 0.5:g} {m.group(2)}", s)
    s = re.sub(r"\b(\d+(?:\.\d+)?)\s+and\s+(?:a\s+)?half\b", lambda m: str(float(m.group(1)) + 0.5), s)
    s = re.sub(r"\b(\d+(?:\.\d+)?)\s+and\s+(?:a\s+)?quarter\b", lambda m: str(float(m.group(1)) + 0.25), s)
    s = re.sub(r"\b(?:a\s+)?half\s+(?:a|an)\s+(minute|min|hour)\b", r"0.5 \1", s)
    s = re.sub(r"\b(?:an?|one)\s+(minute|min|hour|second|sec)\b", r"1 \1", s)
    return s


_UNIT_RE = r"(?P<unit>h|hr|hrs|hours?|m|mins?|minutes?|s|secs?|seconds?)"
_UNIT_SEC = {"h": 3600, "hr": 3600, "hrs": 3600, "hour": 3600, "hours": 3600,
             "m": 60, "min": 60, "mins": 60, "minute": 60, "minutes": 60,
             "s": 1, "sec": 1, "secs": 1, "second": 1, "seconds": 1}
_NUM = r"\d+(?:\.\d+)?"


def _unit(u: Optional[str]) -> Optional[float]:
    return None if u is None else _UNIT_SEC[u]


SongLookup = Union[Mapping[int, Span], Sequence[Span]]


def song_spans(segments: Iterable) -> dict[int, Span]:
    """Whole-song spans from segments tagged ``SONG_NN`` (1-based), merging their chunks (``Segment.span``).

    >>> from harp_lib.core.schema import Segment
    >>> segs = [Segment("a", "t", 0, 15, "SONG_01"), Segment("b", "t", 15, 30, "SONG_01"),
    ...         Segment("c", "t", 30, 40, "SONG_02")]
    >>> song_spans(segs)[1]
    Span(start=0.0, end=30.0)
    """
    spans: dict[int, Span] = {}
    for s in segments:
        m = re.fullmatch(r"SONG_(\d+)", s.speaker or "")
        if not m:
            continue
        n = int(m.group(1))
        sp = s.span
        spans[n] = spans[n] | sp if n in spans else sp
    return spans


def _lookup_song(n: int, songs: Optional[SongLookup], text: str) -> Span:
    if songs is None:
        raise LocalizeError(f"cannot resolve {text!r}: no song boundaries are known for this recording")
    table = dict(songs) if isinstance(songs, Mapping) else {i + 1: s for i, s in enumerate(songs)}
    if not table:
        raise LocalizeError(f"cannot resolve {text!r}: the recording has no detected songs")
    if n == -1:
        n = max(table)
    if n not in table:
        raise LocalizeError(f"cannot resolve {text!r}: song {n} does not exist "
                            f"(songs 1..{max(table)} are known)")
    return table[n]


def localize(text: str, recording=None, *, songs: Optional[SongLookup] = None,
             point_window: float = DEFAULT_POINT_WINDOW) -> Span:
    """Turn a time phrase into a window in seconds.

    ``recording`` may be a :class:`~harp_lib.core.schema.Recording`, a duration in seconds, or
    ``None`` (then "full recording" ends at ``inf`` and nothing is clamped at the end).
    ``songs`` maps 1-based song ordinals to whole-song spans (see :func:`song_spans`).

    Forms understood (case-insensitive, spelled numbers allowed):

    * ``full recording`` / ``full track`` / ``whole track`` / ``entire recording`` /
      ``all sections`` -> the whole recording
    * ``the 16th song``, ``song 3``, ``the last song`` -> that song's whole span
    * ``12:30 to 15:00``, ``1:02:03``, ``at 12:30`` (one time -> ± ``point_window``)
    * ``3 min 20 sec`` (one -> ±window, two -> range), ``from 2 min 10 s to 3 min``
    * ``from 40 to 95 seconds``, ``between 2 and 4 minutes``, ``40-95 s``, ``1 min to 90 sec``
    * ``around 3 minutes``, ``at 45 s``, ``~3 min``, ``minute 3``, ``3 and a half minutes``
    * ``first 2 minutes`` / ``last 5 minutes`` (the latter needs the duration)
    * ``0 to 120`` or ``[40, 95]`` bare numbers are read as seconds

    >>> localize("the 2nd song", songs=[Span(0, 150), Span(147, 300)])
    Span(start=147.0, end=300.0)
    >>> localize("from 40 to 95 seconds")
    Span(start=40.0, end=95.0)
    >>> localize("sometime later")
    Traceback (most recent call last):
    ...
    harp_lib.core.timespan.LocalizeError: cannot read a time window from 'sometime later'; use e.g. ...
    """
    try:
        return _localize(text, recording, songs=songs, point_window=point_window)
    except LocalizeError:
        raise
    except (ValueError, OverflowError, ArithmeticError) as e:   # 5000-digit ordinals, 1e400 seconds
        raise LocalizeError(f"cannot read a time window from {str(text)[:80]!r} ({type(e).__name__}: "
                            f"{str(e)[:80]})") from None


@dataclass(frozen=True)
class _Frame:
    """What every step of :func:`_localize` needs: the phrase as given, the recording's duration
    (None: unknown) and the half-width of a point window."""
    raw: str
    duration: Optional[float]
    point_window: float

    def finish(self, lo: float, hi: float) -> Span:
        """The span ``lo``-``hi`` (ordered, from 0, cut at the end of the recording); never empty."""
        if hi < lo:
            lo, hi = hi, lo
        lo = max(0.0, lo)
        if self.duration is not None:
            if lo >= self.duration and self.duration > 0:
                raise LocalizeError(f"{self.raw!r} starts at {format_time(lo)}, after the end of the "
                                    f"recording ({format_time(self.duration)})")
            hi = min(hi, self.duration)
        if hi <= lo:
            raise LocalizeError(f"{self.raw!r} gives an empty window ({lo:g}-{hi:g} s)")
        return Span(lo, hi)

    def point(self, t: float) -> Span:
        return self.finish(t - self.point_window, t + self.point_window)


def _localize(text: str, recording=None, *, songs: Optional[SongLookup] = None,
              point_window: float = DEFAULT_POINT_WINDOW) -> Span:
    if not isinstance(text, str) or not text.strip():
        raise LocalizeError(f"empty time phrase {text!r}")
    duration = None
    if recording is not None:
        duration = float(getattr(recording, "duration", recording))
        if not math.isfinite(duration) or duration < 0:
            raise LocalizeError(f"invalid recording duration {duration!r}")
    f = _Frame(text, duration, point_window)
    s = text.lower().strip()
    s = s.replace("–", " to ").replace("—", " to ").replace("’", "'")
    s = re.sub(r"\s+", " ", s)
    # 1. whole recording
    if re.search(r"\b(full|whole|entire|complete)\s+(recording|track|episode|consultation|medley|audio|conversation|podcast)\b"
                 r"|\ball\s+sections?\b|\bwhole\s+thing\b|\bentire\s+thing\b", s):
        return Span(0.0, duration if duration is not None else math.inf)
    # 2. songs: "16th song", "song 16", "the last song", "second song"
    span = _song_phrase(s, songs, text)
    if span is not None:
        return span
    s = _words_to_numbers(s)
    for step in (_clock_phrase, _first_last_phrase, _compound_phrase, _range_phrase, _point_phrase):
        span = step(s, f)
        if span is not None:
            return span
    raise LocalizeError(_help(text))


def _song_phrase(s: str, songs: Optional[SongLookup], raw: str) -> Optional[Span]:
    m = re.search(r"\b(\d+)(?:st|nd|rd|th)\s+(?:song|track|piece)\b", s) \
        or re.search(r"\b(?:song|track|piece)\s+(?:no\.?\s*|number\s+|#)?(\d+)\b", s)
    if m:
        return _lookup_song(int(m.group(1)), songs, raw)
    m = re.search(r"\b(" + "|".join(_ORDINALS) + r")\s+(?:song|track|piece)\b", s)
    if m:
        return _lookup_song(_ORDINALS[m.group(1)], songs, raw)
    return None


def _clock_phrase(s: str, f: _Frame) -> Optional[Span]:
    """3. clock times mm:ss / h:mm:ss (two: a range; one: a point)."""
    clocks = re.findall(r"\b(\d{1,2}(?::\d{2}){1,2}(?:\.\d+)?)\b", s)
    if not clocks:
        return None
    secs = []
    for c in clocks:
        parts = [float(p) for p in c.split(":")]
        if any(p >= 60 for p in parts[1:]):
            raise LocalizeError(f"invalid clock time {c!r} in {f.raw!r}")
        v = 0.0
        for p in parts:
            v = v * 60 + p
        secs.append(v)
    return f.finish(secs[0], secs[1]) if len(secs) >= 2 else f.point(secs[0])


def _first_last_phrase(s: str, f: _Frame) -> Optional[Span]:
    """4. first / last N units."""
    m = re.search(r"\b(first|last|final)\s+(" + _NUM + r")?\s*" + _UNIT_RE + r"\b", s)
    if not m:
        return None
    n = float(m.group(2) or 1) * _UNIT_SEC[m.group("unit")]
    if m.group(1) == "first":
        return f.finish(0.0, n)
    if f.duration is None:
        raise LocalizeError(f"cannot resolve {f.raw!r} without the recording duration")
    return f.finish(f.duration - n, f.duration)


def _compound_phrase(s: str, f: _Frame) -> Optional[Span]:
    """5. compound quantities "3 min 20 sec" / "1 h 2 min" (one of them: the other end of a range
    may be a plain quantity, "from 2 min 10 s to 3 min")."""
    comp = list(re.finditer(r"(" + _NUM + r")\s*(h|hrs?|hours?|m|mins?|minutes?)\s*(?:and\s+)?(" + _NUM +
                            r")\s*(m|mins?|minutes?|s|secs?|seconds?)\b", s))
    if not comp:
        return None
    vals = [float(c.group(1)) * _UNIT_SEC[c.group(2)] + float(c.group(3)) * _UNIT_SEC[c.group(4)] for c in comp]
    if len(vals) > 1:
        return f.finish(vals[0], vals[1])
    rest = s[comp[0].end():]
    m2 = re.search(r"\b(?:to|until|till|and|-)\s*(" + _NUM + r")\s*" + _UNIT_RE + r"\b", rest)
    if m2:
        return f.finish(vals[0], float(m2.group(1)) * _UNIT_SEC[m2.group("unit")])
    head = s[:comp[0].start()]
    m2 = re.search(r"(" + _NUM + r")\s*" + _UNIT_RE + r"\s*(?:to|until|till|and|-)\s*$", head)
    if m2:
        return f.finish(float(m2.group(1)) * _UNIT_SEC[m2.group("unit")], vals[0])
    return f.point(vals[0])


def _range_phrase(s: str, f: _Frame) -> Optional[Span]:
    """6. ranges "X to Y unit", "X unit to Y unit", "between X and Y unit", "X-Y s", "[X, Y]"."""
    m = re.search(r"(" + _NUM + r")\s*(?P<u1>h|hrs?|hours?|m|mins?|minutes?|s|secs?|seconds?)?\s*"
                  r"(?:to|until|till|through|-|and)\s*(" + _NUM + r")\s*" + _UNIT_RE + r"?(?![a-z])", s)
    if m:
        u1, u2 = _unit(m.group("u1")), _unit(m.group("unit"))
        if u1 is None and u2 is None:
            # bare numbers: seconds, but only in an explicit range form
            if not re.search(r"\b(from|between)\b|^\s*\[?\s*" + _NUM, s):
                raise LocalizeError(_help(f.raw))
            u1 = u2 = 1.0
        u1 = u1 if u1 is not None else u2
        u2 = u2 if u2 is not None else u1
        return f.finish(float(m.group(1)) * u1, float(m.group(3)) * u2)
    m = re.fullmatch(r"\s*\[?\s*(" + _NUM + r")\s*,\s*(" + _NUM + r")\s*\]?\s*", s)
    return f.finish(float(m.group(1)), float(m.group(2))) if m else None


def _point_phrase(s: str, f: _Frame) -> Optional[Span]:
    """7. points "around 3 minutes", "at 45 s", "~3 min", "minute 3", "3 min mark"."""
    m = re.search(r"(" + _NUM + r")\s*" + _UNIT_RE + r"\b", s)
    if m:
        return f.point(float(m.group(1)) * _UNIT_SEC[m.group("unit")])
    m = re.search(r"\b(minute|second|hour)\s+(" + _NUM + r")\b", s)
    return f.point(float(m.group(2)) * _UNIT_SEC[m.group(1)]) if m else None


def point_time(text: str) -> Optional[float]:
    """The moment a *point* phrase names ("around 0:40", "at 2 min", "the 40 second mark"), else None.

    Ranges, songs, "first N minutes" and whole-recording phrases are not points.

    >>> point_time("around 0:40"), point_time("at 2 min"), point_time("from 40 to 95 seconds")
    (40.0, 120.0, None)
    """
    try:
        a = localize(text, None, point_window=1.0)
        b = localize(text, None, point_window=2.0)
    except LocalizeError:
        return None
    if math.isinf(a.end) or b.end - a.end != 1.0:      # the window did not grow with the point window
        return None
    return _r(a.end - 1.0)


def _help(raw: str) -> str:
    return (f"cannot read a time window from {raw!r}; use e.g. 'around 3 min', '12:30 to 15:00', "
            f"'from 40 to 95 seconds', 'the 4th song' or 'full recording'")
