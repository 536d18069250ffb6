"""The import graph of harp_lib (module-level AND function-level imports, read with ``ast``):
no cycles, and no import that goes upward in the declared layer order (docs/architecture.md).

A module belongs to the first layer with a matching prefix (``harp_lib.agent`` matches
``harp_lib.agent.runner``; a more specific prefix listed in a LOWER layer wins, e.g.
``harp_lib.agent.evidence`` is a service the tasks use).  Imports inside one layer are allowed
as long as they make no cycle.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: Lowest first.  Keep in step with docs/architecture.md "Layers".
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("core", ("harp_lib", "harp_lib.progress", "harp_lib.config", "harp_lib.schema", "harp_lib.labels",
              "harp_lib.timespan", "harp_lib.audio", "harp_lib.answer_format", "harp_lib.results_io",
              "harp_lib.benchfolder", "harp_lib.llm")),
    ("services", ("harp_lib.index", "harp_lib.extract", "harp_lib.agent.evidence", "harp_lib.agent.references", "harp_lib.agent.intent",
                  "harp_lib.agent.multimodal",
                  "harp_lib.agent.context")),
    ("tasks", ("harp_lib.tasks",)),
    ("stages", ("harp_lib.agent", "harp_lib.evaluate", "harp_lib.synth", "harp_lib.datasets")),
    ("orchestration", ("harp_lib.pipeline", "harp_lib.sweep", "harp_lib.scale", "harp_lib.bench",
                       "harp_lib.viz", "harp_lib.doctor", "harp_lib.fetch_weights", "harp_lib.userdata", "harp_lib.questions", "harp_lib.agent.llm_rows",
                       "harp_lib.evaluate.second_judge",
                       "harp_lib.cli")),
]


def modules(root: Path, package: str) -> dict[str, Path]:
    """``{dotted module name: file}`` of every .py file of ``root/package``."""
    out = {}
    for p in sorted((root / package).rglob("*.py")):
        parts = list(p.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = p
    return out


def import_graph(root: Path, package: str = "harp_lib") -> dict[str, set[str]]:
    """Edges ``module -> modules it imports`` inside ``package``, from every import statement
    anywhere in the file (module level, functions, methods, ``if TYPE_CHECKING``)."""
    mods = modules(root, package)
    graph: dict[str, set[str]] = {}
    for name, path in mods.items():
        is_pkg = path.name == "__init__.py"
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            cands: list[str] = []
            if isinstance(node, ast.Import):
                cands = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = name.split(".") if is_pkg else name.split(".")[:-1]
                    base = base[:len(base) - (node.level - 1)]
                    mod = ".".join(base + ([node.module] if node.module else []))
                else:
                    mod = node.module or ""
                cands = [f"{mod}.{a.name}" if f"{mod}.{a.name}" in mods else mod for a in node.names]
            for t in cands:
                if not (t == package or t.startswith(package + ".")):
                    continue
                while t not in mods and "." in t:
                    t = t.rsplit(".", 1)[0]
                if t != name:
                    targets.add(t)
        graph[name] = targets
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


def layer_of(module: str, layers=LAYERS) -> int:
    """The layer index of ``module``: its longest matching prefix decides."""
    best, best_len = None, -1
    for i, (_, prefixes) in enumerate(layers):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > best_len:
                best, best_len = i, len(p)
    if best is None:
        raise KeyError(f"module {module} is in no layer: add it to LAYERS (tests/test_import_graph.py) "
                       f"and docs/architecture.md")
    return best


def upward_imports(graph: dict[str, set[str]], layers=LAYERS) -> list[str]:
    bad = []
    for m, targets in sorted(graph.items()):
        for t in sorted(targets):
            if layer_of(t, layers) > layer_of(m, layers):
                bad.append(f"{m} ({layers[layer_of(m, layers)][0]}) imports {t} ({layers[layer_of(t, layers)][0]})")
    return bad


# ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def graph():
    return import_graph(ROOT)


def test_harp_lib_has_no_import_cycle(graph):
    assert cycles(graph) == []


def test_no_import_goes_up_the_layers(graph):
    assert upward_imports(graph) == []


def test_every_module_has_a_layer(graph):
    for m in graph:
        layer_of(m)


# ---------------------------------------------------------------------------------------
# the checker itself can fail
def _pkg(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = tmp_path / "harp_lib" / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return tmp_path


def test_checker_finds_a_function_level_cycle_and_an_upward_import(tmp_path):
    root = _pkg(tmp_path, {
        "__init__.py": "",
        "schema.py": "def f():\n    from .pipeline import run\n",          # core -> orchestration
        "pipeline.py": "from .schema import f\n",
        "extract/__init__.py": "",
        "extract/vad.py": "def g():\n    from . import labelers\n",
        "extract/labelers.py": "from .vad import g\n",
    })
    g = import_graph(root)
    assert g["harp_lib.schema"] == {"harp_lib.pipeline"} and g["harp_lib.extract.vad"] == {"harp_lib.extract.labelers"}
    assert sorted(cycles(g)) == [["harp_lib.extract.labelers", "harp_lib.extract.vad"],
                                 ["harp_lib.pipeline", "harp_lib.schema"]]
    assert upward_imports(g) == ["harp_lib.schema (core) imports harp_lib.pipeline (orchestration)"]


def test_checker_fails_on_a_bad_import_in_a_copy_of_harp_lib(tmp_path):
    import shutil
    shutil.copytree(ROOT / "harp_lib", tmp_path / "harp_lib", ignore=shutil.ignore_patterns("__pycache__"))
    bad = tmp_path / "harp_lib" / "timespan.py"
    bad.write_text(bad.read_text() + "\n\ndef _oops():\n    from .agent.runner import Agent\n    return Agent\n")
    g = import_graph(tmp_path)
    assert "harp_lib.timespan (core) imports harp_lib.agent.runner (stages)" in upward_imports(g)
    assert any("harp_lib.timespan" in c for c in cycles(g))        # runner imports timespan: a cycle too
    with pytest.raises(KeyError, match="in no layer"):
        layer_of("harp_lib_extra.module")
