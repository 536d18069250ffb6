"""Property-based fuzzing of the three parsers that read text we do not control.

* :func:`harp_lib.core.timespan.localize` — planner / query time phrases: only
  :class:`LocalizeError` may escape, and a returned span lies within ``[0, duration]``;
* :func:`harp_lib.agent.plan_parse.parse_plan` — raw LLM plans: any text gives a :class:`Plan`
  (errors recorded in ``Plan.errors``), never an exception;
* :func:`harp_lib.core.jsonl.iter_jsonl` — arbitrary bytes on disk give records or
  :class:`SchemaError` only.
"""
from __future__ import annotations

import json
import math

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from harp_lib.agent.plan_parse import parse_plan
from harp_lib.config import TOOLS
from harp_lib.core.jsonl import read_jsonl
from harp_lib.core.record import SchemaError
from harp_lib.core.schema import REFERENCE_ROLES, Plan, Prediction, Query, Recording, Segment
from harp_lib.core.timespan import LocalizeError, Span, localize

FUZZ = settings(max_examples=200, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

# time-phrase vocabulary, so the fuzzer reaches the deep branches of localize, not only "no match"
_WORDS = ["around", "at", "from", "to", "between", "and", "the", "first", "last", "song", "track",
          "minutes", "min", "m", "seconds", "sec", "s", "hours", "h", "half", "a", "quarter", "full",
          "recording", "whole", "th", "st", "nd", "-", "–", "~", ":", "[", "]", ",", "twenty", "one",
          "three", "song 3", "2nd", "last song", "12:30", "1:02:03", "99:99", "0", "1e9",
          "9" * 30, "0.5", "minute", "until", "through", "entire thing", "all sections"]
phrases = st.one_of(
    st.text(max_size=60),
    st.lists(st.one_of(st.sampled_from(_WORDS), st.integers(-10, 10 ** 12).map(str),
                       st.floats(0, 1e6, allow_nan=False).map(lambda f: f"{f:g}")),
             max_size=8).map(" ".join),
)
# recording durations are stored to the millisecond (schema.round_time), as spans are
durations = st.one_of(st.none(), st.floats(0, 1e6, allow_nan=False, allow_infinity=False).map(lambda d: round(d, 3)))


@pytest.mark.slow
@FUZZ
@given(text=phrases, duration=durations, n_songs=st.integers(0, 4))
@example(text="the " + "9" * 5000 + "th song", duration=None, n_songs=2)     # int() digit limit
@example(text="1" + "0" * 400 + " s", duration=None, n_songs=0)              # float overflow -> inf
@example(text="from 0 to " + "9" * 400 + " seconds", duration=60.0, n_songs=0)
@example(text="entire thing", duration=1.687, n_songs=0)
def test_localize_only_raises_localize_error_and_stays_in_range(text, duration, n_songs):
    songs = None
    if n_songs:
        end = duration if duration else 600.0
        step = end / n_songs
        songs = [Span(i * step, (i + 1) * step) for i in range(n_songs)]
    try:
        span = localize(text, duration, songs=songs)
    except LocalizeError:
        return
    assert isinstance(span, Span)
    assert 0.0 <= span.start <= span.end
    assert not math.isnan(span.end)
    if duration is not None:
        assert span.end <= duration + 1e-9, (text, duration, span)


_SET_KEYS = list(TOOLS) + ["localize", "start", "end", "bogus"]
_JSONISH = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), st.text(max_size=20)),
    lambda kids: st.one_of(st.lists(kids, max_size=4),
                           st.dictionaries(st.one_of(st.sampled_from(_SET_KEYS), st.text(max_size=8)), kids,
                                           max_size=6)),
    max_leaves=20)
plan_texts = st.one_of(
    st.text(max_size=200),
    _JSONISH.map(lambda v: json.dumps({"sets": v} if not isinstance(v, dict) else v)),
    st.lists(st.fixed_dictionaries({}, optional={k: _JSONISH for k in _SET_KEYS}), max_size=7).map(
        lambda sets: "```json\n" + json.dumps({"sets": sets}).replace('"', "'") + "\n``` trailing prose"),
)


@FUZZ
@example(text="[" * 100_000, tools=["time"], roles=[], domain=None)              # RecursionError in json
@example(text='{"sets": [{"localize": ' + "1" * 5000 + "}]}", tools=["time"], roles=[], domain=None)
@example(text='{"sets": [{"localize": "x", "start": 1e400, "end": 1e401, "label": "Happy"}]}',
         tools=["label"], roles=["A"], domain="emotion")
@example(text="", tools=[], roles=[], domain="song")
@given(text=plan_texts, tools=st.lists(st.sampled_from(TOOLS), unique=True),
       roles=st.lists(st.sampled_from(REFERENCE_ROLES), unique=True),
       domain=st.sampled_from([None, "emotion", "clinical", "song"]))
@pytest.mark.slow
def test_parse_plan_never_raises(text, tools, roles, domain):
    plan = parse_plan(text, tools=tuple(tools), roles=tuple(roles), domain=domain)
    assert isinstance(plan, Plan)
    assert plan.sets, "a plan with no usable set falls back to one set (and says so)"
    for ps in plan.sets:
        assert set(ps.tools_used()) <= set(tools), "a disabled tool slipped through"
        for k in ("audio_emb", "domain_emb"):
            assert getattr(ps, k) in (None, *roles), "an unknown reference role slipped through"
    json.dumps(plan.to_dict(), allow_nan=False)      # always storable in a Prediction


_VALID = [json.dumps(Segment("r_0000", "r", 0, 1, "S0", "hi").to_dict()).encode(),
          json.dumps(Query("q1", "clinical", "r", "reported", "Cough?", {"answer": "No"}).to_dict()).encode(),
          json.dumps(Recording("r", "clinical", "recordings/r.wav", 3.0).to_dict()).encode()]
blobs = st.one_of(
    st.binary(max_size=300),
    st.lists(st.one_of(st.sampled_from(_VALID), st.binary(max_size=40),
                       st.sampled_from(_VALID).flatmap(lambda v: st.integers(0, len(v)).map(lambda i: v[:i])),
                       _JSONISH.map(lambda v: json.dumps(v).encode())),
             max_size=5).map(b"\n".join),
)


@FUZZ
@example(blob=b"[" * 100_000, cls=Segment)
@example(blob=b'{"id": "a", "recording_id": "r", "start": ' + b"1" * 5000 + b', "end": 2}', cls=Segment)
@example(blob=b'{"id": "a", "recording_id": "r", "start": 0, "end": 1e999}', cls=Segment)
@example(blob=b'{"query_id": "q", "domain": "clinical", "recording_id": "r", "query_type": "reported", '
              b'"text": "t", "ground_truth": {}, "time_ref": NaN}', cls=Query)
@pytest.mark.slow
@example(blob=b"\xef\xbb\xbf" + _VALID[2], cls=Recording)                     # UTF-8 BOM
@example(blob=b"\xff\xfe" + "x".encode("utf-16-le"), cls=Recording)            # UTF-16
@given(blob=blobs, cls=st.sampled_from([Segment, Query, Recording, Prediction]))
def test_jsonl_readers_give_records_or_schema_error(tmp_path_factory, blob, cls):
    p = tmp_path_factory.mktemp("fz") / "x.jsonl"
    p.write_bytes(blob)
    try:
        recs = read_jsonl(p, cls)
    except SchemaError as e:
        assert str(p) in str(e), "the error must name the file"
        return
    assert all(isinstance(r, cls) for r in recs)
