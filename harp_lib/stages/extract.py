"""Stage ``extract@<domain>`` (notebooks/01_extract): extract one domain and score it."""
from __future__ import annotations

from typing import Optional

from harp_lib.config import Config
from harp_lib.extract.pipeline import extract_domain
from harp_lib.extract.quality import extract_metrics as write_extract_metrics

__all__ = ["extract_stage", "extract_metrics"]


def extract_stage(cfg: Config, domain: str, *, force: bool = False, workers: Optional[int] = None,
                  progress: bool = True) -> dict:
    """Extract one domain and score it against ground truth.

    Writes ``paths.extract/<domain>/`` (segments, vectors, spaces.json; stage-1 cache under
    ``stage1/``), ``results/metrics/extract_<domain>.json`` without timings, and the full report
    with timings and real-time factors to ``<paths.data>/timings/extract_<domain>.json``.
    Returns the full metrics dict.
    """
    w = int(cfg.extract.workers) if workers is None else int(workers)
    rep = extract_domain(cfg, domain, force=force, workers=w, progress=progress)
    return extract_metrics(cfg, domain, rep)


def extract_metrics(cfg: Config, domain: str, run_report: Optional[dict] = None) -> dict:
    """Score ``paths.extract/<domain>`` against ground truth (:func:`harp_lib.extract.quality.extract_metrics`):
    the full report (with timings) goes to ``<paths.data>/timings/extract_<domain>.json`` and the
    timing-free metrics (a DVC out) to ``results/metrics/extract_<domain>.json``."""
    return write_extract_metrics(cfg, domain, run_report)

