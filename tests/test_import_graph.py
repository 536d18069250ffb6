"""The import graph of harp_lib (module-level AND function-level imports, read with ``ast``):
no cycles, and no import that goes upward in the declared layer order (docs/architecture.md).

A module belongs to the first layer with a matching prefix (``harp_lib.agent`` matches
``harp_lib.agent.runner``; a more specific prefix listed in a LOWER layer wins, e.g.
``harp_lib.agent.evidence`` is a service the tasks use).  Imports inside one layer are allowed
as long as they make no cycle.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

ARCHITECTURE = ROOT / "docs" / "architecture.md"


def layers_from_doc(text: str, package: str = "harp_lib") -> list[tuple[str, tuple[str, ...]]]:
    """The layer table of docs/architecture.md ("## Layers"), lowest first: ``[(name, prefixes)]``.

    The back-quoted names of the second column become module prefixes: ``schema`` ->
    ``harp_lib.schema``, ``extract.*`` -> ``harp_lib.extract``, ``__init__`` -> ``harp_lib``."""
    body = text.split("## Layers", 1)[1].split("\n## ", 1)[0]
    out = []
    for line in body.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3 or not cells[0][:1].isdigit():
            continue
        names = re.findall(r"`([A-Za-z_][\w.]*?)(?:\.\*)?`", cells[1])
        out.append((cells[0].split(None, 1)[1],
                    tuple(package if n == "__init__" else f"{package}.{n}" for n in names)))
    return out


#: Lowest first, read from docs/architecture.md "Layers" (the table is the one source).
LAYERS: list[tuple[str, tuple[str, ...]]] = layers_from_doc(ARCHITECTURE.read_text(encoding="utf-8"))


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
    """The layer index of ``module``: its longest matching prefix decides (the package itself,
    a name without a dot, matches only itself: every module must be named)."""
    best, best_len = None, -1
    for i, (_, prefixes) in enumerate(layers):
        for p in prefixes:
            if (module == p or ("." in p and module.startswith(p + "."))) and len(p) > best_len:
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


def room_of(module: str) -> str:
    """The room of a module: its package under harp_lib (``harp_lib.agent``), or the top-level module."""
    return ".".join(module.split(".")[:2])


def back_up_arrows(graph: dict[str, set[str]], layers=LAYERS) -> dict[tuple[str, str], list[tuple[str, str]]]:
    """Arrows between rooms that run back up: the importing room's floor (the layer of its own name)
    is below the imported room's; with the module edges behind each arrow."""
    out: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for m, targets in sorted(graph.items()):
        for t in sorted(targets):
            a, b = room_of(m), room_of(t)
            if a != b and layer_of(a, layers) < layer_of(b, layers):
                out.setdefault((a, b), []).append((m, t))
    return out


def documented_back_up_arrows(text: str, package: str = "harp_lib") -> set[tuple[str, str]]:
    """The ``- `a` → `b`: reason`` bullets of docs/architecture.md "The house by rooms"."""
    body = text.split("### The house by rooms", 1)[1].split("\n#", 1)[0]
    return {(f"{package}.{a}", f"{package}.{b}") for a, b in re.findall(r"^- `([\w.]+)` → `([\w.]+)`:", body, re.M)}


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


def test_layers_are_the_architecture_table():
    """The test's layers are read from docs/architecture.md: five floors in order, every prefix once."""
    assert [n for n, _ in LAYERS] == ["core", "services", "tasks", "stages", "orchestration"]
    names = [p for _, ps in LAYERS for p in ps]
    assert len(names) == len(set(names)) and "harp_lib.agent.evidence" in LAYERS[1][1]
    with pytest.raises(KeyError, match="in no layer"):
        layer_of("harp_lib.not_in_the_table")        # no catch-all: a new module must be placed


def test_arrows_that_run_back_up_are_the_documented_ones(graph):
    """Every room arrow that runs back up is listed, with its reason, in docs/architecture.md, and
    every listed one still exists (each is an import into a lower-layer module of a mixed package)."""
    found = back_up_arrows(graph)
    assert set(found) == documented_back_up_arrows(ARCHITECTURE.read_text(encoding="utf-8")), \
        {k: v for k, v in found.items()}
    for edges in found.values():
        assert all(layer_of(t) <= layer_of(m) for m, t in edges)


def test_the_room_checker_finds_a_new_back_up_arrow(tmp_path):
    root = _pkg(tmp_path, {"__init__.py": "", "tasks/__init__.py": "from ..agent import evidence\n",
                           "agent/__init__.py": "", "agent/evidence.py": "", "agent/runner.py": "from .. import tasks\n"})
    g = import_graph(root)
    assert back_up_arrows(g) == {("harp_lib.tasks", "harp_lib.agent"): [("harp_lib.tasks", "harp_lib.agent.evidence")]}
    assert upward_imports(g) == [] and cycles(g) == []


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
