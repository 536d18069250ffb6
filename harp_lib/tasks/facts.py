"""The records a question kind works on and answers with: :class:`Facts` (what extraction found in
one recording) and :class:`Reply`.  Their own module, below :mod:`harp_lib.tasks.recording` and the
kind modules that import it, so a helper module (:mod:`~harp_lib.tasks.soundalike`) can build a
Reply without importing the kinds."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

__all__ = ["Facts", "Reply"]


@dataclass(frozen=True)
class Facts:
    """What extraction found in one recording: ``segments`` (what is said; in the song pipeline
    the <= 15 s chunks of the songs, tagged ``SONG_NN``: :func:`harp_lib.tasks.song_kinds.songs_of`
    joins them into songs), the diarizer's ``turns`` (who speaks when), ``duration`` (s), ``domain``
    and the recording's ``audio`` file (None: not at hand; a kind that measures the audio, such as
    the songs' tempo, then says it cannot)."""
    segments: tuple
    turns: tuple
    duration: float
    domain: str
    audio: Optional[str] = None


@dataclass(frozen=True)
class Reply:
    """An answer from the extracted facts: plan lines, evidence segments, answer, rationale, value
    (machine-readable: seconds for times, a count, a speaker label)."""
    plan: tuple[str, ...]
    rows: tuple
    answer: str
    rationale: str
    value: Any = None
