"""The own-recording question set (issue 40): harp_lib/data/own_questions.jsonl parses, its halves
are the fixed split and balanced per kind, its truth agrees with the references (sample.rttm /
sample.stm), and the grader grades hand-made right answers right and wrong ones wrong.  The full
run (ingest + `harp ask` on every question) is scripts/own_questions.py, not a test."""
from __future__ import annotations

import json
import re
from collections import Counter

import pytest

from harp_lib.evaluate.own_questions import (grade, load_held_out, load_own_questions, report_set, speaker_map,
                                             summarize, write_tables)
from harp_lib.evaluate.own_recordings import LAYOUT, reference_turns, sample_dir

ROWS = load_own_questions()
HELD = load_held_out()
ISSUE_KINDS = {"n_speakers", "speaker_first", "speaker_last", "speaker_at", "said_at", "when_said", "speaker_about",
               "last_said", "times_said", "sounds_like", "sound_event", "n_songs", "song_span", "song_length",
               "song_at", "song_rank", "unanswerable"}


def test_the_file_parses_and_covers_the_issue_s_kinds():
    assert 50 <= len(ROWS) <= 80
    assert {r["kind"] for r in ROWS} == ISSUE_KINDS
    assert {r["recording"] for r in ROWS} == {"call", "three", "medley"}
    assert len({r["id"] for r in ROWS}) == len(ROWS)
    assert len({(r["recording"], r["question"]) for r in ROWS}) == len(ROWS)


def test_halves_are_balanced_per_kind():
    per = Counter((r["kind"], r["half"]) for r in ROWS)
    for k in ISSUE_KINDS:
        assert per[k, "eval"] >= 1 and abs(per[k, "tune"] - per[k, "eval"]) <= 1, k
    assert abs(sum(r["half"] == "eval" for r in ROWS) - len(ROWS) / 2) <= len(ISSUE_KINDS) / 2


def test_a_repeated_id_or_a_hand_set_half_is_refused(tmp_path):
    lines = [json.dumps(r) for r in ROWS[:4]]
    p = tmp_path / "q.jsonl"
    p.write_text("\n".join(lines + [lines[0]]))
    with pytest.raises(ValueError, match="repeats"):
        load_own_questions(p)
    flipped = dict(ROWS[0], half="eval" if ROWS[0]["half"] == "tune" else "tune")
    p.write_text("\n".join([json.dumps(flipped)] + lines[1:]))
    with pytest.raises(ValueError, match="split_rows"):
        load_own_questions(p)


def _at(ref, t):
    return {k for a, b, k in ref if a <= t <= b}


def _reference():
    try:
        return reference_turns()
    except FileNotFoundError as e:
        pytest.skip(str(e))


def test_the_truth_agrees_with_the_reference_turns_and_words():
    """Written from the references, not from answers: who speaks at T is the reference speaker there;
    a mention window holds an STM line with the word; song starts are the medley's changes."""
    from harp_lib.core.timespan import point_time
    ref = _reference()
    stm = [(float(f[3]), float(f[4]), " ".join(f[5:]).lower()) for f in
           (line.split() for line in (sample_dir() / "sample.stm").read_text().splitlines())]
    for r in ROWS:
        t = r["truth"]
        if r["kind"] == "speaker_at":
            at = point_time("at " + r["question"].split(" at ")[-1].rstrip("?"))
            assert _at(ref[r["recording"]], at) == {t["speaker"]}, r
        if r["kind"] == "when_said" and r["recording"] == "call":
            word = {"o022": "chicago", "o023": "texas", "o024": "beep"}[r["id"]]
            assert all(any(abs(a - lo) < 0.01 and word in txt for a, _, txt in stm) for lo, _ in t["time"]), r
    bounds = LAYOUT["medley"]["bounds"]
    starts = {r["id"]: r["truth"]["time"][0][0] for r in ROWS if r["kind"] == "song_span"}
    assert set(starts.values()) <= set(bounds)


def _row(kind, pred=lambda r: True):
    return next(r for r in ROWS if r["kind"] == kind and pred(r))


def test_the_grader_grades_right_answers_right_and_wrong_ones_wrong():
    spk = {"SPEAKER_00": "diane", "SPEAKER_01": "sheila"}
    cases = [
        (_row("n_speakers", lambda r: r["truth"]["count"] == 2), {"answer": "2", "value": 2}, {"answer": "3", "value": 3}),
        (_row("when_said", lambda r: r["id"] == "o023"), {"answer": "0:15 (15.2 s)", "value": 15.2},
         {"answer": "0:25 (25.0 s)", "value": 25.0}),
        (_row("speaker_at", lambda r: r["truth"]["speaker"] == "sheila" and r["recording"] == "call"),
         {"answer": "SPEAKER_01", "value": "SPEAKER_01"}, {"answer": "SPEAKER_00 and SPEAKER_01",
                                                           "value": ["SPEAKER_00", "SPEAKER_01"]}),
        (_row("said_at", lambda r: "texas" in r["truth"]["words"]), {"answer": "And I'm Sheila in Texas"},
         {"answer": "And I'm Sheila in Texas. At least they call me a Yankee down here"}),
        (_row("song_span", lambda r: r["truth"].get("field") == "end"),
         {"answer": "song 2: 1:34-2:51", "value": {"song": 2, "start": 94.0, "end": 172.5, "length": 78.5}},
         {"answer": "song 2: 1:34-2:20", "value": {"song": 2, "start": 94.0, "end": 140.0, "length": 46.0}}),
        (_row("song_length", lambda r: r["truth"]["length"] > 100), {"answer": "1:52 (112.0 s long)",
                                                                       "value": {"length": 111.0}},
         {"answer": "0:15 (14.6 s long)", "value": {"length": 14.6}}),
        (_row("song_rank", lambda r: r["truth"]["song"] == [1]), {"answer": "song 1", "value": {"song": 1}},
         {"answer": "song 4", "value": {"song": 4}}),
        (_row("sounds_like", lambda r: r["truth"] == {"yes": False}), {"answer": "no"}, {"answer": "Sad"}),
        (_row("unanswerable", lambda r: r["truth"] == {"refuse": True}),
         {"answer": "unsupported question", "rationale": "cannot answer this: no answer rule fits"},
         {"answer": "0:12 (12.0 s)", "value": 12.0}),
    ]
    for row, right, wrong in cases:
        assert grade(right, row["truth"], spk) in ("right", "refused_properly"), (row, right)
        assert grade(wrong, row["truth"], spk) == "wrong", (row, wrong)
    cough = _row("sound_event", lambda r: r["id"] == "o042")["truth"]
    assert grade({"answer": "cannot answer this", "rationale": "... use --domain clinical"}, cough) == "refused_properly"
    assert grade({"answer": "cannot answer this", "rationale": "no rule"}, cough) == "refused_wrongly"
    assert grade({"answer": "no", "value": False}, cough) == "right"
    assert grade({"answer": "unsupported question", "rationale": ""}, {"count": 2}) == "refused_wrongly"
    assert grade({"answer": None, "error": "rc 2"}, {"count": 2}) == "error"


def test_speaker_map_and_the_report_of_the_held_out_set_first(tmp_path):
    from types import SimpleNamespace as S
    ref = _reference()["call"]
    segs = [S(start=a, end=b, speaker={"diane": "SPEAKER_01", "sheila": "SPEAKER_00"}[k]) for a, b, k in ref]
    assert speaker_map(segs, ref) == {"SPEAKER_01": "diane", "SPEAKER_00": "sheila"}
    res = [{"id": r["id"], "kind": r["kind"], "half": report_set(r), "question": r["question"],
            "verdict": "right" if i % 3 else "wrong"} for i, r in enumerate(ROWS + HELD)]
    s = summarize([x for x in res if x["half"] == "eval"])["overall"]
    assert s["n"] == len(HELD) and s["right_total"] + s["wrong"] == s["n"]
    paths = write_tables({"rule": res}, {"questions": len(res)}, tmp_path)
    data = json.loads(paths[0].read_text())
    assert {x["id"] for x in data["eval"]["rule"]["rows"]} == {r["id"] for r in HELD}
    assert {x["id"] for x in data["seen"]["rule"]["rows"]} == {r["id"] for r in ROWS if r["half"] == "eval"}
    assert set(data["tune"]["rule"]) >= {"n", "right_total"} and "rows" not in data["tune"]["rule"]
    md = paths[1].read_text()
    head, seen = md.split("Round 1's evaluation half")
    assert "held-out evaluation (round 2)" in head and f"| **all** | {s['n']} | {s['right_total']} (0) | {s['wrong']} |" in head
    assert "seen" in seen and not any(x["id"] in md for x in res if x["half"] == "tune")
    assert "TUNING" in paths[2].read_text()


def test_the_held_out_round_is_all_evaluation_and_new():
    """Round 2 (own_questions_r2.jsonl) is held out whole: every row eval, new ids and questions, the
    issue's kinds on the recordings they apply to; a tune row or a round-1 id in it is refused."""
    assert len(HELD) >= 30 and {r["half"] for r in HELD} == {"eval"} and {r["round"] for r in HELD} == {2}
    assert {r["kind"] for r in HELD} <= ISSUE_KINDS and len({r["kind"] for r in HELD}) >= 14
    assert not {r["id"] for r in HELD} & {r["id"] for r in ROWS}
    assert not {r["question"].lower() for r in HELD} & {r["question"].lower() for r in ROWS}
    assert {report_set(r) for r in HELD} == {"eval"} and {report_set(r) for r in ROWS} == {"seen", "tune"}


@pytest.mark.parametrize("change, match", [({"half": "tune"}, "round 2 and half eval"), ({"id": "o001"}, "repeats")])
def test_a_held_out_row_that_is_tuning_or_reuses_an_id_is_refused(tmp_path, change, match):
    p = tmp_path / "r2.jsonl"
    p.write_text("\n".join(json.dumps(dict(r, **(change if i == 1 else {}))) for i, r in enumerate(HELD[:3])))
    with pytest.raises(ValueError, match=match):
        load_held_out(p)


def test_the_held_out_truth_agrees_with_the_reference_turns():
    """Who speaks at a clock time is the reference speaker there; song boundaries are the medley's."""
    from harp_lib.core.timespan import point_time
    ref = _reference()
    for r in HELD:
        t = r["truth"]
        if r["kind"] == "speaker_at" and re.search(r"\d", r["question"]):
            q = re.sub(r"(\d+) seconds in", r"at \1 seconds", r["question"])
            at = point_time("at " + q.split(" at ")[-1].rstrip("?"))
            assert _at(ref[r["recording"]], at) == {t["speaker"]}, r
        if r["kind"] == "song_span":
            assert {lo for lo, _ in t["time"]} <= set(LAYOUT["medley"]["bounds"]), r
