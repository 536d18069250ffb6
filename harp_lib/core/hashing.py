"""The one sha256-of-a-file helper (extraction cache keys, benchmark manifests, the offline LLM's
weight pin, the fingerprints of a user's recordings).

>>> import tempfile, os
>>> p = os.path.join(tempfile.mkdtemp(), "a.bin"); _ = open(p, "wb").write(b"abc")
>>> file_sha256(p)
'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad'
"""
from __future__ import annotations

import hashlib
import os

__all__ = ["file_sha256"]


def file_sha256(path: os.PathLike | str, chunk: int = 1 << 20) -> str:
    """Hex sha256 of a file's bytes, read ``chunk`` bytes at a time (the digest does not depend on it)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(chunk), b""):
            h.update(block)
    return h.hexdigest()
