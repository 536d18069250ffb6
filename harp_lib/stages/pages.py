"""Stage ``pages``: the executed pages of the notebooks no other stage runs, then the index page.

``03_plan_and_retrieve`` shows queries with :mod:`harp_lib.stages.trace`, ``07_explore`` opens
:mod:`harp_lib.viz.explore`, and ``06_your_own_audio`` (your own recordings) calls the two
functions here; ``python -m harp_lib.viz.site`` writes ``results/notebooks/index.html``.
"""
from __future__ import annotations

import os
from typing import Mapping, Optional, Sequence

from harp_lib.config import Config
from harp_lib.ownaudio.ask import ask as _ask
from harp_lib.ownaudio.ingest import DEFAULT_OVERLAP, ingest as _ingest

__all__ = ["ingest", "ask"]


def ingest(paths: Sequence[os.PathLike | str], domain: str = "speech", *, collection: str = "default",
           cfg: Optional[Config] = None, progress: bool = True, num_speakers: Optional[int] = None,
           min_speakers: Optional[int] = None, max_speakers: Optional[int] = None,
           overlap: Optional[str] = DEFAULT_OVERLAP) -> list:
    """Ingest your own audio files (``harp ingest``): convert to 16 kHz mono under
    ``<paths.data>/user/<collection>/``, extract and index; returns
    :class:`~harp_lib.ownaudio.ingest.IngestedRecording` records.  ``domain``: speech | clinical | song.
    ``num_speakers`` (exact) or ``min_speakers`` / ``max_speakers``: how many speakers the diarizer finds;
    ``overlap``: the overlap detector for speech and clinical (default :data:`~harp_lib.ownaudio.ingest.DEFAULT_OVERLAP`, seg30; None: off)."""
    return _ingest(paths, domain, collection_name=collection, cfg=cfg, progress=progress,
                   num_speakers=num_speakers, min_speakers=min_speakers, max_speakers=max_speakers,
                   overlap=overlap)


def ask(recording_id: str, question: str, *, refs: Optional[Mapping[str, str]] = None, setup: str = "A5",
        agent: str = "rule", collection: Optional[str] = None, cfg: Optional[Config] = None,
        use_cache: bool = True):
    """Answer a free-text question about an ingested recording (``harp ask``); returns a
    :class:`~harp_lib.ownaudio.ask.Answer` (plan, evidence, answer, rationale, cached)."""
    return _ask(recording_id, question, refs=refs, setup=setup, agent=agent, collection_name=collection,
                cfg=cfg, use_cache=use_cache)

