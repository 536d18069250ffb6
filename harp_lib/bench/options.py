"""The command-line choices of ``harp bench``, typed (the benches never see argparse)."""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Optional


@dataclass(frozen=True)
class BenchOptions:
    """What the user asked ``harp bench`` for; ``None`` means "the params.yaml ``bench:`` value".

    >>> BenchOptions(limit=2).limit, BenchOptions().workers
    (2, None)
    """
    out: Optional[str] = None                # results folder (default results/bench)
    scratch: Optional[str] = None            # scratch folder (default bench.scratch)
    domain: Optional[tuple[str, ...]] = None  # extract/scale domains
    limit: Optional[int] = None              # first N recordings per domain
    workers: Optional[int] = None            # extract worker processes (default extract.workers)
    no_profile: bool = False                 # extract: skip the cProfile run
    hours: Optional[float] = None            # long: length of the synthetic recording
    sizes: Optional[tuple[int, ...]] = None  # retrieval: index sizes
    queries: Optional[int] = None            # retrieval: timed queries per size
    baseline_n: Optional[int] = None         # baselines: segments in the retrieval comparison
    baseline_queries: Optional[int] = None   # baselines: retrieval queries compared
    whisper_segments: Optional[int] = None   # baselines: turns in the Whisper comparison
    worktree: Optional[str] = None           # repro: worktree path
    keep_worktree: bool = False
    repro_timeout: Optional[float] = None    # repro: seconds before the full repro is abandoned
    quiet: bool = False
    # the fresh-process children (harp bench _long_child / _retrieval_child)
    bench_dir: Optional[str] = None
    out_dir: Optional[str] = None
    n: Optional[int] = None
    phase: Optional[str] = None              # retrieval child: build (generate + save) or query (load + time)

    @classmethod
    def from_args(cls, ns: Any) -> "BenchOptions":
        """Take the fields this class declares from an argparse namespace (lists become tuples)."""
        kw = {}
        for f in fields(cls):
            if hasattr(ns, f.name):
                v = getattr(ns, f.name)
                kw[f.name] = tuple(v) if isinstance(v, list) else v
        return cls(**kw)
