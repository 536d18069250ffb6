"""Table II rows of the offline LLM agent (mini profile): LLM planner + LLM answerer on the
``local`` backend (:mod:`harp_lib.llm.local`), every setup, a fixed stratified query subset.

The subset (``llm_rows.per_type``) is the first N query ids, in sorted order, of every query
type of every domain — chosen when the *stage* is set up, from the benchmark manifest; the
planner and answerer themselves never see ``query_type`` or ground truth.  Predictions,
judgements and scores go to their own folders (``llm_rows.predictions`` / ``judgements`` /
``scores``), so the rule baseline's files are never touched; the rule judge scores them.
:func:`llm_table` writes ``results/tables/table2_llm.*``: per setup, the rule baseline on all
queries, the rule baseline on the same subset, and the LLM agent on the subset.

>>> sorted(LLM_ROW_KINDS)
['llm', 'rule', 'rule_subset']
"""
from __future__ import annotations

import logging
import math
import multiprocessing as mp
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Optional, Sequence

from harp_lib.agent.runner import prediction_path, run_setup
from harp_lib.config import Config, get_setup, load_config
from harp_lib.core.atomic import write_text
from harp_lib.core.jsonl import read_jsonl, write_jsonl
from harp_lib.core.results_io import timings_path, write_json
from harp_lib.core.schema import Query
from harp_lib.evaluate.scoring import load_scores
from harp_lib.evaluate.spread import cell_cis
from harp_lib.evaluate.store import results_dir
from harp_lib.evaluate.tables import table2, write_table
from harp_lib.llm import make_client
from harp_lib.llm.local import model_file, offline_options
from harp_lib.stages.judge import judge_stage

__all__ = ["subset_query_ids", "rows_config", "llm_options", "run_llm_rows", "plan_groups", "assign_workers", "split_run_state", "RUN_STATE_KEYS", "llm_table", "llm_table_cis", "write_llm_table", "LLM_ROW_KINDS"]

log = logging.getLogger(__name__)

LLM_ROW_KINDS = {"rule": "rule baseline, all queries", "rule_subset": "rule baseline, LLM subset",
                 "llm": "offline LLM agent, LLM subset"}


def subset_query_ids(cfg: Config, domain: str, per_type: Optional[int] = None) -> list[str]:
    """The fixed stratified subset of ``domain``: the first ``per_type`` (default
    ``llm_rows.per_type``) query ids (sorted) of every query type present in the benchmark."""
    n = int(per_type if per_type is not None else cfg.get("llm_rows.per_type"))
    if n < 1:
        raise ValueError(f"llm_rows.per_type must be >= 1, got {n}")
    f = cfg.path("paths.benchmark") / domain / "queries.jsonl"
    if not f.exists():
        raise FileNotFoundError(f"{f} is missing: build the benchmark first (harp synth)")
    by_type: dict[str, list[str]] = {}
    for q in read_jsonl(f, Query):
        if q.domain == domain:
            by_type.setdefault(q.query_type, []).append(q.query_id)
    return sorted(i for ids in by_type.values() for i in sorted(ids)[:n])


def rows_config(cfg: Config) -> Config:
    """``cfg`` with predictions / judgements / scores redirected to the ``llm_rows`` folders (and
    ``agent.max_sets`` = ``llm_rows.max_sets`` when set)."""
    ov = {"paths": {"predictions": cfg.get("llm_rows.predictions"), "judgements": cfg.get("llm_rows.judgements"),
                    "scores": cfg.get("llm_rows.scores")}}
    if cfg.get("llm_rows.max_sets"):        # the small CPU model plans at most this many evidence sets
        ov["agent"] = {"max_sets": int(cfg.get("llm_rows.max_sets"))}
    return load_config(profile=cfg.profile, overrides=ov)


def llm_options(cfg: Config) -> dict:
    """``llm_offline`` with ``llm_rows.model`` (when set) as the model (:func:`harp_lib.llm.local.offline_options`)."""
    return offline_options(cfg)


#: ``Prediction.backends`` entries that describe the run, not the answer (a reply-cache hit):
#: kept out of the DVC-tracked predictions, like the timings
RUN_STATE_KEYS = ("planner_cached", "answerer_cached")


def split_run_state(preds: Sequence) -> tuple[dict, list]:
    """``({query_id: timings + cache hits}, predictions without them)``: what a run on another
    machine (other speed, other reply cache) would change goes to the timings side file.

    >>> from dataclasses import dataclass, field
    >>> @dataclass(frozen=True)
    ... class P:
    ...     query_id: str
    ...     backends: dict = field(default_factory=dict)
    ...     timings: dict = field(default_factory=dict)
    >>> side, kept = split_run_state([P("q1", {"planner": "llm", "planner_cached": True}, {"plan_sec": 1.5})])
    >>> side, kept[0].backends, kept[0].timings
    ({'q1': {'plan_sec': 1.5, 'planner_cached': True}}, {'planner': 'llm'}, {})
    """
    side = {p.query_id: {**p.timings, **{k: p.backends[k] for k in RUN_STATE_KEYS if k in p.backends}}
            for p in preds}
    kept = [replace(p, timings={}, backends={k: v for k, v in p.backends.items() if k not in RUN_STATE_KEYS})
            for p in preds]
    return side, kept


def _answer_setup(cfg: Config, domain: str, setup: str, ids: Sequence[str], client=None,
                  progress: bool = False) -> dict:
    """Answer the subset for one setup; predictions without timings, timings under ``<data>/timings``."""
    rcfg = rows_config(cfg)
    client = client or make_client(llm_options(cfg), root=cfg.root)
    calls0 = getattr(client, "calls", 0)
    preds = run_setup(rcfg, domain, setup, query_ids=ids, resume=False, progress=progress,
                      planner="llm", answerer="llm", client=client)
    side, stored = split_run_state(preds)
    write_json(timings_path(cfg, "llm_rows", domain, f"{setup}.json"), side, digits=3)
    write_jsonl(prediction_path(rcfg, domain, setup), stored)
    return {"setup": setup, "model_calls": getattr(client, "calls", 0) - calls0,
            "cached": sum(1 for p in preds for k in RUN_STATE_KEYS if p.backends.get(k)),
            "errors": sum(1 for p in preds if p.error)}


def _answer_setups_in_worker(profile: str, overrides: Optional[dict], domain: str, setups: Sequence[str],
                             ids: Sequence[str]) -> list[dict]:
    """One worker process: one client (one llama.cpp instance), ``setups`` in order."""
    cfg = load_config(profile=profile, overrides=overrides)
    client = make_client(llm_options(cfg), root=cfg.root)
    return [_answer_setup(cfg, domain, s, ids, client) for s in setups]


def plan_groups(setups: Sequence[str]) -> list[list[str]]:
    """Setups grouped by the planner prompt they share (same tools, not oracle), in input order.

    A3, A4 and A5 (hybrid tools) send the planner the same prompt, so the plan is one model call
    and two cached replies — but only if they run one after another in the same worker (two
    workers would both miss the cache).  Oracle setups plan from ground truth (no model call).

    >>> plan_groups(["A1", "A2", "A3", "A4", "A5", "A6", "A7"])
    [['A1'], ['A2'], ['A3', 'A4', 'A5'], ['A6'], ['A7']]
    """
    groups: dict[tuple, list[str]] = {}
    for name in setups:
        st = get_setup(name)
        key = ("oracle", st.name) if st.oracle else ("tools", tuple(st.tools))
        groups.setdefault(key, []).append(st.name)
    return list(groups.values())


def assign_workers(setups: Sequence[str], workers: int) -> list[list[str]]:
    """Plan groups spread over ``workers`` by longest-first: a group costs one model call per
    answer plus one per plan (oracle setups: answers only).

    >>> assign_workers(["A1", "A2", "A3", "A4", "A5", "A6", "A7"], 2)
    [['A3', 'A4', 'A5', 'A6'], ['A1', 'A2', 'A7']]
    """
    def cost(g: list[str]) -> int:
        return len(g) + (0 if get_setup(g[0]).oracle else 1)
    groups = sorted(plan_groups(setups), key=lambda g: -cost(g))        # stable: ties keep input order
    bins: list[list[str]] = [[] for _ in range(max(1, min(workers, len(groups))))]
    load = [0] * len(bins)
    for g in groups:
        k = load.index(min(load))
        bins[k].extend(g)
        load[k] += cost(g)
    return [b for b in bins if b]


def run_llm_rows(cfg: Config, domain: str, *, setups: Optional[Sequence[str]] = None, client=None,
                 progress: bool = True, overrides: Optional[dict] = None) -> dict:
    """Answer, judge and score the subset of ``domain`` with the offline LLM agent for every setup
    of ``llm_rows.setups``.

    With ``llm_rows.workers`` > 1 (and no ``client`` given) the setups run in that many worker
    processes (:func:`assign_workers`: setups sharing a planner prompt stay in one worker, so
    their plan is one model call), each with its own one-thread llama.cpp instance (the
    weights are memory-mapped, so the file is shared); predictions do not depend on the worker
    count (greedy decoding, replies cached by prompt).  Returns ``{"n_queries", "setups",
    "seconds", "model_calls", "cached", "errors", "workers"}``; per-query timings go to
    ``<paths.data>/timings/llm_rows/<domain>/<setup>.json``.
    """
    ids = subset_query_ids(cfg, domain)
    names = [get_setup(s).name for s in (setups or cfg.get("llm_rows.setups"))]
    bins = assign_workers(names, int(cfg.get("llm_rows.workers")))
    t0 = time.perf_counter()
    if client is not None or len(bins) <= 1:
        client = client or make_client(llm_options(cfg), root=cfg.root)
        done = [_answer_setup(cfg, domain, s, ids, client, progress) for b in bins for s in b]
    else:
        opts = llm_options(cfg)
        if opts.get("backend") == "local":          # join + verify the weights once, not in every worker
            model_file(opts["model"], opts["weights_dir"])
        with ProcessPoolExecutor(len(bins), mp_context=mp.get_context("spawn")) as ex:
            futs = [ex.submit(_answer_setups_in_worker, cfg.profile, overrides, domain, b, ids) for b in bins]
            done = [d for f in futs for d in f.result()]
    rcfg = rows_config(cfg)
    for s in names:
        judge_stage(rcfg, domain, s)
    info = {"n_queries": len(ids), "setups": names, "seconds": round(time.perf_counter() - t0, 1),
            "model_calls": sum(d["model_calls"] for d in done), "cached": sum(d["cached"] for d in done),
            "errors": sum(d["errors"] for d in done), "workers": len(bins)}
    # the run state (seconds, model calls, cached replies) goes to the log, not to a notebook page,
    # so a second execution of the page gives the same page
    log.info("llm rows %s: %s", domain, info)
    return info


def llm_table(cfg: Config, judge: Optional[str] = None):
    """Answer accuracy (percent) per query type + Avg: rows ``<setup> rule``, ``<setup> rule@subset``,
    ``<setup> LLM@subset`` for every setup with LLM scores."""
    import pandas as pd  # heavy: pandas (~0.4 s)
    judge = judge or cfg.evaluate.table_judge
    rule = [s for s in load_scores(cfg) if s.judge == judge]
    llm = [s for s in load_scores(rows_config(cfg)) if s.judge == judge]
    if not llm:
        raise FileNotFoundError(f"no LLM-row scores of judge {judge!r} under {cfg.get('llm_rows.scores')}: "
                                f"run the llm_rows stage (dvc repro llm_rows) first")
    subset = {(s.domain, s.query_id) for s in llm}
    tabs = {"rule": table2(rule) if rule else None,
            "rule_subset": table2([s for s in rule if (s.domain, s.query_id) in subset]) if rule else None,
            "llm": table2(llm)}
    rows, index = [], []
    for setup in sorted({s.setup for s in llm}):
        for kind, label in (("rule", "rule"), ("rule_subset", "rule@subset"), ("llm", "LLM@subset")):
            t = tabs[kind]
            if t is None or setup not in t.index:
                continue
            rows.append(t.loc[setup])
            index.append(f"{setup} {label}")
    df = pd.DataFrame(rows, index=index)
    df.index.name = "row"
    return df


def llm_table_cis(cfg: Config, judge: Optional[str] = None) -> dict[str, dict[str, list[float]]]:
    """``{row: {column: [lo, hi]}}``: a 95 % percentile bootstrap CI of every cell of
    :func:`llm_table` (over the questions of the cell; ``Avg`` as Table II's macro average,
    :func:`harp_lib.evaluate.spread.cell_cis`; fixed seed)."""
    judge = judge or cfg.evaluate.table_judge
    rule = [s for s in load_scores(cfg) if s.judge == judge]
    llm = [s for s in load_scores(rows_config(cfg)) if s.judge == judge]
    subset = {(s.domain, s.query_id) for s in llm}
    groups = {"rule": rule, "rule@subset": [s for s in rule if (s.domain, s.query_id) in subset], "LLM@subset": llm}
    return {f"{setup} {label}": cols for label, ss in groups.items() if ss for setup, cols in cell_cis(ss).items()}


def with_cis(df, cis: dict):
    """``df`` with each value column followed by its ``<col> lo`` / ``<col> hi`` CI bounds."""
    import pandas as pd  # heavy: pandas (~0.4 s)
    cols = {}
    for c in df.columns:
        cols[c] = df[c]
        cols[f"{c} lo"] = pd.Series({r: (cis.get(r, {}).get(c) or [math.nan, math.nan])[0] for r in df.index})
        cols[f"{c} hi"] = pd.Series({r: (cis.get(r, {}).get(c) or [math.nan, math.nan])[1] for r in df.index})
    out = pd.DataFrame(cols, index=df.index)
    out.index.name = df.index.name
    return out


def _md_with_cis(df, cis: dict):
    """The markdown view: each cell ``value [lo, hi]`` (– where there is no value)."""
    import pandas as pd  # heavy: pandas (~0.4 s)
    def cell(r, c):
        v = df.at[r, c]
        if v is None or (isinstance(v, float) and math.isnan(v)):
            return "–"
        ci = cis.get(r, {}).get(c)
        return f"{v:.1f} [{ci[0]:.0f}, {ci[1]:.0f}]" if ci else f"{v:.1f}"
    out = pd.DataFrame({c: [cell(r, c) for r in df.index] for c in df.columns}, index=df.index)
    out.index.name = df.index.name
    return out


def write_llm_table(cfg: Config) -> dict[str, Path]:
    """``results/tables/table2_llm.{csv,md,tex}`` and ``results/metrics/table2_llm.json``, with a
    95 % bootstrap CI per cell (csv: ``<col> lo`` / ``<col> hi`` columns; md: ``value [lo, hi]``;
    json: ``ci95``)."""
    df = llm_table(cfg)
    cis = llm_table_cis(cfg)
    n = {d: len(subset_query_ids(cfg, d)) for d in cfg.get("domains")}
    model = llm_options(cfg)["model"]
    caption = (f"Table II, offline LLM agent next to the rule baseline (profile {cfg.profile}): answer accuracy "
               f"in percent per query type [95 % bootstrap CI over the cell's questions]; Avg = macro mean over "
               f"types per domain, then domains (its CI resamples every cell). "
               f"'rule' = rule planner + rule answerer on all queries (the baseline rows of table2.md); "
               f"'rule@subset' = the same predictions restricted to the LLM subset; 'LLM@subset' = LLM planner + "
               f"LLM answerer on llm backend local ({model}, greedy; the planner fills the question's intent "
               f"under a grammar, the evidence sets follow from it; text model: audio "
               f"evidence reaches it as what the offline labelers heard in the clips). Subset: the first "
               f"{cfg.get('llm_rows.per_type')} query id(s) of every query type of every domain = "
               f"{sum(n.values())} queries ({', '.join(f'{d} {k}' for d, k in n.items())}); oracle setups A6/A7 "
               f"use the oracle planner. Judge: {cfg.get('evaluate.table_judge')}.")
    files = write_table(with_cis(df, cis), "table2_llm", results_dir(cfg, "tables"), caption)
    md = _md_with_cis(df, cis).to_markdown()
    write_text(files[1], f"{files[1].read_text(encoding='utf-8').split(chr(10) + chr(10), 1)[0]}\n\n{md}\n")
    avg = {r: (None if math.isnan(v) else round(float(v), 2)) for r, v in df["Avg"].items()}
    write_json(results_dir(cfg, "metrics", "table2_llm.json"),
               {"model": model, "subset": n, "avg": avg, "ci95": cis}, digits=2)
    return {"table2_llm": files[1]}
