"""Notebook parameters are validated like params.yaml: papermill's unknown or out-of-range -p fails."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harp_lib.config import ConfigError
from harp_lib.app.notebook import check_parameters

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


@pytest.mark.slow
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


def test_every_parameter_is_visible_to_papermill_help_notebook():
    """`papermill --help-notebook` lists every name the parameters cell assigns (a `=` in a comment
    used to hide `profile` in 00, `domain` in 01/02, `query_id` in fig1)."""
    import ast

    import jupytext
    import papermill
    for py in sorted((ROOT / "notebooks").glob("*.py")):
        if py.name == "conftest.py":
            continue
        cell = next(c for c in jupytext.read(py).cells if "parameters" in c.metadata.get("tags", ()))
        declared = [t.id for n in ast.parse(cell.source).body if isinstance(n, ast.Assign) for t in n.targets]
        seen = list(papermill.inspect_notebook(str(py.with_suffix(".ipynb"))))
        assert seen == declared, f"{py.stem}: papermill sees {seen}, the parameters cell declares {declared}"
        for name in declared:
            assert name in __import__("harp_lib.app.notebook", fromlist=["PARAMETERS"]).PARAMETERS or \
                name in ("audio_paths", "kind", "collection", "questions"), \
                f"{py.stem}: parameter {name} has no type/range in harp_lib.app.notebook.PARAMETERS"


def test_params_yaml_key_as_notebook_parameter_says_how_to_pass_it():
    ns = _ns("top_k = 1\n", top_k=1)
    with pytest.raises(ConfigError, match=r"unknown notebook parameter 'top_k'.*params.yaml key agent.top_k: "
                                          r"pass it through overrides, e.g. -y '\{overrides: \{agent: \{top_k: 1\}\}\}'"):
        check_parameters(ns)


def test_partial_runs_are_redirected_to_scratch():
    from harp_lib.app.notebook import OUTPUT_PATHS, partial_run_overrides
    ns = {"profile": "ci", "domain": "emotion", "setup": "A5", "limit": 3, "overrides": {}}
    check_parameters(ns)
    assert ns["overrides"]["paths"] == {k: f"data/ci/scratch/limit-3/{k}" for k in OUTPUT_PATHS}
    ns = {"profile": "ci", "domain": "emotion", "setup": "A5", "limit": None, "overrides": {"agent": {"top_k": 1}}}
    check_parameters(ns)
    assert ns["overrides"]["agent"] == {"top_k": 1}
    assert ns["overrides"]["paths"]["predictions"].startswith("data/ci/scratch/ov-")
    # the same overrides -> the same scratch folder (05_judge finds 04_answer's predictions)
    again = partial_run_overrides({"overrides": {"agent": {"top_k": 1}}}, "data/ci")
    assert again["paths"] == ns["overrides"]["paths"]
    # full runs and runs that redirect paths themselves (the sweep) are left alone
    for full in ({"limit": None, "overrides": {}}, {"limit": 2, "overrides": {"paths": {"predictions": "x"}}}):
        ns = {"profile": "ci", **full}
        before = dict(ns["overrides"])
        check_parameters(ns)
        assert ns["overrides"] == before


def test_run_notebook_partial_run_refused_inside_a_dvc_stage():
    env = dict(os.environ, DVC_STAGE="infer@emotion")
    r = subprocess.run(["bash", "scripts/run_notebook.sh", "04_answer", "x", "-p", "limit", "2"], cwd=ROOT,
                       env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "partial run is not a pipeline result" in r.stderr


def _scratch_repo(tmp_path):
    """A throw-away repository layout with this run_notebook.sh and a one-cell notebook, so an
    escaping OUTNAME (on the old script) lands in tmp_path, never in this checkout."""
    import nbformat
    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    (repo / "notebooks").mkdir()
    for f in ("run_notebook.sh", "deterministic_env.sh"):
        shutil.copy(ROOT / "scripts" / f, repo / "scripts" / f)
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, repo / "notebooks" / "tiny.ipynb")
    return repo


@pytest.mark.parametrize("outname", ["../../notebooks/tiny", "../../../outside", "a/b", "..", "-p"])
def test_run_notebook_outname_never_leaves_results_notebooks(tmp_path, outname):
    """Issue #28 class 4: an OUTNAME with '/' or '..' wrote outside the repository or over a tracked notebook."""
    repo = _scratch_repo(tmp_path)
    tracked = (repo / "notebooks" / "tiny.ipynb").read_bytes()
    env = dict(os.environ, PATH=f"{ROOT / '.venv' / 'bin'}:{os.environ['PATH']}", PYTHONPATH=str(ROOT))
    env.pop("DVC_STAGE", None)
    r = subprocess.run(["bash", "scripts/run_notebook.sh", "tiny", outname], cwd=repo, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 2, r.stderr[-2000:]
    assert f"OUTNAME '{outname}' is not a plain name" in r.stderr
    assert (repo / "notebooks" / "tiny.ipynb").read_bytes() == tracked
    assert sorted(p.name for p in tmp_path.iterdir()) == ["repo"]          # nothing written beside the repo
    assert not (repo / "results").exists()


def test_run_notebook_refuses_a_symlinked_output(tmp_path):
    repo = _scratch_repo(tmp_path)
    (repo / "results" / "notebooks").mkdir(parents=True)
    (repo / "results" / "notebooks" / "x.ipynb").symlink_to(repo / "notebooks" / "tiny.ipynb")
    tracked = (repo / "notebooks" / "tiny.ipynb").read_bytes()
    env = dict(os.environ, PATH=f"{ROOT / '.venv' / 'bin'}:{os.environ['PATH']}", PYTHONPATH=str(ROOT))
    env.pop("DVC_STAGE", None)
    r = subprocess.run(["bash", "scripts/run_notebook.sh", "tiny", "x"], cwd=repo, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and "symbolic link" in r.stderr, r.stderr[-2000:]
    assert (repo / "notebooks" / "tiny.ipynb").read_bytes() == tracked


# which papermill arguments make a partial run: one rule (harp_lib.app.notebook.partial_run_args), asked by
# scripts/run_notebook.sh; the table is the rule the script's own case list applied before issue 32
PARTIAL_ARGS = [
    ([], False), (["-p", "domain", "emotion"], False), (["-p", "limit", "2"], True),
    (["-p", "domain", "emotion", "-p", "overrides", "{}"], True), (["-r", "limit", "2"], True),
    (["--parameters", "limit", "2"], True), (["--parameters_raw", "overrides", "x"], True),
    (["-p", "domain", "limit"], False), (["-p", "setup", "A5", "limit"], False),
    (["-y", "limit: 3"], True), (["--parameters_yaml", "{overrides: {agent: {top_k: 1}}}"], True),
    (["-y", "domain: song"], False), (["-f", "params.yaml"], True), (["--parameters_file", "x"], True),
    (["-b", "e30="], True), (["--parameters_base64", "e30="], True), (["-k", "python3", "limit"], False),
    (["-p", "-p", "limit", "1"], True), (["limit", "2"], False),
    # issue 29: a run on another profile never writes the committed pages
    (["-p", "profile", "ci"], True), (["-y", "profile: ci"], True), (["-p", "domain", "profile"], False),
]


@pytest.mark.parametrize("argv,partial", PARTIAL_ARGS)
def test_partial_run_args_rule(argv, partial):
    from harp_lib.app.notebook import _main, partial_run_args
    assert partial_run_args(argv) is partial
    r = subprocess.run([sys.executable, "-m", "harp_lib.app.notebook", "partial-run", *argv], cwd=ROOT,
                       env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == ("partial" if partial else "full"), r.stderr
    assert _main(["nonsense"]) == 2


@pytest.mark.slow
def test_run_notebook_asks_the_library_where_a_partial_run_goes(tmp_path):
    script = (ROOT / "scripts" / "run_notebook.sh").read_text()
    assert "python -m harp_lib.app.notebook partial-run" in script and "-p:limit" not in script
    repo = _scratch_repo(tmp_path)
    env = dict(os.environ, PATH=f"{ROOT / '.venv' / 'bin'}:{os.environ['PATH']}", PYTHONPATH=str(ROOT))
    env.pop("DVC_STAGE", None)
    r = subprocess.run(["bash", "scripts/run_notebook.sh", "tiny", "x", "-y", "limit: 2"], cwd=repo, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "partial run: executed copy -> data/scratch/notebooks/x.ipynb" in r.stderr
    assert (repo / "data" / "scratch" / "notebooks" / "x.ipynb").exists() and not (repo / "results").exists()

def test_every_parameter_has_a_type_and_a_description_in_papermill_help():
    """`papermill --help-notebook` used to say "Unknown type" for every parameter, and 06's `collection`
    and `setup` had no description.  The `# type:` comment must also agree with the checked type in
    harp_lib.app.notebook.PARAMETERS, so the help cannot promise what check_parameters refuses."""
    import typing

    import papermill

    from harp_lib.app.notebook import PARAMETERS
    for nb in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for name, p in papermill.inspect_notebook(str(nb)).items():
            assert p["inferred_type_name"] not in (None, "None"), f"{nb.stem}: {name} has no type for papermill"
            assert p["help"].strip(), f"{nb.stem}: {name} has no description for papermill"
            if name in PARAMETERS:
                declared = eval(p["inferred_type_name"], vars(typing))  # noqa: S307 - a type name we wrote
                assert declared == PARAMETERS[name][0] or (name == "domain" and declared is str), \
                    f"{nb.stem}: {name} says {p['inferred_type_name']}, check_parameters checks {PARAMETERS[name][0]}"

def _param_notebook(repo, body: str = "x = 1"):
    import nbformat
    cells = [nbformat.v4.new_code_cell('domain = "emotion"', metadata={"tags": ["parameters"]}),
             nbformat.v4.new_code_cell("from harp_lib.app.notebook import check_parameters\ncheck_parameters(globals())"),
             nbformat.v4.new_code_cell(body)]
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, repo / "notebooks" / "params.ipynb")


@pytest.mark.slow
@pytest.mark.parametrize("case", ["bad_parameter", "failing_cell"])
def test_run_notebook_reports_a_failure_in_one_first_line(tmp_path, case):
    """Issue #28: a bad -p ended a 50-line papermill traceback (exit 1); now the first line is the
    message, with the cell and the executed copy, exit 2 for a parameter (1 for a failing cell)."""
    repo = _scratch_repo(tmp_path)
    _param_notebook(repo, "1 / 0")
    env = dict(os.environ, PATH=f"{ROOT / '.venv' / 'bin'}:{os.environ['PATH']}", PYTHONPATH=str(ROOT))
    env.pop("DVC_STAGE", None)
    env.pop("HARP_DEBUG", None)
    args = ["-p", "domian", "clinical"] if case == "bad_parameter" else ["-p", "domain", "clinical"]
    r = subprocess.run(["bash", "scripts/run_notebook.sh", "params", "x", *args], cwd=repo, env=env,
                       capture_output=True, text=True, timeout=300)
    lines = [ln for ln in r.stderr.splitlines() if ln.strip() and not ln.startswith(("Input Notebook", "Output Notebook",
                                                                                     "Executing", "Black is not"))]
    if case == "bad_parameter":
        assert r.returncode == 2, r.stderr[-2000:]
        assert lines[0].startswith("notebooks/params.ipynb: ConfigError: unknown notebook parameter 'domian' "
                                   "(did you mean 'domain'?)"), r.stderr[-2000:]
        assert "(code cell 3; the executed copy results/notebooks/x.ipynb shows it)" in lines[0]   # cell 2: papermill's injected one
    else:
        assert r.returncode == 1, r.stderr[-2000:]
        assert lines[0] == ("notebooks/params.ipynb: ZeroDivisionError: division by zero (code cell 4; the executed "
                            "copy results/notebooks/x.ipynb shows it)"), r.stderr[-2000:]
    assert "Traceback" not in r.stderr and len(lines) <= 2, r.stderr[-2000:]
