"""dvc plots over CSV data series (dvc.yaml top-level `plots:`), on the ci run's series.

The tables stage writes ``results/plots/{table2_avg,accuracy_by_type,hit_rates}.csv``
(``harp_lib.evaluate.spread.write_series``); on the ci profile they land in data/ci/results/plots.
The test copies them with dvc.yaml's `plots:` section into a scratch DVC project and checks that
``dvc plots show --json`` renders every declared plot from them, x and y fields present.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]


def _declared() -> list:
    return yaml.safe_load((ROOT / "dvc.yaml").read_text())["plots"]


def test_every_plot_series_is_a_stage_out():
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    outs = {next(iter(o)) if isinstance(o, dict) else o for st in stages.values() for o in st.get("outs", [])}
    for plot in _declared():
        (pid, spec), = plot.items()
        files = list(spec["y"]) if isinstance(spec["y"], dict) else [pid]
        for f in files:
            assert f in outs, f"plot {pid}: {f} is not an out of any stage (dvc.yaml)"


def test_dvc_plots_show_renders_the_ci_series(ci_run, tmp_path):
    from harp_lib.config import load_config
    series = load_config(profile="ci").path("paths.results") / "plots"
    proj = tmp_path / "proj"
    (proj / "results").mkdir(parents=True)
    shutil.copytree(series, proj / "results" / "plots")
    (proj / "dvc.yaml").write_text(yaml.safe_dump({"plots": _declared()}))
    dvc = [sys.executable, "-m", "dvc"]
    subprocess.run([*dvc, "init", "--no-scm", "-q"], cwd=proj, check=True, timeout=120)
    r = subprocess.run([*dvc, "plots", "show", "--json"], cwd=proj, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    data = json.loads(r.stdout)["data"]
    for plot in _declared():
        (pid, spec), = plot.items()
        assert pid in data, f"dvc plots show did not render {pid}: {sorted(data)}"
        values = data[pid][0]["content"]["data"]["values"]
        y_field = next(iter(spec["y"].values()))
        assert values and all(spec["x"] in v and y_field in v for v in values), pid
        float(values[0][spec["x"]])


@pytest.mark.slow
def test_dvc_plots_page_needs_no_network(tmp_path):
    """`dvc plots show` used to write a page that loads vega from a CDN (blank offline).  The
    committed template (.dvc/config plots.html_template) inlines vega, vega-lite and vega-embed."""
    out = tmp_path / "plots"
    r = subprocess.run([str(ROOT / ".venv" / "bin" / "dvc"), "plots", "show", "-o", str(out)], cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    page = (out / "index.html").read_text()
    assert "<script src" not in page and "cdn.jsdelivr" not in page
    assert page.count("vegaEmbed(") >= len(_declared())          # every declared plot is on the page
    for lib in ("vega ", "vega-lite ", "vega-embed "):
        assert f"/* {lib}" in page, f"{lib.strip()} is not inlined"
