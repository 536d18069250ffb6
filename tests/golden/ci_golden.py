"""Golden ci-profile numbers: run the pipeline notebooks on every domain x setup, collect the
metrics, compare them with ``tests/golden/ci_metrics.json`` within documented tolerances.

Used by ``tests/golden/test_golden.py`` (the test command) and ``scripts/update_golden.py`` (the
one-command regenerator).  See docs/testing.md "Golden ci metrics".

What is compared (every number, nothing sampled):

* ``extract``: every numeric leaf of the timing-free extraction report of each domain
  (``harp_lib.extract.quality.evaluate_domain``: VAD F1, DER, WER, cough / symptom / boundary
  metrics, label accuracies, segment counts), recomputed in this process from the extraction
  outputs the notebooks wrote.
* ``table2``: the full Table II (A1..A7, R1..R7 x the ten types + Avg) computed in this process by
  ``harp_lib.evaluate.tables.table2`` from the ci score files of all 7 setups x 3 domains, and
  ``table2_written``: the same table as notebook ``table2_main_results`` wrote it
  (``<paths.results>/tables/table2.csv``).
* ``hit_rates``: ``hit_rate_table`` (plan / retrieval hit rates per setup and type), in process and
  as written by notebook ``table_hit_rates`` (``hit_rates_written``).

Tolerances (``TOLERANCES``; also stored in the golden file so a reader sees them):

* ``extract_abs = 0.02`` on [0, 1] metrics (and on counts, which must match exactly since they are
  integers: ``abs(a - b) <= 0.02`` only holds for equal integers).  The ci extraction is
  deterministic on one machine; across CPUs float32 sums may move a VAD frame edge (10 ms: F1 moves
  by < 0.001 on ~5 min of ci audio) or a diarization window, which stays well inside 0.02, while a
  missed song boundary (ci: 2 boundaries, F1 -0.25+) or a wrong formula (F1 halved) is far outside.
* Tables: every cell within ``cell_abs = 0.01`` percentage points (the CSV rounding), except a
  budget of ONE flipped query: at most ``max_changed_cells = 2`` cells may differ (the flipped
  query's type cell and its row's Avg), each by at most one query's worth (``100 / n``, n = the
  queries of that type, at most ``max_per_type`` = 4 on ci).  A single borderline query (a near-tie
  in retrieval ranking) flipping on another machine is tolerated; a formula change, which touches
  every row it applies to (``rationale * 0.5`` halves all seven R rows), is not.
"""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Mapping, Optional

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).resolve().parent / "ci_metrics.json"
DOMAINS = ("emotion", "clinical", "song")
TOLERANCES = {"extract_abs": 0.02, "cell_abs": 0.01, "max_changed_cells": 2}
#: Keys of the extraction report that are not metrics (descriptions, not numbers to guard).
EXTRACT_SKIP = {"backends", "profile", "quarantined", "domain", "per_recording"}

#: The notebook runs, in order, on the ci profile: every domain, every setup (what `dvc repro`
#: runs on mini, on the tiny ci benchmark).  (notebook, parameters)
NOTEBOOK_RUNS: tuple[tuple[str, dict], ...] = (
    ("00_benchmark", {}),
    ("01_extract", {"force": True}),                      # domain None: every domain; recomputed (as dvc repro does)
    ("02_index", {}),
    *[("04_answer", {"domain": d, "setup": "all"}) for d in DOMAINS],
    *[("05_judge", {"domain": d, "setup": "all"}) for d in DOMAINS],
    ("table2_main_results", {}),
    ("table_hit_rates", {}),
)


def notebook_env() -> dict:
    """The environment of a ci notebook run: the ci profile, this checkout's harp_lib first."""
    env = dict(os.environ, HARP_PROFILE="ci", HARP_PROGRESS="text", HF_HUB_OFFLINE="1", MPLBACKEND="Agg")
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.pop("DVC_STAGE", None)
    return env


def run_ci_notebooks(out_dir: Path, *, log=print) -> list[Path]:
    """Execute :data:`NOTEBOOK_RUNS` with papermill (ci profile; outputs under data/ci/, executed
    copies under ``out_dir``).  A failing notebook raises ``RuntimeError`` with its stderr tail."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    done = []
    for name, params in NOTEBOOK_RUNS:
        tag = "_".join([name, *[str(v) for v in params.values()]])
        out = out_dir / f"{tag}.ipynb"
        args = [sys.executable, "-m", "papermill", str(ROOT / "notebooks" / f"{name}.ipynb"), str(out),
                "-k", "python3", "--no-progress-bar", "--cwd", str(ROOT)]
        for k, v in params.items():
            args += ["-p", k, str(v)]
        t0 = time.time()
        # the DVC stages' numerics (scripts/deterministic_env.sh: AVX2 code path, one BLAS thread)
        r = subprocess.run(["bash", "-c", 'source scripts/deterministic_env.sh && exec "$@"', "bash", *args],
                           cwd=ROOT, env=notebook_env(), capture_output=True, text=True, timeout=1800)
        if r.returncode != 0:
            raise RuntimeError(f"ci notebook {name} {params} failed (executed copy: {out}):\n{r.stderr[-4000:]}")
        log(f"  {tag}: {time.time() - t0:.0f} s")
        done.append(out)
    return done


def ci_config(overrides: Optional[Mapping] = None):
    from harp_lib.config import load_config
    return load_config(profile="ci", overrides=dict(overrides) if overrides else None)


def _numeric_leaves(m: Mapping, prefix: str = "") -> dict[str, float]:
    out: dict[str, float] = {}
    for k, v in sorted(m.items()):
        if not prefix and k in EXTRACT_SKIP:
            continue
        key = f"{prefix}{k}"
        if isinstance(v, Mapping):
            out.update(_numeric_leaves(v, key + "."))
        elif isinstance(v, bool):
            out[key] = float(v)
        elif isinstance(v, (int, float)) and v is not None:
            out[key] = float(v)
    return out


def _table(df) -> dict[str, dict[str, Optional[float]]]:
    """A DataFrame as {row: {column: value or None}} (NaN -> None; MultiIndex rows joined by '|')."""
    out = {}
    for idx, row in df.iterrows():
        name = "|".join(map(str, idx)) if isinstance(idx, tuple) else str(idx)
        out[name] = {str(c): (None if v is None or (isinstance(v, float) and math.isnan(v)) else round(float(v), 4))
                     for c, v in row.items()}
    return out


def _read_csv_table(path: Path, index_cols: int):
    import pandas as pd
    return pd.read_csv(path, index_col=list(range(index_cols)))


def collect(cfg=None, *, scratch: Optional[Path] = None) -> dict:
    """Every guarded number of the ci run under ``cfg``'s paths (the ci profile by default).

    Recomputes extraction metrics and tables in this process (so a changed formula shows), and
    reads the tables the notebooks wrote.  ``scratch``: where the recomputed extraction reports
    are written (default: a temporary folder; never the notebook-written metrics)."""
    import tempfile

    from harp_lib.evaluate.scoring import load_scores
    from harp_lib.evaluate.tables import hit_rate_table, table2
    from harp_lib.extract.quality import evaluate_domain
    from harp_lib.core.results_io import deterministic_metrics, results_path
    cfg = cfg or ci_config()
    scratch = Path(scratch or tempfile.mkdtemp(prefix="harp_golden_"))
    extract = {}
    for d in DOMAINS:
        m = evaluate_domain(cfg, d, metrics_path=scratch / f"extract_{d}.json")
        extract[d] = _numeric_leaves(deterministic_metrics(m))
    judge = cfg.get("evaluate.table_judge")
    scores = load_scores(cfg, judge=judge)
    counts: dict[str, int] = {}
    for s in scores:
        if s.setup == "A1":
            counts[s.query_type] = counts.get(s.query_type, 0) + 1
    coverage = sorted({f"{s.domain}/{s.setup}" for s in scores})
    out: dict[str, Any] = {
        "extract": extract,
        "coverage": coverage,
        "queries_per_type": dict(sorted(counts.items())),
        "table2": _table(table2(scores)),
        "hit_rates": _table(hit_rate_table(scores)),
    }
    tdir = results_path(cfg, "tables")
    if (tdir / "table2.csv").exists():
        out["table2_written"] = _table(_read_csv_table(tdir / "table2.csv", 1))
    if (tdir / "hit_rates.csv").exists():
        out["hit_rates_written"] = _table(_read_csv_table(tdir / "hit_rates.csv", 2))
    return out


# ---------------------------------------------------------------------------------------
# comparison
# ---------------------------------------------------------------------------------------
def _cmp_extract(actual: Mapping, golden: Mapping, tol: float) -> list[str]:
    errs = []
    for d, gm in golden.items():
        am = actual.get(d, {})
        for k in sorted(set(gm) | set(am)):
            if k not in am or k not in gm:
                errs.append(f"extract {d}: metric {k} is {'missing' if k not in am else 'new'} "
                            f"(golden {gm.get(k)}, now {am.get(k)})")
            elif abs(am[k] - gm[k]) > tol:
                errs.append(f"extract {d}: {k} = {am[k]:.4f}, golden {gm[k]:.4f} (tolerance {tol})")
    return errs


def _cmp_table(name: str, actual: Mapping, golden: Mapping, n_per_col: Mapping[str, float],
               cell_abs: float, max_changed: int) -> list[str]:
    """One-flipped-query budget: cells within ``cell_abs``, except at most ``max_changed`` cells
    each within one query's worth (``100 / n`` of that column; Avg: the smallest n)."""
    errs, changed = [], []
    for row in sorted(set(golden) | set(actual)):
        if row not in actual or row not in golden:
            errs.append(f"{name}: row {row} is {'missing' if row not in actual else 'new'}")
            continue
        for col in sorted(set(golden[row]) | set(actual[row])):
            g, a = golden[row].get(col), actual[row].get(col)
            if (g is None) != (a is None):
                errs.append(f"{name}[{row}, {col}] = {a}, golden {g} (a cell became {'empty' if a is None else 'filled'})")
            elif g is not None and abs(a - g) > cell_abs:
                one = 100.0 / max(1.0, float(n_per_col.get(col, min(n_per_col.values(), default=1))))
                changed.append((row, col, a, g, one))
    if len(changed) > max_changed or any(abs(a - g) > one + cell_abs for _, _, a, g, one in changed):
        errs += [f"{name}[{r}, {c}] = {a:.2f}, golden {g:.2f} (tolerance: at most {max_changed} cells off "
                 f"by <= one query, {one:.1f} points)" for r, c, a, g, one in changed]
    return errs


def compare(actual: Mapping, golden: Mapping, tolerances: Optional[Mapping] = None) -> list[str]:
    """Every difference beyond the tolerances, one line each (empty: the run matches)."""
    tol = dict(TOLERANCES, **(tolerances or golden.get("tolerances", {})))
    errs = _cmp_extract(actual.get("extract", {}), golden["extract"], tol["extract_abs"])
    if actual.get("coverage") != golden["coverage"]:
        errs.append(f"coverage: scores for {actual.get('coverage')}, golden {golden['coverage']}")
    from harp_lib.core.schema import QUERY_TYPE_COLUMN
    n_col = {QUERY_TYPE_COLUMN.get(t, t): n for t, n in golden["queries_per_type"].items()}
    n_col["Avg"] = min(n_col.values(), default=1)
    for name in ("table2", "hit_rates", "table2_written", "hit_rates_written"):
        src = name.replace("_written", "")
        if name.endswith("_written") and name not in actual:
            errs.append(f"{name}: the notebook did not write {src}.csv under <paths.results>/tables")
            continue
        errs += _cmp_table(name, actual[name], golden[src], n_col, tol["cell_abs"], tol["max_changed_cells"])
    return errs


def load_golden(path: Path = GOLDEN) -> dict:
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: run `.venv/bin/python scripts/update_golden.py`")
    return json.loads(path.read_text())


def golden_document(metrics: Mapping) -> dict:
    """The golden file's content: the numbers, the tolerances and how to regenerate them."""
    doc = {"about": "Golden ci-profile metrics checked by tests/golden/test_golden.py (tolerances: "
                    "tests/golden/ci_golden.py docstring, docs/testing.md). Regenerate after an intended "
                    "change: .venv/bin/python scripts/update_golden.py",
           "tolerances": TOLERANCES}
    doc.update({k: v for k, v in metrics.items() if not k.endswith("_written")})
    return doc


def write_golden(metrics: Mapping, path: Path = GOLDEN) -> Path:
    path.write_text(json.dumps(golden_document(metrics), indent=1, sort_keys=True) + "\n")
    return path

