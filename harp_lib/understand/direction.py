"""The direction a question asks for and the emotion dimension it names.

* :func:`dimension` -- the emotion dimension named (valence / arousal / dominance);
* :func:`polarity` -- ``+1`` when the question asks for the higher / better / more side,
  ``-1`` for the lower / worse / less / quieter / sadder / calmer / more negative side;
* :func:`pole` -- whether the quantity named is a dimension's low pole (a change question's direction).

>>> polarity("Between 1:30 and 3:00, who sounded sadder, speaker A or speaker B?"), dimension("who sounded sadder")
(-1, 'valence')
"""
from __future__ import annotations

import re
from typing import Optional

from harp_lib.understand.typos import correct

__all__ = ["polarity", "pole", "dimension", "fold", "LOWER", "HIGHER"]


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
LOWER = (r"lower|less|least|fewer|smaller|weaker|worse|worst|poorer|poorest|inferior|lesser|not as|"
         r"isn't as|wasn't as|aren't as|weren't as|lacks?|lacking|dislike\w*|like\w* less|prefer\w* less|"
         r"least|bottom|losing|loses|lost")
HIGHER = r"higher|more|most|greater|stronger|better|best|superior|top|winning|wins|prefer\w*"


def fold(text: str) -> str:
    """Lower case, misspelt task words corrected, "better or worse" options cut to the first: what
    the direction words are read from (the answerers call :func:`polarity` on the raw text)."""
    s = correct(text.lower())
    return re.sub(r"\b(better|higher|more|greater)\s+or\s+(?:worse|lower|less|smaller)\b", r"\1", s)


def dimension(text: str, default: Optional[str] = None) -> Optional[str]:
    """The emotion dimension a question names (first mention wins), else ``default``.

    >>> dimension("Who sounded more energetic?"), dimension("who was calmer"), dimension("how confident")
    ('arousal', 'arousal', 'dominance')
    """
    low = fold(text)
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
    low = fold(text)
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
    low = fold(text)
    dim = dim or dimension(low)
    sign = 1
    comp = re.search(r"\b(?:" + LOWER + r")\b", low)
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
