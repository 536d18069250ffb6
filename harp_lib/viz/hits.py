"""Search hits explained: one table row per hit with the tool, its score, the segment's time,
speaker, labels and transcript, and *why* the tool returned it (``notebooks/02_index``).

:func:`explain_hits` reads hits of the index tools directly (``SegmentIndex.search_*``);
:func:`explain_trace` the per-set hits of one real agent run (:func:`harp_lib.viz.trace_query`),
where the plan set says which argument each tool was called with.

>>> from harp_lib.retrieval.index import SegmentIndex
>>> from harp_lib.core.schema import Segment
>>> from harp_lib.core.timespan import Span
>>> ix = SegmentIndex.from_segments([Segment("r_ext_0000", "r", 62, 70, "S1", "I feel great today",
...                                          {"primary": "Happy"})])
>>> df = explain_hits(ix, {"keyword": ix.search_keyword("r", Span(0, 600), "great")}, {"keyword": "great"})
>>> df.loc[0, ["tool", "time", "labels", "why"]].tolist(), float(df.loc[0, "score"])
(['keyword', '1:02–1:10', 'primary=Happy', "transcript contains 'great' verbatim"], 1.0)
"""
from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

from harp_lib.core.timespan import format_time

__all__ = ["explain_hits", "explain_trace", "why"]

_TEXT_CHARS = 70


def why(tool: str, arg: Any, score: float) -> str:
    """One short sentence: why ``tool`` called with ``arg`` returned a hit scoring ``score``."""
    if tool == "time":
        return "in the searched window (nearer the named moment scores higher)"
    if tool == "keyword":
        return (f"transcript contains {arg!r} verbatim" if score >= 1.0 else
                f"transcript holds {score:.0%} of the words of {arg!r}")
    if tool == "label":
        return f"label is {arg!r} (score: labeler probability)"
    if tool == "text_emb":
        return f"meaning of the transcript vs {arg!r} (cosine)"
    if tool == "audio_emb":
        return f"voice/sound of the segment vs reference clip {arg} (cosine)"
    if tool == "domain_emb":
        return f"emotion/music features vs reference clip {arg} (cosine)"
    return f"score {score:.3f}"


def _labels(labels: Mapping[str, Any]) -> str:
    parts = []
    for k, v in sorted(labels.items()):
        if v is None or k == "scores" or isinstance(v, (dict, list)):
            continue
        parts.append(f"{k}={round(v, 2) if isinstance(v, float) else v}")
    return ", ".join(parts)


def _row(index, tool: str, rank: int, sid: str, score: float, arg: Any, **extra) -> dict:
    s = index.segment(sid)
    text = " ".join(s.text.split())
    return {**extra, "tool": tool, "rank": rank, "score": round(float(score), 3),
            "time": f"{format_time(s.start)}–{format_time(s.end)}", "speaker": s.speaker or "",
            "labels": _labels(s.labels),
            "text": text if len(text) <= _TEXT_CHARS else text[:_TEXT_CHARS - 1] + "…",
            "why": why(tool, arg, float(score))}


def explain_hits(index, hits: Mapping[str, Sequence[tuple[str, float]]], args: Optional[Mapping[str, Any]] = None,
                 *, top: int = 5):
    """A DataFrame of the first ``top`` hits of each tool (``hits``: tool -> ``[(segment id,
    score)]``); ``args`` names what each tool was called with (for the *why* column)."""
    import pandas as pd  # heavy: pandas (~0.4 s)
    args = dict(args or {})
    rows = [_row(index, tool, r, sid, sc, args.get(tool))
            for tool, hs in hits.items() for r, (sid, sc) in enumerate(list(hs)[:top], 1)]
    return pd.DataFrame(rows, columns=["tool", "rank", "score", "time", "speaker", "labels", "text", "why"])


def explain_trace(trace, index, *, top: int = 5):
    """The tool hits of a :class:`~harp_lib.viz.QueryTrace` (run on ``index``), per plan set, with the argument the
    planner gave each tool and whether the hit survived the merge into the top-k (``kept``)."""
    import pandas as pd  # heavy: pandas (~0.4 s)
    rows = []
    merged = trace.merged
    index_of = {s.index: s for s in trace.prediction.evidence.sets}
    for i, (ps, hits) in enumerate(zip(trace.plan.sets, trace.tool_hits), 1):
        window = index_of.get(i)
        where = f"{format_time(window.start)}–{format_time(window.end)}" if window else ps.localize
        for tool in sorted(hits):
            for r, (sid, sc) in enumerate(hits[tool][:top], 1):
                rows.append(_row(index, tool, r, sid, sc, getattr(ps, tool, None),
                                 set=i, window=where, kept=sid in merged.get(i, [])))
    cols = ["set", "window", "tool", "rank", "score", "kept", "time", "speaker", "labels", "text", "why"]
    return pd.DataFrame(rows, columns=cols)

