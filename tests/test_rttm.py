"""core.rttm.read_rttm: the one RTTM reader (the sample call's reference turns, bad lines named)."""
from pathlib import Path

import pytest

from harp_lib.core.rttm import read_rttm

SAMPLE = Path(__file__).resolve().parents[1] / ".cache" / "harp" / "pyannote_sample" / "sample.rttm"


@pytest.mark.skipif(not SAMPLE.is_file(), reason="no pyannote sample call: run scripts/bootstrap.sh")
def test_the_sample_call_reads_as_its_lines_say():
    lines = [ln.split() for ln in SAMPLE.read_text().splitlines() if ln.startswith("SPEAKER")]
    turns = read_rttm(SAMPLE)
    assert len(turns) == len(lines) > 0
    for (a, b, who), f in zip(turns, lines):
        assert (a, who) == (float(f[3]), f[7]) and b == pytest.approx(a + float(f[4]))
    assert read_rttm(SAMPLE, sort=True) == sorted(turns)
    assert len({w for *_, w in turns}) == 2           # two callers


def test_a_malformed_speaker_line_names_file_and_line(tmp_path):
    p = tmp_path / "bad.rttm"
    p.write_text("SPEAKER x 1 0.0 1.0 <NA> <NA> A <NA> <NA>\nSPEAKER x 1 zero 1.0 <NA> <NA> B\n")
    with pytest.raises(ValueError, match=r"bad\.rttm:2: not an RTTM SPEAKER line"):
        read_rttm(p)
    p.write_text("SPEAKER x 1 0.0\n")
    with pytest.raises(ValueError, match=r":1:"):
        read_rttm(p)
