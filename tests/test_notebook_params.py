"""Notebook parameters are validated like params.yaml: papermill's unknown or out-of-range -p fails."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harp_lib.config import ConfigError
from harp_lib.notebook import check_parameters

ROOT = Path(__file__).resolve().parents[1]
PARAMS_CELL = 'profile = None\ndomain = "emotion"\nsetup = "A5"\nlimit = None\noverrides = {}\n'


def _ns(injected: str, **values):
    ns = {"profile": None, "domain": "emotion", "setup": "A5", "limit": None, "overrides": {}}
    ns.update(values)
    ns["_ih"] = ["", PARAMS_CELL, "# Parameters\n" + injected, "check_parameters(globals())"]
    return ns


def test_declared_parameters_pass():
    check_parameters(_ns('domain = "clinical"\nlimit = 5\n', domain="clinical", limit=5))
    check_parameters(_ns('setup = "all"\n', setup="all"))
    check_parameters({"profile": None, "domain": None})        # no papermill injection (nbval, by hand)


@pytest.mark.parametrize("injected, values, pattern", [
    ('domian = "clinical"\n', {"domian": "clinical"}, r"unknown notebook parameter 'domian' \(did you mean 'domain'\?\); "
                                                      r"this notebook takes: profile, domain, setup, limit, overrides"),
    ("limit = -5\n", {"limit": -5}, r"notebook parameter limit = -5 is out of range; allowed: >= 1"),
    ('domain = "clinic"\n', {"domain": "clinic"}, r"notebook parameter domain = 'clinic' is not allowed; choose one of None, emotion"),
    ('setup = "A9"\n', {"setup": "A9"}, r"notebook parameter setup = 'A9' is not allowed"),
    ('limit = "5"\n', {"limit": "5"}, r"notebook parameter limit = '5' has the wrong type; expected an integer or null"),
])
def test_bad_parameters_are_errors_naming_them(injected, values, pattern):
    with pytest.raises(ConfigError, match=pattern):
        check_parameters(_ns(injected, **values))


def _papermill(tmp_path, *params):
    env = dict(os.environ, HARP_PROFILE="ci", HARP_PROGRESS="text", HF_HUB_OFFLINE="1", PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "papermill", "notebooks/04_answer.ipynb", str(tmp_path / "out.ipynb"),
                           "-k", "python3", "--no-progress-bar", *params],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def test_papermill_misspelled_parameter_fails_before_any_work(tmp_path):
    """`-p domian clinical` used to run emotion silently; now the first code cell stops the run."""
    r = _papermill(tmp_path, "-p", "domian", "clinical", "-p", "limit", "1")
    assert r.returncode != 0
    assert "unknown notebook parameter 'domian' (did you mean 'domain'?)" in r.stderr + r.stdout
    r = _papermill(tmp_path, "-p", "limit", "-5")
    assert r.returncode != 0
    assert "notebook parameter limit = -5 is out of range" in r.stderr + r.stdout


def test_every_notebook_checks_its_parameters_first():
    import jupytext
    for py in sorted((ROOT / "notebooks").glob("*.py")):
        if py.name == "conftest.py":
            continue
        cells = [c for c in jupytext.read(py).cells if c.cell_type == "code"]
        i = next(k for k, c in enumerate(cells) if "parameters" in c.metadata.get("tags", ()))
        assert "check_parameters(globals())" in cells[i + 1].source, f"{py.name}: first code cell must check parameters"
