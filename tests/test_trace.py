"""One retrieval loop: retrieve(..., trace=True) hands out the per-tool hits; the trace never re-runs tools."""
from harp_lib.retrieval import tools
from harp_lib.retrieval.index import SegmentIndex
from harp_lib.core.schema import Query, Segment
from harp_lib.viz.trace import trace_query


def _ix():
    return SegmentIndex.from_segments([
        Segment("r_ext_0000", "r", 0, 20, "S0", "I feel great", {"primary": "Happy"}),
        Segment("r_ext_0001", "r", 20, 40, "S1", "that is sad news", {"primary": "Sad"})])


def test_trace_runs_the_tools_once_and_keeps_their_hits(monkeypatch):
    calls = []
    real = tools.run_tools

    def counting(ps, window, ctx):
        out = real(ps, window, ctx)
        calls.append(out)
        return out
    monkeypatch.setattr(tools, "run_tools", counting)
    q = Query("q", "emotion", "r", "state", 'Around 10 seconds, someone said "great". Which emotion?', {})
    t = trace_query(q, _ix(), "A1", hearing=False, judges=())
    assert len(calls) == len(t.plan.sets) == len(t.tool_hits) == len(t.plan_windows)   # once per plan set
    assert t.tool_hits == [hits for hits, _ in calls]
    assert t.tool_problems == [list(p) for _, p in calls]
    assert sorted(t.tool_hits[0]) == ["keyword", "time"] and t.answer == "Happy"
    kept = set(t.hits_table().query("kept")["segment_id"])
    assert kept == {i.segment_id for i in t.evidence.items()}
