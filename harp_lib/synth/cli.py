"""``harp synth``: generate the built-in benchmark.

    harp synth --profile mini --seed 0 --out data/benchmark
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Optional, Sequence

from ..schema import DOMAINS


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Parse arguments, generate, print a summary; returns the exit code."""
    ap = argparse.ArgumentParser(prog="harp synth", description="Generate the built-in benchmark "
                                 "(recordings, references, ground truth, queries) from a seed.")
    ap.add_argument("--profile", choices=("ci", "mini", "full"), default="mini",
                    help="size: ci (a few minutes), mini (~33 min, default), full (paper scale)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=Path("data/benchmark"))
    ap.add_argument("--cache-dir", type=Path, default=None, help="synthesis cache (default .cache/harp/synth)")
    ap.add_argument("--domains", nargs="+", choices=DOMAINS, default=None)
    ap.add_argument("--quiet", action="store_true", help="no progress bars")
    a = ap.parse_args(list(argv) if argv is not None else None)
    from . import generate
    from .core import SynthError
    try:
        m = generate(a.profile, a.seed, a.out, cache_dir=a.cache_dir, domains=a.domains, progress=not a.quiet)
    except SynthError as e:
        print(f"harp synth: {e}", file=sys.stderr)
        return 1
    timings = json.loads((a.out / "timings.json").read_text())
    print(f"wrote {a.out} (profile {m.profile}, seed {m.seed}): {m.audio_minutes['total']:.1f} min of audio "
          f"in {timings['seconds']['total']:.1f} s")
    for d in m.domains:
        c = m.counts[d]
        print(f"  {d:9s} {m.audio_minutes[d]:6.1f} min  {c['recordings']} recordings  {c['segments']} segments  "
              f"queries {c['queries']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
