"""How the suite itself runs (docs/testing.md): CI runs the README's test command, then the opt-in
resolver checks; session builds shared by pytest-xdist workers happen once."""
from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest
from harp_testing import shared_build

ROOT = Path(__file__).resolve().parents[1]


def _readme_test_command() -> str:
    for line in (ROOT / "README.md").read_text(encoding="utf-8").splitlines():
        if "-m pytest" in line and line.startswith("bash scripts/bootstrap.sh"):
            return line.split("#")[0].strip()
    raise AssertionError("README.md has no `bash scripts/bootstrap.sh && ... -m pytest` line")


def test_ci_runs_the_readme_test_command_then_the_resolver_checks():
    lines = [ln.strip() for ln in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
             if ln.strip() and not ln.lstrip().startswith("#")]
    readme = _readme_test_command()
    assert readme in lines, f".ci/run does not run the README's test command {readme!r}: {lines}"
    resolver = ".venv/bin/python -m pytest -m resolver tests/test_envs.py"
    assert resolver in lines and lines.index(resolver) > lines.index(readme)
    assert resolver in (ROOT / "docs" / "testing.md").read_text(encoding="utf-8")


@pytest.mark.slow      # two pytest start-ups in subprocesses: 16 s at load 6 on the 2 cores
def test_resolver_checks_are_deselected_unless_asked_for():
    """The pip dry-runs (minutes, network) are left out of the plain command; `-m resolver` runs them."""
    def collected(*args):
        # addopts and the notebook / xdist / hydra plugins off: a quicker start, same conftest
        r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-o", "addopts=", "-p", "no:cacheprovider",
                            "-p", "no:nbval", "-p", "no:xdist", "-p", "no:hydra_pytest",
                            "--collect-only", "tests/test_envs.py", *args],
                           cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
        return {ln.split("::")[1].split("[")[0] for ln in r.stdout.splitlines() if "::" in ln}
    default = collected()
    assert "test_merge_overrides_only_named_packages" in default
    assert not default & {"test_env_resolves", "test_broken_recipe_does_not_resolve"}
    assert collected("-m", "resolver") == {"test_env_resolves", "test_broken_recipe_does_not_resolve"}


class _Factory:
    """tmp_path_factory of one pytest-xdist worker: its basetemp is <run root>/<worker>."""

    def __init__(self, base: Path):
        self.base = base

    def getbasetemp(self) -> Path:
        return self.base

    def mktemp(self, name: str) -> Path:
        p = self.base / name
        p.mkdir(parents=True)
        return p


def test_shared_build_runs_once_for_all_xdist_workers(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw0")
    calls, results = [], {}

    def build(out: Path):
        calls.append(out)
        (out / "x.txt").write_text("built")
        return {"n": len(calls)}

    def worker(name):
        results[name] = shared_build(_Factory(tmp_path / name), "bench", build)
    threads = [threading.Thread(target=worker, args=(f"gw{i}",)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and calls[0] == tmp_path / "bench"
    assert all(r == (tmp_path / "bench", {"n": 1}) for r in results.values())
    assert (tmp_path / "bench" / "x.txt").read_text() == "built"
    monkeypatch.delenv("PYTEST_XDIST_WORKER")                   # a serial run: a fresh folder each
    out, res = shared_build(_Factory(tmp_path / "serial"), "bench", build)
    assert out == tmp_path / "serial" / "bench" and res == {"n": 2}


def test_xdist_units_keep_shared_writers_and_module_fixtures_together():
    """The root conftest.py's scheduler: tests writing data/ci share one unit, a module with a
    module-scoped fixture is one unit, other tests go alone; its docstring examples hold."""
    import doctest
    import importlib.util
    spec = importlib.util.spec_from_file_location("harp_root_conftest", ROOT / "conftest.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert doctest.testmod(mod).failed == 0
    scope = mod.xdist_scope
    assert {scope("tests/golden/test_plots.py::t"), scope("tests/test_notebooks.py::t"),
            scope("notebooks/fig4_human_vs_agent.ipynb::Cell 3")} == {"ci_data"}
    assert scope("tests/test_question_kinds.py::test_add_a_question_kind_recipe") == "tests/test_question_kinds.py"
    assert scope("tests/test_envs.py::test_env_resolves[cuda]") == "resolver"
    t = "tests/golden/test_determinism.py::test_stored_vector_bytes_are_the_same_under_every_cpu_capability"
    assert scope(t) == t                            # writes no file: not in the ci_data chain
    assert scope("harp_lib/core/audio.py::harp_lib.core.audio.read") == "harp_lib/core/audio.py::harp_lib.core.audio.read"
