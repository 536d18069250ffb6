"""Rule and oracle planners on every query of the built-in benchmark (ci profile, generated once)."""
import pytest

from harp_lib.agent.context import QueryContext, agent_params
from harp_lib.agent.oracle import OraclePlanner
from harp_lib.agent.planner import RulePlanner
from harp_lib.retrieval.references import Hearing
from harp_lib.retrieval.tools import resolve_window
from harp_lib.config import SETUPS
from harp_lib.core.jsonl import read_jsonl
from harp_lib.core.schema import QUERY_TYPES, Query, Recording, Segment
from harp_lib.core.timespan import song_spans


@pytest.fixture(scope="session")
def ci_bench(ci_benchmark):
    """The session's ci benchmark (tests/conftest.py), read per domain."""
    out = ci_benchmark
    data = {}
    for d in ("emotion", "clinical", "song"):
        data[d] = (read_jsonl(out / d / "recordings.jsonl", Recording), read_jsonl(out / d / "queries.jsonl", Query),
                   read_jsonl(out / d / "segments.jsonl", Segment), out / d)
    return data


class _SongIx:
    """Stand-in index whose extracted songs are the ground-truth songs (planning only)."""
    spaces: dict = {}

    def __init__(self, gt):
        self.gt = gt

    def segments(self, rid):
        return [s for s in self.gt if s.recording_id == rid]


def test_benchmark_has_every_query_type(ci_bench):
    types = {q.query_type for d in ci_bench for q in ci_bench[d][1]}
    assert types == set(QUERY_TYPES)


@pytest.mark.parametrize("setup", ["A1", "A2", "A3", "A4", "A5"])
def test_rule_planner_on_every_benchmark_query(ci_bench, setup):
    for domain, (recs, queries, gt, root) in ci_bench.items():
        rec = {r.id: r for r in recs}
        ix = _SongIx(gt)
        for q in queries:
            ctx = QueryContext(q, rec[q.recording_id], SETUPS[setup], ix, agent_params(None), bench_dir=root,
                               hearing=Hearing(domain, labelers=[]))
            plan, _ = RulePlanner().plan(ctx)
            assert plan.sets and not any("fell back" in e for e in plan.errors), (q.query_id, plan.errors)
            assert {t for ps in plan.sets for t in ps.tools_used()}, (setup, q.query_id, "no tool")
            songs = song_spans(ix.segments(q.recording_id))
            wins = [resolve_window(ps, rec[q.recording_id].duration, songs) for ps in plan.sets]
            if q.query_type in ("time", "position"):
                # each set is the whole song the query names
                assert [w.to_tuple() for w in wins] == [songs[q.custom[k]["index"]].to_tuple()
                                                        for k in ("song_a", "song_b")], q.query_id
            if q.query_type in ("state", "change", "comparison", "locate", "locate_hard"):
                g = [s for s in gt if s.id in set(q.gt_segment_ids)]
                assert all(any(w.overlaps(s.span) for w in wins) for s in g), (q.query_id, q.text)


def test_oracle_windows_cover_every_benchmark_evidence_segment(ci_bench):
    for domain, (recs, queries, gt, _) in ci_bench.items():
        by_rec = {}
        for s in gt:
            by_rec.setdefault(s.recording_id, []).append(s)
        for q in queries:
            plan, errs = OraclePlanner().plan_for(q, by_rec[q.recording_id])
            assert plan.oracle and not errs, (q.query_id, errs)
            spans = [(ps.start, ps.end) for ps in plan.sets if ps.start is not None]
            for sid in q.gt_segment_ids:
                g = next(s for s in gt if s.id == sid)
                assert any(a < g.end and g.start < b for a, b in spans), (q.query_id, sid)
            if q.query_type in ("comparison", "time", "position", "audio"):
                assert len(plan.sets) == 2, q.query_id
