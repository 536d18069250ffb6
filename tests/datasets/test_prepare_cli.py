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
