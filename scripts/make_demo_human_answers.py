"""Write harp_lib/data/demo_human_answers.json: a DEMO answer file for figure 4 (NOT human data).

    .venv/bin/python scripts/make_demo_human_answers.py [--profile mini] [--p-correct 0.7] [--seed 0]

A simulated listener answers the questions a study page would hold (``harp human build``:
``evaluate.human.max_per_type`` per query type and recording, the same seeded selection) of
every domain of the benchmark, in the format the annotation page downloads.  It picks the
right option with probability ``--p-correct`` (checked with the real scorer,
``tasks.<type>.human_correct``), else a wrong one; locate answers are a time inside (right) or
two minutes away from (wrong) the ground-truth window; difficulty is drawn from 0-4.  The file
is marked ``"demo": true`` and its page id says so; ``pipeline.human_figure`` uses it only when
no real answer file exists and labels the figure DEMO.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harp_lib import tasks  # noqa: E402
from harp_lib.config import load_config  # noqa: E402
from harp_lib.evaluate.human import all_queries, select_queries  # noqa: E402
from harp_lib.core.timespan import format_time  # noqa: E402

OUT = ROOT / "harp_lib" / "data" / "demo_human_answers.json"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default="mini")
    ap.add_argument("--p-correct", type=float, default=0.7)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    cfg = load_config(profile=a.profile)
    tol = float(cfg.get("evaluate.locate_tolerance_sec"))
    rng = np.random.default_rng(a.seed)
    queries = all_queries(cfg, cfg.get("domains"))
    if not queries:
        print(f"no benchmark under {cfg.path('paths.benchmark')}: run the benchmark stage first", file=sys.stderr)
        return 2
    by_rec: dict[str, list] = {}
    for q in queries.values():
        by_rec.setdefault(q.recording_id, []).append(q)
    answers = []
    for rid in sorted(by_rec):
        for q in select_queries(by_rec[rid], max_per_type=int(cfg.get("evaluate.human.max_per_type")), seed=a.seed):
            task = tasks.get(q.query_type)
            kind, options = task.human_form
            right_pick = bool(rng.random() < a.p_correct)
            if kind == "time":
                lo, hi = task.accept_window(q, tol)
                t = (lo + hi) / 2 if right_pick else (hi + 120.0 if lo < 120.0 else lo - 120.0)
                choice = format_time(max(0.0, t))
            else:
                values = [v for v, _ in options]
                good = [v for v in values if task.human_correct(q, [v] if kind == "multi" else v, tol=tol)]
                bad = [v for v in values if v not in good]
                pool = good if (right_pick and good) or not bad else bad
                v = pool[int(rng.integers(len(pool)))]
                choice = [v] if kind == "multi" else v
            answers.append({"query_id": q.query_id, "recording_id": q.recording_id, "query_type": q.query_type,
                            "choice": choice, "sure": bool(rng.random() < 0.6),
                            "difficulty": int(rng.integers(0, 5))})
    doc = {"page_id": "DEMO-simulated-listener-not-human-data", "demo": True,
           "note": (f"DEMO ONLY, NOT HUMAN DATA: a simulated listener (right with probability {a.p_correct}, "
                    f"seed {a.seed}) on the {a.profile} benchmark, written by scripts/make_demo_human_answers.py "
                    f"so that figure 4 runs through the real scorer before a real study exists."),
           "domain": "all", "recording_ids": sorted(by_rec), "submitted_at": None, "notes": [],
           "answers": answers}
    OUT.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {OUT} ({len(answers)} demo answers, {len(by_rec)} recordings)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
