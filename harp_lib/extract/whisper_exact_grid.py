"""The grid every decision of the exact Whisper engine is taken on (:mod:`harp_lib.extract.whisper_exact`).

float64 results from different kernels differ by ~1e-13; a value rounded to a multiple of
:data:`GRID` (2^-24 ~ 6e-8) before any comparison is the same on every CPU except within ~1e-13
of a grid boundary.
"""
from __future__ import annotations

import numpy as np

__all__ = ["GRID", "canon"]

#: every value that decides something is rounded to a multiple of this first (module doc)
GRID = 2.0 ** -24


def canon(x):
    """``x`` (float64) on the :data:`GRID`; infinities stay.

    >>> canon(np.array([0.1, -np.inf])).tolist() == [round(0.1 / GRID) * GRID, -np.inf]
    True
    """
    return np.round(np.asarray(x, dtype=np.float64) / GRID) * GRID
