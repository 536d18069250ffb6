"""What a question asks, read from its text: the task, the direction asked for, the time phrases.

The rule planner and the rule answerer never read ``Query.query_type`` or ground truth (a user
supplies neither).  They read the question text, the recording's domain and the query's
reference roles, and this module turns those into:

* :func:`classify` — one of the ten task names (``state``, ``change``, ``comparison``,
  ``locate``, ``locate_hard``, ``reported``, ``exhibited``, ``time``, ``position``, ``audio``)
  or :data:`UNSUPPORTED` when no task fits (the answerer then says so instead of guessing);
* :func:`polarity` — ``+1`` when the question asks for the higher / better / more side,
  ``-1`` for the lower / worse / less / quieter / sadder / calmer / more negative side;
* :func:`dimension` — the emotion dimension named (valence / arousal / dominance);
* :func:`time_mentions` — every time phrase, normalised to a form
  :func:`harp_lib.core.timespan.localize` reads ("1:30", "90 s", "a minute and a half", "the
  90-180 s window", "the fourth track", "the seventh one", "at the 40 second mark").

>>> classify("Between 1:30 and 3:00, who sounded sadder, speaker A or speaker B?", "emotion", ("A", "B"))
'comparison'
>>> polarity("Between 1:30 and 3:00, who sounded sadder, speaker A or speaker B?"), dimension("who sounded sadder")
(-1, 'valence')
>>> classify("Can you actually hear the patient coughing?", "clinical")
'exhibited'
>>> analyze("Was the consultation free of any audible coughing?", "clinical").absence
True
>>> classify("What is the capital of France?", "emotion")
'unsupported'
>>> time_mentions("Is the fourth track better than the seventh one?")
['the 4th song', 'the 7th song']
>>> time_mentions("In the 90-180 s window, how did their energy change?")
['from 90 to 180 seconds']
>>> time_mentions("What emotion did she show about a minute and a half in?")
['around 90 seconds']
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional, Sequence

from harp_lib.core.schema import QUERY_TYPE_DOMAIN

__all__ = ["UNSUPPORTED", "TASKS", "Intent", "analyze", "classify", "polarity", "pole", "dimension",
           "time_mentions", "normalize_numbers"]

UNSUPPORTED = "unsupported"
#: The ten task names, in the schema's order.
TASKS: tuple[str, ...] = tuple(QUERY_TYPE_DOMAIN)

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
    from harp_lib.core.timespan import ordinal
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


# ---------------------------------------------------------------------------------------
# Direction and dimension
# ---------------------------------------------------------------------------------------
#: Words naming the low pole of a dimension (asking about them asks for the lower side).
_LOW_POLE = {
    "valence": r"sad\w*|unhapp\w*|negativ\w*|gloom\w*|down(?:beat|cast)?|miserabl\w*|upset|glum\w*|bleak\w*|"
               r"unpleasant\w*|depress\w*|grim\w*",
    "arousal": r"calm\w*|quiet\w*|relax\w*|subdued|mellow\w*|low[\s-]energy|sleep\w*|tired\w*|lethargic\w*|"
               r"placid\w*|soft[\s-]spoken|laid[\s-]back",
    "dominance": r"submissiv\w*|passiv\w*|timid\w*|meek\w*|hesitant\w*|unsure|insecur\w*|deferen\w*|"
                 r"less in control",
}
_HIGH_POLE = {
    "valence": r"valence|positiv\w*|happ\w*|cheer\w*|upbeat|pleasant\w*|glad\w*|joy\w*|optimis\w*|bright\w*|mood",
    "arousal": r"arousal|energ\w*|excit\w*|activ\w*|agitat\w*|animat\w*|intens\w*|loud\w*|lively|livelier|"
               r"aroused|tense\w*|heated",
    "dominance": r"dominan\w*|dominant|control\w*|confiden\w*|assert\w*|forceful\w*|in charge|powerful\w*|"
                 r"authoritativ\w*|commanding",
}
_LOWER = (r"lower|less|least|fewer|smaller|weaker|worse|worst|poorer|poorest|inferior|lesser|not as|"
          r"isn't as|wasn't as|aren't as|weren't as|lacks?|lacking|dislike\w*|like\w* less|prefer\w* less|"
          r"least|bottom|losing|loses|lost")
_HIGHER = r"higher|more|most|greater|stronger|better|best|superior|top|winning|wins|prefer\w*"


def _fold(text: str) -> str:
    """Lower case, misspelt task words corrected, "better or worse" options cut to the first: what
    the direction words are read from (the answerers call :func:`polarity` on the raw text)."""
    from harp_lib.understand.typos import correct
    s = correct(text.lower())
    return re.sub(r"\b(better|higher|more|greater)\s+or\s+(?:worse|lower|less|smaller)\b", r"\1", s)


def dimension(text: str, default: Optional[str] = None) -> Optional[str]:
    """The emotion dimension a question names (first mention wins), else ``default``.

    >>> dimension("Who sounded more energetic?"), dimension("who was calmer"), dimension("how confident")
    ('arousal', 'arousal', 'dominance')
    """
    low = _fold(text)
    best: Optional[tuple[int, str]] = None
    for dim in ("valence", "arousal", "dominance"):
        for pat in (_HIGH_POLE[dim], _LOW_POLE[dim]):
            m = re.search(r"\b(?:" + pat + r")\b", low)
            if m and (best is None or m.start() < best[0]):
                best = (m.start(), dim)
    return best[1] if best else default


def pole(text: str, dim: Optional[str] = None) -> int:
    """``-1`` when the quantity a question names is the low pole of ``dim`` ("calmness",
    "negativity", "sadness"), else ``+1``; what a *change* question's direction is about
    (its "higher or lower" are the options, not the side asked for).

    >>> pole("how did the speaker's calmness change?"), pole("did their energy go up or down, higher or lower?")
    (-1, 1)
    """
    low = _fold(text)
    dim = dim or dimension(low)
    for d in ([dim] if dim in _LOW_POLE else ([] if dim else ["valence", "arousal", "dominance"])):
        lo = re.search(r"\b(?:" + _LOW_POLE[d] + r")\b", low)
        hi = re.search(r"\b(?:" + _HIGH_POLE[d] + r")\b", low)
        if lo and (not hi or lo.start() < hi.start()):
            return -1
        if hi:
            return 1
    return 1


def polarity(text: str, dim: Optional[str] = None) -> int:
    """``-1`` when the question asks for the lower side of ``dim`` (or of the aesthetic score).

    The comparative ("lower", "less", "worse", "not as ...") times the pole of the named
    quantity ("sadder", "calmer", "more negative" name the low pole).

    >>> [polarity(q) for q in ("Which speaker had higher arousal?", "Who was less energetic?",
    ...                        "Who sounded calmer?", "Who was less calm?", "Which song is worse?",
    ...                        "Which track isn't as good?", "who was more negative?", "Which song is better?")]
    [1, -1, -1, 1, -1, -1, -1, 1]
    >>> polarity("Is the opening song better or worse than the second one?"), polarity("who was calmr?")
    (1, -1)
    """
    low = _fold(text)
    dim = dim or dimension(low)
    sign = 1
    comp = re.search(r"\b(?:" + _LOWER + r")\b", low)
    # "more" / "better" explicitly near the quantity beats a stray "less" elsewhere
    if comp:
        sign = -1
    pole = None
    dims = [dim] if dim in _LOW_POLE else ([] if dim else ["valence", "arousal", "dominance"])
    for d in dims:
        lo = re.search(r"\b(?:" + _LOW_POLE[d] + r")\b", low)
        hi = re.search(r"\b(?:" + _HIGH_POLE[d] + r")\b", low)
        if lo and (not hi or lo.start() < hi.start()):
            pole = -1
            break
        if hi:
            pole = 1
            break
    if pole == -1:
        sign = -sign
    return sign


# ---------------------------------------------------------------------------------------
# Task classification
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Intent:
    """What a question asks, read from its text only -- the one typed intent of every question
    path (the ten benchmark tasks and the question kinds about a user's own recording,
    :mod:`harp_lib.tasks.recording`).

    ``task`` is a registered task name (or ``unsupported``); ``polarity`` +1 / -1 (the higher or
    the lower side); ``dimension`` valence / arousal / dominance; ``times`` the time phrases
    (normalised for :func:`harp_lib.core.timespan.localize`); ``ordinals`` the positions named (songs,
    1-based, -1 the last); ``speakers`` the speakers named by order of first appearance (1-based,
    -1 the last); ``keywords`` the words to find in the transcript; ``absence`` a yes/no question
    framed as absence ("was the visit free of coughing?"); ``reason`` why this task.
    """
    task: str
    polarity: int = 1
    dimension: Optional[str] = None
    times: tuple[str, ...] = ()
    reason: str = ""
    absence: bool = False
    ordinals: tuple[int, ...] = ()
    speakers: tuple[int, ...] = ()
    keywords: tuple[str, ...] = ()

    @property
    def supported(self) -> bool:
        return self.task != UNSUPPORTED

    @property
    def speaker(self) -> Optional[int]:
        """The first speaker named (None: none)."""
        return self.speakers[0] if self.speakers else None

    @property
    def time(self) -> Optional[str]:
        """The first time phrase (None: none)."""
        return self.times[0] if self.times else None


_CHANGE = (r"chang\w*|shift\w*|evolv\w*|develop\w*|trend\w*|progress\w*|vary|varied|fluctuat\w*|"
           r"go(?:es)?\s+(?:up|down)|went\s+(?:up|down)|rise|rising|rose|fall|falling|fell|drop\w*|"
           r"increas\w*|decreas\w*|grow\w*|grew|becom\w*|became|getting|got\s+(?:more|less)|over the course|"
           r"gets?\s+(?:more|less)|build\w* up|fad(?:e|es|ed|ing)|climb\w*|hold\w* steady|upward\w*|downward\w*|"
           r"shrink\w*|more and more|less and less|"
           r"over time|as (?:the|they|she|he) (?:went|talked|spoke)|from start to finish|move\w*|stay(?:ed)? the same|"
           r"steady|remain\w*")
_WHO = (r"which (?:of (?:the|these|those) (?:two|2) )?(?:speaker|person|one|voice|participant)|who\b|speaker a or (?:speaker )?b|\ba or b\b|"
        r"\bb or a\b|\b(?:speaker )?[ab]\b[^?]{0,60}\bthan (?:speaker )?[ab]\b|\bother way (?:round|around)\b|"
        r"\b[ab] (?:vs\.?|versus) [ab]\b")
_EMO_Q = (r"emotion\w*|feel\w*|felt|mood|sound(?:ed|s)?\s+(?:like|happy|sad|angry)|how did (?:they|she|he|the speaker) "
          r"sound|what (?:was|were) (?:their|his|her) (?:tone|state)|emotional state|affect|express\w*|tone")
_WHEN = (r"when\b|what time|at what point|which moment|what moment|where in|find the (?:moment|part|point|segment)|"
         r"point (?:me )?to|locate|timestamp|how far in|at which|\bwhere\b")
_SAME = r"same (?:emotion|feeling|mood)|(?:as|like) in the (?:clip|example|reference|sample)|" \
        r"like (?:the|my) (?:clip|example|reference|sample)|matches? the (?:clip|example|reference|sample)|" \
        r"as the (?:clip|example|reference|sample)|emotion (?:clip|example|sample)"
_SOMEONE = r"someone|anyone|anybody|somebody|any speaker|either speaker|any of the speakers|a speaker\b"
_RESP = (r"respirat\w*|cough\w*|breath\w*|wheez\w*|sneez\w*|throat|chest|phlegm|sputum|congest\w*|"
         r"short of breath|asthma|lung\w*|airway\w*|symptom\w*|fever\w*|cold\b|sniffl\w*|inhaler")
_HEARD = (r"exhibit\w*|audibl\w*|hear\w*|heard|listen\w*|sound\w*|actually|in the audio|on the recording|"
          r"can you tell from|noise|did (?:the patient|they|he|she|the child|the speaker) (?:cough|sneeze|clear)|"
          r"(?:cough|sneez|clear\w* (?:their|his|her) throat)\w* (?:during|in|on)|any (?:coughs?|coughing|sneez\w*)|"
          r"was there (?:any )?(?:coughing|a cough|sneezing)|was (?:any )?(?:coughing|sneezing)|displayed|show(?:ed|n)? any")
_SAID = (r"report\w*|mention\w*|complain\w*|describ\w*|said|say|says|tell|told|talk\w* about|bring up|brought up|"
         r"state[ds]?\b|claim\w*|admit\w*|disclos\w*|discuss\w*|speak\w* of|spoke of|note[ds]?\b|"
         r"suffer\w*|ha(?:ve|s|d) (?:any )?(?:respiratory|a cough|cough|breathing)|experienc\w*")
_AESTH = (r"aesthetic\w*|better|best|worse|worst|quality|prefer\w*|like\w*|enjoy\w*|nicer|good|great|"
          r"sound(?:s|ed)? (?:good|better|nicer|worse)|more pleasing|pleasing|appeal\w*|musical\w*|rated|"
          r"higher[- ]rated|rate|rating|score\w*|superior|inferior|stronger|weaker|impressive")


#: Yes/no questions that ask whether something was *absent* (the answer flips); negative
#: questions such as "didn't the patient cough?" are answered like positive ones, so not here.
_ABSENCE = (r"\bfree (?:of|from)\b|\babsence of\b|\b(?:was|were) there no\b|\bno (?:sign|trace|evidence) of\b|"
            r"\b(?:said|say|mentioned|reported) nothing\b|\bnothing (?:was )?(?:said|mentioned|reported) about\b|"
            r"\b(?:true|correct|right|confirm) that\b[^?]*\b(?:no|not|never|didn't|did not|wasn't|was not)\b|"
            r"\bentirely without\b|\bwithout (?:a single|any)\b|"
            r"\b(?:did|does|do|was|were)\s+(?:the patient|they|he|she|anyone|anybody|the child)\s+not\b|"
            r"\bcould no\b|\bnobody (?:cough|sneez)\w*|\bno one (?:cough|sneez)\w*")


def _has(pat: str, s: str) -> Optional[re.Match]:
    return re.search(r"(?:" + pat + r")", s)


def _question_text(text: str) -> str:
    """What the classifier reads: quotes removed (what someone said, not what is asked), numbers as
    digits, misspelt task words corrected (:mod:`.typos`), "better or worse" options cut to the first."""
    return _fold(normalize_numbers(re.sub(r"[\"“”][^\"“”]*[\"“”]", " ", text or "")))


class _Reading:
    """One question being read: the text the readers match (``s``), the reference roles, the time
    phrases and the dimension / direction named.  A reader may narrow ``s`` (the clinical reader
    cuts a "leaving aside ..." clause), and the later readers and the intent see the narrowed text."""

    def __init__(self, text: str, domain: Optional[str], roles: Sequence[str]):
        self.s = _question_text(text)           # quoted words are what someone said, not what is asked
        self.roles = tuple(roles or ())
        self.times = tuple(time_mentions(text or "", domain))
        self.dim = dimension(self.s)
        self.pol = polarity(self.s, self.dim)

    def sign(self, task: str) -> int:
        """The side asked for: songs better / worse (no emotion pole), a change its pole's direction,
        a comparison the higher / lower side; +1 for the rest."""
        if task in ("time", "position", "audio"):
            return polarity(self.s, "aesthetics")
        if task == "change":
            return pole(self.s, self.dim)
        return self.pol if task == "comparison" else 1

    def intent(self, task: str, why: str) -> Intent:
        return Intent(task, self.sign(task), self.dim, self.times, why,
                      absence=task in ("reported", "exhibited") and bool(re.search(_ABSENCE, self.s)))


#: "not counting / leaving aside what was said, ...": that clause names what is excluded
_EXCLUDED_CLAUSE = (r"\b(?:not counting|leaving aside|setting aside|ignoring|apart from|regardless of|other than|"
                    r"not what (?:was|is|they|he|she|the patient) (?:said|say|says|reported))"
                    r"\b[^,;:]*[,;:]")


def _read_clinical(r: _Reading) -> Optional[Intent]:
    """Respiratory symptoms heard (exhibited) or said (reported); a plain yes/no one is reported."""
    if not _has(_RESP, r.s):
        return None
    r.s = re.sub(_EXCLUDED_CLAUSE, " ", r.s)
    heard, said = _has(_HEARD, r.s), _has(_SAID, r.s)
    if heard and (not said or heard.start() < said.start() or re.search(r"\bactually\b|\baudibl", r.s)):
        return r.intent("exhibited", f"asks whether respiratory symptoms are heard ({heard.group(0)!r})")
    if said:
        return r.intent("reported", f"asks whether respiratory symptoms are reported ({said.group(0)!r})")
    if re.search(r"\b(?:did|does|do|was|were|is|are|has|have)\b", r.s):
        return r.intent("reported", "a yes/no question about respiratory symptoms (default: reported)")
    return None


def _read_song(r: _Reading) -> Optional[Intent]:
    """Which of two songs is better: named by position, by time, or by the reference clips."""
    if not (_has(_AESTH, r.s) or re.search(r"\bwhich\b.*\b(?:song|track|piece|tune|one)\b|\bcompar\w*|\bversus\b|\bvs\b",
                                          r.s)):
        return None
    if any(t.endswith(" song") for t in r.times):
        return r.intent("position", "compares songs named by position")
    if r.times:
        return r.intent("time", "compares the songs playing at given times")
    if "A" in r.roles or "B" in r.roles or re.search(r"\b(?:clip|snippet|example|excerpt)s?\b", r.s):
        return r.intent("audio", "compares the songs of the reference clips")
    return None


def _read_locate(r: _Reading) -> Optional[Intent]:
    """When this speaker (locate) or anyone (locate_hard) showed the reference clip's emotion."""
    when, same = _has(_WHEN, r.s), _has(_SAME, r.s)
    if not ((when or same) and ("E" in r.roles or same)):
        return None
    if "A" in r.roles or (re.search(r"\b(?:this|the|that) (?:speaker|person|voice)|\b(?:she|he)\b", r.s)
                          and not _has(_SOMEONE, r.s)):
        return r.intent("locate", "asks when this speaker showed the reference emotion")
    return r.intent("locate_hard", "asks when anyone showed the reference emotion")


def _read_comparison(r: _Reading) -> Optional[Intent]:
    """Which of two speakers is higher / lower on a named dimension."""
    s = r.s
    two = ("A" in r.roles and "B" in r.roles) or re.search(r"\bspeaker a\b.*\bspeaker b\b|\ba or b\b", s)
    comparative = re.search(r"\b(?:" + _LOWER + "|" + _HIGHER + r")\b|\w+er\b(?=.*\b(?:a or b|speaker|who|which)\b)"
                            r"|\b(?:who|which speaker)\b.*\w+er\b", s)
    if two and (_has(_WHO, s) or comparative) and r.dim:
        return r.intent("comparison", "asks which of two speakers is higher/lower on a dimension")
    return None


def _read_state_or_change(r: _Reading) -> Optional[Intent]:
    """Which emotion was shown (state), or how a dimension changed over a window (change)."""
    s = r.s
    strong_state = re.search(r"\b(?:which|what) (?:kind of )?emotions?\b|\bhow did (?:they|she|he|the speaker) feel\b", s)
    if strong_state and not re.search(r"\bchang\w*|\bshift\w*|\bevolv\w*", s):
        return r.intent("state", "asks which emotion was shown")
    if _has(_CHANGE, s) and (r.dim or _has(r"emotion\w*|mood|feel\w*|tone", s)):
        return r.intent("change", "asks how a dimension changed over a window")
    if _has(_EMO_Q, s) or re.search(r"\b(?:happy|sad|angry|neutral|disgust\w*|fear\w*|surpris\w*)\b.*\?", s):
        return r.intent("state", "asks which emotion was shown")
    if r.dim and re.search(r"\bhow\b", s):
        return r.intent("change" if r.times else "state", "asks about a dimension")
    return None


def _read_emotion(r: _Reading) -> Optional[Intent]:
    """The emotion tasks, most specific cue first: locate, comparison, then state or change."""
    return _read_locate(r) or _read_comparison(r) or _read_state_or_change(r)


#: The question readers of each domain, tried in this order when the domain is not given.
_READERS = {"emotion": _read_emotion, "clinical": _read_clinical, "song": _read_song}


def analyze(text: str, domain: Optional[str] = None, roles: Sequence[str] = ()) -> Intent:
    """Classify a question (text, the recording's domain, the query's reference roles): the
    reader of the domain (every domain's in turn when none is given) names the task.

    >>> analyze("Which song do you like less, the 2nd or the 5th?", "song").task
    'position'
    >>> analyze("Song A: [clip]. Song B: [clip]. Which one is worse?", "song", ("A", "B")).polarity
    -1
    """
    r = _Reading(text, domain, roles)
    for dom in ([domain] if domain else list(_READERS)):
        reader = _READERS.get(dom)
        found = reader(r) if reader else None
        if found is not None:
            return found
    return Intent(UNSUPPORTED, 1, r.dim, r.times,
                  f"no supported {domain or ''} question type fits: the rule agent answers which emotion / how a "
                  "dimension changed / which of two speakers / when an emotion occurred (emotion), whether "
                  "respiratory symptoms were reported or heard (clinical), and which of two songs is better (song)")


def classify(text: str, domain: Optional[str] = None, roles: Sequence[str] = ()) -> str:
    """The task name of a question (see :func:`analyze`), or ``'unsupported'``."""
    return analyze(text, domain, roles).task
