"""Print what the offline LLM rows of one domain will cost before they run (pipelines/llm/dvc.yaml).

    .venv/bin/python scripts/llm_rows_estimate.py emotion       # the first command of llm_rows@emotion

The count is exact: ``llm_rows.per_type`` question ids per query type of the domain (read from the
benchmark) x ``llm_rows.setups``, planned once per plan group (``plan_groups``: A3-A5 share one
plan) and spread over ``llm_rows.workers`` processes as ``run_llm_rows`` spreads them.  The time
is an estimate: the measured model CPU-s per plan call and per answer call of the committed
``results/bench/llm_cost_after.json`` (scripts/llm_cost.py; issue #30), times the calls of the
busiest worker.  Replies already in the cache (``llm_offline.cache_dir``) cost nothing, so a
re-run is much cheaper than printed.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FALLBACK = {"plan": 3.2, "answer": 5.6}     # CPU-s per call if the bench file is missing (0.5B, one thread)


def per_call_cpu(bench: Path) -> tuple[dict[str, float], str]:
    """Mean model CPU-s of a plan call and of an answer call in the committed bench, and its source."""
    try:
        calls = json.loads(bench.read_text(encoding="utf-8"))["calls"]
    except (OSError, ValueError, KeyError):
        return dict(FALLBACK), "fallback constants (results/bench/llm_cost_after.json missing)"
    out = {}
    for kind in ("plan", "answer"):
        c = [x["cpu_sec"] for x in calls if x.get("kind") == kind and x.get("cpu_sec")]
        out[kind] = sum(c) / len(c) if c else FALLBACK[kind]
    return out, f"{bench.relative_to(ROOT) if bench.is_relative_to(ROOT) else bench} ({len(calls)} calls)"


def estimate(cfg, domain: str, bench: Path) -> dict:
    from harp_lib.stages.llm_rows import assign_workers, llm_options, plan_groups, subset_query_ids
    from harp_lib.config import get_setup
    ids = subset_query_ids(cfg, domain)
    setups = [get_setup(s).name for s in cfg.get("llm_rows.setups")]
    cpu, source = per_call_cpu(bench)
    bins = assign_workers(setups, int(cfg.get("llm_rows.workers")))

    def calls(b):       # plan calls (one per plan group, none for oracle setups) and answer calls
        plans = sum(0 if get_setup(g[0]).oracle else 1 for g in plan_groups(b))
        return plans * len(ids), len(b) * len(ids)
    per_bin = [calls(b) for b in bins]
    cpu_bins = [p * cpu["plan"] + a * cpu["answer"] for p, a in per_bin]
    return {"domain": domain, "questions": len(ids), "setups": setups, "workers": len(bins),
            "model": llm_options(cfg).get("model"), "plan_calls": sum(p for p, _ in per_bin),
            "answer_calls": sum(a for _, a in per_bin), "cpu_sec": round(sum(cpu_bins)),
            "wall_sec": round(max(cpu_bins) if cpu_bins else 0), "source": source}


def describe(e: dict) -> str:
    return (f"LLM rows of {e['domain']}: {e['questions']} questions x {len(e['setups'])} setups "
            f"({', '.join(e['setups'])}) on {e['model']}: {e['plan_calls']} plan + {e['answer_calls']} answer "
            f"model calls in {e['workers']} worker(s); estimated {e['cpu_sec'] / 60:.1f} CPU-min, "
            f"~{e['wall_sec'] / 60:.1f} min wall with nothing cached (per-call CPU from {e['source']}). "
            "Cached replies cost nothing; stop with Ctrl-C, finished answers stay in the cache.")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("domain")
    ap.add_argument("--profile", default=None, help="params.yaml profile (default: the file's)")
    ap.add_argument("--bench", default=str(ROOT / "results" / "bench" / "llm_cost_after.json"))
    ap.add_argument("--json", action="store_true", help="print the estimate as JSON")
    a = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from harp_lib.config import load_config
    try:
        e = estimate(load_config(profile=a.profile), a.domain, Path(a.bench))
    except (FileNotFoundError, ValueError) as err:
        print(f"llm_rows_estimate: {err}", file=sys.stderr)
        return 2
    print(json.dumps(e) if a.json else describe(e), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
