"""One query, every step: plan, each tool's hits, merged top-k, evidence as the model sees it,
answer, rationale and the judges' verdicts — collected in a :class:`QueryTrace` for pictures.

Nothing here re-implements the agent: the prediction and the per-tool hits come from one run of
:class:`harp_lib.agent.runner.Agent` (``trace=True``: :func:`harp_lib.retrieval.tools.retrieve`
returns the hits it merged), the evidence text from :func:`harp_lib.agent.render_evidence`, clip labels from
:func:`harp_lib.agent.evidence.evidence_clips` / ``reference_clips``, and the verdicts from the
judges of :mod:`harp_lib.evaluate` (imported lazily; without them the trace says why).

>>> from harp_lib.retrieval.index import SegmentIndex
>>> from harp_lib.core.schema import Query, Segment
>>> ix = SegmentIndex.from_segments([Segment("r_ext_0000", "r", 0, 20, "S0", "I feel great",
...                                          {"primary": "Happy"})])
>>> q = Query("q", "emotion", "r", "state", 'Around 10 seconds, someone said "great". Which emotion?', {})
>>> t = trace_query(q, ix, "A1", hearing=False, judges=())
>>> t.prediction.answer, sorted(t.tool_hits[0])
('Happy', ['keyword', 'time'])
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Optional, Sequence

from harp_lib.agent.evidence import evidence_clips, reference_clips, render_evidence
from harp_lib.agent.runner import Agent
from harp_lib.config import Config, Setup, get_setup
from harp_lib.core.schema import Judgement, Prediction, Query, Recording, Segment
from harp_lib.retrieval.references import Hearing

if TYPE_CHECKING:                 # annotations only: pandas is imported where a table is built
    import pandas as pd

__all__ = ["QueryTrace", "trace_query", "model_view", "judge_prediction", "JUDGES_MISSING"]

log = logging.getLogger(__name__)

#: What a trace says when harp_lib.evaluate cannot be imported.
JUDGES_MISSING = "judges unavailable: harp_lib.evaluate could not be imported"


@dataclass
class QueryTrace:
    """Everything one query went through (see module doc); built by :func:`trace_query`.

    ``tool_hits[i]`` / ``tool_problems[i]`` belong to plan set ``i + 1``; ``judgements`` maps a
    judge name to its :class:`~harp_lib.core.schema.Judgement` or to a string saying why there is none.
    """
    query: Query
    recording: Recording
    setup: Setup
    prediction: Prediction
    tool_hits: list[dict[str, list[tuple[str, float]]]] = field(default_factory=list)
    tool_problems: list[list[str]] = field(default_factory=list)
    plan_windows: list = field(default_factory=list)    # per plan set: (start, end) or the localize error
    evidence_text: str = ""
    clip_labels: list[str] = field(default_factory=list)
    clips: list = field(default_factory=list)            # harp_lib.llm.AudioPart (label, wave, sr)
    prompt: str = ""
    judgements: dict[str, Any] = field(default_factory=dict)
    gt_segments: list = field(default_factory=list)      # the query's ground-truth evidence segments
    score: Any = None                                    # a Score, when built by harp_lib.stages.trace.trace_query

    @property
    def plan(self):
        return self.prediction.plan

    @property
    def evidence(self):
        return self.prediction.evidence

    @property
    def answer(self) -> str:
        return self.prediction.answer

    @property
    def rationale(self) -> str:
        return self.prediction.rationale

    @property
    def judgement(self) -> Optional[Judgement]:
        """The first judge's :class:`Judgement` (None when there is none)."""
        return next((j for _, j in sorted(self.judgements.items()) if isinstance(j, Judgement)), None)

    @property
    def windows(self) -> dict[int, tuple[float, float]]:
        """Searched window per evidence set (sets whose window failed are left out)."""
        return {s.index: (s.start, s.end) for s in self.prediction.evidence.sets
                if not (s.error and s.end == 0 and not s.items)}

    @property
    def merged(self) -> dict[int, list[str]]:
        """Merged top-k segment ids per evidence set (what the timeline highlights)."""
        return {s.index: [i.segment_id for i in s.items] for s in self.prediction.evidence.sets}

    def hits_table(self) -> "pd.DataFrame":
        """One row per (set, tool, hit): set, tool, segment_id, score, rank, kept (in merged top-k).

        A DataFrame, so a notebook shows it as a table (it used to be a list of dicts that printed
        one line per key); ``.to_dict("records")`` gives the rows back.
        """
        import pandas as pd  # heavy: pandas (~0.4 s)
        rows = []
        merged = self.merged
        for i, hits in enumerate(self.tool_hits, 1):
            for tool in sorted(hits):
                for rank, (sid, sc) in enumerate(hits[tool], 1):
                    rows.append({"set": i, "tool": tool, "segment_id": sid, "score": round(float(sc), 4),
                                 "rank": rank, "kept": sid in merged.get(i, [])})
        return pd.DataFrame(rows, columns=["set", "tool", "segment_id", "score", "rank", "kept"])

    def plan_lines(self) -> list[str]:
        """One readable line per plan set: the fields the planner filled (unset ones left out) and
        the window the tools searched (or why localizing failed)."""
        out = []
        for i, ps in enumerate(self.plan.sets, 1):
            fields = ", ".join(f"{k}={v!r}" for k, v in ps.to_dict().items() if v not in (None, False, ""))
            w = self.plan_windows[i - 1] if i <= len(self.plan_windows) else None
            where = f"searched {w[0]:.1f}-{w[1]:.1f} s" if isinstance(w, tuple) else f"no window ({w})"
            out.append(f"set {i}: {fields} -> {where}")
        return out


def model_view(prediction: Prediction, setup: Setup | str, clip_labels: Sequence[str] = ()) -> str:
    """The evidence text as the answerer receives it for ``setup``, with the attached clip labels.

    Metadata setups see :func:`render_evidence` in full; audio-only setups (``strip_domain``)
    see only times and scores — the rest is in the audio clips listed first.

    >>> from harp_lib.core.schema import Evidence, Plan
    >>> p = Prediction("q", "A4", "emotion", "r", "state", Plan(), Evidence(), "")
    >>> print(model_view(p, "A4", ["[Set 1: 0-30 s]"]))
    Audio clips attached: [Set 1: 0-30 s]
    <BLANKLINE>
    (no retrieved evidence)
    """
    s = get_setup(setup) if isinstance(setup, str) else setup
    text = render_evidence(prediction.evidence, strip_domain=s.strip_domain)
    head = f"Audio clips attached: {', '.join(clip_labels)}\n\n" if clip_labels else ""
    return head + text


def judge_prediction(query: Query, prediction: Prediction, gt_segments: Sequence[Segment] = (), *,
                     duration: Optional[float] = None, judges: Sequence[str] = ("rule",),
                     cfg: Optional[Config] = None) -> dict[str, Any]:
    """Verdicts of each judge on one prediction: ``{judge: Judgement | "why not"}``.

    Queries without ground truth (typed by hand in the explorer) are not judged.
    """
    if not judges:
        return {}
    if not query.ground_truth:
        return {j: f"not judged: query {query.query_id} has no ground truth (a custom query)" for j in judges}
    try:
        from harp_lib.evaluate.judge import JudgeInput, make_judge  # local on purpose: no judge, still a trace
    except Exception as e:  # noqa: BLE001 - the explorer must still show plan/evidence/answer
        return {j: f"{JUDGES_MISSING} ({type(e).__name__}: {e})" for j in judges}
    out: dict[str, Any] = {}
    inp = JudgeInput(query, prediction, get_setup(prediction.setup), tuple(gt_segments), duration)
    for name in judges:
        try:
            judge = make_judge(name, cfg)
            out[name] = judge.judge(inp)
        except Exception as e:  # noqa: BLE001 - e.g. an LLM judge whose server is not running
            out[name] = f"judge {name!r} failed on query {query.query_id}: {type(e).__name__}: {e}"
    return out


def trace_query(query: Query, index, setup: Setup | str, cfg: Optional[Config] = None, *,
                recording: Optional[Recording] = None, bench_dir: Optional[Path] = None,
                gt_segments: Optional[Sequence[Segment]] = None, judges: Sequence[str] = ("rule",),
                agent=None, with_clips: bool = True, **agent_kw) -> QueryTrace:
    """Run one query through the agent and collect every intermediate step.

    ``index`` is a :class:`~harp_lib.retrieval.index.SegmentIndex`; ``bench_dir`` the benchmark folder
    (recording audio and reference clips resolve under it; without it no audio is attached);
    ``gt_segments`` the ground-truth segments of the recording (oracle setups and judges need
    them).  ``agent`` reuses a built :class:`~harp_lib.agent.runner.Agent` (same setup);
    otherwise one is built with ``agent_kw`` (``hearing=False`` switches listening off, as in
    :func:`harp_lib.agent.answer_query`).
    """
    s = get_setup(setup) if isinstance(setup, str) else setup
    if recording is None:
        segs = index.segments(query.recording_id)
        dur = max((x.end for x in segs), default=0.0)
        recording = Recording(query.recording_id, query.domain, f"{query.recording_id}.wav", dur)
    gts = [g for g in (gt_segments or []) if g.recording_id == query.recording_id]
    if agent is None:
        if agent_kw.get("hearing") is False:
            agent_kw["hearing"] = Hearing(query.domain, None, labelers=[])
        agent = Agent(index, s, cfg, domain=query.domain, **agent_kw)
    elif agent.setup.name != s.name:
        raise ValueError(f"query {query.query_id}: the given agent runs setup {agent.setup.name}, not {s.name}")
    seen = gts if s.oracle else []        # as `harp infer`: only the oracle planner reads ground truth
    pred, rtrace = agent(query, recording, bench_dir, seen, trace=True)
    ctx = agent.context(query, recording, bench_dir, seen)
    clips = []
    if with_clips and bench_dir is not None:
        sr = int(ctx.params.clip_sample_rate)
        try:
            if s.attach_audio or ctx.params.attach_references_in_metadata_setups:
                clips += reference_clips(ctx.references, sr=sr)
            if s.attach_audio and ctx.audio_path is not None:
                clips += evidence_clips(pred.evidence, ctx.audio_path, sr=sr)
        except Exception as e:  # noqa: BLE001 - a missing clip should not hide the rest
            log.warning("query %s: cannot cut clips (%s)", query.query_id, e)
    labels = [c.label for c in clips]
    prompt = ""
    try:
        from harp_lib.agent.answerer import answer_prompt  # local on purpose: no prompt, still a trace
        prompt = answer_prompt(ctx, pred.plan, pred.evidence, labels)
    except Exception as e:  # noqa: BLE001 - prompts are optional for the picture
        prompt = f"(answer prompt unavailable: {type(e).__name__}: {e})"
    verdicts = judge_prediction(query, pred, gts, duration=recording.duration, judges=judges, cfg=cfg)
    return QueryTrace(query=query, recording=recording, setup=s, prediction=pred, tool_hits=rtrace.tool_hits,
                      tool_problems=rtrace.problems, plan_windows=rtrace.windows,
                      gt_segments=[g for g in gts if g.id in set(query.gt_segment_ids)], evidence_text=model_view(pred, s, labels), clip_labels=labels,
                      clips=clips, prompt=prompt, judgements=verdicts)


def verdict_summary(judgements: Mapping[str, Any]) -> list[str]:
    """One line per judge: ``rule: answer YES · factual NO · faithful YES · rationale NO``.

    >>> verdict_summary({"rule": "not judged: custom"})
    ['rule: not judged: custom']
    """
    out = []
    for name, j in sorted(judgements.items()):
        if isinstance(j, Judgement):
            yn = lambda v: "YES" if v else "NO"  # noqa: E731
            line = (f"{name}: answer {yn(j.answer)} · factual {yn(j.factual)} · faithful {yn(j.faithful)}"
                    f" · rationale {yn(j.rationale)}")
            if j.error:
                line += f" (error: {j.error})"
            out.append(line)
        else:
            out.append(f"{name}: {j}")
    return out


__all__.append("verdict_summary")
