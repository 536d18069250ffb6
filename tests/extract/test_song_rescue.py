"""The kernel_cpd rescue pass: a song boundary whose left/right contrast is weak (same
instruments) but whose long-window rhythm (tempo/metre) profile changes is kept; a section
change inside one song (other instruments, same beat) is not."""
from __future__ import annotations

import numpy as np
import pytest

from harp_lib.config import create_backend, load_config

SR = 16000


def _part(sec: float, freqs, bpm: float) -> np.ndarray:
    t = np.arange(int(sec * SR)) / SR
    tone = sum(np.sin(2 * np.pi * f * t) / (i + 1) for i, f in enumerate(freqs))
    return tone * np.exp(-((t % (60.0 / bpm)) / 0.08))       # a decaying note on every beat


@pytest.mark.slow
def test_song_boundary_rescue_keeps_a_tempo_change_and_not_a_section_change():
    # 0-50 s and 50-100 s: one "song" (120 bpm) changing instruments; 100-150 s: the same
    # instruments at 84 bpm (a new song)
    w = np.concatenate([_part(50, (220, 440, 660), 120), _part(50, (247, 740, 1480, 2960), 120),
                        _part(50, (247, 740, 1480, 2960), 84)]).astype(np.float32) * 0.1
    w += np.random.default_rng(0).standard_normal(len(w)).astype(np.float32) * 1e-3
    opts = dict(load_config().extract["options"]["kernel_cpd"], min_song_sec=20.0, cand_min_sec=10.0)
    assert opts["rescue_contrast"] is not None and opts["rescue_contrast"] < opts["min_contrast"]

    def seg(**kw):
        return create_backend("song_boundaries", {"name": "kernel_cpd", **opts, **kw})

    cands = [t for t, _ in seg().candidates(w, SR)]
    assert any(abs(t - 50.0) <= 3.0 for t in cands) and any(abs(t - 100.0) <= 3.0 for t in cands), cands
    # every candidate below min_contrast: only the rescue pass can accept one
    assert seg(min_contrast=1e9, rescue_contrast=None).boundaries(w, SR) == []
    found = seg(min_contrast=1e9, rescue_contrast=0.0).boundaries(w, SR)
    assert len(found) == 1 and abs(found[0] - 100.0) <= 1.5, found
