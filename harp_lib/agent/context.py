"""What one query's planner, tools and answerer share: the query, its recording, the setup,
the index, the agent parameters and resolved file paths.

>>> p = agent_params(None)            # params.yaml ``agent:`` (+ benchmark.tie_delta)
>>> p.top_k, p.max_clip_sec, p.tie_delta
(3, 120.0, 0.25)
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Optional

from harp_lib.config import AgentRunParams, Config, Setup, load_config
from harp_lib.core.schema import Query, Recording, resolve_under
from harp_lib.core.timespan import Span, song_spans

__all__ = ["QueryContext", "agent_params"]


def agent_params(cfg: Optional[Config] = None, **overrides) -> AgentRunParams:
    """The ``agent:`` section of params.yaml plus ``tie_delta`` (from ``benchmark:``), then
    ``overrides`` (:meth:`~harp_lib.config.AgentRunParams.replace`).  ``cfg=None`` reads the
    repository's params.yaml: the values live only there.

    An override that is not an agent parameter is a :class:`~harp_lib.config.ConfigError` naming it.
    """
    if cfg is None:
        cfg = load_config()
    return AgentRunParams.of(cfg).replace(**overrides)


@dataclass
class QueryContext:
    """Everything the agent needs for one query (built by :func:`harp_lib.agent.runner.answer_query`).

    ``bench_dir`` is the folder of the query manifest; recording and reference paths resolve
    under it.  ``labelers`` / ``encoder`` are shared per process (see :mod:`.references`).
    """
    query: Query
    recording: Recording
    setup: Setup
    index: Any                       # harp_lib.retrieval.index.SegmentIndex (duck-typed)
    params: AgentRunParams           # agent_params(cfg): params.yaml ``agent:`` + tie_delta
    bench_dir: Optional[Path] = None
    gt_segments: Optional[list] = None   # ground-truth segments of the recording (oracle only)
    encoder: Any = None              # tools.QueryEncoder
    hearing: Any = None              # references.Hearing (offline labelers / ASR on audio)
    heard: dict = field(default_factory=dict, repr=False, compare=False)   # listen once: multimodal.heard_labels memo
    intent: Any = None               # the Intent the planner read (the LLM's in intent mode); None: the answerer reads the text

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
