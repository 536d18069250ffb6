"""The time, keyword, label and sound-event tools of :class:`~harp_lib.retrieval.index.SegmentIndex`.

Keyword scoring: a phrase and a segment's text are lower-cased into word tokens (``_tokens``);
the phrase matches verbatim at a word start (score 1.0) or by the fraction of its content words
(``_STOP`` words aside) the text holds.  :class:`SearchTools` is a mixin of ``SegmentIndex``: it
reads the row columns :meth:`SegmentIndex._set_rows` sets and the index's row lookups
(``_rows_in``, ``_ids_of``, ``segments``).
"""
from __future__ import annotations

import re
from typing import Mapping

import numpy as np

from harp_lib.core.timespan import Span

__all__ = ["SearchTools"]

#: Keyword haystacks kept per index before the cache is cleared (bounded memory).
_HAY_CACHE_ROWS = 200_000
_WORD = re.compile(r"[a-z0-9']+")
_STOP = frozenset("a an the and or of to in on at for is was were be been it this that with as by "
                  "from about i you he she we they my your our their me him her them do did".split())


def _tokens(text: str) -> list[str]:
    return _WORD.findall(text.lower())


class SearchTools:
    """``search_time``, ``search_keyword``, ``search_label`` and ``search_sound`` (paper §3.4):
    ``(segment_id, score)`` hits of one recording and window."""

    def search_time(self, recording_id: str, window: Span) -> list[tuple[str, float]]:
        """Every segment overlapping the window, scored by overlap / window length (paper §3.4)."""
        wl = window.duration if np.isfinite(window.end) else None
        rows = self._rows_in(recording_id, window).tolist()
        ws, we = window.start, window.end
        out = []
        for r, ss, se in zip(rows, self._starts[rows].tolist(), self._ends[rows].tolist()):
            if wl:   # Span.overlap, inlined (times are already millisecond-rounded)
                ov = round(max(0.0, min(se, we) - max(ss, ws)), 3) + 0.0
                out.append((-round(ov / wl, 3), ss, r))
            else:
                out.append((-1.0, ss, r))
        ids = self._ids_of(recording_id)
        out.sort(key=lambda x: (x[0], x[1], ids[x[2]]))                       # ties: time, then id
        return [(ids[r], -neg + 0.0) for neg, _, r in out]

    def search_keyword(self, recording_id: str, window: Span, phrase: str, k: int = 10) -> list[tuple[str, float]]:
        """Transcript match, case-insensitive: the segment's ``text`` only, as the reference
        (labels are the label tool's job, so "cough" does not hit every "no cough" segment).

        A verbatim phrase match scores 1.0 (the paper's rule: a substring of the text; here the
        phrase must start at a word, so "cough" finds "coughing" and "coughs" but not "hiccough").  Because ASR rarely reproduces a
        multi-word phrase exactly, a segment containing at least half of the phrase's content
        words also matches, scored by that fraction.  Hits are ordered by score, then time.
        """
        q = " ".join(_tokens(phrase))
        if not q:
            return []
        content = [t for t in _tokens(phrase) if t not in _STOP] or _tokens(phrase)
        out = []
        needle = f" {q}"
        for r in self._rows_in(recording_id, window).tolist():
            hay = self._hay.get(r)
            if hay is None:
                if len(self._hay) >= _HAY_CACHE_ROWS:
                    self._hay.clear()
                hay = self._hay[r] = " " + " ".join(_tokens(self._texts[r])) + " "
            if needle in hay:
                out.append((-1.0, self._starts[r], r))
                continue
            if len(content) > 1:
                present = set(hay.split())
                frac = sum(t in present for t in content) / len(content)
                if frac >= 0.5:
                    out.append((-round(frac, 3), self._starts[r], r))
        ids = self._ids_of(recording_id)
        out.sort(key=lambda x: (x[0], x[1], ids[x[2]]))                       # ties: time, then id
        return [(ids[r], -neg + 0.0) for neg, _, r in out[:k]]

    def search_label(self, recording_id: str, window: Span, label: str) -> list[tuple[str, float]]:
        """Segments whose ``labels.primary`` equals ``label`` (case-insensitive).

        Scored by the label's probability in ``labels.scores`` when present, else 1.0.  A label
        no segment has as ``primary`` is looked up among the sound events (:meth:`search_sound`).
        """
        want = label.strip().lower()
        if want not in self._label_vocab:                # not a domain label: a sound event's, if any
            return self.search_sound(recording_id, window, label)
        code = self._label_vocab.index(want)
        rows = self._rows_in(recording_id, window)
        rows = rows[np.asarray(self._label_code[rows]) == code].tolist()
        ids = self._ids_of(recording_id)
        out = [(-float(self._label_score[r]), float(self._starts[r]), ids[r]) for r in rows]
        out.sort(key=lambda x: (x[0], x[1], x[2]))                           # ties: time, then id
        return [(sid, -neg + 0.0) for neg, _, sid in out]

    def search_sound(self, recording_id: str, window: Span, label: str) -> list[tuple[str, float]]:
        """Segments holding a sound event of ``label`` (case-insensitive) that overlaps the window
        (``labels["sound_events"]``: harp_lib/extract/sound_events.py, off by default), scored by
        the event's score; ties by start, then id.  [] when the recording has no sound events."""
        want = label.strip().lower()
        rows = self._rows_in(recording_id, window).tolist()
        if not rows:
            return []
        segs, lo = self.segments(recording_id), self._rec_range[recording_id][0]
        out = []
        for r in rows:
            s = segs[r - lo]
            best = max((float(e["score"]) for e in s.labels.get("sound_events") or ()
                        if isinstance(e, Mapping) and str(e.get("label", "")).lower() == want
                        and float(e["start"]) < window.end and float(e["end"]) > window.start), default=None)
            if best is not None:
                out.append((-round(best, 3), s.start, s.id))
        out.sort()                                                          # ties: time, then id
        return [(sid, -neg + 0.0) for neg, _, sid in out]

    def has_sound_events(self, recording_id: str) -> bool:
        """True when the recording was extracted with sound events on (``extract.sound_events``)."""
        return any("sound_events" in s.labels for s in self.segments(recording_id))
