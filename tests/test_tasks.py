"""harp_lib.tasks: the query-type registry, typed ground truth, and a toy 11th type that flows
through the rule judge, the oracle, the rule answerer, the human-study scorer and Table II
without touching any other module."""
from __future__ import annotations

import json
from dataclasses import FrozenInstanceError, dataclass
from pathlib import Path
from typing import Optional

import pytest

from harp_lib import tasks
from harp_lib.agent.answerer import RuleAnswerer
from harp_lib.agent.oracle import OraclePlanner
from harp_lib.config import get_setup
from harp_lib.evaluate.human import is_correct
from harp_lib.evaluate.judge import JudgeInput, judge_predictions
from harp_lib.evaluate.rule_judge import RuleJudge
from harp_lib.evaluate.scoring import score_predictions
from harp_lib.evaluate.store import Benchmark
from harp_lib.evaluate.tables import table2
from harp_lib.core.record import SchemaError
from harp_lib.core.schema import (QUERY_TYPE_COLUMN, QUERY_TYPE_DOMAIN, QUERY_TYPES, Evidence, EvidenceItem,
                                  EvidenceSet, Plan, PlanSet, Prediction, Query, Segment)
from harp_lib.tasks.base import Task, TypedRecord, cite


def test_registry_matches_the_paper_vocabulary():
    assert tasks.names() == QUERY_TYPES
    for t in tasks.all_tasks():
        assert (t.column, t.domain) == (QUERY_TYPE_COLUMN[t.name], QUERY_TYPE_DOMAIN[t.name])
    assert [t.name for t in tasks.for_domain("clinical")] == ["reported", "exhibited"]
    with pytest.raises(tasks.UnknownTaskError, match="unknown query type 'nope'.*registered types"):
        tasks.get("nope")


def _bench_queries(root: Path) -> list[dict]:
    rows = []
    for f in sorted(root.glob("*/queries.jsonl")):
        rows += [json.loads(line) for line in f.read_text(encoding="utf-8").splitlines() if line.strip()]
    return rows


def test_typed_records_round_trip_the_benchmark_json(ci_benchmark):
    rows = _bench_queries(ci_benchmark)
    assert {r["query_type"] for r in rows} == set(QUERY_TYPES)
    for r in rows:
        task = tasks.get(r["query_type"])
        q = Query.from_dict(r) if hasattr(Query, "from_dict") else None
        for cls, key in ((task.GroundTruth, "ground_truth"), (task.JudgeInfo, "judge_info")):
            rec = cls.from_dict(r[key])
            assert json.dumps(rec.to_dict()) == json.dumps(r[key]), (r["query_id"], key)
            assert cls is not tasks.base.AnyRecord
            assert rec.extra == {}, f"{r['query_id']}: {key} keys without a typed field: {sorted(rec.extra)}"
        if q is not None:
            assert task.ground_truth(q).to_dict() == r["ground_truth"]


def test_typed_record_is_frozen_and_keeps_unknown_keys():
    gt = tasks.get("locate").GroundTruth.from_dict({"t0": 1.0, "t1": 2.0, "emotion": "Sad", "new_key": 3})
    assert (gt.t0, gt.emotion, gt.extra) == (1.0, "Sad", {"new_key": 3})
    assert list(gt.to_dict()) == ["t0", "t1", "emotion", "new_key"]
    with pytest.raises(FrozenInstanceError):
        gt.t0 = 5.0
    with pytest.raises(TypeError, match="expected a JSON object"):
        tasks.get("state").GroundTruth.from_dict(["Happy"])


# ---------------------------------------------------------------------------------------
# A toy 11th type, defined in this file only
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class LaughGT(TypedRecord):
    laughs: Optional[int] = None


class LaughTask(Task):
    """How many times does the speaker laugh?  (the count is the decision)"""
    name, domain, column, order = "laugh_count", "emotion", "Laughs", 55   # between Locate+ and Semantic
    GroundTruth = LaughGT
    human_form = ("choice", [("0", "None"), ("1", "Once"), ("2", "Twice")])
    judge_rules = "YES when the count named equals {laughs}."

    def parse_decision(self, decision):
        words = {"none": 0, "once": 1, "twice": 2}
        for w in decision.lower().replace(".", " ").split():
            if w.isdigit():
                return int(w)
            if w in words:
                return words[w]
        return None

    def verdict(self, query, decision, *, tol):
        want, said = self.ground_truth(query).laughs, self.parse_decision(decision)
        return int(said == want), f"GT {want} laughs; answer says {said}"

    def rule_answer(self, ctx, sets):
        hits = [it for _, items in sets for it in items if it.labels.get("primary") == "laugh"]
        return str(len(hits)), "; ".join(cite(it, "primary=laugh") for it in hits) or "no laugh heard"

    def human_correct(self, query, choice, *, tol):
        return int(choice) == self.ground_truth(query).laughs


@pytest.fixture
def toy_type():
    tasks.register(LaughTask)
    yield tasks.get("laugh_count")
    tasks.unregister("laugh_count")
    assert "laugh_count" not in tasks.names() and "laugh_count" not in QUERY_TYPE_DOMAIN


class _Ctx:
    def __init__(self, q):
        self.query, self.setup = q, get_setup("A1")


def test_an_unregistered_type_is_rejected():
    with pytest.raises(SchemaError, match="unknown query type 'laugh_count'"):
        Query("x", "emotion", "r1", "laugh_count", "?", {})
    with pytest.raises(ValueError, match="already registered by StateTask"):
        class Other(LaughTask):
            name = "state"
        tasks.register(Other)


def test_a_toy_type_flows_through_judge_oracle_answerer_human_and_table(toy_type, tmp_path):
    assert toy_type.column in [t.column for t in tasks.all_tasks()]
    assert tasks.names().index("laugh_count") == tasks.names().index("locate_hard") + 1
    segs = [Segment("r1_0000", "r1", 0.0, 4.0, "S0", "ha ha", {"primary": "laugh"}),
            Segment("r1_0001", "r1", 4.0, 9.0, "S0", "so funny", {"primary": "laugh"})]
    qs = [Query(f"laugh-{i}", "emotion", "r1", "laugh_count", "How often does she laugh?", {"laughs": n},
                gt_segment_ids=("r1_0000", "r1_0001")) for i, n in enumerate((2, 1))]
    bench = Benchmark("emotion", tmp_path, {q.query_id: q for q in qs}, {"r1": segs}, {"r1": 9.0})
    # oracle: the default windows of a Task (one per evidence segment)
    plan, errs = OraclePlanner().plan_for(qs[0], segs, 9.0)
    assert [(s.start, s.end) for s in plan.sets] == [(0.0, 4.0), (4.0, 9.0)] and errs == []
    # rule answerer: dispatch by name
    items = tuple(EvidenceItem(s.id, s.start, s.end, s.speaker, s.text, s.labels, {"time": 1.0}) for s in segs)
    ev = Evidence((EvidenceSet(1, "from 0.0 to 9.0 seconds", 0.0, 9.0, items),))
    answers = [RuleAnswerer.answer_as("laugh_count", _Ctx(q), [(ev.sets[0], list(items))]) for q in qs]
    assert answers[0][0] == "2" and "[0.0s–4.0s] S0 primary=laugh" in answers[0][1]
    preds = [Prediction(q.query_id, "A1", "emotion", "r1", q.query_type,
                        Plan((PlanSet("from 0.0 to 9.0 seconds", time=True, start=0.0, end=9.0),)), ev, a, why)
             for q, (a, why) in zip(qs, answers)]
    # rule judge: the toy verdict
    js = judge_predictions(preds, bench, RuleJudge(), resume=False)
    assert [j.answer for j in js] == [1, 0]
    assert "GT 1 laughs; answer says 2" in js[1].reasons["answer"]
    inp = JudgeInput(qs[0], preds[0], get_setup("A1"), tuple(segs), 9.0)
    assert RuleJudge().judge(inp).rationale == 1
    # Table II gets a "Laughs" column between Locate+ and Semantic
    t2 = table2(score_predictions(preds, js, bench))
    cols = list(t2.columns)
    assert cols.index("Laughs") == cols.index("Locate+") + 1
    assert t2.loc["A1", "Laughs"] == 50.0 and t2.loc["R1", "Laughs"] == 50.0
    assert t2.loc["A1", "Avg"] == 50.0      # the macro average counts the new emotion column
    # human study
    assert is_correct(qs[0], "2", tol=3.0) is True and is_correct(qs[1], "2", tol=3.0) is False


def test_rule_answerer_dispatch_is_one_line_by_name():
    """The rule answerer takes the task by a name (the `rule` branch passes a text intent)."""
    import inspect
    src = inspect.getsource(RuleAnswerer.answer_as)
    assert "tasks.get(task_name).rule_answer(ctx, sets)" in src
