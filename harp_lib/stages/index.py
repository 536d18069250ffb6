"""Stage ``index@<domain>`` (notebooks/02_index): build the segment index of one domain."""
from __future__ import annotations

from harp_lib.config import Config
from harp_lib.retrieval.index_stage import build_index

__all__ = ["index_stage"]


def index_stage(cfg: Config, domain: str, *, progress: bool = True) -> dict:
    """Build ``paths.index/<domain>`` and return a summary (segments, recordings, spaces)."""
    ix = build_index(domain, cfg, progress=progress)
    return {"domain": domain, "segments": len(ix), "recordings": len(ix.recording_ids()),
            "spaces": {k: {"backend": v.get("backend"), "model": v.get("model"), "dim": v.get("dim")}
                       for k, v in sorted(ix.spaces.items())}}

