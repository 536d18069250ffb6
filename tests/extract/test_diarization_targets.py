"""Issue 27 diarization targets.

The real call's target (DER <= 0.05 at collar 0.25 s) is met with the overlap backend
(extract/overlap.py, pyannote segmentation-3.0): 0.012.  The offline ``spectral`` diarizer alone
stays at 0.093 (overlap missed 0.040, and a 0.43 s first utterance given to the other caller);
docs/extract.md, "Where `spectral` fails on the ~31-min mini recordings" and "Overlap".
"""
import pytest


@pytest.mark.slow
def test_real_call_der_at_quarter_second_collar(sample_call):
    from harp_lib.config import load_config
    from harp_lib.extract.quality import sample_der
    d = sample_der(*sample_call, load_config(overrides=["extract.backends.overlap=seg30"]), collar=0.25)
    assert d["n_speakers_hyp"] == 2
    assert d["der"] <= 0.05, d
    assert d["overlap_sec"] > 1.0, d           # two speakers labelled where both talk
