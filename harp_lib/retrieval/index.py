"""Per-domain retrieval index: segment tables, FAISS cosine indexes, keyword and label search.

Built idempotently from the per-recording files that extraction writes
(``data/extract/<domain>/segments/<rec>.jsonl`` + ``vectors/<rec>.<space>.npy``): every build
starts from scratch and replaces the previous index atomically, so a crash or a re-run can never
append vectors twice (the reference code's append-only indexes could).  Every search is
restricted to one recording and one time window and returns ``(segment_id, score)`` pairs.

On-disk format 2 (``rows.json`` present) adds row-aligned ``rows_*.npy`` columns (times, ids,
text, primary label and score, byte offsets into ``segments.jsonl``) beside the format-1 files
(``segments.jsonl``, ``<space>.faiss``, ``<space>.json``), so format-1 readers still read it.
:meth:`SegmentIndex.load` memory-maps a format-2 index: FAISS vectors through
``IO_FLAG_MMAP_IFC | IO_FLAG_READ_ONLY`` and the columns through ``np.load(mmap_mode="r")``;
a segment's full record is parsed from its ``segments.jsonl`` line only when asked for.  Load
time and resident memory no longer grow with the archive, only with the recordings queried.
A format-1 index (no ``rows.json``) is read into memory as before.

The steps live beside this module: the time / keyword / label tools in
:mod:`~harp_lib.retrieval.index_search`, cosine search in :mod:`~harp_lib.retrieval.index_vector`,
the on-disk format (save, load and the checks of every file) in
:mod:`~harp_lib.retrieval.index_format`, the build from extraction output in
:mod:`~harp_lib.retrieval.index_build`, the ``harp index`` stage in
:mod:`~harp_lib.retrieval.index_stage` and the errors in :mod:`~harp_lib.retrieval.index_errors`.

>>> from harp_lib.core.schema import Segment
>>> import numpy as np
>>> segs = [Segment("r_ext_0000", "r", 0, 5, "S0", "hello world"),
...         Segment("r_ext_0001", "r", 5, 9, "S1", "goodbye")]
>>> ix = SegmentIndex.from_segments(segs, {"text": np.eye(2, dtype=np.float32)})
>>> ix.search_keyword("r", Span(0, 60), "WORLD")
[('r_ext_0000', 1.0)]
>>> ix.search_vector("text", "r", Span(0, 60), np.array([0.0, 1.0]), k=1)
[('r_ext_0001', 1.0)]
"""
from __future__ import annotations

import bisect
from pathlib import Path
from typing import Iterable, Mapping, Optional, Sequence

import numpy as np

from harp_lib.core.schema import Segment
from harp_lib.core.timespan import Span
from harp_lib.retrieval.index_build import IndexBuild
from harp_lib.retrieval.index_errors import IndexError_
from harp_lib.retrieval.index_format import IndexFiles, _parse_lines, _SortedView
from harp_lib.retrieval.index_search import _HAY_CACHE_ROWS, SearchTools
from harp_lib.retrieval.index_vector import VectorSearch, _normalise_rows

__all__ = ["SegmentIndex", "SPACES"]

#: Recordings whose parsed segments a memory-mapped index keeps (least recently used dropped).
_SEGMENT_CACHE_RECS = 64

SPACES: tuple[str, ...] = ("text", "audio", "domain")


class SegmentIndex(IndexBuild, IndexFiles, SearchTools, VectorSearch):
    """Segments of every recording of a domain plus one cosine index per embedding space.

    Construct with :meth:`load` (from ``data/index/<domain>``), :meth:`build` (from extraction
    output) or :meth:`from_segments` (in memory, for tests and notebooks).
    """

    def __init__(self, segments: Sequence[Segment], vectors: Optional[Mapping[str, np.ndarray]] = None,
                 spaces: Optional[Mapping[str, dict]] = None, *, faiss_indexes: Optional[dict] = None,
                 normalised: bool = False):
        """``normalised``: the vectors are unit rows already (read back from a saved index), kept
        bit for bit as stored, as the memory-mapped reader does."""
        segs = sorted(segments, key=lambda s: (s.recording_id, s.start, s.end, s.id))
        self._segs: Optional[list[Segment]] = segs
        self._row: Optional[dict[str, int]] = {}
        for i, s in enumerate(segs):
            if s.id in self._row:
                raise IndexError_(f"duplicate segment id {s.id!r}")
            self._row[s.id] = i
        # contiguous row range per recording
        rec_range: dict[str, tuple[int, int]] = {}
        for i, s in enumerate(segs):
            lo, _ = rec_range.get(s.recording_id, (i, i))
            rec_range[s.recording_id] = (lo, i + 1)
        starts = np.fromiter((s.start for s in segs), np.float64, len(segs))
        ends = np.fromiter((s.end for s in segs), np.float64, len(segs))
        code, score, vocab = _label_columns(segs)
        self._set_rows(rec_range, starts, ends, [s.id for s in segs], [s.text for s in segs], code, score, vocab)
        self.spaces: dict[str, dict] = {}
        self._vecs: dict[str, np.ndarray] = {}
        self._faiss = dict(faiss_indexes or {})
        self._dir: Optional[Path] = None                # a memory-mapped index's folder
        vectors = dict(vectors or {})
        for space, mat in vectors.items():
            mat = np.asarray(mat, dtype=np.float32) if normalised else _normalise_rows(mat)
            if len(mat) != len(segs):
                raise IndexError_(f"space {space!r}: {len(mat)} vectors for {len(segs)} segments")
            self._vecs[space] = mat
            meta = dict((spaces or {}).get(space, {}))
            meta.setdefault("dim", int(mat.shape[1]))
            if int(meta["dim"]) != mat.shape[1]:
                raise IndexError_(f"space {space!r}: stored dim {meta['dim']} != vectors {mat.shape[1]}")
            meta.setdefault("backend", None)
            meta.setdefault("model", None)
            self.spaces[space] = meta

    def _set_rows(self, rec_range, starts, ends, ids, texts, label_code, label_score, label_vocab,
                  rec_max_dur=None) -> None:
        """Row-aligned columns every search reads (numpy arrays, memory-mapped or not): window
        lookups are two binary searches and one vector mask; ids, text and labels per row."""
        self._rec_range: dict[str, tuple[int, int]] = dict(rec_range)
        self._starts, self._ends = starts, ends
        self._ids, self._texts = ids, texts
        self._label_code, self._label_score, self._label_vocab = label_code, label_score, list(label_vocab)
        if rec_max_dur is None:
            rec_max_dur = {rec: float((ends[lo:hi] - starts[lo:hi]).max()) if hi > lo else 0.0
                           for rec, (lo, hi) in self._rec_range.items()}
        self._rec_max_dur: dict[str, float] = dict(rec_max_dur)
        self._rec_los = sorted((lo, rec) for rec, (lo, _) in self._rec_range.items())
        # per-row search text (lower-cased tokens), built lazily on first keyword search
        self._hay: dict[int, str] = {}

    # -- construction ----------------------------------------------------------------------
    @classmethod
    def from_segments(cls, segments: Sequence[Segment], vectors: Optional[Mapping[str, np.ndarray]] = None,
                      spaces: Optional[Mapping[str, dict]] = None) -> "SegmentIndex":
        """An in-memory index; ``vectors[space]`` rows follow ``segments`` order."""
        if vectors:
            order = sorted(range(len(segments)),
                           key=lambda i: (segments[i].recording_id, segments[i].start, segments[i].end, segments[i].id))
            vectors = {k: np.asarray(v)[order] for k, v in vectors.items()}
        return cls(segments, vectors, spaces)
    # -- lookup ----------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._starts)

    @property
    def memory_mapped(self) -> bool:
        """True for an index opened from a format-2 folder with :meth:`load` (``mmap=True``)."""
        return self._dir is not None

    def recording_ids(self) -> list[str]:
        return sorted(self._rec_range)

    def segments(self, recording_id: str) -> list[Segment]:
        """Segments of one recording, sorted by start (empty list when it has none)."""
        lo, hi = self._rec_range.get(recording_id, (0, 0))
        if self._segs is not None:
            return self._segs[lo:hi]
        if hi <= lo:
            return []
        parsed = self._rec_cache(recording_id)
        if len(parsed) < hi - lo:                                       # one read for the whole recording
            segs = _parse_lines(self._dir / "segments.jsonl", int(self._lineoff[lo]), int(self._lineoff[hi]))
            if len(segs) != hi - lo:
                raise IndexError_(f"{self._dir / 'segments.jsonl'}: does not match rows.json for "
                                  f"{recording_id} (stale index; rebuild with `harp index`)")
            parsed.update(zip(range(lo, hi), segs))
        return [parsed[r] for r in range(lo, hi)]

    def _rec_cache(self, recording_id: str) -> dict[int, Segment]:
        """A memory-mapped index's segments of one recording parsed so far (by row), kept for the
        :data:`_SEGMENT_CACHE_RECS` recordings used last."""
        cache = self._seg_cache
        if recording_id in cache:
            cache[recording_id] = got = cache.pop(recording_id)          # most recently used last
            return got
        cache[recording_id] = got = {}
        while len(cache) > _SEGMENT_CACHE_RECS:
            cache.pop(next(iter(cache)))
        return got

    def _remember(self, recording_id: str, a: int, b: int) -> None:
        """Decode the ids of rows ``[a, b)`` of one recording (a search's candidates) into the
        row <-> id maps of a memory-mapped index, once (cleared past :data:`_HAY_CACHE_ROWS`)."""
        names, rowid, done = self._names, self._rowid, self._decoded
        lo, hi = done.get(recording_id, (0, 0))
        if lo <= a and b <= hi:
            return
        if len(names) + (b - a) > _HAY_CACHE_ROWS:
            names.clear(), rowid.clear(), done.clear()
            lo = hi = 0
        for r, x in zip(range(a, b), self._ids.raw[a:b].tolist()):
            names[r] = s = x.decode("utf-8")
            rowid[s] = r
        done[recording_id] = (min(a, lo), max(b, hi)) if a <= hi and lo <= b and hi > lo else (a, b)

    def _row_of(self, segment_id: str) -> int:
        if self._row is not None:
            return self._row[segment_id]
        if segment_id in self._rowid:                                   # a hit of a recent search
            return self._rowid[segment_id]
        ids, order = self._ids.raw, self._idorder
        key = segment_id.encode("utf-8")
        j = bisect.bisect_left(_SortedView(ids, order), key)   # ~20 probes at 10^6 rows
        if j < len(ids) and ids[int(order[j])] == key:
            return int(order[j])
        raise KeyError(segment_id)

    def segment(self, segment_id: str) -> Segment:
        try:
            r = self._row_of(segment_id)
        except KeyError:
            raise KeyError(f"unknown segment id {segment_id!r}") from None
        if self._segs is not None:
            return self._segs[r]
        parsed = self._rec_cache(self._rec_of_row(r))
        if r not in parsed:
            if self._seg_file is None:                                 # kept open: one read per segment
                self._seg_file = open(self._dir / "segments.jsonl", "rb")
            seg = _parse_lines(self._dir / "segments.jsonl", int(self._lineoff[r]), int(self._lineoff[r + 1]),
                               self._seg_file)
            if len(seg) != 1 or seg[0].id != segment_id:
                raise IndexError_(f"{self._dir / 'segments.jsonl'}: line {r + 1} is not segment {segment_id} "
                                  f"(stale index; rebuild with `harp index`)")
            parsed[r] = seg[0]
        return parsed[r]

    def starts_of(self, segment_ids: Iterable[str]) -> dict[str, float]:
        """``{segment id: start}`` without building the segments (what ranking by time needs)."""
        return {x: float(self._starts[self._row_of(x)]) for x in segment_ids}

    def _rec_of_row(self, r: int) -> str:
        los = self._rec_los
        return los[bisect.bisect_right(los, (r, "\uffff")) - 1][1]

    def _all_segments(self) -> list[Segment]:
        if self._segs is not None:
            return self._segs
        return [s for rec in sorted(self._rec_range, key=self._rec_range.get) for s in self.segments(rec)]
    def _ids_of(self, recording_id: str):
        """Row -> segment id, for rows :meth:`_rows_in` returned for ``recording_id`` (the whole
        list in memory; the ids decoded so far when memory-mapped)."""
        return self._ids if self._segs is not None else self._names

    def _rows_in(self, recording_id: str, window: Span) -> np.ndarray:
        """Rows of ``recording_id`` whose segment overlaps ``window`` (strictly)."""
        if recording_id not in self._rec_range:
            return np.zeros(0, dtype=np.int64)
        lo, hi = self._rec_range[recording_id]
        starts = self._starts[lo:hi]
        # a segment overlapping the window starts before window.end and after window.start - max_dur
        a = lo + int(np.searchsorted(starts, window.start - self._rec_max_dur[recording_id], "left"))
        b = lo + int(np.searchsorted(starts, window.end, "left"))
        keep = (self._ends[a:b] > window.start) & (self._starts[a:b] < window.end)
        if self._segs is None:
            self._remember(recording_id, a, b)      # ids of the hits, for segment() and starts_of()
        return np.flatnonzero(keep).astype(np.int64) + a


def _label_columns(segs: Sequence[Segment]) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Per row: code of the lower-cased ``labels.primary`` (-1: none) and its score in
    ``labels.scores`` rounded to 3 decimals (1.0 when not a number), as :meth:`search_label` ranks."""
    vocab: dict[str, int] = {}
    code = np.full(len(segs), -1, np.int32)
    score = np.ones(len(segs), np.float64)
    for i, s in enumerate(segs):
        prim = s.labels.get("primary")
        if not isinstance(prim, str):
            continue
        code[i] = vocab.setdefault(prim.lower(), len(vocab))
        scores = s.labels.get("scores") or {}
        sc = scores.get(prim) if isinstance(scores, Mapping) else None
        if isinstance(sc, (int, float)):
            score[i] = round(float(sc), 3)
    return code, score, list(vocab)
