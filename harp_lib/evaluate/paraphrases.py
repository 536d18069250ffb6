"""Paraphrase robustness: questions in other words than the generator's templates.

``harp_lib/data/paraphrases.jsonl`` holds 103 hand-written questions — every one of the ten
task types plus questions no task fits — written independently of the templates in
``harp_lib/corpora/synth``: other word orders, clock / second / minute / spoken forms ("1:30", "90 s",
"a minute and a half"), "track" / "piece" / "number N" for songs, negations and absence
framings ("was the visit free of coughing?"), and lower / worse / calmer / sadder questions.

Each row is **bound** to a query of the benchmark (the ``n``-th query of its ``task``, modulo
the count) and filled with that query's facts (its window, dimension, topic, quote, song
positions and times), so it runs on any profile (ci, mini, full).  Its expectations are derived
from that query's ground truth by the generator's known facts, never written by hand:

* plan — the resolved windows cover every ground-truth evidence segment (songs: exactly the two
  named songs, in the question's order), the row's ``tools`` are used, no fallback plan;
* answer — the bound query's ground truth, with the winner swapped for lower / worse rows
  (``polarity: -1``) and for rows naming song B first (``swap``), the direction flipped for
  low-pole change rows ("calmness"), yes/no flipped for absence rows; graded by the rule judge's
  answer rule (:meth:`harp_lib.evaluate.rule_judge.RuleJudge.answer_verdict`).  Rows with
  ``expect: unsupported`` must be answered "unsupported question".

The agent runs with the question text and the reference clips only (the Query it gets carries
the task name because the schema requires one; the rule agent never reads it, see
tests/agent/test_agent_intent.py).  The index is either the benchmark's ground-truth segments
embedded with the configured offline embedders (``--index gt``, default: measures language
understanding with the labels as given) or the extracted index (``--index extracted``,
``data/index/<domain>``, after ``harp extract`` + ``harp index``).

CLI: ``harp paraphrase-eval [--agent rule|llm|PLANNER+ANSWERER] [--setup A3] [--index gt]``
writes ``results/tables/paraphrases.{md,json}``; each agent's column is kept when another
agent is run.

The steps, one module each: loading the set (:mod:`harp_lib.evaluate.paraphrase_set`), binding a
row to its benchmark query (:mod:`harp_lib.evaluate.paraphrase_bind`), the plan hit rate
(:mod:`harp_lib.evaluate.paraphrase_plans`), answer accuracy (:mod:`harp_lib.evaluate.paraphrase_answers`);
this module holds the report (``paraphrases.{md,json}``) and the CLI.
"""
from __future__ import annotations

import sys
import json
import logging
import time
from pathlib import Path
from typing import Optional

from harp_lib.core.atomic import part_path
from harp_lib.config import positive_int
from harp_lib.evaluate.paraphrase_answers import _agent_kind, evaluate
from harp_lib.evaluate.paraphrase_set import TASK_ORDER, load_paraphrases, split_rows, subset
from harp_lib.llm import make_client
from harp_lib.llm.local import offline_options

__all__ = ["write_tables", "add_arguments", "run"]

log = logging.getLogger(__name__)


def _rate(xs: list) -> Optional[float]:
    xs = [x for x in xs if x is not None]
    return (100.0 * sum(map(bool, xs)) / len(xs)) if xs else None


def _summary(results: list[dict]) -> dict:
    """Per task (and ``unsupported``, ``answerable``: every row a task fits, ``all``): n, plan hit
    and answer accuracy; with template runs, the same for the bound queries in template wording."""
    by: dict[str, dict] = {}
    for key in (*TASK_ORDER, "unsupported", "answerable", "all"):
        rs = [x for x in results if "skipped" not in x and (
            key == "all" or (key == "unsupported" and x["expect"] == "unsupported")
            or (key == "answerable" and x["expect"] != "unsupported")
            or (x["task"] == key and x["expect"] != "unsupported"))]
        by[key] = {"n": len(rs), "plan_hit": _rate([x["plan_hit"] for x in rs]),
                   "answer_acc": _rate([x["correct"] for x in rs])}
        tm = [x["template"] for x in rs if x.get("template")]
        if tm:
            by[key].update(template_n=len(tm), template_plan_hit=_rate([t["plan_hit"] for t in tm]),
                           template_answer_acc=_rate([t["correct"] for t in tm]))
    return by


def _fmt(v: Optional[float]) -> str:
    return "–" if v is None else f"{v:.1f}"


_CAPTION = ("# Paraphrase robustness (evaluation half)", "",
            "Hand-written questions in other words than the benchmark templates "
            "(`harp_lib/data/paraphrases.jsonl`), bound to benchmark queries; expectations derived from "
            "their ground truth (`harp_lib/evaluate/paraphrases.py`).  **Only the evaluation half "
            "(`split: eval`) is reported here**; the tuning half is what the rule planner was fitted on "
            "(`paraphrases.json` keeps every run).  Percent; n = questions per column; `template` = the "
            "same bound benchmark queries in their template wording; `answerable` = every row a task "
            "fits; `–` = not run.", "")


def _columns(data: dict) -> list[str]:
    """The columns of the table: runs on the eval half, rule ones first, then the others, then LLM."""
    names = [a for a, v in data["agents"].items() if (v.get("meta") or {}).get("split") == "eval"]
    cols = (sorted(a for a in names if a.startswith("rule")) + sorted(a for a in names if not a.startswith(("rule", "llm")))
            + sorted(a for a in names if a.startswith("llm")))
    return cols if any(a.startswith("llm") for a in cols) else cols + ["llm"]


def write_tables(out_dir: Path, agent_label: str, results: list[dict], meta: dict) -> tuple[Path, Path]:
    """Merge this agent's results into ``paraphrases.json`` and rewrite ``paraphrases.md`` (the runs
    on the evaluation half only: ``meta['split'] == 'eval'``)."""
    out_dir = Path(out_dir)
    jpath, mpath = out_dir / "paraphrases.json", out_dir / "paraphrases.md"
    data = json.loads(jpath.read_text()) if jpath.exists() else {"agents": {}}
    data["agents"][agent_label] = {"meta": meta, "summary": _summary(results), "rows": results}
    out_dir.mkdir(parents=True, exist_ok=True)
    tmp = part_path(jpath)
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True, default=str) + "\n", encoding="utf-8")
    tmp.replace(jpath)
    agents = _columns(data)
    tmpl = {a for a in agents if "template_n" in ((data["agents"].get(a) or {}).get("summary", {}).get("all") or {})}
    head = "| task | " + " | ".join(f"{a} n | {a} plan hit | {a} answer acc" + (
        f" | {a} template plan hit | {a} template answer acc" if a in tmpl else "") for a in agents) + " |"
    sep = "|---|" + "".join("---:|---:|---:|" + ("---:|---:|" if a in tmpl else "") for a in agents)
    lines = list(_CAPTION)
    for a in agents:
        m = (data["agents"].get(a) or {}).get("meta")
        if m:
            lines.append(f"- **{a}**: " + ", ".join(f"{k}={v}" for k, v in m.items()))
    lines += ["", head, sep]
    for key in (*TASK_ORDER, "unsupported", "answerable", "all"):
        cells = []
        for a in agents:
            s = (data["agents"].get(a) or {}).get("summary", {}).get(key)
            c = (f"{s['n'] if s else '–'} | {_fmt(s['plan_hit']) if s else '–'} | "
                 f"{_fmt(s['answer_acc']) if s else '–'}")
            if a in tmpl:
                c += f" | {_fmt((s or {}).get('template_plan_hit'))} | {_fmt((s or {}).get('template_answer_acc'))}"
            cells.append(c)
        lines.append(f"| {'**' + key + '**' if key in ('all', 'answerable') else key} | " + " | ".join(cells) + " |")
    lines.append("")
    tmp = part_path(mpath)
    tmp.write_text("\n".join(lines), encoding="utf-8")
    tmp.replace(mpath)
    return mpath, jpath


def add_arguments(ap) -> None:
    """``harp paraphrase-eval [--agent rule|llm|P+A] [--setup A3] [--index gt|extracted]``."""
    ap.add_argument("--agent", default="rule", help="rule | llm | PLANNER+ANSWERER (e.g. llm+rule)")
    ap.add_argument("--setup", default="A3", help="setup the agent runs in (default A3: hybrid + metadata)")
    ap.add_argument("--index", default="gt", choices=("gt", "extracted"),
                    help="gt: ground-truth segments embedded offline (default); extracted: data/index/<domain>")
    ap.add_argument("--bench", default=None, help="benchmark folder (default: paths.benchmark)")
    ap.add_argument("--data", default=None, help="paraphrase JSONL (default: harp_lib/data/paraphrases.jsonl)")
    ap.add_argument("--out-dir", default=None, help="where paraphrases.{md,json} go (default: results/tables)")
    ap.add_argument("--limit", type=positive_int, default=None, help="first N paraphrases only")
    ap.add_argument("--per-task", type=positive_int, default=None,
                    help="fixed stratified subset: the first N paraphrases of every task (+ N unsupported ones)")
    ap.add_argument("--llm", default="offline", choices=("offline", "server"),
                    help="client of an llm planner/answerer: offline = llm_offline with llm_rows.model (llama.cpp "
                         "on CPU, default); server = the llm: section (vLLM)")
    ap.add_argument("--label", default=None, help="column name in the table (default: --agent, plus @subset "
                                                  "with --per-task)")
    ap.add_argument("--split", default="eval", choices=("tune", "eval", "all"),
                    help="which half of the set (split_rows): eval (default; the only half paraphrases.md "
                         "reports), tune (the half the rule planner is fitted on) or all")
    ap.add_argument("--no-template", dest="template", action="store_false",
                    help="skip the bound benchmark queries in template wording (run by default, next to the "
                         "paraphrases)")
    ap.add_argument("--progress", action="store_true", help="one line per question")


def run(cfg, a) -> int:
    bench = Path(a.bench) if a.bench else cfg.path("paths.benchmark")
    try:
        rows = load_paraphrases(Path(a.data) if a.data else None)
        if a.split != "all":
            halves = split_rows(rows)
            rows = [r for r in rows if r.get("split", halves[r["id"]]) == a.split]
        if a.per_task:
            rows = subset(rows, a.per_task)
        client, model = None, None
        if "llm" in _agent_kind(a.agent) and a.llm == "offline":
            opts = offline_options(cfg)
            client, model = make_client(opts, root=cfg.root), opts["model"]
        t0 = time.perf_counter()
        res = evaluate(cfg, bench, agent=a.agent, setup=a.setup, index=a.index, rows=rows, limit=a.limit,
                       progress=a.progress, client=client, template=a.template)
    except (FileNotFoundError, ValueError, KeyError) as e:
        print(f"harp paraphrase-eval: {e}", file=sys.stderr)
        return 2
    out_dir = Path(a.out_dir) if a.out_dir else cfg.path("paths.results") / "tables"
    meta = {"split": a.split, "setup": a.setup, "index": a.index, "bench": str(bench), "questions": len(res),
            "sec": round(time.perf_counter() - t0, 1)}
    if a.per_task:
        meta["subset"] = f"first {a.per_task} per task + {a.per_task} unsupported (ids {', '.join(r['id'] for r in rows)})"
    if model:
        meta["model"] = f"{model} (llm backend local, greedy)"
    label = a.label or (f"{a.agent}/{a.index}" + ("@subset" if a.per_task else "")
                        + ("" if a.split == "eval" else f"@{a.split}"))
    mpath, _ = write_tables(out_dir, label, res, meta)
    s = _summary(res)["answerable"]
    line = (f"{label} ({a.split} half): plan hit {_fmt(s['plan_hit'])} %, answer accuracy {_fmt(s['answer_acc'])} % "
            f"over {s['n']} answerable questions")
    if "template_n" in s:
        line += (f"; template wording: plan hit {_fmt(s['template_plan_hit'])} %, answer accuracy "
                 f"{_fmt(s['template_answer_acc'])} %")
    print(line + f" -> {mpath}")
    return 0
