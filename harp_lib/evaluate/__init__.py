"""Evaluation: hit rates, judges (rule / LLM), scores, agreement, tables, figures, human study.

Notebook entry points (all take and return records or DataFrames)::

    from harp_lib.evaluate import (load_benchmark, make_judge, judge_predictions,
                                   score_predictions, load_scores, table2, hit_rate_table,
                                   judge_agreement)

See docs/evaluation.md for the definitions.
"""
from harp_lib.evaluate.agreement import cohen_kappa, fleiss_kappa, judge_agreement, percent_agreement  # noqa: F401
from harp_lib.evaluate.hitrate import (plan_hit_rate, retrieval_hit_rate_id, retrieval_hit_rate_overlap,  # noqa: F401
                      hit_rates)
from harp_lib.evaluate.judge import JudgeInput, Verdict, judge_predictions, make_judge, run_judge  # noqa: F401
from harp_lib.evaluate.scoring import load_scores, run_score, score_predictions  # noqa: F401
from harp_lib.evaluate.store import Benchmark, UnknownQueryError, load_benchmark  # noqa: F401
from harp_lib.evaluate.tables import hit_rate_table, table2, table2_vs_paper  # noqa: F401
