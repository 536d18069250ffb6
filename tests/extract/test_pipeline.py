"""The extraction pipeline: output contract, idempotence, resume after a kill, stage 2 alone."""
import json

import numpy as np
import pytest

from harp_lib.app.cli import main as harp
from harp_lib.config import create_backend, load_config
from harp_lib.extract import pipeline as P
from harp_lib.extract import stage1_generic, turn_steps
from harp_lib.extract.quality import evaluate_domain
from harp_lib.core.jsonl import read_jsonl
from harp_lib.core.schema import Segment


def cfg():
    return load_config(profile="mini", overrides={"extract": {"workers": 1,
                                                              "options": {"kernel_cpd": {"min_song_sec": 15.0}}}})


def _outputs(out):
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*"))
            if p.is_file() and "stage1" not in p.parts}


@pytest.mark.slow
def test_emotion_contract_and_idempotent(speech_bench, tmp_path):
    out = tmp_path / "emotion"
    rep = P.extract_domain(cfg(), "emotion", bench_dir=speech_bench / "emotion", out_dir=out, progress=False)
    segs = read_jsonl(out / "segments" / "rec1.jsonl", Segment)
    assert segs and [s.start for s in segs] == sorted(s.start for s in segs)
    assert [s.id for s in segs] == [f"rec1_ext_{i:04d}" for i in range(len(segs))]
    assert all(s.source == "extracted" and s.speaker.startswith("SPEAKER_") for s in segs)
    assert all(s.end - s.start <= 20.0 + 1.0 for s in segs)
    spaces = json.loads((out / "spaces.json").read_text())
    assert set(spaces) == {"text", "audio", "domain"}
    for space, info in spaces.items():
        v = np.load(out / "vectors" / f"rec1.{space}.npy")
        assert v.dtype == np.float32 and v.shape == (len(segs), info["dim"])
        assert all(s.embeddings[space] == i for i, s in enumerate(segs))
        # the agent can embed queries in the same space
        emb = create_backend(f"{space}_emb", info["backend"])
        assert emb.dim == info["dim"]
    assert "tomatoes" in " ".join(s.text for s in segs)
    assert all(s.labels["primary"] and 0 <= s.labels["valence"] <= 1 for s in segs)
    assert rep["rtf_total_cpu"] > 0 and "asr" in rep["stage_sec"]
    before = _outputs(out)
    P.extract_domain(cfg(), "emotion", bench_dir=speech_bench / "emotion", out_dir=out, progress=False)
    assert _outputs(out) == before                      # second run: nothing changes, no duplicates
    P.extract_domain(cfg(), "emotion", stage=2, force=True, bench_dir=speech_bench / "emotion", out_dir=out,
                     progress=False)
    assert _outputs(out) == before                      # stage 2 alone reproduces the same files


@pytest.mark.slow
def test_killed_run_resumes_without_duplicates(speech_bench, tmp_path, monkeypatch):
    out = tmp_path / "emotion"
    calls = {"n": 0}
    real = stage1_generic.stage1.__globals__["_model"]

    def dying_model(stage, spec):
        if stage == "text_emb":
            calls["n"] += 1
            raise KeyboardInterrupt("simulated kill during text embedding")
        return real(stage, spec)

    monkeypatch.setitem(stage1_generic.stage1.__globals__, "_model", dying_model)
    with pytest.raises(KeyboardInterrupt):
        P.extract_domain(cfg(), "emotion", bench_dir=speech_bench / "emotion", out_dir=out, progress=False)
    cache = out / "stage1" / "rec1"
    assert (cache / "asr.json").exists() and not (cache / "done.json").exists()
    assert not (out / "segments" / "rec1.jsonl").exists()
    asr_mtime = (cache / "asr.json").stat().st_mtime_ns
    monkeypatch.setitem(stage1_generic.stage1.__globals__, "_model", real)
    P.extract_domain(cfg(), "emotion", bench_dir=speech_bench / "emotion", out_dir=out, progress=False)
    assert (cache / "asr.json").stat().st_mtime_ns == asr_mtime      # finished steps were not redone
    segs = read_jsonl(out / "segments" / "rec1.jsonl", Segment)
    assert len({s.id for s in segs}) == len(segs)
    assert np.load(out / "vectors" / "rec1.text.npy").shape[0] == len(segs)
    assert not list(out.rglob("*.part"))


@pytest.mark.slow
def test_song_and_clinical_pipeline_and_metrics(speech_bench, song_bench, tmp_path):
    c = cfg()
    out = tmp_path / "song"
    P.extract_domain(c, "song", bench_dir=song_bench / "song", out_dir=out, progress=False)
    segs = read_jsonl(out / "segments" / "m1.jsonl", Segment)
    assert {s.speaker for s in segs} == {"SONG_01", "SONG_02"} and max(s.duration for s in segs) <= 15.0 + 1.0
    assert all(s.labels["primary"] in ("High", "Mid", "Low") for s in segs)
    m = evaluate_domain(c, "song", bench_dir=song_bench / "song", out_dir=out, metrics_path=tmp_path / "m.json")
    assert m["boundary_f1"] == 1.0 and m["tier_accuracy"] is not None and "rtf" in m
    out = tmp_path / "clinical"
    P.extract_domain(c, "clinical", bench_dir=speech_bench / "clinical", out_dir=out, progress=False)
    m = evaluate_domain(c, "clinical", bench_dir=speech_bench / "clinical", out_dir=out,
                        metrics_path=tmp_path / "c.json")
    assert set(json.loads((out / "spaces.json").read_text())) == {"text", "audio"}
    assert m["vad_f1"] > 0.8 and m["cough_f1"] == 1.0 and m["wer"] < 0.6
    assert json.loads((tmp_path / "c.json").read_text())["der_settings"]["collar_total_sec"] == 0.5


def test_cli_reports_missing_manifest(tmp_path, capsys, monkeypatch):
    text = (load_config().root / "params.yaml").read_text()
    (tmp_path / "params.yaml").write_text(text)
    monkeypatch.setenv("HARP_ROOT", str(tmp_path))
    assert harp(["extract", "--domain", "emotion", "--quiet"]) == 2
    assert "recordings.jsonl" in capsys.readouterr().err


@pytest.mark.slow
def test_cli_metrics_keep_timings_out_of_results(speech_bench, tmp_path, monkeypatch):
    """`harp extract --metrics` by hand writes the same timing-free file the DVC stage writes."""
    import shutil
    text = (load_config().root / "params.yaml").read_text()
    (tmp_path / "params.yaml").write_text(text)
    shutil.copytree(speech_bench / "clinical", tmp_path / "data" / "benchmark" / "clinical")
    monkeypatch.setenv("HARP_ROOT", str(tmp_path))
    assert harp(["extract", "--domain", "clinical", "--metrics", "--workers", "1", "--quiet", "--profile", "mini"]) == 0
    tracked = json.loads((tmp_path / "results" / "metrics" / "extract_clinical.json").read_text())
    full = json.loads((tmp_path / "data" / "timings" / "extract_clinical.json").read_text())
    assert "rtf" in full and "stage_sec" in full and "run" in full
    assert not {"rtf", "stage_sec", "run", "rtf_total_cpu"} & set(tracked)
    assert tracked["cough_f1"] == full["cough_f1"] == 1.0
    # the words of every segment go beside the metrics (a DVC out `harp verify` reads), not to timings/
    tsv = (tmp_path / "results" / "metrics" / "extract_clinical.transcripts.tsv").read_text().splitlines()
    segs = [json.loads(line) for f in sorted((tmp_path / "data" / "extract" / "clinical" / "segments").glob("*.jsonl"))
            for line in f.read_text().splitlines()]
    assert tsv[0] == "segment_id\tstart\tend\ttext" and len(tsv) == len(segs) + 1 > 1
    assert {line.split("\t")[0] for line in tsv[1:]} == {s["id"] for s in segs}
    assert not (tmp_path / "data" / "timings" / "extract_clinical.transcripts.tsv").exists()


@pytest.mark.slow
@pytest.mark.parametrize("pack_sec", [0.0, 8.0])
def test_parallel_asr_matches_serial(speech_bench, pack_sec):
    """A recording extracted alone decodes its turns (or packed runs of turns) in ``workers``
    processes; every clip is decoded from the decoder's initial state and the packing does not
    depend on ``workers``, so the transcripts equal the serial ones."""
    from harp_lib.core import audio
    from harp_lib.extract.settings import extract_settings
    from harp_lib.extract.turns import Turn
    from harp_lib.core.timespan import Span
    wave = audio.load(speech_bench / "emotion" / "recordings" / "rec1.wav", sr=16000)
    dur = len(wave) / 16000
    turns = [Turn(round(i * dur / 10, 3), round((i + 1) * dur / 10, 3), "S") for i in range(10)]
    speech = [Span(0.0, dur)]
    c = load_config(profile="mini", overrides={"extract": {"options": {"whisper_ct2": {"pack_sec": pack_sec}}}})
    st = extract_settings(c, "emotion")
    groups = turn_steps.pack_turns(turns, speech, pack_sec, 0.2)
    assert len(groups) == (10 if pack_sec == 0 else len(groups)) and 2 <= len(groups) <= 10
    serial = turn_steps.transcribe_turns(st, wave, turns, speech)
    cpu: dict = {}
    parallel = turn_steps.transcribe_turns(st, wave, turns, speech, workers=2, cpu=cpu)
    assert cpu.get("asr_workers", 0) > 0                  # the worker processes did decode
    assert parallel == serial
    assert any(r["words"] for r in serial)
    if pack_sec == 0:          # each turn's clip: its words lie inside it
        assert all(t.start <= w[1] <= w[2] <= t.end + 0.2 for t, r in zip(turns, serial) for w in r["words"])
    else:                      # a packed clip: each word goes to the turn holding its middle (turns abut here)
        assert all(t.start <= (w[1] + w[2]) / 2 <= t.end for t, r in zip(turns, serial) for w in r["words"])


@pytest.mark.slow
@pytest.mark.parametrize("domain,rec", [("emotion", "rec1"), ("clinical", "c1")])
def test_parallel_labels_match_serial(speech_bench, domain, rec):
    """Labelers whose per-turn work is independent (cough bursts, symptom keyword spotting) or
    whose features are (prosody, normalised per speaker afterwards) run in worker processes;
    the labels equal the one-process ones."""
    from harp_lib.core import audio
    from harp_lib.extract.settings import extract_settings
    from harp_lib.extract.turns import Turn
    wave = audio.load(speech_bench / domain / "recordings" / f"{rec}.wav", sr=16000)
    dur = len(wave) / 16000
    turns = [Turn(round(i * dur / 8, 3), round((i + 1) * dur / 8, 3), f"S{i % 2}") for i in range(8)]
    st = extract_settings(cfg(), domain)
    texts = ["i have a cough and a fever", "no", "my throat is sore", "", "", "yes", "chest pain", "ok"]
    serial = turn_steps.label_turns(st, wave, turns, texts)
    parallel = turn_steps.label_turns(st, wave, turns, texts, workers=2)
    assert parallel == serial
    if domain == "clinical":
        assert sum(lab["cough_count"] for lab in serial) >= 1        # the real coughs are found
