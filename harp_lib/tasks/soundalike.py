"""Sound-alike matches of a word the transcript lacks: offline ASR sometimes splits a word it
mishears into letters and fragments ("the order" -> "E .R .D. or").  A question kind that finds no
exact mention may look for such a run of recognised words, and must say that it did (the
matched words are shown, never hidden behind the asked word).

A run of 2-4 consecutive recognised words *sounds like* ``word`` when, with the non-letters
dropped and the run joined ("erdor"):

* the joined letters are ``word`` itself (a compound split: "pass word"), or
* it is made of fragments of at most 3 letters (the mark of a word split into letters and
  pieces), has the same consonant skeleton as ``word`` (vowels dropped, doubled letters folded:
  "order" and "erdor" are r-d-r) of at least :data:`MIN_CONSONANTS` consonants, as many vowels,
  the same first letter (or both a vowel), and lies within :data:`MAX_EDITS` letter edits and one
  letter of length of it.

Single words are never matched this way: "older" is one edit from "order" and a different word.

>>> [(i, j) for i, j in sound_alike(["calling", "about", "E", ".R", ".D.", "or", "you"], "order")]
[(2, 6)]
>>> sound_alike(["the", "older", "one"], "order"), sound_alike(["a", "pass", "word"], "password")
([], [(1, 3)])
"""
from __future__ import annotations

import re
from typing import Optional, Sequence

from harp_lib.understand.typos import edit_distance
from harp_lib.core.timespan import format_time
from harp_lib.tasks.facts import Facts, Reply


__all__ = ["MIN_CONSONANTS", "MAX_EDITS", "skeleton", "sound_alike", "first_heard", "heard_note", "heard_as"]

#: fewest consonants of a word matched by skeleton (shorter skeletons match too many runs)
MIN_CONSONANTS = 3
#: most letter edits between the joined run and the word
MAX_EDITS = 2
_MAX_RUN = 4
_V = "aeiou"


def _letters(w: str) -> str:
    return re.sub(r"[^a-z]", "", w.lower())


def skeleton(w: str) -> str:
    """Consonants of ``w`` in order, doubled letters folded ("order" -> "rdr", "letter" -> "ltr").

    >>> skeleton("order"), skeleton("E .R .D. or"), skeleton("Yankee")
    ('rdr', 'rdr', 'ynk')
    """
    s = re.sub(r"(.)\1+", r"\1", _letters(w))
    return re.sub(r"[aeiou]", "", s)


def _alike(parts: Sequence[str], word: str, exact: bool) -> bool:
    joined = "".join(parts)
    if exact:
        return joined == word
    sk = skeleton(word)
    return (all(len(p) <= 3 for p in parts) and len(sk) >= MIN_CONSONANTS and skeleton(joined) == sk
            and _vowels(joined) == _vowels(word) and (joined[0] == word[0] or {joined[0], word[0]} <= set(_V))
            and abs(len(joined) - len(word)) <= 1 and edit_distance(joined, word) <= MAX_EDITS)


def _vowels(w: str) -> int:
    return sum(c in _V for c in w)


def _runs(parts: Sequence[str], word: str, exact: bool) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    i = 0
    while i < len(parts):
        hit = next((j for j in range(i + 2, min(len(parts), i + _MAX_RUN) + 1)
                    if parts[i] and parts[j - 1] and _alike(parts[i:j], word, exact)), None)
        if hit is None:
            i += 1
            continue
        out.append((i, hit))
        i = hit
    return out


def sound_alike(tokens: Sequence[str], word: str) -> list[tuple[int, int]]:
    """``[(i, j), ...]``: the runs ``tokens[i:j]`` (2-4 recognised words) that sound like ``word``
    (see the module doc), left to right, not overlapping; the exact joins when there are any."""
    word = _letters(word)
    parts = [_letters(t) for t in tokens]
    return _runs(parts, word, True) or _runs(parts, word, False)


def first_heard(words: Sequence[str], segments) -> Optional[tuple]:
    """``(segment, heard words, time, word)`` of the first run of recognised words (in time order of
    ``segments``) that sounds like one of ``words`` (:func:`sound_alike`), else None."""
    for s in sorted(segments, key=lambda s: s.start):
        ws = [(str(w[0]), float(w[1])) for w in (s.custom or {}).get("words", [])]
        for kw in words:
            runs = sound_alike([w for w, _ in ws], kw)
            if runs:
                i, j = runs[0]
                return s, " ".join(w for w, _ in ws[i:j]), ws[i][1], kw
    return None


def heard_note(words: Sequence[str], hit: tuple) -> str:
    """The rationale's sentence for a sound-alike ``hit`` of :func:`first_heard`: what was heard, where."""
    s, heard, t, kw = hit
    return (f'No recognised word is {", ".join(words)}; the nearest sound-alike is "{heard}" at '
            f"{format_time(t)} ({t:.1f} s) in {s.speaker}'s \"{s.text}\" ({format_time(s.start)}–"
            f"{format_time(s.end)}): offline ASR can split a word it mishears into letters and pieces "
            f"(same consonants {'-'.join(skeleton(kw))} as {kw!r}). Listen to check.")


def heard_as(plan: tuple, words: Sequence[str], facts: Facts) -> Reply:
    """No recognised word is one of ``words``: the first run of recognised words that sounds like one
    (:func:`sound_alike`: "E .R .D. or" for "order"), said as such, else "not found" (the
    ``when_said`` kind's reply)."""
    hit = first_heard(words, facts.segments)
    if hit is not None:
        s, heard, t, kw = hit
        return Reply(plan + (f"sound-alike: {kw!r} heard as {heard!r}",), (s,),
                     f'{format_time(t)} ({t:.1f} s), heard as "{heard}"', heard_note(words, hit), round(t, 2))
    return Reply(plan, (), "not found", f"No transcribed turn contains {', '.join(words)}, nor a run of words that "
                                        f"sounds like it (offline ASR can miss words).", None)
