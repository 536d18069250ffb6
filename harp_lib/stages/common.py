"""What every stage module shares: the config of a notebook run, reproducible JSON and figures.

The files ``dvc.yaml`` tracks are byte-deterministic (so a second ``dvc repro``, or a fresh
clone, leaves ``dvc.lock`` and ``results/`` unchanged):

* wall-clock timings never go into DVC outputs, the folders stages depend on, or ``results/``:
  they are written under ``<paths.data>/timings/`` (:func:`timings_path`, not tracked);
* metrics JSON is written with sorted keys and rounded floats (:func:`write_json`); figures
  without the "Software" PNG text chunk (:func:`save_figure`).

>>> cfg = config("ci")
>>> cfg.profile, cfg.get("paths.results").startswith("data/ci")
('ci', True)
>>> sorted(deterministic_metrics({"der": 0.123456, "rtf": {"vad": 0.1}, "stage_sec": {}}))
['der']
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping, Optional

from harp_lib.config import Config, load_config
from harp_lib.core.atomic import atomic_write
from harp_lib.core.progress import quiet_library_bars
from harp_lib.core.results_io import TIMING_KEYS, deterministic_metrics, timings_path, write_json  # noqa: F401
from harp_lib.extract.paper_models import offline_by_default

__all__ = ["config", "write_json", "deterministic_metrics", "timings_path", "save_figure", "group_by"]


def config(profile: Optional[str] = None, overrides: Optional[Mapping] = None) -> Config:
    """params.yaml with the profile overlay: ``profile`` > ``$HARP_PROFILE`` > params ``profile``.

    ``overrides`` (a nested dict, e.g. ``{"agent": {"top_k": 1}}``) is merged last; the sweep
    uses it to redirect outputs into a scratch folder.
    """
    offline_by_default()           # HF_HUB_OFFLINE=1 unless the user set it (messages say who did)
    quiet_library_bars()           # no frozen "Loading weights 0%" widgets in executed notebooks
    return load_config(profile=profile or None, overrides=overrides or None)


def save_figure(fig, path: os.PathLike | str, *, dpi: int = 120) -> Path:
    """Save a matplotlib figure reproducibly (no "Software" text chunk) and close it."""
    import matplotlib.pyplot as plt  # heavy: matplotlib (~1 s), only when drawing
    p = Path(path)
    fmt = p.suffix.lstrip(".") or "png"
    atomic_write(p, lambda t: fig.savefig(t, dpi=dpi, metadata={"Software": None}, format=fmt))
    plt.close(fig)
    return p



def group_by(items, key) -> dict:
    """``{key(item): [items with that key, in order]}``.

    >>> group_by([1, 2, 3, 4], lambda x: x % 2)
    {1: [1, 3], 0: [2, 4]}
    """
    out: dict = {}
    for it in items:
        out.setdefault(key(it), []).append(it)
    return out
