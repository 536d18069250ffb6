"""On-disk format of the retrieval index: :meth:`SegmentIndex.save` / :meth:`SegmentIndex.load`
and the reading, writing and checking of each of its files.

Format 1: ``segments.jsonl``, ``<space>.faiss`` and ``<space>.json``.  Format 2 (``rows.json``
present) adds the row-aligned ``rows_*.npy`` columns, which :meth:`SegmentIndex.load` memory-maps
(``_Strings`` / ``_Blob`` / ``_SortedView`` read them per row); a segment's record is parsed from
its ``segments.jsonl`` line only when asked for (``_parse_lines``).  Every file read back is
checked and a bad one is an :class:`~harp_lib.retrieval.index_errors.IndexError_` naming it.
:class:`IndexFiles` is a mixin of ``SegmentIndex``.
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Sequence

import numpy as np

from harp_lib.core.atomic import PART_RE, atomic_write, write_text
from harp_lib.core.jsonl import _dumps, read_jsonl
from harp_lib.core.schema import Segment
from harp_lib.retrieval.index_errors import IndexError_

__all__ = ["IndexFiles", "FORMAT", "faiss_rows"]

#: On-disk index format written by :meth:`SegmentIndex.save` (``rows.json``); 1 had no row columns.
FORMAT = 2
#: Row columns of format 2 (``rows_<name>.npy``), all row-aligned except ``text`` (a UTF-8 blob)
#: and the ``*off`` offsets (``n + 1`` entries).
_COLUMNS = ("starts", "ends", "ids", "idorder", "lineoff", "textoff", "text", "label", "score")


class IndexFiles:
    """``save`` and ``load`` (format 2 memory-mapped, format 1 read into memory); ``load`` returns
    an instance of ``cls`` (a :class:`~harp_lib.retrieval.index.SegmentIndex`)."""

    def save(self, out_dir: os.PathLike | str) -> None:
        """Write the index folder atomically (built in ``<out>.building``, then renamed):
        ``segments.jsonl``, ``<space>.faiss`` and ``<space>.json`` (format 1) plus the format-2
        row columns ``rows_*.npy`` and, last, their manifest ``rows.json``."""
        import faiss  # heavy: faiss (~0.3 s)
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
    def load(cls, index_dir: os.PathLike | str, *, mmap: bool = True) -> "IndexFiles":
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
    def _load_memory(cls, index_dir: Path) -> "IndexFiles":
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
    def _load_mmap(cls, index_dir: Path) -> "IndexFiles":
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


def _write_segments(path: Path, segs: Sequence[Segment]) -> np.ndarray:
    """``segments.jsonl`` written atomically; returns the byte offset of every line (``n + 1``)."""
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


def _write_columns(d: Path, ix: "IndexFiles", segs: Sequence[Segment], lineoff: np.ndarray) -> None:
    """Format-2 row columns ``rows_*.npy`` and, last, their manifest ``rows.json``."""
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
    import faiss  # heavy: faiss (~0.3 s)
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
    import faiss  # heavy: faiss (~0.3 s)
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

