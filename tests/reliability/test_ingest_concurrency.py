"""Concurrent ``harp ingest`` into one collection (issue #28, class 1), with real processes.

Before: two files with one stem ingested at once both got the id ``dup`` and the manifest kept
one; three at once lost a recording, raised a raw KeyError (the other process's manifest had
replaced this one's) or listed a recording that was never extracted.  Now one ingest at a time
holds the collection's ``ingest`` lock (the others wait and say so), ids are unique, and a
recording enters ``recordings.jsonl`` only after its extraction and indexing are complete.
"""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from harp_lib.core import audio
from harp_lib.core.jsonl import read_jsonl
from harp_lib.core.schema import Recording

from rel_helpers import PY, ROOT, SR, speechlike

RUNNER = Path(__file__).with_name("stage_runner.py")


def _ingest(root: Path, *paths: Path) -> subprocess.Popen:
    return subprocess.Popen([PY, str(RUNNER), str(root), "--", "ingest", *map(str, paths), "--domain", "clinical",
                             "--quiet", "--json"], cwd=ROOT, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


@pytest.mark.slow
def test_three_concurrent_ingests_two_with_one_stem_keep_every_recording(tmp_path):
    srcs = []
    for i, folder in enumerate(("a", "b", "c")):
        name = "other.wav" if folder == "c" else "dup.wav"
        p = tmp_path / "in" / folder / name
        p.parent.mkdir(parents=True)
        audio.write(p, speechlike(4.0 + i, seed=i), SR)
        srcs.append(p)
    root = tmp_path / "root"
    procs = [_ingest(root, p) for p in srcs]
    outs = [p.communicate(timeout=900) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err[-3000:]
        assert "Traceback" not in err
    assert sum("in use by another harp ingest" in err for _, err in outs) >= 1   # they did overlap
    col = root / "data" / "user" / "default"
    recs = read_jsonl(col / "clinical" / "recordings.jsonl", Recording)
    assert sorted(r.id for r in recs) == ["dup", "dup_2", "other"]
    assert sorted(r.custom["source"] for r in recs) == sorted(map(str, srcs))
    for r in recs:                                    # every listed recording is extracted and in place
        assert r.audio_path == f"audio/{r.id}.wav" and (col / "clinical" / r.audio_path).is_file()
        assert (col / "extract" / "clinical" / "segments" / f"{r.id}.jsonl").is_file()
        assert abs(audio.probe(col / "clinical" / r.audio_path).duration - r.duration) < 0.01
    assert sorted(p.name for p in (col / "clinical").iterdir() if p.is_file()) == ["recordings.jsonl"]
    assert sorted(p.name for p in (col / "clinical" / "audio").iterdir()) == ["dup.wav", "dup_2.wav", "other.wav"]


def test_a_failed_ingest_leaves_the_manifest_as_it_was(tmp_path, monkeypatch):
    """A recording whose extraction fails (here: the extractor raises) never enters the manifest."""
    from harp_lib.ownaudio.collection import collection
    from harp_lib.ownaudio.ingest import ingest
    from harp_lib.extract import pipeline
    from rel_helpers import cheap_cfg
    cfg = cheap_cfg(tmp_path / "root")
    src = tmp_path / "one.wav"
    audio.write(src, speechlike(4.0), SR)
    ingest([src], "clinical", cfg=cfg, progress=False)
    col = collection(cfg)
    before = col.manifest("clinical").read_bytes()
    src2 = tmp_path / "two.wav"
    audio.write(src2, speechlike(5.0, seed=3), SR)

    def killed(*a, **k):
        raise KeyboardInterrupt
    monkeypatch.setattr(pipeline, "extract_recording", killed)
    try:
        ingest([src2], "clinical", cfg=cfg, progress=False)
    except KeyboardInterrupt:
        pass
    else:
        raise AssertionError("the interrupted ingest returned")
    assert col.manifest("clinical").read_bytes() == before
    assert sorted(p.name for p in (col.bench_dir("clinical") / "audio").iterdir()) == ["one.wav"]
    assert sorted(p.name for p in col.bench_dir("clinical").iterdir() if p.is_file()) == ["recordings.jsonl"]
