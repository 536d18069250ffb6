"""The oracle planner: plans built from ground truth (setups A6, A7).

Every set is a numeric window with ``time: true`` (the only oracle tool); the windows of each
query type are its task's ``oracle_sets`` (:mod:`harp_lib.tasks`):

* state / locate / locate_hard — one set per ground-truth evidence segment (its window);
* change — the trend window ``[t0, t1]`` of ``ground_truth``;
* comparison — one set per speaker, A first: the hull of that speaker's evidence segments;
* reported / exhibited — one set per evidence segment, or the whole consultation when the
  query has none (a "No" with nothing to find);
* time / position / audio — each song's whole span (``SONG_NN`` ground-truth segments),
  song A first.

Unlike the reference code (health: the first 120 s; songs: the first chunk) every window is
the real evidence window, so retrieval hit rates under the oracle are 1.0 by construction.

>>> from harp_lib.core.schema import Query, Segment
>>> q = Query("q1", "emotion", "r", "change", "how did valence change?",
...           {"direction": "rising", "t0": 30.0, "t1": 60.0})
>>> [(s.start, s.end) for s in OraclePlanner().plan_for(q, [])[0].sets]
[(30.0, 60.0)]
"""
from __future__ import annotations

from typing import Optional, Sequence

from harp_lib import tasks
from harp_lib.core.schema import Plan, PlanSet, Query, Segment

__all__ = ["OraclePlanner"]


class OraclePlanner:
    """Plans from ``Query.gt_segment_ids`` / ``ground_truth`` (needs the ground-truth segments)."""
    name = "oracle"

    def __init__(self):
        pass

    def plan(self, ctx) -> tuple[Plan, dict]:
        plan, errs = self.plan_for(ctx.query, ctx.gt_segments or [], ctx.recording.duration)
        return plan, {"planner": self.name}

    def plan_for(self, q: Query, gt_segments: Sequence[Segment],
                 duration: Optional[float] = None) -> tuple[Plan, list[str]]:
        by_id = {s.id: s for s in gt_segments}
        errs: list[str] = []
        ev = []
        for sid in q.gt_segment_ids:
            if sid in by_id:
                ev.append(by_id[sid])
            else:
                errs.append(f"ground-truth segment {sid!r} of query {q.query_id} not found in segments.jsonl")
        ev.sort(key=lambda s: (s.start, s.id))
        task = tasks.get(q.query_type)
        sets, more = task.oracle_sets(q, ev, list(gt_segments))
        errs += more
        if not sets:
            sets = [PlanSet(localize="full recording", time=True)]
            if task.empty_oracle_is_error():
                errs.append(f"query {q.query_id}: no ground-truth evidence; used the full recording")
        return Plan(sets=tuple(sets), oracle=True, errors=tuple(errs)), errs
