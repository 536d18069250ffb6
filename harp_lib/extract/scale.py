"""Scale-out: map recordings over local processes or a Dask distributed cluster, and LLM
requests over a bounded number of in-flight calls.

``params.yaml`` ``scale:`` selects the engine:

* ``engine: local`` — a process pool on this machine (``extract.workers``), the default;
* ``engine: dask`` — Dask distributed: a ``LocalCluster`` of ``scale.workers`` single-threaded
  worker processes, or, when ``scale.scheduler`` is an address (``tcp://host:8786``), the
  running cluster behind it (every worker needs the same checkout, ``.venv`` and a shared
  ``data/`` path; docs/performance.md shows a two-node run).

Each recording is one task; a task runs the ordinary single-recording extraction
(:func:`harp_lib.extract.pipeline.extract_domain` restricted to that recording) with one
torch thread, so results are byte-identical whatever the number of workers.

LLM calls are I/O bound: :func:`bounded_map` keeps at most ``llm.max_concurrency`` requests in
flight against the vLLM server (which batches them), in input order.

>>> bounded_map(lambda x: x * x, [3, 1, 2], max_concurrency=2)
[9, 1, 4]
>>> map_items(abs, [-2, 5], engine="local", workers=1)
[2, 5]
"""
from __future__ import annotations

import multiprocessing as mp
import os
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any, Callable, Iterable, Optional, Sequence

from harp_lib.config import load_config
from harp_lib.core.jsonl import read_jsonl
from harp_lib.core.locks import die_with_parent, stage_lock
from harp_lib.core.paths import DataPaths
from harp_lib.core.schema import Recording
from harp_lib.extract.paper_models import offline_by_default
from harp_lib.extract.pipeline import extract_domain, speed_report

__all__ = ["map_items", "bounded_map", "dask_client", "extract_domain_scaled", "scale_settings",
           "compare_outputs"]

ENGINES = ("local", "dask")


def scale_settings(cfg=None, **overrides) -> dict:
    """``scale:`` of params.yaml (``cfg=None``: the repository's), plus non-None overrides.

    >>> scale_settings(None, workers=3)["workers"]
    3
    """
    out = dict((cfg if cfg is not None else load_config()).scale)
    out.update({k: v for k, v in overrides.items() if v is not None})
    if out["engine"] not in ENGINES:
        raise ValueError(f"params.yaml scale.engine is {out['engine']!r}; choose one of {', '.join(ENGINES)}")
    return out


def _one_thread():
    """Pin math libraries to one thread inside a worker (workers are the parallelism)."""
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    try:
        import torch  # heavy: torch (~1.2 s)
        torch.set_num_threads(1)
    except ImportError:  # pragma: no cover
        pass


def _call_pinned(fn, item):
    _one_thread()
    return fn(item)


def dask_client(workers: int = 2, scheduler: Optional[str] = None):
    """A ``distributed.Client``: joins ``scheduler`` when given, else starts a LocalCluster
    of ``workers`` processes with one thread each (close it with ``client.close()``)."""
    try:
        from distributed import Client, LocalCluster  # optional: dask.distributed (extra scale)
    except ImportError as e:
        raise RuntimeError("scale.engine: dask needs Dask distributed; install the `scale` extra: "
                           ".venv/bin/pip install -c requirements/constraints.txt 'dask[distributed]'") from e
    if scheduler:
        return Client(scheduler)
    cluster = LocalCluster(n_workers=int(workers), threads_per_worker=1, processes=True,
                           dashboard_address=None, silence_logs=40)
    return Client(cluster)


def map_items(fn: Callable[[Any], Any], items: Sequence[Any], *, engine: str = "local", workers: int = 1,
              scheduler: Optional[str] = None, client=None, progress: bool = False,
              desc: str = "map") -> list:
    """``[fn(x) for x in items]`` in input order, on one process, a local pool, or Dask.

    ``fn`` must be a picklable top-level function.  With ``engine="dask"`` a ``client`` may be
    passed (reused across calls); otherwise one is started and closed here.
    """
    items = list(items)
    if engine not in ENGINES:
        raise ValueError(f"unknown scale engine {engine!r}; choose one of {', '.join(ENGINES)}")
    from tqdm.auto import tqdm  # heavy: tqdm (~0.06 s)
    bar = tqdm(total=len(items), desc=desc, disable=not progress, leave=False)
    try:
        if engine == "local":
            if workers <= 1 or len(items) <= 1:
                out = []
                for x in items:
                    out.append(fn(x))
                    bar.update()
                return out
            with ProcessPoolExecutor(int(workers), mp_context=mp.get_context("spawn"),
                                     initializer=die_with_parent) as ex:   # a killed parent leaves no worker behind
                out = []
                for r in ex.map(partial(_call_pinned, fn), items):
                    out.append(r)
                    bar.update()
                return out
        own = client is None
        client = client or dask_client(workers, scheduler)
        try:
            from distributed import as_completed  # optional: dask.distributed (extra scale)
            futs = [client.submit(_call_pinned, fn, x, pure=False, key=f"{desc}-{i}") for i, x in enumerate(items)]
            for _ in as_completed(futs):
                bar.update()
            return client.gather(futs)
        finally:
            if own:
                cluster = getattr(client, "cluster", None)
                client.close()
                if cluster is not None:
                    cluster.close()
    finally:
        bar.close()


def bounded_map(fn: Callable[[Any], Any], items: Iterable[Any], max_concurrency: int = 4) -> list:
    """``[fn(x) for x in items]`` with at most ``max_concurrency`` calls in flight (threads).

    For LLM requests to a vLLM server (``llm.max_concurrency`` / ``scale.llm_concurrency``):
    the server batches concurrent requests, so a few in flight multiply throughput while the
    bound keeps the queue (and time-outs) in check.  Exceptions propagate.
    """
    items = list(items)
    n = max(1, int(max_concurrency))
    if n == 1 or len(items) <= 1:
        return [fn(x) for x in items]
    with ThreadPoolExecutor(n) as ex:
        return list(ex.map(fn, items))


# ------------------------------------------------------------------------- extraction
def _extract_one(job: tuple) -> dict:
    cfg, domain, rec_id, stage, force, bench_dir, out_dir = job
    offline_by_default()
    rep = extract_domain(cfg, domain, stage=stage, recordings=[rec_id], force=force, workers=1,
                         bench_dir=bench_dir, out_dir=out_dir, progress=False,
                         lock=False)              # extract_domain_scaled holds the folder's lock
    if not rep["recordings"]:                     # quarantined by the pipeline: say why
        q = rep.get("quarantine") or [{"error": "no result"}]
        return {"id": rec_id, "error": q[0].get("error")}
    return rep["recordings"][0]


def extract_domain_scaled(cfg, domain: str, *, engine: Optional[str] = None, workers: Optional[int] = None,
                          scheduler: Optional[str] = None, client=None, stage: Optional[int] = None,
                          force: bool = False, bench_dir: Optional[Path] = None,
                          out_dir: Optional[Path] = None, progress: bool = True) -> dict:
    """Extract a domain with one task per recording on the configured engine.

    Same outputs and report keys as :func:`harp_lib.extract.pipeline.extract_domain`, plus
    ``engine``.  Longest recordings are submitted first (better packing).

    Usage: ``extract_domain_scaled(load_config(), "emotion", engine="dask", workers=2)``
    (tests/test_scale.py).
    """
    sc = scale_settings(cfg, engine=engine, workers=workers, scheduler=scheduler)
    bench_dir = Path(bench_dir or DataPaths(cfg).benchmark(domain))
    out_dir = Path(out_dir or DataPaths(cfg).extract_dir(domain))
    with stage_lock(out_dir, "extract"):
        return _extract_scaled(cfg, domain, sc, workers, client, stage, force, bench_dir, out_dir, progress)


def _extract_scaled(cfg, domain, sc, workers, client, stage, force, bench_dir: Path, out_dir: Path,
                    progress: bool) -> dict:
    man = bench_dir / "recordings.jsonl"
    if not man.exists():
        raise FileNotFoundError(f"{man}: no recordings manifest (run `harp synth` or `harp prepare` first)")
    recs = sorted(read_jsonl(man, Recording), key=lambda r: (-(r.duration or 0.0), r.id))
    jobs = [(cfg, domain, r.id, stage, force, bench_dir, out_dir) for r in recs]
    n_workers = int(sc["workers"]) if sc["engine"] == "dask" else int(workers or cfg.extract.workers)
    t0 = time.perf_counter()
    results = map_items(_extract_one, jobs, engine=sc["engine"], workers=n_workers,
                        scheduler=sc["scheduler"], client=client, progress=progress, desc=f"extract {domain}")
    wall = time.perf_counter() - t0
    results.sort(key=lambda r: r["id"])
    failed = [r for r in results if "error" in r]
    results = [r for r in results if "error" not in r]
    return {"domain": domain, **speed_report(results, wall), "workers": n_workers, "engine": sc["engine"],
            "recordings": results, "quarantine": failed, "n_quarantined": len(failed)}


def compare_outputs(a: Path, b: Path) -> list[str]:
    """Files under ``segments/`` and ``vectors/`` that differ between two extraction outputs
    (empty list: byte-identical).

    >>> compare_outputs(Path("."), Path("."))
    []
    """
    diffs = []
    for sub in ("segments", "vectors"):
        fa = {p.name: p for p in sorted((Path(a) / sub).glob("*"))}
        fb = {p.name: p for p in sorted((Path(b) / sub).glob("*"))}
        for name in sorted(set(fa) | set(fb)):
            if name not in fa or name not in fb:
                diffs.append(f"{sub}/{name}: only in {'b' if name not in fa else 'a'}")
            elif fa[name].read_bytes() != fb[name].read_bytes():
                diffs.append(f"{sub}/{name}: contents differ")
    return diffs
