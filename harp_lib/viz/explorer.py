"""An ipywidgets explorer of one domain: recordings, segments, queries and every agent step.

All logic lives in :class:`~harp_lib.viz.explorer_state.ExplorerState`, a plain Python object
that tests (and notebooks) drive without a browser; :class:`Explorer` (this module) only binds
widgets to it and :func:`explore` builds and displays one.

* pick a recording -> a timeline of its segments coloured by speaker / song (or by label),
  with emotion, cough and aesthetic labels;
* select a segment -> hear it (``IPython.display.Audio`` of the window, read with
  :func:`harp_lib.core.audio.read_window`) and read its transcript and labels;
* pick a benchmark query (or type one), choose a setup A1..A7, run -> the plan, each tool's
  hits, the merged top-k per set (outlined on the timeline), the evidence as the model sees
  it, the answer, the rationale and the judges' verdicts (:func:`~harp_lib.viz.trace.trace_query`).

Notebook::

    from harp_lib.viz import explore
    explore(domain="emotion")            # displays the widget
"""
from __future__ import annotations

import html
from typing import Optional

from harp_lib.config import SETUP_ORDER, Config, get_setup
from harp_lib.core.schema import QUERY_TYPE_DOMAIN
from harp_lib.core.timespan import format_time
from harp_lib.viz.explorer_state import ExplorerState
from harp_lib.viz.timeline import figure_png, set_color
from harp_lib.viz.trace import verdict_summary
from harp_lib.viz.walkthrough import plan_lines

__all__ = ["Explorer", "explore"]


# ---------------------------------------------------------------------------------------
# The widget layer: binds widgets to an ExplorerState, nothing else
# ---------------------------------------------------------------------------------------
def _pre(text: str) -> str:
    return ("<pre style='white-space:pre-wrap;word-break:break-word;overflow:hidden;font-size:12px;line-height:1.35;margin:0'>"
            + html.escape(text) + "</pre>")


class Explorer:
    """The ipywidgets front end of :class:`ExplorerState`; ``.widget`` is the box to display.

    >>> # in a notebook:  Explorer(domain="clinical").widget
    """

    def __init__(self, cfg: Optional[Config] = None, domain: Optional[str] = None, *,
                 state: Optional[ExplorerState] = None, **state_kw):
        import ipywidgets as W  # heavy: ipywidgets, only in notebooks
        self.W = W
        self._muted = False
        self.state = state or ExplorerState(cfg, domain, **state_kw)
        st = self.state
        wide = W.Layout(width="auto")
        self.domain = W.Dropdown(options=list(st.cfg.get("domains")), value=st.domain, description="domain")
        self.recording = W.Dropdown(options=st.recording_ids, description="recording")
        self.color = W.ToggleButtons(options=[("by speaker / song", "speaker"), ("by label", "label")],
                                     value=st.color_by, style={"button_width": "150px"})
        self.notice = W.HTML()
        self.timeline = W.Image(format="png", layout=W.Layout(width="100%"))
        self.segments = W.Select(options=[], rows=9, layout=W.Layout(width="52%"))
        self.seg_info = W.HTML(layout=W.Layout(width="100%"))
        self.audio = W.Output()
        self.query = W.Dropdown(options=[], description="query", layout=W.Layout(width="60%"))
        self.qtype = W.Dropdown(options=[], description="type", layout=W.Layout(width="22%"))
        self.text = W.Textarea(placeholder="…or type a question about this recording, then Run",
                               layout=W.Layout(width="100%", height="52px"))
        self.setup = W.ToggleButtons(options=list(SETUP_ORDER), value=st.setup, tooltips=[
            get_setup(s).describe() for s in SETUP_ORDER], style={"button_width": "48px"})
        self.run_btn = W.Button(description="Run", button_style="primary", icon="play")
        self.status = W.HTML()
        self.overview = W.HTML()
        self.tabs = {k: W.HTML() for k in ("plan", "hits", "evidence", "prompt")}
        tab = W.Tab(children=[self.overview] + list(self.tabs.values()))
        for i, name in enumerate(["Answer & verdicts", "Plan", "Tool hits", "Evidence (model view)", "Prompt"]):
            tab.set_title(i, name)
        self.tab = tab
        self.widget = W.VBox([
            W.HTML("<h3 style='margin:4px 0'>HARP explorer</h3>"),
            W.HBox([self.domain, self.recording, self.color]),
            self.notice, self.timeline,
            W.HBox([self.segments, W.VBox([self.seg_info, self.audio], layout=W.Layout(width="48%"))]),
            W.HBox([self.query, self.qtype]), self.text,
            W.HBox([W.Label("setup"), self.setup, self.run_btn]), self.status, tab,
        ], layout=wide)
        self.domain.observe(self._on_domain, names="value")
        self.recording.observe(self._on_recording, names="value")
        self.color.observe(self._on_color, names="value")
        self.segments.observe(self._on_segment, names="value")
        self.query.observe(self._on_query, names="value")
        self.setup.observe(self._on_setup, names="value")
        self.run_btn.on_click(self._on_run)
        self._sync_recording()

    # -- refresh from state -----------------------------------------------------------------
    def _sync_recording(self) -> None:
        st = self.state
        self._muted = True
        self.recording.options = st.recording_ids
        self.recording.value = st.recording.id if st.recording else None
        self.segments.options = [("(select a segment to hear it)", None)] + st.segment_choices()
        self.segments.value = None
        self.query.options = [("(type below)", None)] + [(f"{q.query_id}: {q.text[:90]}", q.query_id)
                                                          for q in st.queries]
        self.query.value = st.query.query_id if st.query and st.query.query_id != "custom" else None
        self.qtype.options = [t for t, d in QUERY_TYPE_DOMAIN.items() if d == st.domain]
        self._muted = False
        self.notice.value = (f"<span style='color:#a15c00'>{html.escape(st.notice)}</span>" if st.notice else "")
        self._show_segment()
        self._draw()
        self._show_result()

    def _draw(self) -> None:
        import matplotlib.pyplot as plt  # heavy: matplotlib (~1 s), only when drawing
        fig = self.state.timeline_figure()
        self.timeline.value = figure_png(fig, dpi=90)
        plt.close(fig)

    def _show_segment(self) -> None:
        from IPython.display import Audio  # heavy: IPython, only in notebooks
        st = self.state
        self.audio.outputs = ()
        if st.selected is None:
            self.seg_info.value = "<i>Select a segment on the left to hear it and read its transcript.</i>"
            return
        self.seg_info.value = _pre(st.segment_details())
        try:
            wave, sr = st.segment_audio()
            # append_display_data works inside a kernel and without one (tests)
            self.audio.append_display_data(Audio(wave, rate=sr, normalize=True))
        except Exception as e:  # noqa: BLE001 - say why there is no sound
            self.seg_info.value += f"<span style='color:#a15c00'>no audio: {html.escape(str(e))}</span>"

    def _show_result(self) -> None:
        v = self.state.views()
        if not v:
            self.overview.value = "<i>Pick a query and a setup, then Run.</i>"
            for w in self.tabs.values():
                w.value = ""
            return
        t = self.state.trace
        sets = "".join(
            f"<div><b style='color:{set_color(s.index)}'>Set {s.index}</b> ({html.escape(s.localize)}): "
            + (", ".join(html.escape(f"{format_time(i.start)}–{format_time(i.end)} {i.speaker or ''} "
                                     f"{i.labels.get('primary', '') if i.labels else ''}") for i in s.items)
               or "nothing retrieved") + "</div>" for s in t.prediction.evidence.sets)
        verdicts = "".join(f"<div>{html.escape(x)}</div>" for x in verdict_summary(t.judgements)) or "(not judged)"
        self.overview.value = (
            f"<div style='font-size:13px;line-height:1.45'>"
            f"<div><b>Query</b> {html.escape(v['query'])}</div>"
            f"<div><b>Plan</b> {html.escape(' | '.join(plan_lines(t.prediction.plan)))}</div>"
            f"<div style='margin-top:4px'><b>Merged top-k per set</b> (outlined on the timeline)</div>{sets}"
            f"<div style='margin-top:4px'><b>Answer</b> {html.escape(v['answer'])}</div>"
            f"<div><b>Rationale</b> {html.escape(v['rationale'])}</div>"
            + (f"<div style='color:#b00'><b>Error</b> {html.escape(v['error'])}</div>" if v["error"] else "")
            + f"<div><b>Ground truth</b> {html.escape(v['ground_truth'])}</div>"
            f"<div><b>Verdicts</b> {verdicts}</div></div>")
        for k, w in self.tabs.items():
            w.value = _pre(v[k])

    def run(self) -> None:
        """Run the chosen (or typed) query with the chosen setup, as the Run button does."""
        self._on_run(None)

    # -- events ---------------------------------------------------------------------------
    def _on_domain(self, ch) -> None:
        self.state.set_domain(ch["new"])
        self._sync_recording()

    def _on_recording(self, ch) -> None:
        if self._muted or ch["new"] is None:
            return
        self.state.select_recording(ch["new"])
        self._sync_recording()

    def _on_color(self, ch) -> None:
        self.state.set_color_by(ch["new"])
        self._draw()

    def _on_segment(self, ch) -> None:
        if self._muted:
            return
        self.state.select_segment(ch["new"])
        self._show_segment()
        self._draw()

    def _on_query(self, ch) -> None:
        if self._muted or ch["new"] is None:
            return
        q = self.state.select_query(ch["new"])
        self.qtype.value = q.query_type
        self.text.value = ""

    def _on_setup(self, ch) -> None:
        self.state.select_setup(ch["new"])
        if self.state.query is not None:
            self._on_run(None)

    def _on_run(self, _btn) -> None:
        st = self.state
        if st.collection is not None and self.text.value.strip():    # your own recordings: harp ask
            try:
                a = st.ask(self.text.value)
            except Exception as e:  # noqa: BLE001 - shown in the widget
                self.status.value = f"<span style='color:#b00'>{html.escape(type(e).__name__)}: {html.escape(str(e))}</span>"
                return
            self.status.value = f"<b>{st.setup}</b> {html.escape(get_setup(st.setup).describe())}"
            self.overview.value = _pre(a.render())
            return
        try:
            if self.text.value.strip():
                st.set_custom_query(self.text.value, self.qtype.value)
            if st.query is None:
                self.status.value = "<span style='color:#a15c00'>pick a query or type one first</span>"
                return
            self.status.value = f"<i>running {html.escape(st.query.query_id)} with {st.setup}…</i>"
            st.run()
            p = st.trace.prediction
            self.status.value = (f"<b>{st.setup}</b> {html.escape(get_setup(st.setup).describe())} · "
                                 f"{p.timings.get('total_sec', 0):.1f} s")
        except Exception as e:  # noqa: BLE001 - show it in the widget, not as a traceback
            self.status.value = f"<span style='color:#b00'>{html.escape(type(e).__name__)}: {html.escape(str(e))}</span>"
            return
        self._draw()
        self._show_result()


def explore(cfg: Optional[Config] = None, domain: Optional[str] = None, *, display: bool = True, **state_kw):
    """Build the explorer for ``domain`` and display it (in Jupyter); returns the :class:`Explorer`.

    ``state_kw`` go to :class:`ExplorerState` (``index=``, ``bench_dir=``, ``judges=``, ``hearing=``).
    """
    ex = Explorer(cfg, domain, **state_kw)
    if display:
        from IPython.display import display as _display  # heavy: IPython, only in notebooks
        _display(ex.widget)
    return ex
