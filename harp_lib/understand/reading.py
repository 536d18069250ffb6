"""One question being read: the folded text, the reference roles, the time phrases, the dimension
and direction named -- what each task's ``read`` decides on.

The rule planner and the rule answerer never read ``Query.query_type`` or ground truth (a user
supplies neither).  They read the question text, the recording's domain and the query's
reference roles; :func:`harp_lib.tasks.read_question` builds a :class:`Reading` of them and asks the
registered tasks (:meth:`harp_lib.tasks.base.Task.read`) which one it is, giving an
:class:`~harp_lib.understand.intent.Intent`:

* the task -- one of the registered task names (``state``, ``change``, ``comparison``,
  ``locate``, ``locate_hard``, ``reported``, ``exhibited``, ``time``, ``position``, ``audio``)
  or :data:`~harp_lib.understand.intent.UNSUPPORTED` when no task fits (the answerer then says
  so instead of guessing);
* the direction and dimension asked for (:func:`harp_lib.understand.direction.polarity`,
  :func:`~harp_lib.understand.direction.dimension`);
* every time phrase (:func:`harp_lib.understand.time_words.time_mentions`).

The tasks match the cue tables of :mod:`harp_lib.understand.cues` on :attr:`Reading.s`; which
task a question asks is theirs to say, and :meth:`Reading.intent` fills in the side asked for by
the task's name.

>>> r = Reading('Between 1:30 and 3:00, who said "I am fine" in a sadder voice?', "emotion", ("A", "B"))
>>> r.s, r.times, r.dim, r.pol
('between 1:30 and 3:00, who said   in a sadder voice?', ('from 90 to 180 seconds',), 'valence', -1)
>>> r.intent("comparison", "asks which of two speakers").polarity
-1
"""
from __future__ import annotations

import re
from typing import Optional, Sequence

from harp_lib.understand.cues import ABSENCE
from harp_lib.understand.direction import dimension, fold, polarity, pole
from harp_lib.understand.intent import Intent
from harp_lib.understand.time_words import normalize_numbers, time_mentions

__all__ = ["Reading", "has"]


def has(pat: str, s: str) -> Optional[re.Match]:
    """The first match of the alternation ``pat`` in ``s`` (None: none)."""
    return re.search(r"(?:" + pat + r")", s)


def _question_text(text: str) -> str:
    """What the classifier reads: quotes removed (what someone said, not what is asked), numbers as
    digits, misspelt task words corrected (:mod:`.typos`), "better or worse" options cut to the first."""
    return fold(normalize_numbers(re.sub(r"[\"“”][^\"“”]*[\"“”]", " ", text or "")))


class Reading:
    """One question being read: the text the readers match (``s``), the reference roles, the time
    phrases and the dimension / direction named.  A reader may narrow ``s`` (the clinical readers
    cut a "leaving aside ..." clause), and the later readers and the intent see the narrowed text."""

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
