"""Clinical: the session recording (consultations in one recording, questions naming their
window) and the reported-symptom rule (clinician questions and denials are not reports)."""
from __future__ import annotations


import pytest

from harp_lib.agent.answerer import RuleAnswerer
from harp_lib.agent.context import QueryContext, agent_params
from harp_lib.agent.oracle import OraclePlanner
from harp_lib.retrieval.references import Hearing
from harp_lib.config import SETUPS
from harp_lib.core.schema import Evidence, EvidenceItem, EvidenceSet, Plan, Query, Recording

Q = "In the consultation from 1:00 to 2:30, did the patient report any respiratory symptoms?"


def _ctx(text=Q, setup="A3"):
    q = Query("q", "clinical", "s", "reported", text, {})
    return QueryContext(q, Recording("s", "clinical", "s.wav", 600.0), SETUPS[setup], None, agent_params(None),
                        hearing=Hearing("clinical", labelers=[]))


def _it(s, e, text, spk, labels=None):
    return EvidenceItem(f"s_ext_{int(s * 10):05d}", s, e, spk, text, labels or {})


def _answer(items, setup="A3", text=Q):
    ev = Evidence((EvidenceSet(1, "from 1:00 to 2:30", 60.0, 150.0, tuple(items)),))
    return RuleAnswerer().answer(_ctx(text, setup), Plan(), ev)[:2]


# the turns of a NON_RES consultation as the offline ASR + keyword spotter left them (mini data)
OPEN = _it(61.0, 65.0, "hello there nice to see you again how can i help you today", "SPEAKER_00")
COMPLAINT = _it(65.5, 70.0, "i've had a pain in my lower back since i lifted some boxes", "SPEAKER_01")
ASK = _it(80.0, 83.0, "matthew has a cop for us or for liquid this", "SPEAKER_00",
          {"symptoms": ["cough", "sore throat"], "symptom_hits": [["cough", 80.6, 80.9]]})
DENY = _it(83.4, 86.0, "not really no sore throat and amplified", "SPEAKER_01",
           {"symptoms": [], "symptoms_negated": ["sore throat"]})
REPORT = _it(66.0, 70.0, "i keep coughing and my throat is really sore", "SPEAKER_01", {"symptoms": ["cough"]})


def test_a_question_the_next_turn_denies_is_not_a_report():
    a, why = _answer([OPEN, COMPLAINT, ASK, DENY])
    assert a == "No" and "asked, then denied" in why
    a, why = _answer([OPEN, COMPLAINT, ASK, DENY], setup="A6")        # no speakers: the adjacency alone
    assert a == "No"
    a, why = _answer([OPEN, REPORT])                                 # a real report
    assert a == "Yes" and "coughing" in why


def test_the_clinician_opening_the_named_window_is_not_the_patient():
    ask_alone = _it(80.0, 83.0, "wheezing at night", "SPEAKER_00", {"symptoms": ["wheezing"]})
    a, why = _answer([OPEN, COMPLAINT, ask_alone])
    assert a == "No" and "(the clinician)" in why
    # the same turn by the other speaker is a report
    a, _ = _answer([OPEN, COMPLAINT, _it(80.0, 83.0, "wheezing at night", "SPEAKER_01", {"symptoms": ["wheezing"]})])
    assert a == "Yes"
    # no visible opening turn (oracle evidence = the report segment only): nobody is excluded
    assert _answer([ask_alone])[0] == "Yes"


def test_whole_turn_negation_and_questions():
    assert _answer([_it(61, 64, "no nothing like that my breathing is normal", "S1")])[0] == "No"
    assert _answer([_it(61, 64, "any cough cold or trouble breathing recently", "S0")])[0] == "No"


@pytest.fixture(scope="module")
def session_build(ci_build):
    """The ci consultations (3) built as one session recording."""
    from harp_lib.corpora.synth import clinical
    from harp_lib.corpora.synth.core import SynthCache, load_params
    p = load_params("ci")
    p["sizes"] = dict(p["sizes"], consult_session=True, consult_gap_sec=[10, 12])
    return clinical.build(0, p, SynthCache(p["cache_dir"]), progress=False)


def test_session_is_one_recording_and_questions_name_their_consultation(session_build):
    b = session_build
    assert [r.id for r in b.recordings] == ["clinic_session"] and list(b.audio) == ["recordings/clinic_session.wav"]
    rec = b.recordings[0]
    cons = rec.custom["consultations"]
    assert [c["id"] for c in cons] == ["consult_001", "consult_002", "consult_003"]
    for a, c in zip(cons[:-1], cons[1:]):
        assert 10.0 <= c["start"] - a["end"] <= 12.0 + 1e-3            # room noise between patients
    assert abs(rec.duration - (cons[-1]["end"] - cons[0]["start"])) < 1e-2
    assert len(b.audio["recordings/clinic_session.wav"]) / 16000 == pytest.approx(rec.duration, abs=1e-3)
    by_id = {s.id: s for s in b.segments}
    assert all(s.recording_id == "clinic_session" for s in b.segments)
    assert len(b.queries) == 6
    for q in b.queries:
        c = next(c for c in cons if c["id"] == q.custom["consultation"])
        t0, t1 = q.ground_truth["t0"], q.ground_truth["t1"]
        assert t0 <= c["start"] and c["end"] <= t1 and t1 - t0 < c["end"] - c["start"] + 2
        assert q.text.startswith("In the consultation from ") and q.recording_id == "clinic_session"
        for sid in q.gt_segment_ids:                                  # evidence inside the named window
            assert t0 <= by_id[sid].start and by_id[sid].end <= t1
        # the oracle: the evidence turns, or for a "No" the named consultation only
        plan, errs = OraclePlanner().plan_for(q, b.segments, rec.duration)
        assert not errs
        if not q.gt_segment_ids:
            assert [(s.start, s.end) for s in plan.sets] == [(t0, t1)]
    # the per-recording layout stays the default
    from harp_lib.corpora.synth.core import load_params
    p = load_params("ci")
    assert not p["sizes"].get("consult_session")
