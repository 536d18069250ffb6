"""A real second judge for the judge-agreement table on the offline profiles: the offline LLM
judge (llm backend ``local``, the ``llm_offline.model`` Qwen2.5 GGUF through llama.cpp,
:mod:`harp_lib.llm.local`) next to the rule judge, on a small fixed subset so it fits the
``dvc repro`` budget.

Measured on mini (10 answers, answer verdict only, shared 2-core machine): the 1.5B model
(``llm_offline.model`` on mini) took 118 s of CPU for the whole run (imports, joining and loading
the weights, 10 calls) and agreed with the rule judge on 8 of 10 answers (Cohen's kappa 0.62);
the 0.5B model (``llm_rows.model``; the ci profile's ``llm_offline.model``) took 46 s but said NO
to almost everything (kappa -0.09), so it is no judge worth the name.

The subset is a fixed stratified one (:func:`harp_lib.stages.llm_rows.subset_query_ids`:
the first ``llm_rows.judge_per_type`` query ids of every query type of every domain), answered by the
rule baseline (``paths.predictions``) in the setups ``setups`` (default A5).  The LLM judge gets
the paper's judge prompts (:mod:`harp_lib.evaluate.llm_judge`): by default the answer prompt only,
one model call per answer, so only answer agreement is measured (``verdicts="all"`` adds the
factual and faithful prompts: three calls per answer, about three times the CPU).  Greedy
decoding, replies cached on disk by prompt (``llm_offline.cache_dir``): a re-run with unchanged
predictions makes no model call.  Its verdicts are kept in memory only; the agreement
table (``results/tables/judge_agreement.*``) is written from them by :func:`write_agreement`.

>>> SECOND_JUDGE
'local'
"""
from __future__ import annotations

import math
import time
from dataclasses import replace
from typing import Optional, Sequence

from harp_lib.config import Config, get_setup
from harp_lib.core.paths import DataPaths
from harp_lib.core.progress import progress as _progress
from harp_lib.core.schema import read_predictions
from harp_lib.evaluate.agreement import judge_agreement
from harp_lib.evaluate.judge import judge_inputs, judge_predictions
from harp_lib.evaluate.llm_judge import LLMJudge, build_prompts
from harp_lib.evaluate.scoring import load_scores, score_predictions
from harp_lib.evaluate.store import load_benchmark, results_dir
from harp_lib.evaluate.tables import write_table
from harp_lib.llm import make_client
from harp_lib.stages.llm_rows import llm_options, subset_query_ids

__all__ = ["SECOND_JUDGE", "second_judge_scores", "write_agreement"]

#: The name the offline LLM judge's scores carry.
SECOND_JUDGE = "local"
#: Reply budget per verdict: a verdict and a one-sentence reason.
MAX_TOKENS = 96


def second_judge_scores(cfg: Config, *, setups: Sequence[str] = ("A5",), verdicts: str = "answer",
                        client=None, progress: bool = True) -> tuple[list, dict]:
    """Scores of the rule judge and of the offline LLM judge on the same subset items.

    ``verdicts="answer"`` (the default, one model call per answer) asks the LLM judge the answer
    verdict only, so only answer agreement is defined (``rationale`` of its rows is NaN);
    ``"all"`` asks the three prompts (answer, factual, faithful: three calls per answer) and scores
    the rationale too.  Returns ``(scores, report)``: ``scores`` holds, per domain and setup, the
    rule judge's :class:`~harp_lib.core.schema.Score` rows of the subset and the LLM judge's rows of the
    same items; ``report`` the cost and scope (``items``, ``model_calls``, ``seconds``, ``model``,
    ``setups``, ``metrics``, ``errors``).
    """
    if verdicts not in ("answer", "all"):
        raise ValueError(f"verdicts must be 'answer' or 'all', got {verdicts!r}")
    if client is None:
        client = _offline_client(cfg)
    judge = LLMJudge(name=SECOND_JUDGE, client=client,
                     locate_tolerance_sec=float(cfg.get("evaluate.locate_tolerance_sec")))
    rule = {(s.domain, s.setup, s.query_id): s for s in load_scores(cfg, judge="rule")}
    calls0, t0 = getattr(client, "calls", 0), time.perf_counter()
    out: list = []
    items = errors = 0
    for domain in cfg.get("domains"):
        ids = set(subset_query_ids(cfg, domain, int(cfg.get("llm_rows.judge_per_type"))))
        bench = load_benchmark(domain, cfg)
        for setup in (get_setup(s).name for s in setups):
            preds = _subset_predictions(cfg, domain, setup, ids, rule)
            out += [rule[(domain, setup, p.query_id)] for p in preds]
            if verdicts == "all":
                rows, errs = _all_verdict_scores(cfg, preds, bench, judge, f"{domain} {setup}")
            else:
                rows, errs = _answer_verdict_scores(preds, bench, judge, rule, domain, setup, progress)
            out += rows
            errors += errs
            items += len(preds)
    report = {"items": items, "model_calls": getattr(client, "calls", 0) - calls0, "errors": errors,
              "seconds": round(time.perf_counter() - t0, 1), "model": getattr(client, "model_id", ""),
              "setups": [get_setup(s).name for s in setups],
              "metrics": ["answer"] if verdicts == "answer" else ["answer", "rationale"]}
    return out, report


def _offline_client(cfg: Config):
    """The judge's LLM client: ``llm_offline.model`` through the ``llm_rows`` options, replies capped at MAX_TOKENS."""
    opts = llm_options(cfg)
    opts["model"] = cfg.get("llm_offline.model")    # the judge: llm_offline's model, not llm_rows.model
    opts["max_tokens"] = min(int(opts.get("max_tokens") or MAX_TOKENS), MAX_TOKENS)
    return make_client(opts, root=cfg.root)


def _subset_predictions(cfg: Config, domain: str, setup: str, ids: set, rule: dict) -> list:
    """The rule baseline's predictions of ``setup`` in ``domain`` on the subset ``ids`` that the rule judge scored."""
    f = DataPaths(cfg).predictions(domain, setup)
    if not f.exists():
        raise FileNotFoundError(f"{f}: no predictions of setup {setup} in {domain}; run the infer "
                                f"stage (notebooks/04_answer) first")
    return [p for p in read_predictions(f, setup, domain) if p.query_id in ids
            and (domain, setup, p.query_id) in rule]


def _all_verdict_scores(cfg: Config, preds: list, bench, judge, what: str) -> tuple[list, int]:
    """The LLM judge's three verdicts (answer, factual, faithful) of ``preds``, scored: (scores, failed calls)."""
    js = judge_predictions(preds, bench, judge, progress_desc=f"LLM judge {what}") if preds else []
    errors = sum(1 for j in js if j.error and "judge LLM failed" in j.error)
    return score_predictions(preds, js, bench, point_window=float(cfg.get("agent.point_window_sec"))), errors


def _answer_verdict_scores(preds: list, bench, judge, rule: dict, domain: str, setup: str,
                           progress: bool) -> tuple[list, int]:
    """The LLM judge's answer verdict of ``preds``, one call each, as copies of the rule rows: (scores, failed calls)."""
    out, errors = [], 0
    inputs = judge_inputs(preds, bench)
    for inp in _progress(inputs, desc=f"LLM judge {domain} {setup}", unit="answer",
                         mode=None if progress else "off"):
        v, err, _ = judge._ask(build_prompts(inp, judge.tol)["answer"])
        errors += bool(err)
        out.append(replace(rule[(domain, setup, inp.query.query_id)], judge=SECOND_JUDGE,
                           answer=float(v.value), rationale=math.nan))
    return out, errors


def write_agreement(cfg: Config, scores: Sequence, report: Optional[dict] = None) -> dict:
    """Write ``results/tables/judge_agreement.{csv,md,tex}`` from ``scores`` (several judges on
    the same items), per domain plus an ``all domains`` row; returns ``{"table": DataFrame,
    "files": [...]}``."""
    import pandas as pd  # heavy: pandas (~0.4 s)
    metrics = tuple((report or {}).get("metrics") or ("answer", "rationale"))
    df = judge_agreement(scores, metrics=metrics)
    if df["domain"].nunique() > 1:        # a few items per domain: the pooled row is the one to read
        pooled = judge_agreement([replace(s, domain="all domains") for s in scores], metrics=metrics)
        df = pd.concat([df, pooled], ignore_index=True)
    judges = sorted({s.judge for s in scores})
    what = (f"the rule judge and the offline LLM judge ({report.get('model', '')}) on a fixed subset of "
            f"{report.get('items', 0)} answers (setups {', '.join(report.get('setups', []))}; the first "
            f"llm_rows.judge_per_type query ids of every query type; verdicts: {', '.join(metrics)})") if report else f"judges {', '.join(judges)}"
    files = write_table(df, "judge_agreement", results_dir(cfg, "tables"),
                        f"Judge agreement: {what}; leniency = share of YES, Cohen's and Fleiss' kappa, "
                        f"percent agreement, per domain and metric.", index=False, float_format="%.3f")
    return {"table": df, "files": files}
