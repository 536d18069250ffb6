"""Grading predictions: answer, factual and faithful verdicts -> :class:`~harp_lib.core.schema.Judgement`.

One judge path (HARP_REFERENCE §7.3 rec. 9): every judge backend -- the deterministic
``rule`` judge (:mod:`.rule_judge`) or an LLM judge (:mod:`.llm_judge`, one per entry of
``evaluate.llm_judges``) -- receives the same :class:`JudgeInput` and returns three binary
verdicts.  ``rationale = factual AND faithful``; for setups whose ``skip_faithful`` is true
(audio-only evidence: A4, A6, from :data:`harp_lib.config.SETUPS`, never from file names) the
faithful check is not run, ``faithful`` is recorded as 1 and ``rationale = factual``.

A prediction whose ``query_id`` is not in the benchmark is an error
(:class:`~harp_lib.evaluate.store.UnknownQueryError`), never a silent 0.

CLI::

    harp judge --domain emotion --setup A5 --judge rule
    harp judge                       # every domain x setup in params.yaml, judges evaluate.judges

Judging is resumable: query ids already in the judgement file are skipped; a torn last line
(a kill mid-write) is cut first, and judgements that failed only because a judge LLM was
unreachable (:data:`RETRY_ON_RESUME`) are judged again, so no row is ever duplicated.

>>> from harp_lib.config import SETUPS
>>> combine("rule", "m", "h", SETUPS["A4"], "q1", Verdict(1, "ok"), Verdict(0, "wrong"), None).rationale
0
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, NamedTuple, Optional, Protocol, Sequence

from harp_lib.config import BackendError, Config, Setup, create_backend, get_setup, load_config
from harp_lib.core.locks import stage_lock
from harp_lib.core.jsonl import (append_jsonl, check_own_jsonl, drop_jsonl_rows, read_jsonl, repair_jsonl_tail,
                                 reset_jsonl)
from harp_lib.core.progress import progress
from harp_lib.core.record import SchemaError
from harp_lib.core.schema import Judgement, Prediction, Query, Segment, read_predictions
from harp_lib.evaluate.hitrate import gt_evidence
from harp_lib.evaluate.store import Benchmark, judgements_path, load_benchmark, predictions_path

__all__ = ["Verdict", "JudgeInput", "Judge", "combine", "make_judge", "judge_inputs",
           "judge_predictions", "run_judge", "RETRY_ON_RESUME"]

#: Judgement errors that say the judge LLM could not be reached: judged again on resume.
RETRY_ON_RESUME = ("judge LLM failed",)


class Verdict(NamedTuple):
    """One binary verdict (1 = YES, 0 = NO) with a one-line reason."""
    value: int
    reason: str


@dataclass(frozen=True)
class JudgeInput:
    """Everything a judge may look at for one prediction."""
    query: Query
    prediction: Prediction
    setup: Setup
    gt_segments: tuple[Segment, ...] = ()       # all GT segments of the recording
    duration: Optional[float] = None

    @property
    def gt_evidence(self) -> list[Segment]:
        return gt_evidence(self.query, self.gt_segments)


class Judge(Protocol):
    """What a ``judge`` backend provides."""
    name: str
    model_id: str
    prompt_hash: str

    def judge(self, inp: JudgeInput) -> Judgement: ...


def combine(judge: str, model_id: str, prompt_hash: str, setup: Setup, query_id: str,
            answer: Verdict, factual: Verdict, faithful: Optional[Verdict],
            error: Optional[str] = None) -> Judgement:
    """Assemble a :class:`Judgement`; applies ``skip_faithful`` and ``rationale = factual AND faithful``."""
    if setup.skip_faithful:
        faithful = Verdict(1, f"not checked: setup {setup.name} has audio-only evidence "
                              f"(skip_faithful), so rationale = factual")
    elif faithful is None:
        raise ValueError(f"query {query_id}: setup {setup.name} needs a faithful verdict")
    return Judgement(query_id=query_id, setup=setup.name, judge=judge, answer=int(answer.value),
                     factual=int(factual.value), faithful=int(faithful.value),
                     rationale=int(bool(factual.value) and bool(faithful.value)), model_id=model_id,
                     prompt_hash=prompt_hash,
                     reasons={"answer": answer.reason, "factual": factual.reason,
                              "faithful": faithful.reason}, error=error)


def make_judge(name: str, cfg: Optional[Config] = None) -> Judge:
    """The judge called ``name``: ``rule``, or an entry of ``evaluate.llm_judges``.

    >>> make_judge("rule").name
    'rule'
    """
    cfg = cfg or load_config()
    tol = float(cfg.get("evaluate.locate_tolerance_sec"))
    rnd = float(cfg.evaluate.citation_rounding_sec)
    if name == "rule":
        return create_backend("judge", "rule", locate_tolerance_sec=tol, citation_rounding_sec=rnd)
    llm_judges = cfg.evaluate.llm_judges
    if name not in llm_judges:
        raise BackendError(f"unknown judge {name!r}: use 'rule' or one of evaluate.llm_judges in "
                           f"params.yaml ({', '.join(sorted(llm_judges)) or 'none configured'})")
    spec = {**cfg.llm, **(llm_judges[name] or {}), "temperature": 0.0}
    spec.setdefault("cache_dir", cfg.evaluate.llm_cache_dir)
    return create_backend("judge", "llm", name=name, client_spec=spec, root=cfg.root,
                          locate_tolerance_sec=tol)


def judge_inputs(predictions: Iterable[Prediction], bench: Benchmark, *, source: str = "",
                 setup: Optional[str] = None) -> list[JudgeInput]:
    """Pair predictions with their queries and ground truth; unknown ids and mismatches raise."""
    out, seen = [], set()
    for p in predictions:
        q = bench.query(p.query_id, source=source)
        if p.query_id in seen:
            raise SchemaError(f"query_id {p.query_id!r} is predicted twice", path=source or None)
        seen.add(p.query_id)
        if q.query_type != p.query_type or q.recording_id != p.recording_id:
            raise SchemaError(f"prediction for {p.query_id} says type {p.query_type!r} / recording "
                              f"{p.recording_id!r} but the query is {q.query_type!r} / {q.recording_id!r}",
                              path=source or None)
        if setup is not None and p.setup != setup:
            raise SchemaError(f"prediction for {p.query_id} is from setup {p.setup!r}, not {setup!r}",
                              path=source or None)
        out.append(JudgeInput(q, p, get_setup(p.setup), tuple(bench.recording_segments(q.recording_id)),
                              bench.duration(q.recording_id)))
    return out


def judge_predictions(predictions: Sequence[Prediction], bench: Benchmark, judge: Judge, *,
                      out_path: Optional[Path] = None, resume: bool = True, source: str = "",
                      progress_desc: Optional[str] = None) -> list[Judgement]:
    """Judge every prediction (skipping ids already in ``out_path`` when ``resume``).

    Each judgement is appended to ``out_path`` as soon as it exists, so an interrupted run
    loses at most one.  Returns all judgements of these predictions, in prediction order.
    """
    inputs = judge_inputs(predictions, bench, source=source)
    done: dict[str, Judgement] = {}
    if out_path is not None:
        check_own_jsonl(out_path, Judgement)       # never write into a file harp did not write
    if out_path is not None and Path(out_path).exists():
        if resume:
            repair_jsonl_tail(out_path)
            drop_jsonl_rows(out_path, lambda row: row.get("judge") == judge.name and any(
                m in str(row.get("error") or "") for m in RETRY_ON_RESUME))
            done = {j.query_id: j for j in read_jsonl(out_path, Judgement) if j.judge == judge.name}
        else:
            reset_jsonl(out_path, Judgement)
    todo = [i for i in inputs if i.query.query_id not in done]
    for inp in progress(todo, desc=progress_desc or f"judge {judge.name}", unit="query"):
        j = judge.judge(inp)
        done[j.query_id] = j
        if out_path is not None:
            append_jsonl(out_path, [j])
    return [done[i.query.query_id] for i in inputs]


def run_judge(domain: str, setup: str, judge: str | Judge, cfg: Optional[Config] = None, *,
              resume: bool = True, bench: Optional[Benchmark] = None) -> Path:
    """Judge ``data/predictions/<domain>/<setup>.jsonl``; writes and returns the judgement file."""
    cfg = cfg or load_config()
    j = make_judge(judge, cfg) if isinstance(judge, str) else judge
    ppath = predictions_path(cfg, domain, setup)
    if not ppath.exists():
        raise FileNotFoundError(f"{ppath}: no predictions for {domain}/{setup}; run "
                                f"`harp infer --domain {domain} --setup {setup}` first")
    bench = bench or load_benchmark(domain, cfg)
    out = judgements_path(cfg, domain, setup, j.name)
    with stage_lock(out.parent, f"judge-{get_setup(setup).name}.{j.name}"):   # a second run waits
        judge_predictions(read_predictions(ppath, get_setup(setup).name, domain), bench, j, out_path=out, resume=resume,
                          source=str(ppath), progress_desc=f"judge {domain}/{setup} [{j.name}]")
    return out


def add_arguments(ap) -> None:
    """``harp judge`` options (shared ones: :mod:`harp_lib.app.cli`)."""
    ap.add_argument("--domain", action="append", help="domain(s) (default: params.yaml domains)")
    ap.add_argument("--setup", action="append", help="setup(s) A1..A7 (default: params.yaml setups)")
    ap.add_argument("--judge", action="append", help="judge(s) (default: evaluate.judges)")
    ap.add_argument("--no-resume", action="store_true", help="re-judge everything")
    ap.add_argument("--skip-missing", action="store_true",
                    help="skip domain/setup pairs without predictions instead of failing")


def run(cfg: Config, a) -> int:
    domains = a.domain or list(cfg.domains)
    setups = [get_setup(s).name for s in (a.setup or cfg.setups)]
    judges = a.judge or list(cfg.evaluate.judges)
    n = 0
    for d in domains:
        bench = None
        for s in setups:
            if not predictions_path(cfg, d, s).exists() and a.skip_missing:
                print(f"harp judge: no predictions for {d}/{s}, skipped", file=sys.stderr)
                continue
            bench = bench or load_benchmark(d, cfg)
            for jn in judges:
                out = run_judge(d, s, jn, cfg, resume=not a.no_resume, bench=bench)
                print(f"wrote {out}")
                n += 1
    if n == 0:
        print("harp judge: nothing judged (no predictions found; run `harp infer` first)", file=sys.stderr)
        return 1
    return 0
