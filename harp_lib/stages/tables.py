"""Stage ``tables`` (notebooks/table2_main_results, table_hit_rates): Table II, the hit rates and their figures."""
from __future__ import annotations

import math
from pathlib import Path

from harp_lib.config import Config
from harp_lib.core.results_io import results_path as _results
from harp_lib.core.results_io import write_json
from harp_lib.evaluate.figures import accuracy_heatmap, hitrate_vs_accuracy
from harp_lib.evaluate.scoring import load_scores
from harp_lib.evaluate.tables import table2, write_all
from harp_lib.stages.common import save_figure

__all__ = ["write_tables", "write_figures"]


def write_tables(cfg: Config, *, agreement: bool = False) -> dict:
    """Write the tables of the ``tables`` stage (``harp tables`` writes judge agreement too:
    ``agreement=True``) and ``results/metrics/table2.json`` (Avg per row)."""
    written = write_all(cfg, agreement=agreement)
    judge = cfg.evaluate.table_judge
    t2 = table2([s for s in load_scores(cfg) if s.judge == judge])
    metrics = {"judge": judge, "profile": cfg.profile,
               "avg": {row: (None if math.isnan(v) else round(float(v), 2)) for row, v in t2["Avg"].items()}}
    write_json(_results(cfg, "metrics", "table2.json"), metrics, digits=2)
    return written


def write_figures(cfg: Config) -> dict[str, Path]:
    """``results/figures/{accuracy_by_type,hitrate_vs_accuracy}.png`` from the table judge's scores."""
    judge = cfg.evaluate.table_judge
    scores = load_scores(cfg, judge=judge)
    if not scores:
        raise FileNotFoundError(f"no scores of judge {judge!r} under {cfg.path('paths.data')}/scores; "
                                f"run the judge stage (notebooks/05_judge) first")
    out = {}
    for name, fn in (("accuracy_by_type", accuracy_heatmap), ("hitrate_vs_accuracy", hitrate_vs_accuracy)):
        out[name] = save_figure(fn(scores), _results(cfg, "figures", f"{name}.png"))
    return out

