"""Run one stage in a child process and SIGKILL it midway (used by test_interrupted.py).

``python tests/reliability/killer.py STAGE ROOT N`` runs ``extract`` | ``infer`` | ``judge``
on the ci clinical benchmark under ROOT (paths as in conftest.cheap_cfg) and kills itself
with SIGKILL -- no cleanup handlers, no flushing, exactly like ``kill -9`` or the OOM killer --
while writing output item N:

* extract: after recording N-1 is complete, while the stage-1 ``turns.json`` of recording N is
  half-written to its ``.part`` file;
* infer / judge: halfway through appending row N (a torn last line).
"""
from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def _die():
    sys.stdout.flush()
    os.kill(os.getpid(), signal.SIGKILL)


def main(stage: str, root: Path, n: int) -> None:
    from rel_helpers import cheap_cfg
    cfg = cheap_cfg(root)
    if stage == "extract":
        from harp_lib.extract import pipeline as P
        from harp_lib.extract import stage1_generic as S1     # stage 1 writes turns.json
        real = S1._write_json
        recs = sorted(p.stem for p in (root / "benchmark" / "clinical" / "recordings").glob("*.wav"))

        def dying(path, obj):
            if path.name == "turns.json" and path.parent.name == recs[n - 1]:
                path.with_name(path.name + ".part").write_text('{"raw": [{"start": 0.0, "en')
                _die()
            return real(path, obj)
        S1._write_json = dying
        P.extract_domain(cfg, "clinical", progress=False)
    elif stage in ("infer", "judge"):
        from harp_lib.core import jsonl as schema  # the JSONL io of harp_lib.core.schema lives in core.jsonl
        mod = __import__("harp_lib.agent.runner" if stage == "infer" else "harp_lib.evaluate.judge",
                         fromlist=["append_jsonl"])
        count = {"n": 0}

        def dying(path, records):
            records = list(records)
            count["n"] += 1
            if count["n"] == n:
                line = schema._dumps(records[0]).encode("utf-8")
                with open(path, "ab") as fh:
                    fh.write(line[: len(line) // 2])
                    fh.flush()
                _die()
            return schema.append_jsonl(path, records)
        mod.append_jsonl = dying
        if stage == "infer":
            mod.run_setup(cfg, "clinical", "A4", progress=False)
        else:
            mod.run_judge("clinical", "A4", "rule", cfg)
    else:
        raise SystemExit(f"unknown stage {stage!r}")
    raise SystemExit(f"{stage}: finished without reaching item {n}")


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]))
