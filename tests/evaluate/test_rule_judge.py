"""The rule judge on crafted right / wrong / unfaithful answers for every query type.

Expected verdicts are (answer, factual, faithful); rationale must equal factual AND faithful.
Ground truth: see eval_fixtures.py (tolerance: evaluate.locate_tolerance_sec = 3 s).
"""
import pytest

from harp_lib.evaluate.judge import make_judge
from harp_lib.evaluate.rule_judge import RuleJudge

from eval_fixtures import benchmark, item, judge_input, prediction

J = RuleJudge(locate_tolerance_sec=3.0, citation_rounding_sec=0.5)

HAPPY_ITEM = item("ep1_ext_0002", 32, 58, "SPEAKER_01", "so glad", primary="Happy")
VAL_ITEMS = [item("ep1_ext_0003", 62, 88, primary="Neutral", valence=0.3),
             item("ep1_ext_0004", 92, 118, primary="Angry", valence=0.6)]
AROUSAL_ITEMS = [item("ep1_ext_0005", 120, 150, "SPEAKER_00", arousal=0.3),
                 item("ep1_ext_0006", 150, 180, "SPEAKER_01", arousal=0.7)]
SONG_ITEMS = [item("m1_ext_0001", 0, 75, "SONG_01", primary="High"),
              item("m1_ext_0005", 300, 375, "SONG_03", primary="Mid")]
SONG_POS_ITEMS = [item("m1_ext_0003", 150, 225, "SONG_02", primary="Low"),
                  item("m1_ext_0007", 450, 525, "SONG_04", primary="High")]

CASES = {
    # ---- state (GT Happy)
    "state/right": ("e_state", "Happy", "[32.0s–58.0s] SPEAKER_01 primary=Happy", [HAPPY_ITEM], (1, 1, 1)),
    "state/synonym": ("e_state", "She sounds cheerful", "[32.0s–58.0s] primary=Happy", [HAPPY_ITEM], (1, 1, 1)),
    "state/wrong": ("e_state", "Sad", "[32.0s–58.0s] primary=Sad",
                    [item("x", 32, 58, primary="Sad")], (0, 0, 1)),
    "state/negated": ("e_state", "Not happy; angry", "[32.0s–58.0s] primary=Angry",
                      [item("x", 32, 58, primary="Angry")], (0, 0, 1)),
    "state/unfaithful-label": ("e_state", "Happy", "[32.0s–58.0s] primary=Happy",
                               [item("x", 32, 58, primary="Neutral")], (1, 1, 0)),
    # ---- change (GT rising)
    "change/right": ("e_change", "rising", "valence goes from 0.30 [62.0s–88.0s] to 0.60 [92.0s–118.0s]",
                     VAL_ITEMS, (1, 1, 1)),
    "change/synonym": ("e_change", "It increased", "[62.0s–88.0s] V=0.30, [92.0s–118.0s] V=0.60", VAL_ITEMS, (1, 1, 1)),
    "change/wrong": ("e_change", "falling", "[62.0s–88.0s] then [92.0s–118.0s]", VAL_ITEMS, (0, 0, 1)),
    "change/unfaithful-time": ("e_change", "rising", "valence peaks at [130.0s–140.0s]", VAL_ITEMS, (1, 1, 0)),
    # ---- comparison (GT B)
    "comparison/right": ("e_comp", "B", "Speaker B has higher arousal: [150.0s–180.0s] SPEAKER_01 A=0.70 vs "
                         "[120.0s–150.0s] SPEAKER_00 A=0.30", AROUSAL_ITEMS, (1, 1, 1)),
    "comparison/set-number": ("e_comp", "Set 2 (speaker B)", "[150.0s–180.0s] A=0.70", AROUSAL_ITEMS, (1, 1, 1)),
    "comparison/wrong": ("e_comp", "Speaker A", "[120.0s–150.0s] A=0.30", AROUSAL_ITEMS, (0, 0, 1)),
    "comparison/unfaithful-speaker": ("e_comp", "B", "SPEAKER_07 shouts at [150.0s–180.0s]", AROUSAL_ITEMS, (1, 1, 0)),
    # ---- locate (GT 100-104 s Angry, accept [97, 107])
    "locate/right": ("e_locate", "1:42 (Angry)", "[98.0s–106.0s] primary=Angry",
                     [item("x", 98, 106, primary="Angry")], (1, 1, 1)),
    "locate/edge-of-tolerance": ("e_locate", "107 s, angry", "[98.0s–108.0s] primary=Angry",
                                 [item("x", 98, 108, primary="Angry")], (1, 1, 1)),
    "locate/wrong-time": ("e_locate", "1:50 (Angry)", "[108.0s–115.0s] primary=Angry",
                          [item("x", 108, 115, primary="Angry")], (0, 0, 1)),
    "locate/wrong-emotion": ("e_locate", "1:42 (Happy)", "[98.0s–106.0s] primary=Happy",
                             [item("x", 98, 106, primary="Happy")], (0, 0, 1)),
    "locate/unfaithful-time": ("e_locate", "1:42 (Angry)", "the speaker shouts at 1:42",
                               [item("x", 60, 70, primary="Neutral")], (1, 1, 0)),
    # ---- locate_hard (GT 200-205 s Sad, accept [197, 208])
    "locate_hard/right": ("e_locate_hard", "3:22 Sad", "[198.0s–206.0s] primary=Sad",
                          [item("x", 198, 206, primary="Sad")], (1, 1, 1)),
    "locate_hard/wrong": ("e_locate_hard", "2:30 Sad", "[145.0s–155.0s] primary=Sad",
                          [item("x", 145, 155, primary="Sad")], (0, 0, 1)),
    "locate_hard/unfaithful-label": ("e_locate_hard", "3:22 Sad", "[198.0s–206.0s] primary=Sad",
                                     [item("x", 198, 206, primary="Neutral")], (1, 1, 0)),
    # ---- reported (GT Yes)
    "reported/right": ("c_rep", "Yes", '[20.0s–40.0s] the patient says "I have had a bad cough"',
                       [item("c", 20, 40, text="I have had a bad cough")], (1, 1, 1)),
    "reported/wrong": ("c_rep", "No", "none of [0.0s–20.0s] mentions a symptom", [item("c", 0, 20)], (0, 0, 1)),
    "reported/unfaithful-time": ("c_rep", "Yes", "she mentions a cough at [90.0s–100.0s]",
                                 [item("c", 20, 40)], (1, 1, 0)),
    # ---- exhibited (GT Yes; GT 2 coughs in 40-60 s, none in 0-20 s)
    "exhibited/right": ("c_exh", "Yes", "[40.0s–60.0s] cough_count=2",
                        [item("c", 40, 60, primary="2 cough", cough_count=2)], (1, 1, 1)),
    "exhibited/wrong": ("c_exh", "No", "[0.0s–20.0s] no cough",
                        [item("c", 0, 20, primary="no cough", cough_count=0)], (0, 0, 1)),
    "exhibited/unfaithful-label": ("c_exh", "Yes", "[40.0s–60.0s] 2 coughs",
                                   [item("c", 40, 60, primary="no cough", cough_count=0)], (1, 1, 0)),
    "exhibited/counterfactual-label": ("c_exh", "Yes", "[0.0s–20.0s] 1 cough",
                                       [item("c", 0, 20, primary="1 cough", cough_count=1)], (1, 0, 1)),
    # ---- time (GT A)
    "time/right": ("s_time", "A", "Set 1 [0.0s–75.0s] SONG_01 primary=High beats [300.0s–375.0s] SONG_03 primary=Mid",
                   SONG_ITEMS, (1, 1, 1)),
    "time/wrong": ("s_time", "B", "[300.0s–375.0s] SONG_03", SONG_ITEMS, (0, 0, 1)),
    "time/unfaithful-speaker": ("s_time", "A", "SONG_02 is weaker", SONG_ITEMS, (1, 1, 0)),
    # ---- position (GT B)
    "position/right": ("s_pos", "Set 2 is better", "[450.0s–525.0s] SONG_04 primary=High vs [150.0s–225.0s] primary=Low",
                       SONG_POS_ITEMS, (1, 1, 1)),
    "position/wrong": ("s_pos", "The first song", "[150.0s–225.0s] SONG_02", SONG_POS_ITEMS, (0, 0, 1)),
    "position/counterfactual-label": ("s_pos", "B", "[150.0s–225.0s] primary=High",
                                      [item("m", 150, 225, "SONG_02", primary="High")], (1, 0, 1)),
    "position/unfaithful-time": ("s_pos", "B", "the chorus at [500.0s–520.0s] is better", SONG_POS_ITEMS[:1], (1, 1, 0)),
    # ---- audio (GT tie)
    "audio/right": ("s_audio", "tie", "[0.0s–75.0s] and [450.0s–525.0s] score alike",
                    [item("m", 0, 75), item("m2", 450, 525)], (1, 1, 1)),
    "audio/hedged": ("s_audio", "A, but only marginally better", "[0.0s–75.0s]", [item("m", 0, 75)], (1, 1, 1)),
    "audio/wrong": ("s_audio", "A", "[0.0s–75.0s]", [item("m", 0, 75)], (0, 0, 1)),
    "audio/unfaithful-time": ("s_audio", "tie", "both peak near [300.0s–310.0s]", [item("m", 0, 75)], (1, 1, 0)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_rule_judge_cases(case):
    qid, answer, rationale, items, (a, f, fa) = CASES[case]
    dom = {"e": "emotion", "c": "clinical", "s": "song"}[qid[0]]
    q = benchmark(dom).queries[qid]
    j = J.judge(judge_input(prediction(q, answer, rationale, items, setup="A3")))
    assert (j.answer, j.factual, j.faithful) == (a, f, fa), j.reasons
    assert j.rationale == int(f and fa)
    assert j.judge == "rule" and j.model_id == "rule-judge/1" and len(j.prompt_hash) == 12


def test_every_query_type_has_right_wrong_and_unfaithful_cases():
    from harp_lib.core.schema import QUERY_TYPES
    for t in QUERY_TYPES:
        kinds = {k.split("/")[1].split("-")[0] for k in CASES if k.split("/")[0] == t}
        assert {"right", "wrong", "unfaithful"} <= kinds, t


def test_audio_only_setup_skips_faithful():
    q = benchmark("emotion").queries["e_change"]
    p = prediction(q, "rising", "valence peaks at [130.0s–140.0s]", VAL_ITEMS, setup="A4")
    j = J.judge(judge_input(p))
    assert (j.answer, j.factual, j.faithful, j.rationale) == (1, 1, 1, 1)
    assert "skip_faithful" in j.reasons["faithful"]
    # the same text under a metadata setup is unfaithful
    assert J.judge(judge_input(p.replace(setup="A3"))).rationale == 0


def test_rationale_in_answer_string_and_missing_rationale():
    q = benchmark("emotion").queries["e_state"]
    j = J.judge(judge_input(prediction(q, "Happy. Rationale: [32.0s–58.0s] primary=Happy", "", [HAPPY_ITEM])))
    assert (j.answer, j.factual, j.faithful) == (1, 1, 1)
    j = J.judge(judge_input(prediction(q, "Happy", "", [HAPPY_ITEM])))
    assert j.answer == 1 and j.factual == 0 and j.rationale == 0 and "no rationale" in j.reasons["factual"]


def test_time_after_the_end_is_a_factual_error():
    q = benchmark("clinical").queries["c_rep"]                 # recording is 120 s long
    j = J.judge(judge_input(prediction(q, "Yes", "she mentions it at [130.0s–140.0s]",
                                       [item("c", 130, 140)])))
    assert j.factual == 0 and "after the end" in j.reasons["factual"]


def test_audio_clip_window_grounds_times():
    q = benchmark("emotion").queries["e_locate"]
    p = prediction(q, "1:42 (Angry)", "heard in the clip at 1:42", [item("x", 60, 70)], setup="A5",
                   clip=(60.0, 120.0))
    assert J.judge(judge_input(p)).faithful == 1


def test_make_judge_uses_the_one_tolerance_from_params():
    j = make_judge("rule")
    assert j.tol == 3.0
    q = benchmark("emotion").queries["e_locate"]
    p = prediction(q, "1:48 (Angry)", "[108.0s–109.0s] primary=Angry", [item("x", 108, 109, primary="Angry")])
    assert j.judge(judge_input(p)).answer == 0                 # 108 s > 104 + 3
    wide = RuleJudge(locate_tolerance_sec=5.0)
    assert wide.judge(judge_input(p)).answer == 1
