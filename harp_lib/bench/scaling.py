"""``harp bench scale``: Dask LocalCluster with 1 vs 2 workers (speed-up, byte-identical outputs)."""
from __future__ import annotations

import os
import shutil

from ..config import Config
from .common import _scratch
from .extract import _limited_bench
from .options import BenchOptions


def bench_scale(cfg: Config, args: BenchOptions) -> dict:
    """Dask LocalCluster, 1 vs 2 workers, same recordings: wall, speed-up, identical outputs."""
    from .. import scale
    d = (args.domain or ["clinical"])[0]
    scratch = _scratch(cfg, args) / "scale"
    bench_dir = _limited_bench(cfg.path("paths.benchmark") / d, args.limit or 8, scratch)
    runs = {}
    outs = {}
    for w in (1, 2):
        out = scratch / f"{d}_w{w}"
        if out.exists():
            shutil.rmtree(out)
        client = scale.dask_client(w)
        try:
            client.run(lambda: None)                 # workers up before timing
            rep = scale.extract_domain_scaled(cfg, d, engine="dask", workers=w, client=client, force=True,
                                              bench_dir=bench_dir, out_dir=out, progress=not args.quiet)
        finally:
            cl = client.cluster
            client.close()
            cl.close()
        runs[w] = {k: rep[k] for k in ("n_recordings", "audio_sec", "wall_sec", "rtf_wall", "rtf_total_cpu")}
        outs[w] = out
    diffs = scale.compare_outputs(outs[1], outs[2])
    sp = round(runs[1]["wall_sec"] / max(runs[2]["wall_sec"], 1e-9), 3)
    res = {"domain": d, "runs": {str(k): v for k, v in runs.items()}, "speedup_2_vs_1": sp,
           "identical_outputs": not diffs, "differences": diffs[:20]}
    md = [f"Dask distributed LocalCluster (one thread per worker), domain {d}, {runs[1]['n_recordings']} recordings "
          f"({runs[1]['audio_sec']:.0f} s of audio), forced extraction.", "",
          "| workers | wall s | RTF wall |", "|---:|---:|---:|"]
    md += [f"| {w} | {r['wall_sec']:.1f} | {r['rtf_wall']:.3f} |" for w, r in runs.items()]
    md += ["", f"Speed-up with 2 workers: **{sp:.2f}×** (on {os.cpu_count()} cores; other load: see the load average above).  "
           f"Outputs (segments/*.jsonl, vectors/*.npy) byte-identical with 1 and 2 workers: **{not diffs}**"
           + (f" — differences: {', '.join(diffs[:5])}" if diffs else "") + "."]
    return res | {"_md": md}
