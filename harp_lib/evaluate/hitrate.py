"""Retrieval and plan hit rates (HARP_REFERENCE §5.3, with the §7 bugs fixed).

Three numbers per prediction, each in [0, 1], or ``None`` when the query has no
ground-truth evidence (``Query.gt_segment_ids`` is empty, e.g. a clinical "No" with nothing to
find).  ``None`` is *not* 0: such queries are left out of hit-rate means.

* :func:`retrieval_hit_rate_overlap` (the paper's rule): a GT evidence segment is hit when any
  retrieved item, in any evidence set, overlaps it by a strictly positive amount
  (``g.start < r.end and r.start < g.end``).
* :func:`retrieval_hit_rate_id`: GT segment ids and extracted segment ids live in different
  id spaces, so each retrieved item is first given a GT identity -- its own id when it *is* a GT
  segment (oracle retrieval), otherwise the GT segment of the same recording it overlaps most
  (ties: the earlier one; no overlap: no identity).  A GT evidence segment is hit when some
  retrieved item has its id.  This is stricter than the overlap rule: an item that only grazes
  a GT segment's edge is counted for its main GT segment, not for the grazed one.
* :func:`plan_hit_rate`: 1.0 for an oracle plan; otherwise
  ``(time_cov + groups_hit) / (1 + n_groups)`` where ``time_cov`` is the fraction of GT
  evidence segments overlapping some plan window (parsed with
  :func:`harp_lib.core.timespan.localize`, "the Nth song" resolved to the whole GT song) and the
  required tool groups per query type are its task's ``plan_tool_groups`` (:mod:`harp_lib.tasks`).

>>> from harp_lib.core.schema import Segment, Evidence, EvidenceSet, EvidenceItem
>>> gt = [Segment("r_0001", "r", 10, 20), Segment("r_0002", "r", 20, 30)]
>>> ev = Evidence((EvidenceSet(1, "full recording", 0, 60,
...                (EvidenceItem("r_ext_0003", 19.5, 25),)),))
>>> retrieval_hit_rate_overlap(gt, ev)          # grazes r_0001, covers r_0002
1.0
>>> retrieval_hit_rate_id(gt, ev, all_gt=gt)    # identity = r_0002 only
0.5
"""
from __future__ import annotations

import math
from typing import Iterable, Mapping, Optional, Sequence

from harp_lib import tasks
from harp_lib.core.schema import Evidence, Plan, Query, Segment
from harp_lib.core.timespan import DEFAULT_POINT_WINDOW, LocalizeError, Span, localize, song_spans
from harp_lib.core.errors import HarpError

__all__ = ["REQUIRED_TOOL_GROUPS", "HitRateError", "gt_evidence", "retrieval_hit_rate_overlap",
           "retrieval_hit_rate_id", "gt_identity", "plan_windows", "plan_hit_rate", "gt_song_spans",
           "hit_rates"]

#: Required tool groups of the ten built-in types (a snapshot of ``plan_tool_groups``).
REQUIRED_TOOL_GROUPS: dict[str, tuple[tuple[str, ...], ...]] = {t.name: t.plan_tool_groups for t in tasks.all_tasks()}


class HitRateError(HarpError, ValueError):
    """Ground truth needed for a hit rate is inconsistent (e.g. an unknown GT segment id)."""


def gt_evidence(query: Query, gt_segments: Mapping[str, Segment] | Iterable[Segment]) -> list[Segment]:
    """The GT evidence segments of ``query``: exactly ``query.gt_segment_ids``, sorted by time.

    An id missing from ``gt_segments`` is an error (the benchmark is inconsistent), never a
    silent miss.

    >>> from harp_lib.core.schema import Query, Segment
    >>> q = Query("q1", "clinical", "r", "reported", "?", {"answer": "No"})
    >>> gt_evidence(q, [Segment("r_0001", "r", 0, 5)])
    []
    """
    by_id = gt_segments if isinstance(gt_segments, Mapping) else {s.id: s for s in gt_segments}
    out = []
    for sid in query.gt_segment_ids:
        if sid not in by_id:
            raise HitRateError(f"query {query.query_id}: ground-truth segment {sid!r} is not in "
                               f"segments.jsonl of domain {query.domain}; rebuild the benchmark "
                               f"(harp synth) so queries and segments match")
        out.append(by_id[sid])
    return sorted(out, key=lambda s: (s.start, s.end, s.id))


def _spans(evidence: Evidence) -> list[tuple[str, Span]]:
    return [(i.segment_id, i.span) for i in evidence.items()]


def retrieval_hit_rate_overlap(gt: Sequence[Segment], evidence: Evidence) -> Optional[float]:
    """Fraction of GT evidence segments strictly overlapped by some retrieved item.

    ``None`` without GT evidence; 0.0 when nothing was retrieved.

    >>> from harp_lib.core.schema import Segment, Evidence
    >>> retrieval_hit_rate_overlap([Segment("r_0001", "r", 0, 5)], Evidence())
    0.0
    >>> retrieval_hit_rate_overlap([], Evidence()) is None
    True
    """
    if not gt:
        return None
    spans = [sp for _, sp in _spans(evidence)]
    hit = sum(1 for g in gt if any(g.span.overlaps(r) for r in spans))
    return hit / len(gt)


def gt_identity(segment_id: str, span: Span, gt_by_id: Mapping[str, Segment],
                recording_id: Optional[str] = None) -> Optional[str]:
    """The GT segment id a retrieved item stands for (see the module docstring).

    >>> from harp_lib.core.schema import Segment
    >>> g = {s.id: s for s in [Segment("r_0001", "r", 0, 10), Segment("r_0002", "r", 10, 20)]}
    >>> gt_identity("r_0002", Span(0, 1), g)          # a GT id is itself
    'r_0002'
    >>> gt_identity("r_ext_0007", Span(8, 15), g)     # most overlap wins
    'r_0002'
    """
    if segment_id in gt_by_id:
        return segment_id
    best, best_ov = None, 0.0
    for g in sorted(gt_by_id.values(), key=lambda s: (s.start, s.end, s.id)):
        if recording_id is not None and g.recording_id != recording_id:
            continue
        ov = span.overlap(g.span)
        if ov > best_ov:
            best, best_ov = g.id, ov
    return best


def retrieval_hit_rate_id(gt: Sequence[Segment], evidence: Evidence, *,
                          all_gt: Iterable[Segment] = (), recording_id: Optional[str] = None
                          ) -> Optional[float]:
    """Fraction of GT evidence ids that some retrieved item stands for (:func:`gt_identity`).

    ``all_gt`` are all GT segments of the recording (needed to give extracted items a GT
    identity); the evidence segments themselves are always included.
    """
    if not gt:
        return None
    by_id = {s.id: s for s in all_gt}
    by_id.update({s.id: s for s in gt})
    rec = recording_id or gt[0].recording_id
    ids = {gt_identity(sid, sp, by_id, rec) for sid, sp in _spans(evidence)}
    return sum(1 for g in gt if g.id in ids) / len(gt)


def gt_song_spans(all_gt: Iterable[Segment]) -> dict[int, Span]:
    """Whole-song spans (1-based) from GT segments: ``SONG_NN`` speakers, else
    ``custom["song_index"]`` (1-based, as the benchmark writes it).

    >>> from harp_lib.core.schema import Segment
    >>> gt_song_spans([Segment("t_0001", "t", 0, 9, custom={"song_index": 1}),
    ...                Segment("t_0002", "t", 9, 20, custom={"song_index": 2})])[2]
    Span(start=9.0, end=20.0)
    """
    segs = list(all_gt)
    spans = song_spans(segs)
    if spans:
        return spans
    out: dict[int, Span] = {}
    for s in segs:
        n = s.custom.get("song_index")
        if isinstance(n, int) and not isinstance(n, bool):
            sp = s.span
            out[n] = out[n] | sp if n in out else sp
    return out


def plan_windows(plan: Plan, *, duration: Optional[float] = None,
                 songs: Optional[Mapping[int, Span]] = None,
                 point_window: float = DEFAULT_POINT_WINDOW) -> list[Optional[Span]]:
    """The window of every plan set (numeric ``start``/``end`` first, else ``localize``);
    ``None`` for a set whose window cannot be read (it covers nothing).

    >>> from harp_lib.core.schema import Plan, PlanSet
    >>> plan_windows(Plan((PlanSet("around 1 min"), PlanSet("whenever"))), duration=600)
    [Span(start=30.0, end=90.0), None]
    """
    out: list[Optional[Span]] = []
    for ps in plan.sets:
        if ps.start is not None and ps.end is not None and ps.end > ps.start:
            out.append(Span(ps.start, ps.end))
            continue
        try:
            out.append(localize(ps.localize, duration, songs=songs or None, point_window=point_window))
        except LocalizeError:
            out.append(None)
    return out


def plan_hit_rate(query: Query, plan: Plan, gt: Sequence[Segment], *,
                  all_gt: Iterable[Segment] = (), duration: Optional[float] = None,
                  point_window: float = DEFAULT_POINT_WINDOW) -> Optional[float]:
    """Plan hit rate: 1.0 for oracle plans, else ``(time_cov + groups_hit) / (1 + n_groups)``.

    ``None`` without GT evidence (time coverage is undefined).  The plan is scored as written,
    so setups that cannot call a required tool are capped by construction (as the paper).

    >>> from harp_lib.core.schema import Plan, PlanSet, Query, Segment
    >>> q = Query("q", "emotion", "r", "locate_hard", "?", {})
    >>> g = [Segment("r_0003", "r", 100, 110)]
    >>> plan_hit_rate(q, Plan((PlanSet("around 100 s", label="Angry"),)), g)   # (1 + 1) / 3
    0.6666666666666666
    """
    if not gt:
        return None
    if plan.oracle:
        return 1.0
    windows = [w for w in plan_windows(plan, duration=duration, songs=gt_song_spans(all_gt),
                                       point_window=point_window) if w is not None]
    covered = sum(1 for g in gt if any(g.span.overlaps(w) for w in windows))
    time_cov = covered / len(gt)
    groups = tasks.get(query.query_type).plan_tool_groups
    used = {t for ps in plan.sets for t in ps.tools_used()}
    hit = sum(1 for grp in groups if used.intersection(grp))
    return (time_cov + hit) / (1 + len(groups))


def hit_rates(query: Query, prediction, gt_by_id: Mapping[str, Segment], *,
              all_gt: Sequence[Segment] = (), duration: Optional[float] = None,
              point_window: float = DEFAULT_POINT_WINDOW) -> dict[str, Optional[float]]:
    """All three hit rates of one prediction, keyed as the :class:`~harp_lib.core.schema.Score` fields."""
    gt = gt_evidence(query, gt_by_id)
    if duration is None and all_gt:
        duration = max(s.end for s in all_gt)
    if duration is not None and not math.isfinite(duration):
        duration = None
    return {
        "retrieval_hit_rate_id": retrieval_hit_rate_id(gt, prediction.evidence, all_gt=all_gt,
                                                       recording_id=query.recording_id),
        "retrieval_hit_rate_overlap": retrieval_hit_rate_overlap(gt, prediction.evidence),
        "plan_hit_rate": plan_hit_rate(query, prediction.plan, gt, all_gt=all_gt, duration=duration,
                                       point_window=point_window),
    }
