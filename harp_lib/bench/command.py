"""``harp bench`` command glue: argparse options -> :class:`.BenchOptions` -> one bench."""
from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from harp_lib.config import positive_int
from harp_lib.bench.baselines import bench_baselines
from harp_lib.bench.common import WHATS, _json_default, machine_info, write_result
from harp_lib.bench.extract import bench_extract
from harp_lib.bench.long import _long_child, bench_long
from harp_lib.bench.options import BenchOptions
from harp_lib.bench.repro import bench_repro
from harp_lib.bench.retrieval import _retrieval_child, bench_retrieval
from harp_lib.bench.scaling import bench_scale
from harp_lib.bench.summary import write_summary


_FUNCS = {"extract": bench_extract, "long": bench_long, "retrieval": bench_retrieval,
          "baselines": bench_baselines, "scale": bench_scale, "repro": bench_repro}


def run_one(what: str, cfg, args: BenchOptions) -> Path:
    """Run one bench and write its JSON/Markdown; returns the JSON path."""
    m0 = machine_info()
    t0 = time.perf_counter()
    res = _FUNCS[what](cfg, args)
    md = res.pop("_md")
    res["bench_wall_sec"] = round(time.perf_counter() - t0, 1)
    out = Path(args.out or cfg.root / "results" / "bench")
    p = write_result(what, res, md, out, m0)
    write_summary(out)
    return p


_CHILDREN = ("_long_child", "_retrieval_child")   # run in a fresh process by _run_child


def add_arguments(ap) -> None:
    """``harp bench {extract,long,retrieval,baselines,scale,repro,all,summary} [options]``."""
    ap.add_argument("what", choices=(*WHATS, "all", "summary", *_CHILDREN),
                    metavar="{" + ",".join((*WHATS, "all", "summary")) + "}",
                    help="which bench (all: every one; summary: rewrite summary.md)")
    ap.add_argument("--out", help="output folder (default results/bench)")
    ap.add_argument("--scratch", help="scratch folder (default bench.scratch)")
    ap.add_argument("--domain", action="append", help="extract/scale: domain(s) (default: params domains / clinical)")
    ap.add_argument("--limit", type=positive_int, help="extract/baselines/scale: first N recordings per domain")
    ap.add_argument("--workers", type=positive_int, help="extract: worker processes (default extract.workers)")
    ap.add_argument("--no-profile", action="store_true", help="extract: skip the cProfile run")
    ap.add_argument("--hours", type=float, help="long: length of the synthetic recording (default bench.long_hours)")
    ap.add_argument("--sizes", type=positive_int, nargs="+", help="retrieval: index sizes (default bench.retrieval_sizes)")
    ap.add_argument("--queries", type=positive_int, help="retrieval: timed queries per size")
    ap.add_argument("--baseline-n", type=positive_int, help="baselines: segments in the retrieval comparison (default 1e5)")
    ap.add_argument("--baseline-queries", type=positive_int, help="baselines: retrieval queries compared (default 300)")
    ap.add_argument("--whisper-segments", type=positive_int, help="baselines: turns in the Whisper comparison (default 32)")
    ap.add_argument("--worktree", help="repro: worktree path (default /tmp/harp_repro)")
    ap.add_argument("--keep-worktree", action="store_true")
    ap.add_argument("--repro-timeout", type=float, help="repro: seconds before the full repro is abandoned")
    # internal: the fresh-process children
    ap.add_argument("--bench-dir", help=argparse.SUPPRESS)
    ap.add_argument("--out-dir", help=argparse.SUPPRESS)
    ap.add_argument("--n", type=positive_int, help=argparse.SUPPRESS)
    ap.add_argument("--phase", choices=("build", "query"), help=argparse.SUPPRESS)


def run(cfg, ns) -> int:
    """``harp bench`` (called by :mod:`harp_lib.app.cli` with the validated config)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    what, a = ns.what, BenchOptions.from_args(ns)
    if what in _CHILDREN:
        res = _long_child(cfg, a) if what == "_long_child" else _retrieval_child(cfg, a)
        print(json.dumps(res, default=_json_default))
        return 0
    out = Path(a.out or cfg.root / "results" / "bench")
    if what == "summary":
        print(write_summary(out))
        return 0
    whats = WHATS if what == "all" else (what,)
    for w in whats:
        p = run_one(w, cfg, a)
        print(f"harp bench {w}: wrote {p} and {p.with_suffix('.md')}")
    print(f"summary: {out / 'summary.md'}")
    return 0
