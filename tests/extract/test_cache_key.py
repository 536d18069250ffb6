"""The extraction cache follows the audio's content and the extraction options, not the id."""
import json
import shutil

import numpy as np
import pytest

from harp_lib.core import audio
from harp_lib.extract import pipeline as P
from harp_lib.core.jsonl import read_jsonl
from harp_lib.core.schema import Segment
from harp_lib.extract.stage_cache import stage1_key

from harp_testing import small_cfg


@pytest.mark.slow
def test_other_audio_same_id_and_duration_is_re_extracted(speech_bench, tmp_path):
    bench = tmp_path / "emotion"
    shutil.copytree(speech_bench / "emotion", bench)
    out = tmp_path / "out"
    cfg = small_cfg()
    P.extract_domain(cfg, "emotion", bench_dir=bench, out_dir=out, progress=False)
    first = read_jsonl(out / "segments" / "rec1.jsonl", Segment)
    done1 = json.loads((out / "stage1" / "rec1" / "done.json").read_text())
    assert done1["key"]["audio_sha256"] == P.file_sha256(bench / "recordings" / "rec1.wav")
    # same id, same length, same manifest line: only the samples differ (the recording reversed)
    wav = bench / "recordings" / "rec1.wav"
    w = audio.load(wav, sr=16000)
    audio.write(wav, np.ascontiguousarray(w[::-1]), 16000)
    P.extract_domain(cfg, "emotion", bench_dir=bench, out_dir=out, progress=False)
    second = read_jsonl(out / "segments" / "rec1.jsonl", Segment)
    done2 = json.loads((out / "stage1" / "rec1" / "done.json").read_text())
    assert done2["key"]["audio_sha256"] != done1["key"]["audio_sha256"]
    assert [s.text for s in second] != [s.text for s in first]
    assert "tomatoes" in " ".join(s.text for s in first) and "tomatoes" not in " ".join(s.text for s in second)
    # unchanged audio and options: served from the cache (files untouched)
    mtime = (out / "segments" / "rec1.jsonl").stat().st_mtime_ns
    P.extract_domain(cfg, "emotion", bench_dir=bench, out_dir=out, progress=False)
    assert (out / "segments" / "rec1.jsonl").stat().st_mtime_ns == mtime


def test_changed_backend_option_invalidates_the_stage1_cache(speech_bench, tmp_path):
    st_a = P._settings(small_cfg(), "emotion")
    st_b = P._settings(small_cfg(options={"silero": {"threshold": 0.6}}), "emotion")
    assert stage1_key(st_a, "x") != stage1_key(st_b, "x")          # option, same backend name
    assert stage1_key(st_a, "x") != stage1_key(st_a, "y")          # content
    assert stage1_key(st_a, "x") == stage1_key(P._settings(small_cfg(), "emotion"), "x")
