"""What a question asks, read from its text: the task, the direction asked for, the time phrases.

The rule planner and the rule answerer never read ``Query.query_type`` or ground truth (a user
supplies neither).  They read the question text, the recording's domain and the query's
reference roles, and this module turns those into an :class:`~harp_lib.understand.intent.Intent`:

* :func:`classify` — one of the ten task names (``state``, ``change``, ``comparison``,
  ``locate``, ``locate_hard``, ``reported``, ``exhibited``, ``time``, ``position``, ``audio``)
  or :data:`~harp_lib.understand.intent.UNSUPPORTED` when no task fits (the answerer then says
  so instead of guessing);
* the direction and dimension asked for (:func:`harp_lib.understand.direction.polarity`,
  :func:`~harp_lib.understand.direction.dimension`);
* every time phrase (:func:`harp_lib.understand.time_words.time_mentions`), read by the per-domain
  readers from the cue tables of :mod:`harp_lib.understand.cues`.

>>> classify("Between 1:30 and 3:00, who sounded sadder, speaker A or speaker B?", "emotion", ("A", "B"))
'comparison'
>>> classify("Can you actually hear the patient coughing?", "clinical")
'exhibited'
>>> analyze("Was the consultation free of any audible coughing?", "clinical").absence
True
>>> classify("What is the capital of France?", "emotion")
'unsupported'
"""
from __future__ import annotations

import re
from typing import Optional, Sequence

from harp_lib.understand.cues import (ABSENCE, AESTH, CHANGE, EMO_Q, EXCLUDED_CLAUSE, HEARD, RESP, SAID, SAME, SOMEONE,
                                      WHEN, WHO)
from harp_lib.understand.direction import HIGHER, LOWER, dimension, fold, polarity, pole
from harp_lib.understand.intent import UNSUPPORTED, Intent
from harp_lib.understand.time_words import normalize_numbers, time_mentions

__all__ = ["analyze", "classify"]


def _has(pat: str, s: str) -> Optional[re.Match]:
    return re.search(r"(?:" + pat + r")", s)


def _question_text(text: str) -> str:
    """What the classifier reads: quotes removed (what someone said, not what is asked), numbers as
    digits, misspelt task words corrected (:mod:`.typos`), "better or worse" options cut to the first."""
    return fold(normalize_numbers(re.sub(r"[\"“”][^\"“”]*[\"“”]", " ", text or "")))


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
                      absence=task in ("reported", "exhibited") and bool(re.search(ABSENCE, self.s)))



def _read_clinical(r: _Reading) -> Optional[Intent]:
    """Respiratory symptoms heard (exhibited) or said (reported); a plain yes/no one is reported."""
    if not _has(RESP, r.s):
        return None
    r.s = re.sub(EXCLUDED_CLAUSE, " ", r.s)
    heard, said = _has(HEARD, r.s), _has(SAID, r.s)
    if heard and (not said or heard.start() < said.start() or re.search(r"\bactually\b|\baudibl", r.s)):
        return r.intent("exhibited", f"asks whether respiratory symptoms are heard ({heard.group(0)!r})")
    if said:
        return r.intent("reported", f"asks whether respiratory symptoms are reported ({said.group(0)!r})")
    if re.search(r"\b(?:did|does|do|was|were|is|are|has|have)\b", r.s):
        return r.intent("reported", "a yes/no question about respiratory symptoms (default: reported)")
    return None


def _read_song(r: _Reading) -> Optional[Intent]:
    """Which of two songs is better: named by position, by time, or by the reference clips."""
    if not (_has(AESTH, r.s) or re.search(r"\bwhich\b.*\b(?:song|track|piece|tune|one)\b|\bcompar\w*|\bversus\b|\bvs\b",
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
    when, same = _has(WHEN, r.s), _has(SAME, r.s)
    if not ((when or same) and ("E" in r.roles or same)):
        return None
    if "A" in r.roles or (re.search(r"\b(?:this|the|that) (?:speaker|person|voice)|\b(?:she|he)\b", r.s)
                          and not _has(SOMEONE, r.s)):
        return r.intent("locate", "asks when this speaker showed the reference emotion")
    return r.intent("locate_hard", "asks when anyone showed the reference emotion")


def _read_comparison(r: _Reading) -> Optional[Intent]:
    """Which of two speakers is higher / lower on a named dimension."""
    s = r.s
    two = ("A" in r.roles and "B" in r.roles) or re.search(r"\bspeaker a\b.*\bspeaker b\b|\ba or b\b", s)
    comparative = re.search(r"\b(?:" + LOWER + "|" + HIGHER + r")\b|\w+er\b(?=.*\b(?:a or b|speaker|who|which)\b)"
                            r"|\b(?:who|which speaker)\b.*\w+er\b", s)
    if two and (_has(WHO, s) or comparative) and r.dim:
        return r.intent("comparison", "asks which of two speakers is higher/lower on a dimension")
    return None


def _read_state_or_change(r: _Reading) -> Optional[Intent]:
    """Which emotion was shown (state), or how a dimension changed over a window (change)."""
    s = r.s
    strong_state = re.search(r"\b(?:which|what) (?:kind of )?emotions?\b|\bhow did (?:they|she|he|the speaker) feel\b", s)
    if strong_state and not re.search(r"\bchang\w*|\bshift\w*|\bevolv\w*", s):
        return r.intent("state", "asks which emotion was shown")
    if _has(CHANGE, s) and (r.dim or _has(r"emotion\w*|mood|feel\w*|tone", s)):
        return r.intent("change", "asks how a dimension changed over a window")
    if _has(EMO_Q, s) or re.search(r"\b(?:happy|sad|angry|neutral|disgust\w*|fear\w*|surpris\w*)\b.*\?", s):
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
