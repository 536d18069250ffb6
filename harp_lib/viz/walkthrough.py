"""The pipeline walkthrough figure for one query: question -> plan -> tool hits -> merged top-k
-> evidence as the model sees it -> answer + rationale -> verdicts, on one page.

Panels, top to bottom: the question; the whole recording with the searched windows shaded,
the merged top-k outlined per evidence set and the ground-truth evidence starred; a zoom on
the evidence region with labels; each tool's hits per set (bar opacity = score, black frame =
kept in the merged top-k); and three text columns (plan | evidence as the model sees it |
answer, rationale and the judges' verdicts).

Typical notebook use (``fig1_pipeline_walkthrough``)::

    from harp_lib.viz import trace_query, walkthrough_figure, save_figure
    t = trace_query(query, index, "A5", cfg, recording=rec, bench_dir=bench, gt_segments=gt)
    fig = walkthrough_figure(t, segments=index.segments(rec.id), gt_segments=gt)
    save_figure(fig, "results/figures/fig1_walkthrough_emotion.png")

>>> from harp_lib.core.schema import Evidence, EvidenceItem, EvidenceSet, Plan, PlanSet, Prediction, Query, Segment
>>> segs = [Segment("r_ext_0000", "r", 0, 10, "S0", "hi", {"primary": "Happy"})]
>>> it = EvidenceItem("r_ext_0000", 0, 10, "S0", "hi", {"primary": "Happy"}, {"time": 0.1})
>>> pred = Prediction("q", "A1", "emotion", "r", "state", Plan((PlanSet("first minute", time=True),)),
...                   Evidence((EvidenceSet(1, "first minute", 0, 60, (it,)),)), "Happy", "[0.0s–10.0s] primary=Happy")
>>> fig = plot_walkthrough(Query("q", "emotion", "r", "state", "Which emotion?", {"emotion": "Happy"}), pred,
...                        segments=segs)
>>> [a.get_label() for a in fig.axes][:4]
['question', 'recording', 'zoom', 'tools']
"""
from __future__ import annotations

import json
import math
import textwrap
from typing import Any, Mapping, Optional, Sequence

from harp_lib.config import get_setup
from harp_lib.core.schema import Judgement, Plan, Prediction, Query, Recording, Segment
from harp_lib.core.timespan import format_time
from harp_lib.viz.timeline import _plt, plot_timeline, set_color, time_formatter
from harp_lib.viz.trace import QueryTrace, model_view, verdict_summary

__all__ = ["plot_walkthrough", "walkthrough_figure", "plot_tool_hits", "plan_lines", "ground_truth_text",
           "hits_from_evidence"]

#: Text panel limits (lines shown before "… n more lines").
_MAX_LINES = {"plan": 24, "evidence": 30, "answer": 30}
_WRAP = {"plan": 46, "evidence": 62, "answer": 52}


def hits_from_evidence(prediction: Prediction) -> list[dict[str, list[tuple[str, float]]]]:
    """Per-set tool hits recovered from the merged items' ``sources`` (kept hits only).

    Used when no full :class:`QueryTrace` is at hand; the picture then shows only what was kept.
    """
    out = []
    for s in prediction.evidence.sets:
        d: dict[str, list[tuple[str, float]]] = {}
        for it in s.items:
            for tool, sc in sorted(it.sources.items()):
                d.setdefault(tool, []).append((it.segment_id, float(sc)))
        out.append(d)
    return out


def plan_lines(plan: Plan) -> list[str]:
    """The plan as short lines: one per set (window phrase + tool calls), then repairs.

    >>> from harp_lib.core.schema import PlanSet
    >>> plan_lines(Plan((PlanSet("around 3 min", time=True, keyword="piano", audio_emb="A"),)))
    ['Set 1 "around 3 min"', '   time · keyword="piano" · audio_emb=A']
    """
    out = []
    if plan.oracle:
        out.append("oracle plan (ground-truth windows)")
    for i, ps in enumerate(plan.sets, 1):
        win = f' [{format_time(ps.start)}–{format_time(ps.end)}]' if ps.start is not None and ps.end is not None else ""
        out.append(f'Set {i} "{ps.localize}"{win}')
        calls = []
        for tool in ps.TOOLS:
            v = getattr(ps, tool)
            if not v:
                continue
            calls.append(tool if v is True else (f'{tool}="{v}"' if tool in ("keyword", "text_emb") else f"{tool}={v}"))
        out.append("   " + (" · ".join(calls) if calls else "(no tools)"))
    for e in plan.errors:
        out.append(f"repaired: {e}")
    return out or ["(empty plan)"]


def _short(v: Any) -> Any:
    if isinstance(v, float):
        return round(v, 2)
    if isinstance(v, dict):
        return {k: _short(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_short(x) for x in v]
    return v


def ground_truth_text(query: Query) -> str:
    """The ground truth in one line (floats to 2 decimals).

    >>> ground_truth_text(Query("q", "clinical", "r", "reported", "?", {"answer": "Yes"}))
    'answer=Yes'
    """
    if not query.ground_truth:
        return "(none: custom query)"
    return ", ".join(f"{k}={json.dumps(_short(v), ensure_ascii=False) if not isinstance(v, str) else v}"
                     for k, v in query.ground_truth.items())


def _wrap(lines: Sequence[str], width: int, max_lines: int) -> str:
    out: list[str] = []
    for ln in lines:
        if not ln:
            out.append("")
            continue
        indent = len(ln) - len(ln.lstrip(" "))
        out.extend(textwrap.wrap(ln, width, subsequent_indent=" " * (indent + 2), break_long_words=True) or [""])
    if len(out) > max_lines:
        out = out[: max_lines - 1] + [f"… ({len(out) - max_lines + 1} more lines)"]
    return "\n".join(out)


def _zoom(prediction: Prediction, gt: Sequence[Segment], duration: float) -> tuple[float, float]:
    spans = [(i.start, i.end) for i in prediction.evidence.items()] + [(g.start, g.end) for g in gt]
    if not spans:
        wins = [(s.start, s.end) for s in prediction.evidence.sets if s.end > s.start and math.isfinite(s.end)]
        spans = wins or [(0.0, duration)]
    lo, hi = min(a for a, _ in spans), max(b for _, b in spans)
    pad = max(5.0, 0.15 * (hi - lo))
    return max(0.0, lo - pad), min(duration, hi + pad) if duration > 0 else hi + pad


def _hit_bars(ax, rows: Sequence[tuple[int, str]], tool_hits, segments_by_id, merged) -> tuple[float, float]:
    """Draw a bar per hit of each (set, tool) row (opacity = score / best, framed if kept); returns the hits' extent."""
    import matplotlib.patches as mpatches  # heavy: matplotlib (~1 s), only when drawing
    lo_all, hi_all = math.inf, 0.0
    for y, (i, tool) in enumerate(rows):
        hits = tool_hits[i - 1][tool]
        best = max((abs(float(sc)) for _, sc in hits), default=1.0) or 1.0
        kept = set(merged.get(i, []))
        for sid, sc in hits:
            seg = segments_by_id.get(sid)
            if seg is None:
                continue
            lo_all, hi_all = min(lo_all, seg.start), max(hi_all, seg.end)
            alpha = min(1.0, 0.2 + 0.8 * max(0.0, float(sc)) / best)
            ax.add_patch(mpatches.Rectangle((seg.start, y - 0.32), max(seg.end - seg.start, 1e-3), 0.64,
                                            facecolor=set_color(i), alpha=alpha, lw=0, zorder=2))
            if sid in kept:
                ax.add_patch(mpatches.Rectangle((seg.start, y - 0.4), max(seg.end - seg.start, 1e-3), 0.8,
                                                fill=False, edgecolor="black", lw=1.6, zorder=3))
    return lo_all, hi_all


def _hit_scores(ax, rows: Sequence[tuple[int, str]], tool_hits, segments_by_id, xlim: tuple[float, float],
                span: float) -> None:
    """Write each hit's score on its bar where the visible part is at least 3.5 % of the view wide."""
    for y, (i, tool) in enumerate(rows):
        for sid, sc in tool_hits[i - 1][tool]:
            seg = segments_by_id.get(sid)
            if seg is None or seg.end < xlim[0] or seg.start > xlim[1]:
                continue
            vis = min(seg.end, xlim[1]) - max(seg.start, xlim[0])
            if vis >= 0.035 * span:
                ax.text(max(seg.start, xlim[0]) + vis / 2, y, f"{float(sc):.2f}", ha="center", va="center",
                        fontsize=6.5, zorder=4, clip_on=True)


def plot_tool_hits(tool_hits: Sequence[Mapping[str, Sequence[tuple[str, float]]]],
                   segments_by_id: Mapping[str, Segment], merged: Mapping[int, Sequence[str]], *,
                   ax=None, xlim: Optional[tuple[float, float]] = None):
    """One row per (set, tool): a bar per hit over the hit segment's span, opacity = score
    relative to the tool's best hit, black frame = kept in the set's merged top-k.  Returns ax.

    >>> from harp_lib.core.schema import Segment
    >>> ax = plot_tool_hits([{"keyword": [("a", 1.0)]}], {"a": Segment("a", "r", 0, 5)}, {1: ["a"]})
    >>> [t.get_text() for t in ax.get_yticklabels()]
    ['set 1 · keyword']
    """
    plt = _plt()
    if ax is None:
        _, ax = plt.subplots(figsize=(12, 2.5))
    rows: list[tuple[int, str]] = [(i, t) for i, h in enumerate(tool_hits, 1) for t in sorted(h)]
    lo_all, hi_all = _hit_bars(ax, rows, tool_hits, segments_by_id, merged)
    if xlim is None:
        xlim = (0.0, hi_all if math.isfinite(lo_all) else 1.0)
    span = max(xlim[1] - xlim[0], 1e-6)
    _hit_scores(ax, rows, tool_hits, segments_by_id, xlim, span)     # score text where the bar is wide enough
    ax.set_xlim(*xlim)
    ax.set_ylim(len(rows) - 0.5 if rows else 0.5, -0.5)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([f"set {i} · {t}" for i, t in rows], fontsize=8)
    for tick, (i, _) in zip(ax.get_yticklabels(), rows):
        tick.set_color(set_color(i))
    for y, (i, tool) in enumerate(rows):
        if not tool_hits[i - 1][tool]:
            ax.text(xlim[0] + 0.01 * span, y, "no hits", va="center", fontsize=7, color="#888888")
    ax.xaxis.set_major_formatter(time_formatter(span))
    ax.grid(axis="x", color="#eeeeee", lw=0.6)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    if not rows:
        ax.text(0.5, 0.5, "no tool ran (empty plan or no enabled tool)", transform=ax.transAxes,
                ha="center", va="center", fontsize=9, color="#777777")
    return ax


def _verdict_lines(judgement) -> list[str]:
    if judgement is None:
        return []
    if isinstance(judgement, Judgement):
        judgement = {judgement.judge: judgement}
    return verdict_summary(judgement)


def plot_walkthrough(query: Query, prediction: Prediction, judgement: Any = None, *,
                     segments: Sequence[Segment], tool_hits: Optional[Sequence[Mapping]] = None,
                     gt_segments: Sequence[Segment] = (), recording: Optional[Recording] = None,
                     evidence_text: Optional[str] = None, color_by: str = "speaker",
                     title: Optional[str] = None):
    """The walkthrough figure of one query (see module doc); returns the matplotlib Figure.

    ``segments``: the segments the agent searched (the index's, for this recording).
    ``judgement``: a :class:`~harp_lib.core.schema.Judgement`, or ``{judge: Judgement | reason}``.
    ``tool_hits``: per set ``{tool: [(segment_id, score)]}`` (from :class:`QueryTrace`);
    without it only the kept hits (``EvidenceItem.sources``) are drawn.  ``gt_segments``: the
    recording's ground truth; those in ``query.gt_segment_ids`` are starred.
    ``evidence_text``: the model's view (defaults to :func:`~harp_lib.viz.trace.model_view`).
    """
    plt = _plt()
    segs = sorted([s for s in segments if s.recording_id == query.recording_id], key=lambda s: (s.start, s.id))
    if not segs:
        raise ValueError(f"query {query.query_id}: no segments of recording {query.recording_id!r} were given "
                         f"(pass segments=index.segments({query.recording_id!r}))")
    setup = get_setup(prediction.setup)
    gt_ev = [g for g in gt_segments if g.id in set(query.gt_segment_ids)]
    duration = recording.duration if recording is not None and recording.duration else max(s.end for s in segs)
    hits = list(tool_hits) if tool_hits is not None else hits_from_evidence(prediction)
    merged = {s.index: [i.segment_id for i in s.items] for s in prediction.evidence.sets}
    windows = {s.index: (s.start, s.end) for s in prediction.evidence.sets if not (s.error and s.end == 0)}
    n_lanes = len({s.speaker or "?" for s in segs})
    n_rows = max(1, sum(len(h) for h in hits))
    ev = evidence_text if evidence_text is not None else model_view(prediction, setup)
    cols = [("plan", "④ plan", plan_lines(prediction.plan)),
            ("evidence", "⑤ evidence as the model sees it", ev.splitlines()),
            ("answer", "⑥ answer, rationale, verdicts", _answer_lines(query, prediction, judgement))]
    texts = [_wrap(lines, _WRAP[key], _MAX_LINES[key]) for key, _, lines in cols]
    n_text = max(t.count("\n") + 1 for t in texts)
    heights = [0.6, 0.35 * n_lanes + 0.9, 0.35 * n_lanes + 0.9, 0.28 * n_rows + 0.7, 0.16 * n_text + 0.5]
    fig = plt.figure(figsize=(15, sum(heights) + 0.6))
    gs = fig.add_gridspec(5, 3, height_ratios=heights, hspace=0.55, wspace=0.08,
                          left=0.08, right=0.9, top=0.98, bottom=0.02)
    _question_panel(fig, gs, query, setup, duration, title)                                # 0. the question
    zlo, zhi = _timeline_panels(fig, gs, segs, prediction, gt_ev, merged, windows, duration, color_by)  # 1. + 2.
    # 3. tool hits
    ax3 = fig.add_subplot(gs[3, :], label="tools")
    plot_tool_hits(hits, {s.id: s for s in segs}, merged, ax=ax3, xlim=(zlo, zhi))
    ax3.set_title("③ each tool's hits per set (opacity = score / best; framed = kept in the merged top-k)"
                  + ("" if tool_hits is not None else " — kept hits only"), loc="left", fontsize=10)
    _text_panels(fig, gs, cols, texts)                                                     # 4. text columns
    return fig


def _question_panel(fig, gs, query: Query, setup, duration: float, title: Optional[str]) -> None:
    """Panel 0: the header line (query, setup, recording) and the question text."""
    axq = fig.add_subplot(gs[0, :], label="question")
    axq.axis("off")
    head = title or (f"{query.query_id} · {query.domain} / {query.query_type} · {setup.describe()}"
                     f" · recording {query.recording_id} ({format_time(duration)})")
    axq.text(0, 1, head, fontsize=11, fontweight="bold", va="top", transform=axq.transAxes)
    axq.text(0, 0.3, textwrap.fill("Q: " + query.text, 170), fontsize=9, va="top", transform=axq.transAxes)


def _timeline_panels(fig, gs, segs: Sequence[Segment], prediction: Prediction, gt_ev: Sequence[Segment],
                     merged, windows, duration: float, color_by: str) -> tuple[float, float]:
    """Panels 1 and 2: the whole recording and the labelled zoom on the evidence; returns the zoom span."""
    # 1. the whole recording
    ax1 = fig.add_subplot(gs[1, :], label="recording")
    plot_timeline(segs, color_by=color_by, labels=False, highlight=merged, windows=windows, duration=duration,
                  ax=ax1, title="① recording: searched windows (shaded) and merged top-k per set (outlined)")
    _truth(ax1, gt_ev)
    # 2. zoom with labels
    zlo, zhi = _zoom(prediction, gt_ev, duration)
    ax2 = fig.add_subplot(gs[2, :], label="zoom")
    plot_timeline(segs, color_by=color_by, labels=True, highlight=merged, windows=windows, xlim=(zlo, zhi),
                  ax=ax2, legend=False, title=f"② zoom {format_time(zlo)}–{format_time(zhi)}: segment labels"
                  + (" (★ ground-truth evidence)" if gt_ev else ""))
    _truth(ax2, gt_ev)
    ax1.axvspan(zlo, zhi, ymin=0, ymax=0.04, color="black", alpha=0.5, lw=0)
    return zlo, zhi


def _text_panels(fig, gs, cols, texts: Sequence[str]) -> None:
    """Panel 4: the plan, evidence and answer columns, each a monospace text box under its title."""
    for c, ((key, name, _), text) in enumerate(zip(cols, texts)):
        ax = fig.add_subplot(gs[4, c], label=key)
        ax.axis("off")
        ax.set_title(name, loc="left", fontsize=10)
        ax.text(0, 1, text, family="monospace", fontsize=7.3,
                va="top", ha="left", transform=ax.transAxes, linespacing=1.25,
                bbox=dict(boxstyle="round,pad=0.5", facecolor="#f7f7f7", edgecolor="#dddddd"))


def _answer_lines(query: Query, prediction: Prediction, judgement) -> list[str]:
    lines = [f"answer: {prediction.answer or '(none)'}", ""]
    if prediction.rationale:
        lines += ["rationale: " + prediction.rationale, ""]
    if prediction.error:
        lines += [f"error: {prediction.error}", ""]
    lines += ["ground truth: " + ground_truth_text(query), ""]
    v = _verdict_lines(judgement)
    lines += (["verdicts:"] + ["  " + x for x in v]) if v else ["verdicts: (not judged)"]
    return lines


def _truth(ax, gt: Sequence[Segment]) -> None:
    lo, hi = ax.get_xlim()
    for g in gt:
        if g.end < lo or g.start > hi:
            continue
        m = (max(g.start, lo) + min(g.end, hi)) / 2
        ax.plot([m], [-0.55], marker="*", ms=11, color="black", ls="none", zorder=9, clip_on=False)
        ax.plot([max(g.start, lo), min(g.end, hi)], [-0.55, -0.55], color="black", lw=2, zorder=9,
                clip_on=False)


def walkthrough_figure(trace: QueryTrace, *, segments: Sequence[Segment], gt_segments: Sequence[Segment] = (),
                       color_by: str = "speaker", title: Optional[str] = None):
    """:func:`plot_walkthrough` from a :class:`~harp_lib.viz.trace.QueryTrace` (all tool hits,
    the clip labels the model got, and every judge's verdict)."""
    return plot_walkthrough(trace.query, trace.prediction, trace.judgements or None, segments=segments,
                            tool_hits=trace.tool_hits, gt_segments=gt_segments, recording=trace.recording,
                            evidence_text=trace.evidence_text, color_by=color_by, title=title)
