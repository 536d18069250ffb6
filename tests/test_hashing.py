"""One sha256-of-a-file helper (issue 32): harp_lib.core.hashing.file_sha256, used by the extraction
cache key, the benchmark manifest, the offline LLM's weight pin (and importable for userdata)."""
from __future__ import annotations

import hashlib
import json

import pytest

from harp_lib.core import hashing


@pytest.mark.parametrize("size", [0, 1, 1000, (1 << 20) + 7])
def test_file_sha256_is_hashlib_whatever_the_chunk(tmp_path, size):
    data = bytes(range(256)) * (size // 256) + b"x" * (size % 256)
    p = tmp_path / "f.bin"
    p.write_bytes(data)
    want = hashlib.sha256(data).hexdigest()
    assert hashing.file_sha256(p) == hashing.file_sha256(str(p), 3) == hashing.file_sha256(p, 1 << 22) == want


def test_the_copies_are_gone_and_callers_use_the_one_helper():
    import harp_lib.extract.pipeline as xp
    import harp_lib.llm.local as ll
    import importlib
    gen = importlib.import_module("harp_lib.corpora.synth.generate")     # the package exports the function
    assert xp.file_sha256 is hashing.file_sha256 and ll.file_sha256 is hashing.file_sha256
    assert gen.file_sha256 is hashing.file_sha256
    assert not hasattr(gen, "_sha256") and not hasattr(ll, "_file_sha256")
    assert not hasattr(xp, "_worker_init")           # the alias of locks.pool_worker_init is gone


def test_manifest_hashes_are_the_helpers(tmp_path):
    """The benchmark manifest lists file_sha256 of every file it names (the ci clinical domain)."""
    from harp_lib.corpora.synth.generate import generate
    generate("ci", 0, tmp_path, domains=["clinical"], progress=False)
    files = json.loads((tmp_path / "manifest.json").read_text())["files"]
    assert files and all(hashing.file_sha256(tmp_path / k) == v for k, v in files.items())
