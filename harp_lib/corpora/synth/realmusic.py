"""A medley of *real recorded* music (not rendered MIDI) for measuring song segmentation.

The tracks ship in Debian packages under free licences and are fetched by
``scripts/bootstrap.sh`` into ``.cache/harp/music/`` ($HARP_MUSIC_DIR overrides):

* ``neverball-common`` (GPL-2+): the six in-game tracks ``bgm/track1..6.ogg`` (64-115 s,
  electronic/orchestral game music; the 64, 72 and 73 s tracks are below the paper's 90 s
  minimum song length),
* ``asc-music`` (GPL-2+, Michael Kievernagel): three orchestral/rock pieces of 290-441 s.

:func:`real_medley` joins them in a seeded order with the benchmark's 3 s linear crossfades
(:func:`harp_lib.core.audio.crossfade_concat`), and the reference boundaries are the middles of
the crossfades, as in the benchmark metrics (``harp_lib.extract.quality``).
:func:`segmentation_f1` runs a song segmenter over it and scores boundary F1.

>>> [t.split("_")[0] for t in TRACKS].count("neverball")
6
"""
from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

from harp_lib.core import audio
from harp_lib.config import create_backend, load_config, repo_root
from harp_lib.corpora.synth.core import SynthError
from harp_lib.corpora.synth.voices import normalize_rms
from harp_lib.extract.quality import boundary_f1

__all__ = ["TRACKS", "music_dir", "real_medley", "segmentation_f1"]

SR = 16000
#: files expected in :func:`music_dir` (name -> Debian package)
TRACKS: dict[str, str] = {
    **{f"neverball_track{i}.ogg": "neverball-common" for i in range(1, 7)},
    "asc_frontiers.mp3": "asc-music", "asc_machine_wars.mp3": "asc-music", "asc_time_to_strike.mp3": "asc-music",
}


def music_dir() -> Path:
    """Folder with the packaged music ($HARP_MUSIC_DIR or ``.cache/harp/music``)."""
    env = os.environ.get("HARP_MUSIC_DIR")
    p = Path(env) if env else repo_root() / ".cache" / "harp" / "music"
    missing = [t for t in TRACKS if not (p / t).exists()]
    if missing:
        raise SynthError(f"{p}: real music tracks {missing[:3]}{'...' if len(missing) > 3 else ''} are missing; "
                         f"run scripts/bootstrap.sh (Debian packages neverball-common, asc-music) or set "
                         f"HARP_MUSIC_DIR to a folder holding them")
    return p


def real_medley(tracks: Optional[Sequence[str]] = None, seed: int = 0, fade: float = 3.0,
                folder: Optional[Path] = None) -> tuple[np.ndarray, list[float], list[tuple[str, float, float]]]:
    """``(wave, reference_boundaries, [(track, start, end), ...])`` of the tracks joined in a
    seeded order with ``fade`` s crossfades (16 kHz mono, each track at -20 dBFS RMS)."""
    folder = Path(folder) if folder else music_dir()
    names = list(tracks) if tracks else sorted(TRACKS)
    order = [names[int(i)] for i in np.random.default_rng(seed).permutation(len(names))]
    waves = [normalize_rms(audio.load(folder / n, sr=SR), -20.0) for n in order]
    wave, spans = audio.crossfade_concat(waves, SR, fade=fade)
    bounds = [(a.end + b.start) / 2 for a, b in zip(spans[:-1], spans[1:])]
    return wave, bounds, [(n, round(s.start, 3), round(s.end, 3)) for n, s in zip(order, spans)]


def segmentation_f1(segmenter, tracks: Optional[Sequence[str]] = None, seed: int = 0, fade: float = 3.0,
                    tol: float = 3.0, folder: Optional[Path] = None) -> dict:
    """Boundary precision / recall / F1 (±``tol`` s) of ``segmenter.boundaries`` on the medley."""
    wave, ref, layout = real_medley(tracks, seed, fade, folder)
    hyp = segmenter.boundaries(wave, SR)
    m = boundary_f1(ref, hyp, tol)
    m.update({"reference": [round(b, 2) for b in ref], "found": [round(b, 2) for b in hyp],
              "layout": layout, "minutes": round(len(wave) / SR / 60, 2)})
    return m


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``python -m harp_lib.corpora.synth.realmusic [--seeds 0 1 2] [--out results/metrics/realmusic_boundaries.json]``:
    boundary F1 of the configured ``kernel_cpd`` (params.yaml) on the real medley in each seed's
    track order, written as JSON (and printed as a table)."""
    ap = argparse.ArgumentParser(prog="python -m harp_lib.corpora.synth.realmusic", description=main.__doc__)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--out", default="results/metrics/realmusic_boundaries.json")
    a = ap.parse_args(argv)
    opts = dict(load_config().extract["options"]["kernel_cpd"])
    seg = create_backend("song_boundaries", {"name": "kernel_cpd", **opts})
    rows = {}
    for s in a.seeds:
        m = segmentation_f1(seg, seed=s)
        rows[f"seed{s}"] = {k: m[k] for k in ("f1", "precision", "recall", "reference", "found", "minutes")}
        print(f"seed {s}: F1 {m['f1']:.2f}  P {m['precision']:.2f}  R {m['recall']:.2f}  "
              f"({len(m['found'])} found / {len(m['reference'])} reference boundaries, {m['minutes']} min)")
    out = {"segmenter": "kernel_cpd", "options": opts, "tolerance_sec": 3.0, "fade_sec": 3.0, "orders": rows}
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
