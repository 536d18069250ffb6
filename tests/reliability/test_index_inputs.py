"""Issue #28, class 10: corrupted index inputs fail with one clear error naming the file.

Before: complex vectors, all-zero int8 vectors and a segment at 9000-9999 s in a 21-s recording
were all indexed (``harp index`` exit 0); a truncated or structured ``.npy`` was a traceback.
"""
from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from harp_lib.app.cli import main
from harp_lib.retrieval.index import SegmentIndex
from harp_lib.retrieval.index_errors import IndexError_
from harp_lib.core.jsonl import write_jsonl
from harp_lib.core.schema import Recording, Segment

from rel_helpers import cheap_cfg  # noqa: F401


def _extract(tmp_path, mat=None, seg_end: float = 2.0):
    ext = tmp_path / "extract"
    segs = [Segment("r_ext_0000", "r", 0.0, 1.0, "S0", "hi", source="extracted"),
            Segment("r_ext_0001", "r", 1.0, seg_end, "S0", "there", source="extracted")]
    write_jsonl(ext / "segments" / "r.jsonl", segs)
    (ext / "spaces.json").write_text(json.dumps({"audio": {"backend": "audio_stats", "model": "m", "dim": 3}}))
    (ext / "vectors").mkdir()
    vf = ext / "vectors" / "r.audio.npy"
    np.save(vf, np.array([[1, 0, 0], [0, 1, 0]], np.float32) if mat is None else mat)
    return ext, vf


@pytest.mark.parametrize("mat,match", [
    (np.array([[1 + 1j, 0, 0], [0, 1j, 0]], np.complex64), r"complex vectors \(complex64\); expected real numbers"),
    (np.zeros((2, 3), np.int8), r"every one of its 2 vectors is zero \(int8\)"),
    (np.zeros((2, 3), np.float32), r"every one of its 2 vectors is zero \(float32\)"),
    (np.array([[np.nan, 0, 0], [0, 1, 0]], np.float32), r"vectors contain NaN or inf"),
    (np.zeros(2, dtype=[("a", "f4"), ("b", "f4"), ("c", "f4")]), r"structured \(record\) vectors"),
    (np.ones((2, 3), bool), r"boolean vectors"),
])
def test_corrupt_vectors_are_refused_naming_the_file(tmp_path, mat, match):
    ext, vf = _extract(tmp_path, mat)
    with pytest.raises(IndexError_, match=match) as e:
        SegmentIndex.build(ext, tmp_path / "index", progress=False)
    assert str(e.value).startswith(f"{vf}: ") and "harp extract --force" in str(e.value)
    assert not (tmp_path / "index").exists()


def test_int8_vectors_with_content_are_still_indexed(tmp_path):
    ext, _ = _extract(tmp_path, np.array([[3, 0, 0], [0, 5, 1]], np.int8))
    ix = SegmentIndex.build(ext, tmp_path / "index", progress=False)
    assert len(ix) == 2


def test_a_truncated_npy_is_refused_naming_the_file(tmp_path):
    ext, vf = _extract(tmp_path)
    vf.write_bytes(vf.read_bytes()[:-7])
    with pytest.raises(IndexError_, match=r"not a plain numeric \.npy array") as e:
        SegmentIndex.build(ext, tmp_path / "index", progress=False)
    assert str(e.value).startswith(f"{vf}: ")


def test_a_segment_past_the_recordings_end_is_refused(tmp_path):
    ext, _ = _extract(tmp_path, seg_end=9999.0)
    SegmentIndex.build(ext, None, progress=False)                  # without durations: not checkable
    with pytest.raises(IndexError_, match=r"r\.jsonl: segment r_ext_0001 at 1\.00-9999\.00 s lies outside its "
                                          r"recording \(0-21\.00 s\)"):
        SegmentIndex.build(ext, tmp_path / "index", progress=False, durations={"r": 21.0})
    ext2, _ = _extract(tmp_path / "ok", seg_end=21.3)              # within the 0.5 s tolerance
    assert len(SegmentIndex.build(ext2, None, progress=False, durations={"r": 21.0})) == 2


def test_harp_index_reads_durations_from_the_recordings_manifest(tmp_path, capsys):
    """The CLI: one line naming the file, exit 1 (a fault in the data, not a usage error)."""
    root = tmp_path / "root"
    ext, _ = _extract(tmp_path, seg_end=9999.0)
    shutil.copytree(ext, root / "extract" / "clinical")
    write_jsonl(root / "benchmark" / "clinical" / "recordings.jsonl",
                [Recording("r", "clinical", "audio/r.wav", 21.0)])
    paths = [f"paths.{k}={root / k}" for k in ("data", "benchmark", "extract", "index")]
    rc = main(["index", "--domain", "clinical", "--quiet", "--profile", "ci", *sum((["-S", p] for p in paths), [])])
    err = capsys.readouterr().err
    assert rc == 1, err
    assert "r.jsonl: segment r_ext_0001 at 1.00-9999.00 s lies outside its recording" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
