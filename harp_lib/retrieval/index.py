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
import json
import os
import re
from collections import defaultdict
from pathlib import Path
from typing import Iterable, Mapping, Optional, Sequence

import numpy as np

from harp_lib.core.atomic import PART_RE
from harp_lib.core.schema import Segment, read_jsonl
from harp_lib.core.timespan import Span

__all__ = ["SegmentIndex", "IndexError_", "CorruptIndexInput", "build_index", "SPACES", "FORMAT"]

#: On-disk index format written by :meth:`SegmentIndex.save` (``rows.json``); 1 had no row columns.
FORMAT = 2
#: Row columns of format 2 (``rows_<name>.npy``), all row-aligned except ``text`` (a UTF-8 blob)
#: and the ``*off`` offsets (``n + 1`` entries).
_COLUMNS = ("starts", "ends", "ids", "idorder", "lineoff", "textoff", "text", "label", "score")
#: Recordings whose parsed segments a memory-mapped index keeps (least recently used dropped).
_SEGMENT_CACHE_RECS = 64
#: Keyword haystacks kept per index before the cache is cleared (bounded memory).
_HAY_CACHE_ROWS = 200_000

SPACES: tuple[str, ...] = ("text", "audio", "domain")
#: Below this many candidate rows a masked numpy product beats a FAISS selector search.
_BRUTE_FORCE_MAX = 50_000
_WORD = re.compile(r"[a-z0-9']+")
_STOP = frozenset("a an the and or of to in on at for is was were be been it this that with as by "
                  "from about i you he she we they my your our their me him her them do did".split())


class IndexError_(RuntimeError):
    """The index is missing, stale or inconsistent (message says which file)."""


class CorruptIndexInput(IndexError_):
    """An extraction output that cannot be what extraction wrote (complex / zero / NaN vectors, a
    segment outside its recording, an unreadable ``.npy``): a fault in the data (``harp`` exit 1),
    not a usage error."""
    fault = True


def _normalise_rows(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    if x.ndim != 2:
        raise IndexError_(f"expected a 2-D matrix of vectors, got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        raise IndexError_("vectors contain NaN or inf")
    n = np.linalg.norm(x, axis=1, keepdims=True)
    n[n == 0] = 1.0
    return np.ascontiguousarray(x / n, dtype=np.float32)


def _tokens(text: str) -> list[str]:
    return _WORD.findall(text.lower())


class SegmentIndex:
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

    @classmethod
    def build(cls, extract_dir: os.PathLike | str, out_dir: os.PathLike | str | None = None,
              *, progress: bool = True, durations: Optional[Mapping[str, float]] = None) -> "SegmentIndex":
        """Build from extraction output; writes ``out_dir`` atomically when given.

        Every input is checked and a bad one is an :class:`IndexError_` naming its file: vectors
        must be a plain real numeric array (not complex, structured, boolean or all zero) of
        finite values; with ``durations`` (recording id -> seconds, the recordings manifest)
        every segment must lie inside its recording."""
        extract_dir = Path(extract_dir)
        seg_dir = extract_dir / "segments"
        if not seg_dir.is_dir():
            raise IndexError_(f"{seg_dir}: no extracted segments (run `harp extract` first)")
        spaces_file = extract_dir / "spaces.json"
        spaces = json.loads(spaces_file.read_text()) if spaces_file.exists() else {}
        files = sorted(seg_dir.glob("*.jsonl"))
        segments: list[Segment] = []
        parts: dict[str, list[np.ndarray]] = defaultdict(list)
        try:
            from harp_lib.core.progress import progress as _progress   # no frozen widget in executed notebooks
            it = _progress(files, desc=f"index {extract_dir.name}", mode=None if progress else "off")
        except ImportError:  # pragma: no cover
            it = files
        for f in it:
            rec = f.stem
            segs = read_jsonl(f, Segment)
            bad = [s.id for s in segs if s.recording_id != rec]
            if bad:
                raise CorruptIndexInput(f"{f}: segment {bad[0]} belongs to another recording")
            _check_times(f, segs, (durations or {}).get(rec))
            order = sorted(range(len(segs)), key=lambda i: (segs[i].start, segs[i].end, segs[i].id))
            segments.extend(segs[i] for i in order)
            for space, meta in spaces.items():
                vf = extract_dir / "vectors" / f"{rec}.{space}.npy"
                if not vf.exists():
                    raise IndexError_(f"{vf}: missing vectors for space {space!r} "
                                      f"(re-run `harp extract` for {rec})")
                try:   # never pickle: an object array in a .npy is refused, not executed
                    mat = np.load(vf, allow_pickle=False)
                except (ValueError, OSError, EOFError) as e:
                    raise CorruptIndexInput(f"{vf}: not a plain numeric .npy array ({e}); re-run "
                                      f"`harp extract --force` for {rec}") from None
                _check_vectors(vf, mat, rec)
                if mat.ndim != 2 or len(mat) != len(segs):
                    raise CorruptIndexInput(f"{vf}: {mat.shape} does not match {len(segs)} segments of {f.name}")
                if mat.shape[1] != int(meta.get("dim", mat.shape[1])):
                    raise CorruptIndexInput(f"{vf}: dim {mat.shape[1]} != {meta['dim']} in {spaces_file}")
                parts[space].append(mat[order] if len(order) else mat.reshape(0, mat.shape[1]))
        vectors = {}
        for space, meta in spaces.items():
            dim = int(meta["dim"])
            vectors[space] = (np.concatenate(parts[space]).astype(np.float32) if parts[space]
                              else np.zeros((0, dim), np.float32))
        ix = cls(segments, vectors, spaces)
        if out_dir is not None:
            ix.save(out_dir)
        return ix

    def save(self, out_dir: os.PathLike | str) -> None:
        """Write the index folder atomically (built in ``<out>.building``, then renamed):
        ``segments.jsonl``, ``<space>.faiss`` and ``<space>.json`` (format 1) plus the format-2
        row columns ``rows_*.npy`` and, last, their manifest ``rows.json``."""
        import faiss
        from harp_lib.core.atomic import atomic_write, write_text
        out_dir = Path(out_dir)
        tmp = out_dir.with_name(out_dir.name + ".building")
        _remove_index_dir(tmp)                          # left by a killed build
        tmp.mkdir(parents=True)
        segs = self._all_segments()
        lineoff = _write_segments(tmp / "segments.jsonl", segs)
        for space, mat in self._vecs.items():
            index = faiss.IndexFlatIP(mat.shape[1])
            if len(mat):
                index.add(np.ascontiguousarray(mat, dtype=np.float32))

            def check(p, n=index.ntotal, d=index.d):
                back = faiss.read_index(str(p))
                if (back.ntotal, back.d) != (n, d):
                    raise IndexError_(f"{p}: wrote {back.ntotal}x{back.d}, expected {n}x{d}")
            atomic_write(tmp / f"{space}.faiss", lambda p, index=index: faiss.write_index(index, str(p)),
                         check=check)
            meta = dict(self.spaces[space], format=FORMAT, n=len(segs))   # format 1 listed every row id here
            write_text(tmp / f"{space}.json", json.dumps(meta, indent=0))
        _write_columns(tmp, self, segs, lineoff)
        old = out_dir.with_name(out_dir.name + ".old")
        if out_dir.exists():
            _remove_index_dir(old)
            os.replace(out_dir, old)
        os.replace(tmp, out_dir)
        _remove_index_dir(old)

    @classmethod
    def load(cls, index_dir: os.PathLike | str, *, mmap: bool = True) -> "SegmentIndex":
        """Open an index written by :meth:`save` (FAISS, JSON and ``.npy`` files only; no pickle).

        A format-2 index is memory-mapped (``mmap=False`` reads it into memory as format 1 is);
        a format-1 index (no ``rows.json``) is always read into memory."""
        index_dir = Path(index_dir)
        if not (index_dir / "segments.jsonl").exists():
            raise IndexError_(f"{index_dir}: no index here (run `harp index --domain ...`)")
        if mmap and (index_dir / "rows.json").exists():
            return cls._load_mmap(index_dir)
        return cls._load_memory(index_dir)

    @classmethod
    def _load_memory(cls, index_dir: Path) -> "SegmentIndex":
        """Every segment parsed and every vector copied into memory (the format-1 reader)."""
        segs = read_jsonl(index_dir / "segments.jsonl", Segment)
        ids = [s.id for s in sorted(segs, key=lambda s: (s.recording_id, s.start, s.end, s.id))]
        vectors, spaces, fx = {}, {}, {}
        for meta_file in sorted(index_dir.glob("*.json")):
            if meta_file.name == "rows.json":
                continue
            space = meta_file.stem
            meta = _read_space_meta(meta_file)
            row_ids = meta.pop("ids") if "ids" in meta else _column_ids(index_dir, meta)
            if row_ids != ids:
                raise IndexError_(f"{meta_file}: row ids do not match segments.jsonl (stale index; rebuild)")
            index = _read_faiss(index_dir / f"{space}.faiss", meta, len(ids), mmap=False)
            mat = faiss_rows(index)
            vectors[space] = np.array(mat, dtype=np.float32).reshape(index.ntotal, index.d)
            spaces[space] = meta
            fx[space] = index
        return cls(segs, vectors, spaces, faiss_indexes=fx, normalised=True)

    @classmethod
    def _load_mmap(cls, index_dir: Path) -> "SegmentIndex":
        """Format 2: columns and vectors memory-mapped, segments parsed per recording on demand."""
        man = _read_manifest(index_dir / "rows.json")
        n = int(man["n"])
        col = {c: _open_column(index_dir / f"rows_{c}.npy", c, n) for c in _COLUMNS}
        ix = cls.__new__(cls)
        ix._segs, ix._row = None, None
        ix._dir, ix._seg_cache, ix._seg_file, ix._names, ix._rowid = index_dir, {}, None, {}, {}
        ix._decoded = {}                                # recording -> rows [a, b) whose ids are in _names
        ix._lineoff, ix._idorder = col["lineoff"], col["idorder"]
        ix._set_rows({r: (int(v[0]), int(v[1])) for r, v in man["recordings"].items()}, col["starts"], col["ends"],
                     _Strings(col["ids"]), _Blob(col["textoff"], col["text"]), col["label"], col["score"],
                     man["labels"], rec_max_dur={r: float(v[2]) for r, v in man["recordings"].items()})
        ix.spaces, ix._vecs, ix._faiss = {}, {}, {}
        if (index_dir / "segments.jsonl").stat().st_size != int(col["lineoff"][-1]):
            raise IndexError_(f"{index_dir / 'segments.jsonl'}: size does not match rows.json (stale index; "
                              f"rebuild with `harp index`)")
        for space in man["spaces"]:
            meta = _read_space_meta(index_dir / f"{space}.json")
            if meta.pop("n", None) != n or meta.pop("format", None) != FORMAT:
                raise IndexError_(f"{index_dir / (space + '.json')}: not the {n} rows of rows.json "
                                  f"(stale index; rebuild with `harp index`)")
            index = _read_faiss(index_dir / f"{space}.faiss", meta, n, mmap=True)
            ix._vecs[space] = _mmap_vectors(index_dir / f"{space}.faiss", index)
            ix._faiss[space] = index
            ix.spaces[space] = meta
        return ix

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

    def vector(self, space: str, segment_id: str) -> np.ndarray:
        return np.array(self._vecs[space][self._row_of(segment_id)])

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

    # -- tools -----------------------------------------------------------------------------
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

    def search_vector(self, space: str, recording_id: str, window: Span, query_vec: np.ndarray,
                      k: int = 5) -> list[tuple[str, float]]:
        """Top-``k`` cosine neighbours of ``query_vec`` among the window's segments.

        Cosines are computed in float64 and ranked on a 1e-6 grid, ties by segment id, so the order
        does not depend on the CPU's SIMD kernels (FAISS, used above 50 000 rows, only proposes
        ``2k + 16`` candidates that are re-scored the same way)."""
        if space not in self._vecs:
            raise IndexError_(f"no {space!r} embeddings in this index (have: {', '.join(self._vecs) or 'none'})")
        q = np.asarray(query_vec, dtype=np.float32).reshape(-1)
        mat = self._vecs[space]
        if q.shape[0] != mat.shape[1]:
            raise IndexError_(f"query vector has dim {q.shape[0]}, space {space!r} has {mat.shape[1]}")
        n = float(np.linalg.norm(q))
        if n == 0 or not np.isfinite(n):
            return []
        q = q.astype(np.float64) / n
        rows = self._rows_in(recording_id, window)
        if not len(rows) or k <= 0:
            return []
        if len(rows) > _BRUTE_FORCE_MAX and space in self._faiss:
            import faiss
            sel = faiss.IDSelectorArray(rows)
            params = faiss.SearchParameters(sel=sel)
            _, I = self._faiss[space].search(q[None, :].astype(np.float32), min(2 * k + 16, len(rows)),
                                             params=params)
            rows = np.asarray(sorted(int(i) for i in I[0] if i >= 0), dtype=np.int64)
        sims = np.round(np.asarray(mat[rows], dtype=np.float64) @ q, 6) + 0.0
        ids = self._ids_of(recording_id)
        hits = sorted(zip((-sims).tolist(), (ids[r] for r in rows.tolist()), rows.tolist()))
        return [(sid, round(-neg, 4) + 0.0) for neg, sid, _ in hits[:k]]


class _Strings:
    """Row -> ``str`` over a fixed-width UTF-8 bytes column (``raw``, memory-mapped)."""

    def __init__(self, raw: np.ndarray):
        self.raw = raw

    def __len__(self) -> int:
        return len(self.raw)

    def __getitem__(self, r) -> str:
        return self.raw[r].decode("utf-8")


class _Blob:
    """Row -> ``str`` over one UTF-8 blob and ``n + 1`` offsets (both memory-mapped)."""

    def __init__(self, off: np.ndarray, blob: np.ndarray):
        self.off, self.blob = off, blob

    def __len__(self) -> int:
        return len(self.off) - 1

    def __getitem__(self, r) -> str:
        return self.blob[int(self.off[r]):int(self.off[r + 1])].tobytes().decode("utf-8")


class _SortedView:
    """``ids`` in ``order`` as a sequence for :func:`bisect.bisect_left` (no sorted copy)."""

    def __init__(self, ids: np.ndarray, order: np.ndarray):
        self.ids, self.order = ids, order

    def __len__(self) -> int:
        return len(self.order)

    def __getitem__(self, j) -> bytes:
        return self.ids[int(self.order[j])]


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


def _write_segments(path: Path, segs: Sequence[Segment]) -> np.ndarray:
    """``segments.jsonl`` written atomically; returns the byte offset of every line (``n + 1``)."""
    from harp_lib.core.atomic import atomic_write
    from harp_lib.core.schema import _dumps
    off = np.zeros(len(segs) + 1, np.int64)

    def writer(tmp: Path):
        pos = 0
        with open(tmp, "wb") as fh:
            for i, s in enumerate(segs):
                line = (_dumps(s) + "\n").encode("utf-8")
                fh.write(line)
                pos += len(line)
                off[i + 1] = pos
    atomic_write(path, writer)
    return off


def _write_columns(d: Path, ix: "SegmentIndex", segs: Sequence[Segment], lineoff: np.ndarray) -> None:
    """Format-2 row columns ``rows_*.npy`` and, last, their manifest ``rows.json``."""
    from harp_lib.core.atomic import atomic_write, write_text
    ids = np.array([s.id.encode("utf-8") for s in segs], dtype=f"S{max([1] + [len(s.id.encode()) for s in segs])}")
    text = [s.text.encode("utf-8") for s in segs]
    textoff = np.zeros(len(segs) + 1, np.int64)
    textoff[1:] = np.cumsum([len(t) for t in text]) if text else []
    cols = {"starts": np.asarray(ix._starts, np.float64), "ends": np.asarray(ix._ends, np.float64), "ids": ids,
            "idorder": np.argsort(ids, kind="stable").astype(np.int64), "lineoff": lineoff, "textoff": textoff,
            "text": np.frombuffer(b"".join(text), np.uint8), "label": np.asarray(ix._label_code, np.int32),
            "score": np.asarray(ix._label_score, np.float64)}
    for name in _COLUMNS:
        atomic_write(d / f"rows_{name}.npy", lambda p, a=cols[name]: _save_npy(p, a))
    recs = {rec: [lo, hi, ix._rec_max_dur[rec]] for rec, (lo, hi) in sorted(ix._rec_range.items(), key=lambda x: x[1])}
    man = {"format": FORMAT, "n": len(segs), "labels": ix._label_vocab,
           "spaces": {sp: {k: v for k, v in m.items()} for sp, m in ix.spaces.items()}, "recordings": recs}
    write_text(d / "rows.json", json.dumps(man, indent=0))


def _save_npy(p: Path, a: np.ndarray) -> None:
    with open(p, "wb") as fh:
        np.save(fh, a, allow_pickle=False)


def _read_manifest(path: Path) -> dict:
    try:
        man = json.loads(path.read_text(encoding="utf-8"))
        if int(man["format"]) > FORMAT:
            raise IndexError_(f"{path}: index format {man['format']} is newer than this harp_lib reads "
                              f"({FORMAT}); rebuild with `harp index` or update harp_lib")
        man["n"], man["recordings"], man["labels"], man["spaces"]     # noqa: B018 (all present)
        return man
    except (ValueError, KeyError, TypeError) as e:
        raise IndexError_(f"{path}: unreadable index metadata ({type(e).__name__}: {e}); "
                          f"rebuild with `harp index`") from None


def _open_column(path: Path, name: str, n: int) -> np.ndarray:
    """One ``rows_<name>.npy`` memory-mapped read-only, its length checked against ``n``."""
    try:
        a = np.load(path, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError, EOFError) as e:
        raise IndexError_(f"{path}: unreadable index column ({type(e).__name__}: {e}); "
                          f"rebuild with `harp index`") from None
    want = n + 1 if name.endswith("off") else (None if name == "text" else n)
    if a.ndim != 1 or (want is not None and len(a) != want):
        raise IndexError_(f"{path}: {a.shape} rows, expected {want} (stale index; rebuild with `harp index`)")
    return a.view(np.ndarray)               # a plain read-only view of the mapping: no np.memmap per-item overhead


def _read_space_meta(meta_file: Path) -> dict:
    """``<space>.json``: format 1 lists the row ids (``ids``), format 2 their number (``n``)."""
    try:
        meta = json.loads(meta_file.read_text(encoding="utf-8"))
        meta["ids"] if "ids" in meta else int(meta["n"])              # noqa: B018 (present)
        int(meta["dim"])
        return meta
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise IndexError_(f"{meta_file}: unreadable index metadata ({type(e).__name__}: {e}); "
                          f"rebuild with `harp index`") from None


def _column_ids(index_dir: Path, meta: dict) -> list[str]:
    """Row ids of a format-2 index (``rows_ids.npy``), for the in-memory reader."""
    ids = _open_column(index_dir / "rows_ids.npy", "ids", int(meta.pop("n")))
    meta.pop("format", None)
    return [x.decode("utf-8") for x in ids.tolist()]


def _read_faiss(path: Path, meta: dict, n: int, *, mmap: bool):
    """A FAISS index file, memory-mapped read-only with ``mmap``; its shape checked."""
    import faiss
    flags = (faiss.IO_FLAG_MMAP_IFC | faiss.IO_FLAG_READ_ONLY) if mmap else 0
    try:
        index = faiss.read_index(str(path), flags)
    except RuntimeError as e:
        raise IndexError_(f"{path}: not a readable FAISS index "
                          f"({str(e).splitlines()[-1][:200]}); rebuild with `harp index`") from None
    if index.d != int(meta["dim"]) or index.ntotal != n:
        raise IndexError_(f"{path}: {index.ntotal}x{index.d} does not match {n}x{meta['dim']}")
    return index


def faiss_rows(index) -> np.ndarray:
    """The stored vectors of a flat FAISS index as a flat float32 view (valid while ``index`` lives)."""
    import faiss
    if not index.ntotal:
        return np.zeros(0, np.float32)
    return faiss.rev_swig_ptr(index.get_xb(), index.ntotal * index.d)


def _mmap_vectors(path: Path, index) -> np.ndarray:
    """The vectors of a flat index file, a read-only view of an ``np.memmap`` (which owns the mapping): a
    flat index stores its ``ntotal x d`` float32 codes last; checked against FAISS's own rows."""
    n, d = index.ntotal, index.d
    if not n:
        return np.zeros((0, d), np.float32)
    size = path.stat().st_size
    mat = np.memmap(path, dtype=np.float32, mode="r", offset=size - n * d * 4, shape=(n, d))
    ref = faiss_rows(index)
    if not (np.array_equal(mat[0], ref[:d]) and np.array_equal(mat[-1], ref[-d:])):
        raise IndexError_(f"{path}: not a flat FAISS index of {n}x{d} float32 vectors; rebuild with `harp index`")
    return mat.view(np.ndarray)


def _parse_lines(path: Path, a: int, b: int, fh=None) -> list[Segment]:
    """The segments on bytes ``[a, b)`` of a ``segments.jsonl`` (whole lines); ``fh``: that file
    open already (read with ``os.pread``, no seek state)."""
    if fh is None:
        with open(path, "rb") as f:
            chunk = os.pread(f.fileno(), b - a, a)
    else:
        chunk = os.pread(fh.fileno(), b - a, a)
    try:
        return [Segment(**json.loads(line)) for line in chunk.decode("utf-8").splitlines() if line.strip()]
    except (ValueError, TypeError, KeyError) as e:
        raise IndexError_(f"{path}: bytes {a}-{b} are not whole segment lines ({type(e).__name__}); "
                          f"stale index, rebuild with `harp index`") from None


def _check_vectors(vf: Path, mat: np.ndarray, rec: str) -> None:
    """A vector file that cannot be what extraction wrote: one clear error naming it."""
    fix = f"re-run `harp extract --force` for {rec}"
    kind = mat.dtype.kind
    if kind not in "iuf":                          # c: complex, b: bool, V: structured / record, ...
        what = {"c": "complex", "b": "boolean", "V": "structured (record)"}.get(kind, str(mat.dtype))
        raise CorruptIndexInput(f"{vf}: {what} vectors ({mat.dtype}); expected real numbers; {fix}")
    if mat.size and not np.all(np.isfinite(mat)):
        raise CorruptIndexInput(f"{vf}: vectors contain NaN or inf; {fix}")
    if mat.ndim == 2 and len(mat) and not np.any(mat):
        raise CorruptIndexInput(f"{vf}: every one of its {len(mat)} vectors is zero ({mat.dtype}): a corrupt or "
                          f"placeholder file, not embeddings; {fix}")


def _check_times(f: Path, segs: Sequence[Segment], duration: Optional[float]) -> None:
    """Segments outside their recording (``duration`` from the recordings manifest)."""
    if duration is None:
        return
    from harp_lib.core.audio import DURATION_TOLERANCE_SEC
    for s in segs:
        if s.start < 0 or s.end > float(duration) + DURATION_TOLERANCE_SEC:
            raise CorruptIndexInput(f"{f}: segment {s.id} at {s.start:.2f}-{s.end:.2f} s lies outside its recording "
                              f"(0-{float(duration):.2f} s); re-run `harp extract --force` for {f.stem}")


def _durations(manifest: Path) -> Optional[dict[str, float]]:
    """recording id -> duration from a recordings manifest (None when there is none)."""
    if not manifest.is_file():
        return None
    from harp_lib.core.schema import Recording, read_jsonl
    return {r.id: float(r.duration) for r in read_jsonl(manifest, Recording) if r.duration}


def _remove_index_dir(d: Path) -> None:
    """Remove an index folder this module wrote (``.building`` / ``.old``), file by file, and
    only if it holds nothing but index files: a folder of anything else is refused, never
    deleted."""
    if not os.path.lexists(d):
        return
    if d.is_symlink() or not d.is_dir():
        raise IndexError_(f"{d}: expected an index folder left by an earlier build, found a "
                          f"{'symlink' if d.is_symlink() else 'file'}; move it away and re-run `harp index`")
    files = list(d.iterdir())
    foreign = [f.name for f in files if f.is_symlink() or not f.is_file()
               or not re.fullmatch(r"(segments\.jsonl|[A-Za-z0-9_-]+\.(faiss|json|npy))(\.part|" + PART_RE + ")?", f.name)]
    if foreign:
        raise IndexError_(f"{d}: refusing to delete a folder that holds {foreign[0]!r}, which `harp index` "
                          f"does not write; move it away and re-run `harp index`")
    for f in files:
        f.unlink()
    d.rmdir()


def build_index(domain: str, cfg=None, *, progress: bool = True) -> SegmentIndex:
    """Build ``paths.index/<domain>`` from ``paths.extract/<domain>`` (library call for notebooks).

    Holds the index folder's lock and the extraction folder's (an extraction writing into it
    is waited for, harp_lib.core.locks)."""
    from harp_lib.config import load_config
    from harp_lib.core.locks import stage_lock
    from harp_lib.core.paths import DataPaths
    dp = DataPaths(cfg or load_config())
    src, dst = dp.extract_dir(domain), dp.index(domain)
    with stage_lock(src, "extract"), stage_lock(dst, "index"):
        return SegmentIndex.build(src, dst, progress=progress,
                                  durations=_durations(dp.recordings_manifest(domain)))


def add_arguments(ap) -> None:
    """``harp index`` options (shared ones: :mod:`harp_lib.app.cli`)."""
    ap.add_argument("--domain", action="append", help="domain(s) to index (default: params domains)")


def run(cfg, args) -> int:
    """``harp index [--domain D ...]``: build and save each domain's index."""
    for d in args.domain or cfg.domains:
        ix = build_index(d, cfg, progress=not args.quiet)
        dims = ", ".join(f"{k}:{v['dim']}" for k, v in ix.spaces.items())
        print(f"{d}: {len(ix)} segments over {len(ix.recording_ids())} recordings; spaces {dims or 'none'}")
    return 0
