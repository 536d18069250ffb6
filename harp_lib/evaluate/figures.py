"""The paper's figures (seaborn, PNG in ``results/figures/``).

* :func:`accuracy_heatmap` -- Table II as a heatmap (rows A1..A7, R1..R7; columns the query
  types and Avg);
* :func:`hitrate_vs_accuracy` -- per setup and query type, retrieval hit rate (overlap) against
  answer and rationale accuracy;
* :func:`figure4` -- the human study: human accuracy and inverted difficulty (4 - d) as bars
  per query type, with the A4 and A5 answer accuracies as markers.  It needs real answer
  files; without them it raises :class:`~harp_lib.evaluate.human.NoHumanAnswers` and
  ``harp figures`` says that no human answers were collected (nothing is invented).

CLI: ``harp figures [--judge rule]``.
"""
from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Optional, Sequence

from harp_lib.core.atomic import atomic_write
from harp_lib.config import Config, load_config
from harp_lib import tasks
from harp_lib.core.schema import Score
from harp_lib.evaluate.human import NoHumanAnswers, all_queries, load_answer_files, score_answers
from harp_lib.evaluate.scoring import load_scores, mean_or_none
from harp_lib.evaluate.store import results_dir
from harp_lib.evaluate.tables import table2

__all__ = ["accuracy_heatmap", "hitrate_vs_accuracy", "figure4", "write_all"]


def _plt():
    import matplotlib  # heavy: matplotlib (~1 s), only when drawing
    if matplotlib.get_backend().lower() not in ("agg",) and "inline" not in matplotlib.get_backend().lower():
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # heavy: matplotlib (~1 s), only when drawing
    return plt


def accuracy_heatmap(scores: Sequence[Score], judge: Optional[str] = None, *, title: str = ""):
    """Heatmap of Table II (percent); returns the matplotlib Figure."""
    import seaborn as sns  # heavy: seaborn (~1.7 s), only when drawing
    plt = _plt()
    t2 = table2(scores, judge)
    fig, ax = plt.subplots(figsize=(11, 6.5))
    sns.heatmap(t2, annot=True, fmt=".0f", vmin=0, vmax=100, cmap="viridis", cbar_kws={"label": "accuracy (%)"},
                linewidths=.5, ax=ax, mask=t2.isna())
    ax.axhline(7, color="white", lw=3)
    ax.set_title(title or "Answer (A1-A7) and rationale (R1-R7) accuracy per query type")
    ax.set_xlabel("")
    ax.set_ylabel("")
    fig.tight_layout()
    return fig


def _per_cell(scores: Sequence[Score]):
    import pandas as pd  # heavy: pandas (~0.4 s)
    cells: dict[tuple[str, str], list[Score]] = {}
    for s in scores:
        cells.setdefault((s.setup, s.query_type), []).append(s)
    rows = []
    for (setup, qt), ss in sorted(cells.items()):
        hr = mean_or_none(s.retrieval_hit_rate_overlap for s in ss)
        rows.append({"setup": setup, "query_type": tasks.get(qt).column,
                     "retrieval_hit_rate": 100 * hr if hr is not None else math.nan,
                     "answer": 100 * sum(s.answer for s in ss) / len(ss),
                     "rationale": 100 * sum(s.rationale for s in ss) / len(ss), "n": len(ss)})
    return pd.DataFrame(rows)


def hitrate_vs_accuracy(scores: Sequence[Score], judge: Optional[str] = None):
    """Scatter of retrieval hit rate (overlap) vs answer and rationale accuracy, one point per
    setup x query type (types without GT evidence are left out)."""
    import seaborn as sns  # heavy: seaborn (~1.7 s), only when drawing
    plt = _plt()
    judges = {s.judge for s in scores}
    if judge is None and len(judges) > 1:
        raise ValueError(f"scores from several judges {sorted(judges)}: pass judge=...")
    df = _per_cell([s for s in scores if judge is None or s.judge == judge]).dropna(subset=["retrieval_hit_rate"])
    fig, axes = plt.subplots(1, 2, figsize=(12, 5), sharex=True, sharey=True)
    for ax, metric in zip(axes, ("answer", "rationale")):
        if len(df):
            hue_order = [t.column for t in tasks.all_tasks() if t.column in set(df["query_type"])]
            sns.scatterplot(data=df, x="retrieval_hit_rate", y=metric, hue="query_type", style="setup",
                            hue_order=hue_order, style_order=sorted(set(df["setup"])), s=70, ax=ax,
                            legend=(metric == "rationale"))
        ax.set_xlim(-3, 103)
        ax.set_ylim(-3, 103)
        ax.set_xlabel("retrieval hit rate, overlap (%)")
        ax.set_ylabel(f"{metric} accuracy (%)")
        ax.set_title(f"{metric.capitalize()} accuracy vs retrieval hit rate")
    if len(df):
        axes[1].legend(bbox_to_anchor=(1.02, 1), loc="upper left", fontsize=8)
    fig.tight_layout()
    return fig


def figure4(human_answers: Path | Sequence[Path], scores: Sequence[Score], queries, *, tol: float,
            judge: Optional[str] = None, demo: bool = False):
    """Figure 4: human accuracy and inverted difficulty (bars) vs A4/A5 accuracy per type.

    With ``demo=True`` the answers are a simulated listener's: its bars are grey and hatched and
    every label says SIMULATED / DEMO, so only the A4/A5 lines (real agent results) read as data.
    Raises :class:`NoHumanAnswers` when no answer files exist.
    """
    import pandas as pd  # heavy: pandas (~0.4 s)
    import seaborn as sns  # heavy: seaborn (~1.7 s), only when drawing
    plt = _plt()
    docs = load_answer_files(human_answers)
    hs = score_answers(docs, queries, tol=tol)
    hs = hs[hs["query_type"] != "Avg"]
    t2 = table2(scores, judge)
    types = [t for t in tasks.names() if t in set(hs["query_type"])]
    cols = [tasks.get(t).column for t in types]
    who = "SIMULATED listener (DEMO)" if demo else "human"
    bars = pd.DataFrame({
        "query type": cols * 2,
        "value": [100 * float(hs.set_index("query_type").loc[t, "accuracy"]) for t in types]
        + [100 * float(hs.set_index("query_type").loc[t, "inverted_difficulty"]) / 4 for t in types],
        "measure": [f"{who} accuracy (%)"] * len(types) + [f"{who} inverted difficulty (4-d, % of 4)"] * len(types)})
    fig, ax = plt.subplots(figsize=(11, 5))
    sns.barplot(data=bars, x="query type", y="value", hue="measure", ax=ax,
                palette=["#d9d9d9", "#a6a6a6"] if demo else "Set2")
    if demo:                                     # hatched: no reader should take these bars for people
        for patch in ax.patches:
            patch.set_hatch("//")
            patch.set_edgecolor("dimgray")
    for setup, marker in (("A4", "o"), ("A5", "s")):
        ax.plot(cols, [t2.loc[setup, c] for c in cols], marker=marker, ls="--", color="black" if setup == "A5" else "gray",
                label=f"{setup} answer accuracy (%)" + (" - real agent result" if demo else ""))
    ax.set_ylim(0, 105)
    ax.set_ylabel("percent")
    ax.set_title("Simulated listener (DEMO, not people) vs the real A4 / A5 agent results" if demo else
                 f"Human study ({len(docs)} answer files) vs hybrid+audio (A4) and hybrid+multimodal (A5)")
    ax.legend(fontsize=8, loc="upper right")
    fig.tight_layout()
    return fig


def write_all(cfg: Optional[Config] = None, *, judge: Optional[str] = None,
              out_dir: Optional[Path] = None) -> dict[str, Optional[Path]]:
    """Draw every figure from ``data/scores``; ``None`` for a figure that cannot be drawn."""
    cfg = cfg or load_config()
    judge = judge or cfg.evaluate.table_judge
    out_dir = Path(out_dir) if out_dir else results_dir(cfg, "figures")
    out_dir.mkdir(parents=True, exist_ok=True)
    scores = load_scores(cfg, judge=judge)
    if not scores:
        raise FileNotFoundError(f"no scores of judge {judge!r} under data/scores/; run `harp score` first")
    plt = _plt()
    out: dict[str, Optional[Path]] = {}
    for name, fn in (("accuracy_by_type", accuracy_heatmap), ("hitrate_vs_accuracy", hitrate_vs_accuracy)):
        fig = fn(scores)
        p = out_dir / f"{name}.png"
        atomic_write(p, lambda t, fig=fig: fig.savefig(t, dpi=120, format="png"))
        plt.close(fig)
        out[name] = p
    try:
        fig = figure4(cfg.path("evaluate.human.answers_dir"), scores, all_queries(cfg, cfg.get("domains")),
                      tol=float(cfg.get("evaluate.locate_tolerance_sec")))
    except NoHumanAnswers as e:
        print(f"figure 4 not drawn: {e}", file=sys.stderr)
        out["figure4_human"] = None
    else:
        p = out_dir / "figure4_human.png"
        atomic_write(p, lambda t: fig.savefig(t, dpi=120, format="png"))
        plt.close(fig)
        out["figure4_human"] = p
    return out


def add_arguments(ap) -> None:
    """``harp figures`` options (shared ones: :mod:`harp_lib.app.cli`)."""
    ap.add_argument("--judge", help="judge whose scores are drawn (default: evaluate.table_judge)")
    ap.add_argument("--out", help="output folder (default: results/figures)")


def run(cfg: Config, a) -> int:
    out = write_all(cfg, judge=a.judge, out_dir=Path(a.out) if a.out else None)
    for k, v in out.items():
        print(f"{k}: {v if v else 'not drawn (no human answer files were collected)'}")
    return 0
