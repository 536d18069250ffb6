#!/usr/bin/env python
"""Own-recording questions, end to end (issue 40): build the real recordings, `harp ingest` them,
`harp ask` every question with the rule agent and with `--agent llm`, grade the answers against the
truth in harp_lib/data/own_questions.jsonl (round 1: tuning half + its evaluation half, now "seen") and
own_questions_r2.jsonl (round 2: held out, the evaluation), write results/metrics/own_questions.json and
results/tables/own_questions.md (held-out round 2, then round 1's seen half) + own_questions_tune.md.

    .venv/bin/python scripts/own_questions.py [--agents rule llm] [--scratch DIR] [--out results]

Everything the user would run goes through the `harp` command: ingest as a subprocess, ask through
harp_lib.app.cli.main in this process (so the offline LLM loads once), both with HARP_ROOT set to a
fresh scratch root holding a copy of params.yaml (nothing is written under data/ or the caches of
the repository, except the offline LLM's joined weights, `.cache/harp/llm/weights`, shared with
every run).  Slow: about 10 minutes for the ingest and the rule agent, more for the LLM.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from harp_lib.evaluate.own_questions import (grade, load_held_out, load_own_questions, report_set,  # noqa: E402
                                             speaker_map, write_tables)
from harp_lib.evaluate.own_recordings import build, reference_turns  # noqa: E402


def _harp_env(root: Path) -> dict:
    return {**os.environ, "HARP_ROOT": str(root), "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}


def ingest(root: Path, paths: dict[str, Path]) -> dict[str, str]:
    """`harp ingest` the speech recordings and the medley: ``{recording key: recording id}``."""
    ids = {}
    for domain, keys in (("speech", ("call", "three")), ("song", ("medley",))):
        cmd = [sys.executable, "-m", "harp_lib.app.cli", "ingest", *(str(paths[k]) for k in keys), "--domain", domain,
               "--workers", "1", "--quiet", "--json"]
        p = subprocess.run(cmd, env=_harp_env(root), capture_output=True, text=True, timeout=3600)
        if p.returncode != 0:
            raise SystemExit(f"harp ingest --domain {domain} failed ({p.returncode}):\n{p.stderr[-3000:]}")
        recs = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
        for k, r in zip(keys, recs):
            ids[k] = r["id"]
            print(f"ingested {k}: {r['id']} ({r.get('duration', 0):.1f} s, {r.get('segments')} segments)", file=sys.stderr)
    return ids


def speaker_maps(root: Path, ids: dict[str, str]) -> dict[str, dict[str, str]]:
    """Diarized label -> reference speaker, per speech recording (from the ingested index)."""
    from harp_lib.config import load_config
    from harp_lib.retrieval.index import SegmentIndex
    from harp_lib.ownaudio.collection import collection
    os.environ["HARP_ROOT"] = str(root)
    idx = SegmentIndex.load(collection(load_config()).index_dir("emotion"))
    return {k: speaker_map(idx.segments(ids[k]), ref) for k, ref in reference_turns(REPO).items()}


def ask(rid: str, question: str, agent: str, extra: list[str]) -> dict:
    """One `harp ask --json --no-cache` in this process (HARP_ROOT already set): the answer record,
    or ``{"error": ...}`` when it exits without one."""
    from harp_lib.app.cli import main as harp
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = harp(["ask", rid, question, "--json", "--no-cache", "--agent", agent, "--quiet", *extra])
        except SystemExit as e:  # argparse
            rc = e.code
    line = next((x for x in out.getvalue().splitlines() if x.startswith("{")), None)
    if line is None:
        return {"error": f"rc {rc}: {err.getvalue().strip()[-500:]}", "answer": None}
    rec = json.loads(line)
    if err.getvalue().strip():
        rec["stderr"] = err.getvalue().strip()[-300:]
    return rec


def run_agent(agent: str, rows: list[dict], ids: dict, maps: dict, extra: list[str]) -> tuple[list[dict], float]:
    t0, out = time.perf_counter(), []
    for r in rows:
        t = time.perf_counter()
        a = ask(ids[r["recording"]], r["question"], agent, extra)
        v = grade(a, r["truth"], maps.get(r["recording"], {}))
        out.append({"id": r["id"], "kind": r["kind"], "half": report_set(r), "recording": r["recording"],
                    "question": r["question"], "verdict": v, "answer": a.get("answer"), "value": a.get("value"),
                    "intent": a.get("intent"), "rationale": (a.get("rationale") or "")[:300], "error": a.get("error"),
                    "sec": round(time.perf_counter() - t, 2)})
        print(f"{agent} {r['id']} [{report_set(r)}] {v:16s} {r['question']} -> {str(a.get('answer'))[:80]}", file=sys.stderr)
    return out, round(time.perf_counter() - t0, 1)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--agents", nargs="+", default=["rule", "llm"], choices=("rule", "llm"))
    ap.add_argument("--scratch", default=None, help="folder for the scratch root (default: a new temporary folder)")
    ap.add_argument("--out", default=str(REPO / "results"), help="results folder (metrics/, tables/)")
    ap.add_argument("--keep", action="store_true", help="keep the scratch folder")
    ap.add_argument("--halves", nargs="+", default=["eval", "seen", "tune"], choices=("eval", "seen", "tune"),
                    help="which sets to ask: eval (held-out round 2), seen (round 1's evaluation half), tune "
                         "(default all; a trial run of the pipeline: --halves tune)")
    a = ap.parse_args(argv)
    round_one = load_own_questions()
    rows = [r for r in round_one + load_held_out(round_one=round_one) if report_set(r) in a.halves]
    scratch = Path(tempfile.mkdtemp(prefix="own_questions_", dir=a.scratch))
    t0 = time.perf_counter()
    try:
        root = scratch / "root"
        root.mkdir()
        shutil.copy(REPO / "params.yaml", root / "params.yaml")
        ids = ingest(root, build(scratch / "audio", REPO))
        t_ingest = round(time.perf_counter() - t0, 1)
        maps = speaker_maps(root, ids)
        print(f"speaker maps: {maps}", file=sys.stderr)
        weights = ["-S", f"llm_offline.weights_dir={REPO / '.cache' / 'harp' / 'llm' / 'weights'}"]
        results, secs = {}, {}
        for agent in a.agents:
            results[agent], secs[agent] = run_agent(agent, rows, ids, maps, weights if agent == "llm" else [])
        from harp_lib.config import load_config
        cfg = load_config()
        meta = {"questions": len(rows), "eval_questions": sum(report_set(r) == "eval" for r in rows),
                "seen_questions": sum(report_set(r) == "seen" for r in rows),
                "profile": cfg.profile, "llm": f"{cfg.get('llm_offline')['model']} (offline fallback of "
                                                       f"--agent llm, llama.cpp)",
                "ingest_sec": t_ingest, **{f"{k}_ask_sec": v for k, v in secs.items()},
                "total_sec": round(time.perf_counter() - t0, 1), "cpus": os.cpu_count(), "speaker_maps": maps}
        for p in write_tables(results, meta, Path(a.out)):
            print(f"wrote {p}", file=sys.stderr)
    finally:
        if not a.keep:
            shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
