"""nbval runs every notebook here on the `ci` profile (pytest collects them alphabetically, so the
producers 00..05 run before the fig*/table* consumers).

The kernel inherits the environment when nbval starts it (in the first cell's setup), so the
variables are set just before each notebook item and restored after the last one: other tests
in the same session keep their own profile.
"""
from __future__ import annotations

import os

import pytest

#: The jupytext twins (``NN_name.py``) are the notebooks' code, not modules: ``--doctest-modules``
#: (pyproject.toml) must not import them (importing one runs its stage).
collect_ignore_glob = ["*.py"]

NOTEBOOK_ENV = {"HARP_PROFILE": "ci", "HARP_PROGRESS": "text", "HF_HUB_OFFLINE": "1",
                "MPLBACKEND": "Agg"}
_saved: dict = {}


def _is_notebook(item) -> bool:
    return getattr(item, "path", None) is not None and item.path.suffix == ".ipynb"


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    if _is_notebook(item) and not _saved:
        _saved.update({k: os.environ.get(k) for k in NOTEBOOK_ENV})
        os.environ.update(NOTEBOOK_ENV)


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item, nextitem):
    if _is_notebook(item) and _saved and (nextitem is None or not _is_notebook(nextitem)):
        for k, v in _saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        _saved.clear()
