"""Hit rates against hand-computed values (see conftest for the crafted ground truth)."""
import pytest

from harp_lib.evaluate.hitrate import (HitRateError, gt_evidence, hit_rates, plan_hit_rate,
                                       retrieval_hit_rate_id, retrieval_hit_rate_overlap)
from harp_lib.core.schema import Evidence, EvidenceSet, Plan, PlanSet

from eval_fixtures import benchmark, item, prediction


def _q(domain, qid):
    b = benchmark(domain)
    return b, b.queries[qid]


def _ev(*items):
    return Evidence((EvidenceSet(1, "full recording", 0, 600, tuple(items)),))


def test_overlap_vs_identity_on_a_boundary_item():
    b, q = _q("emotion", "e_change")                       # GT: ep1_0003 [60,90], ep1_0004 [90,120]
    gt = gt_evidence(q, b.gt_by_id)
    ev = _ev(item("ep1_ext_0001", 85, 95), item("ep1_ext_0002", 200, 210))
    # [85,95] overlaps both GT segments by 5 s -> overlap rule: 2/2
    assert retrieval_hit_rate_overlap(gt, ev) == 1.0
    # identity: tie 5 s / 5 s -> the earlier GT segment (ep1_0003) only -> 1/2
    assert retrieval_hit_rate_id(gt, ev, all_gt=b.recording_segments("ep1")) == 0.5


def test_identity_follows_the_larger_overlap():
    b, q = _q("emotion", "e_change")
    gt = gt_evidence(q, b.gt_by_id)
    ev = _ev(item("ep1_ext_0001", 88, 118))                 # 2 s in 0003, 28 s in 0004
    assert retrieval_hit_rate_overlap(gt, ev) == 1.0
    assert retrieval_hit_rate_id(gt, ev, all_gt=b.recording_segments("ep1")) == 0.5


def test_touching_is_not_overlapping_and_oracle_ids_count_directly():
    b, q = _q("emotion", "e_change")
    gt = gt_evidence(q, b.gt_by_id)
    assert retrieval_hit_rate_overlap(gt, _ev(item("x", 120, 150), item("y", 30, 60))) == 0.0
    oracle = _ev(item("ep1_0003", 60, 90), item("ep1_0004", 90, 120))
    assert retrieval_hit_rate_id(gt, oracle, all_gt=b.recording_segments("ep1")) == 1.0
    assert retrieval_hit_rate_overlap(gt, oracle) == 1.0


def test_nothing_retrieved_is_zero_but_no_gt_evidence_is_none():
    b, q = _q("clinical", "c_rep")
    gt = gt_evidence(q, b.gt_by_id)
    assert retrieval_hit_rate_overlap(gt, Evidence()) == 0.0
    assert retrieval_hit_rate_id(gt, Evidence(), all_gt=b.recording_segments("c1")) == 0.0
    b, q = _q("clinical", "c_no")                           # no GT evidence at all
    p = prediction(q, "No", items=[item("c1_ext_0001", 0, 20)])
    assert hit_rates(q, p, b.gt_by_id, all_gt=b.recording_segments("c1")) == {
        "retrieval_hit_rate_id": None, "retrieval_hit_rate_overlap": None, "plan_hit_rate": None}


def test_unknown_gt_segment_id_is_an_error():
    b, q = _q("clinical", "c_rep")
    with pytest.raises(HitRateError, match="c1_9999"):
        gt_evidence(q.replace(gt_segment_ids=("c1_9999",)), b.gt_by_id)


def test_plan_hit_rate_locate_groups():
    b, q = _q("emotion", "e_locate")                        # groups {audio_emb}, {domain_emb}, {label}
    gt = gt_evidence(q, b.gt_by_id)                         # ep1_0004 [90,120]
    plan = Plan((PlanSet("around 1:40", domain_emb="E", label="Angry"),))   # window [70,130]
    # (time_cov 1 + 2 groups hit) / (1 + 3) = 0.75
    assert plan_hit_rate(q, plan, gt, all_gt=b.recording_segments("ep1"), duration=300) == 0.75
    far = Plan((PlanSet("around 4 min", audio_emb="A", domain_emb="E", label="Angry"),))  # [210,270]
    assert plan_hit_rate(q, far, gt, all_gt=b.recording_segments("ep1"), duration=300) == 0.75


def test_plan_hit_rate_state_groups_and_numeric_window():
    b, q = _q("emotion", "e_state")                         # groups {audio_emb}, {text_emb|keyword}
    gt = gt_evidence(q, b.gt_by_id)                         # ep1_0002 [30,60]
    both = Plan((PlanSet("around 0:45", audio_emb="A", keyword="happy"),))
    assert plan_hit_rate(q, both, gt, all_gt=b.recording_segments("ep1"), duration=300) == 1.0
    one = Plan((PlanSet("whenever", start=0, end=40, text_emb="joy"),))    # numeric window wins
    assert plan_hit_rate(q, one, gt, all_gt=b.recording_segments("ep1"), duration=300) == pytest.approx(2 / 3)
    bad = Plan((PlanSet("whenever", text_emb="joy"),))       # unreadable window covers nothing
    assert plan_hit_rate(q, bad, gt, all_gt=b.recording_segments("ep1"), duration=300) == pytest.approx(1 / 3)


def test_plan_hit_rate_song_position_uses_whole_gt_songs_without_off_by_one():
    b, q = _q("song", "s_pos")                              # songs 2 and 4 (1-based)
    gt = gt_evidence(q, b.gt_by_id)
    segs = b.recording_segments("m1")
    both = Plan((PlanSet("the 2nd song"), PlanSet("the 4th song")))
    assert plan_hit_rate(q, both, gt, all_gt=segs, duration=600) == 1.0
    assert plan_hit_rate(q, Plan((PlanSet("the second song"),)), gt, all_gt=segs, duration=600) == 0.5
    # the reference code's SONG_{position-1} would pick songs 1 and 3: zero coverage
    wrong = Plan((PlanSet("the 1st song"), PlanSet("the 3rd song")))
    assert plan_hit_rate(q, wrong, gt, all_gt=segs, duration=600) == 0.0


def test_plan_hit_rate_audio_group_and_oracle():
    b, q = _q("song", "s_audio")                            # group {audio_emb|domain_emb}
    gt = gt_evidence(q, b.gt_by_id)
    segs = b.recording_segments("m1")
    assert plan_hit_rate(q, Plan((PlanSet("full recording", audio_emb="A"),)), gt, all_gt=segs, duration=600) == 1.0
    assert plan_hit_rate(q, Plan((PlanSet("full recording"),)), gt, all_gt=segs, duration=600) == 0.5
    assert plan_hit_rate(q, Plan(oracle=True), gt, all_gt=segs) == 1.0


def test_hit_rates_bundle():
    b, q = _q("song", "s_time")                             # GT songs 1 and 3: m1_0001,2,5,6
    p = prediction(q, "A", items=[item("m1_ext_0001", 10, 70), item("m1_ext_0009", 310, 360)],
                   plan=Plan((PlanSet("at 1:00"), PlanSet("at 5:30"))))
    hr = hit_rates(q, p, b.gt_by_id, all_gt=b.recording_segments("m1"), duration=600)
    assert hr["retrieval_hit_rate_overlap"] == 0.5         # m1_0001 and m1_0005 hit
    assert hr["retrieval_hit_rate_id"] == 0.5
    # windows [30,90] and [300,360] cover m1_0001 [0,75], m1_0002 [75,150], m1_0005 [300,375]
    assert hr["plan_hit_rate"] == 0.75
