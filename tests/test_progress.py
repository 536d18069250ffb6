import io
import os
import sys
import subprocess
from pathlib import Path

import pytest

from harp_lib.core.progress import progress, progress_mode


def test_modes(monkeypatch):
    monkeypatch.setenv("HARP_PROGRESS", "off")
    assert progress_mode() == "off"
    assert list(progress(range(4))) == [0, 1, 2, 3]
    monkeypatch.setenv("HARP_PROGRESS", "auto")
    assert progress_mode() in ("text", "tty")  # plain pytest: not a notebook


def test_text_mode_writes_plain_lines():
    buf = io.StringIO()
    out = list(progress(range(50), desc="work", mode="text", file=buf, mininterval=0))
    assert out == list(range(50))
    text = buf.getvalue()
    assert "work" in text and "50/50" in text and "\x1b[" not in text


def test_terminal_mode_writes_to_the_process_stderr_not_the_cell(monkeypatch):
    cell, proc = io.StringIO(), io.StringIO()
    monkeypatch.setattr(sys, "stderr", cell)        # what a notebook kernel captures into the page
    monkeypatch.setattr(sys, "__stderr__", proc)    # the kernel process's own stderr (the terminal)
    monkeypatch.setenv("HARP_PROGRESS", "terminal")
    import harp_lib.core.progress as prog
    monkeypatch.setattr(prog, "_TERMINAL", [])
    assert progress_mode() == "terminal"
    assert list(progress(range(20), desc="work", mininterval=0)) == list(range(20))
    assert cell.getvalue() == "" and "20/20" in proc.getvalue()


@pytest.mark.slow
def test_an_executed_page_carries_no_progress_lines(tmp_path):
    """The way scripts/run_notebook.sh runs a stage notebook: papermill + HARP_PROGRESS=terminal."""
    import nbformat
    root = Path(__file__).resolve().parents[1]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "from harp_lib.core.progress import progress\nprint(sum(progress(range(30), desc='demo', mininterval=0)))")])
    src, out = tmp_path / "p.ipynb", tmp_path / "p_out.ipynb"
    nbformat.write(nb, src)
    env = dict(os.environ, HARP_PROGRESS="terminal", PYTHONPATH=str(root))
    env.pop("PYTEST_CURRENT_TEST", None)   # else ipykernel does not capture fd 2, as it does under dvc repro
    r = subprocess.run([sys.executable, "-m", "papermill", str(src), str(out), "-k", "python3"],
                       env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    outputs = [o for c in nbformat.read(out, 4).cells for o in c.get("outputs", [])]
    texts = "".join(o.get("text", "") for o in outputs)
    assert texts.strip() == "435"                    # the result, and no progress line
    assert "30/30" in r.stderr                       # the progress reached the terminal


@pytest.mark.parametrize("package", ["huggingface_hub", "transformers"])
def test_quiet_library_bars_after_a_bare_package_import(package):
    """huggingface_hub 2.x and transformers load ``utils`` lazily: after a bare ``import
    huggingface_hub`` the attribute does not exist yet (CI failed on exactly that).  A fresh
    interpreter, so no earlier test has imported the submodule for us."""
    code = (f"import os, {package}\n"
            "from harp_lib.core.progress import quiet_library_bars\n"
            "os.environ.pop('HF_HUB_DISABLE_PROGRESS_BARS', None)\n"
            "os.environ['HARP_PROGRESS'] = 'text'\n"
            "quiet_library_bars()\n"
            "from huggingface_hub.utils import are_progress_bars_disabled\n"
            "assert are_progress_bars_disabled(), 'hub bars still on'\n")
    env = {k: v for k, v in os.environ.items() if k != "HF_HUB_DISABLE_PROGRESS_BARS"}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
