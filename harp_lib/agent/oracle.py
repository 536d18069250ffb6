"""The oracle planner: plans built from ground truth (setups A6, A7).

Every set is a numeric window with ``time: true`` (the only oracle tool):

* state / locate / locate_hard — one set per ground-truth evidence segment (its window);
* change — the trend window ``[t0, t1]`` of ``ground_truth``;
* comparison — one set per speaker, A first: the hull of that speaker's evidence segments;
* reported / exhibited — one set per evidence segment, or the whole consultation when the
  query has none (a "No" with nothing to find);
* time / position / audio — each song's whole span (``SONG_NN`` ground-truth segments),
  song A first.

Unlike the reference code (health: the first 120 s; songs: the first chunk) every window is
the real evidence window, so retrieval hit rates under the oracle are 1.0 by construction.

>>> from harp_lib.schema import Query, Segment
>>> q = Query("q1", "emotion", "r", "change", "how did valence change?",
...           {"direction": "rising", "t0": 30.0, "t1": 60.0})
>>> [(s.start, s.end) for s in OraclePlanner().plan_for(q, [])[0].sets]
[(30.0, 60.0)]
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Optional, Sequence

from ..schema import Plan, PlanSet, Query, Segment
from ..timespan import Span, song_spans

__all__ = ["OraclePlanner"]


def _set(span: Span, note: str = "") -> PlanSet:
    loc = f"from {span.start:.1f} to {span.end:.1f} seconds" + (f" ({note})" if note else "")
    return PlanSet(localize=loc, time=True, start=span.start, end=span.end)


def _role_of(seg: Segment, query: Query) -> Optional[str]:
    for key in ("role", "speaker_role", "ref_role"):
        v = seg.custom.get(key)
        if v in ("A", "B"):
            return v
    spk = query.custom.get("speakers") or query.custom.get("speaker_map") or {}
    if isinstance(spk, dict):
        for role, sid in spk.items():
            if sid == seg.speaker and role in ("A", "B"):
                return role
    for role in ("A", "B"):
        v = query.custom.get(f"speaker_{role.lower()}") or query.custom.get(f"speaker_{role}")
        if isinstance(v, dict):
            v = v.get("speaker") or v.get("id")
        if v is not None and v == seg.speaker:
            return role
    return None


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
        gt = q.ground_truth or {}
        sets: list[PlanSet] = []
        qt = q.query_type
        if qt == "change" and "t0" in gt and "t1" in gt:
            sets = [_set(Span(float(gt["t0"]), float(gt["t1"])), "trend window")]
        elif qt == "comparison":
            groups: "OrderedDict[str, list[Segment]]" = OrderedDict()
            for s in ev:
                role = _role_of(s, q)
                groups.setdefault(role or f"spk:{s.speaker}", []).append(s)
            keys = sorted(groups, key=lambda k: (0 if k == "A" else 1 if k == "B" else 2, groups[k][0].start))
            for k in keys:
                segs = groups[k]
                sets.append(_set(Span(min(s.start for s in segs), max(s.end for s in segs)), f"speaker {k}"))
            if not sets and "t0" in gt and "t1" in gt:
                sets = [_set(Span(float(gt["t0"]), float(gt["t1"])))]
                errs.append("no speaker evidence segments; used the comparison window")
        elif qt in ("time", "position", "audio"):
            songs = song_spans(gt_segments)
            for role in ("song_a", "song_b"):
                info = q.custom.get(role) or {}
                n = info.get("index")
                if isinstance(n, int) and n in songs:
                    sets.append(_set(songs[n], f"song {n}"))
            if len(sets) < 2:
                sets = [_set(Span(s.start, s.end), s.speaker or "") for s in
                        sorted(ev, key=lambda s: q.gt_segment_ids.index(s.id))]
        else:  # state, locate, locate_hard, reported, exhibited
            sets = [_set(Span(s.start, s.end)) for s in ev]
            if not sets and qt in ("locate", "locate_hard") and "t0" in gt and "t1" in gt:
                sets = [_set(Span(float(gt["t0"]), float(gt["t1"])))]
        if not sets:
            end = duration if duration else float("inf")
            sets = [PlanSet(localize="full recording", time=True)]
            if qt not in ("reported", "exhibited"):
                errs.append(f"query {q.query_id}: no ground-truth evidence; used the full recording")
        return Plan(sets=tuple(sets), oracle=True, errors=tuple(errs)), errs
