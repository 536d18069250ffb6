"""Stage ``infer@<domain>`` (notebooks/04_answer): every setup of params.yaml on every query of a domain."""
from __future__ import annotations

import contextlib
import multiprocessing as mp
import tempfile
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any, Optional, Sequence

from harp_lib.agent.runner import prediction_path, run_setup
from harp_lib.config import Config, get_setup
from harp_lib.core.jsonl import check_own_jsonl, read_jsonl, write_jsonl
from harp_lib.core.locks import pool_worker_init, stage_lock
from harp_lib.core.paths import DataPaths
from harp_lib.core.results_io import timings_path, write_json
from harp_lib.core.schema import Prediction, Query

__all__ = ["answer_stage"]


def answer_stage(cfg: Config, domain: str, setup: str, *, limit: Optional[int] = None,
                 progress: bool = True) -> list:
    """Run setup ``setup`` (or ``"all"`` setups of params.yaml, in ``agent.workers`` processes:
    :func:`_answer_parallel`) on every query of ``domain``, from scratch.

    Predictions go to ``paths.predictions/<domain>/<setup>.jsonl`` with their ``timings``
    moved to ``<paths.data>/timings/predictions/<domain>/<setup>.json`` (so the tracked file,
    and the folders later stages depend on, are reproducible).
    """
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
    the per-process cache of :mod:`harp_lib.retrieval.references`).  A group that listens to clips
    (the costly A4-A7) is split into ``workers`` parts of the queries (every ``workers``-th
    query), so both cores work until the end; parts are written to a scratch folder and
    merged in query order.  No query's answer depends on another's, so the files are the bytes
    a one-process run writes (tests/golden/test_parallel_setups.py)."""

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
    folder.mkdir(parents=True, exist_ok=True)
    return {s: run_setup(cfg, domain, s, queries=queries, out_path=folder / f"{get_setup(s).name}.jsonl",
                         resume=False, progress=progress) for s in setups}

