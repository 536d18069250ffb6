"""Typos in the words that name a task: "emotoin", "cuoghing", "respiratroy", "aesthetcs".

The rule classifier (:mod:`harp_lib.understand.intent`) matches word patterns; one typo in the word
that names the task made a question unsupported.  :func:`correct` replaces a word that is not
itself a task word by the task word it is closest to, by edit distance (optimal string alignment:
insert, delete, substitute, swap two neighbours), when the distance is at most
:data:`MAX_EDITS` for that word length, the first letter agrees, and the word is not a common
English word that happens to be that close ("motion", "letter", "chance", "tough").

>>> correct("whats the emotoin of the speakr at 1:31, any cuoghing or respiratroy symtoms?")
'whats the emotion of the speaker at 1:31, any coughing or respiratory symptoms?'
>>> correct("the motion of the letter was a tough chance")
'the motion of the letter was a tough chance'

Chat spellings of the question words ("wat", "ppl", "spkr") are a separate, fixed list
(:data:`SLANG`): they are too short for an edit distance, so :func:`expand_slang` swaps the whole
word, never inside quotes (a quoted word is what to look for in the transcript).

>>> expand_slang("wat is said around 2 seconds in, and how many ppl talk? not 'wat'")
"what is said around 2 seconds in, and how many people talk? not 'wat'"
"""
from __future__ import annotations

import re
from functools import lru_cache

__all__ = ["VOCAB", "MAX_EDITS", "SLANG", "edit_distance", "correct", "expand_slang"]

#: The words whose spelling decides a task (and the poles / comparatives read with it).
VOCAB: frozenset[str] = frozenset("""
emotion emotions emotional feeling feelings feel mood
respiratory symptom symptoms coughing cough coughs coughed sneezing sneeze breathing wheezing
patient consultation audible exhibited reported mentioned complained
aesthetics aesthetic quality better worse higher lower greater
change changes changed changing increase decrease rising falling
speaker speakers energy energetic positive negative dominant dominance arousal valence calmer
which moment example reference
""".split())

#: Real words within reach of a task word: never corrected.
_REAL = frozenset("""
motion motions letter letters bitter butter batter setter wetter fitter hotter
chance chances charge charges change range tough rough dough bough through though touch couch
mode more mold model feet fell fee fuel feed
patent patents potent latent patience aesthete
power tower mower lover lower lowers hither wider wiser greeter greater
lower higher speak speaks sneer sneak speeders speaker
moments worst recorded reporter repeated reputed charged dominate dominated dominates remotion causing laughing
""".split())

#: Most edits allowed for a word of this many letters (shorter words are never corrected).
MAX_EDITS: dict[int, int] = {5: 1, 6: 1, 7: 1, 8: 1}


def edit_distance(a: str, b: str) -> int:
    """Optimal string alignment distance (a swap of two neighbours counts one edit).

    >>> edit_distance("emotoin", "emotion"), edit_distance("caughing", "coughing"), edit_distance("beter", "better")
    (1, 1, 1)
    """
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        prev2, prev = prev, cur
    return prev[len(b)]


def _allowed(n: int) -> int:
    return 0 if n < 5 else MAX_EDITS.get(n, 2)


@lru_cache(maxsize=4096)
def _fix(word: str) -> str:
    if word in VOCAB or word in _REAL or _allowed(len(word)) == 0:
        return word
    best, best_d = word, 99
    for v in VOCAB:
        if v[0] != word[0] or abs(len(v) - len(word)) > 2:
            continue
        d = edit_distance(word, v)
        if d < best_d or (d == best_d and len(v) == len(word)):
            best, best_d = v, d
    return best if best_d <= min(_allowed(len(word)), _allowed(len(best))) else word


def correct(text: str) -> str:
    """``text`` (lower-case expected) with every misspelt task word replaced by the task word."""
    return re.sub(r"[a-z]+", lambda m: _fix(m.group(0)), text)


#: Chat spellings of question words -> the word (whole words only; none is an English word or a
#: time unit: "min", "sec", "s" stay as they are for the time parser).
SLANG: dict[str, str] = {
    "ppl": "people", "ppls": "people", "peeps": "people", "wat": "what", "wut": "what", "wht": "what",
    "whut": "what", "wats": "what's", "whats": "what's", "whos": "who's", "wen": "when", "whn": "when",
    "abt": "about", "bout": "about", "spkr": "speaker", "spkrs": "speakers", "u": "you", "ur": "your",
    "pls": "please", "plz": "please", "tho": "though", "thru": "through", "smth": "something",
    "sth": "something", "ne1": "anyone", "any1": "anyone", "some1": "someone",
    "sum1": "someone",
}
_SLANG_RE = re.compile(r"(?<![\w'])(" + "|".join(sorted(map(re.escape, SLANG), key=len, reverse=True)) + r")(?![\w'])",
                       re.I)
_QUOTED = re.compile(r"([\"“'‘][^\"”'’]{2,}[\"”'’])")


def expand_slang(text: str) -> str:
    """``text`` with each chat spelling of :data:`SLANG` (any case) replaced by its word, outside
    quotes."""
    parts = _QUOTED.split(text)
    return "".join(p if i % 2 else _SLANG_RE.sub(lambda m: SLANG[m.group(1).lower()], p) for i, p in enumerate(parts))
