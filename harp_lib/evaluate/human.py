"""The human listening study (HARP_REFERENCE §5.8, Figure 4): annotation pages and their scoring.

:func:`build_page` writes ONE self-contained HTML page (audio embedded as base64 FLAC, no
network): a player per recording with a seek bar (minute ticks), speed control, ±5 s arrow-key
jumps and timestamped notes, then one block per question with the answer input (emotion
multi-select, rising/falling/none, A/B, A/B/tie, Yes/No, or an ``m:ss`` time), "Are you sure?"
and difficulty 0-4 (0 = very simple and effortless, 4 = too difficult or impossible).  Submit
downloads ``<page_id>.json``::

    {"page_id", "domain", "recording_ids", "submitted_at", "notes": [{"recording_id", "t", "text"}],
     "answers": [{"query_id", "recording_id", "query_type", "choice", "sure", "difficulty"}]}

:func:`score_answers` reads such files: accuracy, confidence (share "sure") and mean difficulty
per query type.  Locate answers are correct within ``[t0 - tol, t1 + tol]`` with the one
tolerance ``evaluate.locate_tolerance_sec`` (the paper's human scorer used ±5 s, its judges ±3 s;
here both use the same constant).  No ground truth is put in the page.

CLI::

    harp human build --domain emotion [--recording ID ...]   # -> data/human/pages/*.html
    harp human score [--answers results/human/answers]      # -> results/tables/human_study.*

>>> from harp_lib.core.schema import Query
>>> q = Query("q", "emotion", "r", "locate", "?", {"t0": 60.0, "t1": 64.0, "emotion": "Sad"})
>>> is_correct(q, "1:06", tol=3.0), is_correct(q, "1:08", tol=3.0), is_correct(q, None, tol=3.0)
(True, False, None)
"""
from __future__ import annotations

import base64
import json
import sys
import tempfile
from importlib import resources
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Sequence

import numpy as np

from harp_lib import tasks
from harp_lib.config import Config
from harp_lib.core import audio
from harp_lib.core.atomic import write_text
from harp_lib.core.jsonl import read_jsonl
from harp_lib.core.schema import Query, Recording, resolve_under
from harp_lib.evaluate.store import UnknownQueryError, benchmark_dir, load_benchmark, results_dir
from harp_lib.core.errors import HarpError
from harp_lib.evaluate.tables import write_table

__all__ = ["select_queries", "page_data", "build_page", "is_correct",
           "load_answer_files", "answer_rows", "score_answers", "NoHumanAnswers", "all_queries"]

class NoHumanAnswers(HarpError, FileNotFoundError):
    """No human answer files exist: the study has not been run (nothing is invented)."""


def _data_url(path: Path, sr: int) -> str:
    wave = audio.load(path, sr)
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "a.flac"
        audio.write(p, np.asarray(wave, np.float32), sr)
        return "data:audio/flac;base64," + base64.b64encode(p.read_bytes()).decode("ascii")


def select_queries(queries: Iterable[Query], *, max_per_type: int, seed: int = 0) -> list[Query]:
    """Up to ``max_per_type`` queries of each type (seeded, then in Table II type order and id order).

    >>> from harp_lib.core.schema import Query
    >>> qs = [Query(f"q{i}", "clinical", "r", "reported", "?", {"answer": "No"}) for i in range(5)]
    >>> [q.query_id for q in select_queries(qs, max_per_type=2, seed=0)]
    ['q3', 'q4']
    """
    by_type: dict[str, list[Query]] = {}
    for q in sorted(queries, key=lambda q: q.query_id):
        by_type.setdefault(q.query_type, []).append(q)
    rng = np.random.default_rng(seed)
    out = []
    for t in tasks.names():
        qs = by_type.get(t, [])
        if len(qs) > max_per_type:
            idx = sorted(rng.choice(len(qs), size=max_per_type, replace=False).tolist())
            qs = [qs[i] for i in idx]
        out.extend(qs)
    return out


def page_data(queries: Sequence[Query], recordings: Mapping[str, Recording], bench_root: Path, *,
              page_id: str, title: str, sr: int = 16000) -> dict:
    """The JSON the page is built from (audio as data URLs; no ground truth)."""
    rec_ids = list(dict.fromkeys(q.recording_id for q in queries))
    recs = []
    for rid in rec_ids:
        if rid not in recordings:
            raise KeyError(f"recording {rid!r} (used by query "
                           f"{next(q.query_id for q in queries if q.recording_id == rid)}) is not in "
                           f"{bench_root / 'recordings.jsonl'}")
        r = recordings[rid]
        recs.append({"id": rid, "label": f"Recording {rid}", "duration": r.duration,
                     "audio": _data_url(resolve_under(bench_root, r.audio_path), sr)})
    questions = []
    for q in queries:
        kind, options = tasks.get(q.query_type).human_form   # answer input; options follow the
        # paper's query_options.json (change: Goes up / Goes down / Stays the same; song: First / Second / Tie)
        refs = {role: _data_url(resolve_under(bench_root, rel), sr) for role, rel in sorted(q.references.items())}
        questions.append({"query_id": q.query_id, "recording_id": q.recording_id, "query_type": q.query_type,
                          "text": q.text, "kind": kind, "options": options, "refs": refs})
    domain = queries[0].domain if queries else ""
    return {"page_id": page_id, "title": title, "domain": domain, "recordings": recs, "questions": questions}


def build_page(queries: Sequence[Query], recordings: Mapping[str, Recording], bench_root: Path,
               out_path: Path, *, page_id: Optional[str] = None, title: Optional[str] = None,
               sr: int = 16000) -> Path:
    """Write the self-contained annotation page for ``queries``; returns its path."""
    if not queries:
        raise ValueError("no queries for the page")
    out_path = Path(out_path)
    page_id = page_id or out_path.stem
    data = page_data(queries, recordings, Path(bench_root), page_id=page_id,
                     title=title or f"HARP listening study: {queries[0].domain} ({page_id})", sr=sr)
    tpl = resources.files("harp_lib.evaluate").joinpath("human_page.html").read_text(encoding="utf-8")
    blob = json.dumps(data, ensure_ascii=False).replace("</", "<\\/")
    write_text(out_path, tpl.replace("/*HARP_DATA*/", blob))
    return out_path


# ---------------------------------------------------------------------------------------
# scoring
# ---------------------------------------------------------------------------------------
def is_correct(query: Query, choice: Any, *, tol: float) -> Optional[bool]:
    """Is a human ``choice`` right?  ``None`` when unanswered."""
    if choice is None or choice == "" or choice == []:
        return None
    return tasks.get(query.query_type).human_correct(query, choice, tol=tol)


def load_answer_files(source: Path | Sequence[Path]) -> list[tuple[Path, dict]]:
    """Read answer files (a folder of ``*.json`` or a list of paths); checks their keys."""
    if isinstance(source, (str, Path)):
        src = Path(source)
        files = sorted(src.glob("*.json")) if src.is_dir() else ([src] if src.exists() else [])
    else:
        files = [Path(p) for p in source]
    if not files:
        raise NoHumanAnswers(f"no human answer files in {source} (none were collected); run the "
                             f"study with `harp human build` pages and put the downloaded *.json there")
    out = []
    for f in files:
        try:
            doc = json.loads(Path(f).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as e:
            raise ValueError(f"{f}: not a readable answer file ({e})") from None
        if not isinstance(doc, dict) or not isinstance(doc.get("answers"), list):
            raise ValueError(f"{f}: an answer file needs an 'answers' list (as the page downloads it)")
        for i, a in enumerate(doc["answers"]):
            missing = {"query_id", "choice", "sure", "difficulty"} - set(a)
            if missing:
                raise ValueError(f"{f}: answer {i} lacks {sorted(missing)}")
        out.append((Path(f), doc))
    return out


def answer_rows(docs: Sequence[tuple[Path, dict]], queries: Mapping[str, Query], *, tol: float) -> list[dict]:
    """One row per answer: file, query id/type, correct (None if unanswered), sure, difficulty."""
    rows = []
    for f, doc in docs:
        for a in doc["answers"]:
            q = queries.get(a["query_id"])
            if q is None:
                raise UnknownQueryError(f"{f}: answer for query_id {a['query_id']!r}, which is not in "
                                        f"the benchmark; was the page built from another benchmark?")
            d = a.get("difficulty")
            if d is not None and not (isinstance(d, (int, float)) and 0 <= d <= 4):
                raise ValueError(f"{f}: difficulty of {a['query_id']} must be 0-4, got {d!r}")
            rows.append({"file": f.name, "query_id": q.query_id, "query_type": q.query_type,
                         "correct": is_correct(q, a.get("choice"), tol=tol),
                         "sure": a.get("sure"), "difficulty": d})
    return rows


def score_answers(docs: Sequence[tuple[Path, dict]], queries: Mapping[str, Query], *, tol: float):
    """Per query type (+ ``Avg`` over types): answers, skipped, accuracy, confidence, mean
    difficulty and inverted difficulty (4 - d), as proportions / 0-4 values."""
    import pandas as pd  # heavy: pandas (~0.4 s)
    rows = answer_rows(docs, queries, tol=tol)
    out = []
    for task in tasks.all_tasks():
        t = task.name
        rs = [r for r in rows if r["query_type"] == t]
        if not rs:
            continue
        ans = [r for r in rs if r["correct"] is not None]
        sure = [r["sure"] for r in rs if r["sure"] is not None]
        diff = [float(r["difficulty"]) for r in rs if r["difficulty"] is not None]
        md = float(np.mean(diff)) if diff else float("nan")
        out.append({"query_type": t, "column": task.column, "n_answers": len(ans),
                    "n_skipped": len(rs) - len(ans),
                    "accuracy": float(np.mean([r["correct"] for r in ans])) if ans else float("nan"),
                    "confidence": float(np.mean(sure)) if sure else float("nan"),
                    "mean_difficulty": md, "inverted_difficulty": 4.0 - md})
    df = pd.DataFrame(out)
    if len(df):
        avg = {"query_type": "Avg", "column": "Avg", "n_answers": int(df["n_answers"].sum()),
               "n_skipped": int(df["n_skipped"].sum())}
        for c in ("accuracy", "confidence", "mean_difficulty", "inverted_difficulty"):
            avg[c] = float(df[c].mean())
        df = pd.concat([df, pd.DataFrame([avg])], ignore_index=True)
    return df


def all_queries(cfg: Config, domains: Sequence[str]) -> dict[str, Query]:
    """Queries of every domain whose benchmark exists, by id (for scoring answer files)."""
    out: dict[str, Query] = {}
    for d in domains:
        if (benchmark_dir(cfg, d) / "queries.jsonl").exists():
            out.update(load_benchmark(d, cfg).queries)
    return out


_all_queries = all_queries   # old name, used by harp_lib.stages.figures


def add_arguments(ap) -> None:
    """``harp human build|score`` options (shared ones: :mod:`harp_lib.app.cli`)."""
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="write annotation pages (one per recording)")
    b.add_argument("--domain", required=True)
    b.add_argument("--recording", action="append", help="recording id(s) (default: every recording with queries)")
    b.add_argument("--max-per-type", type=int, help="default: evaluate.human.max_per_type")
    b.add_argument("--out", help="default: evaluate.human.pages_dir")
    s = sub.add_parser("score", help="score downloaded answer files")
    s.add_argument("--answers", help="folder or file (default: evaluate.human.answers_dir)")


def run(cfg: Config, a) -> int:
    h = cfg.evaluate.human
    if a.cmd == "build":
        bench = load_benchmark(a.domain, cfg)
        recs = {r.id: r for r in read_jsonl(bench.root / "recordings.jsonl", Recording)}
        rec_ids = a.recording or sorted({q.recording_id for q in bench.queries.values()})
        out_dir = Path(a.out) if a.out else cfg.path("evaluate.human.pages_dir")
        for rid in rec_ids:
            qs = [q for q in bench.queries.values() if q.recording_id == rid]
            if not qs:
                print(f"harp human: recording {rid!r} has no queries in {bench.root}", file=sys.stderr)
                return 2
            qs = select_queries(qs, max_per_type=a.max_per_type or int(h["max_per_type"]), seed=int(cfg.seed))
            p = build_page(qs, recs, bench.root, out_dir / f"{a.domain}_{rid}.html", sr=int(h["audio_sr"]))
            print(f"wrote {p} ({len(qs)} questions, {p.stat().st_size / 1e6:.1f} MB)")
        return 0
    src = Path(a.answers) if a.answers else cfg.path("evaluate.human.answers_dir")
    docs = load_answer_files(src)      # NoHumanAnswers: one line from the CLI, exit 2
    queries = all_queries(cfg, cfg.get("domains"))
    df = score_answers(docs, queries, tol=float(cfg.get("evaluate.locate_tolerance_sec")))
    files = write_table(df, "human_study", results_dir(cfg, "tables"),
                        f"Human study: {len(docs)} answer file(s), accuracy, confidence (share sure) and "
                        f"difficulty (0-4) per query type; locate within ±{cfg.get('evaluate.locate_tolerance_sec')} s "
                        f"of the ground-truth window.",
                        index=False, float_format="%.3f")
    print(df.to_string(index=False))
    print("wrote " + ", ".join(map(str, files)))
    return 0
