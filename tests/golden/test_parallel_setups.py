"""The infer stage answers setups in ``agent.workers`` processes; the files must be the bytes a
one-process run writes (setups share no state).  The ci notebooks (``ci_run``) ran with the
default ``agent.workers: 2``; here one domain is answered again with ``workers 1`` into scratch
folders and compared file by file."""
from __future__ import annotations

import json
import subprocess
import sys

import ci_golden

ROOT = ci_golden.ROOT

RUN = r"""
import json, sys
from harp_lib.app import pipeline
from harp_lib.config import load_config
cfg = load_config(profile="ci", overrides=json.loads(sys.argv[1]))
assert int(cfg.agent.workers) == 1
pipeline.answer_stage(cfg, "emotion", "all", progress=False)
"""


def test_one_process_writes_the_same_predictions(ci_run, tmp_path):
    cfg = ci_golden.ci_config()
    assert int(cfg.agent.workers) >= 2, "the ci run must exercise the parallel path"
    parallel = ROOT / cfg.get("paths.predictions") / "emotion"
    over = {"agent": {"workers": 1}, "paths": {"data": str(tmp_path / "data"), "predictions": str(tmp_path / "pred")}}
    r = subprocess.run(["bash", "-c", 'source scripts/deterministic_env.sh && exec "$@"', "bash",
                        sys.executable, "-c", RUN, json.dumps(over)],
                       cwd=ROOT, env=ci_golden.notebook_env(), capture_output=True, text=True, timeout=1200)
    assert r.returncode == 0, r.stderr[-3000:]
    serial = tmp_path / "pred" / "emotion"
    names = sorted(p.name for p in parallel.glob("*.jsonl"))
    assert names == [f"A{i}.jsonl" for i in range(1, 8)]
    assert sorted(p.name for p in serial.glob("*.jsonl")) == names
    for n in names:
        assert (serial / n).read_bytes() == (parallel / n).read_bytes(), n


def test_a_worker_answers_the_queries_it_is_given_without_reading_the_file(ci_run, tmp_path, monkeypatch):
    """The parallel path parsed queries.jsonl, then every worker's run_setup read it again (issue 32):
    now the parsed queries are handed over and run_setup reads no queries file."""
    from harp_lib.agent import runner
    from harp_lib.evaluate.store import load_benchmark
    cfg = ci_golden.ci_config()
    queries = list(load_benchmark("song", cfg).queries.values())[:2]
    real = runner.read_jsonl

    def no_queries_file(path, *a, **k):
        assert not str(path).endswith("queries.jsonl"), "run_setup read queries.jsonl although it was given them"
        return real(path, *a, **k)
    monkeypatch.setattr(runner, "read_jsonl", no_queries_file)
    preds = runner.run_setup(cfg, "song", "A1", queries=queries, out_path=tmp_path / "A1.jsonl", resume=False,
                             progress=False)
    assert [p.query_id for p in preds] == [q.query_id for q in queries]
