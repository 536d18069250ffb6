"""Notebooks, the DVC pipeline and the sweep: structure checks plus one papermill smoke run.

nbval itself (``pytest`` collects notebooks/*.ipynb with ``--nbval-lax``, ci profile) runs every
notebook end to end; these tests catch what nbval cannot: out-of-sync pairs, outputs committed by
accident, notebooks the pipeline never runs, params a stage lists that do not exist.
"""
from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import jupytext
import nbformat
import pytest
import yaml

from harp_lib.app import pipeline
from harp_lib.config import load_config
from harp_lib.app.sweep import grid, nested, point_tag

ROOT = Path(__file__).resolve().parents[1]
NB = ROOT / "notebooks"
SCRIPTS = sorted(p for p in NB.glob("*.py") if p.name != "conftest.py")
NAMES = [p.stem for p in SCRIPTS]
CHECK = "# NBVAL_CHECK_OUTPUT"
#: Modules a notebook may import: harp_lib and display/plotting only (no logic of its own).
ALLOWED_IMPORTS = {"harp_lib", "IPython", "pandas", "matplotlib", "seaborn", "numpy"}


def _cells(nb):
    return [(c.cell_type, c.source.strip(), tuple(c.metadata.get("tags", ()))) for c in nb.cells]


def test_expected_notebooks_exist():
    assert {"00_benchmark", "01_extract", "02_index", "03_plan_and_retrieve", "04_answer", "05_judge",
            "table2_main_results", "table_hit_rates", "table_judge_agreement", "fig1_pipeline_walkthrough",
            "fig4_human_vs_agent"} <= set(NAMES)
    # nbval runs them alphabetically: every producer (00..05) sorts before every consumer
    producers = [n for n in NAMES if n[:2].isdigit()]
    assert sorted(NAMES)[:len(producers)] == sorted(producers)


@pytest.mark.parametrize("name", NAMES)
def test_pair_in_sync_and_output_free(name):
    py = jupytext.read(NB / f"{name}.py")
    ipynb = nbformat.read(NB / f"{name}.ipynb", as_version=4)
    assert _cells(py) == _cells(ipynb), (f"notebooks/{name}.ipynb differs from notebooks/{name}.py: run "
                                         f"`.venv/bin/python scripts/sync_notebooks.py`")
    for c in ipynb.cells:
        if c.cell_type == "code":
            if CHECK not in c.source:
                assert not c.outputs and c.execution_count is None, \
                    f"{name}: outputs committed in a cell without {CHECK}"
            else:
                assert c.outputs, f"{name}: {CHECK} cell has no stored output (scripts/sync_notebooks.py --record)"
    assert ipynb.metadata["kernelspec"]["name"] == "python3"


@pytest.mark.parametrize("name", NAMES)
def test_parameters_cell_and_no_logic(name):
    nb = jupytext.read(NB / f"{name}.py")
    params = [c for c in nb.cells if "parameters" in c.metadata.get("tags", ())]
    assert len(params) == 1, f"{name}: exactly one cell tagged `parameters`"
    assert re.search(r"^profile = None\b", params[0].source, re.M), f"{name}: parameters need `profile = None`"
    assert nb.cells[0].cell_type == "markdown" and nb.cells[0].source.startswith("# "), f"{name}: title first"
    for c in nb.cells:
        if c.cell_type != "code":
            continue
        tree = ast.parse(c.source)
        for node in ast.walk(tree):
            assert not isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)), \
                f"{name}: define functions in harp_lib, not in the notebook"
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                mods = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                for m in mods:
                    assert m.split(".")[0] in ALLOWED_IMPORTS, f"{name}: imports {m} (only harp_lib + display)"


def _dvc():
    """dvc.yaml with the stages of the LLM rows' own pipeline (pipelines/llm/dvc.yaml) added."""
    dvc = yaml.safe_load((ROOT / "dvc.yaml").read_text())
    dvc["stages"].update(yaml.safe_load((ROOT / "pipelines" / "llm" / "dvc.yaml").read_text())["stages"])
    return dvc


def _has_key(data: dict, dotted: str) -> bool:
    cur = data
    for part in dotted.split("."):
        if not isinstance(cur, dict) or part not in cur:
            return False
        cur = cur[part]
    return True


def test_dvc_runs_every_notebook_and_lists_existing_params():
    dvc = _dvc()
    raw = yaml.safe_load((ROOT / "params.yaml").read_text())
    ran = set()
    for name, st in dvc["stages"].items():      # the LLM rows' stages too (pipelines/llm/dvc.yaml)
        body = st.get("do", st)
        cmds = body["cmd"] if isinstance(body["cmd"], list) else [body["cmd"]]
        for cmd in cmds:
            if name == "pages" and cmd == ".venv/bin/python -m harp_lib.viz.site":
                continue                          # the index page of every executed page (no notebook)
            if name == "llm_rows" and cmd.startswith(".venv/bin/python scripts/llm_rows_estimate.py "):
                continue                          # the cost, printed before the model runs
            m = re.search(r"run_notebook\.sh (\S+) ", cmd)
            assert m, f"stage {name}: runs a notebook through scripts/run_notebook.sh"
            assert (NB / f"{m.group(1)}.ipynb").exists()
            assert f"notebooks/{m.group(1)}.ipynb" in body["deps"], f"stage {name}: notebook is a dep"
            ran.add(m.group(1))
        for p in body["params"]:
            assert _has_key(raw, p), f"stage {name}: param {p!r} is not in params.yaml"
        assert {"profile", "profiles"} <= set(body["params"])
    # every notebook is run by a stage (03, 06 and 07, which write no DVC out, by `pages`): each
    # has an executed page
    assert set(NAMES) - ran == set()
    for stage in ("extract", "index", "infer", "judge"):
        assert dvc["stages"][stage]["foreach"] == "${domains}"


def test_ci_profile_never_touches_committed_results():
    cfg = load_config(profile="ci")
    for key, value in cfg.get("paths").items():
        if key == "raw":        # an input (the paper's raw corpora), never written
            continue
        assert str(value).startswith("data/ci"), f"ci profile: paths.{key} = {value} is outside data/ci"
    # the paper profile keeps the DVC out paths
    paper = load_config(profile="paper")
    assert paper.get("paths.benchmark") == "data/benchmark" and paper.get("benchmark.source") == "corpora"


def test_deterministic_outputs(tmp_path):
    m = {"der": 0.123456789, "rtf": {"vad": 0.1}, "nested": {"stage_sec": 3, "x": float("nan")}}
    assert pipeline.deterministic_metrics(m) == {"der": 0.123456789, "nested": {"x": m["nested"]["x"]}}
    a = pipeline.write_json(tmp_path / "a.json", m, digits=3).read_text()
    assert '"der": 0.123' in a and '"x": null' in a
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    blobs = []
    for i in range(2):
        fig, ax = plt.subplots(figsize=(2, 2))
        ax.plot([0, 1], [1, 0])
        blobs.append(pipeline.save_figure(fig, tmp_path / f"f{i}.png", dpi=50).read_bytes())
    assert blobs[0] == blobs[1] and b"Software" not in blobs[0]


def test_sweep_grid_helpers():
    pts = grid({"agent.top_k": [1, 3]}, ["A3", "a5"], ["emotion"])
    assert [(p["setup"], p["agent.top_k"]) for p in pts] == [("A3", 1), ("A3", 3), ("A5", 1), ("A5", 3)]
    assert nested({"agent.top_k": 1, "agent.planner": "rule"}) == {"agent": {"top_k": 1, "planner": "rule"}}
    assert point_tag({"domain": "song", "setup": "A1", "agent.top_k": 5}) == "song_A1_agent.top_k-5"


def test_run_notebook_script_papermill_smoke(tmp_path):
    """scripts/run_notebook.sh executes a notebook with papermill in the venv kernel (ci profile).
    A run on another profile writes its executed copy under data/scratch/notebooks/, never beside
    the committed pages in results/notebooks/ (issue 29)."""
    out = ROOT / "data" / "scratch" / "notebooks" / "pytest_smoke_fig4.ipynb"
    assert not (ROOT / "results" / "notebooks" / out.name).exists()
    env = {k: v for k, v in os.environ.items() if k != "HARP_PROFILE"}
    r = subprocess.run(["bash", "scripts/run_notebook.sh", "fig4_human_vs_agent", out.stem, "-p", "profile", "ci"],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    nb = nbformat.read(out, as_version=4)
    injected = [c for c in nb.cells if "injected-parameters" in c.metadata.get("tags", ())]
    assert injected and "profile = \"ci\"" in injected[0].source
    text = "".join(o.get("text", "") + str(o.get("data", {}).get("text/markdown", ""))
                   for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert "figure 4" in text.lower()
    assert Path(sys.executable).resolve().parent.name == "bin"
    out.unlink()
    html = out.with_suffix(".html")          # the executed copy as HTML beside it (harp_lib/viz/html.py)
    assert "figure 4" in html.read_text(encoding="utf-8").lower()
    html.unlink()
    assert not (ROOT / "results" / "notebooks" / out.name).exists()
    assert not (ROOT / "results" / "notebooks" / html.name).exists()


def test_run_notebook_script_rejects_unknown_notebook():
    r = subprocess.run(["bash", "scripts/run_notebook.sh", "no_such_notebook", "x"], cwd=ROOT,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "does not exist" in r.stderr


def test_doctests_of_pipeline_and_sweep():
    import doctest

    import harp_lib.app.pipeline
    import harp_lib.stages.common
    import harp_lib.app.sweep
    for mod in (harp_lib.app.pipeline, harp_lib.stages.common, harp_lib.app.sweep):
        res = doctest.testmod(mod, optionflags=doctest.ELLIPSIS)
        assert res.failed == 0 and res.attempted > 0, mod.__name__


def test_documented_exp_show_columns_exist():
    """docs/notebooks.md's `dvc exp show --keep` views name a real params.yaml key and real metrics of
    results/metrics/table2_macro.json (a renamed metric would silently give an empty column)."""
    import json

    import yaml
    doc = (ROOT / "docs" / "notebooks.md").read_text()
    keeps = re.findall(r"dvc exp show --md --drop '\.\*' --keep '([^']+)'", doc)
    assert len(keeps) == 2
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    metrics = json.loads((ROOT / "results" / "metrics" / "table2_macro.json").read_text())
    flat = {f"{k}.{c}" for k, v in metrics.items() if isinstance(v, dict) for c in v}
    for keep in keeps:
        parts = keep.split("|", 2)
        assert parts[0] == "Experiment"
        assert params["agent"]["top_k"] is not None and parts[1] == r"agent\.top_k"
        pat = re.compile(parts[2])
        assert len([c for c in flat if pat.fullmatch(c)]) == 3, f"{parts[2]} matches {sorted(flat)[:6]}..."


def test_index_page_lists_every_notebook_with_its_purpose_and_pages(tmp_path):
    from harp_lib.viz.site import collect, render
    pages, figs = tmp_path / "pages", tmp_path / "figures"
    pages.mkdir()
    figs.mkdir()
    (pages / "01_extract_emotion.html").write_text("x")
    (pages / "04b_llm_rows_song.html").write_text("x")
    (figs / "fig1_walkthrough_song.png").write_bytes(b"png")
    entries = {e.name: e for e in collect(NB, pages, figs)}
    assert sorted(entries) == sorted(NAMES)
    assert all(e.title and e.purpose and "**" not in e.purpose for e in entries.values())
    assert entries["01_extract"].pages == ["01_extract_emotion.html"]
    assert entries["04_answer"].pages == [] and entries["04b_llm_rows"].pages == ["04b_llm_rows_song.html"]
    assert entries["fig1_pipeline_walkthrough"].figures == ["../figures/fig1_walkthrough_song.png"]
    page = render(list(entries.values()))
    assert page == render(list(entries.values())) and page.count("<tr><td><code>") == len(NAMES)
    assert "no executed page yet" in page
