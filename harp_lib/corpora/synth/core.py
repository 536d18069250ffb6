"""Shared machinery of the generator: parameters and profiles, seeded RNGs, the synthesis
cache, and the per-domain output container.

>>> p = load_params("ci", use_config=False)
>>> p["sizes"]["podcasts"], p["tie_delta"]
(1, 0.25)
>>> int(rng_for(0, "emotion", 3).integers(1000)) == int(rng_for(0, "emotion", 3).integers(1000))
True
"""
from __future__ import annotations

import copy
import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

import numpy as np

from harp_lib.core.atomic import part_path
from harp_lib.config import deep_merge, load_config, repo_root
from harp_lib.corpora.synth.rules import stable_int
from harp_lib.core.errors import HarpError

__all__ = ["PROFILES", "DEFAULT_PARAMS", "load_params", "rng_for", "SynthCache", "DomainBuild",
           "SynthError", "CACHE_VERSION", "scratch_dir"]

#: Bump when rendering code changes in a way that changes audio (invalidates the cache).
CACHE_VERSION = 1
PROFILES = ("ci", "mini", "full")


class SynthError(HarpError, RuntimeError):
    """The generator cannot run (missing tool or sound files) or produced invalid output."""


#: Mirrors the ``benchmark:`` section of params.yaml (used when no params.yaml is found).
DEFAULT_PARAMS: dict[str, Any] = {
    "cache_dir": ".cache/harp/synth",
    "sample_rate": 16000,
    "crossfade_sec": 3.0,
    "snippet_sec": 5.0,
    "tie_delta": 0.25,
    "time_round_sec": 30.0,
    "noise_floor_db": -62.0,
    "emotion": {
        "trend_min_delta": 0.08,
        "flat_max_delta": 0.03,
        "comparison_min_spread": 0.10,
        "locate_max_side_sec": 150.0,
        "event_max_gap_sec": 10.0,
        "cluster_min_events": 3,
        "cluster_max_span_sec": 300.0,
        "cluster_max_gap_sec": 60.0,
        "cluster_pad_sec": 30.0,
        "sentences_per_half": 2,
        "flat_every": 2,
    },
    "sizes": {
        "ci": {"podcasts": 1, "chapters": 1, "consultations": 3, "consult_extra_qa": 0,
               "medleys": 1, "songs": 3, "song_sec": [45, 55],
               "pairs": {"time": 3, "position": 3, "audio": 3}, "max_per_type": 4},
        "mini": {"podcasts": 2, "chapters": 5, "consultations": 20, "consult_extra_qa": 0,
                 "medleys": 1, "songs": 7, "song_sec": [90, 110],
                 "pairs": {"time": 20, "position": 20, "audio": 20}, "max_per_type": 14},
        "full": {"podcasts": 4, "chapters": 32, "consultations": 60, "consult_extra_qa": 8,
                 "medleys": 3, "songs": 20, "song_sec": [120, 300],
                 "pairs": {"time": 3, "position": 3, "audio": 4}, "max_per_type": 30},
    },
}


def load_params(profile: str, *, use_config: bool = True, overrides: Optional[dict] = None) -> dict:
    """The generator parameters for ``profile``: defaults, then params.yaml's ``benchmark:``
    section (when found), then ``overrides``.  ``sizes`` is reduced to the profile's sizes."""
    if profile not in PROFILES:
        raise SynthError(f"unknown benchmark profile {profile!r}; choose one of {', '.join(PROFILES)}")
    params = copy.deepcopy(DEFAULT_PARAMS)
    if use_config:
        if (repo_root() / "params.yaml").exists():     # no params.yaml here: defaults apply
            bench = load_config().get("benchmark")     # a broken params.yaml is an error, not ignored
            params = deep_merge(params, {k: v for k, v in bench.items() if k not in ("profile", "seed")})
    if overrides:
        params = deep_merge(params, overrides)
    params["sizes"] = params["sizes"][profile]
    params["profile"] = profile
    return params


def rng_for(seed: int, *keys) -> np.random.Generator:
    """An independent, reproducible generator for one item (strings hashed with sha256).

    Every recording, voice line and song gets its own stream, so adding a recording never
    changes the others."""
    ints = [int(seed)] + [k if isinstance(k, int) else stable_int(str(k)) for k in keys]
    return np.random.default_rng(ints)


def scratch_dir() -> Path:
    """Folder with the Debian ``scratch`` cough/sneeze recordings ($HARP_SCRATCH_DIR or
    ``.cache/harp/scratch`` under the repository root)."""
    env = os.environ.get("HARP_SCRATCH_DIR")
    p = Path(env) if env else repo_root() / ".cache" / "harp" / "scratch"
    if not (p / "Cough-male.wav").exists():
        raise SynthError(f"{p}: the scratch cough/sneeze recordings are missing; run "
                         f"scripts/bootstrap.sh (or set HARP_SCRATCH_DIR to a folder with Cough-male.wav)")
    return p


class SynthCache:
    """Content-addressed cache of rendered waveforms (float32 ``.npy``).

    The key is the sha256 of the JSON of everything that decides the audio, so a re-run or
    a larger profile reuses every utterance and song already rendered.

    >>> import tempfile
    >>> c = SynthCache(tempfile.mkdtemp())
    >>> calls = []
    >>> f = lambda: (calls.append(1), np.ones(3, np.float32))[1]
    >>> _ = c.get("tts", {"text": "hi"}, f); _ = c.get("tts", {"text": "hi"}, f)
    >>> len(calls)
    1
    """

    def __init__(self, root: Optional[os.PathLike | str]):
        self.root = Path(root) if root else None
        self.hits = self.misses = 0

    @staticmethod
    def key(kind: str, inputs: dict) -> str:
        blob = json.dumps({"kind": kind, "v": CACHE_VERSION, "inputs": inputs}, sort_keys=True,
                          ensure_ascii=True, default=str)
        return hashlib.sha256(blob.encode()).hexdigest()

    def get(self, kind: str, inputs: dict, make: Callable[[], np.ndarray]) -> np.ndarray:
        if self.root is None:
            self.misses += 1
            return np.asarray(make(), dtype=np.float32)
        k = self.key(kind, inputs)
        p = self.root / kind / k[:2] / f"{k}.npy"
        if p.exists():
            try:
                self.hits += 1
                return np.load(p, allow_pickle=False)
            except (OSError, ValueError):
                p.unlink(missing_ok=True)   # corrupt entry: render again
        self.misses += 1
        wave = np.asarray(make(), dtype=np.float32)
        p.parent.mkdir(parents=True, exist_ok=True)
        tmp = part_path(p)
        with open(tmp, "wb") as fh:
            np.save(fh, wave)
        os.replace(tmp, p)
        return wave


@dataclass
class DomainBuild:
    """Everything one domain writes: waveforms by relative path, and the records."""
    domain: str
    audio: dict = field(default_factory=dict)        # rel path -> float32 wave (16 kHz)
    recordings: list = field(default_factory=list)
    segments: list = field(default_factory=list)
    queries: list = field(default_factory=list)
