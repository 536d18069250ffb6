"""Per-query scores: answer / rationale from a judge plus the three hit rates.

``rationale`` is recomputed from the judgement's verdicts and the setup (factual AND faithful,
or factual alone where ``skip_faithful``), so a judgement file can never disagree with the
setup's rule.  Hit rates are ``None`` for queries without GT evidence (see
:mod:`harp_lib.evaluate.hitrate`).

CLI::

    harp score --domain emotion --setup A5 --judge rule
    harp score                      # every domain x setup x judge with predictions + judgements

>>> from harp_lib.core.schema import Score
>>> mean_or_none([None, 1.0, 0.0])
0.5
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Iterable, Optional, Sequence

from harp_lib.config import Config, get_setup, load_config
from harp_lib.core.jsonl import check_run_fields, read_jsonl, write_jsonl
from harp_lib.core.record import SchemaError
from harp_lib.core.schema import Judgement, Prediction, Score, read_predictions
from harp_lib.core.timespan import DEFAULT_POINT_WINDOW
from harp_lib.evaluate.hitrate import hit_rates
from harp_lib.evaluate.store import Benchmark, judgements_path, load_benchmark, predictions_path, scores_dir, scores_path

__all__ = ["score_predictions", "run_score", "load_scores", "mean_or_none"]


def mean_or_none(values: Iterable[Optional[float]]) -> Optional[float]:
    """Mean of the values that are not None; None when there are none."""
    vals = [float(v) for v in values if v is not None]
    return sum(vals) / len(vals) if vals else None


def score_predictions(predictions: Sequence[Prediction], judgements: Sequence[Judgement],
                      bench: Benchmark, *, point_window: float = DEFAULT_POINT_WINDOW,
                      source: str = "") -> list[Score]:
    """One :class:`Score` per prediction (same order).

    Every prediction needs its query (else :class:`~harp_lib.evaluate.store.UnknownQueryError`)
    and a judgement (else :class:`~harp_lib.core.record.SchemaError` telling to run ``harp judge``).
    """
    if not predictions:
        return []
    by_q: dict[str, Judgement] = {}
    judge_names = {j.judge for j in judgements}
    if len(judge_names) > 1:
        raise SchemaError(f"judgements from several judges {sorted(judge_names)}; score one judge at a time",
                          path=source or None)
    for j in judgements:
        by_q[j.query_id] = j
    out = []
    for p in predictions:
        q = bench.query(p.query_id, source=source)
        j = by_q.get(p.query_id)
        if j is None:
            raise SchemaError(f"no judgement for query {p.query_id} (setup {p.setup}); run "
                              f"`harp judge --domain {q.domain} --setup {p.setup}` first",
                              path=source or None)
        if j.setup != p.setup:
            raise SchemaError(f"judgement for {p.query_id} is for setup {j.setup}, prediction for {p.setup}",
                              path=source or None)
        setup = get_setup(p.setup)
        faithful = 1 if setup.skip_faithful else j.faithful
        hr = hit_rates(q, p, bench.gt_by_id, all_gt=bench.recording_segments(q.recording_id),
                       duration=bench.duration(q.recording_id), point_window=point_window)
        out.append(Score(query_id=p.query_id, setup=p.setup, domain=q.domain, query_type=q.query_type,
                         judge=j.judge, answer=float(j.answer), rationale=float(bool(j.factual and faithful)),
                         **hr))
    return out


def run_score(domain: str, setup: str, judge: str, cfg: Optional[Config] = None, *,
              bench: Optional[Benchmark] = None) -> Path:
    """Score ``<setup>.jsonl`` with ``<setup>.<judge>.jsonl``; writes and returns the score file."""
    cfg = cfg or load_config()
    ppath = predictions_path(cfg, domain, setup)
    jpath = judgements_path(cfg, domain, setup, judge)
    for p, hint in ((ppath, f"harp infer --domain {domain} --setup {setup}"),
                    (jpath, f"harp judge --domain {domain} --setup {setup} --judge {judge}")):
        if not p.exists():
            raise FileNotFoundError(f"{p}: missing; run `{hint}` first")
    bench = bench or load_benchmark(domain, cfg)
    scores = score_predictions(read_predictions(ppath, get_setup(setup).name, domain),
                               check_run_fields(read_jsonl(jpath, Judgement), jpath, setup=get_setup(setup).name), bench,
                               point_window=float(cfg.agent.point_window_sec),
                               source=str(ppath))
    out = scores_path(cfg, domain, setup, judge)
    write_jsonl(out, scores)
    return out


def load_scores(cfg: Optional[Config] = None, *, judge: Optional[str] = None,
                domains: Optional[Sequence[str]] = None) -> list[Score]:
    """Every score file under ``data/scores/<domain>/`` (optionally one judge)."""
    cfg = cfg or load_config()
    out: list[Score] = []
    for d in domains or cfg.get("domains"):
        folder = scores_dir(cfg, d)
        if not folder.exists():
            continue
        for f in sorted(folder.glob("*.jsonl")):
            setup, _, jn = f.name[:-len(".jsonl")].partition(".")
            if judge is not None and jn != judge:
                continue
            out.extend(read_jsonl(f, Score))
    return out


def add_arguments(ap) -> None:
    """``harp score`` options (shared ones: :mod:`harp_lib.app.cli`)."""
    ap.add_argument("--domain", action="append", help="domain(s) (default: params.yaml domains)")
    ap.add_argument("--setup", action="append", help="setup(s) A1..A7 (default: params.yaml setups)")
    ap.add_argument("--judge", action="append", help="judge(s) (default: evaluate.judges)")


def run(cfg: Config, a) -> int:
    domains = a.domain or list(cfg.domains)
    setups = [get_setup(s).name for s in (a.setup or cfg.setups)]
    judges = a.judge or list(cfg.evaluate.judges)
    explicit = bool(a.domain or a.setup)
    n = 0
    for d in domains:
        bench = None
        for s in setups:
            for jn in judges:
                have = predictions_path(cfg, d, s).exists() and judgements_path(cfg, d, s, jn).exists()
                if not have and not explicit:
                    continue
                bench = bench or load_benchmark(d, cfg)
                print(f"wrote {run_score(d, s, jn, cfg, bench=bench)}")
                n += 1
    if n == 0:
        print("harp score: nothing to score (no predictions with judgements found; run `harp infer` "
              "and `harp judge` first)", file=sys.stderr)
        return 1
    return 0
