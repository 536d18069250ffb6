"""Errors of the retrieval index (:mod:`harp_lib.retrieval.index`): a missing, stale or
inconsistent index (a usage error), and an extraction output that cannot be what extraction
wrote (a fault in the data)."""
from __future__ import annotations
from harp_lib.core.errors import HarpError

__all__ = ["IndexError_", "CorruptIndexInput"]


class IndexError_(HarpError, RuntimeError):
    """The index is missing, stale or inconsistent (message says which file)."""


class CorruptIndexInput(IndexError_):
    """An extraction output that cannot be what extraction wrote (complex / zero / NaN vectors, a
    segment outside its recording, an unreadable ``.npy``): a fault in the data (``harp`` exit 1),
    not a usage error."""
    fault = True
