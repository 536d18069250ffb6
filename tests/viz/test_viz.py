"""harp_lib.viz on the built-in ci benchmark (generated once per session, no browser).

The index is built from the ground-truth segments (no vectors: the vector tools report a
problem and the keyword/label/time tools run), so every check is fast and exact.
"""
from __future__ import annotations

import os

import numpy as np
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("MPLBACKEND", "Agg")

from harp_lib.config import load_config  # noqa: E402
from harp_lib.retrieval.index import SegmentIndex  # noqa: E402
from harp_lib.core.jsonl import read_jsonl  # noqa: E402
from harp_lib.core.schema import Judgement, Query, Recording, Segment
from harp_lib.viz import plot_timeline, save_figure, segment_label, trace_query  # noqa: E402
from harp_lib.viz.explorer import Explorer  # noqa: E402
from harp_lib.viz.explorer_state import CUSTOM_QUERY_ID, ExplorerState  # noqa: E402
from harp_lib.viz.walkthrough import hits_from_evidence, plot_walkthrough, walkthrough_figure  # noqa: E402


@pytest.fixture(scope="session")
def bench(ci_benchmark):
    """The session's ci benchmark (tests/conftest.py)."""
    return ci_benchmark


def _gt(bench, domain):
    return read_jsonl(bench / domain / "segments.jsonl", Segment)


@pytest.fixture(scope="session")
def cfg():
    return load_config(profile="ci")


def _state(cfg, bench, domain, **kw) -> ExplorerState:
    return ExplorerState(cfg, domain, index=SegmentIndex.from_segments(_gt(bench, domain)),
                         bench_dir=bench / domain, hearing=False, **kw)


# ---------------------------------------------------------------------------------------
# timeline
# ---------------------------------------------------------------------------------------
def test_timeline_lanes_labels_and_highlight(bench):
    import matplotlib.pyplot as plt
    segs = [s for s in _gt(bench, "clinical") if s.recording_id == "consult_001"]
    ax = plot_timeline(segs, highlight={1: [segs[0].id], 2: [segs[1].id]}, selected=segs[2].id)
    speakers = sorted({s.speaker for s in segs})
    assert [t.get_text() for t in ax.get_yticklabels()] == speakers
    texts = {t.get_text() for t in ax.texts}
    assert {segment_label(s) for s in segs if s.duration > 3} <= texts   # labels of wide bars are written
    outlines = [p for p in ax.patches if not p.get_fill()]
    assert len(outlines) == 3                                              # 2 set outlines + selection frame
    n_cough = sum(1 for s in segs if s.labels.get("cough_count"))
    assert n_cough and len([ln for ln in ax.lines if ln.get_marker() == "v"]) >= n_cough
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "set 1 top-k" in legend and "set 2 top-k" in legend and "cough" in legend
    plt.close(ax.figure)


def test_timeline_colours_by_label_and_song_lanes(bench):
    import matplotlib.colors as mc
    import matplotlib.pyplot as plt
    segs = _gt(bench, "song")
    ax = plot_timeline(segs, color_by="label")
    assert [t.get_text() for t in ax.get_yticklabels()] == sorted(s.speaker for s in segs)   # SONG_01..03
    faces = {mc.to_hex(p.get_facecolor()) for p in ax.patches if p.get_fill()}
    tiers = {s.labels["primary"] for s in segs}
    assert len(faces) == len(tiers)                                        # one colour per tier
    with pytest.raises(ValueError, match="color_by"):
        plot_timeline(segs, color_by="mood")
    plt.close("all")


@pytest.mark.slow
def test_save_figure_is_byte_deterministic(bench, tmp_path):
    import matplotlib.pyplot as plt
    segs = _gt(bench, "emotion")
    ax = plot_timeline(segs)
    a = save_figure(ax.figure, tmp_path / "a.png").read_bytes()
    b = save_figure(ax.figure, tmp_path / "b.png").read_bytes()
    assert a == b and a[:8] == b"\x89PNG\r\n\x1a\n"
    assert b"Software" not in a and b"matplotlib" not in a
    plt.close(ax.figure)
    ax2 = plot_timeline(segs)                       # a fresh figure of the same data: same bytes
    assert save_figure(ax2.figure, tmp_path / "c.png").read_bytes() == a
    plt.close("all")


# ---------------------------------------------------------------------------------------
# traces and the walkthrough figure
# ---------------------------------------------------------------------------------------
def test_trace_keeps_every_step_and_is_judged(cfg, bench):
    gt = _gt(bench, "clinical")
    ix = SegmentIndex.from_segments(gt)
    q = read_jsonl(bench / "clinical" / "queries.jsonl", Query)[0]
    rec = {r.id: r for r in read_jsonl(bench / "clinical" / "recordings.jsonl", Recording)}[q.recording_id]
    t = trace_query(q, ix, "A3", cfg, recording=rec, bench_dir=bench / "clinical", gt_segments=gt, hearing=False)
    assert len(t.tool_hits) == len(t.prediction.plan.sets) == len(t.prediction.evidence.sets)
    for i, s in enumerate(t.prediction.evidence.sets):
        pooled = {sid for hits in t.tool_hits[i].values() for sid, _ in hits}
        assert {it.segment_id for it in s.items} <= pooled                  # merged top-k come from the hits
        assert len(s.items) <= 3
    # no vectors in this index: the vector tools say so instead of failing
    assert any("text_emb" in p for ps in t.tool_problems for p in ps)
    assert t.evidence_text.startswith("Audio clips attached: [Snippet") or t.evidence_text.startswith("###")
    assert isinstance(t.judgements["rule"], Judgement) and t.judgements["rule"].query_id == q.query_id
    table = t.hits_table()
    assert list(table.columns) == ["set", "tool", "segment_id", "score", "rank", "kept"]
    rows = table.to_dict("records")
    assert rows and all(r["kept"] == (r["segment_id"] in t.merged[r["set"]]) for r in rows)
    lines = t.plan_lines()                  # one line per plan set, with the window the tools searched
    assert len(lines) == len(t.plan.sets)
    for i, (line, w) in enumerate(zip(lines, t.plan_windows), 1):
        assert line.startswith(f"set {i}: ") and "None" not in line
        assert (f"searched {w[0]:.1f}-{w[1]:.1f} s" in line) if isinstance(w, tuple) else ("no window" in line)


@pytest.mark.slow
@pytest.mark.parametrize("domain", ["emotion", "song"])
def test_walkthrough_figure_panels(cfg, bench, domain, tmp_path):
    import matplotlib.pyplot as plt
    gt = _gt(bench, domain)
    ix = SegmentIndex.from_segments(gt)
    qs = [q for q in read_jsonl(bench / domain / "queries.jsonl", Query)]
    q = next(q for q in qs if q.query_type in ("locate", "position"))
    rec = {r.id: r for r in read_jsonl(bench / domain / "recordings.jsonl", Recording)}[q.recording_id]
    t = trace_query(q, ix, "A1", cfg, recording=rec, bench_dir=bench / domain, gt_segments=gt, hearing=False)
    fig = walkthrough_figure(t, segments=ix.segments(rec.id), gt_segments=gt)
    axes = {a.get_label(): a for a in fig.axes}
    assert {"question", "recording", "zoom", "tools", "plan", "evidence", "answer"} <= set(axes)
    assert q.query_id in axes["question"].texts[0].get_text()
    tool_rows = [x.get_text() for x in axes["tools"].get_yticklabels()]
    assert tool_rows == [f"set {i} · {tool}" for i, h in enumerate(t.tool_hits, 1) for tool in sorted(h)]
    answer_text = axes["answer"].texts[0].get_text()
    assert t.prediction.answer.splitlines()[0][:20] in answer_text and "rule: answer" in answer_text
    assert axes["evidence"].texts[0].get_text().splitlines()[0] == t.evidence_text.splitlines()[0][:62]
    # ground-truth evidence starred on the zoom
    assert any(ln.get_marker() == "*" for ln in axes["zoom"].lines)
    p1, p2 = save_figure(fig, tmp_path / "w1.png"), save_figure(fig, tmp_path / "w2.png")
    assert p1.read_bytes() == p2.read_bytes()
    plt.close(fig)


def test_walkthrough_from_prediction_only(bench):
    import matplotlib.pyplot as plt
    gt = _gt(bench, "emotion")
    ix = SegmentIndex.from_segments(gt)
    q = read_jsonl(bench / "emotion" / "queries.jsonl", Query)[0]
    t = trace_query(q, ix, "A1", hearing=False, judges=())
    fig = plot_walkthrough(q, t.prediction, segments=ix.segments(q.recording_id))
    rows = [x.get_text() for x in [a for a in fig.axes if a.get_label() == "tools"][0].get_yticklabels()]
    assert rows == [f"set {i} · {tool}" for i, h in enumerate(hits_from_evidence(t.prediction), 1) for tool in sorted(h)]
    with pytest.raises(ValueError, match="no segments of recording"):
        plot_walkthrough(q, t.prediction, segments=[])
    plt.close("all")


# ---------------------------------------------------------------------------------------
# explorer state (no browser)
# ---------------------------------------------------------------------------------------
def test_explorer_state_transitions(cfg, bench):
    st = _state(cfg, bench, "emotion")
    assert st.recording_ids == ["podcast_01"] and st.recording.id == "podcast_01"
    assert [s.id for s in st.segments] == [s.id for s in _gt(bench, "emotion")]
    # select a segment -> transcript and audio of exactly its window
    seg = st.segments[3]
    st.select_segment(seg.id)
    assert seg.text in st.segment_details()
    wave, sr = st.segment_audio()
    assert sr == 16000 and wave.dtype == np.float32
    assert len(wave) == round(seg.end * sr) - round(seg.start * sr)
    assert np.abs(wave).max() > 0.01                      # speech, not silence
    wave8, sr8 = st.segment_audio(sr=8000)
    assert abs(len(wave8) - seg.duration * 8000) <= 2
    with pytest.raises(KeyError, match="not a segment of recording"):
        st.select_segment("nope")
    # run a benchmark query with A1, then change setup -> result cleared, A3 re-run differs in tools
    q = next(q for q in st.queries if q.query_type == "state")
    st.select_query(q.query_id)
    st.select_setup("A1")
    t1 = st.run()
    assert t1.setup.name == "A1" and st.highlight == t1.merged
    assert set(st.views()) >= {"plan", "hits", "merged", "evidence", "answer", "rationale", "verdicts"}
    assert st.views()["verdicts"].startswith("rule: answer")
    assert {t for h in t1.tool_hits for t in h} <= {"time", "keyword", "label"}
    st.select_setup("A3")
    assert st.trace is None and st.highlight == {}
    t3 = st.run()
    assert t3.setup.name == "A3" and any("audio_emb" in p or "text_emb" in p for ps in t3.tool_problems for p in ps)
    # the timeline shows the result: one outline per merged item
    import matplotlib.pyplot as plt
    fig = st.timeline_figure()
    outlines = [p for p in fig.axes[0].patches if not p.get_fill()]
    assert len(outlines) == len({sid for ids in t3.merged.values() for sid in ids}) + (st.selected is not None)
    plt.close(fig)
    # a new recording clears selection, query and result
    st.select_recording("podcast_01")
    assert st.selected is None and st.query is None and st.trace is None
    with pytest.raises(KeyError, match="not in domain"):
        st.select_recording("podcast_99")


def test_explorer_custom_query_and_oracle(cfg, bench):
    st = _state(cfg, bench, "song")
    st.set_custom_query("Compare the song playing around 0:30 with the song playing around 2:00. "
                        "Which has better overall aesthetics?", "time")
    st.select_setup("A1")
    t = st.run()
    assert t.query.query_id == CUSTOM_QUERY_ID and t.prediction.answer
    assert t.judgements["rule"].startswith("not judged")
    with pytest.raises(ValueError, match="not a song type"):
        st.set_custom_query("hi", "state")
    q = st.queries[0]
    st.select_query(q.query_id)
    st.select_setup("A7")                                   # oracle: windows from the ground truth
    t7 = st.run()
    assert t7.prediction.plan.oracle and t7.prediction.error is None
    gt_ids = set(q.gt_segment_ids)
    assert gt_ids <= {sid for ids in t7.merged.values() for sid in ids}


def test_explorer_without_index_says_what_to_do(cfg, bench, tmp_path):
    st = ExplorerState(cfg.with_overrides({"paths": {"index": str(tmp_path / "none")}}), "clinical",
                       bench_dir=bench / "clinical", hearing=False)
    assert "harp index --domain clinical" in st.notice
    assert st.segments and all(s.source == "gt" for s in st.segments)
    st.select_query(st.queries[0].query_id) if st.queries else st.set_custom_query("Any cough?", "exhibited")
    with pytest.raises(FileNotFoundError, match="harp extract"):
        st.run()


@pytest.mark.slow
def test_explorer_widget_binds_state(cfg, bench):
    ex = Explorer(state=_state(cfg, bench, "clinical"))
    st = ex.state
    assert ex.timeline.value[:8] == b"\x89PNG\r\n\x1a\n"
    before = ex.timeline.value
    ex.recording.value = st.recording_ids[1]
    assert st.recording.id == st.recording_ids[1] and ex.timeline.value != before
    seg = st.segments[0]
    ex.segments.value = seg.id
    assert st.selected == seg and seg.text[:20] in ex.seg_info.value
    assert len(ex.audio.outputs) == 1                      # the Audio player
    ex.query.value = st.queries[0].query_id
    ex.setup.value = "A1"                                   # changing setup with a query runs it
    assert st.trace is not None and st.trace.setup.name == "A1"
    assert "Answer" in ex.overview.value and "rule: answer" in ex.overview.value
    assert ex.tabs["plan"].value and "Set 1" in ex.tabs["evidence"].value
    ex.color.value = "label"
    assert st.color_by == "label"
