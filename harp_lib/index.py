"""Per-domain retrieval index: segment tables, FAISS cosine indexes, keyword and label search.

Built idempotently from the per-recording files that extraction writes
(``data/extract/<domain>/segments/<rec>.jsonl`` + ``vectors/<rec>.<space>.npy``): every build
starts from scratch and replaces the previous index atomically, so a crash or a re-run can never
append vectors twice (the reference code's append-only indexes could).  Every search is
restricted to one recording and one time window and returns ``(segment_id, score)`` pairs.

>>> from harp_lib.schema import Segment
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

import json
import os
import re
from collections import defaultdict
from pathlib import Path
from typing import Iterable, Mapping, Optional, Sequence

import numpy as np

from .atomic import PART_RE
from .schema import Segment, read_jsonl, write_jsonl
from .timespan import Span

__all__ = ["SegmentIndex", "IndexError_", "CorruptIndexInput", "build_index", "SPACES"]

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
                 spaces: Optional[Mapping[str, dict]] = None, *, faiss_indexes: Optional[dict] = None):
        segs = sorted(segments, key=lambda s: (s.recording_id, s.start, s.end, s.id))
        self._segs: list[Segment] = segs
        self._row: dict[str, int] = {}
        for i, s in enumerate(segs):
            if s.id in self._row:
                raise IndexError_(f"duplicate segment id {s.id!r}")
            self._row[s.id] = i
        # contiguous row range and sorted starts per recording
        self._rec_range: dict[str, tuple[int, int]] = {}
        self._rec_max_dur: dict[str, float] = {}
        for i, s in enumerate(segs):
            lo, _ = self._rec_range.get(s.recording_id, (i, i))
            self._rec_range[s.recording_id] = (lo, i + 1)
        # row-aligned arrays: window lookups are two binary searches and one vector mask
        self._starts = np.fromiter((s.start for s in segs), np.float64, len(segs))
        self._ends = np.fromiter((s.end for s in segs), np.float64, len(segs))
        for rec, (lo, hi) in self._rec_range.items():
            self._rec_max_dur[rec] = float((self._ends[lo:hi] - self._starts[lo:hi]).max()) if hi > lo else 0.0
        # per-row search text (lower-cased tokens), built lazily on first keyword search
        self._hay: list[Optional[str]] = [None] * len(segs)
        self.spaces: dict[str, dict] = {}
        self._vecs: dict[str, np.ndarray] = {}
        self._faiss = dict(faiss_indexes or {})
        vectors = dict(vectors or {})
        for space, mat in vectors.items():
            mat = _normalise_rows(mat)
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
            from .progress import progress as _progress   # no frozen widget in executed notebooks
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
        """Write ``segments.jsonl``, ``<space>.faiss`` and ``<space>.json`` atomically."""
        import faiss
        out_dir = Path(out_dir)
        from .atomic import atomic_write, write_text
        out_dir = Path(out_dir)
        tmp = out_dir.with_name(out_dir.name + ".building")
        _remove_index_dir(tmp)                          # left by a killed build
        tmp.mkdir(parents=True)
        write_jsonl(tmp / "segments.jsonl", self._segs)
        for space, mat in self._vecs.items():
            index = faiss.IndexFlatIP(mat.shape[1])
            if len(mat):
                index.add(mat)

            def check(p, n=index.ntotal, d=index.d):
                back = faiss.read_index(str(p))
                if (back.ntotal, back.d) != (n, d):
                    raise IndexError_(f"{p}: wrote {back.ntotal}x{back.d}, expected {n}x{d}")
            atomic_write(tmp / f"{space}.faiss", lambda p, index=index: faiss.write_index(index, str(p)),
                         check=check)
            meta = dict(self.spaces[space], ids=[s.id for s in self._segs])
            write_text(tmp / f"{space}.json", json.dumps(meta, indent=0))
        old = out_dir.with_name(out_dir.name + ".old")
        if out_dir.exists():
            _remove_index_dir(old)
            os.replace(out_dir, old)
        os.replace(tmp, out_dir)
        _remove_index_dir(old)

    @classmethod
    def load(cls, index_dir: os.PathLike | str) -> "SegmentIndex":
        """Load an index written by :meth:`save` (FAISS files and JSON only; no pickle)."""
        import faiss
        index_dir = Path(index_dir)
        seg_file = index_dir / "segments.jsonl"
        if not seg_file.exists():
            raise IndexError_(f"{index_dir}: no index here (run `harp index --domain ...`)")
        segs = read_jsonl(seg_file, Segment)
        ids = [s.id for s in sorted(segs, key=lambda s: (s.recording_id, s.start, s.end, s.id))]
        vectors, spaces, fx = {}, {}, {}
        for meta_file in sorted(index_dir.glob("*.json")):
            space = meta_file.stem
            try:
                meta = json.loads(meta_file.read_text(encoding="utf-8"))
                row_ids = meta.pop("ids")
            except (ValueError, KeyError, TypeError, AttributeError) as e:
                raise IndexError_(f"{meta_file}: unreadable index metadata ({type(e).__name__}: {e}); "
                                  f"rebuild with `harp index`") from None
            if row_ids != ids:
                raise IndexError_(f"{meta_file}: row ids do not match segments.jsonl (stale index; rebuild)")
            try:
                index = faiss.read_index(str(index_dir / f"{space}.faiss"))
            except RuntimeError as e:
                raise IndexError_(f"{index_dir / (space + '.faiss')}: not a readable FAISS index "
                                  f"({str(e).splitlines()[-1][:200]}); rebuild with `harp index`") from None
            if index.d != int(meta["dim"]) or index.ntotal != len(ids):
                raise IndexError_(f"{index_dir / (space + '.faiss')}: {index.ntotal}x{index.d} does not match "
                                  f"{len(ids)}x{meta['dim']}")
            mat = faiss.rev_swig_ptr(index.get_xb(), index.ntotal * index.d) if index.ntotal else np.zeros(0, np.float32)
            vectors[space] = np.array(mat, dtype=np.float32).reshape(index.ntotal, index.d)
            spaces[space] = meta
            fx[space] = index
        return cls(segs, vectors, spaces, faiss_indexes=fx)

    # -- lookup ----------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._segs)

    def recording_ids(self) -> list[str]:
        return sorted(self._rec_range)

    def segments(self, recording_id: str) -> list[Segment]:
        """Segments of one recording, sorted by start (empty list when it has none)."""
        lo, hi = self._rec_range.get(recording_id, (0, 0))
        return self._segs[lo:hi]

    def segment(self, segment_id: str) -> Segment:
        try:
            return self._segs[self._row[segment_id]]
        except KeyError:
            raise KeyError(f"unknown segment id {segment_id!r}") from None

    def vector(self, space: str, segment_id: str) -> np.ndarray:
        return self._vecs[space][self._row[segment_id]]

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
        out.sort(key=lambda x: (x[0], x[1], self._segs[x[2]].id))             # ties: time, then id
        return [(self._segs[r].id, -neg + 0.0) for neg, _, r in out]

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
            hay = self._hay[r]
            if hay is None:
                hay = self._hay[r] = " " + " ".join(_tokens(self._segs[r].text)) + " "
            if needle in hay:
                out.append((-1.0, self._starts[r], r))
                continue
            if len(content) > 1:
                present = set(hay.split())
                frac = sum(t in present for t in content) / len(content)
                if frac >= 0.5:
                    out.append((-round(frac, 3), self._starts[r], r))
        out.sort(key=lambda x: (x[0], x[1], self._segs[x[2]].id))             # ties: time, then id
        return [(self._segs[r].id, -neg + 0.0) for neg, _, r in out[:k]]

    def search_label(self, recording_id: str, window: Span, label: str) -> list[tuple[str, float]]:
        """Segments whose ``labels.primary`` equals ``label`` (case-insensitive).

        Scored by the label's probability in ``labels.scores`` when present, else 1.0.
        """
        want = label.strip().lower()
        out = []
        for r in self._rows_in(recording_id, window).tolist():
            s = self._segs[r]
            prim = s.labels.get("primary")
            if isinstance(prim, str) and prim.lower() == want:
                sc = (s.labels.get("scores") or {}).get(prim)
                out.append((-(round(float(sc), 3) if isinstance(sc, (int, float)) else 1.0), s.start, s.id))
        out.sort(key=lambda x: (x[0], x[1], x[2]))                           # ties: time, then id
        return [(sid, -neg + 0.0) for neg, _, sid in out]

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
        sims = np.round(mat[rows].astype(np.float64) @ q, 6) + 0.0
        hits = sorted(zip((-sims).tolist(), (self._segs[int(r)].id for r in rows), rows.tolist()))
        return [(sid, round(-neg, 4) + 0.0) for neg, sid, _ in hits[:k]]


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
    from .audio import DURATION_TOLERANCE_SEC
    for s in segs:
        if s.start < 0 or s.end > float(duration) + DURATION_TOLERANCE_SEC:
            raise CorruptIndexInput(f"{f}: segment {s.id} at {s.start:.2f}-{s.end:.2f} s lies outside its recording "
                              f"(0-{float(duration):.2f} s); re-run `harp extract --force` for {f.stem}")


def _durations(manifest: Path) -> Optional[dict[str, float]]:
    """recording id -> duration from a recordings manifest (None when there is none)."""
    if not manifest.is_file():
        return None
    from .schema import Recording, read_jsonl
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
               or not re.fullmatch(r"(segments\.jsonl|[A-Za-z0-9_-]+\.(faiss|json))(\.part|" + PART_RE + ")?", f.name)]
    if foreign:
        raise IndexError_(f"{d}: refusing to delete a folder that holds {foreign[0]!r}, which `harp index` "
                          f"does not write; move it away and re-run `harp index`")
    for f in files:
        f.unlink()
    d.rmdir()


def build_index(domain: str, cfg=None, *, progress: bool = True) -> SegmentIndex:
    """Build ``paths.index/<domain>`` from ``paths.extract/<domain>`` (library call for notebooks).

    Holds the index folder's lock and the extraction folder's (an extraction writing into it
    is waited for, harp_lib.locks)."""
    from .config import load_config
    from .locks import stage_lock
    from .paths import DataPaths
    dp = DataPaths(cfg or load_config())
    src, dst = dp.extract_dir(domain), dp.index(domain)
    with stage_lock(src, "extract"), stage_lock(dst, "index"):
        return SegmentIndex.build(src, dst, progress=progress,
                                  durations=_durations(dp.recordings_manifest(domain)))


def add_arguments(ap) -> None:
    """``harp index`` options (shared ones: :mod:`harp_lib.cli`)."""
    ap.add_argument("--domain", action="append", help="domain(s) to index (default: params domains)")


def run(cfg, args) -> int:
    """``harp index [--domain D ...]``: build and save each domain's index."""
    for d in args.domain or cfg.domains:
        ix = build_index(d, cfg, progress=not args.quiet)
        dims = ", ".join(f"{k}:{v['dim']}" for k, v in ix.spaces.items())
        print(f"{d}: {len(ix)} segments over {len(ix.recording_ids())} recordings; spaces {dims or 'none'}")
    return 0
