"""Cost of the offline LLM agent per question (issue #30): CPU-s, tokens in/out per model call, answers.

The fixed question set: the first ``--per-type`` query ids of every query type of every domain
(2: 20 questions on mini).  Every setup of ``--setups`` answers them with the LLM planner and the LLM
answerer on llm backend ``local`` (one llama.cpp thread), the reply cache in a fresh temporary folder
(nothing cached), predictions into a temporary folder (the repository's files are never touched).

    PYTHONPATH=$PWD .venv/bin/python scripts/llm_cost.py --setups A3 --out results/bench/llm_cost.json

Writes ``--out`` (JSON: per call model, kind, prompt/completion tokens, cached prompt tokens, CPU-s;
per question CPU-s of the model calls and of the whole process, the answer and the judge's verdict).
"""
from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from pathlib import Path


class CallLog:
    """A client wrapper that records every completion (the attributes are the client's)."""

    def __init__(self, client):
        self._c, self.calls, self.query = client, [], None

    def __getattr__(self, k):
        return getattr(self._c, k)

    def complete(self, parts, **kw):
        r = self._c.complete(parts, **kw)
        u = r.usage or {}
        self.calls.append({"query": self.query, "kind": "answer" if r.text.startswith("{\"rationale") else "plan",
                           "cached": r.cached, "prompt_tokens": u.get("prompt_tokens"),
                           "prompt_evaluated": u.get("prompt_n"), "prompt_reused": u.get("cache_n"),
                           "completion_tokens": u.get("completion_tokens"), "cpu_sec": u.get("cpu_sec"),
                           "wall_sec": u.get("wall_sec"), "text": r.text})
        return r


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--setups", default="A3")
    ap.add_argument("--per-type", type=int, default=2)
    ap.add_argument("--profile", default="mini")
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    from harp_lib.stages.llm_rows import llm_options, subset_query_ids
    from harp_lib.agent.runner import run_setup
    from harp_lib.config import load_config
    from harp_lib.evaluate.rule_judge import RuleJudge
    from harp_lib.core.jsonl import read_jsonl
    from harp_lib.core.schema import Query
    from harp_lib.llm import make_client
    tmp = Path(tempfile.mkdtemp(prefix="harp_llm_cost_"))
    cfg = load_config(profile=a.profile, overrides={
        "llm_rows": {"per_type": a.per_type}, "paths": {"predictions": str(tmp / "pred")},
        "agent": {"max_sets": load_config(profile=a.profile).get("llm_rows.max_sets") or 6}})
    opts = {**llm_options(cfg), "cache_dir": str(tmp / "cache"), "slots": 2, "threads": 1}
    log = CallLog(make_client(opts, root=cfg.root))
    rows = []
    for domain in cfg.get("domains"):
        ids = subset_query_ids(cfg, domain)
        qs = {q.query_id: q for q in read_jsonl(cfg.path("paths.benchmark") / domain / "queries.jsonl", Query)}
        for setup in a.setups.split(","):
            for qid in ids:
                log.query = (domain, setup, qid)
                c0 = time.process_time()
                [p] = run_setup(cfg, domain, setup, query_ids=[qid], resume=False, progress=False,
                                planner="llm", answerer="llm", client=log)
                rows.append({"domain": domain, "setup": setup, "query_id": qid, "answer": p.answer,
                             "error": p.error, "process_cpu_sec": round(time.process_time() - c0, 3),
                             "verdict": RuleJudge().answer_verdict(qs[qid], p.answer or "").value})
                print(domain, setup, qid, rows[-1]["process_cpu_sec"], repr(p.answer)[:60], flush=True)
    model_cpu = {}
    for c in log.calls:
        model_cpu[tuple(c["query"])] = model_cpu.get(tuple(c["query"]), 0.0) + (c["cpu_sec"] or 0.0)
    for r in rows:
        r["model_cpu_sec"] = round(model_cpu.get((r["domain"], r["setup"], r["query_id"]), 0.0), 3)
    n = len(rows)
    summary = {"questions": n, "model": opts["model"], "setups": a.setups,
               "model_cpu_sec_per_question": round(sum(r["model_cpu_sec"] for r in rows) / n, 2),
               "process_cpu_sec_per_question": round(sum(r["process_cpu_sec"] for r in rows) / n, 2),
               "model_calls": sum(1 for c in log.calls if not c["cached"]),
               "correct": sum(1 for r in rows if r["verdict"]),
               "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024}
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps({"summary": summary, "questions": rows,
                                       "calls": [{**c, "query": list(c["query"])} for c in log.calls]},
                                      indent=1) + "\n", encoding="utf-8")
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
