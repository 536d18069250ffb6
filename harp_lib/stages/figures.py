"""Stage ``figures`` (notebooks/fig1_pipeline_walkthrough, fig4_human_vs_agent): the walkthrough
picture of each domain and figure 4 (human vs agent)."""
from __future__ import annotations

import json
import tempfile
from importlib import resources
from pathlib import Path
from typing import Optional, Sequence

from harp_lib.config import Config
from harp_lib.core.jsonl import read_jsonl
from harp_lib.core.paths import DataPaths
from harp_lib.core.results_io import results_path as _results
from harp_lib.core.results_io import write_json
from harp_lib.core.schema import Recording
from harp_lib.evaluate.figures import figure4
from harp_lib.evaluate.human import NoHumanAnswers, _all_queries, load_answer_files
from harp_lib.evaluate.scoring import load_scores
from harp_lib.evaluate.store import load_benchmark
from harp_lib.retrieval.index import SegmentIndex
from harp_lib.stages.common import save_figure
from harp_lib.stages.trace import pick_queries
from harp_lib.viz import save_figure as viz_save, trace_query as viz_trace, walkthrough_figure

__all__ = ["walkthrough_figures", "human_figure"]


def walkthrough_figures(cfg: Config, setup: str = "A5", domains: Optional[Sequence[str]] = None) -> dict[str, Path]:
    """The pipeline-walkthrough picture (``harp_lib.viz``) for one query of each domain.

    Writes ``results/figures/fig1_walkthrough_<domain>.png`` (question, whole recording with the
    plan windows, merged top-k and ground truth, a labelled zoom, each tool's hits, and the plan /
    evidence / answer + verdict text) for the first query of each domain.
    """
    judge = cfg.evaluate.table_judge
    out = {}
    for domain in domains or cfg.get("domains"):
        bench = load_benchmark(domain, cfg)
        q = pick_queries(cfg, domain, 1)[0]
        rec = {r.id: r for r in read_jsonl(bench.root / "recordings.jsonl", Recording)}[q.recording_id]
        index = SegmentIndex.load(DataPaths(cfg).index(domain))
        gt = bench.recording_segments(q.recording_id)
        tr = viz_trace(q, index, setup, cfg, recording=rec, bench_dir=bench.root, gt_segments=gt,
                       judges=(judge,))
        fig = walkthrough_figure(tr, segments=index.segments(rec.id),
                                 gt_segments=[g for g in gt if g.id in set(q.gt_segment_ids)])
        out[domain] = viz_save(fig, _results(cfg, "figures", f"fig1_walkthrough_{domain}.png"))
        _close_figure(fig)             # shown once, by the caller (not again by the inline backend)
    return out


def _close_figure(fig) -> None:
    import matplotlib.pyplot as plt  # heavy: matplotlib (~1 s), only when drawing
    plt.close(fig)


def human_figure(cfg: Config, *, demo: bool = True) -> tuple[Optional[Path], str]:
    """Figure 4 from real human answer files (``evaluate.human.answers_dir``).

    Returns ``(png path, message)``.  Without any real answer file, ``demo=True`` draws the figure
    from the shipped DEMO file ``harp_lib/data/demo_human_answers.json`` (a simulated listener,
    NOT human data; ``scripts/make_demo_human_answers.py``) through the same scorer, titled DEMO,
    to ``figure4_demo.png``; its answers for queries this benchmark lacks are left out.
    ``demo=False`` draws nothing then (and removes a stale PNG).  Always writes
    ``results/metrics/human_study.json`` (answer files, whether the figure was drawn, demo or not).
    """
    judge = cfg.evaluate.table_judge
    png = _results(cfg, "figures", "figure4_human.png")
    demo_png = _results(cfg, "figures", "figure4_demo.png")
    src = cfg.path("evaluate.human.answers_dir")
    metrics = _results(cfg, "metrics", "human_study.json")
    queries = _all_queries(cfg, cfg.get("domains"))
    tol = float(cfg.get("evaluate.locate_tolerance_sec"))
    try:
        n_files = len(load_answer_files(src))
    except NoHumanAnswers as e:
        for stale in (png, demo_png):
            if stale.exists():
                stale.unlink()
        if not demo:
            write_json(metrics, {"answer_files": 0, "figure4_drawn": False})
            return None, f"No human answers were collected ({e}); figure 4 is not drawn."
        doc = json.loads(resources.files("harp_lib").joinpath("data/demo_human_answers.json").read_text("utf-8"))
        doc["answers"] = [a for a in doc["answers"] if a["query_id"] in queries]
        if not doc["answers"]:
            write_json(metrics, {"answer_files": 0, "figure4_drawn": False, "demo": True, "demo_answers": 0})
            return None, (f"No human answers were collected ({e}), and the demo file answers no query of "
                          f"this benchmark; figure 4 is not drawn.")
        with tempfile.TemporaryDirectory() as tmp:
            f = Path(tmp) / "demo_human_answers.json"
            f.write_text(json.dumps(doc), encoding="utf-8")
            fig = figure4([f], load_scores(cfg, judge=judge), queries, tol=tol, judge=judge, demo=True)
        fig.suptitle("DEMO: simulated answers (harp_lib/data/demo_human_answers.json), NOT human data",
                     color="crimson", fontweight="bold")
        fig.tight_layout()
        write_json(metrics, {"answer_files": 0, "figure4_drawn": True, "demo": True,
                             "demo_answers": len(doc["answers"])})
        return save_figure(fig, demo_png), (
            f"**DEMO, not human data.** No human answers were collected ({e}). Figure 4 below is drawn "
            f"from {len(doc['answers'])} answers of a simulated listener (`harp_lib/data/demo_human_answers.json`, "
            f"right with probability 0.7, difficulty drawn at random) through the real scorer, to show "
            f"what the figure will look like; its bars say nothing about people.")
    fig = figure4(src, load_scores(cfg, judge=judge), queries, tol=tol, judge=judge)
    if demo_png.exists():
        demo_png.unlink()
    write_json(metrics, {"answer_files": n_files, "figure4_drawn": True})
    return save_figure(fig, png), f"figure 4 drawn from {n_files} answer file(s) in {src}"
