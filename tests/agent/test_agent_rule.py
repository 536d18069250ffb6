"""Rule planner on every query template, oracle planner, rule answerer, runner over seven setups."""
import json

import pytest

from agent_helpers import FakeEmotionLabeler, emotion_queries
from harp_lib.agent.answerer import RuleAnswerer, split_rationale
from harp_lib.agent.context import QueryContext, agent_params
from harp_lib.agent.oracle import OraclePlanner
from harp_lib.agent.planner import RulePlanner
from harp_lib.retrieval.references import Hearing
from harp_lib.agent.runner import Agent, answer_query, run_setup
from harp_lib.retrieval.tools import QueryEncoder, resolve_window
from harp_lib.config import SETUPS, load_config
from harp_lib.core.jsonl import read_jsonl
from harp_lib.core.schema import Evidence, EvidenceItem, EvidenceSet, Plan, Prediction, Query, Recording, Segment

#: Query templates of the benchmark (synth generator + paper §4), one per type and form.
TEMPLATES = [
    ("emotion", "state", 'Speaker: [audio example]. Around 3 and a half minutes, this speaker was talking about '
                         'the garden and mentioned "we planted tomatoes". Which emotion did they show?', "A"),
    ("emotion", "state", 'Speaker: [audio example]. In the first minute, this speaker was talking about '
                         'pizza and mentioned "pizza night". Which emotion did they show?', "A"),
    ("emotion", "change", "Speaker: [audio example]. From 40 to 90.5 seconds, how did this speaker's valence "
                          "change while discussing holiday plans?", "A"),
    ("emotion", "comparison", "Speaker A: [A's audio example]. Speaker B: [B's audio example]. From 0 to 60 "
                              "seconds, discussing gardening, which speaker had higher arousal, A or B?", "AB"),
    ("emotion", "locate", "Speaker: [speaker example]. Emotion: [emotion example]. From 30 to 90 seconds, when "
                          "did this speaker show the same emotion as the clip, and what were they saying?", "AE"),
    ("emotion", "locate_hard", "Emotion: [audio example]. From 55 to 90 seconds, when did someone show the "
                               "same emotion as the clip, and what were they saying?", "E"),
    ("clinical", "reported", "Did the patient report any respiratory symptoms during the consultation?", ""),
    ("clinical", "exhibited", "Were respiratory symptoms exhibited during the consultation?", ""),
    ("song", "time", "Compare the two songs at around 1 minute and around 3 minutes. Which has better "
                     "overall aesthetics?", ""),
    ("song", "position", "Compare the 2nd and 3rd songs in this medley. Which has better overall aesthetics?", ""),
    ("song", "audio", "Song A: [A's audio example]. Song B: [B's audio example]. Both clips come from this "
                      "medley. Which song has better overall aesthetics?", "AB"),
]


class _Ix:
    """Minimal index stand-in for planning (songs of 60 s)."""
    spaces = {}

    def segments(self, rid):
        return [Segment(f"t_ext_{i:04d}", rid, 60 * i, 60 * (i + 1), f"SONG_{i + 1:02d}") for i in range(5)]


def _plan_ctx(domain, qt, text, roles, setup, labelers=()):
    q = Query("q", domain, "t", qt, text, {}, references={r: f"references/{r}.wav" for r in roles})
    return QueryContext(q, Recording("t", domain, "t.wav", 300.0), SETUPS[setup], _Ix(), agent_params(None),
                        hearing=Hearing(domain, labelers=list(labelers)))


@pytest.mark.parametrize("domain,qt,text,roles", TEMPLATES, ids=[f"{t[1]}-{i}" for i, t in enumerate(TEMPLATES)])
@pytest.mark.parametrize("setup", ["A1", "A2", "A3"])
def test_rule_planner_on_every_template(domain, qt, text, roles, setup):
    ctx = _plan_ctx(domain, qt, text, roles, setup)
    plan, meta = RulePlanner().plan(ctx)
    assert meta["planner"] == "rule" and plan.sets
    tools = set(SETUPS[setup].tools)
    for ps in plan.sets:
        assert set(ps.tools_used()) <= tools
        resolve_window(ps, 300.0, ctx.songs)                       # every window resolves
    assert not any("fell back" in e for e in plan.errors), plan.errors
    used = {t for ps in plan.sets for t in ps.tools_used()}
    assert used, f"{setup} {qt}: plan calls no tool"
    if qt in ("comparison", "time", "position") or (qt == "audio" and setup != "A1"):
        assert len(plan.sets) == 2                                  # Set 1 = A, Set 2 = B
    if qt == "comparison" and setup != "A1":
        assert [ps.audio_emb for ps in plan.sets] == ["A", "B"]
    if qt == "position":
        assert [ps.localize for ps in plan.sets] == ["the 2nd song", "the 3rd song"]
        assert resolve_window(plan.sets[1], 300.0, ctx.songs).to_tuple() == (120.0, 180.0)
    if qt == "state":
        if "keyword" in tools:
            assert plan.sets[0].keyword in ("tomatoes", "pizza", "planted", "night")
        if "text_emb" in tools:
            assert plan.sets[0].text_emb and plan.sets[0].audio_emb == "A"
    if qt == "change" and "time" in tools:
        assert plan.sets[0].time and resolve_window(plan.sets[0], 300.0).to_tuple() == (40.0, 90.5)
    if qt == "exhibited" and "label" in tools:
        assert [ps.label for ps in plan.sets] == ["1 cough", "2 cough", "3 cough"]
    if qt == "reported" and "keyword" in tools:
        assert plan.sets[0].keyword == "cough"


def test_rule_planner_labels_the_emotion_reference_clip(emotion_bench):
    q = emotion_queries()[3]
    ctx = QueryContext(q, emotion_bench["rec"], SETUPS["A3"], emotion_bench["index"], agent_params(None),
                       bench_dir=emotion_bench["root"], hearing=Hearing("emotion", labelers=[FakeEmotionLabeler()]))
    plan, _ = RulePlanner().plan(ctx)
    ps = plan.sets[0]
    assert ps.label == "Happy" and ps.domain_emb == "E" and ps.audio_emb == "A"     # 440 Hz clip -> Happy
    assert resolve_window(ps, 90.0).to_tuple() == (30.0, 90.0)


# ------------------------------------------------------------------------------- oracle
def test_oracle_plans_cover_the_ground_truth(emotion_bench):
    gt = emotion_bench["gt"]
    op = OraclePlanner()
    for q in emotion_queries():
        plan, errs = op.plan_for(q, gt, 90.0)
        assert plan.oracle and not errs and all(ps.time and ps.start is not None for ps in plan.sets)
        spans = [(ps.start, ps.end) for ps in plan.sets]
        for sid in q.gt_segment_ids:
            g = next(s for s in gt if s.id == sid)
            assert any(a < g.end and g.start < b for a, b in spans), (q.query_id, sid)
    comp = op.plan_for(emotion_queries()[2], gt)[0]
    assert [ps.localize.split("(")[1] for ps in comp.sets] == ["speaker A)", "speaker B)"]
    songs = [Segment(f"t_{i:04d}", "t", 100 * i, 100 * i + 103, f"SONG_{i + 1:02d}") for i in range(4)]
    sq = Query("s", "song", "t", "position", "Compare the 3rd and 1st songs", {"winner": "A"},
               gt_segment_ids=("t_0002", "t_0000"), custom={"song_a": {"index": 3}, "song_b": {"index": 1}})
    assert [(ps.start, ps.end) for ps in op.plan_for(sq, songs)[0].sets] == [(200.0, 303.0), (0.0, 103.0)]
    cq = Query("c", "clinical", "t", "exhibited", "Were respiratory symptoms exhibited?", {"answer": "No"})
    p = op.plan_for(cq, [], 200.0)[0]
    assert [ps.localize for ps in p.sets] == ["full recording"] and not p.errors


# ------------------------------------------------------------------------------ answerer
def _actx(qt, text, setup="A3", domain="emotion", **kw):
    q = Query("q", domain, "r", qt, text, {})
    return QueryContext(q, Recording("r", domain, "r.wav", 100.0), SETUPS[setup], None, agent_params(None, **kw),
                        hearing=Hearing(domain, labelers=[]))


def _es(i, items, start=0.0, end=100.0):
    return EvidenceSet(i, "w", start, end, tuple(items))


def _it(s, e, labels, text="", spk="S0"):
    return EvidenceItem(f"r_ext_{int(s):04d}", s, e, spk, text, labels)


def test_rule_answers_per_type():
    ra = RuleAnswerer()
    ev = Evidence((_es(1, [_it(0, 10, {"primary": "Sad"}), _it(10, 30, {"primary": "Happy"}),
                           _it(30, 40, {"primary": "Happy"})]),))
    a, why, _ = ra.answer(_actx("state", "Which emotion?"), Plan(), ev)
    assert a == "Happy" and "[10.0s–30.0s] S0 primary=Happy" in why and "2 of 3" in why

    ev = Evidence((_es(1, [_it(0, 10, {"arousal": 0.8}), _it(10, 20, {"arousal": 0.7}), _it(30, 40, {"arousal": 0.2})],
                       0, 40),))
    a, why, _ = ra.answer(_actx("change", "how did this speaker's arousal change?"), Plan(), ev)
    assert a == "falling" and "arousal moves from 0.75" in why and "[30.0s–40.0s]" in why
    a, _, _ = ra.answer(_actx("change", "how did valence change?"), Plan(), ev)
    assert a == "no evidence"         # no valence labels: no answer, not the class "none" (issue #28)

    ev = Evidence((_es(1, [_it(0, 10, {"dominance": 0.3}, spk="S1")]), _es(2, [_it(10, 20, {"dominance": 0.6})])))
    a, why, _ = ra.answer(_actx("comparison", "which speaker had higher dominance, A or B?"), Plan(), ev)
    assert a == "B" and "0.30 vs 0.60" in why and "S1" in why

    ev = Evidence((_es(1, [_it(0, 10, {"primary": "2 cough", "cough_count": 2})]),))
    assert ra.answer(_actx("exhibited", "Were symptoms exhibited?", domain="clinical"), Plan(), ev)[0] == "Yes"
    ev = Evidence((_es(1, [_it(0, 10, {"primary": "no cough", "cough_count": 0}, "I have no cough at all"),
                           _it(10, 20, {}, "and my chest feels tight")]),))
    a, why, _ = ra.answer(_actx("reported", "Did the patient report symptoms?", domain="clinical"), Plan(), ev)
    assert a == "Yes" and '"chest"' in why and "[10.0s–20.0s]" in why and '"cough"' not in why
    assert ra.answer(_actx("exhibited", "Were respiratory symptoms exhibited?", domain="clinical"), Plan(), ev)[0] == "No"

    ev = Evidence((_es(1, [_it(0, 15, {"overall": 3.9, "primary": "High"}, spk="SONG_02")]),
                   _es(2, [_it(50, 65, {"primary": "Low"}, spk="SONG_05")])))
    a, why, _ = ra.answer(_actx("position", "Compare the 2nd and 5th songs. Which is better?", domain="song"), Plan(), ev)
    assert a == "A" and "3.90 vs 2.00" in why and "SONG_02" in why
    ev2 = Evidence((ev.sets[0], _es(2, [_it(50, 65, {"overall": 3.8})])))
    assert ra.answer(_actx("time", "Is the song at 0:10 better than the one at 1:00?", domain="song"), Plan(), ev2)[0] == "tie"


def test_locate_answer_is_a_time_and_the_emotion(emotion_bench):
    q = emotion_queries()[3]
    ctx = QueryContext(q, emotion_bench["rec"], SETUPS["A5"], emotion_bench["index"], agent_params(None),
                       bench_dir=emotion_bench["root"], hearing=Hearing("emotion", labelers=[FakeEmotionLabeler()]))
    segs = {s.id: s for s in emotion_bench["segs"]}
    ev = Evidence((_es(1, [EvidenceItem(s.id, s.start, s.end, s.speaker, s.text, s.labels)
                           for s in (segs["r1_ext_0003"], segs["r1_ext_0004"])], 30, 90),))
    a, why, _ = RuleAnswerer().answer(ctx, Plan(), ev)
    assert a == "0:45 (Happy)" and '"pizza night with music"' in why and "[40.0s–50.0s]" in why


def test_audio_only_answerer_hears_instead_of_reading(emotion_bench):
    """A4/A6: labels are hidden; the fake labeler hears 150 Hz (Sad) vs 440 Hz (Happy)."""
    q = emotion_queries()[0]
    segs = {s.id: s for s in emotion_bench["segs"]}
    lie = {"primary": "Angry", "arousal": 0.99}                     # metadata the setup must not read
    items = [EvidenceItem(s.id, s.start, s.end, s.speaker, s.text, lie) for s in (segs["r1_ext_0002"],)]
    ev = Evidence((EvidenceSet(1, "w", 0, 90, tuple(items), 20.0, 30.0),))
    mk = lambda setup, labs: QueryContext(q, emotion_bench["rec"], SETUPS[setup], emotion_bench["index"],  # noqa: E731
                                          agent_params(None), bench_dir=emotion_bench["root"],
                                          hearing=Hearing("emotion", labelers=labs))
    assert RuleAnswerer().answer(mk("A5", []), Plan(), ev)[0] == "Angry"            # metadata setup reads it
    a, why, _ = RuleAnswerer().answer(mk("A4", [FakeEmotionLabeler()]), Plan(), ev)
    assert a == "Happy" and "heard" in why and "Angry" not in why
    a, why, _ = RuleAnswerer().answer(mk("A6", []), Plan(), ev)
    assert a == "no evidence" and "no offline labeler" in why          # never a default class (issue #28)


def test_split_rationale():
    assert split_rationale("B\nRATIONALE: Set 2 scores higher") == ("B", "Set 2 scores higher")
    assert split_rationale("Yes, the patient coughed.") == ("Yes, the patient coughed.", "")


# -------------------------------------------------------------------------------- runner
@pytest.mark.parametrize("setup", list(SETUPS))
def test_answer_query_every_setup(emotion_bench, setup):
    kw = dict(encoder=QueryEncoder(emotion_bench["index"].spaces, emotion_bench["embedders"]),
              hearing=Hearing("emotion", labelers=[FakeEmotionLabeler()]))
    agent = Agent(emotion_bench["index"], setup, None, domain="emotion", params=agent_params(None), **kw)
    for q in emotion_queries():
        p = agent(q, emotion_bench["rec"], emotion_bench["root"], emotion_bench["gt"])
        assert p.error is None, p.error
        assert p.setup == setup and p.answer and p.plan.sets and len(p.evidence.sets) == len(p.plan.sets)
        assert p.plan.oracle == SETUPS[setup].oracle and p.backends["planner"] == ("oracle" if SETUPS[setup].oracle else "rule")
        assert set(p.timings) >= {"plan_sec", "retrieve_sec", "answer_sec", "total_sec"}
        assert all(i.segment_id.startswith("r1_ext_") for i in p.evidence.items())
        if SETUPS[setup].oracle:                                   # the oracle retrieves every GT window
            got = [(i.start, i.end) for i in p.evidence.items()]
            for sid in q.gt_segment_ids:
                g = next(s for s in emotion_bench["gt"] if s.id == sid)
                assert any(a < g.end and g.start < b for a, b in got), (setup, q.query_id, sid)
        Prediction.from_dict(json.loads(json.dumps(p.to_dict())))


def test_answer_query_records_failures_instead_of_raising(emotion_bench):
    q = emotion_queries()[0]
    bad = Recording("other", "emotion", "x.wav", 10.0)
    p = answer_query(q, emotion_bench["index"], "A1", recording=bad, hearing=False)
    assert p.error and "q" in p.error and p.answer == "" and p.query_id == "e_state"


def test_run_setup_writes_resumes_and_records_errors(emotion_bench, emotion_queries_written, tmp_path, monkeypatch):
    root = emotion_bench["root"].parent
    cfg = load_config(overrides={"paths": {"benchmark": str(root), "index": str(tmp_path / "index"),
                                           "predictions": str(tmp_path / "pred")}})
    emotion_bench["index"].save(tmp_path / "index" / "emotion")
    kw = dict(encoder=QueryEncoder(emotion_bench["index"].spaces, emotion_bench["embedders"]),
              hearing=Hearing("emotion", labelers=[FakeEmotionLabeler()]))
    preds = run_setup(cfg, "emotion", "A3", limit=2, progress=False, **kw)
    out = tmp_path / "pred" / "emotion" / "A3.jsonl"
    assert [p.query_id for p in preds] == ["e_state", "e_change"] and out.exists()
    calls = []
    monkeypatch.setattr(Agent, "__call__", lambda self, q, *a, **k: calls.append(q.query_id) or
                        Prediction(q.query_id, "A3", "emotion", q.recording_id, q.query_type, Plan(), Evidence(), "x"))
    preds = run_setup(cfg, "emotion", "A3", progress=False, **kw)
    assert calls == ["e_comp", "e_locate", "e_locate_hard"] and len(preds) == 5      # resumed
    assert len(read_jsonl(out, Prediction)) == 5
    with pytest.raises(FileNotFoundError, match="harp index"):
        run_setup(cfg.with_overrides({"paths": {"index": str(tmp_path / "none")}}), "emotion", "A1", progress=False)


def test_audio_only_song_answer_groups_windows_by_set_clip(emotion_bench):
    """Song-level labelers average per group: each set's clip must be its own group."""
    seen = []

    class SongLabeler:
        def label(self, wave, sr=16000, **kw):
            return {}

        def label_recording(self, waves, sr, texts, speakers, tags=None):
            seen.append(list(speakers))
            return [{"overall": 4.0 if s == "SET_1" else 2.0} for s in speakers]

    segs = emotion_bench["segs"]
    ev = Evidence((EvidenceSet(1, "w", 0, 20, (EvidenceItem(segs[0].id, 0, 10), EvidenceItem(segs[1].id, 10, 20)), 0, 20),
                   EvidenceSet(2, "w", 20, 30, (EvidenceItem(segs[2].id, 20, 30),), 20, 30)))
    q = Query("s", "song", "r1", "position", "Compare the 1st and 2nd songs.", {})
    ctx = QueryContext(q, emotion_bench["rec"], SETUPS["A6"], emotion_bench["index"], agent_params(None),
                       bench_dir=emotion_bench["root"], hearing=Hearing("song", labelers=[SongLabeler()]))
    a, why, _ = RuleAnswerer().answer(ctx, Plan(), ev)
    assert seen == [["SET_1", "SET_1", "SET_2"]] and a == "A" and "4.00 vs 2.00" in why
