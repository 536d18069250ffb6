"""What one query's planner, tools and answerer share: the query, its recording, the setup,
the index, the agent parameters and resolved file paths.

>>> from harp_lib.config import SETUPS
>>> DEFAULT_PARAMS["top_k"], DEFAULT_PARAMS["max_clip_sec"]
(3, 120.0)
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Mapping, Optional

from ..config import Setup
from ..schema import Query, Recording, resolve_under
from ..timespan import Span, song_spans

__all__ = ["QueryContext", "DEFAULT_PARAMS", "agent_params"]

#: Fallbacks used only when params.yaml lacks a key (the values are the paper's; the
#: authoritative copies with comments live in params.yaml ``agent:``).
DEFAULT_PARAMS: dict[str, Any] = {
    "top_k": 3, "vector_hits": 5, "keyword_hits": 10, "point_window_sec": 30.0,
    "max_clip_sec": 120.0, "clip_sample_rate": 16000, "max_sets": 6,
    "attach_references_in_metadata_setups": True, "plan_max_tokens": 512,
    "answer_max_tokens": 512, "trend_threshold": 0.03, "tie_delta": 0.25,
    "hear_with_labelers": True, "oracle_top_k": None, "reference_baseline_segments": 8, "empty_plan_fallback": "full recording",
}


def agent_params(cfg=None, **overrides) -> dict:
    """The ``agent:`` section of params.yaml over :data:`DEFAULT_PARAMS`, plus overrides."""
    out = dict(DEFAULT_PARAMS)
    if cfg is not None:
        out.update(cfg.get("agent", {}) or {})
        tie = cfg.get("benchmark.tie_delta", None)
        if tie is not None:
            out.setdefault("tie_delta", tie)
            out["tie_delta"] = float(tie)
    out.update(overrides)
    return out


@dataclass
class QueryContext:
    """Everything the agent needs for one query (built by :func:`harp_lib.agent.runner.answer_query`).

    ``bench_dir`` is the folder of the query manifest; recording and reference paths resolve
    under it.  ``labelers`` / ``encoder`` are shared per process (see :mod:`.references`).
    """
    query: Query
    recording: Recording
    setup: Setup
    index: Any                       # harp_lib.index.SegmentIndex (duck-typed)
    params: Mapping[str, Any] = field(default_factory=lambda: dict(DEFAULT_PARAMS))
    bench_dir: Optional[Path] = None
    gt_segments: Optional[list] = None   # ground-truth segments of the recording (oracle only)
    encoder: Any = None              # tools.QueryEncoder
    hearing: Any = None              # references.Hearing (offline labelers / ASR on audio)

    @property
    def domain(self) -> str:
        return self.query.domain

    @property
    def tools(self) -> tuple[str, ...]:
        return self.setup.tools

    @cached_property
    def audio_path(self) -> Optional[Path]:
        if self.bench_dir is None:
            return None
        return resolve_under(self.bench_dir, self.recording.audio_path)

    @cached_property
    def references(self) -> dict[str, Path]:
        """Reference clips by role (A, B, E), resolved under the manifest folder."""
        if self.bench_dir is None:
            return {}
        return {r: resolve_under(self.bench_dir, p) for r, p in sorted(self.query.references.items())}

    @cached_property
    def songs(self) -> dict[int, Span]:
        """Whole-song spans of the *extracted* SONG_NN segments (what the agent may know)."""
        try:
            return song_spans(self.index.segments(self.recording.id))
        except KeyError:
            return {}

    def p(self, key: str):
        return self.params.get(key, DEFAULT_PARAMS.get(key))
