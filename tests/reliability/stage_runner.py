"""Run one stage's CLI on the ci clinical benchmark under ROOT in a child process (paths as in
``rel_helpers.cheap_cfg``), for the storage-fault and concurrency tests.

``python tests/reliability/stage_runner.py ROOT [--fsize BYTES] -- extract --force``

``--fsize`` sets ``RLIMIT_FSIZE`` (with ``SIGXFSZ`` ignored, so a write past the limit fails
with ``EFBIG`` instead of killing the process): a full quota / file-size limit, reproduced.
"""
from __future__ import annotations

import os
import resource
import signal
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main(argv: list[str]) -> int:
    root = Path(argv[0])
    rest = argv[1:]
    if rest and rest[0] == "--fsize":
        limit = int(rest[1])
        rest = rest[2:]
    else:
        limit = None
    assert rest and rest[0] == "--", "usage: stage_runner.py ROOT [--fsize N] -- STAGE ARGS..."
    stage, args = rest[1], rest[2:]
    from rel_helpers import cheap_cfg
    cfg = cheap_cfg(root)
    assert stage in ("extract", "infer", "index", "judge", "ingest"), stage
    from harp_lib.app import cli
    cli.load_config = lambda *a, **k: cfg
    print(f"started {os.getpid()}", flush=True)
    if limit is not None:            # after the imports (they may write caches)
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
    return int(cli.main([stage, *args]) or 0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
