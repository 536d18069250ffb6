"""How pytest-xdist shares the suite between workers (``-n auto --dist loadgroup``, pyproject.toml).

At the repository root so that the xdist controller loads it for any test path (tests/,
notebooks/, harp_lib/).  Its own scheduler, because xdist's ``loadgroup`` (``xdist_group``
marks) renames node ids through ``item._nodeid``, which pytest 9.2 no longer reads: the marks
would be silently ignored.  The unit of work (:func:`xdist_scope`) is:

* a group of tests that share one fixed place, run in one worker in collection order
  (:data:`GROUPS`): ``ci_data`` -- tests/golden/, tests/test_notebooks.py and the notebooks
  (they write data/ci/ and data/scratch/notebooks/); ``local_llm`` -- one joined copy of the
  GGUF weights; ``resolver`` -- one session fixture starts every pip dry-run at once;
* a whole test module that defines a module-, class- or package-scoped fixture (built once);
* otherwise a single test.

Workers hand out the longest work first: the emulated cross-CPU module and ``ci_data`` (one
each), ``local_llm``, then modules or tests
marked ``slow``, then the rest (each unit keeps its own order).  Session builds that are shared
data are built once for all workers (``tests/harp_testing.py:shared_build``).  docs/testing.md.
"""
from __future__ import annotations

import functools
import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent

#: path prefix (relative to the repository root) -> group run by one worker, in order
#: (the first prefix that matches wins; None: no group -- the cross-CPU vector-bytes check, 3 min
#: under load, writes no file and need not wait in the ci_data chain)
GROUPS = {"tests/golden/test_determinism.py": None,
          "tests/golden/": "ci_data", "tests/test_notebooks.py": "ci_data", "notebooks/": "ci_data",
          "tests/agent/test_local_llm.py": "local_llm", "tests/test_envs.py": "resolver"}
# the emulated cross-CPU module (one unit: a module-scoped fixture) is the longest single unit
# (~30 min of qemu on one core: Haswell alone 17.5 min idle, docs/testing.md): it starts at once
# beside the ci_data chain instead of queueing behind the other slow tests
_FIRST = {"tests/extract/test_cross_cpu.py": 0, "ci_data": 0, "local_llm": 1}
_SCOPED = re.compile(r"""scope\s*=\s*["'](module|class|package)["']""")


@functools.lru_cache(maxsize=None)
def _module_scoped(path: str) -> bool:
    """The test module defines a module-, class- or package-scoped fixture."""
    p = ROOT / path
    return path.startswith("tests/") and p.suffix == ".py" and p.is_file() and bool(_SCOPED.search(p.read_text(encoding="utf-8")))


def xdist_scope(nodeid: str) -> str:
    """The unit of work a test belongs to (see the module docstring).

    >>> xdist_scope("notebooks/00_benchmark.ipynb::Cell 0"), xdist_scope("tests/golden/test_golden.py::t")
    ('ci_data', 'ci_data')
    >>> xdist_scope("tests/test_layout.py::test_test_module_basenames_are_unique")
    'tests/test_layout.py::test_test_module_basenames_are_unique'
    >>> xdist_scope("tests/test_userdata.py::test_more_questions_and_clear_refusals")
    'tests/test_userdata.py'
    """
    path = nodeid.split("::", 1)[0]
    prefix = next((p for p in GROUPS if path.startswith(p)), None)
    if prefix is not None and GROUPS[prefix]:
        return GROUPS[prefix]
    return path if _module_scoped(path) else nodeid


@pytest.hookimpl(tryfirst=True, optionalhook=True)     # optional: `-p no:xdist` still works
def pytest_xdist_make_scheduler(config, log):
    if config.getoption("dist", None) != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ScopeScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return xdist_scope(nodeid)
    config.option.loadscopereorder = False        # keep the order the workers collected (below)
    return ScopeScheduling(config, log)


@pytest.hookimpl(trylast=True)                  # after tests/conftest.py marked the slow tests
def pytest_collection_modifyitems(config, items):
    """In an xdist worker: the longest units first (a stable sort: each unit keeps its order)."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    rank: dict = {}
    for item in items:
        scope = xdist_scope(item.nodeid)
        r = _FIRST.get(scope, 2 if item.get_closest_marker("slow") else 3)
        rank[scope] = min(rank.get(scope, 9), r)
    items.sort(key=lambda it: rank[xdist_scope(it.nodeid)])
