"""Answer accuracy: every paraphrase bound and run through the agent, its plan hit taken and its
answer graded by the rule judge's answer rule (rows expecting ``unsupported`` must be answered
"unsupported question"), and, with ``template``, the bound benchmark query in its template wording
beside it (:func:`evaluate`, one result dict per row)."""
from __future__ import annotations

import time
from collections import defaultdict
from pathlib import Path
from typing import Optional

from harp_lib.agent.context import agent_params
from harp_lib.agent.runner import Agent
from harp_lib.core.jsonl import read_jsonl
from harp_lib.core.schema import QUERY_TYPE_DOMAIN, Query, Recording
from harp_lib.core.timespan import song_spans
from harp_lib.evaluate.paraphrase_bind import bind
from harp_lib.evaluate.paraphrase_plans import _domain_index, plan_hit
from harp_lib.evaluate.paraphrase_set import load_paraphrases
from harp_lib.evaluate.rule_judge import RuleJudge
from harp_lib.retrieval.tools import QueryEncoder

__all__ = ["evaluate"]


def _agent_kind(agent: str) -> tuple[str, str]:
    if "+" in agent:
        p, a = agent.split("+", 1)
        return p, a
    return agent, agent


def _run_one(ag, judge, r: dict, q, rec, bench: Path, gt_rec: list, ix, point_window: float) -> dict:
    """One question through the agent: plan hit, answer, verdict."""
    t0 = time.perf_counter()
    p = ag(q, rec, bench, gt_rec)
    try:
        songs = song_spans(ix.segments(q.recording_id))
    except KeyError:
        songs = {}
    hit = plan_hit(r, q, p.plan, gt_rec, songs, rec.duration, point_window)
    if r.get("expect") == "unsupported":
        ok, why = int(p.answer.strip().lower().startswith("unsupported")), "expects 'unsupported question'"
    else:
        v = judge.answer_verdict(q, p.answer or "")
        ok, why = v.value, v.reason
    return {"text": q.text, "plan_hit": hit, "answer": p.answer, "correct": int(ok), "verdict": why,
            "error": p.error, "sec": round(time.perf_counter() - t0, 3),
            # what was planned (why a plan missed): each set's window phrase and tools
            "plan": [{"localize": ps.localize, "tools": sorted(ps.tools_used())} for ps in p.plan.sets]}


def _template_row(r: dict) -> dict:
    """The row as its bound query asks it in template wording: no polarity / swap / absence."""
    return {k: v for k, v in r.items() if k not in ("polarity", "swap", "absence")}


def evaluate(cfg, bench_root: Path, *, agent: str = "rule", setup: str = "A3", index: str = "gt",
             rows: Optional[list[dict]] = None, limit: Optional[int] = None, progress: bool = False,
             client=None, template: bool = False) -> list[dict]:
    """Run every paraphrase; one result dict per row (plan hit, answer, verdict, timings).

    ``template``: also run each row's bound benchmark query in its template wording (the
    benchmark's question text and ground truth), as ``template`` in the row's result.
    ``client``: the LLM client of an ``llm`` planner / answerer (default: built from ``llm:``).
    """
    rows = load_paraphrases() if rows is None else rows
    if limit is not None:
        rows = rows[: int(limit)]
    planner, answerer = _agent_kind(agent)
    judge, params = RuleJudge(), agent_params(cfg)
    pw = float(params.point_window_sec)
    out: list[dict] = []
    by_domain: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        by_domain[QUERY_TYPE_DOMAIN[r["task"]]].append(r)
    for domain, drows in by_domain.items():
        bench = Path(bench_root) / domain
        recs, by_type = _read_bench(bench)
        ix, embedders, gt = _domain_index(cfg, bench, domain, index, recs)
        ag = Agent(ix, setup, cfg, domain=domain, planner=planner, answerer=answerer, params=params,
                   encoder=QueryEncoder(ix.spaces, embedders), client=client)
        out += _run_domain(ag, judge, drows, domain, bench, recs, by_type, gt, ix, pw,
                           template=template, progress=progress)
    return out


def _read_bench(bench: Path) -> tuple[dict, dict]:
    """A domain's recordings by id and its queries by type (in query-id order); a missing file raises."""
    for f in ("recordings.jsonl", "queries.jsonl", "segments.jsonl"):
        if not (bench / f).exists():
            raise FileNotFoundError(f"{bench / f} is missing: build the benchmark first (harp synth) "
                                    f"or pass --bench <folder holding emotion/ clinical/ song/>")
    recs = {x.id: x for x in read_jsonl(bench / "recordings.jsonl", Recording)}
    by_type: dict[str, list] = defaultdict(list)
    for x in sorted(read_jsonl(bench / "queries.jsonl", Query), key=lambda x: x.query_id):
        by_type[x.query_type].append(x)
    return recs, by_type


def _run_domain(ag, judge, drows: list[dict], domain: str, bench: Path, recs: dict, by_type: dict, gt: list,
                ix, pw: float, *, template: bool, progress: bool) -> list[dict]:
    """One domain's rows, bound and run through the agent (and in template wording); unbound rows skipped."""
    out: list[dict] = []
    gt_by_rec: dict[str, list] = defaultdict(list)
    for s in gt:
        gt_by_rec[s.recording_id].append(s)
    done: dict[str, dict] = {}                       # template runs by base query id
    for r in drows:
        b = bind(r, by_type, recs)
        if b is None:
            out.append({"id": r["id"], "task": r["task"], "domain": domain, "split": r.get("split"),
                        "skipped": "no query of this task, or no consultation window on a session"})
            continue
        q, base = b
        rec, g = recs[q.recording_id], gt_by_rec[q.recording_id]
        res = {"id": r["id"], "task": r["task"], "domain": domain, "base": base.query_id,
               "split": r.get("split"), "expect": r.get("expect", "answer"),
               **_run_one(ag, judge, r, q, rec, bench, g, ix, pw)}
        if template and r.get("expect") != "unsupported":
            if base.query_id not in done:
                done[base.query_id] = _run_one(ag, judge, _template_row(r), base, rec, bench, g, ix, pw)
            res["template"] = {k: done[base.query_id][k] for k in ("plan_hit", "correct", "answer")}
        out.append(res)
        if progress:
            print(f"{r['id']} {r['task']:<11} plan={res['plan_hit']} ok={res['correct']} {res['answer'][:40]!r}",
                  flush=True)
    return out
