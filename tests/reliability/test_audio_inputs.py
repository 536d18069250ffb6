"""Hostile audio: every class of bad file gives a correct result or a clear error naming the
file, and in extraction one bad recording is quarantined while the others finish.

Files are written by the tests (a few seconds each); the long file is a WAV header over a
sparse file, so an hour of audio costs no disk and no time to create.
"""
from __future__ import annotations

import json
import shutil
import struct
import subprocess
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from harp_lib.core import audio
from harp_lib.app import cli
from harp_lib.core.audio import AudioError
from harp_lib.extract import pipeline as P
from harp_lib.extract.streaming import LazyWave, open_wave
from harp_lib.core.jsonl import read_jsonl, write_jsonl
from harp_lib.core.schema import Recording, Segment

from rel_helpers import SR, cheap_cfg, tone

# ---------------------------------------------------------------------------------- writers


def _wav(path: Path, wave: np.ndarray, sr: int = SR, subtype: str = "PCM_16") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    sf.write(str(path), wave, sr, subtype=subtype)
    return path


def _truncate(path: Path, keep: float) -> Path:
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep)])
    return path


def _sparse_wav(path: Path, seconds: float, sr: int = SR) -> Path:
    """A valid 16-bit mono WAV of ``seconds`` of digital silence, written as a sparse file."""
    n = int(seconds * sr) * 2
    hdr = b"RIFF" + struct.pack("<I", 36 + n) + b"WAVEfmt " + struct.pack("<IHHIIHH", 16, 1, 1, sr, sr * 2, 2, 16) \
        + b"data" + struct.pack("<I", n)
    with open(path, "wb") as fh:
        fh.write(hdr)
        fh.truncate(len(hdr) + n)
    return path


# ---------------------------------------------------------------------------------- audio layer
@pytest.fixture()
def clip(tmp_path) -> Path:
    return _wav(tmp_path / "ok.wav", tone(3.0))


def test_corrupt_file_is_a_clear_error(tmp_path):
    p = tmp_path / "corrupt.wav"
    p.write_bytes(np.random.default_rng(0).integers(0, 256, 4000, dtype=np.uint8).tobytes())
    with pytest.raises(AudioError, match="corrupt.wav.*not a readable audio file"):
        audio.load(p)


def test_zero_length_and_header_only_files(tmp_path, clip):
    empty = tmp_path / "empty.wav"
    empty.write_bytes(b"")
    with pytest.raises(AudioError, match=r"empty\.wav: file is empty \(0 bytes\)"):
        audio.load(empty)
    hdr = tmp_path / "hdr.wav"
    hdr.write_bytes(clip.read_bytes()[:44])                   # header promising 3 s, no samples
    assert audio.load(hdr).shape == (0,)                      # nothing to read is not a crash
    with pytest.raises(AudioError, match=r"hdr\.wav: contains no samples"):
        audio.validate(hdr)


def test_truncated_file_is_detected_by_its_header(tmp_path, clip):
    p = _truncate(Path(shutil.copy(clip, tmp_path / "trunc.wav")), 0.5)
    info = audio.probe(p)
    assert info.header_frames == 3 * SR and abs(info.duration - 1.5) < 0.01
    assert len(audio.load(p)) == info.frames                  # what is there can still be read
    with pytest.raises(AudioError, match=r"trunc\.wav: header says 3\.00 s but only 1\.50 s"):
        audio.validate(p, decode=False)


def test_header_longer_than_data_is_a_duration_mismatch(tmp_path, clip):
    b = bytearray(clip.read_bytes())
    b[40:44] = struct.pack("<I", 4 * (len(b) - 44))           # data chunk claims 12 s
    p = tmp_path / "liar.wav"
    p.write_bytes(bytes(b))
    with pytest.raises(AudioError, match=r"liar\.wav: header says 12\.00 s but only 3\.00 s"):
        audio.validate(p)


@pytest.mark.slow
def test_wrong_extensions_decode_by_content(tmp_path, clip):
    as_mp3 = shutil.copy(clip, tmp_path / "really_wav.mp3")
    assert np.allclose(audio.load(as_mp3), audio.load(clip))
    mp3 = tmp_path / "real.mp3"
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-i", str(clip), str(mp3)], check=True, timeout=60)
    as_wav = shutil.copy(mp3, tmp_path / "really_mp3.wav")
    m4a = tmp_path / "real.m4a"
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-i", str(clip), "-c:a", "aac", str(m4a)], check=True, timeout=60)
    aac_as_wav = shutil.copy(m4a, tmp_path / "really_aac.wav")   # libsndfile cannot: ffmpeg fallback
    ref = audio.load(clip)
    for p in (as_wav, aac_as_wav):
        x = audio.load(p)
        assert abs(len(x) - len(ref)) < 0.05 * SR, p
        # the same 220 Hz tone at the same level (codec delay and loss aside)
        spec = np.abs(np.fft.rfft(x))
        assert abs(np.argmax(spec) * SR / len(x) - 220.0) < 2.0, p
        assert abs(audio.rms_db(x) - audio.rms_db(ref)) < 1.0, p


def test_nan_and_inf_samples_are_refused_naming_the_file(tmp_path):
    w = tone(2.0)
    w[SR // 2] = np.nan
    w[SR] = np.inf
    p = _wav(tmp_path / "nan.wav", w, subtype="FLOAT")
    for f in (audio.load, audio.validate):
        with pytest.raises(AudioError, match=r"nan\.wav: contains NaN or infinite samples \(first at 0\.500 s\)"):
            f(p)
    assert audio.load(p, end=0.4).shape == (int(0.4 * SR),)   # clean windows before it still load


@pytest.mark.parametrize("sr,channels", [(44100, 2), (22050, 1), (8000, 1), (48000, 2)])
def test_stereo_and_odd_rates_become_16k_mono(tmp_path, sr, channels):
    mono = audio.resample(tone(2.0, freq=440.0), SR, sr)
    w = np.stack([mono, 0.5 * mono], 1) if channels == 2 else mono
    p = _wav(tmp_path / f"x{sr}.wav", w, sr)
    x = audio.load(p)
    assert x.dtype == np.float32 and x.ndim == 1 and abs(len(x) - 2 * SR) <= 2
    # the tone is still 440 Hz after the rate change (a wrong-rate read would shift it)
    spec = np.abs(np.fft.rfft(x))
    assert abs(np.argmax(spec) * SR / len(x) - 440.0) < 2.0


def test_clipped_and_over_range_audio(tmp_path):
    w = tone(1.0, amp=5.0)
    clipped = audio.load(_wav(tmp_path / "clip.wav", np.clip(w, -1, 1)))
    assert np.abs(clipped).max() <= 1.0 and np.isfinite(clipped).all()
    over = audio.load(_wav(tmp_path / "over.wav", w, subtype="FLOAT"))   # float WAVs may exceed 1
    assert np.abs(over).max() > 1.0 and np.isfinite(over).all()
    audio.write(tmp_path / "back.wav", over, SR)                        # writing clips to [-1, 1]
    assert np.abs(audio.load(tmp_path / "back.wav")).max() <= 1.0


def test_urls_and_missing_files(tmp_path):
    with pytest.raises(AudioError, match="expected a local audio file, got a URL"):
        audio.probe("https://example.org/a.wav")
    with pytest.raises(AudioError, match=r"nope\.wav: no such audio file"):
        audio.load(tmp_path / "nope.wav")
    with pytest.raises(AudioError, match="is a directory"):
        audio.load(tmp_path)


@pytest.mark.slow
def test_very_long_file_streams_in_bounded_memory(tmp_path):
    p = _sparse_wav(tmp_path / "long.wav", 3600.0)              # 1 h: 115 MB of PCM, 230 MB as float32
    assert audio.probe(p).duration == 3600.0
    tracemalloc.start()
    try:
        n = 0
        for span, w in audio.iter_windows(p, window=60.0):
            n += len(w)
        audio.validate(p)                                       # full decode, 60 s windows
        lazy = open_wave(p, SR, 3600.0, stream_above_sec=1800.0)
        assert isinstance(lazy, LazyWave) and len(lazy) == 3600 * SR
        assert lazy[1000 * SR:1001 * SR].shape == (SR,)          # one second, read from disk
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert n == 3600 * SR
    # memory follows the 60 s window (3.8 MB as float32), never the 230 MB file
    assert peak < 24 * 2 ** 20, f"streaming peaked at {peak / 2 ** 20:.0f} MiB"


# ---------------------------------------------------------------------------------- extraction
GOOD = ("speech16k", "silence", "music", "stereo44k", "rate22k", "rate8k", "clipped", "wav_as_mp3",
        "mp3_as_wav")
BAD = {  # recording id -> what the quarantine entry must say
    "corrupt": "corrupt.wav: not a readable audio file",
    "truncated": "truncated.wav: header says",
    "empty": "empty.wav: file is empty",
    "no_samples": "no_samples.wav: contains no samples",
    "nan": "nan.wav: contains NaN or infinite samples",
    "missing": "missing.wav: no such audio file",
    "wrong_duration": "recordings.jsonl says 30.00 s but the file holds 4.00 s",
    "escapes": "escapes the data root",
    "url": "expected a local file path, got a URL",
}


@pytest.fixture(scope="module")
def hostile_domain(tmp_path_factory, speech_wave) -> Path:
    """A clinical domain folder holding every good and bad recording kind."""
    d = tmp_path_factory.mktemp("hostile") / "clinical"
    rec = d / "recordings"
    first = speech_wave[: int(3.6 * SR)]                      # one TTS sentence
    sp = np.concatenate([np.zeros(SR // 2, np.float32), first, np.zeros(SR // 2, np.float32)])
    files = {
        "speech16k": _wav(rec / "speech16k.wav", sp),
        "silence": _wav(rec / "silence.wav", np.zeros(4 * SR, np.float32)),
        "music": _wav(rec / "music.wav", sum(tone(4.0, freq=f, amp=0.15) for f in (261.6, 329.6, 392.0))),
        "stereo44k": _wav(rec / "stereo44k.wav", np.stack([audio.resample(sp, SR, 44100)] * 2, 1), 44100),
        "rate22k": _wav(rec / "rate22k.wav", audio.resample(sp, SR, 22050), 22050),
        "rate8k": _wav(rec / "rate8k.wav", audio.resample(sp, SR, 8000), 8000),
        "clipped": _wav(rec / "clipped.wav", np.clip(sp * 20, -1, 1)),
        "wav_as_mp3": shutil.copy(_wav(rec / "tmp.wav", sp), rec / "wav_as_mp3.mp3"),
    }
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-i", str(rec / "tmp.wav"), "-f", "mp3",
                    str(rec / "mp3_as_wav.wav")], check=True, timeout=60)
    files["mp3_as_wav"] = rec / "mp3_as_wav.wav"
    (rec / "tmp.wav").unlink()
    (rec / "corrupt.wav").write_bytes(b"RIFF\x00\x00" + bytes(range(256)) * 8)
    _truncate(_wav(rec / "truncated.wav", sp), 0.4)
    (rec / "empty.wav").write_bytes(b"")
    (rec / "no_samples.wav").write_bytes(_wav(rec / "x.wav", sp).read_bytes()[:44])
    (rec / "x.wav").unlink()
    w = sp.copy()
    w[SR] = np.nan
    _wav(rec / "nan.wav", w, subtype="FLOAT")
    _wav(rec / "wrong_duration.wav", tone(4.0))
    (d.parent / "outside.wav").write_bytes(rec.joinpath("speech16k.wav").read_bytes())
    dur = {k: audio.probe(v).duration for k, v in files.items()}
    recs = [Recording(k, "clinical", f"recordings/{Path(v).name}", dur[k]) for k, v in files.items()]
    def dur_of(k):   # what the manifest would say: the probed length where there is one
        try:
            return audio.probe(rec / f"{k}.wav").duration
        except AudioError:
            return 5.0
    recs += [Recording(k, "clinical", f"recordings/{k}.wav", dur_of(k)) for k in
             ("corrupt", "truncated", "empty", "no_samples", "nan", "missing")]
    recs += [Recording("wrong_duration", "clinical", "recordings/wrong_duration.wav", 30.0),
             Recording("escapes", "clinical", "../outside.wav", 5.0),
             Recording("url", "clinical", "https://example.org/consult.wav", 5.0)]
    write_jsonl(d / "recordings.jsonl", recs)
    return d


@pytest.fixture(scope="module")
def hostile_run(hostile_domain, tmp_path_factory):
    out = tmp_path_factory.mktemp("hostile_out") / "clinical"
    rep = P.extract_domain(cheap_cfg(), "clinical", bench_dir=hostile_domain, out_dir=out, progress=False)
    return rep, out


def test_bad_recordings_are_quarantined_and_the_others_finish(hostile_run):
    rep, out = hostile_run
    assert sorted(r["id"] for r in rep["recordings"]) == sorted(GOOD)
    assert rep["n_quarantined"] == len(BAD)
    q = {e["recording_id"]: e for e in read_jsonl_dicts(out / "quarantine.jsonl")}
    assert set(q) == set(BAD)
    for rid, msg in BAD.items():
        assert msg in q[rid]["error"], (rid, q[rid]["error"])
        assert (out / "quarantine" / f"{rid}.json").exists()
        assert not (out / "segments" / f"{rid}.jsonl").exists()
    for rid in GOOD:
        segs = read_jsonl(out / "segments" / f"{rid}.jsonl", Segment)
        assert [s.start for s in segs] == sorted(s.start for s in segs)
        v = np.load(out / "vectors" / f"{rid}.audio.npy", allow_pickle=False)
        assert v.shape[0] == len(segs) and np.isfinite(v).all()


def read_jsonl_dicts(p: Path) -> list[dict]:
    return [json.loads(line) for line in p.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_silence_gives_empty_segments_and_speech_does_not(hostile_run):
    _, out = hostile_run
    assert read_jsonl(out / "segments" / "silence.jsonl", Segment) == []
    assert np.load(out / "vectors" / "silence.audio.npy").shape[0] == 0
    assert len(read_jsonl(out / "segments" / "speech16k.jsonl", Segment)) >= 1


def test_music_where_speech_is_expected_is_processed(hostile_run):
    _, out = hostile_run
    segs = read_jsonl(out / "segments" / "music.jsonl", Segment)
    assert all(0 <= s.start < s.end <= 4.0 + 1e-3 for s in segs)
    assert all(s.labels.get("primary") in ("no cough",) or "cough" in s.labels.get("primary", "") for s in segs)


def _speech(out: Path, rid: str) -> list[tuple[float, float]]:
    return [tuple(x) for x in json.loads((out / "stage1" / rid / "speech.json").read_text())]


@pytest.mark.parametrize("rid", ["stereo44k", "rate22k", "rate8k", "clipped", "wav_as_mp3", "mp3_as_wav"])
def test_odd_formats_find_the_same_speech_as_16k_mono(hostile_run, rid):
    """Resampled / downmixed / clipped / renamed copies: VAD finds speech at the same times."""
    _, out = hostile_run
    ref, got = _speech(out, "speech16k"), _speech(out, rid)
    tot = lambda spans: sum(b - a for a, b in spans)  # noqa: E731
    assert got and abs(tot(got) - tot(ref)) < 0.25 * tot(ref), (rid, got, ref)
    assert abs(got[0][0] - ref[0][0]) < 0.3 and abs(got[-1][1] - ref[-1][1]) < 0.5, (rid, got, ref)


@pytest.mark.slow
def test_quarantine_is_lifted_when_the_file_is_fixed(hostile_domain, hostile_run, tmp_path):
    rep, out = hostile_run
    d = tmp_path / "clinical"
    shutil.copytree(hostile_domain, d)
    out2 = tmp_path / "out"
    shutil.copytree(out, out2)
    shutil.copy(d / "recordings" / "speech16k.wav", d / "recordings" / "nan.wav")
    recs = [r if r.id != "nan" else r.replace(duration=audio.probe(d / "recordings" / "nan.wav").duration)
            for r in read_jsonl(d / "recordings.jsonl", Recording)]
    write_jsonl(d / "recordings.jsonl", recs)
    rep2 = P.extract_domain(cheap_cfg(), "clinical", bench_dir=d, out_dir=out2, recordings=["nan"], progress=False)
    assert [r["id"] for r in rep2["recordings"]] == ["nan"]
    assert rep2["n_quarantined"] == len(BAD) - 1
    assert not (out2 / "quarantine" / "nan.json").exists()
    assert (out2 / "segments" / "nan.jsonl").exists()
    # and the other way round: a recording that breaks is taken out of the index
    (d / "recordings" / "speech16k.wav").write_bytes(b"not audio any more")
    rep3 = P.extract_domain(cheap_cfg(), "clinical", bench_dir=d, out_dir=out2, recordings=["speech16k"],
                            progress=False)
    assert rep3["recordings"] == [] and "speech16k" in {q["recording_id"] for q in rep3["quarantine"]}
    assert not (out2 / "segments" / "speech16k.jsonl").exists()
    assert not (out2 / "vectors" / "speech16k.audio.npy").exists()


def test_cli_prints_the_quarantine_count(hostile_domain, tmp_path, capsys, monkeypatch):
    import yaml
    from harp_lib.config import load_config
    root = tmp_path / "repo"
    root.mkdir()
    params = yaml.safe_load((load_config().root / "params.yaml").read_text())
    params["profile"] = "ci"
    params["profiles"]["ci"]["paths"] = {"benchmark": str(tmp_path / "bench"), "extract": str(tmp_path / "ext")}
    params["profiles"]["ci"]["extract"] = {"workers": 1, "backends": {"asr": None, "text_emb": None}}
    (root / "params.yaml").write_text(yaml.safe_dump(params))
    d = tmp_path / "bench" / "clinical"
    shutil.copytree(hostile_domain, d)
    keep = {"silence", "empty", "nan"}
    write_jsonl(d / "recordings.jsonl", [r for r in read_jsonl(d / "recordings.jsonl", Recording) if r.id in keep])
    monkeypatch.setenv("HARP_ROOT", str(root))
    # a partial quarantine exits 1 (issue #28; was 0), listing each quarantined recording; the
    # good recording's outputs are kept
    assert cli.main(["extract", "--domain", "clinical", "--quiet"]) == 1
    cap = capsys.readouterr()
    assert json.loads(cap.out.strip().splitlines()[-1])["n_quarantined"] == 2
    assert "2 recording(s) quarantined" in cap.err and "nan.wav: contains NaN" in cap.err
    listed = [ln.split()[0] for ln in cap.err.splitlines() if ln.startswith("  ")]
    assert sorted(listed) == ["empty", "nan"], cap.err
    assert (tmp_path / "ext" / "clinical" / "segments" / "silence.jsonl").is_file()
    # every recording bad: the command fails
    write_jsonl(d / "recordings.jsonl", [r for r in read_jsonl(d / "recordings.jsonl", Recording) if r.id != "silence"])
    assert cli.main(["extract", "--domain", "clinical", "--quiet"]) == 1
