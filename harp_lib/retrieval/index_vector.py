"""Cosine search over one embedding space of :class:`~harp_lib.retrieval.index.SegmentIndex`.

Vectors are kept as unit rows (``_normalise_rows``); a window's cosines are computed in float64
by numpy, and above ``_BRUTE_FORCE_MAX`` candidate rows the space's FAISS index only proposes
candidates (an ``IDSelectorArray`` search) that are re-scored the same way.
:class:`VectorSearch` is a mixin of ``SegmentIndex`` (it reads ``_vecs``, ``_faiss`` and the
index's row lookups).
"""
from __future__ import annotations

import numpy as np

from harp_lib.core.timespan import Span
from harp_lib.retrieval.index_errors import IndexError_

__all__ = ["VectorSearch"]

#: Below this many candidate rows a masked numpy product beats a FAISS selector search.
_BRUTE_FORCE_MAX = 50_000


def _normalise_rows(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    if x.ndim != 2:
        raise IndexError_(f"expected a 2-D matrix of vectors, got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        raise IndexError_("vectors contain NaN or inf")
    n = np.linalg.norm(x, axis=1, keepdims=True)
    n[n == 0] = 1.0
    return np.ascontiguousarray(x / n, dtype=np.float32)


class VectorSearch:
    """``vector`` (one segment's stored vector) and ``search_vector`` (top-``k`` cosine hits)."""

    def vector(self, space: str, segment_id: str) -> np.ndarray:
        return np.array(self._vecs[space][self._row_of(segment_id)])

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
            import faiss  # heavy: faiss (~0.3 s)
            sel = faiss.IDSelectorArray(rows)
            params = faiss.SearchParameters(sel=sel)
            _, I = self._faiss[space].search(q[None, :].astype(np.float32), min(2 * k + 16, len(rows)),
                                             params=params)
            rows = np.asarray(sorted(int(i) for i in I[0] if i >= 0), dtype=np.int64)
        sims = np.round(np.asarray(mat[rows], dtype=np.float64) @ q, 6) + 0.0
        ids = self._ids_of(recording_id)
        hits = sorted(zip((-sims).tolist(), (ids[r] for r in rows.tolist()), rows.tolist()))
        return [(sid, round(-neg, 4) + 0.0) for neg, sid, _ in hits[:k]]
