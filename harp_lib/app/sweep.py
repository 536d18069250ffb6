"""Parameter sweeps: run notebooks 04_answer + 05_judge over a grid and collect one table.

    harp sweep --setups A3 A5 --top-k 1 3 5                  # emotion by default
    harp sweep --domains song --setups A1 A3 --set agent.vector_hits=3,5,10
    harp sweep --setups A5 --set agent.answerer=rule,llm --name answerer

Every grid point runs with papermill (``--engine notebook``, default; executed notebooks kept in
the scratch folder) or in-process (``--engine direct``, faster, same library calls) on the
current profile, with its predictions, judgements and scores redirected into
``<scratch>/<point>/`` so the DVC-tracked ``data/`` and the committed Table II are untouched.
The comparison goes to ``results/tables/sweep_<name>.{csv,md}``.

The same grid through DVC experiments (each point a full ``dvc repro`` of the changed stages)::

    dvc exp run --queue -S agent.top_k=1,3,5 && dvc queue start && dvc exp show --md

>>> grid({"agent.top_k": [1, 3]}, ["A3"], ["emotion"])[0]
{'domain': 'emotion', 'setup': 'A3', 'agent.top_k': 1}
>>> nested({"agent.top_k": 1, "paths.scores": "x"})
{'agent': {'top_k': 1}, 'paths': {'scores': 'x'}}
"""
from __future__ import annotations

import itertools
import re
import sys
from pathlib import Path
from typing import Any, Optional, Sequence

import yaml

from harp_lib.config import ConfigError, deep_merge, get_setup, positive_int, repo_root
from harp_lib.core.atomic import atomic_write, write_text
from harp_lib.core.jsonl import read_jsonl
from harp_lib.core.paths import DataPaths
from harp_lib.core.progress import progress
from harp_lib.core.schema import Score
from harp_lib.evaluate.spread import macro_summary, write_series   # noqa: F401  (sweep tables: macro Avg + bootstrap CI)
from harp_lib.evaluate.store import scores_path
from harp_lib.stages.common import config
from harp_lib.stages.infer import answer_stage
from harp_lib.stages.judge import judge_stage

__all__ = ["grid", "nested", "point_tag", "run_point", "collect", "run_sweep", "macro_summary", "write_series"]

PATH_KEYS = ("predictions", "judgements", "scores")


def grid(axes: dict[str, list], setups: Sequence[str], domains: Sequence[str]) -> list[dict]:
    """Every combination of domain x setup x axis values (axes in the given order)."""
    keys = list(axes)
    out = []
    for d, s, *vals in itertools.product(domains, setups, *[axes[k] for k in keys]):
        out.append({"domain": d, "setup": get_setup(s).name, **dict(zip(keys, vals))})
    return out


def nested(flat: dict[str, Any]) -> dict:
    """``{"a.b": 1}`` -> ``{"a": {"b": 1}}`` (merged)."""
    out: dict = {}
    for k, v in flat.items():
        cur = {}
        node = cur
        parts = k.split(".")
        for p in parts[:-1]:
            node[p] = {}
            node = node[p]
        node[parts[-1]] = v
        out = deep_merge(out, cur)
    return out


def point_tag(point: dict) -> str:
    """A folder name for a grid point: ``emotion_A3_agent.top_k-1``."""
    extra = "_".join(f"{k}-{v}" for k, v in point.items() if k not in ("domain", "setup"))
    tag = f"{point['domain']}_{point['setup']}" + (f"_{extra}" if extra else "")
    return re.sub(r"[^A-Za-z0-9._=-]+", "-", tag)


def _overrides(point: dict, scratch: Path) -> dict:
    flat = {k: v for k, v in point.items() if k not in ("domain", "setup")}
    flat.update({f"paths.{k}": str(scratch / point_tag(point) / k) for k in PATH_KEYS})
    return nested(flat)


def run_point(point: dict, scratch: Path, *, profile: Optional[str] = None, engine: str = "notebook",
              limit: Optional[int] = None, root: Optional[Path] = None) -> list:
    """Answer, judge and score one grid point; returns its scores."""
    root = Path(root or repo_root())
    ov = _overrides(point, scratch)
    if engine == "notebook":
        import papermill as pm  # heavy: papermill, only when running notebooks
        nb_dir = scratch / point_tag(point) / "notebooks"
        nb_dir.mkdir(parents=True, exist_ok=True)
        for name, extra in (("04_answer", {"limit": limit}), ("05_judge", {})):
            pm.execute_notebook(str(root / "notebooks" / f"{name}.ipynb"), str(nb_dir / f"{name}.ipynb"),
                                parameters={"profile": profile, "domain": point["domain"], "setup": point["setup"],
                                            "overrides": ov, **extra},
                                kernel_name="python3", progress_bar=False, cwd=str(root))
    elif engine == "direct":
        cfg = config(profile, ov)
        answer_stage(cfg, point["domain"], point["setup"], limit=limit, progress=False)
        judge_stage(cfg, point["domain"], point["setup"])
    else:
        raise ValueError(f"unknown engine {engine!r}; use 'notebook' or 'direct'")
    cfg = config(profile, ov)
    return [s for j in cfg.get("evaluate.judges")
            for s in read_jsonl(scores_path(cfg, point["domain"], point["setup"], j), Score)]


def collect(results: list[tuple[dict, list]]):
    """One row per grid point and judge: n, answer / rationale accuracy, hit rates (percent), and
    Table II's macro average (``avg_%``: mean over the point's query types) of the answer and the
    rationale row with its bootstrap 95 % CI over queries (:func:`macro_summary`)."""
    import pandas as pd  # heavy: pandas (~0.4 s)
    rows = []
    for point, scores in results:
        for judge in sorted({s.judge for s in scores}):
            ss = [s for s in scores if s.judge == judge]

            def pct(vals):
                v = [x for x in vals if x is not None]
                return round(100.0 * sum(v) / len(v), 2) if v else float("nan")
            ms = macro_summary(ss)["rows"]          # Table II's macro Avg with a bootstrap 95 % CI
            a, r = ms.get("A" + point["setup"][1:], {}), ms.get("R" + point["setup"][1:], {})
            rows.append({**point, "judge": judge, "n": len(ss), "answer_%": pct([s.answer for s in ss]),
                         "rationale_%": pct([s.rationale for s in ss]),
                         "plan_hit_%": pct([s.plan_hit_rate for s in ss]),
                         "retrieval_hit_id_%": pct([s.retrieval_hit_rate_id for s in ss]),
                         "avg_%": a.get("avg"), "avg_ci95": (f"{a['ci95'][0]:.1f}-{a['ci95'][1]:.1f}" if a else ""),
                         "r_avg_%": r.get("avg"), "r_avg_ci95": (f"{r['ci95'][0]:.1f}-{r['ci95'][1]:.1f}" if r else "")})
    df = pd.DataFrame(rows)
    return df.sort_values(list(df.columns[:-9])).reset_index(drop=True) if len(df) else df


def run_sweep(axes: dict[str, list], setups: Sequence[str], domains: Sequence[str], *, name: str,
              profile: Optional[str] = None, engine: str = "notebook", limit: Optional[int] = None,
              scratch: Optional[Path] = None, out_dir: Optional[Path] = None):
    """Run the grid and write ``<out_dir>/sweep_<name>.{csv,md}``; returns the DataFrame."""
    cfg = config(profile)
    scratch = Path(scratch) if scratch else DataPaths(cfg).sweeps(name)
    out_dir = Path(out_dir) if out_dir else DataPaths(cfg).results("tables")
    points = grid(axes, setups, domains)
    results = [(p, run_point(p, scratch, profile=profile, engine=engine, limit=limit, root=cfg.root))
               for p in progress(points, desc=f"sweep {name}", unit="point")]
    df = collect(results)
    out_dir.mkdir(parents=True, exist_ok=True)
    atomic_write(out_dir / f"sweep_{name}.csv", lambda t: df.to_csv(t, index=False, float_format="%.2f"))
    cap = (f"Sweep `{name}` (profile {cfg.profile}; {', '.join(f'{k} in {v}' for k, v in axes.items()) or 'no axes'}; "
           f"setups {', '.join(setups)}; domains {', '.join(domains)}{f'; first {limit} queries' if limit else ''}): "
           f"accuracy and hit rates in percent. Command: harp {' '.join(sys.argv[1:])}".rstrip())
    write_text(out_dir / f"sweep_{name}.md", cap + "\n\n" + df.to_markdown(index=False, floatfmt=".1f") + "\n")
    return df


def _parse_set(items: Sequence[str]) -> dict[str, list]:
    axes = {}
    for it in items:
        key, sep, vals = it.partition("=")
        if not sep or not vals:
            raise ConfigError(f"--set {it!r}: expected KEY=V1,V2 (e.g. agent.top_k=1,3,5)")
        axes[key] = [yaml.safe_load(v) for v in vals.split(",")]
    return axes


def add_arguments(ap) -> None:
    """``harp sweep`` options (shared ones: :mod:`harp_lib.app.cli`)."""
    ap.add_argument("--setups", nargs="+", default=["A3", "A5"])
    ap.add_argument("--domains", nargs="+", default=["emotion"])
    ap.add_argument("--top-k", nargs="+", type=int, default=None, help="agent.top_k values")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=V1,V2",
                    help="another axis over a params.yaml key (repeatable)")
    ap.add_argument("--name", default=None, help="table name (default: from the axes)")
    ap.add_argument("--engine", choices=("notebook", "direct"), default="notebook")
    ap.add_argument("--limit", type=positive_int, default=None, help="first N queries per domain")
    ap.add_argument("--scratch", type=Path, default=None, help="default: <paths.data>/sweeps/<name>")
    ap.add_argument("--out", type=Path, default=None, help="default: <paths.results>/tables")


def run(cfg, a) -> int:
    axes = {}
    if a.top_k:
        axes["agent.top_k"] = list(a.top_k)
    axes.update(_parse_set(a.set))
    name = a.name or ("_".join(k.split(".")[-1] for k in axes) or "setups")
    df = run_sweep(axes, a.setups, a.domains, name=name, profile=cfg.profile, engine=a.engine, limit=a.limit,
                   scratch=a.scratch, out_dir=a.out)
    print(df.to_string(index=False))
    return 0
