#!/usr/bin/env python
"""Regenerate tests/golden/ci_metrics.json, the golden ci-profile numbers the test command checks.

    .venv/bin/python scripts/update_golden.py            # run the ci notebooks (every domain x setup), then write
    .venv/bin/python scripts/update_golden.py --reuse    # only re-collect from the existing data/ci outputs
    .venv/bin/python scripts/update_golden.py --check    # compare, write nothing (exit 1 on a difference)

Run it after an intended change of the ci outputs (a merged branch that changes extraction, the
agent or the scoring), review `git diff tests/golden/ci_metrics.json`, and commit it with the
change.  Tolerances and what is compared: tests/golden/ci_golden.py, docs/testing.md.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "golden")]
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import ci_golden  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reuse", action="store_true", help="do not run the notebooks; collect from data/ci as it is")
    ap.add_argument("--check", action="store_true", help="compare with the golden file, write nothing")
    a = ap.parse_args(argv)
    os.chdir(ROOT)
    if not a.reuse:
        t0 = time.time()
        print("running the ci notebooks (every domain x setup):", flush=True)
        ci_golden.run_ci_notebooks(Path(tempfile.mkdtemp(prefix="harp_golden_nb_")))
        print(f"notebooks: {time.time() - t0:.0f} s", flush=True)
    metrics = ci_golden.collect()
    if a.check:
        errs = ci_golden.compare(metrics, ci_golden.load_golden())
        print("\n".join(errs) or "matches the golden file")
        return 1 if errs else 0
    errs = ci_golden.compare(metrics, metrics)     # the run must match itself (written == recomputed)
    if errs:
        print("the notebook-written tables differ from the recomputed ones:\n" + "\n".join(errs), file=sys.stderr)
        return 1
    print(f"wrote {ci_golden.write_golden(metrics).relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
