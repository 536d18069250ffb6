"""One query step by step, for the notebooks that show how a stage works (02_index, 03_plan_and_retrieve,
04_answer, 04b_llm_rows, fig1_pipeline_walkthrough): nothing here writes a DVC output."""
from __future__ import annotations

from typing import Optional

from harp_lib.config import Config
from harp_lib.core.jsonl import read_jsonl
from harp_lib.core.paths import DataPaths
from harp_lib.core.schema import Query, Recording
from harp_lib.evaluate.scoring import score_predictions
from harp_lib.evaluate.store import load_benchmark
from harp_lib.retrieval.index import SegmentIndex
from harp_lib.stages.common import group_by
from harp_lib.viz.trace import trace_query as trace_one

__all__ = ["pick_queries", "trace_query"]


def pick_queries(cfg: Config, domain: str, n: int = 1) -> list:
    """The first query of each type (round robin) of ``domain``, ``n`` in all, sorted by id."""
    qs = read_jsonl(DataPaths(cfg).queries_manifest(domain), Query)
    by_type = group_by(sorted(qs, key=lambda q: q.query_id), lambda q: q.query_type)
    out, i = [], 0
    while len(out) < n and any(i < len(v) for v in by_type.values()):
        out += [v[i] for _, v in sorted(by_type.items()) if i < len(v)]
        i += 1
    return out[:n]


def trace_query(cfg: Config, domain: str, query_id: str, setup: str = "A5", *, judge: Optional[str] = None,
                index=None):
    """Run one query of ``domain`` step by step with the same planner, tools and answerer as
    ``harp infer``: :func:`harp_lib.viz.trace.trace_query` (the one trace) on the benchmark and
    index of ``cfg``, plus the query's :class:`~harp_lib.core.schema.Score` in ``.score``.

    Nothing is written; the judge (default ``evaluate.table_judge``) grades the answer in memory.
    Returns a :class:`harp_lib.viz.trace.QueryTrace` (``plan``, ``plan_windows``, ``tool_hits``,
    ``hits_table()``, ``evidence``, ``evidence_text``, ``answer``, ``rationale``, ``judgement``,
    ``score``, ``gt_segments``).
    """
    bench = load_benchmark(domain, cfg)
    q = bench.query(query_id)
    recs = {r.id: r for r in read_jsonl(bench.root / "recordings.jsonl", Recording)}
    index = index or SegmentIndex.load(DataPaths(cfg).index(domain))
    jn = judge or cfg.evaluate.table_judge
    tr = trace_one(q, index, setup, cfg, recording=recs[q.recording_id], bench_dir=bench.root,
                   gt_segments=bench.recording_segments(q.recording_id), judges=(jn,), with_clips=False)
    j = tr.judgements.get(jn)
    if not hasattr(j, "answer"):
        raise RuntimeError(f"query {query_id}: judge {jn!r} gave no verdict ({j})")
    tr.score = score_predictions([tr.prediction], [j], bench,
                                 point_window=float(cfg.get("agent.point_window_sec")))[0]
    return tr

