"""Ground-truth rules, checked against values computed by hand."""
import numpy as np
import pytest

from harp_lib.corpora.synth import rules
from harp_lib.corpora.synth.rules import Event, Utt
from harp_lib.core.timespan import localize


@pytest.mark.parametrize("delta,expected", [(0.081, "rising"), (0.08, None), (-0.2, "falling"),
                                            (0.03, "none"), (-0.029, "none"), (0.05, None)])
def test_trend_direction_thresholds(delta, expected):
    assert rules.trend_direction(delta, min_delta=0.08, flat_max=0.03) == expected


def test_half_means_weight_by_overlap():
    u = [Utt("a", "S", 0, 10, "Sad", (0.2, 0.1, 0.3)), Utt("b", "S", 10, 20, "Happy", (0.8, 0.9, 0.6)),
         Utt("c", "T", 0, 20, "Angry", (1.0, 0.0, 1.0))]          # other speakers are ignored
    h1, h2, d = rules.half_means(u, "S", "valence", 0, 20)
    assert (h1, h2) == (pytest.approx(0.1), pytest.approx(0.9)) and d == pytest.approx(0.8)
    h1, h2, d = rules.half_means(u, "S", "valence", 5, 25)       # halves 5-15 and 15-25
    assert h1 == pytest.approx((5 * 0.1 + 5 * 0.9) / 10) and h2 == pytest.approx(0.9)
    assert rules.half_means(u, "nobody", "valence", 0, 20) is None


def test_comparison_picks_largest_spread_and_respects_min_spread():
    u = [Utt("a", "X", 0, 5, "Happy", (0.70, 0.90, 0.6)), Utt("b", "Y", 5, 9, "Angry", (0.85, 0.1, 0.8))]
    assert rules.comparison(u, "X", "Y", 0, 10, min_spread=0.1) == ("valence", 0.9, 0.1, "A")
    close = [Utt("a", "X", 0, 5, "Neutral", (0.5, 0.5, 0.5)), Utt("b", "Y", 5, 9, "Neutral", (0.55, 0.45, 0.5))]
    assert rules.comparison(close, "X", "Y", 0, 10, min_spread=0.1) is None


@pytest.mark.parametrize("a,b,expected", [(3.0, 3.0, "tie"), (3.24, 3.0, "tie"), (3.25, 3.0, "A"),
                                          (2.0, 2.25, "B"), (4.5, 1.85, "A")])
def test_pairwise_tie_threshold(a, b, expected):
    assert rules.pairwise_winner(a, b, tie_delta=0.25) == expected


def test_events_break_on_emotion_change_and_long_gaps():
    u = [Utt("1", "A", 0, 3, "Happy", (.7, .8, .6)), Utt("2", "A", 4, 6, "Happy", (.7, .8, .6)),
         Utt("3", "A", 30, 33, "Happy", (.7, .8, .6)), Utt("4", "A", 34, 36, "Sad", (.2, .2, .3))]
    ev = rules.find_events(u, max_gap=10)
    assert [e.utt_ids for e in ev] == [("1", "2"), ("3",), ("4",)]
    assert ev[0].span == (0, 6)


def test_clusters_need_three_events_within_span_and_gap():
    mk = lambda spk, emo, ts: [Event(spk, emo, t, t + 4, (f"{spk}{t}",), "", (0.5, 0.5, 0.5)) for t in ts]  # noqa: E731
    ev = mk("A", "Sad", (0, 30, 60)) + mk("A", "Sad", (400, 430)) + mk("B", "Sad", (10, 20, 30)) \
        + mk("A", "Neutral", (100, 110, 120))
    cl = rules.find_clusters(ev, min_events=3, max_span=300, max_gap=60)
    assert [(c[0].speaker, c[0].emotion, [e.start for e in c]) for c in cl] == \
        [("A", "Sad", [0, 30, 60]), ("B", "Sad", [10, 20, 30])]
    # events too spread out for max_span
    assert rules.find_clusters(mk("A", "Sad", (0, 200, 400)), min_events=3, max_span=300) == []


def test_cluster_target_is_farthest_from_centroid():
    c = [Event("A", "Sad", 0, 1, (), "", (0.2, 0.2, 0.2)), Event("A", "Sad", 5, 6, (), "", (0.25, 0.2, 0.2)),
         Event("A", "Sad", 9, 10, (), "", (0.6, 0.1, 0.2))]
    assert rules.cluster_target(c).start == 9


def test_locate_window_holds_exactly_one_matching_event():
    ev = [Event("A", "Sad", 10, 15, ("1",), "", ()), Event("A", "Sad", 100, 110, ("2",), "", ()),
          Event("A", "Happy", 50, 55, ("3",), "", ()), Event("B", "Sad", 60, 62, ("4",), "", ())]
    assert rules.locate_window(ev[1], ev, 1000, max_side=150) == (15.0, 260.0)
    lo, hi = rules.locate_window(ev[0], ev, 1000, max_side=150)
    inside = [e for e in ev if e.speaker == "A" and e.emotion == "Sad" and e.start >= lo and e.end <= hi]
    assert inside == [ev[0]]


def test_pair_rounds_use_each_song_once_per_round_and_never_repeat():
    pairs = rules.pair_rounds(8, 20, np.random.default_rng(1))
    assert len(pairs) == 20
    assert len({tuple(sorted(p)) for p in pairs}) == 20
    first_round = pairs[:4]
    assert sorted(i for p in first_round for i in p) == list(range(8))
    assert len(rules.pair_rounds(4, 100, np.random.default_rng(0))) == 6   # only 6 distinct pairs exist


@pytest.mark.parametrize("t", [0, 14, 29, 44, 61, 95, 208, 1234.5, 2700])
def test_time_phrase_is_said_once_and_localizes_near_t(t):
    p = rules.time_phrase(t)
    assert "around around" not in p and p.count("around") <= 1
    span = localize(p)
    assert span.start - 15 <= t <= span.end + 15


def test_stable_int_is_not_process_hash():
    import hashlib
    assert rules.stable_int("track_01") == int(hashlib.sha256(b"track_01").hexdigest()[:8], 16) == 0xE60C46C7
    assert rules.stable_int("a") != rules.stable_int("b")
