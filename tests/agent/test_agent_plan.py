"""Plan schema, parsing and repair."""
import json

import jsonschema
import pytest

from harp_lib.agent.plan_parse import extract_json, parse_plan
from harp_lib.agent.plan_prompts import plan_prompt
from harp_lib.agent.plan_schema import plan_json_schema
from harp_lib.config import SETUPS, TOOLS
from harp_lib.core.schema import Query

ALL = TOOLS


def _schema_view(plan):
    """A plan as the constrained decoder would emit it (None fields and numeric bounds dropped)."""
    return {"sets": [{k: v for k, v in s.to_dict().items() if v is not None and k not in ("start", "end")}
                     for s in plan.sets]}


@pytest.mark.parametrize("setup", list(SETUPS))
def test_schema_is_valid_json_schema_and_restricted_to_setup_tools(setup):
    tools = SETUPS[setup].tools
    schema = plan_json_schema(tools, roles=("A", "E"), domain="emotion")
    jsonschema.Draft202012Validator.check_schema(schema)
    props = schema["properties"]["sets"]["items"]["properties"]
    assert set(props) == {"localize", *tools}
    assert schema["properties"]["sets"]["items"]["additionalProperties"] is False


def test_schema_accepts_good_plans_and_rejects_disabled_tools_roles_and_labels():
    schema = plan_json_schema(SETUPS["A1"].tools, roles=("A",), domain="song")
    tools = {t: None for t in SETUPS["A1"].tools}        # every enabled tool is decided (null: unused)
    ok = {"sets": [{**tools, "localize": "the 3rd song", "time": True, "label": "Mid"}]}
    jsonschema.validate(ok, schema)
    for bad in ({"sets": [{**tools, "localize": "x", "text_emb": "love"}]},       # tool not in A1
                {"sets": [{**tools, "localize": "x", "label": "Medium"}]},        # not our vocabulary
                {"sets": [{**tools, "time": True}]},                               # localize required
                {"sets": [{"localize": "x", "time": True}]},      # a tool left undecided (the 0.5B's habit)
                {"sets": []}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)
    s2 = plan_json_schema(SETUPS["A2"].tools, roles=("A",), domain="emotion")
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"sets": [{**{t: None for t in SETUPS["A2"].tools}, "localize": "x", "audio_emb": "B"}]},
                            s2)   # unknown role


def test_clinical_label_pattern():
    schema = plan_json_schema(("label",), roles=(), domain="clinical")
    jsonschema.validate({"sets": [{"localize": "full recording", "label": "2 cough"}]}, schema)
    jsonschema.validate({"sets": [{"localize": "full recording", "label": None}]}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"sets": [{"localize": "full recording", "label": "coughing"}]}, schema)


@pytest.mark.parametrize("text", [
    '```json\n{"sets": [{"localize": "around 3 min", "time": true}]}\n```',
    'Here is the plan: {"sets": [{"localize": "around 3 min", "time": true}]} Let me know!',
    "{'sets': [{'localize': 'around 3 min', 'time': True,}],}",
    '[{"localize": "around 3 min", "time": "yes"}]',
    '{"localize": "around 3 min", "time": 1}',
])
def test_repairs_common_llm_output(text):
    p = parse_plan(text, tools=ALL, roles=("A",), domain="emotion")
    assert len(p.sets) == 1 and p.sets[0].localize == "around 3 min" and p.sets[0].time is True
    assert "fell back" not in " ".join(p.errors)


def test_plain_valid_plan_has_no_errors():
    p = parse_plan('{"sets": [{"localize": "12:30 to 15:00", "keyword": "pizza", "audio_emb": "A"}]}',
                   tools=ALL, roles=("A",), domain="emotion")
    assert p.errors == ()
    assert p.sets[0].keyword == "pizza" and p.sets[0].audio_emb == "A"


def test_wrong_types_disabled_tools_unknown_roles_and_labels_are_recorded():
    raw = json.dumps({"sets": [
        {"localize": 95, "keyword": ["red", "car"], "label": "medium", "audio_emb": "Snippet a",
         "domain_emb": "Z", "text_emb": "love song", "mood": "x"},
        {"localize": "", "time": "maybe"},
        "not a set",
    ]})
    p = parse_plan(raw, tools=SETUPS["A1"].tools, roles=("A",), domain="song")
    errs = " | ".join(p.errors)
    s1 = p.sets[0]
    assert s1.localize == "at 95 seconds" and s1.keyword == "red car" and s1.label == "Mid"
    assert s1.audio_emb is None and s1.text_emb is None            # not A1 tools
    assert "'audio_emb' is not enabled" in errs and "'text_emb' is not enabled" in errs
    assert "unknown field 'mood'" in errs and "localize was a number" in errs
    assert p.sets[1].localize == "full recording" and p.sets[1].time is True   # repaired, not dropped
    assert "time='maybe' is not a boolean" in errs and "set 3: not an object" in errs
    assert len(p.sets) == 2

    p2 = parse_plan(raw, tools=ALL, roles=("A",), domain="song")
    assert p2.sets[0].audio_emb == "A" and p2.sets[0].domain_emb is None
    assert "domain_emb='Z' is not an available reference role" in " ".join(p2.errors)
    bad_label = parse_plan('{"sets": [{"localize": "x", "label": "Elated-ish"}]}', tools=ALL, domain="emotion")
    assert bad_label.sets[0].label is None and "not in the emotion vocabulary" in bad_label.errors[0]


def test_unparseable_output_falls_back_loudly_never_silently_empty():
    for text in ("", "I cannot help with that.", '{"sets": [{"localize": "x",', '{"sets": "none"}', '{"sets": []}'):
        p = parse_plan(text, tools=SETUPS["A3"].tools, domain="emotion")
        assert len(p.sets) == 1 and p.sets[0].localize == "full recording" and p.sets[0].time
        assert p.errors and "fell back" in p.errors[-1]
    p = parse_plan("nothing", tools=SETUPS["A2"].tools, fallback=None)
    assert p.sets == () and p.errors[-1] == "plan has no usable set"


def test_too_many_sets_are_cut_with_a_note():
    raw = json.dumps({"sets": [{"localize": f"around {i} min", "time": True} for i in range(1, 10)]})
    p = parse_plan(raw, tools=ALL, max_sets=4)
    assert len(p.sets) == 4 and "kept the first 4 sets" in p.errors[-1]


def test_extract_json_names_the_problem():
    with pytest.raises(ValueError, match="no JSON object"):
        extract_json("no braces here")


def test_plan_prompt_lists_only_enabled_tools_and_fills_everything():
    q = Query("q", "song", "t", "audio", "Song A: [A]. Song B: [B]. Which is better?", {},
              references={"A": "a.wav", "B": "b.wav"})
    txt = plan_prompt(q, tools=SETUPS["A2"].tools, duration=3600.0)
    assert "text_emb:" in txt and "audio_emb:" in txt and "keyword:" not in txt and "label:" not in txt
    assert "one of: A, B" in txt and "1:00:00" in txt and "{" in txt and "Query: Song A" in txt
    assert "{task}" not in txt and "{tools}" not in txt
    for d in ("emotion", "clinical"):
        q2 = Query("q", d, "t", "state" if d == "emotion" else "reported", "x", {})
        assert "Query: x" in plan_prompt(q2, tools=ALL, duration=60)
