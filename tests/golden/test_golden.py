"""Golden ci-profile numbers (tests/golden/ci_metrics.json) checked by the test command.

One session fixture runs the pipeline notebooks with papermill on the ci profile, every domain x
every setup (00_benchmark, 01_extract, 02_index, 04_answer and 05_judge per domain with
``setup all``, table2_main_results, table_hit_rates; outputs under data/ci/, as nbval's), then:

* the extraction metrics, the full Table II and the hit rates recomputed in this process, and the
  tables the notebooks wrote, must match the golden numbers within the tolerances of
  tests/golden/ci_golden.py (documented in docs/testing.md);
* a wrong formula must fail that check: ``table2()`` scoring ``rationale * 0.5`` and a VAD frame F1
  without its factor 2 (the real functions' source, mutated and monkeypatched in).

``HARP_GOLDEN_REUSE=1`` skips the notebook run and checks the data/ci outputs already there (a
quick re-check while editing; the test command always runs the notebooks).
Regenerate after an intended change: ``.venv/bin/python scripts/update_golden.py``.
"""
from __future__ import annotations

import inspect
import json
import subprocess
import sys
import textwrap

import ci_golden

ROOT = ci_golden.ROOT


def test_ci_run_answers_every_domain_and_setup(metrics, golden):
    want = [f"{d}/A{i}" for d in sorted(ci_golden.DOMAINS) for i in range(1, 8)]
    assert metrics["coverage"] == want == golden["coverage"]
    # every row of Table II has numbers (nbval's default run filled 1 of 14 rows)
    t2 = metrics["table2"]
    assert sorted(t2) == sorted([f"A{i}" for i in range(1, 8)] + [f"R{i}" for i in range(1, 8)])
    assert all(v["Avg"] is not None for v in t2.values())
    filled = {c for row in t2.values() for c, v in row.items() if v is not None}
    assert len(filled) >= 8, f"ci Table II fills only the columns {sorted(filled)}"
    for d in ci_golden.DOMAINS:
        assert metrics["extract"][d], f"no extraction metrics for {d}"


def test_golden_metrics_match(metrics, golden):
    errs = ci_golden.compare(metrics, golden)
    assert not errs, ("ci metrics differ from tests/golden/ci_metrics.json (if intended, run "
                      "`.venv/bin/python scripts/update_golden.py` and commit it):\n" + "\n".join(errs[:40]))


def test_notebooks_wrote_the_same_tables(metrics):
    """What the table notebooks wrote equals what this process computes from the same scores."""
    assert metrics["table2_written"] == metrics["table2"]
    assert metrics["hit_rates_written"] == metrics["hit_rates"]


def _mutate(monkeypatch, module, func: str, old: str, new: str) -> None:
    """Replace ``module.func`` by its own source with ``old`` -> ``new`` (a mutation of the real code)."""
    src = textwrap.dedent(inspect.getsource(getattr(module, func)))
    assert src.count(old) == 1, (f"mutation site {old!r} not found once in {module.__name__}.{func}: "
                                 f"update this test to the current code")
    ns = dict(vars(module))
    exec(compile(src.replace(old, new), module.__file__, "exec"), ns)
    monkeypatch.setattr(module, func, ns[func])


def test_rationale_half_mutation_fails_the_golden_check(ci_run, golden, monkeypatch, tmp_path):
    from harp_lib.evaluate import tables
    _mutate(monkeypatch, tables, "table2", ".append(s.rationale)", ".append(s.rationale * 0.5)")
    errs = ci_golden.compare(ci_golden.collect(scratch=tmp_path), golden)
    bad = [e for e in errs if e.startswith("table2[R")]
    assert bad, "table2() scoring rationale * 0.5 passed the golden check"
    assert not [e for e in errs if e.startswith("table2[A")], "answer rows must be unaffected"


def test_vad_f1_mutation_fails_the_golden_check(ci_run, golden, monkeypatch, tmp_path):
    from harp_lib.extract import quality
    _mutate(monkeypatch, quality, "frame_f1", "2 * tp / (r.sum() + h.sum())", "tp / (r.sum() + h.sum())")
    errs = ci_golden.compare(ci_golden.collect(scratch=tmp_path), golden)
    assert [e for e in errs if "vad_f1" in e], "VAD frame F1 without its factor 2 passed the golden check:\n" + "\n".join(errs)


def test_tolerance_admits_one_flipped_query_only(golden):
    """The table budget: one query flipping moves its cell and its row's Avg -> passes; the same
    flip in two rows -> fails."""
    import copy
    actual = {k: copy.deepcopy(golden[k]) for k in ("extract", "coverage", "queries_per_type", "table2", "hit_rates")}
    actual["table2_written"], actual["hit_rates_written"] = copy.deepcopy(golden["table2"]), copy.deepcopy(golden["hit_rates"])
    row = actual["table2"]["A1"]
    col = next(c for c, v in row.items() if c != "Avg" and v is not None)
    from harp_lib.core.schema import QUERY_TYPE_COLUMN
    per_col = {QUERY_TYPE_COLUMN.get(t, t): k for t, k in golden["queries_per_type"].items()}
    step = 100.0 / per_col[col]
    sign = -1 if row[col] >= step else 1
    row[col] += sign * step
    row["Avg"] += sign * step / 4
    assert ci_golden.compare(actual, golden) == []
    actual["table2"]["A2"][col] = (actual["table2"]["A2"][col] or 0.0) + (step if (actual["table2"]["A2"][col] or 0) < 50 else -step)
    assert ci_golden.compare(actual, golden), "two flipped queries must fail"


def test_partial_run_writes_scratch_never_the_pipeline_outputs(ci_run):
    """`-p limit 1` (a partial run) answers into data/ci/scratch/limit-1/, leaving the ci
    predictions the full run wrote byte-identical; its executed copy goes to data/scratch/notebooks."""
    from harp_lib.config import load_config
    cfg = load_config(profile="ci")
    full = cfg.path("paths.predictions") / "clinical" / "A1.jsonl"
    before = full.read_bytes()
    env = ci_golden.notebook_env()
    env.pop("HARP_PROFILE")
    r = subprocess.run(["bash", "scripts/run_notebook.sh", "04_answer", "pytest_partial", "-p", "profile", "ci",
                        "-p", "domain", "clinical", "-p", "setup", "A1", "-p", "limit", "1"],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    assert full.read_bytes() == before
    scratch = cfg.path("paths.data") / "scratch" / "limit-1" / "predictions" / "clinical" / "A1.jsonl"
    assert len(scratch.read_text().splitlines()) == 1
    copy = ROOT / "data" / "scratch" / "notebooks" / "pytest_partial.ipynb"
    assert copy.exists() and not (ROOT / "results" / "notebooks" / "pytest_partial.ipynb").exists()
    assert "outputs go to data/ci/scratch/limit-1/" in copy.read_text()
    copy.unlink()


def test_update_golden_check_agrees(ci_run):
    """scripts/update_golden.py --check --reuse (the regenerator's comparison) passes on this run."""
    r = subprocess.run([sys.executable, "scripts/update_golden.py", "--check", "--reuse"], cwd=ROOT,
                       env=ci_golden.notebook_env(), capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert "matches the golden file" in r.stdout
    doc = json.loads(ci_golden.GOLDEN.read_text())
    assert doc["tolerances"] == ci_golden.TOLERANCES


def test_sweep_macro_summary_is_table2_avg_with_a_bootstrap_ci(ci_run, metrics):
    """The sweep's summary (dvc exp show: results/metrics/table2_macro.json; harp sweep's avg_%
    columns) is Table II's Avg, with a CI around it that is reproducible (seed) and not degenerate."""
    from harp_lib.evaluate.scoring import load_scores
    from harp_lib.evaluate.spread import macro_summary
    from harp_lib.app.sweep import collect
    cfg = ci_golden.ci_config()
    scores = load_scores(cfg, judge=cfg.get("evaluate.table_judge"))
    ms = macro_summary(scores)
    assert ms == macro_summary(scores)
    for row, r in ms["rows"].items():
        assert abs(r["avg"] - metrics["table2"][row]["Avg"]) < 0.01, row
        assert r["ci95"][0] <= r["avg"] <= r["ci95"][1]
    assert any(r["ci95"][1] - r["ci95"][0] > 5 for r in ms["rows"].values())   # 3-4 queries per cell: wide
    written = json.loads((cfg.path("paths.results") / "metrics" / "table2_macro.json").read_text())
    assert written["macro_answer"] == {"avg": ms["macro_answer"]["avg"], "ci_lo": ms["macro_answer"]["ci95"][0],
                                       "ci_hi": ms["macro_answer"]["ci95"][1]}
    point = [s for s in scores if s.setup == "A5" and s.domain == "song"]
    df = collect([({"domain": "song", "setup": "A5"}, point)])
    assert float(df.loc[0, "avg_%"]) == macro_summary(point)["rows"]["A5"]["avg"]
