"""The docstring examples of harp_lib.evaluate run as tests."""
import doctest
import importlib

import pytest

MODULES = ["agreement", "answers", "backends", "hitrate", "human", "judge", "llm_judge", "rule_judge",
           "scoring", "store", "tables"]


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name):
    mod = importlib.import_module(f"harp_lib.evaluate.{name}")
    res = doctest.testmod(mod, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert res.failed == 0
