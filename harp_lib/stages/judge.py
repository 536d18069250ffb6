"""Stage ``judge@<domain>`` (notebooks/05_judge): judge and score the predictions of a domain."""
from __future__ import annotations

from typing import Any, Optional, Sequence

from harp_lib.config import Config, get_setup
from harp_lib.core.jsonl import read_jsonl
from harp_lib.core.schema import Score
from harp_lib.evaluate.judge import run_judge
from harp_lib.evaluate.scoring import run_score
from harp_lib.evaluate.store import load_benchmark
from harp_lib.stages.common import group_by

__all__ = ["judge_stage", "domain_setup_scores"]


def judge_stage(cfg: Config, domain: str, setup: str = "all", *, judges: Optional[Sequence[str]] = None) -> list:
    """Judge and score ``domain`` for one setup (or ``"all"`` of params ``setups``) with every judge
    of ``evaluate.judges`` (from scratch); returns the scores."""
    bench = load_benchmark(domain, cfg)
    setups = list(cfg.get("setups")) if setup == "all" else [setup]
    scores = []
    for s in (get_setup(x).name for x in setups):
        for j in judges or cfg.get("evaluate.judges"):
            run_judge(domain, s, j, cfg, resume=False, bench=bench)
            scores += read_jsonl(run_score(domain, s, j, cfg, bench=bench), Score)
    return scores


def domain_setup_scores(scores: Sequence) -> "Any":
    """Per judge, setup and query type: n, answer / rationale accuracy and mean hit rates (percent)."""
    import pandas as pd  # heavy: pandas (~0.4 s)
    rows = []
    for (judge, setup, qt), grp in sorted(group_by(scores, lambda s: (s.judge, s.setup, s.query_type)).items()):
        def mean(vals):
            v = [x for x in vals if x is not None]
            return 100.0 * sum(v) / len(v) if v else float("nan")
        rows.append({"judge": judge, "setup": setup, "query_type": qt, "n": len(grp),
                     "answer_%": mean([s.answer for s in grp]), "rationale_%": mean([s.rationale for s in grp]),
                     "plan_hit_%": mean([s.plan_hit_rate for s in grp]),
                     "retrieval_hit_id_%": mean([s.retrieval_hit_rate_id for s in grp])})
    return pd.DataFrame(rows)

