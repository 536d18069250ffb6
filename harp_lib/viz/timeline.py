"""Static timeline pictures of a recording's segments (matplotlib), and deterministic PNGs.

One lane per speaker (per song in a medley), one bar per segment, coloured by speaker/song or
by its primary label, with the label written on the bar (emotion, cough count, aesthetic
tier) and cough events marked.  Evidence items can be highlighted (outlined in their evidence
set's colour) and searched windows shaded, so the same picture shows *where the agent looked*.

>>> from harp_lib.core.schema import Segment
>>> segs = [Segment("r_0001", "r", 0, 4, "S1", "hi", {"primary": "Happy"}),
...         Segment("r_0002", "r", 4, 9, "S2", "oh", {"primary": "Sad"})]
>>> ax = plot_timeline(segs, highlight={1: ["r_0002"]})
>>> [t.get_text() for t in ax.get_yticklabels()]
['S1', 'S2']
>>> segment_label(segs[0])
'Happy'
"""
from __future__ import annotations

import io
import math
import os
from pathlib import Path
from typing import Iterable, Mapping, Optional, Sequence

from harp_lib.core.atomic import part_path
from harp_lib.core.schema import Segment
from harp_lib.core.timespan import format_time

__all__ = ["plot_timeline", "segment_label", "lane_of", "lane_colors", "label_colors", "set_color",
           "save_figure", "figure_png", "time_formatter", "DPI", "SET_COLORS"]

#: Resolution of every saved figure (fixed so PNG bytes do not depend on rcParams).
DPI = 110
#: Outline / shade colour of evidence set 1, 2, ... (colour-blind safe, distinct from lanes).
SET_COLORS: tuple[str, ...] = ("#d62728", "#1f3fbf", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b")
_LABEL_PALETTE = {
    # emotions: warm = positive arousal, cool = low; grey = neutral
    "Neutral": "#bdbdbd", "Happy": "#f7c948", "Sad": "#5b8bd9", "Angry": "#e0533d",
    "Surprise": "#b87fe0", "Fear": "#6fbf8f", "Disgust": "#8c6d46", "Contempt": "#d98cb3",
    # aesthetic tiers
    "High": "#3a9d5d", "Mid": "#f0b429", "Low": "#d64545",
    # clinical
    "no cough": "#c7d3e0",
}
_COUGH_COLOR = "#c0392b"


def _plt():
    import matplotlib  # heavy: matplotlib (~1 s), only when drawing
    backend = matplotlib.get_backend().lower()
    if "inline" not in backend and "ipympl" not in backend and "widget" not in backend:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # heavy: matplotlib (~1 s), only when drawing
    return plt


def lane_of(seg: Segment) -> str:
    """The lane a segment is drawn in: its speaker (a song id ``SONG_NN`` in medleys), else ``?``.

    >>> lane_of(Segment("a", "r", 0, 1))
    '?'
    """
    return seg.speaker or "?"


def segment_label(seg: Segment) -> str:
    """Short label text of a segment: emotion, ``n cough`` (+ other events), or tier + overall.

    >>> segment_label(Segment("a", "r", 0, 1, labels={"primary": "Mid", "overall": 3.1}))
    'Mid 3.1'
    >>> segment_label(Segment("a", "r", 0, 1, labels={"primary": "2 cough", "cough_count": 2,
    ...                                               "events": ["cough", "sneeze"]}))
    '2 cough +sneeze'
    """
    lab = seg.labels or {}
    prim = lab.get("primary")
    out = str(prim) if prim is not None else ""
    if isinstance(lab.get("overall"), (int, float)) and not isinstance(lab.get("overall"), bool):
        out = f"{out} {float(lab['overall']):.1f}".strip()
    extra = [e for e in (lab.get("events") or []) if e != "cough"]
    if extra:
        out = f"{out} +{'+'.join(str(e) for e in extra)}".strip()
    return out


def _cough_n(seg: Segment) -> int:
    n = (seg.labels or {}).get("cough_count")
    return int(n) if isinstance(n, (int, float)) and not isinstance(n, bool) else 0


def _cough_times(seg: Segment, span: float) -> list[float]:
    """Where to mark coughs: the labeler's ``event_times`` onsets, else near the segment end."""
    n = _cough_n(seg)
    if not n:
        return []
    ev = (seg.labels or {}).get("event_times") or []
    times = [float(e[0]) for e in ev if isinstance(e, (list, tuple)) and e and isinstance(e[0], (int, float))]
    if times:
        return times
    return [seg.end - min(0.02 * span, (seg.end - seg.start) / 2)]


def time_formatter(span: float):
    """Tick labels: ``m:ss`` for spans over 90 s, else seconds (``12.5s``)."""
    from matplotlib.ticker import FuncFormatter  # heavy: matplotlib (~1 s), only when drawing
    return FuncFormatter(lambda v, _: format_time(v) if span > 90 else f"{v:g}s")


def lane_colors(lanes: Iterable[str]) -> dict[str, str]:
    """A fixed colour per lane, assigned in sorted order (same lanes -> same colours)."""
    import matplotlib.colors as mcolors  # heavy: matplotlib (~1 s), only when drawing
    from matplotlib import colormaps
    cmap = colormaps["tab20"]
    names = sorted(set(lanes))
    # even tab20 entries first (the saturated half), then the light ones
    order = list(range(0, 20, 2)) + list(range(1, 20, 2))
    return {n: mcolors.to_hex(cmap(order[i % 20])) for i, n in enumerate(names)}


def label_colors(labels: Iterable[str]) -> dict[str, str]:
    """Colour per primary label: fixed for the shared vocabulary, greys/browns for others."""
    out, spare = {}, ["#8e8e8e", "#a6761d", "#666666", "#e7298a", "#66a61e"]
    for i, lab in enumerate(sorted(set(labels))):
        if lab in _LABEL_PALETTE:
            out[lab] = _LABEL_PALETTE[lab]
        elif lab.endswith("cough"):
            out[lab] = _COUGH_COLOR
        else:
            out[lab] = spare[i % len(spare)]
    return out


def set_color(i: int) -> str:
    """Colour of evidence set ``i`` (1-based)."""
    return SET_COLORS[(int(i) - 1) % len(SET_COLORS)]


def _as_sets(highlight) -> dict[int, list[str]]:
    if not highlight:
        return {}
    if isinstance(highlight, Mapping):
        return {int(k): list(v) for k, v in highlight.items()}
    return {1: list(highlight)}


def plot_timeline(segments: Sequence[Segment], *, color_by: str = "speaker", labels: bool = True,
                  highlight: Optional[Mapping[int, Sequence[str]] | Sequence[str]] = None,
                  windows: Optional[Mapping[int, tuple[float, float]]] = None,
                  selected: Optional[str] = None, marks: Optional[Sequence[str]] = None,
                  xlim: Optional[tuple[float, float]] = None, duration: Optional[float] = None,
                  title: Optional[str] = None, ax=None, legend: bool = True):
    """Draw a segment timeline and return the matplotlib Axes.

    ``color_by``: ``"speaker"`` (lanes = speakers or songs) or ``"label"`` (primary label).
    ``labels``: write each segment's label on its bar (when it fits).  ``highlight``: segment
    ids to outline, either a list or ``{set_index: [ids]}`` (each set in its colour, the merged
    top-k of a query).  ``windows``: ``{set_index: (start, end)}`` searched windows, shaded.
    ``selected``: one segment id drawn with a thick black frame.  ``marks``: segment ids
    marked with a star above the bar (e.g. ground-truth evidence).  ``xlim`` zooms.

    >>> from harp_lib.core.schema import Segment
    >>> ax = plot_timeline([Segment("a", "r", 0, 3, "S", labels={"primary": "1 cough", "cough_count": 1})],
    ...                    color_by="label")
    >>> ax.get_xlabel()
    'time (s)'
    """
    if color_by not in ("speaker", "label"):
        raise ValueError(f"color_by must be 'speaker' or 'label', got {color_by!r}")
    plt = _plt()
    if ax is None:
        _, ax = plt.subplots(figsize=(12, 0.55 * max(2, len({lane_of(s) for s in segments})) + 1.2))
    segs = sorted(segments, key=lambda s: (s.start, s.end, s.id))
    lanes = sorted({lane_of(s) for s in segs})
    y_of = {n: i for i, n in enumerate(lanes)}
    lcol = lane_colors(lanes)
    prim = {s.id: str((s.labels or {}).get("primary", "")) for s in segs}
    pcol = label_colors(v for v in prim.values() if v)
    hi_sets = _as_sets(highlight)
    hi_of: dict[str, int] = {}
    for k in sorted(hi_sets, reverse=True):          # lower set index wins when shared
        for sid in hi_sets[k]:
            hi_of[sid] = k
    end = max([s.end for s in segs] + [duration or 0.0] +
              [w[1] for w in (windows or {}).values() if math.isfinite(w[1])] + [1.0])
    lo_x, hi_x = xlim if xlim else (0.0, end)
    span = max(hi_x - lo_x, 1e-6)
    _shade_windows(ax, windows, hi_x, end)
    for s in segs:
        if s.end < lo_x or s.start > hi_x:
            continue
        face = lcol[lane_of(s)] if color_by == "speaker" else pcol.get(prim[s.id], "#dddddd")
        _draw_segment(ax, s, y_of[lane_of(s)], face, hi_of.get(s.id), s.id == selected, labels, lo_x, hi_x, span)
    for sid in marks or ():
        for s in segs:
            if s.id == sid and s.end >= lo_x and s.start <= hi_x:
                ax.plot([(max(s.start, lo_x) + min(s.end, hi_x)) / 2], [y_of[lane_of(s)] + _BAR_H / 2 + 0.12],
                        marker="*", ms=9, color="black", zorder=8, ls="none")
    _style_axes(ax, lanes, lo_x, hi_x, span, bool(marks), title)
    if legend:
        _legend(ax, plt, color_by, pcol, segs, hi_sets, marks)
    return ax


_BAR_H = 0.7       # bar height in lane units


def _shade_windows(ax, windows, hi_x: float, end: float) -> None:
    """Searched windows: shaded (unless the whole recording) with dashed edges, each set in its colour."""
    for k, (w0, w1) in sorted((windows or {}).items()):
        w1 = hi_x if not math.isfinite(w1) else w1
        if (w1 - w0) < 0.95 * end:      # a whole-recording window says nothing: edges only
            ax.axvspan(w0, w1, color=set_color(k), alpha=0.08, lw=0, zorder=0)
        ax.axvline(w0, color=set_color(k), lw=0.8, ls="--", alpha=0.6, zorder=0)
        ax.axvline(w1, color=set_color(k), lw=0.8, ls="--", alpha=0.6, zorder=0)


def _draw_segment(ax, s: Segment, y: float, face: str, hi_set: Optional[int], is_selected: bool, labels: bool,
                  lo_x: float, hi_x: float, span: float) -> None:
    """One bar: its face, the outline of its evidence set, the selection frame, cough ticks, its label."""
    import matplotlib.patches as mpatches  # heavy: matplotlib (~1 s), only when drawing
    h = _BAR_H
    ax.add_patch(mpatches.Rectangle((s.start, y - h / 2), max(s.end - s.start, 1e-3), h, facecolor=face,
                                    edgecolor="white", lw=0.5, zorder=2))
    if hi_set is not None:
        ax.add_patch(mpatches.Rectangle((s.start, y - h / 2 - 0.08), max(s.end - s.start, 1e-3), h + 0.16,
                                        fill=False, edgecolor=set_color(hi_set), lw=2.4, zorder=4))
    if is_selected:
        ax.add_patch(mpatches.Rectangle((s.start, y - h / 2 - 0.14), max(s.end - s.start, 1e-3), h + 0.28,
                                        fill=False, edgecolor="black", lw=3.0, zorder=5))
    for t in _cough_times(s, span):
        ax.plot([t], [y - h / 2 - 0.02], marker="v", ms=6, color=_COUGH_COLOR, zorder=6, ls="none")
    if labels:
        txt = segment_label(s)
        # ~0.009 of the visible span per character at the default width
        vis = min(s.end, hi_x) - max(s.start, lo_x)
        if txt and vis >= 0.0085 * span * (len(txt) + 1):
            ax.text(max(s.start, lo_x) + vis / 2, y, txt, ha="center", va="center", fontsize=7,
                    color="black", zorder=7, clip_on=True)


def _style_axes(ax, lanes: list, lo_x: float, hi_x: float, span: float, marks: bool, title: Optional[str]) -> None:
    """Limits, lane ticks (first lane on top), a time axis in s or m:ss, light grid, title."""
    from matplotlib.ticker import MaxNLocator  # heavy: matplotlib (~1 s), only when drawing
    ax.set_xlim(lo_x, hi_x)
    ax.set_ylim(-0.7, len(lanes) - 0.3 + (0.2 if marks else 0.0))
    ax.set_yticks(range(len(lanes)))
    ax.set_yticklabels(lanes)
    ax.invert_yaxis()
    ax.xaxis.set_major_locator(MaxNLocator(nbins=12, steps=[1, 2, 2.5, 5, 10]))
    ax.xaxis.set_major_formatter(time_formatter(span))
    ax.set_xlabel("time (m:ss)" if span > 90 else "time (s)")
    ax.grid(axis="x", color="#eeeeee", lw=0.6, zorder=-1)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    if title:
        ax.set_title(title, loc="left", fontsize=10)


def _legend(ax, plt, color_by: str, pcol: dict, segs: Sequence[Segment], hi_sets: dict, marks) -> None:
    """Label colours, cough ticks, evidence sets and ground-truth stars, right of the axes (when any)."""
    import matplotlib.patches as mpatches  # heavy: matplotlib (~1 s), only when drawing
    handles = []
    if color_by == "label":
        handles += [mpatches.Patch(color=c, label=k) for k, c in pcol.items()]
    if any(_cough_n(s) for s in segs):
        handles.append(plt.Line2D([], [], marker="v", color=_COUGH_COLOR, ls="none", label="cough"))
    for k in sorted(k for k in hi_sets if hi_sets[k]):
        handles.append(mpatches.Patch(fill=False, edgecolor=set_color(k), lw=2, label=f"set {k} top-k"))
    if marks:
        handles.append(plt.Line2D([], [], marker="*", color="black", ls="none", label="ground truth"))
    if handles:
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=7, frameon=False)


def save_figure(fig, path: os.PathLike | str, *, dpi: int = DPI) -> Path:
    """Save ``fig`` as a byte-deterministic PNG (no software/date metadata, fixed dpi).

    >>> import tempfile, os
    >>> plt = _plt(); fig, ax = plt.subplots(); _ = ax.plot([0, 1])
    >>> p = save_figure(fig, os.path.join(tempfile.mkdtemp(), "a.png"))
    >>> p.read_bytes() == save_figure(fig, p.with_name("b.png")).read_bytes()
    True
    """
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = part_path(p)
    fig.savefig(tmp, dpi=dpi, format="png", metadata={"Software": None}, facecolor="white")
    os.replace(tmp, p)
    return p


def figure_png(fig, *, dpi: int = DPI) -> bytes:
    """The PNG bytes of ``fig`` (as :func:`save_figure` writes them), e.g. for an image widget."""
    buf = io.BytesIO()
    fig.savefig(buf, dpi=dpi, format="png", metadata={"Software": None}, facecolor="white")
    return buf.getvalue()
