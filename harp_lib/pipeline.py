"""One call per pipeline stage, for the notebooks (and so for ``dvc repro``).

Each notebook under ``notebooks/`` is narrative + one of these calls + plots.  The functions
here only glue the stage modules together and make the files that ``dvc.yaml`` tracks
byte-deterministic (so a second ``dvc repro``, or a fresh clone, leaves ``dvc.lock`` and
``results/`` unchanged):

* wall-clock timings never go into DVC outputs, the folders stages depend on, or ``results/``:
  they are written under ``<paths.data>/timings/`` (not tracked);
* metrics JSON is written with sorted keys and rounded floats; figures without the
  "Software" PNG text chunk.

>>> cfg = config("ci")
>>> cfg.profile, cfg.get("paths.results").startswith("data/ci")
('ci', True)
>>> sorted(deterministic_metrics({"der": 0.123456, "rtf": {"vad": 0.1}, "stage_sec": {}}))
['der']
"""
from __future__ import annotations

import contextlib
import json
import math
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

from .config import Config, get_setup, load_config
from .results_io import TIMING_KEYS, deterministic_metrics, timings_path, write_json  # noqa: F401
from .results_io import results_path as _results
from .paths import DataPaths

__all__ = ["config", "write_json", "deterministic_metrics", "build_benchmark", "benchmark_summary",
           "listening_examples", "timings_path", "extract_stage", "extract_metrics", "index_stage", "answer_stage", "judge_stage",
           "trace_query", "pick_queries", "write_tables", "save_figure",
           "write_figures", "human_figure", "domain_setup_scores", "ingest", "ask"]

# ----------------------------------------------------------------------------- helpers
def config(profile: Optional[str] = None, overrides: Optional[Mapping] = None) -> Config:
    """params.yaml with the profile overlay: ``profile`` > ``$HARP_PROFILE`` > params ``profile``.

    ``overrides`` (a nested dict, e.g. ``{"agent": {"top_k": 1}}``) is merged last; the sweep
    uses it to redirect outputs into a scratch folder.
    """
    from .extract.paper_models import offline_by_default
    offline_by_default()           # HF_HUB_OFFLINE=1 unless the user set it (messages say who did)
    from .progress import quiet_library_bars
    quiet_library_bars()           # no frozen "Loading weights 0%" widgets in executed notebooks
    return load_config(profile=profile or None, overrides=overrides or None)


# ----------------------------------------------------------------------------- benchmark
def build_benchmark(cfg: Config, *, progress: bool = True) -> dict:
    """Build ``paths.benchmark``: the generator (``benchmark.source: synth``) or the paper corpora
    (``corpora``: ``harp prepare all`` from ``paths.raw``).  Writes ``results/metrics/benchmark.json``
    (counts and audio minutes) and returns it.  The generator's ``timings.json`` is moved to
    ``<paths.data>/timings/benchmark.json`` so that the folder itself is reproducible.

    Usage: ``build_benchmark(config("ci"))["profile"]`` -> ``'ci'`` (the 00_benchmark notebook).
    """
    source = cfg.benchmark.source
    out = cfg.path("paths.benchmark")
    if source == "synth":
        from .synth import generate
        generate(cfg.get("benchmark.profile"), int(cfg.get("benchmark.seed")), out,
                 domains=list(cfg.get("domains")), progress=progress)
        # generation timings are machine-dependent: keep them out of the (DVC-tracked) folder
        if (out / "timings.json").exists():
            dst = timings_path(cfg, "benchmark.json")
            dst.parent.mkdir(parents=True, exist_ok=True)
            (out / "timings.json").replace(dst)
    elif source == "corpora":
        from .datasets.cli import main as prepare
        args = ["all", "--profile", cfg.profile, "--out", str(out)] + ([] if progress else ["--quiet"])
        if prepare(args) != 0:
            raise RuntimeError(f"`harp prepare all --profile {cfg.profile}` failed; run "
                               f"`harp prepare --check --profile {cfg.profile}` to see which raw files are missing")
    else:
        raise ValueError(f"params.yaml benchmark.source is {source!r}; use 'synth' or 'corpora'")
    summary = benchmark_summary(cfg)
    write_json(_results(cfg, "metrics", "benchmark.json"), summary)
    return summary


def benchmark_summary(cfg: Config) -> dict:
    """Recordings, audio minutes and queries per type of each domain of ``paths.benchmark``."""
    from .schema import Query, Recording, read_jsonl
    dp = DataPaths(cfg)
    out: dict = {"profile": cfg.profile, "source": cfg.benchmark.source, "domains": {}}
    for d in cfg.get("domains"):
        recs = read_jsonl(dp.recordings_manifest(d), Recording)
        qs = read_jsonl(dp.queries_manifest(d), Query)
        types: dict[str, int] = {}
        for q in qs:
            types[q.query_type] = types.get(q.query_type, 0) + 1
        out["domains"][d] = {"recordings": len(recs), "audio_minutes": round(sum(r.duration for r in recs) / 60, 3),
                             "queries": len(qs), "query_types": dict(sorted(types.items()))}
    out["total_queries"] = sum(v["queries"] for v in out["domains"].values())
    out["total_audio_minutes"] = round(sum(v["audio_minutes"] for v in out["domains"].values()), 3)
    return out


@dataclass(frozen=True)
class Listening:
    """One query with a short excerpt of its recording around the evidence (for an Audio player)."""
    domain: str
    query_id: str
    question: str
    answer: str
    start: float
    end: float
    wave: Any
    sr: int


def listening_examples(cfg: Config, *, seconds: float = 12.0, sr: int = 16000) -> list[Listening]:
    """The first query of each domain and ``seconds`` of audio starting at its first GT segment."""
    from . import audio
    from .schema import Query, Recording, Segment, read_jsonl, resolve_under
    dp = DataPaths(cfg)
    out = []
    for d in cfg.get("domains"):
        qs = read_jsonl(dp.queries_manifest(d), Query)
        recs = {r.id: r for r in read_jsonl(dp.recordings_manifest(d), Recording)}
        segs = {s.id: s for s in read_jsonl(dp.segments_manifest(d), Segment)}
        q = next((q for q in qs if q.gt_segment_ids), qs[0])
        rec = recs[q.recording_id]
        t0 = segs[q.gt_segment_ids[0]].start if q.gt_segment_ids else float(q.time_ref or 0.0)
        t0 = max(0.0, min(t0, rec.duration - seconds))
        t1 = min(rec.duration, t0 + seconds)
        wave = audio.load(resolve_under(dp.benchmark(d), rec.audio_path), sr=sr, start=t0, end=t1)
        gt = q.ground_truth
        ans = next((str(gt[k]) for k in ("emotion", "direction", "winner", "answer") if k in gt), json.dumps(gt))
        out.append(Listening(d, q.query_id, q.text, ans, round(t0, 2), round(t1, 2), wave, sr))
    return out


# ----------------------------------------------------------------------------- extract / index
def extract_stage(cfg: Config, domain: str, *, force: bool = False, workers: Optional[int] = None,
                  progress: bool = True) -> dict:
    """Extract one domain and score it against ground truth.

    Writes ``paths.extract/<domain>/`` (segments, vectors, spaces.json; stage-1 cache under
    ``stage1/``), ``results/metrics/extract_<domain>.json`` without timings, and the full report
    with timings and real-time factors to ``<paths.data>/timings/extract_<domain>.json``.
    Returns the full metrics dict.
    """
    from .extract.pipeline import extract_domain
    w = int(cfg.extract.workers) if workers is None else int(workers)
    rep = extract_domain(cfg, domain, force=force, workers=w, progress=progress)
    return extract_metrics(cfg, domain, rep)


def extract_metrics(cfg: Config, domain: str, run_report: Optional[dict] = None) -> dict:
    """Score ``paths.extract/<domain>`` against ground truth (:func:`harp_lib.extract.quality.extract_metrics`):
    the full report (with timings) goes to ``<paths.data>/timings/extract_<domain>.json`` and the
    timing-free metrics (a DVC out) to ``results/metrics/extract_<domain>.json``."""
    from .extract.quality import extract_metrics as write_extract_metrics
    return write_extract_metrics(cfg, domain, run_report)


def index_stage(cfg: Config, domain: str, *, progress: bool = True) -> dict:
    """Build ``paths.index/<domain>`` and return a summary (segments, recordings, spaces)."""
    from .index import build_index
    ix = build_index(domain, cfg, progress=progress)
    return {"domain": domain, "segments": len(ix), "recordings": len(ix.recording_ids()),
            "spaces": {k: {"backend": v.get("backend"), "model": v.get("model"), "dim": v.get("dim")}
                       for k, v in sorted(ix.spaces.items())}}


# ----------------------------------------------------------------------------- agent
def answer_stage(cfg: Config, domain: str, setup: str, *, limit: Optional[int] = None,
                 progress: bool = True) -> list:
    """Run setup ``setup`` (or ``"all"`` setups of params.yaml, in ``agent.workers`` processes:
    :func:`_answer_parallel`) on every query of ``domain``, from scratch.

    Predictions go to ``paths.predictions/<domain>/<setup>.jsonl`` with their ``timings``
    moved to ``<paths.data>/timings/predictions/<domain>/<setup>.json`` (so the tracked file,
    and the folders later stages depend on, are reproducible).
    """
    from .agent.runner import run_setup
    if setup == "all":
        setups = list(cfg.get("setups"))
        workers = min(int(cfg.agent.workers), len(setups))
        if workers <= 1:
            return [p for s in setups for p in answer_stage(cfg, domain, s, limit=limit, progress=progress)]
        return _answer_parallel(cfg, domain, setups, limit, progress, workers)
    return _write_predictions(cfg, domain, setup,
                              run_setup(cfg, domain, setup, limit=limit, resume=False, progress=progress))


def _write_predictions(cfg: Config, domain: str, setup: str, preds: Sequence) -> list:
    """``preds`` to the setup's prediction file, their ``timings`` moved to the timings file."""
    from .agent.runner import prediction_path
    from .schema import write_jsonl
    write_json(timings_path(cfg, "predictions", domain, f"{get_setup(setup).name}.json"),
               {p.query_id: p.timings for p in preds}, digits=3)
    preds = [replace(p, timings={}) for p in preds]
    write_jsonl(prediction_path(cfg, domain, setup), preds)
    return preds


def _answer_parallel(cfg: Config, domain: str, setups: Sequence[str], limit: Optional[int], progress: bool,
                     workers: int) -> list:
    """Every setup of ``setups`` in ``workers`` processes; the same files as one process.

    Setups with the same retrieval form a group that one process answers query by query (A3/A4/A5
    share plans and clips, A6/A7 the oracle windows: the clips one setup heard are reused from
    the per-process cache of :mod:`harp_lib.agent.references`).  A group that listens to clips
    (the costly A4-A7) is split into ``workers`` parts of the queries (every ``workers``-th
    query), so both cores work until the end; parts are written to a scratch folder and
    merged in query order.  No query's answer depends on another's, so the files are the bytes
    a one-process run writes (tests/golden/test_parallel_setups.py)."""
    import multiprocessing as mp
    import tempfile
    from concurrent.futures import ProcessPoolExecutor

    from .agent.runner import prediction_path
    from .locks import pool_worker_init, stage_lock
    from .schema import Prediction, Query, check_own_jsonl, read_jsonl
    qfile = DataPaths(cfg).benchmark(domain) / "queries.jsonl"
    queries = [q for q in read_jsonl(qfile, Query) if q.domain == domain] if qfile.exists() else []
    if limit is not None:
        queries = queries[: int(limit)]
    ids = [q.query_id for q in queries]
    groups: dict[str, list[str]] = {}
    for s in setups:
        groups.setdefault(get_setup(s).retrieval, []).append(s)
    tasks = []
    for g in groups.values():
        listens = any(get_setup(s).attach_audio for s in g)
        n = workers if listens and len(ids) >= 2 * workers else 1
        for k in range(n):
            tasks.append((listens, g, queries[k::n]))     # each worker gets its parsed queries
    tasks.sort(key=lambda t: (not t[0], -len(t[1]) * len(t[2])))   # listening parts first, big first
    by_setup: dict[str, dict[str, Any]] = {s: {} for s in setups}
    with contextlib.ExitStack() as held, tempfile.TemporaryDirectory(prefix="harp_infer_") as tmp:
        for s in setups:                 # the locks a one-process run takes on each file
            path = prediction_path(cfg, domain, s)
            check_own_jsonl(path, Prediction)
            path.parent.mkdir(parents=True, exist_ok=True)
            held.enter_context(stage_lock(path.parent, f"infer-{get_setup(s).name}"))
        with ProcessPoolExecutor(min(workers, len(tasks)), mp_context=mp.get_context("spawn"),
                                 initializer=pool_worker_init) as ex:
            futs = [ex.submit(_answer_part, cfg, domain, g, part, Path(tmp) / f"part{i}", progress)
                    for i, (_, g, part) in enumerate(tasks)]
            try:
                for f in futs:
                    for s, preds in f.result().items():
                        by_setup[s].update({p.query_id: p for p in preds})
            except BaseException:        # one part failed: start nothing more, report it
                ex.shutdown(wait=True, cancel_futures=True)
                raise
        return [p for s in setups
                for p in _write_predictions(cfg, domain, s, [by_setup[s][q] for q in ids if q in by_setup[s]])]


def _answer_part(cfg: Config, domain: str, setups: Sequence[str], queries: Sequence, folder: Path,
                 progress: bool) -> dict:
    """One worker's share: ``setups`` on ``queries`` (parsed once by the caller), written under the
    scratch ``folder``."""
    from .agent.runner import run_setup
    folder.mkdir(parents=True, exist_ok=True)
    return {s: run_setup(cfg, domain, s, queries=queries, out_path=folder / f"{get_setup(s).name}.jsonl",
                         resume=False, progress=progress) for s in setups}


def judge_stage(cfg: Config, domain: str, setup: str = "all", *, judges: Optional[Sequence[str]] = None) -> list:
    """Judge and score ``domain`` for one setup (or ``"all"`` of params ``setups``) with every judge
    of ``evaluate.judges`` (from scratch); returns the scores."""
    from .evaluate.judge import run_judge
    from .evaluate.scoring import run_score
    from .evaluate.store import load_benchmark
    from .schema import Score, read_jsonl
    bench = load_benchmark(domain, cfg)
    setups = list(cfg.get("setups")) if setup == "all" else [setup]
    scores = []
    for s in (get_setup(x).name for x in setups):
        for j in judges or cfg.get("evaluate.judges"):
            run_judge(domain, s, j, cfg, resume=False, bench=bench)
            scores += read_jsonl(run_score(domain, s, j, cfg, bench=bench), Score)
    return scores


def domain_setup_scores(scores: Sequence) -> "Any":
    """Per judge, setup and query type: n, answer / rationale accuracy and mean hit rates (percent)."""
    import pandas as pd
    rows = []
    for (judge, setup, qt), grp in sorted(_group(scores, lambda s: (s.judge, s.setup, s.query_type)).items()):
        def mean(vals):
            v = [x for x in vals if x is not None]
            return 100.0 * sum(v) / len(v) if v else float("nan")
        rows.append({"judge": judge, "setup": setup, "query_type": qt, "n": len(grp),
                     "answer_%": mean([s.answer for s in grp]), "rationale_%": mean([s.rationale for s in grp]),
                     "plan_hit_%": mean([s.plan_hit_rate for s in grp]),
                     "retrieval_hit_id_%": mean([s.retrieval_hit_rate_id for s in grp])})
    return pd.DataFrame(rows)


def _group(items, key) -> dict:
    out: dict = {}
    for it in items:
        out.setdefault(key(it), []).append(it)
    return out


def pick_queries(cfg: Config, domain: str, n: int = 1) -> list:
    """The first query of each type (round robin) of ``domain``, ``n`` in all, sorted by id."""
    from .schema import Query, read_jsonl
    qs = read_jsonl(DataPaths(cfg).queries_manifest(domain), Query)
    by_type = _group(sorted(qs, key=lambda q: q.query_id), lambda q: q.query_type)
    out, i = [], 0
    while len(out) < n and any(i < len(v) for v in by_type.values()):
        out += [v[i] for _, v in sorted(by_type.items()) if i < len(v)]
        i += 1
    return out[:n]


def trace_query(cfg: Config, domain: str, query_id: str, setup: str = "A5", *, judge: Optional[str] = None,
                index=None):
    """Run one query of ``domain`` step by step with the same planner, tools and answerer as
    ``harp infer``: :func:`harp_lib.viz.trace.trace_query` (the one trace) on the benchmark and
    index of ``cfg``, plus the query's :class:`~harp_lib.schema.Score` in ``.score``.

    Nothing is written; the judge (default ``evaluate.table_judge``) grades the answer in memory.
    Returns a :class:`harp_lib.viz.trace.QueryTrace` (``plan``, ``plan_windows``, ``tool_hits``,
    ``hits_table()``, ``evidence``, ``evidence_text``, ``answer``, ``rationale``, ``judgement``,
    ``score``, ``gt_segments``).
    """
    from .evaluate.scoring import score_predictions
    from .evaluate.store import load_benchmark
    from .index import SegmentIndex
    from .schema import Recording, read_jsonl
    from .viz.trace import trace_query as trace_one
    bench = load_benchmark(domain, cfg)
    q = bench.query(query_id)
    recs = {r.id: r for r in read_jsonl(bench.root / "recordings.jsonl", Recording)}
    index = index or SegmentIndex.load(DataPaths(cfg).index(domain))
    jn = judge or cfg.evaluate.table_judge
    tr = trace_one(q, index, setup, cfg, recording=recs[q.recording_id], bench_dir=bench.root,
                   gt_segments=bench.recording_segments(q.recording_id), judges=(jn,), with_clips=False)
    j = tr.judgements.get(jn)
    if not hasattr(j, "answer"):
        raise RuntimeError(f"query {query_id}: judge {jn!r} gave no verdict ({j})")
    tr.score = score_predictions([tr.prediction], [j], bench,
                                 point_window=float(cfg.get("agent.point_window_sec")))[0]
    return tr


# ----------------------------------------------------------------------------- your own recordings
def ingest(paths: Sequence[os.PathLike | str], domain: str = "speech", *, collection: str = "default",
           cfg: Optional[Config] = None, progress: bool = True, num_speakers: Optional[int] = None,
           min_speakers: Optional[int] = None, max_speakers: Optional[int] = None) -> list:
    """Ingest your own audio files (``harp ingest``): convert to 16 kHz mono under
    ``<paths.data>/user/<collection>/``, extract and index; returns
    :class:`~harp_lib.userdata.IngestedRecording` records.  ``domain``: speech | clinical | song.
    ``num_speakers`` (exact) or ``min_speakers`` / ``max_speakers``: how many speakers the diarizer finds."""
    from .userdata import ingest as _ingest
    return _ingest(paths, domain, collection_name=collection, cfg=cfg, progress=progress,
                   num_speakers=num_speakers, min_speakers=min_speakers, max_speakers=max_speakers)


def ask(recording_id: str, question: str, *, refs: Optional[Mapping[str, str]] = None, setup: str = "A5",
        agent: str = "rule", collection: Optional[str] = None, cfg: Optional[Config] = None,
        use_cache: bool = True):
    """Answer a free-text question about an ingested recording (``harp ask``); returns a
    :class:`~harp_lib.questions.Answer` (plan, evidence, answer, rationale, cached)."""
    from .questions import ask as _ask
    return _ask(recording_id, question, refs=refs, setup=setup, agent=agent, collection_name=collection,
                cfg=cfg, use_cache=use_cache)


# ----------------------------------------------------------------------------- tables / figures
def write_tables(cfg: Config, *, agreement: bool = False) -> dict:
    """Write the tables of the ``tables`` stage (``harp tables`` writes judge agreement too:
    ``agreement=True``) and ``results/metrics/table2.json`` (Avg per row)."""
    from .evaluate.scoring import load_scores
    from .evaluate.tables import table2
    from .evaluate.tables import write_all
    written = write_all(cfg, agreement=agreement)
    judge = cfg.evaluate.table_judge
    t2 = table2([s for s in load_scores(cfg) if s.judge == judge])
    metrics = {"judge": judge, "profile": cfg.profile,
               "avg": {row: (None if math.isnan(v) else round(float(v), 2)) for row, v in t2["Avg"].items()}}
    write_json(_results(cfg, "metrics", "table2.json"), metrics, digits=2)
    return written


def save_figure(fig, path: os.PathLike | str, *, dpi: int = 120) -> Path:
    """Save a matplotlib figure reproducibly (no "Software" text chunk) and close it."""
    import matplotlib.pyplot as plt
    from .atomic import atomic_write
    p = Path(path)
    fmt = p.suffix.lstrip(".") or "png"
    atomic_write(p, lambda t: fig.savefig(t, dpi=dpi, metadata={"Software": None}, format=fmt))
    plt.close(fig)
    return p


def write_figures(cfg: Config) -> dict[str, Path]:
    """``results/figures/{accuracy_by_type,hitrate_vs_accuracy}.png`` from the table judge's scores."""
    from .evaluate.figures import accuracy_heatmap, hitrate_vs_accuracy
    from .evaluate.scoring import load_scores
    judge = cfg.evaluate.table_judge
    scores = load_scores(cfg, judge=judge)
    if not scores:
        raise FileNotFoundError(f"no scores of judge {judge!r} under {cfg.path('paths.data')}/scores; "
                                f"run the judge stage (notebooks/05_judge) first")
    out = {}
    for name, fn in (("accuracy_by_type", accuracy_heatmap), ("hitrate_vs_accuracy", hitrate_vs_accuracy)):
        out[name] = save_figure(fn(scores), _results(cfg, "figures", f"{name}.png"))
    return out


def walkthrough_figures(cfg: Config, setup: str = "A5", domains: Optional[Sequence[str]] = None) -> dict[str, Path]:
    """The pipeline-walkthrough picture (``harp_lib.viz``) for one query of each domain.

    Writes ``results/figures/fig1_walkthrough_<domain>.png`` (question, whole recording with the
    plan windows, merged top-k and ground truth, a labelled zoom, each tool's hits, and the plan /
    evidence / answer + verdict text) for the first query of each domain.
    """
    from .evaluate.store import load_benchmark
    from .index import SegmentIndex
    from .schema import Recording, read_jsonl
    from .viz import save_figure as viz_save
    from .viz import trace_query as viz_trace
    from .viz import walkthrough_figure
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
    import matplotlib.pyplot as plt
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
    import json as _json
    import tempfile
    from importlib import resources
    from .evaluate.figures import figure4
    from .evaluate.human import NoHumanAnswers, _all_queries, load_answer_files
    from .evaluate.scoring import load_scores
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
        doc = _json.loads(resources.files("harp_lib").joinpath("data/demo_human_answers.json").read_text("utf-8"))
        doc["answers"] = [a for a in doc["answers"] if a["query_id"] in queries]
        if not doc["answers"]:
            write_json(metrics, {"answer_files": 0, "figure4_drawn": False, "demo": True, "demo_answers": 0})
            return None, (f"No human answers were collected ({e}), and the demo file answers no query of "
                          f"this benchmark; figure 4 is not drawn.")
        with tempfile.TemporaryDirectory() as tmp:
            f = Path(tmp) / "demo_human_answers.json"
            f.write_text(_json.dumps(doc), encoding="utf-8")
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