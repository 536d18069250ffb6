"""Two processes writing one path at once (issue #27/#28): each write is atomic and private.

The temporary file used to be ``<name>.part`` for every writer, so when two processes wrote the
same path one could rename the other's half-written file away (``os.replace`` FileNotFoundError,
seen in the two-worker Dask extraction and in concurrent ``harp ingest``).  Now every write has its
own temporary name; a reader racing both writers only ever sees one complete version.
"""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from harp_lib.core.atomic import part_path

ROOT = Path(__file__).resolve().parents[2]

WRITER = textwrap.dedent("""
    import sys
    from harp_lib.core.atomic import write_json
    path, who, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    for i in range(n):
        # ~100 kB, so a write is not one syscall and a torn or foreign file would show
        write_json(path, {"who": who, "i": i, "pad": [who * 8] * 6000})
    print("done", who)
""")

READER = textwrap.dedent("""
    import json, sys, time
    path, seconds = sys.argv[1], float(sys.argv[2])
    seen, bad, end = set(), 0, time.time() + seconds
    while time.time() < end:
        try:
            d = json.loads(open(path).read())
        except FileNotFoundError:
            continue
        except ValueError:
            bad += 1
            continue
        ok = d["pad"] == [d["who"] * 8] * 6000 and isinstance(d["i"], int)
        bad += not ok
        seen.add(d["who"])
    print(json.dumps({"bad": bad, "seen": sorted(seen)}))
""")


def test_part_paths_are_unique_per_call_and_beside_the_target(tmp_path):
    names = {part_path(tmp_path / "x.json") for _ in range(1000)}
    assert len(names) == 1000 and all(p.parent == tmp_path and p.name.endswith(".part") for p in names)


@pytest.mark.slow
def test_two_processes_writing_one_path_200_times_leave_one_complete_version(tmp_path):
    target = tmp_path / "summary.json"
    env_cmd = [sys.executable, "-c"]
    kw = dict(cwd=ROOT, capture_output=True, text=True, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    reader = subprocess.Popen(env_cmd + [READER, str(target), "6"], stdout=subprocess.PIPE, text=True,
                              cwd=ROOT, env=kw["env"])
    writers = [subprocess.Popen(env_cmd + [WRITER, str(target), who, "200"], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, cwd=ROOT, env=kw["env"]) for who in ("a", "b")]
    for w in writers:
        out, err = w.communicate(timeout=300)
        assert w.returncode == 0, err[-2000:]          # old code: FileNotFoundError on the shared .part
    rout, _ = reader.communicate(timeout=300)
    seen = json.loads(rout.strip().splitlines()[-1])
    assert seen["bad"] == 0                            # never a torn or mixed file
    final = json.loads(target.read_text())
    assert final["who"] in ("a", "b") and final["i"] == 199 and final["pad"] == [final["who"] * 8] * 6000
    assert sorted(p.name for p in tmp_path.iterdir()) == ["summary.json"]   # no temporary file left
