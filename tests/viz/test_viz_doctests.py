"""The docstring examples of harp_lib.viz run."""
import doctest
import importlib
import os

import pytest

os.environ.setdefault("MPLBACKEND", "Agg")
MODULES = ["harp_lib.viz.timeline", "harp_lib.viz.trace", "harp_lib.viz.walkthrough", "harp_lib.viz.explorer"]


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name):
    import matplotlib.pyplot as plt
    mod = importlib.import_module(name)
    res = doctest.testmod(mod, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    plt.close("all")
    assert res.failed == 0 and res.attempted > 0, name
