"""The import graph of harp_lib (module-level AND function-level imports, read with ``ast``):
no cycles between modules or between packages, and no import that goes upward in the declared
layer order (docs/architecture.md).

A module's layer is its package's (``harp_lib.agent.runner`` is in ``harp_lib.agent``), and the
layer table names packages only, each once: there is no prefix rule.  Imports inside one layer are
allowed as long as they make no cycle.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from harp_testing import fake_package

ROOT = Path(__file__).resolve().parents[1]

ARCHITECTURE = ROOT / "docs" / "architecture.md"


def layers_from_doc(text: str, package: str = "harp_lib") -> list[tuple[str, tuple[str, ...]]]:
    """The layer table of docs/architecture.md ("## Layers"), lowest first: ``[(name, prefixes)]``.

    The back-quoted names of the second column become module prefixes: ``schema`` ->
    ``harp_lib.core.schema``, ``extract.*`` -> ``harp_lib.extract``, ``__init__`` -> ``harp_lib``."""
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


def room_of(module: str) -> str:
    """The room of a module: its package under harp_lib (``harp_lib.agent``), or ``harp_lib`` itself."""
    return ".".join(module.split(".")[:2])


def layer_of(module: str, layers=LAYERS) -> int:
    """The layer index of ``module``: the row that names its room (no prefixes, no exceptions:
    every package is named once, and a module's layer is its package's)."""
    room = room_of(module)
    for i, (_, rooms) in enumerate(layers):
        if room in rooms:
            return i
    raise KeyError(f"module {module} is in no layer: name its package {room} in the layer table of "
                   f"docs/architecture.md")


def upward_imports(graph: dict[str, set[str]], layers=LAYERS) -> list[str]:
    bad = []
    for m, targets in sorted(graph.items()):
        for t in sorted(targets):
            if layer_of(t, layers) > layer_of(m, layers):
                bad.append(f"{m} ({layers[layer_of(m, layers)][0]}) imports {t} ({layers[layer_of(t, layers)][0]})")
    return bad


def room_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The graph between packages: ``room -> rooms it imports`` (a room's own modules left out)."""
    out: dict[str, set[str]] = {}
    for m, targets in graph.items():
        out.setdefault(room_of(m), set()).update(room_of(t) for t in targets if room_of(t) != room_of(m))
    return out


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
    """The test's layers are read from docs/architecture.md: five floors in order, every package once."""
    assert [n for n, _ in LAYERS] == ["core", "services", "tasks", "stages", "orchestration"]
    names = [p for _, ps in LAYERS for p in ps]
    assert len(names) == len(set(names)) and "harp_lib.core" in LAYERS[0][1]
    assert all(n == "harp_lib" or n.count(".") == 1 for n in names)          # packages, never a module
    with pytest.raises(KeyError, match="in no layer"):
        layer_of("harp_lib.not_in_the_table")        # no catch-all: a new package must be placed


def test_every_package_is_in_the_table(graph):
    """No row names a package that does not exist, and every package is named."""
    named = {p for _, ps in LAYERS for p in ps}
    assert named == set(room_graph(graph)), named ^ set(room_graph(graph))


def test_no_two_packages_import_each_other(graph):
    """Between packages the arrows make no cycle (no pair imports each other, no longer ring)."""
    assert cycles(room_graph(graph)) == []


def test_the_package_checker_finds_a_pair(tmp_path):
    root = _pkg(tmp_path, {"__init__.py": "", "tasks/__init__.py": "from ..agent import evidence\n",
                           "agent/__init__.py": "", "agent/evidence.py": "", "agent/runner.py": "from .. import tasks\n"})
    g = import_graph(root)
    assert cycles(g) == [] and cycles(room_graph(g)) == [["harp_lib.agent", "harp_lib.tasks"]]


# ---------------------------------------------------------------------------------------
# the checker itself can fail
_pkg = fake_package


def test_checker_finds_a_function_level_cycle_and_an_upward_import(tmp_path):
    root = _pkg(tmp_path, {
        "__init__.py": "",
        "core/__init__.py": "", "app/__init__.py": "",
        "core/schema.py": "def f():\n    from ..app.pipeline import run\n",          # core -> orchestration
        "app/pipeline.py": "from ..core.schema import f\n",
        "extract/__init__.py": "",
        "extract/vad.py": "def g():\n    from . import labelers\n",
        "extract/labelers.py": "from .vad import g\n",
    })
    g = import_graph(root)
    assert g["harp_lib.core.schema"] == {"harp_lib.app.pipeline"} and g["harp_lib.extract.vad"] == {"harp_lib.extract.labelers"}
    assert sorted(cycles(g)) == [["harp_lib.app.pipeline", "harp_lib.core.schema"],
                                 ["harp_lib.extract.labelers", "harp_lib.extract.vad"]]
    assert cycles(room_graph(g)) == [["harp_lib.app", "harp_lib.core"]]
    assert upward_imports(g) == ["harp_lib.core.schema (core) imports harp_lib.app.pipeline (orchestration)"]


def test_checker_fails_on_a_bad_import_in_a_copy_of_harp_lib(tmp_path):
    import shutil
    shutil.copytree(ROOT / "harp_lib", tmp_path / "harp_lib", ignore=shutil.ignore_patterns("__pycache__"))
    bad = tmp_path / "harp_lib" / "core" / "timespan.py"
    bad.write_text(bad.read_text() + "\n\ndef _oops():\n    from harp_lib.agent.runner import Agent\n    return Agent\n")
    g = import_graph(tmp_path)
    assert "harp_lib.core.timespan (core) imports harp_lib.agent.runner (stages)" in upward_imports(g)
    assert any("harp_lib.core.timespan" in c for c in cycles(g))        # runner imports timespan: a cycle too
    with pytest.raises(KeyError, match="in no layer"):
        layer_of("harp_lib_extra.module")
