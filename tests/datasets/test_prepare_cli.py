import json
import shutil

from harp_lib.app.cli import main as harp
from harp_lib.corpora.datasets.common import sha256_file, write_manifest


def test_check_reports_missing_raw_files(song_src, tmp_path, capsys):
    assert harp(["prepare", "song", "--check", "--src", str(song_src)]) == 0
    assert "[OK" in capsys.readouterr().out
    src = tmp_path / "raw"
    shutil.copytree(song_src, src)
    (src / "metadata.jsonl").unlink()
    assert harp(["prepare", "song", "--check", "--src", str(src)]) == 1
    out = capsys.readouterr().out
    assert "metadata.jsonl" in out and "ASLP-lab/SongEval" in out


def test_manifest_hashes_every_file(song_out):
    out, counts = song_out
    path = write_manifest(out.parent, "paper", 42)
    m = json.loads(path.read_text())
    files = m["domains"]["song"]["sha256"]
    assert m["domains"]["song"]["counts"] == counts
    assert files["queries.jsonl"] == sha256_file(out / "queries.jsonl")
    assert "recordings/track_01.wav" in files and any(k.startswith("references/") for k in files)


def test_the_benchmark_stage_runs_prepare_for_the_corpora_source(tmp_path):
    """``benchmark.source: corpora`` (the paper profile): the stage runs ``harp prepare all`` on its own
    config; with no raw corpora that is the stage's one error naming ``harp prepare --check``
    (it was an ImportError: the stage asked for a ``main`` the prepare module no longer has)."""
    import pytest
    from harp_lib.config import load_config
    from harp_lib.stages.benchmark import build_benchmark
    raw = {d: str(tmp_path / "raw" / d) for d in ("emotion", "clinical", "song")}
    cfg = load_config(None, "paper", [f"paths.benchmark={tmp_path / 'bench'}"]
                      + [f"datasets.{d}.src={p}" for d, p in raw.items()])
    with pytest.raises(RuntimeError, match="harp prepare --check --profile paper"):
        build_benchmark(cfg, progress=False)
