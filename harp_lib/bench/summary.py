"""``results/bench/summary.md``: each measured figure next to its goal, plus a plot."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Optional

import numpy as np

from harp_lib.config import repo_root
from harp_lib.bench.common import WHATS, _verdict, machine_info
from harp_lib.bench.extract import _STAGE_GROUP


#: the segment index, harp_lib/retrieval/index.py and the modules of its steps
INDEX_CODE = ("harp_lib/retrieval/index.py", "harp_lib/retrieval/index_build.py", "harp_lib/retrieval/index_errors.py",
              "harp_lib/retrieval/index_format.py", "harp_lib/retrieval/index_search.py",
              "harp_lib/retrieval/index_stage.py", "harp_lib/retrieval/index_vector.py")
#: the code each bench's figures describe: a bench measured at commit C is stale once any of these
#: paths changed between C and HEAD (its own module, harp_lib/bench/<bench>.py, counts too)
BENCH_CODE = {
    "extract": ("harp_lib/extract", "harp_lib/core/audio.py", "params.yaml"),
    "long": ("harp_lib/extract", "harp_lib/core/audio.py", "params.yaml"),
    "retrieval": (*INDEX_CODE, "harp_lib/retrieval/tools.py"),
    "baselines": ("harp_lib/extract", *INDEX_CODE, "harp_lib/retrieval/tools.py", "params.yaml"),
    "scale": ("harp_lib/extract/scale.py", "harp_lib/extract", "params.yaml"),
    "repro": ("harp_lib", "dvc.yaml", "params.yaml", "notebooks", "scripts"),
}


def bench_age(what: str, bench: dict, root: Optional[Path] = None) -> tuple[str, Optional[bool]]:
    """``("<commit> <date>", stale)`` for one bench's JSON: where and when it was measured, and
    whether the code it describes (:data:`BENCH_CODE`) changed since that commit (None: unknown,
    e.g. no git history or an unknown commit)."""
    m = bench.get("machine") or {}
    commit, when = m.get("git_commit"), (m.get("time_utc") or "")[:10]
    label = f"{commit or '?'} {when}".strip()
    if not commit:
        return label, None
    paths = (*BENCH_CODE.get(what, ("harp_lib",)), f"harp_lib/bench/{what}.py")
    try:
        r = subprocess.run(["git", "diff", "--quiet", commit, "HEAD", "--", *paths], cwd=root or repo_root(),
                           capture_output=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return label, None
    return label, {0: False, 1: True}.get(r.returncode)


def _extract_rows(e: dict) -> list[tuple]:
    return [("Extraction RTF, wall (mini, %d workers)" % e["workers"], f"{e['rtf_wall']:.3f}", f"≤ {e['goal_rtf']}", e["verdict_wall"]),
            ("Extraction RTF, CPU (sum of stages, one core)", f"{e['rtf_cpu']:.3f}", f"≤ {e['goal_rtf']}", e["verdict_cpu"]),
            ("  per stage (CPU RTF)", ", ".join(f"{k} {v:.3f}" for k, v in e["rtf_stage_cpu"].items()), "reported", ""),
            ("  slowest stage", e["slowest_stage"], "profiled", "")]


def _long_rows(lg: dict) -> list[tuple]:
    rows = [(f"Long recording ({lg['hours']:g} h) peak RSS", f"{lg['peak_rss_gb']:.2f} GB", f"≤ {lg['goal_rss_gb']} GB", lg["verdict"])]
    if "extrapolated_4h_rss_mb" in lg:
        rows.append(("  4 h peak RSS (extrapolated, not measured)", f"{lg['extrapolated_4h_rss_mb'] / 1024:.2f} GB", f"≤ {lg['goal_rss_gb']} GB",
                     _verdict(lg["extrapolated_4h_rss_mb"] / 1024, lg["goal_rss_gb"])))
    rows.append(("  DER over the concatenation / label consistency", f"{lg['der']['der']:.3f} / {lg['consistency']['consistent_fraction']}", "consistent labels", ""))
    return rows


def _retrieval_rows(r: dict) -> list[tuple]:
    rows = []
    for s in r["sizes"]:
        tag = {100_000: "1e5", 1_000_000: "1e6"}.get(s["n"])
        g50 = r["goals"].get(f"retrieval_p50_ms_{tag}") if tag else None
        g99 = r["goals"].get(f"retrieval_p99_ms_{tag}") if tag else None
        rows.append((f"Retrieval p50 at {s['n']:,} segments", f"{s['p50_ms']} ms", f"≤ {g50} ms" if g50 else "-",
                     _verdict(s["p50_ms"], g50) if g50 else ""))
        rows.append((f"Retrieval p99 at {s['n']:,} segments", f"{s['p99_ms']} ms", f"≤ {g99} ms" if g99 else "reported",
                     _verdict(s["p99_ms"], g99) if g99 else ""))
        mem = (f"; {'memory-mapped, ' if s.get('memory_mapped') else ''}disk {s['disk_mb']:.0f} MB, "
               f"peak RSS / disk {s['rss_over_disk']}") if "rss_over_disk" in s else ""
        rows.append((f"  index build / save / load at {s['n']:,}", f"{s['build_sec']} / {s['save_sec']} / "
                     f"{s['load_sec']} s; peak RSS {s['max_rss_mb']:.0f} MB{mem}", "reported", ""))
    return rows


def _baseline_rows(b: dict) -> list[tuple]:
    rows = []
    for d, x in b["diarization"].items():
        rows.append((f"Diarization DER {d}: ours / one speaker / MFCC k-means",
                     f"{x['ours']['der']:.3f} / {x['one_speaker']['der']:.3f} / {x['mfcc_kmeans']['der']:.3f}", "ours lowest",
                     "met" if x["ours"]["der"] <= min(x["one_speaker"]["der"], x["mfcc_kmeans"]["der"]) else "MISSED"))
    rr = b["retrieval"]
    rows.append(("Retrieval vs numpy brute force (p50 ms, identical top-3)",
                 f"{rr['ours_p50_ms']} vs {rr['brute_force_p50_ms']} ms, {rr['agreement']:.1%}", "same results", "met" if rr["agreement"] == 1 else "MISSED"))
    wh = b["whisper"]
    if "skipped" in wh:
        rows.append(("Whisper per-segment vs batched", "skipped: checkpoint not in the local cache",
                     "when the paper checkpoint is present", ""))
    else:
        rows.append(("Whisper per-segment vs batched (s, speed-up)",
                     f"{wh['per_segment_sec']} vs {wh['batched_sec']} s, {wh['speedup']:.2f}×", "reported", ""))
    return rows


def _scale_rows(s: dict) -> list[tuple]:
    rows = []
    if s.get("speedup_2_vs_1") is not None:
        rows.append(("Dask 2 workers vs 1: speed-up", f"{s['speedup_2_vs_1']:.2f}×", "> 1",
                     "met" if s["speedup_2_vs_1"] > 1 else "MISSED"))
    if "archive" in s:
        curve = ", ".join(f"{w}: {r['wall_sec']:.0f} s ({r['speedup']:.2f}×)" for w, r in s["runs"].items())
        rows.append((f"  scaling curve, {s['archive']['recordings']} recordings ({s['archive']['audio_sec'] / 60:.0f} min "
                     f"audio), workers: wall (speed-up) on {s.get('cores', '?')} cores", curve, "reported", ""))
    rows.append(("  identical outputs for every worker count", str(s["identical_outputs"]), "True",
                 "met" if s["identical_outputs"] else "MISSED"))
    return rows


def _repro_rows(rp: dict) -> list[tuple]:
    return [("`dvc repro` mini from raw audio", f"{rp['full_min']:.1f} min", f"≤ {rp['goal_min']} min", rp["verdict_full"]),
            ("no-op `dvc repro`", f"{rp['noop_sec']:.1f} s", f"≤ {rp['goal_noop_sec']} s", rp["verdict_noop"])]


#: the rows of summary.md per bench JSON, in page order: ``(figure, measured, goal, verdict)``
_ROWS = {"extract": _extract_rows, "long": _long_rows, "retrieval": _retrieval_rows,
         "baselines": _baseline_rows, "scale": _scale_rows, "repro": _repro_rows}


def write_summary(out_dir: Path) -> Path:
    """``summary.md``: every measured figure next to its goal, from the JSON files present; each row
    says at which commit and on which day it was measured, and is marked stale when the code it
    describes changed since (:func:`bench_age`)."""
    out_dir = Path(out_dir)
    J = {}
    for w in WHATS:
        p = out_dir / f"{w}.json"
        if p.exists():
            J[w] = json.loads(p.read_text())
    rows = []
    owner = []                       # the bench each row came from (for its age column)
    for w, make_rows in _ROWS.items():
        if J.get(w):
            new = make_rows(J[w])
            rows += new
            owner += [w] * len(new)
    m = next(iter(J.values()))["machine"] if J else machine_info()
    m_head = machine_info()["git_commit"] or "unknown"
    lines = ["# Performance summary (harp bench)", "",
             f"Machine: {m['cpu_model']}, {m['nproc']} cores, {m['mem_total_gb']} GB, no GPU; details and load "
             f"averages in each `<bench>.md`.  Missing benches: {', '.join(w for w in WHATS if w not in J) or 'none'}.", "",
             "Each row names the commit and day it was measured at.  A bench whose code "
             "(`harp_lib/bench/summary.py` BENCH_CODE) changed between that commit and the one this page "
             f"was written at ({m_head}) is not shown (listed below the table); rows after the bench rows "
             "quote the latest figure measured elsewhere (a `dvc repro` output or a recorded run), with its "
             "commit, day and source.", "",
             "| figure | measured | goal | verdict | measured at |", "|---|---|---|---|---|"]
    ages = {w: bench_age(w, J[w]) for w in J}
    hidden = sorted(w for w in J if ages[w][1] is not False)
    for (a, b_, c, d), w in zip(rows, owner):
        if w not in hidden:
            lines.append(f"| {a} | {b_} | {c} | {d} | {ages[w][0]} |")
    for a, b_, c, d, at in recorded_rows(out_dir):
        lines.append(f"| {a} | {b_} | {c} | {d} | {at} |")
    if hidden:
        lines += ["", "Not shown, because the code they describe changed since they were measured (or their commit "
                  "is unknown): " + ", ".join(f"`harp bench {w}` ({ages[w][0]})" for w in hidden) +
                  "; re-run those benches to show them."]
    png = plot_summary(out_dir, {w: x for w, x in J.items() if w not in hidden})   # no stale figure drawn
    if png is not None:
        lines += ["", f"![bench summary]({png.name})"]
    p = out_dir / "summary.md"
    p.write_text("\n".join(lines) + "\n")
    return p


#: figures measured outside ``harp bench`` (a fresh-clone ``dvc repro`` timed by hand), one per
#: entry of ``<out>/recorded.json``: figure, measured, goal, verdict, commit, date, source
RECORDED = "recorded.json"


def _git_last_change(path: Path) -> Optional[str]:
    """``"<short commit> <YYYY-MM-DD>"`` of the last commit that changed ``path`` (None: not committed)."""
    try:
        r = subprocess.run(["git", "log", "-1", "--format=%h %cs", "--", str(path)], cwd=repo_root(),
                           capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return r.stdout.strip() or None


def recorded_rows(out_dir: Path) -> list[tuple]:
    """Rows quoted from elsewhere, each with the commit and day it was measured at: ``recorded.json``
    beside the bench results, and DER / WER of the ``dvc repro`` metrics
    (``results/metrics/extract_<domain>.json``, dated by the commit that last wrote them)."""
    rows = []
    rec = Path(out_dir) / RECORDED
    if rec.exists():
        for x in json.loads(rec.read_text()):
            rows.append((x["figure"], x["measured"], x["goal"], x["verdict"],
                         f"{x['commit']} {x['date']} ({x['source']})"))
    for p in sorted((repo_root() / "results" / "metrics").glob("extract_*.json")):
        at = _git_last_change(p)
        m = json.loads(p.read_text())
        if at is None or m.get("der") is None:
            continue
        wer = f", WER {m['wer']:.3f}" if isinstance(m.get("wer"), (int, float)) else ""
        rows.append((f"Extraction {m.get('domain', p.stem[8:])} ({m.get('profile', '?')} profile): DER{' / WER' if wer else ''}",
                     f"{m['der']:.3f}{wer.replace(', WER', ' /')}", "reported", "",
                     f"{at} (`dvc repro` output {p.relative_to(repo_root())})"))
    return rows


def plot_summary(out_dir: Path, J: dict) -> Optional[Path]:
    """``summary.png`` in ``out_dir`` from the bench results ``J`` (what :func:`write_summary`
    read): extraction CPU RTF per stage and domain (stacked, with the goal) and the retrieval
    latency CDF per index size (with the p50/p99 goals).  None when neither bench ran."""
    out_dir = Path(out_dir)
    e, r = J.get("extract"), J.get("retrieval")
    if not (e or {}).get("domains") and not r:
        return None
    import matplotlib  # heavy: matplotlib (~1 s), only when drawing
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # heavy: matplotlib (~1 s), only when drawing
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.6))
    ax = axes[0]
    doms = list((e or {}).get("domains") or {})
    if doms:
        groups = ("vad", "diarization", "asr", "embeddings", "labels")
        left = np.zeros(len(doms))
        for g in groups:
            vals = np.array([sum(v for k, v in e["domains"][d].get("rtf", {}).items() if _STAGE_GROUP.get(k, k) == g)
                             for d in doms])
            ax.barh(doms, vals, left=left, label=g)
            left += vals
        ax.axvline(e["goal_rtf"], color="k", ls="--", lw=1)
        ax.text(e["goal_rtf"], len(doms) - 0.6, f"goal ≤ {e['goal_rtf']} ", ha="right", va="bottom", fontsize=8)
        ax.set_xlabel("CPU seconds per second of audio (one core)")
        ax.set_title(f"Extraction RTF per stage (wall RTF {e['rtf_wall']:.3f} with {e['workers']} workers)", fontsize=9)
        ax.legend(fontsize=7, loc="lower right")
    else:
        ax.set_axis_off()
    ax = axes[1]
    if r:
        for row in r["sizes"]:
            if row.get("cdf_ms"):
                ax.plot(row["cdf_ms"], np.arange(101), label=f"{row['n']:,} segments")
        g = r.get("goals", {})
        for key, q in (("retrieval_p50_ms_1e5", 50), ("retrieval_p99_ms_1e5", 99)):
            if key in g:
                ax.plot([g[key]], [q], "kx")
                ax.annotate(f"goal p{q} ≤ {g[key]} ms (1e5)", (g[key], q), fontsize=7, xytext=(-4, -10),
                            textcoords="offset points", ha="right")
        ax.set_xscale("log")
        ax.set_xlabel("latency of one evidence set, ms (log)")
        ax.set_ylabel("percentile")
        ax.set_title("Retrieval: all tools + merge + top-3", fontsize=9)
        ax.legend(fontsize=7, loc="lower right")
        ax.grid(alpha=0.3)
    else:
        ax.set_axis_off()
    fig.tight_layout()
    p = out_dir / "summary.png"
    fig.savefig(p, dpi=110, metadata={"Software": None})
    plt.close(fig)
    return p
