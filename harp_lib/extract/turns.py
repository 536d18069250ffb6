"""Turn rules of HARP stage 1 (HARP_REFERENCE §2.1): chunk long turns, merge short ones.

A :class:`Turn` is a speaker (or song) span.  The pipeline first splits every turn longer
than ``max_sec`` into ``ceil(dur / max_sec)`` equal chunks that keep its speaker, then merges
turns shorter than ``min_sec`` as the paper does, repeating until nothing changes:

* a short turn is absorbed into the *previous* output turn (its end is extended over any gap,
  the previous speaker is kept);
* a short *first* turn is merged forward into the second (whose start moves earlier);
* turns still shorter than ``min_sec`` at the end are dropped.

>>> ts = [Turn(0.0, 0.4, "SPEAKER_00"), Turn(0.5, 3.0, "SPEAKER_01"), Turn(3.2, 3.6, "SPEAKER_00")]
>>> merge_short_turns(ts, 1.0)
[Turn(start=0.0, end=3.6, speaker='SPEAKER_01')]
>>> [(t.start, t.end) for t in chunk_turns([Turn(0.0, 50.0, "S")], 20.0)]
[(0.0, 16.667), (16.667, 33.333), (33.333, 50.0)]
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Sequence

from harp_lib.core.schema import round_time

__all__ = ["Turn", "chunk_turns", "merge_short_turns", "segment_turns", "relabel_by_first_appearance"]


@dataclass(frozen=True)
class Turn:
    """A speaker turn or song chunk: ``[start, end)`` seconds and a speaker/song tag."""
    start: float
    end: float
    speaker: str

    def __post_init__(self):
        object.__setattr__(self, "start", round_time(self.start))
        object.__setattr__(self, "end", round_time(self.end))
        if self.end < self.start:
            raise ValueError(f"turn ends ({self.end}) before it starts ({self.start})")

    @property
    def duration(self) -> float:
        return self.end - self.start

    def to_dict(self) -> dict:
        return {"start": self.start, "end": self.end, "speaker": self.speaker}


def chunk_turns(turns: Iterable[Turn], max_sec: float | None) -> list[Turn]:
    """Split every turn longer than ``max_sec`` into ``ceil(dur/max_sec)`` equal chunks.

    ``max_sec=None`` (or <= 0) leaves the turns as they are.

    >>> chunk_turns([Turn(0, 10, "A")], 15.0)
    [Turn(start=0.0, end=10.0, speaker='A')]
    """
    out: list[Turn] = []
    for t in turns:
        if not max_sec or max_sec <= 0 or t.duration <= max_sec + 1e-9:
            out.append(t)
            continue
        n = math.ceil(t.duration / max_sec - 1e-9)
        step = t.duration / n
        for i in range(n):
            s = t.start + i * step
            e = t.end if i == n - 1 else t.start + (i + 1) * step
            out.append(Turn(s, e, t.speaker))
    return out


def _merge_once(turns: Sequence[Turn], min_sec: float) -> list[Turn]:
    out: list[Turn] = []
    for t in turns:
        if t.duration < min_sec and out:
            prev = out[-1]
            out[-1] = Turn(prev.start, max(prev.end, t.end), prev.speaker)
        else:
            out.append(t)
    if len(out) >= 2 and out[0].duration < min_sec:
        first, second = out[0], out[1]
        out[:2] = [Turn(first.start, second.end, second.speaker)]
    return out


def merge_short_turns(turns: Iterable[Turn], min_sec: float = 1.0) -> list[Turn]:
    """Merge turns shorter than ``min_sec`` (paper rules, repeated until stable); drop leftovers.

    >>> merge_short_turns([Turn(0, 0.5, "A")], 1.0)
    []
    """
    cur = sorted(turns, key=lambda t: (t.start, t.end))
    while True:
        nxt = _merge_once(cur, min_sec)
        if nxt == cur:
            break
        cur = nxt
    return [t for t in cur if t.duration >= min_sec]


def segment_turns(turns: Iterable[Turn], max_sec: float | None, min_sec: float = 1.0) -> list[Turn]:
    """The paper's order: chunk to ``max_sec`` first, then merge turns under ``min_sec``.

    >>> [t.speaker for t in segment_turns([Turn(0, 30, "A"), Turn(30, 30.5, "B")], 20.0)]
    ['A', 'A']
    """
    return merge_short_turns(chunk_turns(turns, max_sec), min_sec)


def relabel_by_first_appearance(turns: Sequence[Turn], prefix: str = "SPEAKER_", start: int = 0,
                                width: int = 2) -> list[Turn]:
    """Rename cluster labels to ``SPEAKER_00, SPEAKER_01, ...`` in order of first appearance.

    >>> [t.speaker for t in relabel_by_first_appearance([Turn(0, 1, "7"), Turn(1, 2, "3"), Turn(2, 3, "7")])]
    ['SPEAKER_00', 'SPEAKER_01', 'SPEAKER_00']
    """
    names: dict[str, str] = {}
    out = []
    for t in sorted(turns, key=lambda t: (t.start, t.end)):
        if t.speaker not in names:
            names[t.speaker] = f"{prefix}{len(names) + start:0{width}d}"
        out.append(Turn(t.start, t.end, names[t.speaker]))
    return out
