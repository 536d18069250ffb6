"""Where evaluation inputs and outputs live, and loading a domain's ground truth once.

Paths follow docs/architecture.md::

    data/benchmark/<domain>/queries.jsonl, segments.jsonl, recordings.jsonl
    data/predictions/<domain>/<setup>.jsonl
    data/judgements/<domain>/<setup>.<judge>.jsonl
    data/scores/<domain>/<setup>.<judge>.jsonl

>>> import tempfile
>>> from harp_lib.config import load_config
>>> judgements_path(load_config(), "emotion", "A5", "rule").as_posix().endswith("data/judgements/emotion/A5.rule.jsonl")
True
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from harp_lib.config import Config, get_setup, load_config
from harp_lib.core.paths import DataPaths
from harp_lib.core.jsonl import read_jsonl
from harp_lib.core.record import SchemaError
from harp_lib.core.schema import Query, Recording, Segment
from harp_lib.core.segments import SegmentSet
from harp_lib.core.errors import HarpError

__all__ = ["Benchmark", "UnknownQueryError", "load_benchmark", "benchmark_dir", "predictions_path",
           "judgements_path", "scores_path", "scores_dir", "setup_name", "results_dir"]


class UnknownQueryError(HarpError, KeyError):
    """A prediction names a query id the benchmark does not have (never scored as 0)."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0])


def _cfg(cfg: Optional[Config]) -> Config:
    return cfg if cfg is not None else load_config()


# thin names kept for callers; the paths themselves are built (and checked) by harp_lib.core.paths
def benchmark_dir(cfg: Optional[Config], domain: str) -> Path:
    return DataPaths(_cfg(cfg)).benchmark(domain)


def setup_name(setup: str) -> str:
    """The setup part of every file name: the canonical row name (the one place it is normalised).

    >>> setup_name("a5"), setup_name("R5"), setup_name("hybrid_all")
    ('A5', 'A5', 'A5')
    """
    return get_setup(setup).name


def predictions_path(cfg: Optional[Config], domain: str, setup: str) -> Path:
    """``data/predictions/<domain>/<setup>.jsonl`` (setup normalised by :func:`setup_name`)."""
    return DataPaths(_cfg(cfg)).predictions(domain, setup_name(setup))


def judgements_path(cfg: Optional[Config], domain: str, setup: str, judge: str) -> Path:
    return DataPaths(_cfg(cfg)).judgements(domain, setup_name(setup), judge)


def scores_path(cfg: Optional[Config], domain: str, setup: str, judge: str) -> Path:
    return DataPaths(_cfg(cfg)).scores(domain, setup_name(setup), judge)


def scores_dir(cfg: Optional[Config], domain: str) -> Path:
    """``data/scores/<domain>/``."""
    return DataPaths(_cfg(cfg)).scores_dir(domain)


def results_dir(cfg: Optional[Config], *parts: str) -> Path:
    return DataPaths(_cfg(cfg)).results(*parts)


@dataclass
class Benchmark:
    """The ground truth of one domain: queries by id, GT segments by recording, durations."""
    domain: str
    root: Path
    queries: dict[str, Query]
    segments: dict[str, list[Segment]] = field(default_factory=dict)
    durations: dict[str, float] = field(default_factory=dict)

    @property
    def gt_by_id(self) -> dict[str, Segment]:
        if not hasattr(self, "_by_id"):
            self._by_id = {s.id: s for segs in self.segments.values() for s in segs}
        return self._by_id

    def query(self, query_id: str, *, source: str = "") -> Query:
        """The query ``query_id``; :class:`UnknownQueryError` naming ``source`` when missing."""
        try:
            return self.queries[query_id]
        except KeyError:
            raise UnknownQueryError(
                f"{source or 'prediction'}: query_id {query_id!r} is not in "
                f"{self.root / 'queries.jsonl'} ({len(self.queries)} queries); the predictions were "
                f"made for another benchmark -- re-run `harp infer` on this one") from None

    def recording_segments(self, recording_id: str) -> list[Segment]:
        return self.segments.get(recording_id, [])

    def duration(self, recording_id: str) -> Optional[float]:
        if recording_id in self.durations:
            return self.durations[recording_id]
        segs = self.segments.get(recording_id)
        return max(s.end for s in segs) if segs else None


def load_benchmark(domain: str, cfg: Optional[Config] = None, *, root: Optional[Path] = None) -> Benchmark:
    """Read ``queries.jsonl``, ``segments.jsonl`` and (if present) ``recordings.jsonl`` of a domain.

    ``root`` overrides the folder (default ``paths.benchmark/<domain>``).
    """
    root = Path(root) if root else benchmark_dir(cfg, domain)
    qpath = root / "queries.jsonl"
    if not qpath.exists():
        raise FileNotFoundError(f"{qpath}: no queries for domain {domain!r}; build the benchmark "
                                f"first (harp synth) or set paths.benchmark in params.yaml")
    queries: dict[str, Query] = {}
    for q in read_jsonl(qpath, Query):
        if q.query_id in queries:
            raise SchemaError(f"duplicate query_id {q.query_id!r}", path=qpath)
        if q.domain != domain:
            raise SchemaError(f"query {q.query_id} has domain {q.domain!r}, expected {domain!r}", path=qpath)
        queries[q.query_id] = q
    segments = SegmentSet.read(root / "segments.jsonl", missing_ok=True).by_recording(ordered=True)
    durations = {}
    rpath = root / "recordings.jsonl"
    if rpath.exists():
        durations = {r.id: r.duration for r in read_jsonl(rpath, Recording)}
    return Benchmark(domain, root, queries, segments, durations)
