import hashlib

import pytest

from harp_lib.core import audio
from harp_lib.corpora.datasets import load_corpus
from harp_lib.corpora.datasets.common import SourceError
from harp_lib.corpora.datasets.songeval import SongEvalSource, pair_songs, prepare_song
from harp_lib.core.jsonl import read_jsonl
from harp_lib.core.schema import Query, Segment

from datasets_fixtures import SONG_PARAMS


def test_filters_language_and_duration(song_src):
    songs = SongEvalSource(song_src, SONG_PARAMS).songs()
    names = [s.file_name for s in songs]
    assert len(songs) == 6 and "mp3/song_06.wav" not in names and "mp3/song_07.wav" not in names
    assert "mp3/song_00.mp3" in names                       # mp3 decoded through ffmpeg
    s0 = next(s for s in songs if s.file_name == "mp3/song_00.mp3")
    assert s0.overall == pytest.approx(4.6, abs=1e-6)       # mean of offsets -0.2, 0, .1, .1 is 0


def test_medley_layout_and_ground_truth(song_out):
    out, counts = song_out
    corpus = load_corpus(out, "song")
    assert counts["recordings"] == 1 and counts["segments"] == 6
    (rec,) = corpus.recordings
    info = audio.probe(out / rec.audio_path)
    assert info.sample_rate == 16000 and info.duration == pytest.approx(6 * 7 - 5 * 1.0, abs=0.01)
    segs = sorted(corpus.segments, key=lambda s: s.start)
    assert [s.speaker for s in segs] == [f"SONG_{k:02d}" for k in range(1, 7)]
    for a, b in zip(segs, segs[1:]):
        assert a.end - b.start == pytest.approx(1.0, abs=1e-3)   # consecutive songs share the crossfade
    assert all(s.labels["primary"] in ("High", "Mid", "Low") for s in segs)


def test_queries_pairs_ties_and_references(song_out):
    out, _ = song_out
    qs = read_jsonl(out / "queries.jsonl", Query)
    segs = {s.id: s for s in read_jsonl(out / "segments.jsonl", Segment)}
    assert sorted(q.query_type for q in qs) == ["audio", "position", "time"]
    used = [i for q in qs for i in (q.judge_info["song_a"], q.judge_info["song_b"])]
    assert len(set(used)) == 6                                # every song used once
    for q in qs:
        a, b = (segs[g] for g in q.gt_segment_ids)
        delta = a.labels["overall"] - b.labels["overall"]
        want = "tie" if abs(delta) < 0.25 else ("A" if delta > 0 else "B")
        assert q.ground_truth["winner"] == want and q.ground_truth["delta"] == pytest.approx(delta, abs=1e-3)
        assert "at around around" not in q.text
        if q.query_type == "audio":
            for role in "AB":
                clip = audio.probe(out / q.references[role])
                assert clip.duration == pytest.approx(1.0, abs=0.01)
            sa = segs[q.gt_segment_ids[0]]
            assert sa.start + 1.0 <= sa.custom["snippet_start"] and sa.custom["snippet_end"] <= sa.end - 1.0
        if q.query_type == "time":
            assert a.start + 1.0 <= q.time_ref <= a.end - 1.0


def test_deterministic_and_source_untouched(song_src, song_out, tmp_path):
    before = hashlib.sha256((song_src / "metadata.jsonl").read_bytes()).hexdigest()
    prepare_song(song_src, tmp_path / "song", SONG_PARAMS, progress=False)
    out, _ = song_out
    assert (tmp_path / "song/queries.jsonl").read_bytes() == (out / "queries.jsonl").read_bytes()
    assert hashlib.sha256((song_src / "metadata.jsonl").read_bytes()).hexdigest() == before


def test_pairing_is_seeded_by_track_name_not_hash():
    p = SONG_PARAMS
    assert pair_songs("track_01", 6, p) == pair_songs("track_01", 6, p)
    assert pair_songs("track_01", 20, p.__class__(seed=1)) != pair_songs("track_01", 20, p.__class__(seed=2))


def test_missing_languages_file_is_explained(song_src, tmp_path):
    import shutil
    src = tmp_path / "raw"
    shutil.copytree(song_src, src)
    (src / "languages.jsonl").unlink()
    with pytest.raises(SourceError, match="languages.jsonl.*detect-language"):
        prepare_song(src, tmp_path / "out", SONG_PARAMS, progress=False)
