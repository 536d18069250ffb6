"""One label vocabulary shared by the benchmark, the labelers, the planner, the tools and the judges.

The reference code's prompts offered "Medium" while its labeler wrote "Mid", so a label search
never matched; here every producer and consumer goes through :func:`normalize_label`.

Label dicts stored in :class:`~harp_lib.core.schema.Segment.labels` use these keys:

* emotion: ``primary`` (an :data:`EMOTIONS` name), ``scores`` ({name: prob}), ``arousal``,
  ``valence``, ``dominance`` (floats in [0, 1])
* clinical: ``primary`` (``"no cough"`` / ``"{n} cough"``), ``cough_count`` (int), optional
  ``events`` (e.g. ``["cough", "sneeze", "throat_clear", "hoarse"]``) and ``symptoms``
  (reported symptom words)
* song: ``primary`` (a :data:`TIERS` name), ``scores`` ({dimension: 1-5}), ``overall`` (mean)

>>> normalize_label("song", "medium")
'Mid'
>>> normalize_label("emotion", "happiness")
'Happy'
>>> normalize_label("clinical", "2 coughs")
'2 cough'
"""
from __future__ import annotations

import re
from typing import Optional
from harp_lib.core.errors import HarpError

__all__ = ["EMOTIONS", "EMOTION_CODES", "CODE_TO_EMOTION", "EMOTION_SYNONYMS", "AVD_DIMENSIONS",
           "AESTHETIC_DIMENSIONS", "TIERS", "TIER_THRESHOLDS", "tier_of", "cough_label",
           "cough_count", "normalize_label", "LabelError", "DIRECTIONS", "normalize_direction",
           "RESPIRATORY_TERMS"]

#: Emotion classes (MSP-Podcast primary classes); the benchmark uses the first five.
EMOTIONS: tuple[str, ...] = ("Neutral", "Happy", "Sad", "Angry", "Surprise", "Fear", "Disgust", "Contempt")
EMOTION_CODES: dict[str, str] = {"Neutral": "N", "Happy": "H", "Sad": "S", "Angry": "A",
                                 "Surprise": "U", "Fear": "F", "Disgust": "D", "Contempt": "C"}
CODE_TO_EMOTION: dict[str, str] = {v: k for k, v in EMOTION_CODES.items()}
EMOTION_SYNONYMS: dict[str, tuple[str, ...]] = {
    "Neutral": ("neutral", "calm", "flat", "matter-of-fact", "no emotion", "unemotional", "composed"),
    "Happy": ("happy", "happiness", "joy", "joyful", "cheerful", "excited", "delighted", "glad",
              "pleased", "upbeat", "enthusiastic", "elated", "amused", "content"),
    "Sad": ("sad", "sadness", "unhappy", "sorrow", "sorrowful", "down", "depressed", "melancholy",
            "gloomy", "upset", "disappointed", "grief", "downcast"),
    "Angry": ("angry", "anger", "mad", "furious", "annoyed", "irritated", "frustrated", "rage",
              "hostile", "outraged", "irate"),
    "Surprise": ("surprise", "surprised", "astonished", "amazed", "shocked", "startled", "astonishment"),
    "Fear": ("fear", "afraid", "scared", "fearful", "anxious", "nervous", "worried", "frightened"),
    "Disgust": ("disgust", "disgusted", "revolted", "repulsed", "grossed out"),
    "Contempt": ("contempt", "contemptuous", "scornful", "disdain", "disdainful", "sneering"),
}
AVD_DIMENSIONS: tuple[str, ...] = ("arousal", "valence", "dominance")

#: Change directions (the reference data used rising/falling/none, its judge up/down/none).
#: Word stems of respiratory symptoms in clinical consultations (the rule planner searches for
#: them; the rule answerer reads them in retrieved turns).
RESPIRATORY_TERMS: tuple[str, ...] = ("cough", "breath", "wheez", "chest", "phlegm", "sputum",
                                      "throat", "congest", "sneez", "fever", "cold")

DIRECTIONS: tuple[str, ...] = ("rising", "falling", "none")
_DIRECTION_SYNONYMS = {
    "rising": ("rising", "rise", "rose", "up", "increase", "increased", "increasing", "higher", "goes up",
               "went up", "grew", "growing", "climbed", "raised"),
    "falling": ("falling", "fall", "fell", "down", "decrease", "decreased", "decreasing", "lower",
                "goes down", "went down", "dropped", "drop", "declined", "declining", "sank"),
    "none": ("none", "stable", "steady", "flat", "unchanged", "no change", "stayed the same",
             "stays the same", "constant", "did not change", "didn't change", "remained"),
}

#: SongEval's five aesthetic dimensions (1-5 scale).
AESTHETIC_DIMENSIONS: tuple[str, ...] = ("Coherence", "Musicality", "Memorability", "Clarity", "Naturalness")
#: Quality tiers of the music-aesthetics labeler and their lower bounds on the overall score.
TIERS: tuple[str, ...] = ("High", "Mid", "Low")
TIER_THRESHOLDS: dict[str, float] = {"High": 3.5, "Mid": 2.5, "Low": float("-inf")}
_TIER_SYNONYMS = {"High": ("high", "good", "excellent", "top"),
                  "Mid": ("mid", "medium", "middle", "moderate", "average", "med"),
                  "Low": ("low", "poor", "bad", "weak")}


class LabelError(HarpError, ValueError):
    """A label string is not in the shared vocabulary."""


def tier_of(overall: float) -> str:
    """Quality tier of an overall aesthetic score (High >= 3.5 > Mid >= 2.5 > Low).

    >>> tier_of(3.5), tier_of(3.49), tier_of(1.0)
    ('High', 'Mid', 'Low')
    """
    for t in TIERS:
        if overall >= TIER_THRESHOLDS[t]:
            return t
    return "Low"


def cough_label(n: int) -> str:
    """The clinical label for ``n`` coughs.

    >>> cough_label(0), cough_label(3)
    ('no cough', '3 cough')
    """
    return "no cough" if n <= 0 else f"{int(n)} cough"


def cough_count(label: str) -> int:
    """Inverse of :func:`cough_label` (accepts "2 coughs", "no coughs", "one cough")."""
    s = label.strip().lower()
    if re.fullmatch(r"(no|zero|0)\s+coughs?|none|no coughing", s):
        return 0
    m = re.fullmatch(r"(\d+|one|two|three|four|five|six|seven|eight|nine|ten)\s+coughs?", s)
    if not m:
        raise LabelError(f"not a cough label: {label!r} (expected 'no cough' or '<n> cough')")
    words = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"]
    v = m.group(1)
    return int(v) if v.isdigit() else words.index(v)


def emotion_of(text: str) -> Optional[str]:
    """The emotion class named in ``text`` (name, code or synonym), or None."""
    s = text.strip()
    if s.upper() in CODE_TO_EMOTION and len(s) == 1:
        return CODE_TO_EMOTION[s.upper()]
    low = s.lower()
    for name, syns in EMOTION_SYNONYMS.items():
        if low == name.lower() or low in syns:
            return name
    return None


def normalize_direction(text: str) -> Optional[str]:
    """Map a direction phrase to rising / falling / none (None when not recognised).

    >>> normalize_direction("went up"), normalize_direction("stable")
    ('rising', 'none')
    """
    low = text.strip().lower()
    for d, syns in _DIRECTION_SYNONYMS.items():
        if low in syns:
            return d
    return None


def normalize_label(domain: str, text: str, *, strict: bool = True) -> Optional[str]:
    """Map a label as a planner, labeler or person might write it to the shared vocabulary.

    Raises :class:`LabelError` for an unknown label unless ``strict=False`` (then None).
    """
    if not isinstance(text, str) or not text.strip():
        if strict:
            raise LabelError(f"empty {domain} label")
        return None
    s = text.strip()
    out: Optional[str] = None
    if domain == "emotion":
        out = emotion_of(s)
    elif domain == "clinical":
        try:
            out = cough_label(cough_count(s))
        except LabelError:
            out = None
    elif domain == "song":
        low = s.lower()
        for t, syns in _TIER_SYNONYMS.items():
            if low in syns or low.replace(" quality", "").replace(" tier", "") in syns:
                out = t
                break
    else:
        raise LabelError(f"unknown domain {domain!r}")
    if out is None and strict:
        vocab = {"emotion": ", ".join(EMOTIONS), "clinical": "'no cough', '<n> cough'",
                 "song": ", ".join(TIERS)}[domain]
        raise LabelError(f"unknown {domain} label {text!r}; expected one of: {vocab}")
    return out
