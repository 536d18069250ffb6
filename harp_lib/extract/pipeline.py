"""``harp extract``: HARP stage 1 (generic, cached per recording) and stage 2 (domain experts).

Stage 1, per recording, caches under ``data/extract/<domain>/stage1/<rec>/``:
``speech.json`` (VAD) -> ``turns.json`` (diarization or song boundaries, then chunk/merge
rules) -> ``asr.json`` (VAD-gated ASR per turn) -> ``text.npy`` / ``audio.npy`` -> ``done.json``
(backends and per-stage seconds).  Every file is written atomically and every step is
skipped when its file exists, so a killed run resumes where it stopped.

Stage 2 reads that cache, runs the labelers (merged left to right: a later labeler
overwrites a key only with a non-None value) and the domain embedder, and writes
``vectors/<rec>.<space>.npy`` then ``segments/<rec>.jsonl`` (the commit marker) and
``spaces.json``.  ``--stage 2 --force`` re-runs it alone.

One bad recording never aborts the others: a recording that fails (missing, corrupt or
truncated file, NaN samples, a manifest duration that disagrees with the file, a backend
crash on it) is *quarantined* -- ``quarantine/<rec>.json`` says which file and why, its earlier
outputs are removed so the index skips it, ``quarantine.jsonl`` lists every quarantined
recording of the domain, and the run report carries ``quarantine`` / ``n_quarantined``.
A later successful run lifts the quarantine.

This module drives both stages over a domain (worker processes, quarantine, ``spaces.json``,
the run report) and holds the ``harp extract`` command.  The stages themselves are
:mod:`harp_lib.extract.stage1_generic` and :mod:`harp_lib.extract.stage2_domain`, the per-turn
steps they run (ASR packing, labelling, worker chunks) :mod:`harp_lib.extract.turn_steps`, the
cache's writers and keys :mod:`harp_lib.extract.stage_cache`.  Backend specs and the
per-process model cache live in :mod:`harp_lib.extract.settings`.
"""
from __future__ import annotations

import json
import multiprocessing as mp
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Optional, Sequence

from harp_lib.core import audio
from harp_lib.core.atomic import StorageError, drop_stale_parts, is_io_error, storage_error
from harp_lib.config import BackendError, Config, ConfigError, get_backend, positive_int
from harp_lib.core.hashing import file_sha256      # re-exported: the extraction cache key's content half
from harp_lib.core.locks import LockBusy, pool_worker_init, stage_lock
from harp_lib.core.paths import DataPaths, ExtractPaths
from harp_lib.core.jsonl import read_jsonl, write_jsonl
from harp_lib.core.progress import progress as _progress
from harp_lib.core.record import SchemaError
from harp_lib.core.schema import Recording, Segment, resolve_under
from harp_lib.extract.paper_models import offline_by_default
from harp_lib.extract.quality import extract_metrics, no_ground_truth_message
from harp_lib.extract.settings import resolve_backend  # noqa: F401  (re-exported)
from harp_lib.extract.settings import extract_settings as _settings
from harp_lib.extract.stage1_generic import stage1
from harp_lib.extract.stage2_domain import stage2
from harp_lib.extract.stage_cache import SPACES, _name, _read_json, _write_json
from harp_lib.extract.streaming import open_wave
# re-exported for notebooks/01_extract (it runs the steps one by one on an excerpt)
from harp_lib.extract.turn_steps import fill_gaps, label_turns, transcribe_turns  # noqa: F401

__all__ = ["extract_domain", "extract_recording", "file_sha256", "resolve_backend", "load_segments", "write_quarantine"]


# ------------------------------------------------------------------------- driver
def _drop_stale_parts(cache: Path, out_dir: Path, rec_id: str) -> None:
    """Remove the temporary files a killed writer left for this recording (``<name>.part`` or
    ``<name>.<pid>-<hex>.part``, :func:`harp_lib.core.atomic.part_path`): its stage-1 cache files, its
    segments and vectors.  The extraction folder is locked, so no live writer owns them."""
    xp = ExtractPaths(out_dir)
    finals = [xp.segments(rec_id), *(xp.vectors(rec_id, sp) for sp in SPACES)]
    if cache.is_dir():
        finals += [cache / n for n in ("speech.json", "turns.json", "asr.json", "done.json", "timing.json",
                                       "stage2.json", "text.npy", "audio.npy")]
    for f in finals:
        drop_stale_parts(f, locked=True)


def extract_recording(rec: Recording, bench_dir: Path, out_dir: Path, st: dict, stage: Optional[int] = None,
                      force: bool = False) -> dict:
    """Stage 1 and/or 2 for one recording; returns ``{"id", "duration", "timing"}``."""
    t0 = time.process_time()
    path = resolve_under(bench_dir, rec.audio_path)          # refuses URLs and ../ escapes
    info = audio.validate(path, decode=False)                # missing, empty, undecodable, truncated
    if rec.duration and abs(info.duration - rec.duration) > audio.DURATION_TOLERANCE_SEC:
        raise audio.AudioError(f"{path}: recordings.jsonl says {rec.duration:.2f} s but the file holds "
                               f"{info.duration:.2f} s; fix the manifest or the file")
    wave = open_wave(path, st["sr"], rec.duration or None, st["stream_above_sec"])
    sha = file_sha256(path)                                  # the cache follows the audio, not the id
    load_sec = time.process_time() - t0
    cache = ExtractPaths(out_dir).stage1(rec.id)
    _drop_stale_parts(cache, out_dir, rec.id)
    timing: dict[str, float] = {"load": round(load_sec, 3)}
    if stage in (None, 1):
        done = stage1(rec, wave, cache, st, force=force, audio_sha256=sha)
        timing.update(done.get("timing", {}))
    if stage in (None, 2):
        timing.update(stage2(rec, wave, cache, out_dir, st, force=force, audio_sha256=sha))
    return {"id": rec.id, "duration": rec.duration, "timing": timing}


def _worker(args):
    """One recording; a failure of the recording's own content comes back as
    ``{"id", "error"}`` (quarantined).  A misconfigured backend (it would fail every recording)
    and a storage fault (full disk, size limit, permissions: :class:`StorageError`) stop the run
    instead, leaving every earlier output in place."""
    rec = args[0]
    try:
        return extract_recording(*args)
    except (BackendError, StorageError):
        raise
    except Exception as e:  # noqa: BLE001 - quarantined with the reason, the others go on
        if is_io_error(e):
            raise storage_error(e) from e
        return {"id": rec.id, "error": f"{type(e).__name__}: {e}"}


def _quarantine(out_dir: Path, rec: Recording, error: str) -> None:
    xp = ExtractPaths(out_dir)
    _write_json(xp.quarantine(rec.id), {"recording_id": rec.id, "audio_path": rec.audio_path, "error": error})
    # the recording leaves the index: the outputs an earlier run of this stage wrote for it
    # (validated id, paths built under out_dir) are removed
    for p in [xp.segments(rec.id), *(xp.vectors(rec.id, space) for space in SPACES)]:
        p.unlink(missing_ok=True)


def write_quarantine(out_dir: Path, rec_ids: Sequence[str]) -> list[dict]:
    """Collect the quarantine markers of ``rec_ids`` into ``quarantine.jsonl`` (sorted by id).

    Per-recording markers keep parallel per-recording runs (``harp_lib.extract.scale``) race-free;
    this summary is rewritten from them.  Returns the entries (empty list: none).
    """
    xp = ExtractPaths(out_dir)
    entries = [_read_json(xp.quarantine(r)) for r in sorted(set(rec_ids)) if xp.quarantine(r).exists()]
    write_jsonl(xp.quarantine_summary, entries)
    return entries


def write_spaces(out_dir: Path, st: dict) -> dict:
    """``spaces.json``: {space: {backend, model, dim}} from the registry's class attributes."""
    spaces = {}
    for space, stage in (("text", "text_emb"), ("audio", "audio_emb"), ("domain", "domain_emb")):
        name = _name(st[stage])
        if name is None:
            continue
        cls = get_backend(stage, name)
        spaces[space] = {"backend": name, "model": cls.model_id, "dim": int(cls.dim)}
    _write_json(ExtractPaths(out_dir).spaces, spaces)
    return spaces


def extract_domain(cfg: Config, domain: str, *, stage: Optional[int] = None, recordings: Optional[Sequence[str]] = None,
                   force: bool = False, workers: int = 1, bench_dir: Optional[Path] = None,
                   out_dir: Optional[Path] = None, progress: bool = True, lock: bool = True,
                   manifest: Optional[Path] = None) -> dict:
    """Extract every recording of ``data/benchmark/<domain>/recordings.jsonl``.

    Returns a report with per-recording and per-stage seconds and real-time factors.  The
    output folder is locked for the run (:func:`harp_lib.core.locks.stage_lock`; a second run on it
    waits); ``lock=False`` is for callers that hold it already (``harp_lib.extract.scale``).
    ``manifest`` replaces ``<bench_dir>/recordings.jsonl`` (``harp ingest`` extracts from a staged
    manifest and publishes the recordings only when their extraction is complete).

    Usage: ``extract_domain(load_config(), "emotion", workers=2)`` (tests/extract/test_pipeline.py).
    """
    bench_dir = Path(bench_dir or DataPaths(cfg).benchmark(domain))
    out_dir = Path(out_dir or DataPaths(cfg).extract_dir(domain))
    if not lock:
        return _extract_domain(cfg, domain, stage, recordings, force, workers, bench_dir, out_dir, progress, manifest)
    with stage_lock(out_dir, "extract"):
        return _extract_domain(cfg, domain, stage, recordings, force, workers, bench_dir, out_dir, progress, manifest)


def _extract_domain(cfg, domain, stage, recordings, force, workers, bench_dir: Path, out_dir: Path,
                    progress: bool, manifest: Optional[Path] = None) -> dict:
    man = Path(manifest) if manifest is not None else bench_dir / "recordings.jsonl"
    if not man.exists():
        raise FileNotFoundError(f"{man}: no recordings manifest (run `harp synth` or `harp prepare` first)")
    recs = sorted(read_jsonl(man, Recording), key=lambda r: r.id)
    all_ids = [r.id for r in recs]
    if recordings is not None:
        want = set(recordings)
        unknown = want - {r.id for r in recs}
        if unknown:
            raise KeyError(f"{man}: unknown recording id(s) {sorted(unknown)}")
        recs = [r for r in recs if r.id in want]
    st = _settings(cfg, domain)
    # fewer recordings than workers: the spare workers decode one recording's turns in parallel
    st["inner_workers"] = workers if len(recs) < workers else 1
    t0 = time.perf_counter()
    jobs = [(r, bench_dir, out_dir, st, stage, force) for r in recs]
    results = []
    bar = _progress(total=len(jobs), desc=f"extract {domain}", mode=None if progress else "off")   # no frozen widget in executed notebooks
    if workers > 1 and len(jobs) > 1:
        with ProcessPoolExecutor(workers, mp_context=mp.get_context("spawn"), initializer=pool_worker_init) as ex:
            try:
                for r in ex.map(_worker, jobs):
                    results.append(r)
                    bar.update()
            except BaseException:        # a storage fault or a bad backend: start nothing more
                ex.shutdown(wait=True, cancel_futures=True)
                raise
    else:
        for j in jobs:
            results.append(_worker(j))
            bar.update()
    bar.close()
    wall = time.perf_counter() - t0
    by_id = {r.id: r for r in recs}
    for r in results:
        if "error" in r:
            _quarantine(out_dir, by_id[r["id"]], r["error"])
        else:
            ExtractPaths(out_dir).quarantine(r["id"]).unlink(missing_ok=True)
    results = [r for r in results if "error" not in r]
    quarantine = write_quarantine(out_dir, all_ids)
    spaces = write_spaces(out_dir, st)
    return {"domain": domain, **speed_report(results, wall), "workers": workers, "spaces": spaces,
            "recordings": results, "quarantine": quarantine, "n_quarantined": len(quarantine)}


def speed_report(results: list[dict], wall: float) -> dict:
    """Audio seconds, per-stage CPU seconds and real-time factors of per-recording results."""
    audio_sec = sum(r["duration"] for r in results) or 1e-9
    stages: dict[str, float] = {}
    for r in results:
        for k, v in r["timing"].items():
            stages[k] = round(stages.get(k, 0.0) + v, 3)
    return {"n_recordings": len(results), "audio_sec": round(audio_sec, 3), "wall_sec": round(wall, 3),
            "stage_sec": stages, "rtf": {k: round(v / audio_sec, 4) for k, v in stages.items()},
            "rtf_total_cpu": round(sum(stages.values()) / audio_sec, 4),
            "rtf_wall": round(wall / audio_sec, 4)}


def load_segments(out_dir: Path, rec_id: str) -> list[Segment]:
    """Extracted segments of one recording (sorted by start)."""
    return read_jsonl(ExtractPaths(out_dir).segments(rec_id), Segment)


def add_arguments(ap) -> None:
    """``harp extract [--domain D ...] [--stage 1|2] [--force] [--workers N] [--metrics]``."""
    ap.add_argument("--domain", action="append", help="domain(s) to extract (default: params domains)")
    ap.add_argument("--stage", type=int, choices=(1, 2), help="run only stage 1 or stage 2")
    ap.add_argument("--recording", action="append", help="only these recording ids")
    ap.add_argument("--force", action="store_true", help="recompute even when cached")
    ap.add_argument("--workers", type=positive_int, default=None, help="worker processes (default extract.workers)")
    ap.add_argument("--metrics", action="store_true", help="then compare with ground truth and write "
                    "results/metrics/extract_<domain>.json (timings: <paths.data>/timings/)")
    ap.add_argument("--collection", help="extract a user collection (harp ingest) instead of the benchmark "
                    "(no ground truth: no --metrics)")


def run(cfg: Config, a) -> int:
    offline_by_default()       # weights come from `harp fetch-weights`; the message says who set it
    domains = a.domain or list(cfg.domains)
    workers = a.workers if a.workers is not None else int(cfg.extract.workers)
    dirs = {d: (None, None) for d in domains}
    if a.collection:
        try:
            root = DataPaths(cfg).user_collection(a.collection)     # written by `harp ingest`
        except ValueError as e:
            print(f"harp extract: {e}", file=sys.stderr)
            return 2
        dirs = {d: (root / d, root / "extract" / d) for d in domains
                if a.domain or (root / d / "recordings.jsonl").exists()}
        if not dirs:
            print(f"harp extract: collection {a.collection!r} has no recordings ({root}); "
                  f"add some with `harp ingest FILE --domain speech|clinical|song`", file=sys.stderr)
            return 2
        domains = list(dirs)
    rc = 0
    for d in domains:
        bench_dir, out_dir = dirs[d]
        try:
            rep = extract_domain(cfg, d, stage=a.stage, recordings=a.recording, force=a.force,
                                 workers=workers, progress=not a.quiet, bench_dir=bench_dir, out_dir=out_dir)
        except KeyError as e:                     # an unknown recording id given with --recording
            raise ConfigError(f"{d}: {e.args[0] if e.args else e}") from e
        except (BackendError, FileNotFoundError, SchemaError, StorageError, LockBusy) as e:
            # SchemaError: a bad manifest line (2); StorageError: full disk / size limit / permissions,
            # a fault (1)
            print(f"harp extract: {d}: {e}", file=sys.stderr)
            return 1 if isinstance(e, StorageError) else 2
        print(json.dumps({k: rep[k] for k in ("domain", "n_recordings", "audio_sec", "wall_sec", "rtf",
                                              "rtf_total_cpu", "rtf_wall", "n_quarantined")}))
        if rep["n_quarantined"]:
            print(f"harp extract: {d}: {rep['n_quarantined']} recording(s) quarantined, listed in "
                  f"{DataPaths(cfg).extract(d).quarantine_summary}:", file=sys.stderr)
            for q in rep["quarantine"]:
                print(f"  {q['recording_id']} ({q['audio_path']}): {q['error']}", file=sys.stderr)
            rc = 1                 # the other recordings' outputs are kept; the next domains still run
        if a.metrics:
            gt_dir = bench_dir or DataPaths(cfg).benchmark(d)
            if a.collection or not (gt_dir / "segments.jsonl").exists():   # user data: never into results/
                print(f"harp extract: {d}: no --metrics: {no_ground_truth_message(gt_dir)}", file=sys.stderr)
                return 2
            m = extract_metrics(cfg, d, rep)
            print(json.dumps({k: v for k, v in m.items() if not isinstance(v, (dict, list))}))
    return rc
