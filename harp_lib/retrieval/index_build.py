"""Building the retrieval index from extraction output (:meth:`SegmentIndex.build`), and the
checks of every input file (vectors that cannot be embeddings, segments outside their recording).

:class:`IndexBuild` is a mixin of ``SegmentIndex``.
"""
from __future__ import annotations

import json
import os
from collections import defaultdict
from pathlib import Path
from typing import Mapping, Optional, Sequence

import numpy as np

from harp_lib.core.audio import DURATION_TOLERANCE_SEC
from harp_lib.core.jsonl import read_jsonl
from harp_lib.core.progress import progress as progress_bar
from harp_lib.core.schema import Segment
from harp_lib.retrieval.index_errors import CorruptIndexInput, IndexError_

__all__ = ["IndexBuild"]


class IndexBuild:
    """``build``: one index from a domain's extraction folder, every input checked (an instance
    of ``cls``: a :class:`~harp_lib.retrieval.index.SegmentIndex`)."""

    @classmethod
    def build(cls, extract_dir: os.PathLike | str, out_dir: os.PathLike | str | None = None,
              *, progress: bool = True, durations: Optional[Mapping[str, float]] = None) -> "IndexBuild":
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
            it = progress_bar(files, desc=f"index {extract_dir.name}", mode=None if progress else "off")
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
    for s in segs:
        if s.start < 0 or s.end > float(duration) + DURATION_TOLERANCE_SEC:
            raise CorruptIndexInput(f"{f}: segment {s.id} at {s.start:.2f}-{s.end:.2f} s lies outside its recording "
                              f"(0-{float(duration):.2f} s); re-run `harp extract --force` for {f.stem}")
