"""Scale-out: engines map in input order, LLM calls stay bounded, and extraction output does not
depend on the number of Dask workers."""
from __future__ import annotations

import os
import subprocess
import threading
import time
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from harp_lib.core import audio  # noqa: E402
from harp_lib.extract import scale
from harp_lib.core.jsonl import write_jsonl  # noqa: E402
from harp_lib.core.schema import Recording


def _square(x):
    return x * x


def test_bounded_map_keeps_order_and_bound():
    live, peak, lock = [0], [0], threading.Lock()

    def call(x):
        with lock:
            live[0] += 1
            peak[0] = max(peak[0], live[0])
        time.sleep(0.02)
        with lock:
            live[0] -= 1
        return x * 10

    assert scale.bounded_map(call, range(12), max_concurrency=3) == [x * 10 for x in range(12)]
    assert 2 <= peak[0] <= 3


def test_scale_settings_validate_engine():
    assert scale.scale_settings(None)["engine"] == "local"
    with pytest.raises(ValueError, match="scale.engine"):
        scale.scale_settings(None, engine="spark")


@pytest.mark.slow
def test_map_items_local_and_dask_agree():
    xs = [3, 1, 4, 1, 5]
    assert scale.map_items(_square, xs, engine="local", workers=1) == [9, 1, 16, 1, 25]
    assert scale.map_items(_square, xs, engine="dask", workers=2) == [9, 1, 16, 1, 25]
    with pytest.raises(ValueError, match="unknown scale engine"):
        scale.map_items(_square, xs, engine="ray")


@pytest.fixture(scope="module")
def three_calls(tmp_path_factory) -> Path:
    """clinical/ with two short two-voice recordings (flite)."""
    root = tmp_path_factory.mktemp("scale_bench")
    tmp = tmp_path_factory.mktemp("tts")
    d = root / "clinical"
    recs = []
    for i, (a, b) in enumerate([("slt", "rms"), ("rms", "slt")]):
        parts = []
        for j, (v, t) in enumerate([(a, "I have a cough and a sore throat."), (b, "How long has it lasted?")]):
            subprocess.run(["flite", "-voice", v, "-t", t, "-o", str(tmp / f"{i}{j}.wav")], check=True, timeout=60)
            parts += [audio.load(tmp / f"{i}{j}.wav"), np.zeros(8000, np.float32)]
        w = np.concatenate(parts)
        audio.write(d / "recordings" / f"c{i}.wav", w, 16000)
        recs.append(Recording(f"c{i}", "clinical", f"recordings/c{i}.wav", len(w) / 16000))
    write_jsonl(d / "recordings.jsonl", recs)
    return root


@pytest.mark.slow
def test_dask_extraction_identical_with_one_and_two_workers(three_calls, tmp_path):
    from harp_lib.config import load_config
    cfg = load_config(profile="mini", overrides={"paths": {"benchmark": str(three_calls)}})
    reps = {}
    for w in (1, 2):
        reps[w] = scale.extract_domain_scaled(cfg, "clinical", engine="dask", workers=w,
                                              out_dir=tmp_path / f"w{w}", progress=False)
    assert reps[1]["n_recordings"] == reps[2]["n_recordings"] == 2
    assert reps[2]["engine"] == "dask" and reps[2]["workers"] == 2
    assert sorted(p.name for p in (tmp_path / "w2" / "segments").glob("*.jsonl")) == ["c0.jsonl", "c1.jsonl"]
    assert scale.compare_outputs(tmp_path / "w1", tmp_path / "w2") == []
    # and a real difference is reported
    p = tmp_path / "w2" / "segments" / "c0.jsonl"
    p.write_text(p.read_text().replace("SPEAKER_00", "SPEAKER_09"))
    assert scale.compare_outputs(tmp_path / "w1", tmp_path / "w2") == ["segments/c0.jsonl: contents differ"]
