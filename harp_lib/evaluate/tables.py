"""The paper's tables from score files: Table II, hit rates, judge agreement, ours vs paper.

Every table is written to ``results/tables/<name>.{csv,md,tex}``; the Markdown and LaTeX carry a
caption naming the judge and the backends that produced the predictions.

* ``table2``: rows A1..A7 (answer accuracy) then R1..R7 (rationale accuracy), columns the ten
  query types (Table II headers) and ``Avg`` (:func:`macro_avg`: unweighted mean over the types
  of each domain, then over the domains -- the paper's definition), in percent.
* ``hit_rates``: per setup and type, plan hit rate and retrieval hit rate by id and by overlap
  (percent; queries without GT evidence are left out of the means).
* ``judge_agreement``: per domain and metric, leniency per judge, pairwise Cohen's kappa,
  Fleiss' kappa and all-judge percent agreement (needs >= 2 judges' scores).
* ``table2_vs_paper``: our Table II next to the published one.

CLI: ``harp tables [--judge rule]``.

>>> from harp_lib.core.schema import Score
>>> t = table2([Score("q1", "A1", "emotion", "state", "rule", 1.0, 0.0)])
>>> t.shape, float(t.loc["A1", "State"]), float(t.loc["R1", "State"]), float(t.loc["A1", "Avg"])
((14, 11), 100.0, 0.0, 100.0)
"""
from __future__ import annotations

import math
from collections import defaultdict
from importlib import resources
from pathlib import Path
from typing import Optional, Sequence

from harp_lib.config import SETUP_ORDER, Config, load_config
from harp_lib import tasks
from harp_lib.core.atomic import atomic_write, write_text
from harp_lib.core.jsonl import check_run_fields, iter_jsonl
from harp_lib.core.schema import QUERY_TYPE_COLUMN, QUERY_TYPES, Judgement, Prediction, Score
from harp_lib.evaluate.agreement import judge_agreement
from harp_lib.evaluate.scoring import load_scores, mean_or_none
from harp_lib.evaluate.spread import TABLE2_ROWS, macro_avg, write_series      # the one row list and Avg (spread bootstraps it)
from harp_lib.evaluate.store import judgements_path, predictions_path, results_dir

__all__ = ["TABLE2_ROWS", "TABLE2_COLUMNS", "table2_columns", "macro_avg", "table2", "hit_rate_table", "agreement_table",
           "paper_table2", "paper_agreement", "table2_vs_paper", "backends_used", "write_table",
           "write_judge_agreement", "write_all"]

#: The paper's Table II columns (the ten types); :func:`table2_columns` adds registered types.
TABLE2_COLUMNS: tuple[str, ...] = tuple(QUERY_TYPE_COLUMN[t] for t in QUERY_TYPES) + ("Avg",)


def table2_columns() -> tuple[str, ...]:
    """The columns of our tables: every registered query type in Table II order, then ``Avg``."""
    return tuple(t.column for t in tasks.all_tasks()) + ("Avg",)
HIT_METRICS = (("plan_hit_rate", "Plan HR"), ("retrieval_hit_rate_id", "Retr HR (id)"),
               ("retrieval_hit_rate_overlap", "Retr HR (overlap)"))


def _one_judge(scores: Sequence[Score], judge: Optional[str]) -> list[Score]:
    judges = sorted({s.judge for s in scores})
    if judge is None:
        if len(judges) > 1:
            raise ValueError(f"scores from several judges {judges}: pass judge=... "
                             f"(params: evaluate.table_judge)")
        return list(scores)
    return [s for s in scores if s.judge == judge]


def table2(scores: Sequence[Score], judge: Optional[str] = None):
    """Table II as a DataFrame: 14 rows (A1..A7, R1..R7) x 11 columns, percent, NaN where no data."""
    import pandas as pd  # heavy: pandas (~0.4 s)
    scores = _one_judge(scores, judge)
    acc: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for s in scores:
        acc[(s.setup, s.query_type, "A")].append(s.answer)
        acc[(s.setup, s.query_type, "R")].append(s.rationale)
    data = {}
    for row in TABLE2_ROWS:
        setup, kind = ("A" + row[1:], row[0])
        vals = {}
        for t in tasks.all_tasks():
            v = acc.get((setup, t.name, kind))
            vals[t.column] = 100.0 * sum(v) / len(v) if v else math.nan
        vals["Avg"] = macro_avg(vals)
        data[row] = vals
    df = pd.DataFrame.from_dict(data, orient="index", columns=list(table2_columns()))
    df.index.name = "row"
    return df


def hit_rate_table(scores: Sequence[Score], judge: Optional[str] = None):
    """Hit rates (percent) per setup x metric (rows) and query type (+ Avg) (columns)."""
    import pandas as pd  # heavy: pandas (~0.4 s)
    scores = _one_judge(scores, judge)
    vals: dict[tuple[str, str, str], list[Optional[float]]] = defaultdict(list)
    for s in scores:
        for field, _ in HIT_METRICS:
            vals[(s.setup, field, s.query_type)].append(getattr(s, field))
    rows, index = [], []
    for setup in SETUP_ORDER:
        if not any(k[0] == setup for k in vals):
            continue
        for field, label in HIT_METRICS:
            r = {}
            for t in tasks.all_tasks():
                m = mean_or_none(vals.get((setup, field, t.name), []))
                r[t.column] = 100.0 * m if m is not None else math.nan
            r["Avg"] = macro_avg(r)
            rows.append(r)
            index.append((setup, label))
    df = pd.DataFrame(rows, columns=list(table2_columns()),
                      index=pd.MultiIndex.from_tuples(index, names=["setup", "metric"]) if index else None)
    return df


def agreement_table(scores: Sequence[Score]):
    """:func:`harp_lib.evaluate.agreement.judge_agreement` with proportions as in the paper."""
    return judge_agreement(scores)


def _data_csv(name: str):
    import pandas as pd  # heavy: pandas (~0.4 s)
    with resources.files("harp_lib.evaluate").joinpath("data", name).open("r", encoding="utf-8") as fh:
        return pd.read_csv(fh)


def paper_table2():
    """The paper's Table II (HARP_REFERENCE appendix), same shape as :func:`table2`."""
    df = _data_csv("table2_paper.csv").set_index("row")
    return df[list(TABLE2_COLUMNS)]


def paper_agreement():
    """The paper's judge-agreement figures per dataset."""
    return _data_csv("judge_agreement_paper.csv").set_index("domain")


def table2_vs_paper(ours):
    """Side by side: ``<col> ours``, ``<col> paper`` for every column, plus ``Avg diff``."""
    import pandas as pd  # heavy: pandas (~0.4 s)
    paper = paper_table2()
    cols = {}
    for c in TABLE2_COLUMNS:
        cols[f"{c} ours"] = ours[c]
        cols[f"{c} paper"] = paper[c]
    cols["Avg diff"] = ours["Avg"] - paper["Avg"]
    df = pd.DataFrame(cols, index=list(TABLE2_ROWS))
    df.index.name = "row"
    return df


def backends_used(cfg: Optional[Config] = None, domains: Optional[Sequence[str]] = None) -> dict[str, list[str]]:
    """Backends recorded in the prediction files (``Prediction.backends``): key -> sorted values."""
    cfg = cfg or load_config()
    seen: dict[str, set] = defaultdict(set)
    for d in domains or cfg.get("domains"):
        for s in SETUP_ORDER:
            p = predictions_path(cfg, d, s)
            if not p.exists():
                continue
            for pred in iter_jsonl(p, Prediction):
                check_run_fields([pred], p, setup=s, domain=d)
                for k, v in (pred.backends or {}).items():
                    if isinstance(v, (dict, list)):
                        v = ",".join(f"{a}:{b}" for a, b in sorted(v.items())) if isinstance(v, dict) \
                            else ",".join(map(str, v))
                    seen[k].add(str(v))
                break  # one prediction per file: backends are per run
    return {k: sorted(v) for k, v in sorted(seen.items())}


def judge_models(cfg: Config, judge: str, domains: Optional[Sequence[str]] = None) -> list[str]:
    """Model ids (and prompt hashes) recorded in a judge's judgement files."""
    out = set()
    for d in domains or cfg.get("domains"):
        for s in SETUP_ORDER:
            p = judgements_path(cfg, d, s, judge)
            if p.exists():
                for j in iter_jsonl(p, Judgement):
                    out.add(f"{j.model_id} (prompts {j.prompt_hash})")
                    break
    return sorted(out)


def _md_escape(s: str) -> str:
    return s.replace("|", "\\|")


_TEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
        "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}


def tex_escape(s: str) -> str:
    r"""Escape LaTeX special characters of a caption.

    >>> tex_escape("audio_emb=50%")
    'audio\\_emb=50\\%'
    """
    return "".join(_TEX.get(c, c) for c in s)


def write_table(df, name: str, out_dir: Path, caption: str, *, index: bool = True,
                float_format: str = "%.1f") -> list[Path]:
    """Write ``name.csv`` (full precision), ``name.md`` and ``name.tex`` (with ``caption``)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    csv = out_dir / f"{name}.csv"
    atomic_write(csv, lambda t: df.to_csv(t, index=index, float_format="%.4f"))
    md = out_dir / f"{name}.md"
    if index and df.index.nlevels > 1:                      # (setup, metric) -> two columns
        df, index = df.reset_index(), False
    shown = df.astype(object).where(df.notna(), None)     # NaN -> None so missingval applies
    body = shown.to_markdown(index=index, floatfmt=float_format.lstrip("%"), missingval="–")
    write_text(md, f"{_md_escape(caption)}\n\n{body}\n")
    tex = out_dir / f"{name}.tex"
    latex = df.to_latex(index=index, float_format=lambda v: (float_format % v), na_rep="--",
                        caption=tex_escape(caption), label=f"tab:{name}", escape=True)
    write_text(tex, latex)
    return [csv, md, tex]


def _backend_caption(b: dict[str, list[str]]) -> str:
    if not b:
        return "backends: not recorded in the predictions"
    return "backends: " + "; ".join(f"{k}={'/'.join(v)}" for k, v in b.items())


def write_judge_agreement(all_scores: list, out_dir: Path, prof: str) -> list[Path]:
    """``judge_agreement.{csv,md,tex}`` from every judge's scores (empty with one judge)."""
    agr = agreement_table(all_scores)
    judges_all = sorted({s.judge for s in all_scores})
    note = "" if len(judges_all) >= 2 else (
        f" Only one judge ({judges_all[0]}) has scores, so agreement statistics are undefined (empty); "
        f"run LLM judges (evaluate.judges) for this table.")
    return write_table(
        agr, "judge_agreement", out_dir,
        f"Judge agreement per domain and metric ({prof}; judges {', '.join(judges_all)}): leniency "
        f"(share of YES), pairwise Cohen's kappa, Fleiss' kappa and all-judge percent agreement.{note}",
        index=False, float_format="%.3f")


def write_all(cfg: Optional[Config] = None, *, judge: Optional[str] = None,
              out_dir: Optional[Path] = None, agreement: bool = True) -> dict[str, list[Path]]:
    """Write every table from ``data/scores``; returns ``{table name: files}``.

    ``agreement=False`` leaves ``judge_agreement.*`` alone: the DVC stage ``agreement`` owns it
    (with one judge on mini / ci it is the offline LLM judge's table, not the empty one here).
    """
    cfg = cfg or load_config()
    judge = judge or cfg.evaluate.table_judge
    out_dir = Path(out_dir) if out_dir else results_dir(cfg, "tables")
    all_scores = load_scores(cfg)
    scores = [s for s in all_scores if s.judge == judge]
    if not scores:
        raise FileNotFoundError(f"no scores of judge {judge!r} under data/scores/; run `harp judge` "
                                f"and `harp score` first (judges with scores: "
                                f"{sorted({s.judge for s in all_scores}) or 'none'})")
    n_q = len({(s.domain, s.query_id) for s in scores})
    setups = sorted({s.setup for s in scores})
    types = {s.query_type for s in scores}
    b = _backend_caption(backends_used(cfg))
    models = ", ".join(judge_models(cfg, judge)) or judge
    prof = f"profile {cfg.profile}"
    n_types = len(tasks.names())
    partial = "" if len(types) == n_types else f" Avg over the {len(types)} of {n_types} types present."
    written = {}
    t2 = table2(scores)
    written["series"] = write_series(cfg, scores)     # macro Avg + bootstrap CI (dvc exp show), CSV series (dvc plots)
    written["table2"] = write_table(
        t2, "table2", out_dir,
        f"Table II (ours, {prof}, {n_q} queries, setups {','.join(setups)}): answer (A) and rationale (R) "
        f"accuracy in percent per query type; Avg = macro mean over the types of each domain, then over domains.{partial} Judge: {models}. {b}.")
    written["hit_rates"] = write_table(
        hit_rate_table(scores), "hit_rates", out_dir,
        f"Hit rates in percent ({prof}): plan hit rate, retrieval hit rate by GT-segment identity and "
        f"by strict time overlap; queries without GT evidence excluded. {b}.")
    if agreement:
        written["judge_agreement"] = write_judge_agreement(all_scores, out_dir, prof)
    written["table2_vs_paper"] = write_table(
        table2_vs_paper(t2), "table2_vs_paper", out_dir,
        f"Our Table II ({prof}, judge {models}; {b}) next to the paper's (Qwen3-Omni-30B on LongEmo / "
        f"MedMosaic / SongEval, LLM judges). Different data, models and judges: compare trends, not values.")
    return written


def add_arguments(ap) -> None:
    """``harp tables`` options (shared ones: :mod:`harp_lib.app.cli`)."""
    ap.add_argument("--judge", help="judge for Table II (default: evaluate.table_judge)")
    ap.add_argument("--out", help="output folder (default: results/tables)")


def run(cfg: Config, a) -> int:
    written = write_all(cfg, judge=a.judge, out_dir=Path(a.out) if a.out else None)
    for name, files in written.items():
        print(f"{name}: " + ", ".join(str(f) for f in files))
    print(Path(written["table2"][1]).read_text(encoding="utf-8"))
    return 0
