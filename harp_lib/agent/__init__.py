"""The HARP agent: plan (rule | llm | oracle) -> retrieve (tools, merge, top-k) -> evidence
(metadata | audio | both) -> answer + rationale (rule | llm), driven by the setup A1..A7.

Library entry points (see docs/agent.md)::

    from harp_lib.agent import answer_query, run_setup, render_evidence
"""
from .evidence import render_evidence  # noqa: F401
from .runner import answer_query, run_setup  # noqa: F401

__all__ = ["answer_query", "run_setup", "render_evidence"]
