"""One benchmark-folder check for the generator and the corpus loader (one tolerance)."""
from __future__ import annotations

import json
import shutil

import pytest

from harp_lib.corpora.benchfolder import SEGMENT_END_TOLERANCE_SEC, check_domain_folder
from harp_lib.corpora.datasets import CorpusError, load_corpus
from harp_lib.corpora.synth import validate_domain
from harp_lib.corpora.synth.core import SynthError


def _overrun(folder, by: float) -> str:
    recs = {json.loads(x)["id"]: json.loads(x) for x in (folder / "recordings.jsonl").read_text().splitlines()}
    lines = (folder / "segments.jsonl").read_text().splitlines()
    last = json.loads(lines[-1])
    last["end"] = round(recs[last["recording_id"]]["duration"] + by, 3)
    lines[-1] = json.dumps(last)
    (folder / "segments.jsonl").write_text("\n".join(lines) + "\n")
    return last["id"]


@pytest.mark.parametrize("by, ok", [(SEGMENT_END_TOLERANCE_SEC - 0.1, True), (SEGMENT_END_TOLERANCE_SEC + 0.1, False)])
def test_generator_and_loader_share_the_segment_end_tolerance(ci_benchmark, tmp_path, by, ok):
    folder = tmp_path / "clinical"
    shutil.copytree(ci_benchmark / "clinical", folder)
    sid = _overrun(folder, by)
    if ok:
        assert validate_domain(folder, "clinical")["queries"]
        assert load_corpus(folder, "clinical").segments
    else:
        with pytest.raises(SynthError, match=f"{sid} ends at"):
            validate_domain(folder, "clinical")
        with pytest.raises(CorpusError, match=f"{sid} ends at"):
            load_corpus(folder, "clinical")


def test_generated_checks_are_stricter(ci_benchmark, tmp_path):
    folder = tmp_path / "emotion"
    shutil.copytree(ci_benchmark / "emotion", folder)
    qs = [json.loads(x) for x in (folder / "queries.jsonl").read_text().splitlines()]
    qs[0]["judge_info"] = {}
    (folder / "queries.jsonl").write_text("\n".join(json.dumps(q) for q in qs) + "\n")
    _, problems = check_domain_folder(folder, "emotion")
    assert problems == []                                   # a prepared corpus may lack judge_info.type
    _, problems = check_domain_folder(folder, "emotion", generated=True)
    assert problems == [f"queries.jsonl: {qs[0]['query_id']}: missing ground truth or judge_info.type"]
