"""Number and time words of a question: spelled numbers as digits, time phrases normalised.

* :func:`normalize_numbers` -- lower case, spelled numbers as digits, fractions of units folded
  ("a minute and a half" -> "1.5 minute");
* :func:`time_mentions` -- every time phrase, normalised to a form
  :func:`harp_lib.core.timespan.localize` reads ("1:30", "90 s", "a minute and a half", "the
  90-180 s window", "the fourth track", "the seventh one", "at the 40 second mark").

>>> time_mentions("Is the fourth track better than the seventh one?")
['the 4th song', 'the 7th song']
>>> time_mentions("In the 90-180 s window, how did their energy change?")
['from 90 to 180 seconds']
>>> time_mentions("What emotion did she show about a minute and a half in?")
['around 90 seconds']
"""
from __future__ import annotations

import re
from typing import Optional

from harp_lib.core.timespan import ordinal

__all__ = ["time_mentions", "normalize_numbers"]

_NUM_WORDS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
    "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30,
    "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90, "hundred": 100,
}
_ORD_WORDS = {
    "first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7, "eighth": 8,
    "ninth": 9, "tenth": 10, "eleventh": 11, "twelfth": 12, "thirteenth": 13, "fourteenth": 14,
    "fifteenth": 15, "sixteenth": 16, "seventeenth": 17, "eighteenth": 18, "nineteenth": 19,
    "twentieth": 20, "last": -1, "final": -1,
}
#: words of a spoken time whose hyphens are spaces ("sixteen-and-a-half-minute")
_SPOKEN = frozenset({"and", "a", "half", "quarter", "hour", "hours", "minute", "minutes", "min", "mins", "second",
                     "seconds", "sec", "secs"})
_UNIT = r"(?:hours?|hrs?|h|minutes?|mins?|m|seconds?|secs?|s)"
_UNIT_SEC = {"h": 3600, "m": 60, "s": 1}


def _unit_sec(u: Optional[str]) -> Optional[int]:
    if not u:
        return None
    u = u.lower()
    if u.startswith("h"):
        return 3600
    if u.startswith("m"):
        return 60
    return 1


# ---------------------------------------------------------------------------------------
# Numbers and time phrases
# ---------------------------------------------------------------------------------------
def normalize_numbers(text: str) -> str:
    """Lower-case, spelled numbers as digits, fractions of units folded.

    >>> normalize_numbers("About a minute and a half in, then at two and a half minutes")
    'about 1.5 minute in, then at 2.5 minutes'
    >>> normalize_numbers("Near the three-minute mark; half a minute later; ninety seconds")
    'near the 3 minute mark; 0.5 minute later; 90 seconds'
    """
    s = text.lower().replace("–", "-").replace("—", "-").replace("’", "'")
    # hyphenated spoken times: "sixteen-and-a-half-minute mark" -> "sixteen and a half minute mark"
    s = re.sub(r"\b([a-z]+)-(?=([a-z]+))", lambda m: m.group(1) + (" " if {m.group(1), m.group(2)} & _SPOKEN else "-"), s)
    # "twenty-one" / "twenty one" -> 21, "three" -> 3 (never "a"/"an": those are handled below)
    tens = "|".join(w for w, v in _NUM_WORDS.items() if v >= 20 and v < 100)
    units = "|".join(w for w, v in _NUM_WORDS.items() if 0 < v < 10)

    def _tens(m):
        return str(_NUM_WORDS[m.group(1)] + (_NUM_WORDS[m.group(2)] if m.group(2) else 0))
    s = re.sub(rf"\b({tens})(?:[\s-]+({units}))?\b", _tens, s)
    s = re.sub(r"\b(" + "|".join(w for w, v in _NUM_WORDS.items() if 1 < v < 20 or v == 0) + r")\b",
               lambda m: str(_NUM_WORDS[m.group(1)]), s)
    # "one" is a number only before a unit / "and a half" / a range word ("the seventh one" is a song)
    s = re.sub(r"\bone\b(?=\s+(?:and\s+a\s+half|hours?|minutes?|mins?|seconds?|secs?|to|-)\b)", "1", s)
    s = re.sub(r"\b(\d+)[\s-]+hundred(?:\s+and\s+(\d{1,2})\b|\s+(\d{1,2})\b(?!\s*:))?",
               lambda m: str(int(m.group(1)) * 100 + int(m.group(2) or m.group(3) or 0)), s)
    # "1 minute and a half" / "1 and a half minutes" / "half a minute" / "a minute" / "a quarter"
    s = re.sub(r"\b(?:an?|1)\s+(hour|minute|second)(s?)\s+and\s+a\s+half\b", r"1.5 \1", s)
    s = re.sub(r"\b(\d+(?:\.\d+)?)\s+(hours?|minutes?|mins?|seconds?|secs?)\s+and\s+a\s+half\b",
               lambda m: f"{float(m.group(1)) + 0.5:g} {m.group(2)}", s)
    s = re.sub(r"\b(\d+(?:\.\d+)?)\s+and\s+(?:a\s+)?half\b", lambda m: f"{float(m.group(1)) + 0.5:g}", s)
    s = re.sub(r"\b(\d+(?:\.\d+)?)\s+and\s+(?:a\s+)?quarter\b", lambda m: f"{float(m.group(1)) + 0.25:g}", s)
    s = re.sub(r"\bhalf\s+(?:a|an)\s+(hour|minute|min)\b", r"0.5 \1", s)
    s = re.sub(r"\b(?:an?)\s+(hour|minute|second)\b", r"1 \1", s)
    # "3-minute mark" -> "3 minute mark"
    s = re.sub(r"(\d)-(hours?|minutes?|mins?|seconds?|secs?)\b", r"\1 \2", s)
    return s


_CLOCK = r"\d{1,2}:\d{2}(?::\d{2})?"
_BIG = r"(?:hours?|hrs?|h|minutes?|mins?|m)"
_SMALL = r"(?:minutes?|mins?|m|seconds?|secs?|s)"
#: one time quantity: a clock, "3 min 20 s" (a bigger unit then a smaller one), "90 s", or a bare number
_AMOUNT = rf"(?:\d+(?:\.\d+)?\s*{_BIG}\s*(?:and\s+)?\d+(?:\.\d+)?\s*{_SMALL}(?![a-z])|\d+(?:\.\d+)?\s*{_UNIT}(?![a-z]))"
_QTY = rf"(?:{_CLOCK}|{_AMOUNT}|\d+(?:\.\d+)?)"


def _seconds(tok: str, default_unit: Optional[int]) -> Optional[float]:
    """Seconds of one time token: a clock, ``3 min 20 s``, ``90 s``; a bare number takes ``default_unit``."""
    tok = tok.strip()
    if ":" in tok:
        parts = [float(p) for p in tok.split(":")]
        if any(p >= 60 for p in parts[1:]):
            return None
        v = 0.0
        for p in parts:
            v = v * 60 + p
        return v
    pairs = re.findall(rf"(\d+(?:\.\d+)?)\s*({_UNIT})?(?![a-z])", tok)
    if not pairs:
        return None
    total, any_unit = 0.0, False
    for num, u in pairs:
        mult = _unit_sec(u)
        if mult is None:
            if default_unit is None:
                return None
            mult = default_unit
        else:
            any_unit = True
        total += float(num) * mult
    return total if (any_unit or default_unit is not None) else None


def _has_unit(tok: str) -> Optional[int]:
    if ":" in tok:
        return 1
    us = re.findall(rf"\d\s*({_UNIT})(?![a-z])", tok)
    return _unit_sec(us[-1]) if us else None


def _song_mentions(s: str, songs: bool = False) -> list[int]:
    """Ordinals that name songs ("the 4th song", "track 3", "the seventh one", "song number 2",
    "the opening / closing track"); ``songs``: the recording is a medley, so "the first one and the
    last one" name songs without a song noun."""
    s = re.sub(r"\b(?:opening|very first)\s+(?=(?:songs?|tracks?|pieces?|tunes?|ones?|numbers?)\b)", "first ", s)
    s = re.sub(r"\b(?:closing|very last)\s+(?=(?:songs?|tracks?|pieces?|tunes?|ones?|numbers?)\b)", "last ", s)
    if not (re.search(r"\b(songs?|tracks?|pieces?|tunes?|numbers?)\b", s)
            or (songs and re.search(r"\b(?:\d+(?:st|nd|rd|th)|" + "|".join(_ORD_WORDS) + r")\s+ones?\b", s))):
        return []
    out: list[tuple[int, int]] = []
    ords = "|".join(_ORD_WORDS)
    for m in re.finditer(rf"\b(\d+)(?:st|nd|rd|th)\b(?!\s*{_UNIT}\b)|\b({ords})\b(?!\s*(?:\d+(?:\.\d+)?\s*)?{_UNIT}\b)", s):
        if m.group(2) == "second" and re.search(r"(?:\d|\ba|\bper|\bsplit)\s*$", s[:m.start()]):
            continue                                  # "the 40 second mark": a unit, not an ordinal
        n = int(m.group(1)) if m.group(1) else _ORD_WORDS[m.group(2)]
        # an ordinal counts when a song noun follows it (possibly after "and the Nth") or "one"
        rest = s[m.end():m.end() + 60]
        # the text names songs somewhere, so an ordinal that is not a time ("first minute") is a song
        if not re.match(r"\s*(?:half|quarter|time|place|speaker|person|voice)\b", rest):
            out.append((m.start(), n))
    for m in re.finditer(rf"\b(?:(?:song|track|piece|tune)\s+(?:no\.?\s*|number\s+|#)?|number\s+|#)(\d+)\b(?!\s*(?::\d|{_UNIT}\b|st\b|nd\b|rd\b|th\b))", s):
        out.append((m.start(), int(m.group(1))))
    seen, res = set(), []
    for pos, n in sorted(out):
        if pos not in seen:
            seen.add(pos)
            res.append(n)
    return res


def _range_mentions(s: str, out: list, taken: list, free) -> None:
    """The explicit ranges of ``s`` (normalised text) into ``out`` / ``taken``: "[from|between] Q1
    (to|and|until|through|-) Q2", and two clocks a few words apart joined by "up to" / "until"."""
    # ranges: [from|between] Q1 (to|and|until|through|-) Q2
    rng = re.compile(rf"(?:\b(from|between)\s+)?({_QTY})\s*(?:to|and|until|till|through|-)\s*({_QTY})")
    for m in rng.finditer(s):
        if not free(*m.span()):
            continue
        if re.search(r"\band\s*$", s[m.start(): m.end()].split(m.group(3))[0]) and m.group(1) != "between":
            continue                                  # "at 270 s and 450 s": two points, not a range
        a, b = m.group(2), m.group(3)
        ua, ub = _has_unit(a), _has_unit(b)
        if ua is None and ub is None:
            # bare numbers are seconds only with "from/between" and a window word nearby
            if not (m.group(1) and re.search(r"\b(seconds?|secs?|s)\b", s[m.end():m.end() + 12])):
                continue
            ua = ub = 1
        ta, tb = _seconds(a, ua or ub), _seconds(b, ub or ua)
        if ta is None or tb is None or tb <= ta:
            continue
        out.append((m.start(), f"from {ta:g} to {tb:g} seconds"))
        taken.append(m.span())
    # "at 0:44 ... up to / until 1:06": two clocks joined by an open range word a few words apart
    for m in re.finditer(rf"({_CLOCK})\b[^?;]{{0,40}}?\b(?:up to|until|till|through)\s+({_CLOCK})", s):
        ta, tb = _seconds(m.group(1), None), _seconds(m.group(2), None)
        if free(*m.span()) and ta is not None and tb is not None and tb > ta:
            out.append((m.start(), f"from {ta:g} to {tb:g} seconds"))
            taken.append(m.span())


def _edge_mentions(s: str, out: list, taken: list) -> None:
    """The "first / last N units" phrases of ``s`` (normalised text) into ``out`` / ``taken``."""
    for m in re.finditer(rf"\b(first|last|final|opening|closing)\s+(?:(\d+(?:\.\d+)?)\s*)?({_UNIT})(?![a-z])", s):
        n = float(m.group(2) or 1)
        which = "first" if m.group(1) in ("first", "opening") else "last"
        unit = {1: "seconds", 60: "minutes", 3600: "hours"}[_unit_sec(m.group(3)) or 1]
        out.append((m.start(), f"the {which} {unit[:-1]}" if n == 1 else f"the {which} {n:g} {unit}"))
        taken.append(m.span())


def _point_mentions(s: str, out: list, taken: list, free) -> None:
    """The points of ``s`` (normalised text) into ``out`` / ``taken``: clocks and amounts, then "minute 3"."""
    # points: a clock or a quantity with a unit
    for m in re.finditer(rf"({_CLOCK}|{_AMOUNT})", s):
        if not free(*m.span()):
            continue
        # "the first/last" handled by _edge_mentions; "3 s" after an ordinal song is not a time
        t = _seconds(m.group(1), None)
        if t is None:
            continue
        out.append((m.start(), f"around {t:g} seconds"))
        taken.append(m.span())
    # "minute 3"
    for m in re.finditer(r"\b(minute|second)\s+(\d+(?:\.\d+)?)\b", s):
        if free(*m.span()):
            out.append((m.start(), f"around {float(m.group(2)) * (60 if m.group(1) == 'minute' else 1):g} seconds"))
            taken.append(m.span())


def time_mentions(text: str, domain: Optional[str] = None) -> list[str]:
    """The time phrases of a question in order, each normalised so ``localize`` reads it.

    Ranges become ``from A to B seconds``, points ``around T seconds``, song ordinals ``the
    Nth song`` (``the last song``; "opening" / "closing" are the first / last), ``first/last N
    minutes`` stay as they are.  An explicit range beats a vague phrase in the same question
    ("in the last minute or so, 30:11 to 31:03" is the range only).  ``domain="song"``: "the
    first one" names a song without a song noun.

    >>> time_mentions("Between 1:30 and 3:00, who sounded calmer?")
    ['from 90 to 180 seconds']
    >>> time_mentions("Compare the song playing at 2 min with the one at the 40 second mark")
    ['around 120 seconds', 'around 40 seconds']
    >>> time_mentions("Which emotion did the speaker show at 0:40?")
    ['around 40 seconds']
    >>> time_mentions("During the first two minutes, was anyone angry?")
    ['the first 2 minutes']
    >>> time_mentions("Is track 3 or the last song better?")
    ['the 3rd song', 'the last song']
    >>> time_mentions("In the last minute or so, 30:11 to 31:03, did it rise?")
    ['from 1811 to 1863 seconds']
    >>> time_mentions("I noticed something at 0:44. Up to 1:06, is the speaker becoming calmer?")
    ['from 44 to 66 seconds']
    >>> time_mentions("the closing track or the opening one?"), time_mentions("the first one or the last one?", "song")
    (['the last song', 'the 1st song'], ['the 1st song', 'the last song'])
    """
    s = normalize_numbers(text)
    songs = _song_mentions(s, domain == "song")
    if songs:
        return [("the last song" if n == -1 else f"the {ordinal(n)} song") for n in songs]
    out: list[tuple[int, str]] = []
    taken: list[tuple[int, int]] = []

    def free(a: int, b: int) -> bool:
        return all(b <= x or a >= y for x, y in taken)

    _edge_mentions(s, out, taken)                       # first / last N units
    _range_mentions(s, out, taken, free)
    if any(p.startswith("from ") for _, p in out):     # an explicit range beats "the first minute or so"
        out = [(i, p) for i, p in out if not re.match(r"the (?:first|last) ", p)]
    _point_mentions(s, out, taken, free)                # points, then "minute 3"
    return [p for _, p in sorted(out)]
