"""``harp bench scale``: Dask LocalCluster scaling curve (1, 2, 4 ... workers) on a synthetic
archive of short recordings, with byte-identical outputs whatever the worker count."""
from __future__ import annotations

import asyncio
import dataclasses
import math
import os
import shutil
from pathlib import Path

from harp_lib.config import Config
from harp_lib.bench.common import _scratch
from harp_lib.bench.options import BenchOptions
from harp_lib.core.jsonl import read_jsonl, write_jsonl
from harp_lib.core.schema import Recording
from harp_lib.corpora.synth import generate
from harp_lib.extract import scale


def synthetic_archive(n: int, out: Path, *, cache_dir=None) -> Path:
    """``out/clinical``: ``n`` short clinical recordings (~25 s each) from ``harp synth --size ci``
    with seeds 1, 2, ... (three consultations per seed), ids prefixed ``s<seed>_``; returns the folder.

    Audio files are hard links to the generated ones (copies across filesystems)."""
    d = Path(out) / "clinical"
    recs: list = []
    for seed in range(1, math.ceil(n / 3) + 1):
        src = Path(out) / f"seed{seed}"
        if not (src / "clinical" / "recordings.jsonl").exists():
            generate("ci", seed, src, cache_dir=cache_dir, domains=["clinical"], progress=False)
        for r in read_jsonl(src / "clinical" / "recordings.jsonl", Recording):
            rid = f"s{seed:03d}_{r.id}"
            dst = d / "recordings" / f"{rid}.wav"
            dst.parent.mkdir(parents=True, exist_ok=True)
            if not dst.exists():
                try:
                    os.link(src / "clinical" / r.audio_path, dst)
                except OSError:
                    shutil.copy(src / "clinical" / r.audio_path, dst)
            recs.append(dataclasses.replace(r, id=rid, audio_path=f"recordings/{rid}.wav"))
    write_jsonl(d / "recordings.jsonl", recs[:n])
    return d


def _close(client) -> None:
    """Close a LocalCluster and its client; a shutdown that times out (workers killed by the
    nanny on a loaded machine) must not lose the figures measured before it."""
    cl = client.cluster
    for f in (client.close, cl.close):
        try:
            f()
        except (TimeoutError, asyncio.TimeoutError) as e:
            print(f"harp bench scale: warning: Dask shutdown timed out ({type(e).__name__}); continuing")


def bench_scale(cfg: Config, args: BenchOptions) -> dict:
    """Dask LocalCluster with each of ``bench.scale_workers`` worker counts on the same
    ``bench.scale_recordings``-recording archive: wall, speed-up over one worker, identical outputs."""
    scratch = _scratch(cfg, args) / "scale"
    n = int(args.limit or cfg.bench.scale_recordings)
    bench_dir = synthetic_archive(n, scratch / f"archive_{n}", cache_dir=cfg.path("benchmark.cache_dir"))
    counts = [int(w) for w in cfg.bench.scale_workers]
    runs, outs = {}, {}
    for w in counts:
        out = scratch / f"clinical_w{w}"
        if out.exists():
            shutil.rmtree(out)
        client = scale.dask_client(w)
        try:
            client.run(lambda: None)                 # workers up before timing
            rep = scale.extract_domain_scaled(cfg, "clinical", engine="dask", workers=w, client=client, force=True,
                                              bench_dir=bench_dir, out_dir=out, progress=not args.quiet)
        finally:
            _close(client)
        if rep["n_quarantined"]:
            raise RuntimeError(f"{w} workers: {rep['n_quarantined']} recordings failed: {rep['quarantine'][:2]}")
        runs[w] = {k: rep[k] for k in ("n_recordings", "audio_sec", "wall_sec", "rtf_wall", "rtf_total_cpu")}
        outs[w] = out
    diffs = sorted({x for w in counts[1:] for x in scale.compare_outputs(outs[counts[0]], outs[w])})
    base = runs[counts[0]]["wall_sec"]
    for w in counts:
        runs[w]["speedup"] = round(base / max(runs[w]["wall_sec"], 1e-9), 3)
        runs[w]["audio_hours_per_hour"] = round(runs[w]["audio_sec"] / max(runs[w]["wall_sec"], 1e-9), 1)
    sp2 = runs.get(2, {}).get("speedup")
    res = {"domain": "clinical", "archive": {"recordings": n, "audio_sec": runs[counts[0]]["audio_sec"],
                                              "source": f"harp synth --size ci, seeds 1-{math.ceil(n / 3)}"},
           "runs": {str(k): v for k, v in runs.items()}, "speedup_2_vs_1": sp2, "identical_outputs": not diffs,
           "differences": diffs[:20], "cores": os.cpu_count()}
    return res | {"_md": _scale_md(res, runs, diffs)}


def _scale_md(res: dict, runs: dict, diffs: list) -> list[str]:
    a = res["archive"]
    md = [f"Dask distributed LocalCluster (one thread per worker process), domain clinical, synthetic archive of "
          f"{a['recordings']} short recordings ({a['audio_sec']:.0f} s of audio; {a['source']}), forced extraction "
          f"of every recording with each worker count.", "",
          "| workers | wall s | RTF wall | speed-up vs 1 | audio h per wall h | CPU RTF (sum of stages) |",
          "|---:|---:|---:|---:|---:|---:|"]
    md += [f"| {w} | {r['wall_sec']:.1f} | {r['rtf_wall']:.3f} | {r['speedup']:.2f}× | {r['audio_hours_per_hour']} | "
           f"{r['rtf_total_cpu']:.3f} |" for w, r in runs.items()]
    md += ["", f"This machine has {res['cores']} cores: with more workers than cores the workers share them "
           f"(oversubscribed), so the curve flattens at the core count; other load: see the load average above.  "
           f"Outputs (segments/*.jsonl, vectors/*.npy) byte-identical for every worker count: **{not diffs}**"
           + (f" — differences: {', '.join(diffs[:5])}" if diffs else "") + "."]
    return md
