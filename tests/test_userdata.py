"""Your own recordings: `harp ingest` an mp3 of two real (flite) voices, `harp ask` about it.

Everything goes through the `harp` command in a scratch repository root (HARP_ROOT with a copy
of params.yaml), so the test also proves that user runs never write into results/.
"""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from harp_lib.core import audio
from harp_lib.app.cli import main as harp
from harp_lib.config import load_config
from harp_lib.core.jsonl import read_jsonl
from harp_lib.core.schema import Recording
from harp_testing import spoken_turns

SR = 16000
LINES = [("slt", "Good morning and welcome to the show, today we talk about the garden."),
         ("rms", "Thank you for having me, I grow tomatoes and beans every summer."),
         ("slt", "Wonderful, so what should a beginner plant first?")]
TOL = 0.6          # seconds: diarization turn boundaries vs the known start of the second voice


def _mp3(wave: np.ndarray, path: Path) -> None:
    """44.1 kHz stereo mp3 (what a user's phone or podcast app gives), via a 16 kHz wav."""
    wav = path.with_suffix(".src.wav")
    audio.write(wav, wave, SR)
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", "-i", str(wav), "-ar", "44100", "-ac", "2",
                    str(path)], check=True, timeout=120)
    wav.unlink()


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    """A scratch repository root and the two-speaker recording, known truth included."""
    root = tmp_path_factory.mktemp("root")
    shutil.copy(load_config().root / "params.yaml", root / "params.yaml")
    tts = tmp_path_factory.mktemp("tts")
    wave, segs = spoken_turns(LINES, tts, "r", pause_sec=0.8, labels={})
    lead = np.zeros(int(1.0 * SR), np.float32)            # one second of silence before the first voice
    wave = np.concatenate([lead, wave])
    wave += (np.random.default_rng(0).standard_normal(len(wave)) * 10 ** (-62 / 20)).astype(np.float32)
    src = tmp_path_factory.mktemp("my audio") / "two voices.mp3"
    _mp3(wave, src)
    return {"root": root, "src": src, "truth": [s.start + 1.0 for s in segs], "tts": tts}


def _run(monkeypatch, root: Path, *argv: str, capsys) -> tuple[int, str, str]:
    monkeypatch.setenv("HARP_ROOT", str(root))
    capsys.readouterr()
    rc = harp(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


@pytest.fixture(scope="module")
def ingested(home):
    mp = pytest.MonkeyPatch()
    mp.setenv("HARP_ROOT", str(home["root"]))
    try:
        recs = harp(["ingest", str(home["src"]), "--domain", "speech", "--quiet", "--profile", "mini",
                     "--workers", "1"])
    finally:
        mp.undo()
    assert recs == 0
    return home


@pytest.mark.slow
def test_ingest_converts_once_into_the_user_collection(ingested):
    root = ingested["root"]
    col = root / "data" / "user" / "default" / "emotion"          # speech -> the emotion (podcast) pipeline
    (rec,) = read_jsonl(col / "recordings.jsonl", Recording)
    assert rec.id == "two_voices" and rec.domain == "emotion"
    assert rec.custom["source"] == str(ingested["src"]) and rec.custom["domain_word"] == "speech"
    info = audio.probe(col / rec.audio_path)
    assert (info.sample_rate, info.channels) == (SR, 1)
    assert abs(rec.duration - info.duration) < 0.01 and rec.duration > 10
    assert (root / "data" / "user" / "default" / "index" / "emotion").is_dir()
    assert not (root / "results").exists()


@pytest.mark.slow
def test_ask_second_speaker_matches_the_known_truth(ingested, monkeypatch, capsys):
    rc, out, err = _run(monkeypatch, ingested["root"], "ask", "two_voices", "When does the second speaker first talk?",
                        "--json", "--profile", "mini", capsys=capsys)
    assert rc == 0, err
    a = json.loads(out)
    assert a["intent"] == "speaker_first" and not a["cached"]
    assert abs(a["value"] - ingested["truth"][1]) <= TOL, (a["value"], ingested["truth"])
    assert a["evidence"] and a["plan"] and a["rationale"]
    # the printed form shows plan, evidence, answer and rationale
    rc, out, _ = _run(monkeypatch, ingested["root"], "ask", "two_voices", "When does the second speaker first talk?",
                      "--profile", "mini", capsys=capsys)
    assert rc == 0 and all(k in out for k in ("Plan:", "Evidence:", "Answer:", "Rationale:", "[cached]"))
    assert "tomatoes" in out or "thank" in out.lower()


@pytest.mark.slow
def test_ask_cache_is_keyed_on_content_not_on_a_query_id(ingested):
    from harp_lib.app.pipeline import ask, config
    cfg = config("mini").with_overrides({"paths": {"data": str(ingested["root"] / "data")}})
    q = "When does the second speaker first talk?"
    a1 = ask("two_voices", q, cfg=cfg)
    a2 = ask("two_voices", q, cfg=cfg)
    assert a2.cached and (a2.answer, a2.key) == (a1.answer, a1.key)
    edited = ask("two_voices", "When does the first speaker first talk?", cfg=cfg)   # an edited question
    assert not edited.cached and edited.key != a1.key
    assert abs(edited.value - ingested["truth"][0]) <= TOL
    other_setup = ask("two_voices", q, cfg=cfg, setup="A3")                          # same text, other config
    assert not other_setup.cached and other_setup.key != a1.key
    other_cfg = ask("two_voices", q, cfg=cfg.with_overrides({"agent": {"top_k": 1}}))
    assert not other_cfg.cached and other_cfg.key != a1.key


@pytest.mark.slow
def test_more_questions_and_clear_refusals(ingested):
    from harp_lib.app.pipeline import ask, config
    from harp_lib.ownaudio.collection import UserDataError
    cfg = config("mini").with_overrides({"paths": {"data": str(ingested["root"] / "data")}})
    assert ask("two_voices", "How many speakers are there?", cfg=cfg).value == 2
    # Whisper tiny hears the espeak voice's "tomatoes" as "to may toes" when it decodes the turns
    # together (both engines), so the mention questions name words it hears in every engine
    garden = ask("two_voices", "When does someone mention the garden?", cfg=cfg)
    assert ingested["truth"][0] - TOL <= garden.value <= ingested["truth"][1], garden
    said = ask("two_voices", "When does someone mention beans?", cfg=cfg)
    assert ingested["truth"][1] - TOL <= said.value <= ingested["truth"][2], said
    who = ask("two_voices", f"Who is speaking at {int(ingested['truth'][1]) + 2} seconds?", cfg=cfg)
    second = ask("two_voices", "When does the second speaker first talk?", cfg=cfg)
    assert who.value == second.evidence[-1].speaker
    with pytest.raises(UserDataError, match="no ingested recording 'nope'"):
        ask("nope", "When does the second speaker first talk?", cfg=cfg)
    with pytest.raises(UserDataError, match="ground truth"):
        ask("two_voices", "When does the second speaker first talk?", cfg=cfg, setup="A6")
    assert ask("two_voices", "Is it raining?", cfg=cfg).answer == "unsupported question"


@pytest.mark.slow
def test_ids_are_safe_and_unique_and_bad_input_is_one_line(ingested, monkeypatch, capsys, tmp_path):
    from harp_lib.ownaudio.collection import safe_id, unique_id
    assert safe_id("/x/My Call (final) #2.MP3") == "My_Call_final_2"
    assert safe_id("../../etc/passwd") == "passwd" and safe_id("...") == "rec"
    assert unique_id("two_voices", {"two_voices"}) == "two_voices_2"
    bad = tmp_path / "notes.mp3"
    bad.write_text("not audio")
    rc, out, err = _run(monkeypatch, ingested["root"], "ingest", str(bad), "--domain", "speech", "--quiet",
                        capsys=capsys)
    assert rc == 2 and err.startswith("harp ingest: ") and "not a readable audio file" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    rc, out, err = _run(monkeypatch, ingested["root"], "ingest", str(tmp_path / "missing.wav"), "--domain", "speech",
                        capsys=capsys)
    assert rc == 2 and "no such audio file" in err


@pytest.mark.slow
def test_metrics_on_user_data_say_why_and_never_touch_results(ingested, monkeypatch, capsys):
    root = ingested["root"]
    rc, out, err = _run(monkeypatch, root, "extract", "--collection", "default", "--metrics", "--quiet",
                        "--workers", "1", "--profile", "mini", capsys=capsys)
    assert rc == 2 and "ground-truth" in err and "nothing was written to results/" in err
    assert "Traceback" not in err
    # a benchmark folder without ground truth (paths.benchmark pointed at one's own data)
    from harp_lib.extract.quality import evaluate_domain
    from harp_lib.app.pipeline import config
    cfg = config("mini").with_overrides({"paths": {"data": str(root / "data"), "results": str(root / "results")}})
    col = root / "data" / "user" / "default"
    with pytest.raises(FileNotFoundError, match="segments.jsonl is missing"):
        evaluate_domain(cfg, "emotion", bench_dir=col / "emotion", out_dir=col / "extract" / "emotion")
    assert not (root / "results").exists()


@pytest.mark.slow
def test_explorer_takes_free_text_questions_on_ingested_recordings(ingested):
    from harp_lib.app.pipeline import config
    from harp_lib.viz.explorer import Explorer
    from harp_lib.viz.explorer_state import ExplorerState
    cfg = config("mini").with_overrides({"paths": {"data": str(ingested["root"] / "data")}})
    st = ExplorerState(cfg, collection="default", hearing=False)
    assert st.domain == "emotion" and st.recording_ids == ["two_voices"] and st.segments
    a = st.ask("When does the second speaker first talk?")
    assert abs(a.value - ingested["truth"][1]) <= TOL and st.answer is a
    ex = Explorer(state=st)
    ex.text.value = "How many speakers are there?"
    ex.run()
    assert "Answer: 2" in ex.overview.value


@pytest.mark.slow
def test_changed_audio_is_re_extracted_and_re_answered(ingested, monkeypatch, capsys, tmp_path):
    """Same file path (same id), other audio: the second voice now starts 3 s later."""
    root, src = ingested["root"], ingested["src"]
    wave, segs = spoken_turns(LINES, tmp_path, "r2", pause_sec=0.8, labels={})
    gap = np.zeros(int(3.0 * SR), np.float32)
    first = int(round(segs[1].start * SR))
    wave = np.concatenate([np.zeros(SR, np.float32), wave[:first], gap, wave[first:]])
    wave += (np.random.default_rng(1).standard_normal(len(wave)) * 10 ** (-62 / 20)).astype(np.float32)
    _mp3(wave, src)                    # (the last test of the module: the fixture's file changes)
    rc, out, err = _run(monkeypatch, root, "ingest", str(src), "--domain", "speech", "--quiet", "--profile",
                        "mini", "--workers", "1", "--json", capsys=capsys)
    assert rc == 0, err
    r = json.loads(out)
    assert r["id"] == "two_voices" and r["converted"]
    rc, out, err = _run(monkeypatch, root, "ask", "two_voices", "When does the second speaker first talk?",
                        "--json", "--profile", "mini", capsys=capsys)
    a = json.loads(out)
    assert not a["cached"]
    assert abs(a["value"] - (segs[1].start + 1.0 + 3.0)) <= TOL, a["value"]
    assert not (root / "results").exists()


@pytest.mark.slow
def test_same_file_name_elsewhere_gets_its_own_id_and_flac_works(ingested, monkeypatch, capsys, tmp_path):
    root = ingested["root"]
    other = tmp_path / "elsewhere" / "two voices.flac"
    other.parent.mkdir()
    wave = audio.load(ingested["src"], sr=SR)
    audio.write(other, wave, SR, subtype="PCM_16")
    rc, out, err = _run(monkeypatch, root, "ingest", str(other), "--domain", "speech", "--quiet", "--profile",
                        "mini", "--workers", "1", "--json", capsys=capsys)
    assert rc == 0, err
    r = json.loads(out)
    assert r["id"] == "two_voices_2" and r["source"] == str(other) and r["segments"] > 0
    ids = [x.id for x in read_jsonl(root / "data" / "user" / "default" / "emotion" / "recordings.jsonl", Recording)]
    assert ids == ["two_voices", "two_voices_2"]
    rc, out, err = _run(monkeypatch, root, "ask", "two_voices_2", "How many speakers are there?", "--json",
                        "--collection", "default", "--profile", "mini", capsys=capsys)
    assert rc == 0 and json.loads(out)["value"] == 2
