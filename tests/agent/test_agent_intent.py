"""Answer time reads the question text, never the benchmark labels (query_type, ground truth).

* the intent classifier maps every generated benchmark question to its task from the text alone;
* the rule agent answers the same with ``query_type`` bogus and ``ground_truth`` empty;
* direction words (lower, worse, less, calmer, sadder, more negative) pick the other side;
* a question no task fits is answered "unsupported question", not guessed.
"""
import copy

import pytest

from test_agent_benchmark import ci_bench  # noqa: F401  (session fixture: the ci benchmark)

from harp_lib.agent.answerer import RuleAnswerer
from harp_lib.agent.context import QueryContext, agent_params
from harp_lib.understand.direction import polarity
from harp_lib.understand.intent import TASKS, UNSUPPORTED
from harp_lib.tasks import read_question
from harp_lib.understand.time_words import time_mentions
from harp_lib.retrieval.references import Hearing
from harp_lib.agent.runner import Agent
from harp_lib.config import SETUPS
from harp_lib.retrieval.index import SegmentIndex
from harp_lib.core.schema import Evidence, EvidenceItem, EvidenceSet, Plan, Query, Recording
from harp_lib.core.timespan import localize


def _unlabelled(q: Query) -> Query:
    """The query with its benchmark labels removed (query_type bogus, no ground truth / judge info)."""
    c = copy.copy(q)
    for k, v in (("query_type", "x"), ("ground_truth", {}), ("judge_info", {}), ("gt_segment_ids", ()),
                 ("custom", {}), ("time_ref", None)):
        object.__setattr__(c, k, v)
    return c


def test_intent_of_every_benchmark_question(ci_bench):
    n = 0
    for domain, (_, queries, _, _) in ci_bench.items():
        for q in queries:
            it = read_question(q.text, domain, tuple(q.references))
            assert it.task == q.query_type, (q.query_id, q.text, it)
            assert it.polarity == 1, (q.query_id, q.text)     # the generator asks for the higher/better side
            n += 1
    assert n > 30 and set(TASKS) == {q.query_type for d in ci_bench for q in ci_bench[d][1]}


@pytest.mark.parametrize("setup", ["A1", "A3"])
def test_rule_agent_ignores_query_type_and_ground_truth(ci_bench, setup):
    """Same plan and answer with the labels stripped: nothing at answer time reads them."""
    for domain, (recs, queries, gt, root) in ci_bench.items():
        rec = {r.id: r for r in recs}
        ag = Agent(SegmentIndex.from_segments(gt), setup, None, domain=domain, hearing=Hearing(domain, labelers=[]))
        for q in queries:
            a, b = ag(q, rec[q.recording_id], root), ag(_unlabelled(q), rec[q.recording_id], root)
            assert b.error is None, (q.query_id, b.error)
            assert (a.answer, a.rationale, a.plan) == (b.answer, b.rationale, b.plan), q.query_id
            assert a.answer != "unsupported question", q.query_id


def test_unsupported_question_is_said_not_guessed():
    for domain, text in (("emotion", "What is the capital of France?"),
                         ("clinical", "What medication did the doctor prescribe?"),
                         ("song", "Who composed these pieces?")):
        q = Query("q", domain, "r", {"emotion": "state", "clinical": "reported", "song": "audio"}[domain], text, {})
        ctx = QueryContext(_unlabelled(q), Recording("r", domain, "r.wav", 100.0), SETUPS["A3"], None,
                           agent_params(None), hearing=Hearing(domain, labelers=[]))
        ev = Evidence((EvidenceSet(1, "w", 0, 100, (EvidenceItem("r_1", 0, 10, "S0", "fine", {"primary": "Happy"}),)),))
        a, why, _ = RuleAnswerer().answer(ctx, Plan(), ev)
        assert a == "unsupported question" and "no supported" in why, (text, a)
        assert read_question(text, domain).task == UNSUPPORTED


def _ctx(domain, text, roles=()):
    q = Query("q", domain, "r", {"emotion": "state", "clinical": "reported", "song": "audio"}[domain], text, {},
              references={r: f"references/{r}.wav" for r in roles})
    return QueryContext(_unlabelled(q), Recording("r", domain, "r.wav", 100.0), SETUPS["A3"], None,
                        agent_params(None), hearing=Hearing(domain, labelers=[]))


def _set(i, labs, spk="S0", t0=0.0):
    return EvidenceSet(i, "w", t0, t0 + 40, tuple(EvidenceItem(f"r_{i}_{j}", t0 + 10 * j, t0 + 10 * j + 10, spk, "",
                                                               lab) for j, lab in enumerate(labs)))


@pytest.mark.parametrize("text,expected", [
    ("From 0 to 40 seconds, which speaker had higher arousal, A or B?", "A"),
    ("Between 0:00 and 0:40, who sounded calmer, speaker A or speaker B?", "B"),
    ("In the first 40 seconds, which of A and B was less energetic?", "B"),
    ("Which speaker was less calm, A or B?", "A"),
    ("Which speaker sounded sadder, A or B?", "A"),          # lower valence
    ("Who was more negative, speaker A or speaker B?", "A"),
    ("Which speaker had lower valence, A or B?", "A"),
    ("Which speaker sounded happier, A or B?", "B"),
])
def test_direction_words_in_comparisons(text, expected):
    # A: arousal 0.8, valence 0.2;  B: arousal 0.3, valence 0.7
    ev = Evidence((_set(1, [{"arousal": 0.8, "valence": 0.2}] * 2, "S0"),
                   _set(2, [{"arousal": 0.3, "valence": 0.7}] * 2, "S1")))
    a, why, _ = RuleAnswerer().answer(_ctx("emotion", text, ("A", "B")), Plan(), ev)
    assert a == expected, (text, why)


@pytest.mark.parametrize("text,expected", [
    ("From 0 to 40 seconds, how did this speaker's arousal change?", "rising"),
    ("From 0 to 40 seconds, how did the speaker's calmness change?", "falling"),
    ("Did this speaker get calmer or more agitated over 0:00-0:40, i.e. how did it change?", "falling"),
])
def test_direction_words_in_changes(text, expected):
    ev = Evidence((_set(1, [{"arousal": 0.2}, {"arousal": 0.25}, {"arousal": 0.7}, {"arousal": 0.75}]),))
    a, why, _ = RuleAnswerer().answer(_ctx("emotion", text, ("A",)), Plan(), ev)
    assert a == expected, (text, why)


@pytest.mark.parametrize("text,expected", [
    ("Compare the 2nd and 5th songs. Which has better overall aesthetics?", "A"),
    ("Which is worse, the 2nd track or the 5th one?", "B"),
    ("Of the second and the fifth piece, which one do you like less?", "B"),
    ("Song A: [clip]. Song B: [clip]. Which one is not as good?", "B"),
])
def test_direction_words_in_song_pairs(text, expected):
    ev = Evidence((_set(1, [{"overall": 4.0}], "SONG_02"), _set(2, [{"overall": 2.5}], "SONG_05", 50)))
    a, why, _ = RuleAnswerer().answer(_ctx("song", text, ("A", "B") if "Song A" in text else ()), Plan(), ev)
    assert a == expected, (text, why)
    assert polarity(text) == (1 if expected == "A" else -1)


def test_time_mentions_read_clock_minute_and_word_forms():
    cases = {
        "What emotion did the speaker show at 1:30?": (60.0, 120.0),
        "What emotion did the speaker show about 90 s in?": (60.0, 120.0),
        "What emotion did the speaker show a minute and a half into the talk?": (60.0, 120.0),
        "In the 90-180 s window, how did their energy change?": (90.0, 180.0),
        "From one and a half to three minutes, who was calmer?": (90.0, 180.0),
        "Around the 40 second mark, how did they feel?": (10.0, 70.0),
    }
    for text, want in cases.items():
        (phrase,) = time_mentions(text)
        assert localize(phrase, 600).to_tuple() == want, (text, phrase)
