"""pyflakes' F rules through ruff (config in pyproject.toml ``[tool.ruff]``): unused imports and
variables, undefined names, redefinitions, in the package, the scripts and the tests (issue 39)."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RUFF = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")


@pytest.mark.skipif(RUFF is None, reason="ruff missing: scripts/bootstrap.sh installs .[test]")
def test_ruff_f_rules_pass():
    r = subprocess.run([RUFF, "check", "--no-cache", "--output-format", "concise", "harp_lib", "scripts", "tests"],
                       cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]


@pytest.mark.skipif(RUFF is None, reason="ruff missing: scripts/bootstrap.sh installs .[test]")
def test_ruff_check_can_fail(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import os\n\n\ndef f():\n    x = 1\n    return undefined_name\n")
    r = subprocess.run([RUFF, "check", "--no-cache", "--output-format", "concise", "--config",
                        str(ROOT / "pyproject.toml"), str(bad)], capture_output=True, text=True)
    assert r.returncode == 1 and all(c in r.stdout for c in ("F401", "F841", "F821")), r.stdout
