"""Recipes of docs/architecture.md, checked as written.

"Add a notebook stage to dvc.yaml", on the real dvc.yaml and notebooks/: every notebook is a
pipeline stage run through scripts/run_notebook.sh (except the documented interactive ones), with
the notebook as a dep, profile/profiles as params, a unique executed-copy name that starts with the
notebook's, and no partial-run parameters.

"Adding a query type": the recipe's code block, run in a temporary registry, makes ``answer_query``
answer a question no built-in type reads, for a rule setup (A1) and the oracle (A6)."""
from __future__ import annotations

import copy
import dataclasses
import re
import sys
import types
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
DOC = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
RECIPE = DOC.split("### Add a notebook stage to `dvc.yaml`", 1)[1].split("\n## ", 1)[0]
TYPE_RECIPE = DOC.split("### Adding a query type", 1)[1].split("\n### ", 1)[0]


def notebook_runs(dvc: dict, domains) -> list[tuple[str, str, str, str]]:
    """``(stage, notebook, executed-copy name, cmd)`` for every run_notebook.sh call, foreach expanded."""
    runs = []
    for name, st in dvc["stages"].items():
        body = st.get("do", st)
        cmds = body["cmd"] if isinstance(body["cmd"], list) else [body["cmd"]]
        for item in (domains if "foreach" in st else [None]):
            for cmd in cmds:
                cmd = cmd.replace("${item}", item) if item else cmd
                for m in re.finditer(r"run_notebook\.sh (\S+) (\S+)", cmd):
                    runs.append((name, m.group(1), m.group(2), cmd))
    return runs


def recipe_problems(dvc: dict, notebooks: list[str], domains, interactive: set[str]) -> list[str]:
    """What a notebook stage misses by the recipe (empty: every notebook is a proper stage)."""
    runs = notebook_runs(dvc, domains)
    bad = [f"notebook {n} has no dvc.yaml stage" for n in sorted(set(notebooks) - interactive - {r[1] for r in runs})]
    outs = [r[2] for r in runs]
    bad += [f"executed copy {o} is written by {outs.count(o)} runs" for o in sorted(set(outs)) if outs.count(o) > 1]
    for stage, nb, out, cmd in runs:
        body = dvc["stages"][stage].get("do", dvc["stages"][stage])
        if nb not in notebooks:
            bad.append(f"stage {stage} runs a missing notebook {nb}")
        if not out.startswith(nb):
            bad.append(f"stage {stage}: executed copy {out} does not start with {nb}")
        if f"notebooks/{nb}.ipynb" not in body.get("deps", []):
            bad.append(f"stage {stage}: notebooks/{nb}.ipynb is not a dep")
        if not {"profile", "profiles"} <= set(body.get("params", [])):
            bad.append(f"stage {stage}: params lack profile/profiles")
        if re.search(r"(-p|-r|-y)\s+\S*(limit|overrides)", cmd):
            bad.append(f"stage {stage}: passes limit/overrides (a partial run)")
    return bad


def _inputs():
    dvc = yaml.safe_load((ROOT / "dvc.yaml").read_text())
    dvc["stages"].update(yaml.safe_load((ROOT / "pipelines" / "llm" / "dvc.yaml").read_text())["stages"])
    domains = yaml.safe_load((ROOT / "params.yaml").read_text())["domains"]
    nbs = sorted(p.stem for p in (ROOT / "notebooks").glob("*.py") if p.name != "conftest.py")
    interactive = set(re.findall(r"`(\w+)`", RECIPE.split("no pipeline stage:", 1)[1].split("\n\n", 1)[0]))
    return dvc, domains, nbs, interactive


def test_every_notebook_is_a_stage_as_the_recipe_says():
    dvc, domains, nbs, interactive = _inputs()
    assert interactive == {"03_plan_and_retrieve", "06_your_own_audio"}
    assert all((ROOT / "notebooks" / f"{n}.ipynb").exists() for n in nbs)      # the jupytext pair
    assert recipe_problems(dvc, nbs, domains, interactive) == []
    for f in ("notebooks/<NN_name>.py", "notebooks/<NN_name>.ipynb", "dvc.yaml"):
        assert f"**`{f}`**" in RECIPE                                          # three files


def test_a_new_notebook_needs_its_stage_and_the_recipes_stage_is_enough():
    dvc, domains, nbs, interactive = _inputs()
    nbs = nbs + ["07_toy"]
    assert recipe_problems(dvc, nbs, domains, interactive) == ["notebook 07_toy has no dvc.yaml stage"]
    new = copy.deepcopy(dvc)
    new["stages"]["toy"] = {"foreach": "${domains}", "do": {
        "cmd": "bash scripts/run_notebook.sh 07_toy 07_toy_${item} -p domain ${item}",
        "deps": ["notebooks/07_toy.ipynb", "harp_lib/app/pipeline.py"], "params": ["profile", "profiles", "paths.index"],
        "outs": ["data/toy/${item}"]}}
    assert recipe_problems(new, nbs, domains, interactive) == []
    new["stages"]["toy"]["do"]["cmd"] = "bash scripts/run_notebook.sh 07_toy 02_index_${item} -p limit 2"
    probs = recipe_problems(new, nbs, domains, interactive)
    assert any("02_index_emotion is written by 2 runs" in p for p in probs)
    assert any("does not start with 07_toy" in p for p in probs) and any("limit/overrides" in p for p in probs)


# ----------------------------------------------------------------------------- Adding a query type
@pytest.fixture
def recipe_type(monkeypatch):
    """The recipe's code block run as written, in a registry copied for this test: ``(name, task)``;
    unregistered afterwards whatever happens."""
    from harp_lib import tasks
    from harp_lib.tasks import registry
    monkeypatch.setattr(registry, "_TASKS", dict(registry._TASKS))
    code = re.search(r"```python\n(.*?)```", TYPE_RECIPE, re.S).group(1)
    before = set(tasks.names())
    mod = types.ModuleType("architecture_md_recipe")          # the "one file" of the recipe
    monkeypatch.setitem(sys.modules, mod.__name__, mod)
    try:
        exec(compile(code, "docs/architecture.md (Adding a query type)", "exec", dont_inherit=True), mod.__dict__)
        (name,) = set(tasks.names()) - before
        yield name, tasks.get(name)
    finally:
        for name in set(tasks.names()) - before:
            tasks.unregister(name)


def _laughs():
    from harp_lib.core.schema import Segment
    from harp_lib.retrieval.index import SegmentIndex
    segs = [Segment("r1_0000", "r1", 0.0, 4.0, "S0", "ha ha", {"primary": "laugh"}),
            Segment("r1_0001", "r1", 4.0, 9.0, "S0", "so funny", {"primary": "laugh"}),
            Segment("r1_0002", "r1", 9.0, 15.0, "S1", "anyway", {"primary": "Neutral"})]
    return segs, SegmentIndex.from_segments(segs)


QUESTION = "How often does she laugh?"


def test_a_new_query_type_is_read_and_answered_by_the_rule_agent_and_the_oracle(recipe_type):
    from harp_lib import tasks
    from harp_lib.agent.runner import answer_query
    from harp_lib.core.schema import Query
    name, task = recipe_type
    assert (name, task.domain, tasks.readers("emotion")[0].name) == ("laugh_count", "emotion", "laugh_count")
    assert tasks.read_question(QUESTION, "emotion").task == name
    segs, ix = _laughs()
    q = Query("laugh-1", "emotion", "r1", name, QUESTION, {"laughs": 2}, gt_segment_ids=("r1_0000", "r1_0001"))
    a1 = answer_query(q, ix, "A1", hearing=False)
    assert a1.error is None and a1.answer == "2", (a1.answer, a1.rationale, a1.error)
    assert "[0.0s–4.0s] S0 primary=laugh" in a1.rationale
    a6 = answer_query(q, ix, "A6", hearing=False, gt_segments=segs)    # the oracle: audio only, no labels heard
    assert a6.error is None and a6.plan.oracle and a6.answer == "0", (a6.answer, a6.rationale, a6.error)
    assert [(s.start, s.end) for s in a6.plan.sets] == [(0.0, 4.0), (4.0, 9.0)]


def test_without_the_new_type_the_same_question_is_unsupported(recipe_type):
    from harp_lib import tasks
    from harp_lib.agent.runner import answer_query
    from harp_lib.core.schema import Query
    name, _ = recipe_type
    segs, ix = _laughs()
    q = Query("laugh-1", "emotion", "r1", name, QUESTION, {"laughs": 2}, gt_segment_ids=("r1_0000", "r1_0001"))
    tasks.unregister(name)
    assert name not in tasks.names() and tasks.read_question(QUESTION, "emotion").task == "unsupported"
    q = dataclasses.replace(q, query_type="state")      # a label the agent never reads (the oracle's windows only)
    for setup, kw in (("A1", {}), ("A6", {"gt_segments": segs})):
        p = answer_query(q, ix, setup, hearing=False, **kw)
        assert p.error is None and p.answer == "unsupported question", (setup, p.answer, p.error)
        assert "no supported emotion question type fits" in p.rationale
