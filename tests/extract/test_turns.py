"""Chunk / merge rules (paper §2.1) on hand-built turns."""
import pytest

from harp_lib.extract.turns import Turn, chunk_turns, merge_short_turns, relabel_by_first_appearance, segment_turns


def test_chunk_equal_parts_keep_speaker():
    out = chunk_turns([Turn(10.0, 55.0, "SPEAKER_01")], 20.0)
    assert [(t.start, t.end) for t in out] == [(10.0, 25.0), (25.0, 40.0), (40.0, 55.0)]
    assert {t.speaker for t in out} == {"SPEAKER_01"}
    assert chunk_turns([Turn(0, 15.0, "A")], 15.0) == [Turn(0, 15.0, "A")]   # exactly max: untouched


def test_short_turn_absorbed_into_previous_keeps_previous_speaker_and_bridges_gap():
    out = merge_short_turns([Turn(0, 5, "A"), Turn(6, 6.5, "B"), Turn(7, 12, "B")], 1.0)
    assert out == [Turn(0, 6.5, "A"), Turn(7, 12, "B")]


def test_short_first_turn_merged_forward():
    assert merge_short_turns([Turn(0, 0.5, "A"), Turn(0.7, 4, "B")], 1.0) == [Turn(0, 4, "B")]


def test_lone_short_turn_dropped_and_repeat_until_stable():
    assert merge_short_turns([Turn(3, 3.4, "A")], 1.0) == []
    # two short turns in a row are both absorbed
    assert merge_short_turns([Turn(0, 2, "A"), Turn(2, 2.3, "B"), Turn(2.3, 2.6, "C")], 1.0) == [Turn(0, 2.6, "A")]


def test_song_chunks_keep_tag_and_song_span_recoverable():
    from harp_lib.core.schema import Segment
    from harp_lib.core.timespan import song_spans
    turns = segment_turns([Turn(0, 100, "SONG_01"), Turn(100, 190, "SONG_02")], 15.0)
    assert all(t.duration <= 15.0 + 1e-6 for t in turns)
    segs = [Segment(f"x{i}", "m", t.start, t.end, t.speaker) for i, t in enumerate(turns)]
    spans = song_spans(segs)
    assert (spans[1].start, spans[1].end, spans[2].start, spans[2].end) == (0, 100, 100, 190)


def test_relabel_first_appearance():
    out = relabel_by_first_appearance([Turn(5, 6, "3"), Turn(0, 1, "7")])
    assert [t.speaker for t in out] == ["SPEAKER_00", "SPEAKER_01"] and out[0].start == 0


def test_turn_rejects_reversed():
    with pytest.raises(ValueError):
        Turn(2, 1, "A")
