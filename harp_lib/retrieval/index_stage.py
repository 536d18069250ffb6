"""The ``harp index`` stage: :func:`build_index` (a domain's index from its extraction, under
both folders' locks; the library call for notebooks) and its command line (``add_arguments`` /
``run``, loaded by :mod:`harp_lib.app.cli`)."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

from harp_lib.config import load_config
from harp_lib.core.locks import stage_lock
from harp_lib.core.paths import DataPaths
from harp_lib.core.jsonl import read_jsonl
from harp_lib.core.schema import Recording
from harp_lib.retrieval.index import SegmentIndex

__all__ = ["build_index", "add_arguments", "run"]


def _durations(manifest: Path) -> Optional[dict[str, float]]:
    """recording id -> duration from a recordings manifest (None when there is none)."""
    if not manifest.is_file():
        return None
    return {r.id: float(r.duration) for r in read_jsonl(manifest, Recording) if r.duration}


def build_index(domain: str, cfg=None, *, progress: bool = True) -> SegmentIndex:
    """Build ``paths.index/<domain>`` from ``paths.extract/<domain>`` (library call for notebooks).

    Holds the index folder's lock and the extraction folder's (an extraction writing into it
    is waited for, harp_lib.core.locks)."""
    dp = DataPaths(cfg or load_config())
    src, dst = dp.extract_dir(domain), dp.index(domain)
    with stage_lock(src, "extract"), stage_lock(dst, "index"):
        return SegmentIndex.build(src, dst, progress=progress,
                                  durations=_durations(dp.recordings_manifest(domain)))


def add_arguments(ap) -> None:
    """``harp index`` options (shared ones: :mod:`harp_lib.app.cli`)."""
    ap.add_argument("--domain", action="append", help="domain(s) to index (default: params domains)")


def run(cfg, args) -> int:
    """``harp index [--domain D ...]``: build and save each domain's index."""
    for d in args.domain or cfg.domains:
        ix = build_index(d, cfg, progress=not args.quiet)
        dims = ", ".join(f"{k}:{v['dim']}" for k, v in ix.spaces.items())
        print(f"{d}: {len(ix)} segments over {len(ix.recording_ids())} recordings; spaces {dims or 'none'}")
    return 0
