"""The offline LLM agent's Table II rows: in the default pipeline, on a stratified subset, cheap
prompts, plans shared between setups, and one listening pass per clip per query (issue #17)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from agent_helpers import FakeEmotionLabeler, emotion_queries
from harp_lib.agent.heard import compact_labels
from harp_lib.stages.llm_rows import assign_workers, plan_groups, subset_query_ids
from harp_lib.agent.multimodal import heard_labels, render_view, visible_sets
from harp_lib.retrieval.references import Hearing
from harp_lib.agent.runner import Agent
from harp_lib.retrieval.tools import QueryEncoder, retrieve
from harp_lib.config import SETUPS, load_config
from harp_lib.core.jsonl import write_jsonl
from harp_lib.core.schema import QUERY_TYPE_DOMAIN, Query

ROOT = Path(__file__).resolve().parents[2]


class CountingHearing(Hearing):
    """Counts the labelling passes (``label_spans`` calls) over the evidence clips."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.passes = 0

    def label_spans(self, *a, **kw):
        self.passes += 1
        return super().label_spans(*a, **kw)


def _ctx_and_evidence(bench, setup, hearing):
    ag = Agent(bench["index"], setup, None, domain="emotion", encoder=QueryEncoder(bench["index"].spaces,
                                                                                   bench["embedders"]),
               hearing=hearing)
    q = emotion_queries()[0]
    ctx = ag.context(q, bench["rec"], bench["root"], bench["gt"])
    plan, _ = ag.planner.plan(ctx)
    return ag, q, ctx, retrieve(plan, ctx)


@pytest.mark.parametrize("setup", ["A4", "A5", "A6", "A7"])
def test_listen_once_rule_view_and_llm_evidence_share_one_labelling_pass(emotion_bench, setup):
    hearing = CountingHearing("emotion", labelers=[FakeEmotionLabeler()])
    ag, q, ctx, ev = _ctx_and_evidence(emotion_bench, setup, hearing)
    assert any(s.items for s in ev.sets)
    sets, notes = visible_sets(ctx, ev)                 # the rule answerer's view
    view = render_view(ctx, ev)                         # its text form
    assert hearing.passes == 1, hearing.passes          # one labelling pass for both
    heard, _, _ = heard_labels(ctx, ev)
    assert hearing.passes == 1 and heard
    for (si, ii), h in heard.items():                   # the same labels reach both answerers
        if not SETUPS[setup].show_metadata:             # audio only: the rule answerer's labels are the heard ones
            assert sets[si][1][ii].labels == h
    # and the memo changes nothing: a fresh context (no memo) gives the same view and evidence
    _, _, fresh, ev2 = _ctx_and_evidence(emotion_bench, setup, Hearing("emotion", labelers=[FakeEmotionLabeler()]))
    assert ev2 == ev
    assert (visible_sets(fresh, ev2), render_view(fresh, ev2)) == ((sets, notes), view)


def test_compact_labels_keep_what_answers_are_decided_on():
    lab = {"primary": "1 cough", "cough_count": 1, "events": ["cough"], "event_times": [[1.0, 1.5]],
           "symptoms": ["fever"], "symptom_hits": [["fever", 0.1, 0.4]], "symptoms_negated": []}
    assert compact_labels(lab) == "primary=1 cough, cough_count=1, events=[cough], symptoms=[fever]"
    assert compact_labels({"primary": "Sad", "scores": {"Sad": 0.9}, "valence": 0.2}) == "primary=Sad, V=0.20"


def _write_bench(root: Path, per_type: int = 3) -> dict[str, list[Query]]:
    out = {}
    for domain in ("emotion", "clinical", "song"):
        qs = []
        for t, d in QUERY_TYPE_DOMAIN.items():
            if d != domain:
                continue
            for k in (3, 1, 2)[:per_type]:                  # written out of order
                qs.append(Query(f"{t}-{k:04d}", domain, "r1", t, f"question {t} {k}", {}))
        (root / domain).mkdir(parents=True)
        write_jsonl(root / domain / "queries.jsonl", qs)
        out[domain] = qs
    return out


@pytest.mark.parametrize("per_type", [1, 2])
def test_llm_subset_covers_every_query_type_of_every_domain(tmp_path, per_type):
    qs = _write_bench(tmp_path / "bench")
    cfg = load_config(overrides={"paths": {"benchmark": str(tmp_path / "bench")}, "llm_rows": {"per_type": per_type}})
    total = 0
    for domain, queries in qs.items():
        ids = subset_query_ids(cfg, domain)
        types = {q.query_id: q.query_type for q in queries}
        want = {t for t, d in QUERY_TYPE_DOMAIN.items() if d == domain}
        assert {types[i] for i in ids} == want, domain                     # every type of the domain
        for t in want:                                                     # the first N ids, sorted
            assert sorted(i for i in ids if types[i] == t) == [f"{t}-{k:04d}" for k in range(1, per_type + 1)]
        total += len(ids)
    assert total == per_type * len(QUERY_TYPE_DOMAIN) == per_type * 10


def test_llm_rows_are_their_own_pipeline_that_prints_its_cost_first():
    """50 questions x A1-A5 on the 0.5B cost ~24 min on 2 cores: outside the default `dvc repro`
    (issue #31: a separate target whose cost is printed before it runs)."""
    root = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    assert not {"llm_rows", "llm_table"} & set(root)
    assert not any("table2_llm" in str(st) or "data/llm" in str(st) for st in root.values())
    dvc = yaml.safe_load((ROOT / "pipelines" / "llm" / "dvc.yaml").read_text())["stages"]
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    assert dvc["llm_rows"]["foreach"] == params["domains"]          # templating cannot read ../../params.yaml
    body = dvc["llm_rows"]["do"]
    assert body["wdir"] == "../.." and dvc["llm_table"]["wdir"] == "../.."
    assert body["cmd"][0] == ".venv/bin/python scripts/llm_rows_estimate.py ${item}"
    assert "04b_llm_rows" in body["cmd"][1]
    outs = [next(iter(o)) if isinstance(o, dict) else o for o in dvc["llm_table"]["outs"]]
    assert "results/tables/table2_llm.md" in outs and "data/llm/scores" in dvc["llm_table"]["deps"]
    assert "data/scores" in dvc["llm_table"]["deps"]                     # the rule rows sit next to them
    assert params["llm_rows"]["workers"] == 2 and params["llm_rows"]["per_type"] >= 1


def test_the_cost_estimate_counts_the_calls_run_llm_rows_makes(tmp_path):
    import importlib.util
    spec = importlib.util.spec_from_file_location("llm_rows_estimate", ROOT / "scripts" / "llm_rows_estimate.py")
    est = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(est)
    bench = tmp_path / "b"
    _write_bench(bench, per_type=4)
    cfg = load_config(overrides={"paths": {"benchmark": str(bench)}, "llm_rows": {"per_type": 3}})
    cost = tmp_path / "cost.json"
    cost.write_text(json.dumps({"calls": [{"kind": "plan", "cpu_sec": 2.0}, {"kind": "answer", "cpu_sec": 5.0},
                                          {"kind": "answer", "cpu_sec": 7.0}]}))
    e = est.estimate(cfg, "emotion", cost)
    n = 3 * len({t for t, d in QUERY_TYPE_DOMAIN.items() if d == "emotion"})
    assert e["questions"] == n and e["setups"] == ["A1", "A2", "A3", "A4", "A5"]
    assert (e["plan_calls"], e["answer_calls"]) == (3 * n, 5 * n)         # A3-A5 share one plan
    assert e["cpu_sec"] == round(3 * n * 2.0 + 5 * n * 6.0)
    assert e["wall_sec"] == round(n * (2.0 + 3 * 6.0))                    # the busiest worker: A3-A5
    assert "qwen2.5-coder-0.5b" in est.describe(e)
    cfg1 = load_config(overrides={"paths": {"benchmark": str(bench)}, "llm_rows": {"per_type": 3, "workers": 1}})
    assert est.estimate(cfg1, "emotion", cost)["wall_sec"] == e["cpu_sec"]


def test_rows_config_caps_the_plan_sets_of_the_llm_rows_only():
    from harp_lib.agent.context import agent_params
    from harp_lib.stages.llm_rows import rows_config
    cfg = load_config(overrides={"llm_rows": {"max_sets": 3}, "agent": {"max_sets": 6}})
    r = rows_config(cfg)
    assert agent_params(r).max_sets == 3 and agent_params(cfg).max_sets == 6
    assert r.get("paths.predictions") == cfg.get("llm_rows.predictions")
    assert agent_params(rows_config(load_config(overrides={"llm_rows": {"max_sets": None}}))).max_sets == \
        load_config().get("agent.max_sets")


def test_setups_sharing_a_plan_prompt_run_in_one_worker():
    assert plan_groups(["A1", "A2", "A3", "A4", "A5", "A6", "A7"]) == [["A1"], ["A2"], ["A3", "A4", "A5"],
                                                                       ["A6"], ["A7"]]
    bins = assign_workers(["A1", "A2", "A3", "A4", "A5", "A6", "A7"], 2)
    assert sorted(s for b in bins for s in b) == ["A1", "A2", "A3", "A4", "A5", "A6", "A7"]
    assert any({"A3", "A4", "A5"} <= set(b) for b in bins)
    assert assign_workers(["A5", "A3"], 4) == [["A5", "A3"]]               # one group: one worker


def test_stored_llm_predictions_carry_no_timings_or_cache_hits():
    """data/llm/predictions are DVC outs: a run on a faster CPU or with a colder reply cache must
    not change their bytes, so timings and cache hits go to the timings side file."""
    from harp_lib.stages.llm_rows import split_run_state
    from harp_lib.core.schema import Evidence, Plan, Prediction
    p = Prediction("q1", "A5", "emotion", "rec", "counting", Plan(), Evidence(), "3",
                   backends={"planner": "llm", "planner_model": "m", "planner_cached": True,
                             "answerer_cached": False}, timings={"plan_sec": 1.234, "total_sec": 2.5})
    side, (kept,) = split_run_state([p])
    assert kept.timings == {} and kept.backends == {"planner": "llm", "planner_model": "m"}
    assert side == {"q1": {"plan_sec": 1.234, "total_sec": 2.5, "planner_cached": True, "answerer_cached": False}}
    text = json.dumps(kept.to_dict())
    assert "cached" not in text and "_sec" not in text
