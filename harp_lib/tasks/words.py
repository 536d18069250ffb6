"""Recognised words of a user's recording with their times and speakers, and phrase look-up: shared
by the question kinds of :mod:`harp_lib.tasks.recording` and :mod:`harp_lib.tasks.speech_kinds`
(its own module so that neither imports the other)."""
from __future__ import annotations

import re
from typing import NamedTuple, Optional, Sequence

__all__ = ["Word", "words_of"]


class Word(NamedTuple):
    """One recognised word: lower-case token, ``[start, end)`` s, the speaker of the diarizer turn
    it falls in (else its segment's), and its segment."""
    tok: str
    start: float
    end: float
    speaker: Optional[str]
    seg: object


def _norm(w: str) -> str:
    return re.sub(r"[^a-z0-9']", "", w.lower()).strip("'")


def words_of(facts) -> list[Word]:
    """Every recognised word of ``facts`` (a :class:`~harp_lib.tasks.recording.Facts`) in time order (a segment without word times gives its text's words at
    its start)."""
    turns = sorted(facts.turns, key=lambda t: t.start)
    out = []
    for s in sorted(facts.segments, key=lambda s: s.start):
        ws = (s.custom or {}).get("words") or [(w, s.start, s.start) for w in (s.text or "").split()]
        for w, a, b in ((str(x[0]), float(x[1]), float(x[2])) for x in ws):
            mid = (a + b) / 2
            t = next((t for t in turns if t.start <= mid <= t.end and t.speaker), None)
            tok = _norm(w)
            if tok:
                out.append(Word(tok, a, b, t.speaker if t else s.speaker, s))
    return out


def _same(tok: str, w: str) -> bool:
    """``tok`` is the word ``w``, its plural or possessive ("hello", "hellos", "chicago's")."""
    return tok == w or tok in (w + "s", w + "es", w + "'s")


def _phrase_hits(words: Sequence[Word], phrase: Sequence[str]) -> list[int]:
    """Indices in ``words`` where ``phrase`` starts (consecutive tokens)."""
    n = len(phrase)
    return [i for i in range(len(words) - n + 1) if all(_same(words[i + j].tok, phrase[j]) for j in range(n))]
