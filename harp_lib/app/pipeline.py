"""Every stage call under one name, for code written before :mod:`harp_lib.stages` (tests,
your own scripts): ``pipeline.config``, ``pipeline.answer_stage``, ...

Each function lives in the module of its stage (``harp_lib/stages/<stage>.py``); notebooks and
library code import from there, so that a change to one stage's module concerns that stage
only.  Nothing in ``harp_lib`` imports this module.

>>> cfg = config("ci")
>>> cfg.profile, cfg.get("paths.results").startswith("data/ci")
('ci', True)
>>> answer_stage.__module__
'harp_lib.stages.infer'
"""
from __future__ import annotations

from harp_lib.core.results_io import TIMING_KEYS  # noqa: F401
from harp_lib.stages.benchmark import Listening, benchmark_summary, build_benchmark, listening_examples  # noqa: F401
from harp_lib.stages.common import config, deterministic_metrics, save_figure, timings_path, write_json  # noqa: F401
from harp_lib.stages.extract import extract_metrics, extract_stage  # noqa: F401
from harp_lib.stages.figures import human_figure, walkthrough_figures  # noqa: F401
from harp_lib.stages.index import index_stage  # noqa: F401
from harp_lib.stages.infer import answer_stage  # noqa: F401
from harp_lib.stages.judge import domain_setup_scores, judge_stage  # noqa: F401
from harp_lib.stages.pages import ask, ingest  # noqa: F401
from harp_lib.stages.tables import write_figures, write_tables  # noqa: F401
from harp_lib.stages.trace import pick_queries, trace_query  # noqa: F401

__all__ = ["config", "write_json", "deterministic_metrics", "build_benchmark", "benchmark_summary",
           "listening_examples", "timings_path", "extract_stage", "extract_metrics", "index_stage", "answer_stage", "judge_stage",
           "trace_query", "pick_queries", "write_tables", "save_figure",
           "write_figures", "human_figure", "domain_setup_scores", "ingest", "ask"]
