"""Tools against hand-built segment tables; merge / top-k ties; clip capping; rendering."""
import math

import pytest

from harp_lib.agent.context import QueryContext, agent_params
from harp_lib.agent.evidence import evidence_clips, reference_clips, render_evidence, render_labels
from harp_lib.retrieval.references import Hearing
from harp_lib.retrieval.tools import QueryEncoder, clip_span, merge_hits, resolve_window, retrieve
from harp_lib.config import SETUPS
from harp_lib.retrieval.index import SegmentIndex
from harp_lib.core.schema import Evidence, EvidenceItem, EvidenceSet, Plan, PlanSet, Query, Recording, Segment
from harp_lib.core.timespan import LocalizeError, Span

from agent_helpers import SR, emotion_queries


def _ctx(bench, setup="A5", query=None, **params):
    q = query or emotion_queries()[0]
    return QueryContext(query=q, recording=bench["rec"], setup=SETUPS[setup], index=bench["index"],
                        params=agent_params(None, **params), bench_dir=bench["root"],
                        encoder=QueryEncoder(bench["index"].spaces, bench["embedders"]),
                        hearing=Hearing("emotion", labelers=[]))


def test_agent_params_are_typed_and_an_unknown_override_is_named():
    from harp_lib.config import AgentRunParams, ConfigError
    p = agent_params(None, top_k=5)
    assert isinstance(p, AgentRunParams) and (p.top_k, p.tie_delta) == (5, 0.25)
    assert agent_params(None).top_k == 3          # overrides never leak into params.yaml's values
    with pytest.raises(ConfigError, match=r"unknown agent parameter 'topk' \(did you mean 'top_k'\?\)"):
        agent_params(None, topk=5)


def _ids(es):
    return [i.segment_id for i in es.items]


def test_time_tool_runs_only_when_the_set_asks(emotion_bench):
    ctx = _ctx(emotion_bench, "A1")
    ev = retrieve(Plan((PlanSet("from 15 to 45 seconds", time=True), PlanSet("from 15 to 45 seconds"))), ctx)
    a, b = ev.sets
    assert _ids(a) == ["r1_ext_0001", "r1_ext_0002", "r1_ext_0003"]     # 10 s overlap each beats 5 s ones
    assert a.items[1].sources == {"time": round(10 / 30, 3)}
    assert b.items == () and b.index == 2                               # no time flag -> no time hits


def test_keyword_and_label_tools(emotion_bench):
    ctx = _ctx(emotion_bench, "A1")
    ev = retrieve(Plan((PlanSet("full recording", keyword="garden"), PlanSet("full recording", label="happiness"),
                        PlanSet("from 0 to 30 seconds", label="Happy"))), ctx)
    assert _ids(ev.sets[0]) == ["r1_ext_0000", "r1_ext_0005"]
    assert [i.sources for i in ev.sets[0].items] == [{"keyword": 1.0}, {"keyword": 1.0}]
    # top-3 of four Happy segments: equal scores -> earliest starts win, then time order
    assert _ids(ev.sets[1]) == ["r1_ext_0002", "r1_ext_0004", "r1_ext_0006"]
    assert ev.sets[1].items[0].sources == {"label": 0.8}
    assert _ids(ev.sets[2]) == ["r1_ext_0002"]                          # restricted to the window


def test_vector_tools_use_query_side_embedders_and_references(emotion_bench):
    ctx = _ctx(emotion_bench, "A2", query=emotion_queries()[2])
    ev = retrieve(Plan((PlanSet("full recording", text_emb="pizza and music"),
                        PlanSet("full recording", audio_emb="B"),
                        PlanSet("full recording", domain_emb="A", time=True))), ctx)
    assert ev.sets[0].items and "r1_ext_0004" in _ids(ev.sets[0])
    top = max(ev.sets[0].items, key=lambda i: i.score)
    assert top.segment_id == "r1_ext_0004" and top.sources["text_emb"] > 0.9
    spk_b = {s.id for s in emotion_bench["segs"] if s.speaker == "S1" and "150" and s.labels["primary"] == "Sad"}
    assert set(_ids(ev.sets[1])) <= spk_b | {"r1_ext_0005"} and len(ev.sets[1].items) == 3
    assert all("time" not in i.sources for i in ev.sets[2].items)      # time is not an A2 tool
    assert {emotion_bench["index"].segment(i).labels["primary"] for i in _ids(ev.sets[2])} == {"Happy"}


def test_missing_reference_or_space_is_reported_not_fatal(emotion_bench):
    ctx = _ctx(emotion_bench, "A5")                                     # query has only role A
    ev = retrieve(Plan((PlanSet("full recording", audio_emb="B", keyword="job"),)), ctx)
    assert "no reference clip 'B'" in ev.sets[0].error and _ids(ev.sets[0]) == ["r1_ext_0002", "r1_ext_0007"]
    bare = SegmentIndex.from_segments(emotion_bench["segs"])
    ctx2 = QueryContext(query=ctx.query, recording=ctx.recording, setup=SETUPS["A5"], index=bare,
                        params=ctx.params, bench_dir=ctx.bench_dir, encoder=QueryEncoder({}),
                        hearing=ctx.hearing)
    ev2 = retrieve(Plan((PlanSet("full recording", text_emb="job"),)), ctx2)
    assert ev2.sets[0].items == () and "text_emb" in ev2.sets[0].error


def test_failed_localize_keeps_the_set_so_numbering_matches(emotion_bench):
    ctx = _ctx(emotion_bench, "A1")
    ev = retrieve(Plan((PlanSet("sometime later", time=True), PlanSet("around 20 seconds", time=True),
                        PlanSet("the 2nd song", time=True), PlanSet("from 200 to 300 seconds", time=True))), ctx)
    assert [s.index for s in ev.sets] == [1, 2, 3, 4]
    assert ev.sets[0].error.startswith("localize failed") and ev.sets[0].items == ()
    assert ev.sets[1].items and ev.sets[1].error is None
    assert "no song boundaries" in ev.sets[2].error or "no detected songs" in ev.sets[2].error
    assert "after the end" in ev.sets[3].error


def test_nth_song_resolves_to_the_whole_song_span():
    segs = [Segment(f"t_ext_{i:04d}", "t", 15 * i, 15 * (i + 1), f"SONG_{1 + i // 4:02d}", "",
                    {"primary": "High" if i // 4 == 1 else "Low"}, source="extracted") for i in range(12)]
    songs = {1: Span(0, 60), 2: Span(60, 120), 3: Span(120, 180)}
    assert resolve_window(PlanSet("the 2nd song"), 180.0, {n: s for n, s in songs.items()}) == Span(60, 120)
    ix = SegmentIndex.from_segments(segs)
    q = Query("s", "song", "t", "position", "Compare the 2nd and 3rd songs.", {})
    ctx = QueryContext(q, Recording("t", "song", "t.wav", 180.0), SETUPS["A1"], ix, agent_params(None))
    ev = retrieve(Plan((PlanSet("the 2nd song", time=True, label="medium"), PlanSet("the 2nd song", label="high"))), ctx)
    assert (ev.sets[0].start, ev.sets[0].end) == (60.0, 120.0)           # not just the first 15 s chunk
    assert _ids(ev.sets[1]) == ["t_ext_0004", "t_ext_0005", "t_ext_0006"]  # "high" -> High


def test_numeric_bounds_win_over_the_phrase():
    assert resolve_window(PlanSet("ignored", start=5, end=500), 100.0) == Span(5, 100)
    with pytest.raises(LocalizeError):
        resolve_window(PlanSet("x", start=200, end=300), 100.0)


# --------------------------------------------------------------------------------- merge
def test_merge_dedupes_max_per_tool_sums_and_breaks_ties_by_start_then_id():
    hits = {"keyword": [("c", 1.0), ("a", 0.5)], "text_emb": [("a", 0.5), ("a", 0.7), ("b", 0.7)],
            "time": [("d", 1.2), ("e", 1.2), ("b", 0.0)]}
    starts = {"a": 30.0, "b": 10.0, "c": 50.0, "d": 20.0, "e": 20.0}
    got = merge_hits(hits, starts=starts, top_k=3)
    # sums: a=0.5+0.7=1.2, d=1.2, e=1.2, c=1.0, b=0.7 -> tie at 1.2 broken by start (d=e=20 < a=30) then id
    assert [g[0] for g in got] == ["d", "e", "a"]
    assert dict(got)["a"] == {"keyword": 0.5, "text_emb": 0.7}
    assert [g[0] for g in merge_hits(hits, starts=starts, top_k=5)] == ["b", "d", "e", "a", "c"]   # re-sorted by time
    assert merge_hits(hits, starts=starts, top_k=0) == [] and merge_hits({}, starts={}, top_k=3) == []


def test_top_k_comes_from_params(emotion_bench):
    ctx = _ctx(emotion_bench, "A1", top_k=5)
    ev = retrieve(Plan((PlanSet("full recording", time=True),)), ctx)
    assert len(ev.sets[0].items) == 5


# --------------------------------------------------------------------------------- clips
def test_clip_span_caps_and_falls_back_to_the_window():
    it = lambda s, e: EvidenceItem("x", s, e)  # noqa: E731
    assert clip_span([it(100, 110), it(40, 50)], Span(0, 600), 120) == Span(40, 110)
    assert clip_span([it(10, 20), it(500, 510)], Span(0, 600), 120) == Span(10, 130)
    assert clip_span([], Span(30, 400), 120) == Span(30, 150)
    assert clip_span([], Span(30, 60), 120) == Span(30, 60)
    assert clip_span([], Span(0, math.inf), 120, duration=90) == Span(0, 90)


def test_evidence_and_reference_clips_are_16k_labelled_and_capped(emotion_bench):
    ctx = _ctx(emotion_bench, "A5", max_clip_sec=15)
    ev = retrieve(Plan((PlanSet("full recording", keyword="garden"), PlanSet("from 80 to 85 seconds", keyword="zzz"))), ctx)
    assert (ev.sets[0].clip_start, ev.sets[0].clip_end) == (0.0, 15.0)  # 0-60 capped at 15 s
    clips = evidence_clips(ev, emotion_bench["root"] / "recordings" / "r1.wav", sr=SR)
    assert [c.label for c in clips] == ["[Set 1: 0-15 s]", "[Set 2: 80-85 s]"]
    assert len(clips[0].wave) == 15 * SR and clips[1].seconds == 5.0
    refs = reference_clips(ctx.references, sr=8000)
    assert [r.label for r in refs] == ["[Snippet A]"] and refs[0].sr == 8000 and len(refs[0].wave) == 3 * 8000


# --------------------------------------------------------------------------------- render
def _ev():
    items = (EvidenceItem("r_ext_0001", 12.43, 17.08, "SPEAKER_01", "I keep coughing at night",
                          {"primary": "2 cough", "cough_count": 2, "events": ["cough", "cough"],
                           "symptoms": ["cough"]}, {"keyword": 1.0, "time": 0.033}),
             EvidenceItem("r_ext_0002", 20, 25, "SPEAKER_00", "how long?",
                          {"primary": "Happy", "scores": {"Happy": 0.62, "Sad": 0.1},
                           "valence": {"mean": 0.7, "std": 0.1}, "arousal": 0.55, "dominance": 0.4}, {}))
    return Evidence((EvidenceSet(1, "around 15 s", 0, 45, items, 12.43, 25.0),
                     EvidenceSet(2, "sometime", 0, 0, (), error="localize failed: cannot read")))


def test_render_metadata_shows_every_label_key():
    txt = render_evidence(_ev(), strip_domain=False)
    assert txt.startswith("### Set 1 (around 15 s; window 0.0s–45.0s)")
    assert "[12.4s–17.1s] (score: keyword=1.00, time=0.03)" in txt
    assert "- speaker: SPEAKER_01" in txt and '- text: "I keep coughing at night"' in txt
    assert "primary=2 cough" in txt and "cough_count=2" in txt and "events=[cough, cough]" in txt
    assert "symptoms=[cough]" in txt
    assert "scores=[Happy=0.62, Sad=0.10]" in txt and "V=0.70±0.10" in txt and "A=0.55" in txt and "D=0.40" in txt
    assert "### Set 2 (sometime)" in txt and "(no segments retrieved)" in txt and "localize failed" in txt


def test_render_strip_domain_keeps_only_times_and_scores():
    txt = render_evidence(_ev(), strip_domain=True)
    assert "[12.4s–17.1s] (score: keyword=1.00, time=0.03)" in txt and "[20.0s–25.0s]" in txt
    for hidden in ("SPEAKER_", "coughing", "primary=", "cough_count", "Happy"):
        assert hidden not in txt
    assert render_evidence(Evidence(), strip_domain=False) == "(no retrieved evidence)"


def test_render_labels_song():
    assert render_labels({"primary": "Mid", "overall": 3.1, "scores": {"Clarity": 3.5, "Coherence": 2.7}}) == \
        "primary=Mid, overall=3.10, scores=[Clarity=3.50, Coherence=2.70]"


def test_keyword_matches_transcript_text_only():
    """The keyword tool reads what was said; labels ("no cough", symptoms) are the label tool's job."""
    from harp_lib.retrieval.index import SegmentIndex
    from harp_lib.core.schema import Segment
    from harp_lib.core.timespan import Span
    segs = [Segment("c_0", "c", 0, 10, "S0", "good morning doctor", {"primary": "no cough", "cough_count": 0,
                                                                       "symptoms": []}),
            Segment("c_1", "c", 10, 20, "S1", "", {"primary": "2 cough", "cough_count": 2, "events": ["cough"],
                                                   "symptoms": ["cough"]}),
            Segment("c_2", "c", 20, 30, "S0", "I have had a cough since Monday", {"primary": "no cough",
                                                                                  "symptoms": ["cough"]}),
            Segment("c_3", "c", 30, 40, "S0", "no fever", {"primary": "no cough", "symptoms": ["fever"]})]
    ix = SegmentIndex.from_segments(segs)
    assert ix.search_keyword("c", Span(0, 40), "cough") == [("c_2", 1.0)]
    assert ix.search_keyword("c", Span(0, 40), "fever") == [("c_3", 1.0)]
    assert [i for i, _ in ix.search_label("c", Span(0, 40), "2 cough")] == ["c_1"]   # labels: the label tool


@pytest.mark.parametrize("phrase,t", [("around 0:40", 40.0), ("at 2 min", 120.0), ("at the 40 second mark", 40.0),
                                      ("around a minute and a half", 90.0)])
def test_point_in_time_ranks_the_segment_holding_the_moment_first(phrase, t):
    """Twelve 10 s segments; a point window (+-30 s) holds six whole ones that tie on overlap."""
    from harp_lib.retrieval.tools import run_tools
    from harp_lib.core.timespan import point_time
    segs = [Segment(f"p_ext_{i:04d}", "p", 10 * i, 10 * i + 10, "S0", f"line {i}", {}) for i in range(15)]
    ix = SegmentIndex.from_segments(segs)
    q = Query("q", "emotion", "p", "state", f"{phrase}, which emotion did they show?", {})
    ctx = QueryContext(q, Recording("p", "emotion", "p.wav", 150.0), SETUPS["A1"], ix, agent_params(None, top_k=3),
                       hearing=Hearing("emotion", labelers=[]))
    assert point_time(phrase) == t
    ps = PlanSet(phrase, time=True)
    hits, _ = run_tools(ps, resolve_window(ps, 150.0), ctx)
    holder = next(s.id for s in segs if s.start <= t < s.end)
    assert hits["time"][0] == (holder, 1.0)
    ev = retrieve(Plan((ps,)), ctx)
    assert holder in _ids(ev.sets[0]) and len(ev.sets[0].items) == 3
    mids = [(i.start + i.end) / 2 for i in ev.sets[0].items]
    assert max(abs(m - t) for m in mids) <= 15            # the moment's neighbours, not the window's start
    # a range is not a point: overlap scoring as before
    assert point_time("from 40 to 95 seconds") is None and point_time("the 2nd song") is None


def test_keyword_matches_word_starts_like_the_reference_substring():
    from harp_lib.retrieval.index import SegmentIndex
    from harp_lib.core.schema import Segment
    from harp_lib.core.timespan import Span
    segs = [Segment("k_0", "k", 0, 10, "S0", "I keep coughing at night", {}),
            Segment("k_1", "k", 10, 20, "S0", "a hiccough, nothing more", {}),
            Segment("k_2", "k", 20, 30, "S0", "short of breath on the stairs", {})]
    ix = SegmentIndex.from_segments(segs)
    assert ix.search_keyword("k", Span(0, 30), "cough") == [("k_0", 1.0)]
    assert ix.search_keyword("k", Span(0, 30), "breath") == [("k_2", 1.0)]
