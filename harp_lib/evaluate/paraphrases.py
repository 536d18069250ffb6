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

>>> spoken(90), spoken(270), spoken(30), spoken(47)
('a minute and a half', 'four and a half minutes', 'half a minute', '47 seconds')
"""
from __future__ import annotations

import sys
import json
import logging
import math
import time
from collections import defaultdict
from importlib import resources
from pathlib import Path
from typing import Any, Optional, Sequence

from harp_lib.core.atomic import part_path
from harp_lib.config import positive_int

__all__ = ["load_paraphrases", "bind", "spoken", "gt_index", "plan_hit", "evaluate", "write_tables", "add_arguments", "run"]

log = logging.getLogger(__name__)

_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
          "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty")
_ORDW = ("zeroth", "first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth",
         "eleventh", "twelfth", "thirteenth", "fourteenth", "fifteenth", "sixteenth", "seventeenth",
         "eighteenth", "nineteenth", "twentieth")
_DIM_WORDS = {   # dim -> (noun of the high pole, noun of the low pole, "more" adj, low-pole adj, "less" adj, plain adj)
    "valence": ("positivity", "negativity", "more positive", "sadder", "less positive", "positive"),
    "arousal": ("energy", "calmness", "more energetic", "calmer", "less energetic", "energetic"),
    "dominance": ("assertiveness", "submissiveness", "more dominant", "more submissive", "less dominant",
                  "dominant"),
}
TASK_ORDER = ("state", "change", "comparison", "locate", "locate_hard", "reported", "exhibited",
              "time", "position", "audio")


def load_paraphrases(path: Optional[Path] = None) -> list[dict]:
    """The paraphrase rows (``harp_lib/data/paraphrases.jsonl`` unless ``path``)."""
    if path is None:
        text = resources.files("harp_lib").joinpath("data/paraphrases.jsonl").read_text(encoding="utf-8")
        src = "harp_lib/data/paraphrases.jsonl"
    else:
        text, src = Path(path).read_text(encoding="utf-8"), str(path)
    rows = []
    for i, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            r = json.loads(line)
        except json.JSONDecodeError as e:
            raise ValueError(f"{src}:{i}: not JSON ({e.msg}); fix the line") from None
        missing = [k for k in ("id", "task", "n", "text", "tools") if k not in r]
        if missing or r["task"] not in TASK_ORDER:
            raise ValueError(f"{src}:{i}: row {r.get('id')!r} lacks {missing} or has an unknown task "
                             f"{r.get('task')!r} (tasks: {', '.join(TASK_ORDER)})")
        if r.get("split", "tune") not in ("tune", "eval"):
            raise ValueError(f"{src}:{i}: row {r['id']!r} has split {r['split']!r} (tune or eval)")
        rows.append(r)
    return rows


def split_rows(rows: Sequence[dict]) -> dict[str, str]:
    """The fixed tune / eval split: row id -> ``tune`` or ``eval``.  Within each stratum (the task,
    or ``unsupported`` for the rows no task fits) the rows are ordered by the sha256 of their id and
    alternate tune, eval, tune...  It reads nothing but the ids, never a result.

    >>> split_rows([{"id": "p001", "task": "state"}, {"id": "p002", "task": "state"}])
    {'p001': 'tune', 'p002': 'eval'}
    """
    import hashlib
    strata: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        strata["unsupported" if r.get("expect") == "unsupported" else r["task"]].append(r)
    out = {}
    for rs in strata.values():
        for i, r in enumerate(sorted(rs, key=lambda r: hashlib.sha256(r["id"].encode()).hexdigest())):
            out[r["id"]] = "tune" if i % 2 == 0 else "eval"
    return out


def spoken(t: float) -> str:
    """A time as people say it: 'a minute and a half', 'four and a half minutes', else seconds."""
    t = float(t)
    if t % 30 or t <= 0 or t >= 21 * 60:
        return f"{t:g} seconds"
    m, r = divmod(int(t), 60)
    if m == 0:
        return "half a minute"
    if r == 0:
        return "one minute" if m == 1 else f"{_WORDS[m]} minutes"
    return "a minute and a half" if m == 1 else f"{_WORDS[m]} and a half minutes"


def _clock(t: float) -> str:
    t = int(round(t))
    return f"{t // 60}:{t % 60:02d}"


def _ordinal(n: int) -> str:
    from harp_lib.core.timespan import ordinal
    return ordinal(n)


_TENS = ("", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")


def number_words(n: int) -> str:
    """A whole number as people write it out, hyphenated: 97 -> 'ninety-seven'.

    >>> number_words(97), number_words(16), number_words(412)
    ('ninety-seven', 'sixteen', 'four hundred and twelve')
    """
    n = int(n)
    if n < 0 or n > 9999:
        return str(n)
    if n >= 100:
        h, r = divmod(n, 100)
        return f"{number_words(h)} hundred" + (f" and {number_words(r)}" if r else "")
    if n <= 20:
        return _WORDS[n]
    t, u = divmod(n, 10)
    return _TENS[t] + (f"-{_WORDS[u]}" if u else "")


def mark(t: float) -> str:
    """A time as a hyphenated '...-minute mark' phrase, to the half minute: 990 -> 'sixteen-and-a-half-minute'.

    >>> mark(990), mark(60), mark(30), mark(96.8)
    ('sixteen-and-a-half-minute', 'one-minute', 'thirty-second', 'one-and-a-half-minute')
    """
    half = max(1, int(round(float(t) / 30)))
    m, r = divmod(half, 2)
    if m == 0:
        return "thirty-second"
    return "-".join(number_words(m).split()) + ("-and-a-half" if r else "") + "-minute"


def _edge(n: int, n_songs: Optional[int], first: str, last: str) -> str:
    """'opening' / 'closing' (or the given words) for the first / last song, else the ordinal word."""
    if n == 1:
        return first
    if n_songs and n == n_songs:
        return last
    return _ORDW[n] if n < len(_ORDW) else _ordinal(n)


def _slots(q, rec=None) -> dict[str, Any]:
    """The facts of a benchmark query a paraphrase may name (its window, dimension, songs...).
    ``rec``: the query's Recording (its song count for 'the closing track' / 'the last one', its
    duration for the consultation window of a one-consultation recording)."""
    gt, cu = q.ground_truth or {}, q.custom or {}
    n_songs = (getattr(rec, "custom", None) or {}).get("n_songs")
    out: dict[str, Any] = {"topic": cu.get("topic", ""), "quote": cu.get("quote", "")}
    if q.query_type in ("reported", "exhibited") and (("t0" in gt and "t1" in gt) or rec is not None):
        c0, c1 = ((math.floor(float(gt["t0"])), math.ceil(float(gt["t1"]))) if "t1" in gt
                  else (0, math.ceil(float(rec.duration))))
        out.update(c0_clock=_clock(c0), c1_clock=_clock(c1), c0=c0, c1=c1)
    if q.query_type == "state" and q.time_ref is not None:
        t = float(q.time_ref)
        out.update(t_clock=_clock(t), t_sec=int(round(t)), t_spoken=spoken(round(t / 30) * 30 or 30),
                   t_mark=mark(t), t_sec_words=number_words(int(round(t))))
    if q.query_type in ("change", "comparison"):
        t0, t1 = math.floor(float(gt["t0"])), math.ceil(float(gt["t1"]))
        dim = gt["dimension"]
        hi, lo, more, lowpole, less, plain = _DIM_WORDS[dim]
        out.update(t0=t0, t1=t1, t0_clock=_clock(t0), t1_clock=_clock(t1), t0_words=number_words(t0),
                   t1_words=number_words(t1), dim=dim, dim_noun=hi,
                   dim_low_noun=lo, more_adj=more, less_pole_adj=lowpole, less_adj=less, plain_adj=plain)
    if q.query_type in ("locate", "locate_hard"):
        w0, w1 = cu.get("window") or (gt.get("t0"), gt.get("t1"))
        w0, w1 = math.floor(float(w0)), math.ceil(float(w1))
        out.update(w0=w0, w1=w1, w0_clock=_clock(w0), w1_clock=_clock(w1), w0_words=number_words(w0),
                   w1_words=number_words(w1))
    for role in ("a", "b"):
        info = cu.get(f"song_{role}") or {}
        if "index" in info:
            n, t = int(info["index"]), float(info.get("time_ref") or 0.0)
            out.update({f"{role}_n": n, f"{role}_ord": _ordinal(n), f"{role}_word": _ORDW[n] if n < len(_ORDW) else _ordinal(n),
                        f"{role}_clock": _clock(t), f"{role}_sec": int(round(t)), f"{role}_min": f"{t / 60:g}",
                        f"{role}_spoken": spoken(t), f"{role}_mark": mark(t),
                        f"{role}_edge": _edge(n, n_songs, "opening", "closing"),
                        f"{role}_end": _edge(n, n_songs, "first", "last")})
    return out


def _swap(w: str) -> str:
    return {"A": "B", "B": "A"}.get(w, w)


def _consultations(q, queries_by_type: dict[str, list]) -> int:
    """How many consultations the benchmark's clinical queries name in ``q``'s recording."""
    return len({(x.custom or {}).get("consultation") for t in ("reported", "exhibited")
                for x in queries_by_type.get(t, ()) if x.recording_id == q.recording_id})


def bind(row: dict, queries_by_type: dict[str, list], recordings: Optional[dict] = None):
    """``(query, base)``: the paraphrase as a Query bound to the ``n``-th benchmark query of its
    task, with the ground truth transformed as the row says; ``None`` when the benchmark has no
    query of that task, or when a clinical row names no consultation window and the bound query's
    recording holds several consultations (a session: "did the patient cough during the visit?"
    has no one answer there; the template names the consultation).  ``recordings``: recording id -> Recording, so that ``{a_edge}`` says
    'opening' / 'closing' and ``{a_end}`` 'first' / 'last' where true (``custom['n_songs']``) and
    ``{c0_clock}``-``{c1_clock}`` is the whole recording where it is one consultation."""
    from dataclasses import replace
    base_list = queries_by_type.get(row["task"]) or []
    if not base_list:
        return None
    base = base_list[int(row["n"]) % len(base_list)]
    if row["task"] in ("reported", "exhibited") and "{c0_clock}" not in row["text"] \
            and row.get("expect") != "unsupported" and _consultations(base, queries_by_type) > 1:
        return None         # "did the patient cough during the visit?" on a session of many visits: no one answer
    try:
        text = row["text"].format(**_slots(base, (recordings or {}).get(base.recording_id)))
    except KeyError as e:
        raise ValueError(f"paraphrase {row['id']}: slot {e} is not known for a {row['task']} query") from None
    gt = dict(base.ground_truth or {})
    flip = (row.get("polarity", 1) < 0) != bool(row.get("swap"))
    if "winner" in gt and flip:
        gt["winner"] = _swap(str(gt["winner"]))
    if "direction" in gt and row.get("polarity", 1) < 0:
        gt["direction"] = {"rising": "falling", "falling": "rising"}.get(gt["direction"], gt["direction"])
    if "answer" in gt and row.get("absence"):
        gt["answer"] = {"Yes": "No", "No": "Yes"}.get(gt["answer"], gt["answer"])
    q = replace(base, query_id=f"{base.query_id}.{row['id']}", text=text, ground_truth=gt)
    return q, base


def gt_index(cfg, bench_dir: Path, domain: str, recordings: dict):
    """The benchmark's ground-truth segments as an index, each space embedded by the backend
    ``extract.backends`` names for it (so the query side uses the same embedder)."""
    import numpy as np
    from harp_lib.core import audio
    from harp_lib.config import create_backend
    from harp_lib.retrieval.index import SegmentIndex
    from harp_lib.core.jsonl import read_jsonl
    from harp_lib.core.schema import Segment, resolve_under
    segs = [s for s in read_jsonl(bench_dir / "segments.jsonl", Segment)]
    backends = cfg.extract.backends
    vectors, spaces, embedders = {}, {}, {}
    for space, stage in (("text", "text_emb"), ("audio", "audio_emb"), ("domain", "domain_emb")):
        spec = backends.get(stage)
        name = spec.get(domain) if isinstance(spec, dict) else spec
        if not name:
            continue
        emb = create_backend(stage, name)
        if space == "text":
            inputs = [s.text or "" for s in segs]
        else:
            inputs = [audio.read_window(resolve_under(bench_dir, recordings[s.recording_id].audio_path), s.span, 16000)
                      for s in segs]
        vectors[space] = np.asarray(emb.embed(inputs), np.float32)
        spaces[space] = {"backend": name, "model": getattr(emb, "model_id", None)}
        embedders[space] = emb
    return SegmentIndex.from_segments(segs, vectors, spaces), embedders, segs


def plan_hit(row: dict, q, plan, gt_segments: Sequence, songs: dict, duration: Optional[float],
             point_window: float) -> Optional[bool]:
    """Did the plan search where the answer is, with the row's tools?  ``None`` for rows with no
    supported task (nothing to plan)."""
    from harp_lib.evaluate.hitrate import plan_windows
    if row.get("expect") == "unsupported":
        return None
    if any("fell back" in e for e in plan.errors):
        return False
    used = {t for ps in plan.sets for t in ps.tools_used()}
    if not set(row["tools"]) <= used:
        return False
    wins = [w for w in plan_windows(plan, duration=duration, songs=songs, point_window=point_window)]
    if row["task"] in ("time", "position"):
        a, b = (q.custom.get("song_a") or {}).get("index"), (q.custom.get("song_b") or {}).get("index")
        want = [songs.get(b), songs.get(a)] if row.get("swap") else [songs.get(a), songs.get(b)]
        got = wins[:2]
        return len(wins) == 2 and all(w is not None and g is not None and w.to_tuple() == g.to_tuple()
                                      for w, g in zip(got, want))
    ev = [s for s in gt_segments if s.id in set(q.gt_segment_ids)]
    return all(any(w is not None and w.overlaps(s.span) for w in wins) for s in ev)


def _agent_kind(agent: str) -> tuple[str, str]:
    if "+" in agent:
        p, a = agent.split("+", 1)
        return p, a
    return agent, agent


def subset(rows: Sequence[dict], per_task: int) -> list[dict]:
    """A fixed stratified subset: the first ``per_task`` rows (by id) of every task, and as many
    of the rows no task fits (``expect: unsupported``), in id order.

    >>> rows = [{"id": f"p{i:03d}", "task": t} for i, t in enumerate(["state"] * 3 + ["time"] * 2)]
    >>> [r["id"] for r in subset(rows + [{"id": "p099", "task": "state", "expect": "unsupported"}], 1)]
    ['p000', 'p003', 'p099']
    """
    if per_task < 1:
        raise ValueError(f"--per-task must be >= 1, got {per_task}")
    seen: dict[str, int] = defaultdict(int)
    out = []
    for r in sorted(rows, key=lambda r: r["id"]):
        key = "unsupported" if r.get("expect") == "unsupported" else r["task"]
        if seen[key] < per_task:
            seen[key] += 1
            out.append(r)
    return out


def _domain_index(cfg, bench: Path, domain: str, index: str, recs: dict):
    """``(index, embedders, gt segments)`` of one domain: ground-truth segments embedded offline
    (``gt``) or the extracted index under ``paths.index`` (``extracted``)."""
    from harp_lib.retrieval.index import SegmentIndex
    from harp_lib.core.jsonl import read_jsonl
    from harp_lib.core.schema import Segment
    if index == "gt":
        return gt_index(cfg, bench, domain, recs)
    if index == "extracted":
        idx_dir = cfg.path("paths.index") / domain
        if not idx_dir.exists():
            raise FileNotFoundError(f"{idx_dir} is missing: run `harp extract --domain {domain}` and "
                                    f"`harp index --domain {domain}` first, or use --index gt")
        return SegmentIndex.load(idx_dir), {}, read_jsonl(bench / "segments.jsonl", Segment)
    raise ValueError(f"--index must be gt or extracted, got {index!r}")


def _run_one(ag, judge, r: dict, q, rec, bench: Path, gt_rec: list, ix, point_window: float) -> dict:
    """One question through the agent: plan hit, answer, verdict."""
    from harp_lib.core.timespan import song_spans
    t0 = time.perf_counter()
    p = ag(q, rec, bench, gt_rec)
    try:
        songs = song_spans(ix.segments(q.recording_id))
    except KeyError:
        songs = {}
    hit = plan_hit(r, q, p.plan, gt_rec, songs, rec.duration, point_window)
    if r.get("expect") == "unsupported":
        ok, why = int(p.answer.strip().lower().startswith("unsupported")), "expects 'unsupported question'"
    else:
        v = judge.answer_verdict(q, p.answer or "")
        ok, why = v.value, v.reason
    return {"text": q.text, "plan_hit": hit, "answer": p.answer, "correct": int(ok), "verdict": why,
            "error": p.error, "sec": round(time.perf_counter() - t0, 3),
            # what was planned (why a plan missed): each set's window phrase and tools
            "plan": [{"localize": ps.localize, "tools": sorted(ps.tools_used())} for ps in p.plan.sets]}


def _template_row(r: dict) -> dict:
    """The row as its bound query asks it in template wording: no polarity / swap / absence."""
    return {k: v for k, v in r.items() if k not in ("polarity", "swap", "absence")}


def evaluate(cfg, bench_root: Path, *, agent: str = "rule", setup: str = "A3", index: str = "gt",
             rows: Optional[list[dict]] = None, limit: Optional[int] = None, progress: bool = False,
             client=None, template: bool = False) -> list[dict]:
    """Run every paraphrase; one result dict per row (plan hit, answer, verdict, timings).

    ``template``: also run each row's bound benchmark query in its template wording (the
    benchmark's question text and ground truth), as ``template`` in the row's result.
    ``client``: the LLM client of an ``llm`` planner / answerer (default: built from ``llm:``).
    """
    from harp_lib.agent.context import agent_params
    from harp_lib.agent.runner import Agent
    from harp_lib.retrieval.tools import QueryEncoder
    from harp_lib.evaluate.rule_judge import RuleJudge
    from harp_lib.core.schema import QUERY_TYPE_DOMAIN
    rows = load_paraphrases() if rows is None else rows
    if limit is not None:
        rows = rows[: int(limit)]
    planner, answerer = _agent_kind(agent)
    judge, params = RuleJudge(), agent_params(cfg)
    pw = float(params.get("point_window_sec", 30.0))
    out: list[dict] = []
    by_domain: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        by_domain[QUERY_TYPE_DOMAIN[r["task"]]].append(r)
    for domain, drows in by_domain.items():
        bench = Path(bench_root) / domain
        recs, by_type = _read_bench(bench)
        ix, embedders, gt = _domain_index(cfg, bench, domain, index, recs)
        ag = Agent(ix, setup, cfg, domain=domain, planner=planner, answerer=answerer, params=params,
                   encoder=QueryEncoder(ix.spaces, embedders), client=client)
        out += _run_domain(ag, judge, drows, domain, bench, recs, by_type, gt, ix, pw,
                           template=template, progress=progress)
    return out


def _read_bench(bench: Path) -> tuple[dict, dict]:
    """A domain's recordings by id and its queries by type (in query-id order); a missing file raises."""
    from harp_lib.core.jsonl import read_jsonl
    from harp_lib.core.schema import Query, Recording
    for f in ("recordings.jsonl", "queries.jsonl", "segments.jsonl"):
        if not (bench / f).exists():
            raise FileNotFoundError(f"{bench / f} is missing: build the benchmark first (harp synth) "
                                    f"or pass --bench <folder holding emotion/ clinical/ song/>")
    recs = {x.id: x for x in read_jsonl(bench / "recordings.jsonl", Recording)}
    by_type: dict[str, list] = defaultdict(list)
    for x in sorted(read_jsonl(bench / "queries.jsonl", Query), key=lambda x: x.query_id):
        by_type[x.query_type].append(x)
    return recs, by_type


def _run_domain(ag, judge, drows: list[dict], domain: str, bench: Path, recs: dict, by_type: dict, gt: list,
                ix, pw: float, *, template: bool, progress: bool) -> list[dict]:
    """One domain's rows, bound and run through the agent (and in template wording); unbound rows skipped."""
    out: list[dict] = []
    gt_by_rec: dict[str, list] = defaultdict(list)
    for s in gt:
        gt_by_rec[s.recording_id].append(s)
    done: dict[str, dict] = {}                       # template runs by base query id
    for r in drows:
        b = bind(r, by_type, recs)
        if b is None:
            out.append({"id": r["id"], "task": r["task"], "domain": domain, "split": r.get("split"),
                        "skipped": "no query of this task, or no consultation window on a session"})
            continue
        q, base = b
        rec, g = recs[q.recording_id], gt_by_rec[q.recording_id]
        res = {"id": r["id"], "task": r["task"], "domain": domain, "base": base.query_id,
               "split": r.get("split"), "expect": r.get("expect", "answer"),
               **_run_one(ag, judge, r, q, rec, bench, g, ix, pw)}
        if template and r.get("expect") != "unsupported":
            if base.query_id not in done:
                done[base.query_id] = _run_one(ag, judge, _template_row(r), base, rec, bench, g, ix, pw)
            res["template"] = {k: done[base.query_id][k] for k in ("plan_hit", "correct", "answer")}
        out.append(res)
        if progress:
            print(f"{r['id']} {r['task']:<11} plan={res['plan_hit']} ok={res['correct']} {res['answer'][:40]!r}",
                  flush=True)
    return out


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
            from harp_lib.llm import make_client
            from harp_lib.llm.local import offline_options
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
