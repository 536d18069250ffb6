"""harp_lib: a Jupyter-first reproduction of HARP (Agentic Hybrid Retrieval and Analysis for
Long-Form Audio).

Light to import: heavy libraries (torch, faiss, librosa, model weights) load only when a
stage that needs them runs.  Data flows one way::

    synth/datasets -> extract -> index -> agent (plan, retrieve, answer) -> evaluate -> viz
"""
__version__ = "0.1.0"

from harp_lib.core.jsonl import read_jsonl, write_jsonl  # noqa: F401
from harp_lib.core.schema import (Evidence, EvidenceItem, EvidenceSet, Judgement, Plan, PlanSet, Prediction,  # noqa: F401
                                  Query, Recording, Score, Segment)
from harp_lib.core.timespan import Span, localize  # noqa: F401

from harp_lib.config import backend_modules as _backend_modules

# Modules whose import registers backends (@register); the registry in harp_lib.config imports
# them on the first lookup by name, so the config layer never imports the stages above it.
_backend_modules("harp_lib.extract.backends", "harp_lib.agent.backends", "harp_lib.evaluate.backends")
