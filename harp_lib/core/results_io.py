"""Writing result files: stable JSON (:func:`write_json`), metrics without machine-dependent
timings (:func:`deterministic_metrics`), and where results and timings go.

The lowest layer of result writing, shared by the stage modules (:mod:`harp_lib.stages`) and
the services that write metrics (:mod:`harp_lib.extract.quality`).
"""
from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any, Mapping, Protocol

__all__ = ["TIMING_KEYS", "write_json", "deterministic_metrics", "results_path", "timings_path"]


class _Configured(Protocol):
    """What these helpers need of a :class:`harp_lib.config.Config` (core does not import config)."""
    def path(self, key: str) -> Path: ...


#: Keys whose values depend on the machine (left out of DVC-tracked metrics).
TIMING_KEYS = frozenset({"stage_sec", "rtf", "rtf_total_cpu", "rtf_wall", "run", "wall_sec", "timing",
                         "timings", "seconds"})


def _round(obj: Any, nd: int = 6) -> Any:
    if isinstance(obj, float):
        return None if math.isnan(obj) else round(obj, nd)
    if isinstance(obj, Mapping):
        return {str(k): _round(v, nd) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_round(v, nd) for v in obj]
    return obj


def write_json(path: os.PathLike | str, obj: Any, *, digits: int = 6) -> Path:
    """Write ``obj`` as stable JSON (sorted keys, floats rounded to ``digits``, NaN -> null)."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(_round(obj, digits), indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return p


def deterministic_metrics(m: Mapping) -> dict:
    """``m`` without the machine-dependent timing keys (:data:`TIMING_KEYS`), recursively."""
    return {k: (deterministic_metrics(v) if isinstance(v, Mapping) else v)
            for k, v in m.items() if k not in TIMING_KEYS}


def results_path(cfg: _Configured, *parts: str) -> Path:
    """``<paths.results>/<parts...>``."""
    return cfg.path("paths.results").joinpath(*parts)


def timings_path(cfg: _Configured, *parts: str) -> Path:
    """Where machine-dependent timings go: ``<paths.data>/timings/...`` (never a DVC out or dep)."""
    return cfg.path("paths.data").joinpath("timings", *parts)
