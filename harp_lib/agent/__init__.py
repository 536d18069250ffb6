"""The HARP agent: plan (rule | llm | oracle) -> retrieve (tools, merge, top-k) -> evidence
(metadata | audio | both) -> answer + rationale (rule | llm), driven by the setup A1..A7.

Library entry points (see docs/agent.md)::

    from harp_lib.agent import answer_query, run_setup, render_evidence
"""
from harp_lib.agent.evidence import render_evidence  # noqa: F401

__all__ = ["answer_query", "run_setup", "render_evidence"]


def __getattr__(name):  # lazy: importing a service of this package (agent.intent) loads no runner
    if name in ("answer_query", "run_setup"):
        from harp_lib.agent import runner  # lazy: on first use of the name (a service of the package loads no runner)
        return getattr(runner, name)
    raise AttributeError(f"module 'harp_lib.agent' has no attribute {name!r}")
