"""``harp bench``: measured speed and memory, written to ``results/bench/<what>.{json,md}``.

Subcommands (goals from ``params.yaml`` ``bench.goals``; docs/performance.md):

* ``extract``   — real-time factor overall and per stage on the benchmark, slowest stage profiled;
* ``long``      — a synthetic multi-hour podcast extracted in a child process: peak RSS, DER
  and speaker-label consistency across the concatenated copies;
* ``retrieval`` — one evidence set with every tool + merge + top-3 over 10^5 / 10^6 synthetic
  clustered segments (the real :func:`harp_lib.retrieval.tools.retrieve` path), p50/p99, build,
  save and load times, RSS;
* ``baselines`` — our diarization vs one-speaker and MFCC k-means baselines (DER), our retrieval
  vs numpy brute force (agreement, time), Whisper per-segment vs batched (when installed);
* ``scale``     — Dask LocalCluster with 1 vs 2 workers: speed-up and byte-identical outputs;
* ``repro``     — ``dvc repro`` of the mini profile in a separate git worktree, then a no-op repro;
* ``all``       — everything above, then ``summary.md`` (each figure next to its goal).

Every JSON carries the machine description (CPU, cores, memory, versions, load average at
start and end).

>>> machine_info()["nproc"] >= 1
True

Modules: :mod:`.common` (machine, results, goals, child processes), :mod:`.extract`,
:mod:`.long`, :mod:`.retrieval`, :mod:`.baselines`, :mod:`.scaling`, :mod:`.repro`,
:mod:`.summary`; :mod:`.options` holds the typed :class:`BenchOptions` the benches take and
:mod:`.command` the ``harp bench`` glue.
"""
from __future__ import annotations

from harp_lib.bench import baselines, long  # noqa: F401  (submodules: bench.baselines._baseline_retrieval, ...)
from harp_lib.bench.baselines import bench_baselines, whisper_compare
from harp_lib.bench.command import add_arguments, run, run_one
from harp_lib.bench.common import WHATS, machine_info, write_result
from harp_lib.bench.extract import bench_extract
from harp_lib.bench.long import bench_long, synth_long_wav
from harp_lib.bench.options import BenchOptions
from harp_lib.bench.repro import bench_repro
from harp_lib.bench.retrieval import bench_retrieval, synthetic_index
from harp_lib.bench.scaling import bench_scale
from harp_lib.bench.summary import plot_summary, write_summary

__all__ = ["machine_info", "write_result", "bench_extract", "bench_long", "bench_retrieval",
           "bench_baselines", "bench_scale", "bench_repro", "write_summary", "plot_summary", "synth_long_wav",
           "synthetic_index", "whisper_compare", "add_arguments", "run", "run_one", "WHATS", "BenchOptions",
           "baselines", "long"]
