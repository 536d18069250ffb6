import math

import pytest

from harp_lib.core.schema import Recording, Segment
from harp_lib.core.timespan import LocalizeError, Span, format_time, localize, song_spans

SONGS = [Span(0, 150), Span(147, 330), Span(327, 500), Span(497, 700)]

# (phrase, kwargs, expected (start, end)); window ±30 s unless stated
CASES = [
    ("around 3 minutes", {}, (150, 210)),
    ("around 3 and a half minutes", {}, (180, 240)),
    ("around three and a half minutes", {}, (180, 240)),
    ("Around 3.5 min", {}, (180, 240)),
    ("at 45 s", {}, (15, 75)),
    ("at 10 seconds", {}, (0, 40)),                    # clamped at 0
    ("~3 min", {}, (150, 210)),
    ("minute 3", {}, (150, 210)),
    ("around twenty-one minutes", {}, (1230, 1290)),
    ("around half a minute", {}, (0, 60)),
    ("12:30 to 15:00", {}, (750, 900)),
    ("12:30-15:00", {}, (750, 900)),
    ("from 1:02:03 to 1:05:00", {}, (3723, 3900)),
    ("at 12:30", {}, (720, 780)),
    ("from 40 to 95 seconds", {}, (40, 95)),
    ("40 to 95 sec", {}, (40, 95)),
    ("between 2 and 4 minutes", {}, (120, 240)),
    ("2 to 4 min", {}, (120, 240)),
    ("40-95 s", {}, (40, 95)),
    ("from 1 min to 90 sec", {}, (60, 90)),
    ("from 120 to 180", {}, (120, 180)),
    ("[40, 95]", {}, (40, 95)),
    ("3 min 20 sec", {}, (170, 230)),
    ("3 minutes and 20 seconds", {}, (170, 230)),
    ("from 2 min 10 sec to 3 min 5 sec", {}, (130, 185)),
    ("from 2 min 10 s to 3 min", {}, (130, 180)),
    ("first 2 minutes", {}, (0, 120)),
    ("the last 5 minutes", {"recording": 1800}, (1500, 1800)),
    ("full recording", {"recording": 1800}, (0, 1800)),
    ("the full track", {"recording": 4500.5}, (0, 4500.5)),
    ("whole track", {}, (0, math.inf)),
    ("entire recording", {"recording": 60}, (0, 60)),
    ("all sections", {"recording": 60}, (0, 60)),
    ("the 2nd song", {"songs": SONGS}, (147, 330)),
    ("the 16th song", {"songs": {16: Span(3000, 3200)}}, (3000, 3200)),
    ("song 3", {"songs": SONGS}, (327, 500)),
    ("the fourth song", {"songs": SONGS}, (497, 700)),
    ("the last song", {"songs": SONGS}, (497, 700)),
    ("around 59 minutes", {"recording": 3560}, (3510, 3560)),  # clamped at the end
    ("around 1 min", {"point_window": 10}, (50, 70)),
]


@pytest.mark.parametrize("phrase,kw,expected", CASES, ids=[c[0] for c in CASES])
def test_localize_forms(phrase, kw, expected):
    assert localize(phrase, **kw) == Span(*expected)


BAD = [
    ("", "empty"),
    ("   ", "empty"),
    ("sometime later", "cannot read a time window"),
    ("when they were sad", "cannot read a time window"),
    ("the 7th song", "song 7 does not exist"),
    ("the 2nd song", "no song boundaries"),                        # no songs given
    ("the last 5 minutes", "without the recording duration"),
    ("at 12:75", "invalid clock time"),
    ("around 90 minutes", "after the end of the recording"),       # with recording 1800 s
    ("from 5 to 5 seconds", "empty window"),
]


@pytest.mark.parametrize("phrase,msg", BAD, ids=[b[0] or "<empty>" for b in BAD])
def test_localize_errors_are_clear(phrase, msg):
    kw = {"songs": SONGS} if "7th" in phrase else {}
    if "90 minutes" in phrase:
        kw = {"recording": 1800}
    with pytest.raises(LocalizeError, match=msg):
        localize(phrase, **kw)


def test_localize_accepts_recording_record():
    rec = Recording("r", "emotion", "r.wav", 600)
    assert localize("full recording", rec) == Span(0, 600)


def test_song_spans_merge_chunks_into_whole_song():
    segs = [Segment(f"s{i}", "t", 15 * i, 15 * (i + 1), "SONG_01" if i < 10 else "SONG_02") for i in range(14)]
    spans = song_spans(segs)
    assert spans == {1: Span(0, 150), 2: Span(150, 210)}
    # the paper's bug returned the first 15 s chunk; we return the whole song
    assert localize("the first song", songs=spans) == Span(0, 150)


def test_span_algebra():
    a, b = Span(0, 10), Span(5, 20)
    assert a & b == Span(5, 10)
    assert a & Span(10, 12) is None            # touching: no overlap
    assert not a.overlaps(Span(10, 12)) and a.overlaps(b)
    assert a | b == Span(0, 20)
    assert 5 in a and Span(2, 3) in a and Span(2, 30) not in a
    assert a.overlap(b) == 5 and a.overlap(Span(30, 40)) == 0
    assert a.iou(b) == pytest.approx(0.25)
    assert Span(5, 10).pad(10) == Span(0, 20)
    assert Span(50, 70).clip(0, 60) == Span(50, 60)
    assert sorted([Span(3, 4), Span(1, 9), Span(1, 2)]) == [Span(1, 2), Span(1, 9), Span(3, 4)]
    assert Span(0.1 + 0.2, 1) == Span(0.3, 1)
    with pytest.raises(ValueError):
        Span(3, 2)
    with pytest.raises(ValueError):
        Span(float("nan"), 2)
    assert format_time(3723) == "1:02:03" and str(Span(750, 900)) == "12:30–15:00"


@pytest.mark.slow
def test_doctests():
    import doctest

    import harp_lib.core.audio
    import harp_lib.config
    import harp_lib.config.loading
    import harp_lib.config.registry
    import harp_lib.config.setups
    import harp_lib.config.validate
    import harp_lib.core.jsonl
    import harp_lib.core.record
    import harp_lib.core.schema
    import harp_lib.core.timespan
    import harp_lib.retrieval.index
    import harp_lib.core.labels
    for mod in (harp_lib.core.schema, harp_lib.core.record, harp_lib.core.jsonl, harp_lib.core.timespan, harp_lib.core.audio, harp_lib.config, harp_lib.config.setups,
                harp_lib.config.validate, harp_lib.config.loading, harp_lib.config.registry, harp_lib.core.labels,
                harp_lib.retrieval.index):
        res = doctest.testmod(mod, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
        assert res.failed == 0, mod.__name__


def test_record_bounds_are_checked_once_in_timespan():
    from harp_lib.core.schema import EvidenceItem, Segment
    from harp_lib.core.timespan import BoundsError, check_bounds
    assert check_bounds(None, 2.0004, "plan set window") == (None, 2.0)
    for s, e, field, msg in [(5, 4, "end", "segment a ends (4.0) before it starts (5.0)"),
                             (-1, 4, "start", "segment a starts before 0 s (-1.0)"),
                             (0, float("inf"), "end", "end must be a finite number of seconds, got inf"),
                             (True, 4, "start", "start must be a finite number of seconds, got True")]:
        with pytest.raises(BoundsError) as err:
            check_bounds(s, e, "segment a")
        assert (err.value.field, str(err.value)) == (field, msg)
    assert Span(-1, float("inf")).duration == float("inf")      # a Span itself is laxer
    seg, item = Segment("a", "r", 1.0004, 3), EvidenceItem("a", 1, 3.0004)
    assert (seg.span, item.span) == (Span(1, 3), Span(1, 3))
    assert "span" not in seg.to_dict() and "span" not in item.to_dict()
