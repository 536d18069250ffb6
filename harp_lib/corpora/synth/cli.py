"""``harp synth``: generate the built-in benchmark.

    harp synth                          # params profile's benchmark: size, seed -> paths.benchmark
    harp synth --size ci --seed 1 --out /tmp/b
    harp synth --profile ci             # the ci params profile: ci size -> data/ci/benchmark
"""
from __future__ import annotations

import json
from pathlib import Path

from harp_lib.core.schema import DOMAINS
from harp_lib.corpora.synth import generate


def add_arguments(ap) -> None:
    """``harp synth`` options; defaults come from params.yaml ``benchmark:`` and ``paths.benchmark``."""
    ap.add_argument("--size", choices=("ci", "mini", "full"), default=None,
                    help="benchmark size: ci (a few minutes), mini (~33 min), full (paper scale); "
                         "default: benchmark.profile of the params profile")
    ap.add_argument("--seed", type=int, default=None, help="default: benchmark.seed")
    ap.add_argument("--out", type=Path, default=None, help="default: paths.benchmark")
    ap.add_argument("--cache-dir", type=Path, default=None, help="synthesis cache (default: benchmark.cache_dir)")
    ap.add_argument("--domains", nargs="+", choices=DOMAINS, default=None)


def run(cfg, a) -> int:
    """Generate, print a summary; returns the exit code."""
    size = a.size or cfg.benchmark.profile
    seed = cfg.benchmark.seed if a.seed is None else a.seed
    out = a.out or cfg.path("paths.benchmark")
    m = generate(size, seed, out, cache_dir=a.cache_dir, domains=a.domains, progress=not a.quiet)
    timings = json.loads((out / "timings.json").read_text())
    print(f"wrote {out} (size {m.profile}, seed {m.seed}): {m.audio_minutes['total']:.1f} min of audio "
          f"in {timings['seconds']['total']:.1f} s")
    for d in m.domains:
        c = m.counts[d]
        print(f"  {d:9s} {m.audio_minutes[d]:6.1f} min  {c['recordings']} recordings  {c['segments']} segments  "
              f"queries {c['queries']}")
    return 0
