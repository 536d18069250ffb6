"""The one segment collection: segments in file order, looked up by id, grouped by recording.

Before it, five modules grouped ground-truth or extracted segments by recording with their own
``setdefault`` loop and three built their own id lookup.  :class:`SegmentSet` is that code once;
the order of everything it returns is the order of the input (the JSONL file), so a caller that
switches to it writes the same bytes.

>>> from harp_lib.core.schema import Segment
>>> ss = SegmentSet([Segment("b_0002", "b", 5, 9), Segment("a_0001", "a", 0, 4), Segment("b_0001", "b", 1, 3)])
>>> len(ss), ss["a_0001"].end, ss.get("nope") is None
(3, 4.0, True)
>>> [s.id for s in ss.of("b")]
['b_0002', 'b_0001']
>>> {r: [s.id for s in segs] for r, segs in ss.by_recording(ordered=True).items()}
{'b': ['b_0001', 'b_0002'], 'a': ['a_0001']}
"""
from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import Iterable, Iterator, Optional

from harp_lib.core.jsonl import read_jsonl
from harp_lib.core.schema import Segment

__all__ = ["SegmentSet"]


class SegmentSet:
    """Segments in input order with ``set[id]`` / ``set.get(id)``, ``of(recording)`` and
    ``by_recording()``.  An id given twice resolves to its last segment (as a dict built from the
    file would); the grouping keeps both."""

    def __init__(self, segments: Iterable[Segment] = ()):
        self._items: tuple[Segment, ...] = tuple(segments)

    @classmethod
    def read(cls, path: Path | str, *, missing_ok: bool = False) -> "SegmentSet":
        """The segments of a ``segments.jsonl`` (typed, checked by :func:`read_jsonl`); an empty set
        for a missing file when ``missing_ok``."""
        path = Path(path)
        if missing_ok and not path.exists():
            return cls()
        return cls(read_jsonl(path, Segment))

    def __iter__(self) -> Iterator[Segment]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    @cached_property
    def _by_id(self) -> dict[str, Segment]:
        return {s.id: s for s in self._items}

    def __getitem__(self, segment_id: str) -> Segment:
        return self._by_id[segment_id]

    def __contains__(self, segment_id: object) -> bool:
        return segment_id in self._by_id

    def get(self, segment_id: str, default: Optional[Segment] = None) -> Optional[Segment]:
        return self._by_id.get(segment_id, default)

    def by_id(self) -> dict[str, Segment]:
        """``{id: segment}`` (a new dict: the caller may change it)."""
        return dict(self._by_id)

    def by_recording(self, *, ordered: bool = False) -> dict[str, list[Segment]]:
        """``{recording_id: [segment, ...]}``, recordings in first-seen order; each list in input
        order, or by ``(start, end, id)`` when ``ordered``."""
        out: dict[str, list[Segment]] = {}
        for s in self._items:
            out.setdefault(s.recording_id, []).append(s)
        if ordered:
            for v in out.values():
                v.sort(key=lambda s: (s.start, s.end, s.id))
        return out

    def of(self, recording_id: str) -> list[Segment]:
        """The segments of one recording, in input order."""
        return [s for s in self._items if s.recording_id == recording_id]
