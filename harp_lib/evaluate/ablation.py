"""Where do the errors come from?  ``results/tables/ablation.md``: per domain (and query type),
answer accuracy with

* **oracle evidence**: setup A7 (ground-truth windows, metadata + audio),
* **retrieved evidence**: setup A5 (hybrid retrieval, metadata + audio), the same answerer,
* **no evidence**: the same answerer given an empty evidence list (nothing retrieved, no
  audio), i.e. what the question text alone and the answerer's defaults score.

Oracle and retrieved accuracies come from the scores of the table judge
(``data/scores/<domain>/A7.<judge>.jsonl``, ``A5...``); the no-evidence answers are computed
here and judged by the rule judge's answer rule (the answer column needs no rationale).
Reading: oracle - retrieved = what retrieval costs; retrieved - none = what evidence gives;
oracle near none = the answerer cannot use even perfect evidence.

>>> fmt_row("song", "all", 60, 0.8, 0.7, 0.5)["oracle - retrieved"]
10.0
"""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Optional, Sequence

from harp_lib.agent.runner import Agent
from harp_lib.config import SETUPS, Config, load_config
from harp_lib.core.jsonl import read_jsonl
from harp_lib.core.schema import Evidence, Plan, Query, Recording, Score
from harp_lib.evaluate.judge import make_judge
from harp_lib.evaluate.store import scores_path
from harp_lib.evaluate.tables import write_table
from harp_lib.retrieval.index import SegmentIndex
from harp_lib.retrieval.references import Hearing

__all__ = ["no_evidence_accuracy", "ablation_table", "write_ablation", "fmt_row"]

ORACLE_SETUP, RETRIEVED_SETUP = "A7", "A5"


def fmt_row(domain: str, qtype: str, n: int, oracle: Optional[float], retrieved: Optional[float],
            none: Optional[float]) -> dict:
    """One table row in percent (None stays None)."""
    pct = lambda v: None if v is None else round(100.0 * v, 1)  # noqa: E731
    o, r, z = pct(oracle), pct(retrieved), pct(none)
    return {"domain": domain, "query type": qtype, "n": n, "oracle evidence (A7)": o,
            "retrieved evidence (A5)": r, "no evidence": z,
            "oracle - retrieved": None if o is None or r is None else round(o - r, 1),
            "retrieved - none": None if r is None or z is None else round(r - z, 1)}


def no_evidence_accuracy(cfg: Config, domain: str) -> dict[str, list[int]]:
    """``{query_type: [1/0 per query]}``: the configured answerer with empty evidence, judged
    by the rule judge's answer rule.  The answerer sees the question (and the A5 setup's view)
    but no evidence set and no audio."""
    bench = cfg.path("paths.benchmark") / domain
    recs = {r.id: r for r in read_jsonl(bench / "recordings.jsonl", Recording)}
    queries = [q for q in read_jsonl(bench / "queries.jsonl", Query) if q.domain == domain]
    idx_dir = cfg.path("paths.index") / domain
    if not idx_dir.exists():
        raise FileNotFoundError(f"{idx_dir} is missing: run `harp extract --domain {domain}` and "
                                f"`harp index --domain {domain}` first")
    agent = Agent(SegmentIndex.load(idx_dir), SETUPS[RETRIEVED_SETUP], cfg, domain=domain,
                  hearing=Hearing(domain, None, labelers=[]))
    judge = make_judge("rule", cfg)
    out: dict[str, list[int]] = defaultdict(list)
    for q in queries:
        ctx = agent.context(q, recs[q.recording_id], bench)
        try:
            answer, _, _ = agent.answerer.answer(ctx, Plan(), Evidence())
        except Exception:  # noqa: BLE001 - an answerer that cannot answer without evidence scores 0
            answer = ""
        out[q.query_type].append(int(judge.answer_verdict(q, str(answer or "")).value))
    return dict(out)


def _scored(cfg: Config, domain: str, setup: str, judge: str) -> dict[str, list[float]]:
    p = scores_path(cfg, domain, setup, judge)
    if not p.exists():
        return {}
    out: dict[str, list[float]] = defaultdict(list)
    for s in read_jsonl(p, Score):
        out[s.query_type].append(float(s.answer))
    return dict(out)


def ablation_table(cfg: Optional[Config] = None, domains: Optional[Sequence[str]] = None):
    """DataFrame: one row per domain ("all") and per query type (see module doc)."""
    import pandas as pd  # heavy: pandas (~0.4 s)
    cfg = cfg or load_config()
    judge = str(cfg.evaluate.table_judge)
    rows = []
    mean = lambda v: (sum(v) / len(v)) if v else None  # noqa: E731
    for d in domains or cfg.get("domains"):
        none = no_evidence_accuracy(cfg, d)
        ora, ret = _scored(cfg, d, ORACLE_SETUP, judge), _scored(cfg, d, RETRIEVED_SETUP, judge)
        types = sorted(none)
        rows.append(fmt_row(d, "all", sum(len(none[t]) for t in types),
                            mean([x for t in types for x in ora.get(t, [])]),
                            mean([x for t in types for x in ret.get(t, [])]),
                            mean([x for t in types for x in none[t]])))
        for t in types:
            rows.append(fmt_row(d, t, len(none[t]), mean(ora.get(t, [])), mean(ret.get(t, [])), mean(none[t])))
    return pd.DataFrame(rows)


def write_ablation(cfg: Optional[Config] = None, out_dir: Optional[Path] = None) -> list[Path]:
    """``results/tables/ablation.{csv,md,tex}``."""
    cfg = cfg or load_config()
    df = ablation_table(cfg)
    out_dir = Path(out_dir or cfg.path("paths.results") / "tables")
    cap = (f"Answer accuracy (%, {cfg.evaluate.table_judge} judge) with oracle evidence (A7), "
           f"retrieved evidence (A5) and no evidence (same answerer, empty evidence)")
    return write_table(df, "ablation", out_dir, cap, index=False)
