"""Executed notebooks -> HTML (harp_lib/viz/html.py): byte-stable across conversions and runs."""
from __future__ import annotations

import json
import subprocess
import sys

import nbformat
import pytest

from harp_lib.viz.html import clean_notebook, export_html, notebook_html

CELLS = [
    "# Demo\nA title.",
    "import sys, time\nfor i in range(3):\n    sys.stderr.write(f'\\rwork: {i * 50}%|'); sys.stderr.flush()\n"
    "sys.stderr.write('\\n')\nprint('done', 2 + 2)",
    "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\nfrom IPython.display import Image, display\n"
    "import io\nfig, ax = plt.subplots(figsize=(2, 1)); ax.plot([0, 1]); buf = io.BytesIO()\n"
    "fig.savefig(buf, format='png', metadata={'Software': None}); plt.close(fig)\ndisplay(Image(buf.getvalue()))",
]


def _notebook():
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell(CELLS[0])] + [nbformat.v4.new_code_cell(c) for c in CELLS[1:]]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


def _execute(nb, tmp_path, name):
    from nbclient import NotebookClient
    NotebookClient(nb, kernel_name="python3", timeout=120, record_timing=True).execute()
    # what papermill adds to every executed copy: times that differ from run to run
    nb.metadata["papermill"] = {"start_time": f"2026-01-0{len(name)}T00:00:00", "duration": len(name) * 1.5}
    p = tmp_path / f"{name}.ipynb"
    nbformat.write(nb, p)
    return p


@pytest.mark.slow
def test_two_runs_convert_to_identical_bytes(tmp_path):
    a = _execute(_notebook(), tmp_path, "a")
    b = _execute(_notebook(), tmp_path, "bb")
    assert json.loads(a.read_text())["metadata"] != json.loads(b.read_text())["metadata"]   # runs differ
    ha, hb = export_html(a), export_html(b)
    assert ha == a.with_suffix(".html") and ha.read_bytes() == hb.read_bytes()
    first = ha.read_bytes()
    assert export_html(a).read_bytes() == first                                           # convert twice
    html = first.decode()
    assert "done 4" in html and "data:image/png;base64" in html
    assert "work: 100%|" in html and "work: 0%|" not in html     # \r progress collapsed to its last state
    assert "2026-01-0" not in html and "record_timing" not in html


def test_widget_outputs_and_metadata_are_dropped():
    nb = _notebook()
    nb.cells[1].outputs = [nbformat.v4.new_output("display_data", data={
        "application/vnd.jupyter.widget-view+json": {"model_id": "4f2c9a", "version_major": 2},
        "text/plain": "extract emotion:   0%|          | 0/1"})]
    nb.cells[1].metadata["execution"] = {"iopub.execute_input": "2026-01-01T00:00:00"}
    clean = clean_notebook(nb)
    assert clean.cells[1].outputs == [] and clean.cells[1].metadata == {}
    html = notebook_html(nb)
    assert "4f2c9a" not in html and "0%|" not in html and "2026-01-01" not in html


@pytest.mark.slow
def test_cli_names_the_missing_notebook(tmp_path):
    r = subprocess.run([sys.executable, "-m", "harp_lib.viz.html", str(tmp_path / "none.ipynb")],
                       capture_output=True, text=True)
    assert r.returncode != 0 and "none.ipynb" in r.stderr and "run its stage first" in r.stderr


def test_pandas_styler_ids_do_not_change_the_html():
    import pandas as pd
    htmls = []
    for _ in range(2):
        nb = _notebook()
        nb.cells[1].outputs = [nbformat.v4.new_output("display_data", data={
            "text/html": pd.DataFrame({"a": [1]}).style.set_properties(color="red").to_html(),
            "text/plain": "table"})]
        htmls.append(notebook_html(nb))
    assert htmls[0] == htmls[1] and "T_0_row0_col0" in htmls[0]


def test_paths_under_the_repository_are_shown_relative():
    from harp_lib.viz.html import ROOT
    nb = _notebook()
    nb.cells[1].outputs = [nbformat.v4.new_output("stream", name="stderr",
                                                  text=f"{ROOT}/.venv/lib/x.py:1: UserWarning: w\n"),
                           nbformat.v4.new_output("display_data", data={"text/markdown": f"see `{ROOT}/data/a.json`"})]
    html = notebook_html(nb)
    assert str(ROOT) not in html and ".venv/lib/x.py:1" in html and "data/a.json" in html


def test_progress_lines_and_timings_do_not_reach_the_html():
    """A stage's page must not depend on the machine's speed: how many progress lines tqdm prints
    (text mode: every 5 s) and how long a step took differ between CPUs."""
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("pass")
    cell.outputs = [
        nbformat.v4.new_output("stream", name="stderr", text=(
            "embed song:   7%|7         | 1/15\n"
            "embed song:  60%|######    | 9/15\rembed song: 100%|##########| 15/15\n"
            "Loading weights: 100%|██████████| 103/103 [00:00<00:00, 13158.30it/s]\n"
            "index built in 12.41 seconds (load 850 ms, 3.2 s faiss)\n")),
        nbformat.v4.new_output("stream", name="stdout", text="song: 15 segments\nscan: 40%|####  | 2/5\n"),
    ]
    nb.cells = [cell]
    html = notebook_html(nb)
    for gone in ("%|", "15/15", "it/s", "12.41", "850 ms", "3.2 s"):
        assert gone not in html, gone
    assert "song: 15 segments" in html and "index built in &lt;t&gt; s (load &lt;t&gt; s, &lt;t&gt; s faiss)" in html
