"""Table II's macro average with a spread, and the data series of ``dvc plots``.

:func:`macro_avg` is Table II's ``Avg`` (mean over the query types of each domain, then over
domains; :mod:`harp_lib.evaluate.tables` uses it and :data:`TABLE2_ROWS` from here, so there is one
definition); :func:`macro_summary` gives each row's ``Avg`` with a percentile bootstrap CI over
queries; :func:`write_series` writes it to ``results/metrics/table2_macro.json`` (what ``dvc exp
show`` lists for a sweep) and the CSV series under ``results/plots/`` that ``dvc.yaml`` declares as
plots (``dvc plots show`` / ``dvc plots diff``).  Called by :func:`harp_lib.evaluate.tables.write_all`.
"""
from __future__ import annotations

import json
import math
from collections import defaultdict
from pathlib import Path
from typing import Sequence

import numpy as np

from harp_lib import tasks
from harp_lib.config import SETUP_ORDER, SETUPS
from harp_lib.core.atomic import write_text
from harp_lib.core.results_io import results_path
from harp_lib.core.schema import QUERY_TYPE_COLUMN

__all__ = ["TABLE2_ROWS", "macro_avg", "macro_summary", "cell_cis", "write_series"]

#: Table II's rows: A1..A7 (answer accuracy), then R1..R7 (rationale accuracy).
TABLE2_ROWS: tuple[str, ...] = tuple(SETUP_ORDER) + tuple(SETUPS[s].rationale_row for s in SETUP_ORDER)


def macro_avg(row: dict) -> float:
    """The ``Avg`` column: the mean over query types within each domain, then over domains.

    This is how the paper's Avg is built (each dataset scored on its own, §5.6, then the three
    dataset averages averaged): it reproduces the published Avg of 13 of the 14 Table II rows
    to within 0.06 (A7 is off by 2.4 in the published table), while a flat mean over the ten
    types misses by up to 5.3 points.  Types or domains without data are left out.

    >>> macro_avg({"State": 100.0, "Change": 50.0, "Semantic": 0.0, "Time": float("nan")})
    37.5

    Values may also be numpy arrays (one bootstrap replicate per element: :func:`macro_summary`).
    """
    col_domain = {t.column: t.domain for t in tasks.all_tasks()}
    per_dom: dict[str, list] = defaultdict(list)
    for col, v in row.items():
        if col in col_domain and v is not None and not (isinstance(v, float) and math.isnan(v)):
            per_dom[col_domain[col]].append(v)
    means = [sum(v) / len(v) for v in per_dom.values() if v]
    return sum(means) / len(means) if means else math.nan


def macro_summary(scores: Sequence, *, n_boot: int = 1000, seed: int = 0, level: float = 0.95) -> dict:
    """Table II's macro average (``Avg``: mean over query types per domain, then over domains) of
    every row, with a percentile bootstrap CI over queries.

    Each bootstrap replicate resamples the queries of every (domain, query type) cell with
    replacement (so every cell keeps its size and the macro average its definition) and recomputes
    the row's ``Avg``.  The seed is fixed: the same scores give the same interval.  ``macro`` is the
    mean of the answer rows' Avg (A1..A7 present) and of the rationale rows' (R1..R7), with a CI
    from the same replicates.  One judge's scores only (filter first).

    >>> from harp_lib.core.schema import Score
    >>> ss = [Score(f"q{i}", "A1", "emotion", "state", "rule", float(i % 2), 0.0) for i in range(10)]
    >>> m = macro_summary(ss, n_boot=200)
    >>> m["rows"]["A1"]["avg"], m["rows"]["R1"]["avg"], m["rows"]["R1"]["ci95"]
    (50.0, 0.0, [0.0, 0.0])
    >>> lo, hi = m["rows"]["A1"]["ci95"]; 10.0 < lo < 50.0 < hi < 90.0
    True
    """
    judges = {s.judge for s in scores}
    if len(judges) > 1:
        raise ValueError(f"macro_summary: scores from several judges {sorted(judges)}; filter to one "
                         f"(params: evaluate.table_judge)")
    cells: dict[tuple[str, str], dict[tuple[str, str], list[float]]] = defaultdict(lambda: defaultdict(list))
    for s in scores:
        cells[("A" + s.setup[1:], "A")][(s.domain, s.query_type)].append(float(s.answer))
        cells[("A" + s.setup[1:], "R")][(s.domain, s.query_type)].append(float(s.rationale))
    rng = np.random.default_rng(seed)
    tail = 100.0 * (1.0 - level) / 2.0

    def avg_of(cellmeans: dict[tuple[str, str], np.ndarray]) -> np.ndarray:
        # the table's own Avg over the cells in (domain, type) order, on arrays of replicates
        return macro_avg({tasks.get(t).column: v for (_d, t), v in sorted(cellmeans.items())})

    rows, reps = {}, {}
    for row in TABLE2_ROWS:
        key = ("A" + row[1:], row[0])
        if key not in cells:
            continue
        point, boot = {}, {}
        for cell, vals in sorted(cells[key].items()):
            a = np.asarray(vals, dtype=np.float64)
            point[cell] = np.float64(100.0 * a.mean())
            idx = rng.integers(0, len(a), size=(n_boot, len(a)))
            boot[cell] = 100.0 * a[idx].mean(axis=1)
        reps[row] = avg_of(boot)
        lo, hi = np.percentile(reps[row], [tail, 100.0 - tail])
        rows[row] = {"avg": round(float(avg_of(point)), 2), "ci95": [round(float(lo), 2), round(float(hi), 2)],
                     "n": sum(len(v) for v in cells[key].values())}
    out: dict = {"rows": rows, "n_boot": n_boot, "seed": seed, "level": level}
    for kind in ("A", "R"):
        names = [r for r in rows if r[0] == kind]
        if names:
            rep = np.mean([reps[r] for r in names], axis=0)
            lo, hi = np.percentile(rep, [tail, 100.0 - tail])
            out["macro_" + ("answer" if kind == "A" else "rationale")] = {
                "avg": round(float(np.mean([rows[r]["avg"] for r in names])), 2),
                "ci95": [round(float(lo), 2), round(float(hi), 2)], "rows": names}
    return out


def cell_cis(scores: Sequence, *, n_boot: int = 1000, seed: int = 0, level: float = 0.95) -> dict:
    """A percentile bootstrap CI of every answer-accuracy cell of Table II: ``{setup: {column:
    [lo, hi]}}``, the query-type columns resampled over their queries, ``Avg`` from
    :func:`macro_summary` (the same replicates scheme and seed).  One judge's scores only.

    >>> from harp_lib.core.schema import Score
    >>> ss = [Score(f"q{i}", "A1", "emotion", "state", "rule", float(i % 2), 0.0) for i in range(10)]
    >>> c = cell_cis(ss, n_boot=200)["A1"]
    >>> sorted(c), 10.0 < c["State"][0] < 50.0 < c["State"][1] < 90.0, c["State"] == c["Avg"]
    (['Avg', 'State'], True, True)
    """
    summ = macro_summary(scores, n_boot=n_boot, seed=seed, level=level)["rows"]
    cells: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for s in scores:
        cells["A" + s.setup[1:]][tasks.get(s.query_type).column].append(float(s.answer))
    tail = 100.0 * (1.0 - level) / 2.0
    out: dict[str, dict[str, list[float]]] = {}
    for setup in sorted(cells):
        rng = np.random.default_rng(seed)
        row = {}
        for col, vals in sorted(cells[setup].items()):
            a = np.asarray(vals, dtype=np.float64)
            boot = 100.0 * a[rng.integers(0, len(a), size=(n_boot, len(a)))].mean(axis=1)
            lo, hi = np.percentile(boot, [tail, 100.0 - tail])
            row[col] = [round(float(lo), 2), round(float(hi), 2)]
        if setup in summ:
            row["Avg"] = summ[setup]["ci95"]
        out[setup] = row
    return out


def write_series(cfg, scores: Sequence) -> list[Path]:
    """The sweep summary and the data series ``dvc plots`` draws, from one judge's scores:

    * ``<paths.results>/metrics/table2_macro.json``: :func:`macro_summary` (``macro_answer`` /
      ``macro_rationale``: avg, ci_lo, ci_hi; per row avg, ci_lo, ci_hi, n) -- what
      ``dvc exp show`` lists per experiment;
    * ``<paths.results>/plots/table2_avg.csv``: row, kind (answer / rationale), setup, avg, ci_lo, ci_hi;
    * ``<paths.results>/plots/accuracy_by_type.csv``: setup, type, answer_pct, rationale_pct, n;
    * ``<paths.results>/plots/hit_rates.csv``: setup, type, plan_hit_pct, retrieval_hit_id_pct,
      retrieval_hit_overlap_pct.

    Values are rounded (2 decimals) so the files are byte-stable."""
    ms = macro_summary(scores)
    macro = {k: {"avg": ms[k]["avg"], "ci_lo": ms[k]["ci95"][0], "ci_hi": ms[k]["ci95"][1]}
             for k in ("macro_answer", "macro_rationale") if k in ms}
    macro["rows"] = {r: {"avg": v["avg"], "ci_lo": v["ci95"][0], "ci_hi": v["ci95"][1], "n": v["n"]}
                     for r, v in ms["rows"].items()}
    macro["bootstrap"] = {"n_boot": ms["n_boot"], "seed": ms["seed"], "level": ms["level"]}
    out = [results_path(cfg, "metrics", "table2_macro.json")]
    write_text(out[0], json.dumps(macro, indent=1, sort_keys=True) + "\n")
    lines = ["row,kind,setup,avg,ci_lo,ci_hi"]
    for r, v in ms["rows"].items():
        lines.append(f"{r},{'answer' if r[0] == 'A' else 'rationale'},A{r[1:]},{v['avg']:.2f},{v['ci95'][0]:.2f},{v['ci95'][1]:.2f}")
    out.append(results_path(cfg, "plots", "table2_avg.csv"))
    write_text(out[-1], "\n".join(lines) + "\n")

    def pct(vals):
        v = [x for x in vals if x is not None]
        return f"{100.0 * sum(v) / len(v):.2f}" if v else ""
    cells: dict[tuple[str, str], list] = defaultdict(list)
    for s in scores:
        cells[(s.setup, s.query_type)].append(s)
    acc = ["setup,type,answer_pct,rationale_pct,n"]
    hit = ["setup,type,plan_hit_pct,retrieval_hit_id_pct,retrieval_hit_overlap_pct"]
    for (setup, qt), ss in sorted(cells.items()):
        col = QUERY_TYPE_COLUMN.get(qt, qt)
        acc.append(f"{setup},{col},{pct([s.answer for s in ss])},{pct([s.rationale for s in ss])},{len(ss)}")
        hit.append(f"{setup},{col},{pct([s.plan_hit_rate for s in ss])},{pct([s.retrieval_hit_rate_id for s in ss])},"
                   f"{pct([s.retrieval_hit_rate_overlap for s in ss])}")
    for name, rows in (("accuracy_by_type.csv", acc), ("hit_rates.csv", hit)):
        out.append(results_path(cfg, "plots", name))
        write_text(out[-1], "\n".join(rows) + "\n")
    return out
