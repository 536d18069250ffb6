"""The explorer's logic as plain data: :class:`ExplorerState`, no widgets and no browser.

What the explorer (:mod:`harp_lib.viz.explorer`) shows of one domain -- recordings, segments,
queries and every agent step -- with every user action a method, so tests (and notebooks) drive
it without a browser: pick a recording, select a segment (its audio window, transcript and
labels), pick or type a query, choose a setup A1..A7 and run it
(:func:`~harp_lib.viz.trace.trace_query`); :meth:`ExplorerState.views` gives the text of every
result panel and :meth:`ExplorerState.timeline_figure` the timeline.  On a user collection
(``collection=``, ``harp ingest``) :meth:`ExplorerState.ask` answers free-text questions.

Python only::

    st = ExplorerState(domain="song")
    st.select_recording(st.recording_ids[0]); st.select_query(st.queries[0].query_id)
    st.select_setup("A3"); trace = st.run(); print(st.views()["answer"])
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Optional, Sequence

from harp_lib.agent.evidence import render_labels
from harp_lib.agent.runner import Agent
from harp_lib.config import Config, get_setup, load_config
from harp_lib.core import audio
from harp_lib.core.paths import DataPaths
from harp_lib.core.jsonl import read_jsonl
from harp_lib.core.schema import DOMAINS, QUERY_TYPE_DOMAIN, Query, Recording, Segment, resolve_under
from harp_lib.core.segments import SegmentSet
from harp_lib.core.timespan import format_time
from harp_lib.ownaudio.ask import ask
from harp_lib.ownaudio.collection import collection
from harp_lib.retrieval.index import SegmentIndex
from harp_lib.retrieval.references import Hearing
from harp_lib.viz.timeline import _plt, plot_timeline, segment_label
from harp_lib.viz.trace import QueryTrace, trace_query, verdict_summary
from harp_lib.viz.walkthrough import ground_truth_text, plan_lines

__all__ = ["ExplorerState", "CUSTOM_QUERY_ID"]

log = logging.getLogger(__name__)

#: Query id given to a query typed by hand (it has no ground truth, so it is not judged).
CUSTOM_QUERY_ID = "custom"


class ExplorerState:
    """What the explorer shows, as plain data; every user action is a method.

    ``cfg`` defaults to params.yaml; data come from ``paths.benchmark/<domain>`` and
    ``paths.index/<domain>``.  ``index`` / ``bench_dir`` override them (tests, notebooks).
    Without an index the ground-truth segments are shown and queries cannot run (``notice``
    says what to do).  ``judges`` defaults to ``("rule",)``; ``hearing=False`` switches
    off the offline labelers in audio-only setups (fast tests).

    >>> from harp_lib.retrieval.index import SegmentIndex
    >>> from harp_lib.core.schema import Segment
    >>> ix = SegmentIndex.from_segments([Segment("r_ext_0000", "r", 0, 20, "S0", "I feel great",
    ...                                          {"primary": "Happy"})])
    >>> st = ExplorerState(domain="emotion", index=ix, bench_dir=None, hearing=False)
    >>> st.recording_ids
    ['r']
    >>> _ = st.set_custom_query('Around 10 seconds, someone said "great". Which emotion?', "state")
    >>> st.select_setup("A1"); st.run().prediction.answer
    'Happy'
    """

    def __init__(self, cfg: Optional[Config] = None, domain: Optional[str] = None, *, index=None,
                 bench_dir: Optional[Path] | str = "auto", judges: Optional[Sequence[str]] = None,
                 hearing: Any = None, agent_kw: Optional[dict] = None, collection: Optional[str] = None):
        self.cfg = cfg if cfg is not None else load_config()
        self.collection, self.answer = collection, None
        if collection is not None:      # your own recordings (harp ingest): free-text questions via ask()
            domain, bench_dir, index = _user_collection(self.cfg, collection, domain, index)
        self.judges = tuple(judges) if judges is not None else ("rule",)
        self.agent_kw = dict(agent_kw or {})
        if hearing is not None:
            self.agent_kw["hearing"] = hearing
        self.color_by = "speaker"
        self.setup = "A3"
        self._given_index = index
        self._given_bench = bench_dir
        self.set_domain(domain or str(self.cfg.get("domains")[0]))

    # -- data ------------------------------------------------------------------------------
    def set_domain(self, domain: str) -> None:
        """Load a domain's recordings, queries, ground truth and index; select its first recording."""
        self.domain = domain
        self.notice = ""
        if self._given_bench == "auto":
            bench = DataPaths(self.cfg).benchmark(domain)
            self.bench_dir = bench if bench.exists() else None
        else:
            self.bench_dir = Path(self._given_bench) if self._given_bench else None
        b = self.bench_dir
        self.recordings: dict[str, Recording] = ({r.id: r for r in read_jsonl(b / "recordings.jsonl", Recording)}
                                                 if b and (b / "recordings.jsonl").exists() else {})
        self.all_queries: list[Query] = ([q for q in read_jsonl(b / "queries.jsonl", Query) if q.domain == domain]
                                         if b and (b / "queries.jsonl").exists() else [])
        self.gt: dict[str, list[Segment]] = (SegmentSet.read(b / "segments.jsonl").by_recording()
                                             if b and (b / "segments.jsonl").exists() else {})
        self.index = self._given_index
        if self.index is None:
            idx_dir = DataPaths(self.cfg).index(domain)
            if idx_dir.exists():
                self.index = SegmentIndex.load(idx_dir)
            else:
                self.notice = (f"no index at {idx_dir}: showing ground-truth segments; run "
                               f"`harp extract --domain {domain}` and `harp index --domain {domain}` to ask queries")
        if self.bench_dir is None and self._given_bench == "auto":
            self.notice = (self.notice + "; " if self.notice else "") + (
                f"no benchmark at {DataPaths(self.cfg).benchmark(domain)}: no audio, queries or ground truth "
                f"(run `harp synth`)")
        self._agents: dict[str, Any] = {}
        self.trace: Optional[QueryTrace] = None
        self.query: Optional[Query] = None
        self.recording: Optional[Recording] = None
        self.selected: Optional[Segment] = None
        ids = self.recording_ids
        if ids:
            self.select_recording(ids[0])

    @property
    def recording_ids(self) -> list[str]:
        """Recordings of the domain (benchmark manifest, plus any only in the index), sorted."""
        ids = set(self.recordings)
        if self.index is not None:
            ids |= set(self.index.recording_ids())
        return sorted(ids)

    @property
    def segments(self) -> list[Segment]:
        """Segments of the selected recording: the index's (what the agent searches), else ground truth."""
        if self.recording is None:
            return []
        if self.index is not None:
            try:
                return list(self.index.segments(self.recording.id))
            except KeyError:
                return []
        return list(self.gt.get(self.recording.id, []))

    @property
    def queries(self) -> list[Query]:
        """Benchmark queries about the selected recording."""
        rid = self.recording.id if self.recording else None
        return [q for q in self.all_queries if q.recording_id == rid]

    # -- actions ---------------------------------------------------------------------------
    def select_recording(self, recording_id: str) -> None:
        """Show ``recording_id``; clears the selected segment, query and result."""
        if recording_id not in self.recording_ids:
            raise KeyError(f"recording {recording_id!r} is not in domain {self.domain!r} "
                           f"(have: {', '.join(self.recording_ids) or 'none'})")
        rec = self.recordings.get(recording_id)
        if rec is None:  # in the index only: a stub with the index's extent
            segs = self.index.segments(recording_id)
            rec = Recording(recording_id, self.domain, f"{recording_id}.wav", max((s.end for s in segs), default=0.0))
        self.recording = rec
        self.selected = None
        self.query = None
        self.trace = None

    def set_color_by(self, color_by: str) -> None:
        """``"speaker"`` (lanes' colours: speakers / songs) or ``"label"`` (primary label)."""
        if color_by not in ("speaker", "label"):
            raise ValueError(f"color_by must be 'speaker' or 'label', got {color_by!r}")
        self.color_by = color_by

    def select_segment(self, segment_id: Optional[str]) -> Optional[Segment]:
        """Select a segment of the current recording (``None`` clears the selection)."""
        if segment_id is None:
            self.selected = None
            return None
        for s in self.segments:
            if s.id == segment_id:
                self.selected = s
                return s
        raise KeyError(f"segment {segment_id!r} is not a segment of recording "
                       f"{self.recording.id if self.recording else None!r}")

    @property
    def audio_path(self) -> Optional[Path]:
        if self.recording is None or self.bench_dir is None or self.recording.id not in self.recordings:
            return None
        return resolve_under(self.bench_dir, self.recording.audio_path)

    def segment_audio(self, sr: Optional[int] = None):
        """``(wave, sr)`` of the selected segment's window (float32 mono), via harp_lib.core.audio."""
        if self.selected is None:
            raise ValueError("no segment selected: call select_segment(id) first")
        path = self.audio_path
        if path is None:
            raise FileNotFoundError(f"recording {self.recording.id!r} has no audio here "
                                    f"(benchmark folder {self.bench_dir}); run `harp synth` or pass bench_dir=")
        sr = int(sr or self.cfg.agent.clip_sample_rate)
        return audio.read_window(path, self.selected.span, sr), sr

    def select_query(self, query_id: str) -> Query:
        """Pick a benchmark query about the selected recording."""
        for q in self.queries:
            if q.query_id == query_id:
                self.query = q
                self.trace = None
                return q
        raise KeyError(f"query {query_id!r} is not about recording {self.recording.id if self.recording else None!r} "
                       f"(have: {', '.join(q.query_id for q in self.queries) or 'none'})")

    def set_custom_query(self, text: str, query_type: Optional[str] = None) -> Query:
        """Ask a question typed by hand about the selected recording (not judged: no ground truth)."""
        if self.recording is None:
            raise ValueError("select a recording first")
        types = [t for t, d in QUERY_TYPE_DOMAIN.items() if d == self.domain]
        qt = query_type or (self.query.query_type if self.query else types[0])
        if qt not in types:
            raise ValueError(f"query type {qt!r} is not a {self.domain} type (choose one of {', '.join(types)})")
        if not text.strip():
            raise ValueError("the query text is empty")
        self.query = Query(CUSTOM_QUERY_ID, self.domain, self.recording.id, qt, text.strip(), {})
        self.trace = None
        return self.query

    def ask(self, text: str):
        """Answer a free-text question about the selected recording of a user collection
        (:func:`harp_lib.ownaudio.ask.ask`: no query type, no ground truth); kept in ``answer``."""
        if self.collection is None:
            raise ValueError("ask() answers questions on your own recordings: open the explorer with "
                             "collection=NAME (harp ingest); for benchmark queries use set_custom_query + run")
        if self.recording is None:
            raise ValueError("select a recording first")
        self.answer = ask(self.recording.id, text, setup=self.setup, collection_name=self.collection, cfg=self.cfg)
        return self.answer

    def select_setup(self, name: str) -> None:
        """Choose the setup (A1..A7); a result of another setup is cleared (run again)."""
        self.setup = get_setup(name).name
        if self.trace is not None and self.trace.setup.name != self.setup:
            self.trace = None

    def run(self) -> QueryTrace:
        """Run the selected query under the selected setup; the result is kept in ``trace``."""
        if self.query is None:
            raise ValueError("no query: select_query(id) or set_custom_query(text) first")
        if self.index is None:
            raise FileNotFoundError(self.notice or f"no index for domain {self.domain}")
        rec = self.recording
        agent = self._agents.get(self.setup)
        if agent is None:
            kw = dict(self.agent_kw)
            if kw.get("hearing") is False:
                kw["hearing"] = Hearing(self.domain, None, labelers=[])
            agent = self._agents[self.setup] = Agent(self.index, self.setup, self.cfg, domain=self.domain, **kw)
        self.trace = trace_query(self.query, self.index, self.setup, self.cfg, recording=rec,
                                 bench_dir=self.bench_dir if rec.id in self.recordings else None,
                                 gt_segments=self.gt.get(rec.id, []), judges=self.judges, agent=agent)
        return self.trace

    # -- what is shown ---------------------------------------------------------------------
    @property
    def highlight(self) -> dict[int, list[str]]:
        """Merged top-k per set of the current result (empty without one)."""
        if self.trace is None or self.recording is None or self.trace.query.recording_id != self.recording.id:
            return {}
        return self.trace.merged

    def segment_choices(self) -> list[tuple[str, str]]:
        """``(label, segment_id)`` per segment, for a selection list."""
        out = []
        for s in self.segments:
            lab = segment_label(s)
            txt = (s.text[:48] + "…") if len(s.text) > 48 else s.text
            out.append((f"{format_time(s.start)}–{format_time(s.end)}  {s.speaker or '?'}"
                        + (f"  [{lab}]" if lab else "") + (f"  {txt}" if txt else ""), s.id))
        return out

    def timeline_figure(self, *, width: float = 13.0):
        """The recording's timeline (selected segment framed, result highlighted); a Figure."""
        plt = _plt()
        segs = self.segments
        lanes = len({s.speaker or "?" for s in segs}) or 1
        fig, ax = plt.subplots(figsize=(width, 0.5 * lanes + 1.3))
        if not segs:
            ax.axis("off")
            ax.text(0.5, 0.5, "no segments for this recording", ha="center", va="center")
            return fig
        windows = self.trace.windows if self.highlight else None
        title = (f"{self.recording.id} · {len(segs)} segments"
                 + (" (ground truth)" if self.index is None else "") + f" · coloured by {self.color_by}")
        plot_timeline(segs, color_by=self.color_by, highlight=self.highlight, windows=windows,
                      selected=self.selected.id if self.selected else None,
                      duration=self.recording.duration, ax=ax, title=title)
        fig.tight_layout()
        return fig

    def segment_details(self) -> str:
        """Transcript and labels of the selected segment (plain text)."""
        s = self.selected
        if s is None:
            return ""
        return (f"{s.id}  {format_time(s.start)}–{format_time(s.end)} ({s.duration:.1f} s)  speaker {s.speaker or '?'}\n"
                f"transcript: {s.text or '(none)'}\nlabels: {render_labels(s.labels or {}) or '(none)'}")

    def views(self) -> dict[str, str]:
        """Text of every result panel: query, plan, hits, merged, evidence, prompt, answer, rationale, verdicts."""
        t = self.trace
        if t is None:
            return {}
        hits = []
        for i, (h, probs) in enumerate(zip(t.tool_hits, t.tool_problems), 1):
            hits.append(f"Set {i}")
            for tool in sorted(h):
                hits.append(f"  {tool}: " + (", ".join(f"{_seg_at(self, sid)} {sc:.2f}" for sid, sc in h[tool])
                                             or "no hits"))
            hits += [f"  problem: {p}" for p in probs]
        merged = []
        for s in t.prediction.evidence.sets:
            merged.append(f"Set {s.index} ({s.localize}): " + (", ".join(
                f"{_seg_at(self, i.segment_id)} {i.score:.2f}" for i in s.items) or "nothing retrieved"))
        return {"query": f"[{t.query.query_id} · {t.query.query_type}] {t.query.text}",
                "plan": "\n".join(plan_lines(t.prediction.plan)),
                "hits": "\n".join(hits) or "(no plan sets)",
                "merged": "\n".join(merged) or "(no evidence sets)",
                "evidence": t.evidence_text,
                "prompt": t.prompt,
                "answer": t.prediction.answer or "(none)",
                "rationale": t.prediction.rationale or "(none)",
                "error": t.prediction.error or "",
                "ground_truth": ground_truth_text(t.query),
                "verdicts": "\n".join(verdict_summary(t.judgements)) or "(not judged)"}


def _user_collection(cfg, name: str, domain: Optional[str], index):
    """(domain, bench_dir, index) of a user collection: its first domain with recordings by default."""
    col = collection(cfg, name)
    have = [d for d in DOMAINS if col.manifest(d).exists()]
    domain = domain or (have[0] if have else None)
    if domain not in have:
        raise FileNotFoundError(f"user collection {name!r} has no {domain or ''} recordings ({col.root}); "
                                f"add some with `harp ingest FILE --domain speech|clinical|song`")
    if index is None and col.index_dir(domain).exists():
        index = SegmentIndex.load(col.index_dir(domain))
    return domain, col.bench_dir(domain), index


def _seg_at(st: ExplorerState, sid: str) -> str:
    try:
        s = st.index.segment(sid)
        return f"[{format_time(s.start)}–{format_time(s.end)} {s.speaker or '?'}]"
    except Exception:  # noqa: BLE001
        return sid
