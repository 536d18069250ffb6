import json

import pytest

from harp_lib.core.jsonl import append_jsonl, read_jsonl, write_jsonl
from harp_lib.core.record import SchemaError
from harp_lib.core.schema import (Evidence, EvidenceItem, EvidenceSet, Judgement, Plan, PlanSet, Prediction, Query,
                                  Recording, Score, Segment, resolve_under)


def _examples():
    item = EvidenceItem("r1_0002", 12.0, 17.5, "SPEAKER_00", "hello there",
                        {"primary": "Happy", "scores": {"Happy": 0.7}}, {"keyword": 1.0, "time": 0.05})
    ev = Evidence((EvidenceSet(1, "around 3 min", 150, 210, (item,), 12.0, 17.5),))
    plan = Plan((PlanSet("around 3 min", time=True, keyword="hello", audio_emb="A"),), errors=("x",))
    return [
        Recording("r1", "emotion", "recordings/r1.wav", 1800.25, 16000, {"title": "ep 1"}),
        Segment("r1_0001", "r1", 0.0, 4.2, "S1", "hi", {"primary": "Neutral"}, {"text": 0}, "extracted"),
        Query("q1", "emotion", "r1", "state", "Which emotion?", {"emo": "H"}, {"type": "categorical"},
              {"A": "references/speaker_0001.wav"}, ("r1_0001",), 180.0),
        plan, plan.sets[0], item, ev.sets[0], ev,
        Prediction("q1", "A5", "emotion", "r1", "state", plan, ev, "Happy", "because [12.0s]",
                   {"planner": "rule"}, {"plan": 0.01}),
        Judgement("q1", "A5", "rule", 1, 1, 0, 0, "rule-v1", "abc", {"faithful": "cites 99 s"}),
        Score("q1", "A5", "emotion", "state", "rule", 1.0, 0.0, 1.0, 1.0, 0.5),
    ]


@pytest.mark.parametrize("rec", _examples(), ids=lambda r: type(r).__name__)
def test_round_trip_every_record(rec, tmp_path):
    assert type(rec).from_dict(json.loads(json.dumps(rec.to_dict()))) == rec
    p = tmp_path / "x.jsonl"
    key = getattr(rec, "unique_field", None)     # manifests refuse a repeated id
    twin = rec.replace(**{key: getattr(rec, key) + "b"}) if key else rec
    write_jsonl(p, [rec, twin])
    assert read_jsonl(p, type(rec)) == [rec, twin]


def test_gzip_round_trip(tmp_path):
    segs = [Segment(f"s{i}", "r", i, i + 1) for i in range(5)]
    write_jsonl(tmp_path / "s.jsonl.gz", segs)
    assert read_jsonl(tmp_path / "s.jsonl.gz", Segment) == segs


def test_unknown_field_names_file_line_field(tmp_path):
    p = tmp_path / "segs.jsonl"
    good = Segment("a", "r", 0, 1).to_dict()
    bad = dict(good, speakr="S1")
    p.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    with pytest.raises(SchemaError) as e:
        read_jsonl(p, Segment)
    msg = str(e.value)
    assert "segs.jsonl" in msg and "line 2" in msg and "speakr" in msg
    assert e.value.line == 2 and e.value.field == "speakr"


def test_missing_field_names_it(tmp_path):
    p = tmp_path / "q.jsonl"
    d = _examples()[2].to_dict()
    del d["query_id"]
    p.write_text(json.dumps(d) + "\n")
    with pytest.raises(SchemaError, match=r"q.jsonl: line 1: field 'query_id'"):
        read_jsonl(p, Query)


def test_nested_field_error_is_qualified(tmp_path):
    d = _examples()[8].to_dict()
    d["plan"]["sets"][0]["keywrd"] = "x"
    del d["plan"]["sets"][0]["keyword"]
    p = tmp_path / "p.jsonl"
    p.write_text(json.dumps(d) + "\n")
    with pytest.raises(SchemaError) as e:
        read_jsonl(p, Prediction)
    assert "keywrd" in str(e.value) and "line 1" in str(e.value)


def test_invalid_json_and_types(tmp_path):
    p = tmp_path / "x.jsonl"
    p.write_text('{"id": "a", "recording_id": "r", "start": 0, "end": 1}\n{not json\n')
    with pytest.raises(SchemaError, match="line 2.*not valid JSON"):
        read_jsonl(p, Segment)
    p.write_text('{"id": "a", "recording_id": "r", "start": "zero", "end": 1}\n')
    with pytest.raises(SchemaError, match="field 'start'"):
        read_jsonl(p, Segment)
    p.write_bytes(b'{"id": "\xff\xfe"}\n')
    with pytest.raises(SchemaError, match="UTF-8"):
        read_jsonl(p, Segment)


def test_validation_rules():
    with pytest.raises(SchemaError, match="query type"):
        Query("q", "emotion", "r", "dance", "?", {})
    with pytest.raises(SchemaError, match="belongs to domain"):
        Query("q", "emotion", "r", "time", "?", {})
    with pytest.raises(SchemaError, match="query_id"):
        Query("", "emotion", "r", "state", "?", {})
    with pytest.raises(SchemaError, match="before it starts"):
        Segment("a", "r", 5, 4)
    with pytest.raises(SchemaError, match="finite"):
        Segment("a", "r", float("nan"), 4)
    with pytest.raises(SchemaError, match="role"):
        Query("q", "emotion", "r", "state", "?", {}, references={"Z": "x.wav"})


def test_times_rounded_once():
    s = Segment("a", "r", 0.1 + 0.2, 1.0004)
    assert s.start == 0.3 and s.end == 1.0 and s.duration == 0.7


def test_append_repairs_torn_line(tmp_path):
    p = tmp_path / "a.jsonl"
    append_jsonl(p, [Segment("a", "r", 0, 1)])
    with open(p, "a") as fh:
        fh.write('{"id": "b", "recor')  # crash mid-write
    append_jsonl(p, [Segment("c", "r", 0, 1)])
    assert [s.id for s in read_jsonl(p, Segment)] == ["a", "c"]


def test_write_is_atomic(tmp_path):
    p = tmp_path / "a.jsonl"
    write_jsonl(p, [Segment("a", "r", 0, 1)])

    def bad():
        yield Segment("b", "r", 0, 1)
        raise RuntimeError("boom")
    with pytest.raises(RuntimeError):
        write_jsonl(p, bad())
    assert [s.id for s in read_jsonl(p, Segment)] == ["a"]
    assert not list(tmp_path.glob("*.tmp"))


def test_resolve_under(tmp_path):
    assert resolve_under(tmp_path, "a/b.wav") == (tmp_path / "a/b.wav").resolve()
    for bad in ("../x.wav", "/etc/passwd", "a/../../x", "https://example.org/a.wav"):
        with pytest.raises(ValueError):
            resolve_under(tmp_path, bad)


def test_evidence_keeps_segment_ids():
    ev = _examples()[7]
    assert ev.segment_ids() == ("r1_0002",)
