"""The docstring examples of the agent modules and the LLM clients run."""
import doctest
import importlib

import pytest

MODULES = ["harp_lib.llm", "harp_lib.agent.planner", "harp_lib.agent.tools", "harp_lib.agent.evidence",
           "harp_lib.agent.answerer", "harp_lib.agent.oracle", "harp_lib.agent.references",
           "harp_lib.agent.context", "harp_lib.agent.runner", "harp_lib.agent.backends"]


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name):
    mod = importlib.import_module(name)
    res = doctest.testmod(mod, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert res.failed == 0, name
