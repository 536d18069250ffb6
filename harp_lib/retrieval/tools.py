"""Retrieval tools, the per-set merge, and plan execution (HARP_REFERENCE §3.3-3.5, bugs fixed).

Each plan set is resolved to a window (numeric ``start``/``end`` when given, else
:func:`harp_lib.core.timespan.localize`; "the Nth song" is the *whole* span of the extracted
``SONG_NN`` segments), then its requested tools run inside that window:

* ``time`` — only when the set says ``time: true`` (the reference ran it for every set whenever
  the tool was enabled; documented in docs/agent.md),
* ``keyword`` (``agent.keyword_hits``), ``label`` (normalised to the shared vocabulary),
* ``text_emb`` / ``audio_emb`` / ``domain_emb`` (``agent.vector_hits`` each), with query vectors
  computed on the fly by the space's own embedder and cached per process.

:func:`merge_hits` keeps each segment once with its best score per tool, ranks by the sum over
tools (ties: earlier start, then id), keeps ``top_k`` and re-sorts by time (oracle plans keep
``agent.oracle_top_k`` — by default every segment of the ground-truth window).  A set whose window
cannot be resolved is kept as an empty :class:`EvidenceSet` with ``error``, so evidence numbering
always equals plan numbering.

>>> merge_hits({"time": [("b", 0.1), ("a", 0.1)], "keyword": [("c", 1.0)]},
...            starts={"a": 5.0, "b": 1.0, "c": 9.0}, top_k=2)
[('b', {'time': 0.1}), ('c', {'keyword': 1.0})]
"""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

import numpy as np

from harp_lib.core import audio
from harp_lib.config import create_backend
from harp_lib.extract.sound_events import sound_label
from harp_lib.core.labels import normalize_label
from harp_lib.core.schema import Evidence, EvidenceItem, EvidenceSet, Plan, PlanSet
from harp_lib.core.timespan import LocalizeError, Span, localize, point_time

__all__ = ["QueryEncoder", "resolve_window", "run_tools", "point_scores", "merge_hits", "retrieve", "RetrievalTrace", "clip_span",
           "SPACE_OF_TOOL"]

log = logging.getLogger(__name__)

#: Plan tool -> index embedding space -> registry stage of its embedder.
SPACE_OF_TOOL = {"text_emb": "text", "audio_emb": "audio", "domain_emb": "domain"}
_STAGE_OF_SPACE = {"text": "text_emb", "audio": "audio_emb", "domain": "domain_emb"}
_VEC_CACHE: dict[tuple, np.ndarray] = {}
_EMBEDDERS: dict[tuple, Any] = {}


class QueryEncoder:
    """Query-side vectors for the vector tools, computed on the fly, cached per process.

    The embedder of a space is the one the index was built with (``index.spaces[space]
    ["backend"]``), instantiated through the registry, unless ``embedders`` overrides it
    (tests, notebooks).  Text queries embed the phrase; audio/domain queries embed the
    reference clip (16 kHz mono) of the requested role.
    """

    def __init__(self, spaces: Mapping[str, Mapping], embedders: Optional[Mapping[str, Any]] = None,
                 sr: int = 16000):
        self.spaces = {k: dict(v) for k, v in (spaces or {}).items()}
        self._given = dict(embedders or {})
        self.sr = sr

    def embedder(self, space: str):
        if space in self._given:
            return self._given[space]
        meta = self.spaces.get(space)
        if not meta or not meta.get("backend"):
            raise LookupError(f"the index has no {space!r} space (have: {', '.join(self.spaces) or 'none'})")
        key = (space, meta["backend"], meta.get("model"))
        if key not in _EMBEDDERS:
            _EMBEDDERS[key] = create_backend(_STAGE_OF_SPACE[space], meta["backend"])
        return _EMBEDDERS[key]

    def _key(self, space: str) -> tuple:
        meta = self.spaces.get(space, {})
        emb = self._given.get(space)
        return (space, meta.get("backend"), meta.get("model"), id(emb) if emb is not None else None)

    def text(self, phrase: str, space: str = "text") -> np.ndarray:
        key = self._key(space) + ("text", phrase)
        if key not in _VEC_CACHE:
            _VEC_CACHE[key] = np.asarray(self.embedder(space).embed([phrase]), np.float32)[0]
        return _VEC_CACHE[key]

    def clip(self, path: Path, space: str) -> np.ndarray:
        p = Path(path)
        key = self._key(space) + ("clip", str(p), p.stat().st_mtime)
        if key not in _VEC_CACHE:
            wave = audio.load(p, self.sr)
            _VEC_CACHE[key] = np.asarray(self.embedder(space).embed([wave]), np.float32)[0]
        return _VEC_CACHE[key]


def resolve_window(ps: PlanSet, duration: Optional[float], songs: Optional[Mapping[int, Span]] = None,
                   point_window: float = 30.0) -> Span:
    """The searched window of a plan set (numeric bounds win over the phrase).

    >>> resolve_window(PlanSet("the 2nd song"), 600, {1: Span(0, 200), 2: Span(197, 400)})
    Span(start=197.0, end=400.0)
    >>> resolve_window(PlanSet("ignored", start=10, end=20), 600)
    Span(start=10.0, end=20.0)
    """
    if ps.start is not None and ps.end is not None:
        hi = min(ps.end, duration) if duration else ps.end
        if hi <= ps.start:
            raise LocalizeError(f"window {ps.start}-{ps.end} s lies outside the recording ({duration} s)")
        return Span(ps.start, hi)
    return localize(ps.localize, duration, songs=songs if songs else None, point_window=point_window)


def run_tools(ps: PlanSet, window: Span, ctx) -> tuple[dict[str, list[tuple[str, float]]], list[str]]:
    """Run the set's requested (and enabled) tools in ``window``; returns (hits per tool, problems)."""
    ix, rec = ctx.index, ctx.recording.id
    enabled = set(ctx.tools)
    hits: dict[str, list[tuple[str, float]]] = {}
    problems: list[str] = []
    if ps.time and "time" in enabled:
        hits["time"] = ix.search_time(rec, window)
        t = point_time(ps.localize) if ps.start is None else None
        if t is not None:                                 # "around 0:40": the moment's segment first
            hits["time"] = point_scores(hits["time"], ix, t, float(ctx.params.point_window_sec))
    if ps.keyword and "keyword" in enabled:
        hits["keyword"] = ix.search_keyword(rec, window, ps.keyword, k=int(ctx.params.keyword_hits))
        hits["keyword"] = with_sound_hits(hits["keyword"], ix, rec, window, ps.keyword, int(ctx.params.keyword_hits))
    if ps.label and "label" in enabled:
        lab = normalize_label(ctx.domain, ps.label, strict=False)
        if lab is None and sound_label(ps.label) and ix.has_sound_events(rec):
            lab = sound_label(ps.label)                  # "laughter": a sound event (extract.sound_events)
        if lab is None:
            problems.append(f"label {ps.label!r} is not in the {ctx.domain} vocabulary")
        else:
            hits["label"] = ix.search_label(rec, window, lab)
    k = int(ctx.params.vector_hits)
    for tool, space in SPACE_OF_TOOL.items():
        val = getattr(ps, tool)
        if not val or tool not in enabled:
            continue
        try:
            if tool == "text_emb":
                vec = ctx.encoder.text(val, space)
            else:
                path = ctx.references.get(val)
                if path is None:
                    problems.append(f"{tool}: the query has no reference clip {val!r}")
                    continue
                vec = ctx.encoder.clip(path, space)
            hits[tool] = ix.search_vector(space, rec, window, vec, k=k)
        except Exception as e:  # noqa: BLE001 - a missing space/embedder must not kill the query
            problems.append(f"{tool}: {e}")
    return hits, problems


def with_sound_hits(hits: list[tuple[str, float]], ix, rec: str, window: Span, phrase: str,
                    k: int) -> list[tuple[str, float]]:
    """Keyword hits plus the segments holding a sound event the phrase names ("laughter",
    "coughing": :func:`harp_lib.extract.sound_events.sound_label`; not "speech"), best score
    first, then time and id; unchanged when the recording has no sound events."""
    snd = sound_label(phrase) if len(phrase.split()) <= 2 else None
    extra = ix.search_sound(rec, window, snd) if snd and snd != "Speech" else []
    if not extra:
        return hits
    best: dict[str, float] = {}
    for sid, sc in list(hits) + extra:
        best[sid] = max(sc, best.get(sid, sc))
    starts = ix.starts_of(best)
    return [(sid, sc) for sid, sc in sorted(best.items(), key=lambda x: (-x[1], starts[x[0]], x[0]))[:k]]


def point_scores(hits: Sequence[tuple[str, float]], ix, t: float, half: float) -> list[tuple[str, float]]:
    """Time-tool scores for a point window: 1.0 for the segment holding ``t``, falling linearly
    with the distance to ``t`` to 0 at ``half`` seconds (the window's half-width), best first.

    Overlap / window length (the reference's score) ties every segment wholly inside the window,
    and the tie-break by start kept the window's *earliest* segments, not the one at the moment.
    """
    out = []
    for sid, _ in hits:
        seg = ix.segment(sid)
        if seg.start <= t < seg.end:
            sc = 1.0
        else:
            dist = min(abs(seg.start - t), abs(seg.end - t))
            sc = min(0.99, max(0.01, round(1.0 - dist / max(half, 1e-6), 3)))
        out.append((sid, sc, seg.start))
    out.sort(key=lambda x: (-x[1], x[2], x[0]))
    return [(sid, sc) for sid, sc, _ in out]


def _hit_starts(ix, hits: Mapping[str, Sequence[tuple[str, float]]]) -> dict[str, float]:
    """Start of every hit id (``ix.starts_of`` when the index has it: a memory-mapped index then
    parses only the segments kept)."""
    ids = dict.fromkeys(x for sid_list in hits.values() for x, _ in sid_list)
    if hasattr(ix, "starts_of"):
        return ix.starts_of(ids)
    return {x: ix.segment(x).start for x in ids}


def merge_hits(hits: Mapping[str, Sequence[tuple[str, float]]], *, starts: Mapping[str, float],
               top_k: int = 3) -> list[tuple[str, dict[str, float]]]:
    """Dedupe by id (max score per tool), rank by sum (ties: start, id), keep top_k, sort by time."""
    pooled: dict[str, dict[str, float]] = {}
    for tool in sorted(hits):
        for sid, sc in hits[tool]:
            src = pooled.setdefault(sid, {})
            src[tool] = max(float(sc), src.get(tool, -math.inf))
    ranked = sorted(pooled.items(), key=lambda kv: (-round(sum(kv[1].values()), 6), starts[kv[0]], kv[0]))
    kept = ranked[: max(0, int(top_k))]
    kept.sort(key=lambda kv: (starts[kv[0]], kv[0]))
    return [(sid, {t: round(v, 4) for t, v in sorted(src.items())}) for sid, src in kept]


def clip_span(items: Sequence[EvidenceItem], window: Span, max_sec: float,
              duration: Optional[float] = None) -> Span:
    """Audio attached for a set: min start to max end of its items (else the window), cut to
    the set's window (a segment that overlaps the window's edge would otherwise carry in audio
    from outside it, e.g. the neighbouring song of a medley), capped.

    >>> clip_span([], Span(0, 600), 120)
    Span(start=0.0, end=120.0)
    >>> it = EvidenceItem(segment_id="s", start=50.0, end=65.0)
    >>> clip_span([it], Span(55, 300), 120)
    Span(start=55.0, end=65.0)
    """
    if items:
        lo, hi = min(i.start for i in items), max(i.end for i in items)
        cut_lo, cut_hi = max(lo, window.start), min(hi, window.end)
        if cut_hi > cut_lo:
            lo, hi = cut_lo, cut_hi
    else:
        lo, hi = window.start, window.end
    if duration is not None and math.isfinite(duration):
        hi = min(hi, duration)
    hi = min(hi, lo + float(max_sec))
    if not math.isfinite(hi) or hi <= lo:
        hi = lo + float(max_sec) if not math.isfinite(hi) else lo
    return Span(lo, hi)


@dataclass
class RetrievalTrace:
    """What :func:`retrieve` did per plan set (``retrieve(..., trace=True)``), in plan order:
    the resolved window (``(start, end)``, or the localize error text), every tool's hits
    ``{tool: [(segment_id, score), ...]}`` before the merge, and the problems the tools reported."""
    windows: list = field(default_factory=list)
    tool_hits: list = field(default_factory=list)
    problems: list = field(default_factory=list)


def retrieve(plan: Plan, ctx, *, trace: bool = False):
    """Execute every plan set; one :class:`EvidenceSet` per plan set, in plan order.

    With ``trace=True`` returns ``(evidence, RetrievalTrace)``: the per-tool hits the merge
    started from (the one retrieval loop; viewers never re-run the tools).
    """
    out: list[EvidenceSet] = []
    tr = RetrievalTrace()
    dur = ctx.recording.duration or None
    for i, ps in enumerate(plan.sets, 1):
        try:
            window = resolve_window(ps, dur, ctx.songs, float(ctx.params.point_window_sec))
        except LocalizeError as e:
            out.append(EvidenceSet(index=i, localize=ps.localize, start=0.0, end=0.0,
                                   error=f"localize failed: {e}"))
            tr.windows.append(f"localize failed: {e}")
            tr.tool_hits.append({})
            tr.problems.append([f"localize failed: {e}"])
            continue
        hits, problems = run_tools(ps, window, ctx)
        tr.windows.append((window.start, window.end))
        tr.tool_hits.append(hits)
        tr.problems.append(list(problems))
        starts = _hit_starts(ctx.index, hits)
        k = ctx.params.oracle_top_k if plan.oracle else ctx.params.top_k
        merged = merge_hits(hits, starts=starts, top_k=len(starts) if k is None else int(k))
        segs = {sid: ctx.index.segment(sid) for sid, _ in merged}      # only the kept ones are built
        items = tuple(EvidenceItem(segment_id=sid, start=segs[sid].start, end=segs[sid].end,
                                   speaker=segs[sid].speaker, text=segs[sid].text,
                                   labels=dict(segs[sid].labels), sources=src) for sid, src in merged)
        cs = clip_span(items, window, float(ctx.params.max_clip_sec), dur)
        out.append(EvidenceSet(index=i, localize=ps.localize, start=window.start, end=window.end,
                               items=items, clip_start=cs.start, clip_end=cs.end,
                               error="; ".join(problems) or None))
    ev = Evidence(sets=tuple(out))
    return (ev, tr) if trace else ev
