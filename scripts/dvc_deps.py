"""Write the code dependencies of every DVC stage from the import graph of what its ``cmd`` runs.

    .venv/bin/python scripts/dvc_deps.py                  # rewrite the code deps of both dvc.yaml files
    .venv/bin/python scripts/dvc_deps.py --check          # exit 1, printing the differences, if they disagree
    .venv/bin/python scripts/dvc_deps.py --why judge harp_lib/tasks/song.py   # the import chain

A stage's code is what its ``cmd`` runs: ``bash scripts/run_notebook.sh NAME ...`` runs
``notebooks/NAME.ipynb`` (its code is the paired ``notebooks/NAME.py``), the shell scripts that
script sources and the modules it starts (``python -m harp_lib.app.notebook``, ``harp_lib.viz.html``);
``python -m MODULE`` and ``python scripts/X.py`` run that module or script.  From there the
harp_lib files it may execute are followed with ``ast``, transitively:

* every ``import`` and ``from ... import`` (module level and inside functions, relative ones,
  ``from pkg import submodule``), and the ``__init__.py`` of every package on the way;
* modules loaded by name: ``importlib.import_module("harp_lib....")`` with a literal, and the
  backend registry (:func:`harp_lib.config.get_backend` imports the modules named in
  ``backend_modules(...)`` on the first lookup): a module that calls ``get_backend`` /
  ``create_backend`` / ``list_backends`` / ``check_backend_options`` depends on the registry
  modules that register its registry stage (the literal first argument; else every registry stage
  named by a string in that module; else all of them);
* package data (``harp_lib/**`` files that are not Python): a module that names the file (its
  name, or its path under its package) or, within its own package, a folder holding it as a
  path part (``Path(__file__).with_name("prompts")``, ``resources.files(...) / "prompts"``).

The ``deps:`` entries this script owns are those under ``harp_lib/`` and ``scripts/`` and the
notebooks a ``cmd`` runs; every other entry (data, results, the ``notebooks`` folder) is kept as it
is, after them, with its comment.  A folder is listed instead of its files only when every file
in it (as DVC sees it: without ``__pycache__``) is a dependency.  Entries are sorted: notebooks,
scripts, harp_lib.  A change to a file then re-runs exactly the stages that may run it.
"""
from __future__ import annotations

import argparse
import ast
import os
import re
import shlex
import sys
from pathlib import Path
from typing import Iterable, Optional

import yaml

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "harp_lib"
DVC_FILES = ("dvc.yaml", "pipelines/llm/dvc.yaml")
NOTEBOOK_RUNNER = "scripts/run_notebook.sh"      # its first argument is a notebook name
REGISTRY_LOOKUPS = {"get_backend", "create_backend", "list_backends", "check_backend_options"}
IGNORED_PARTS = {"__pycache__", ".locks"}        # .dvcignore: DVC does not hash them
OWNED_PREFIXES = (f"{PACKAGE}/", "scripts/")


# ----------------------------------------------------------------------------- the module graph
class Graph:
    """harp_lib's modules and the files each one may execute or read (see the module docstring)."""

    def __init__(self, root: Path = ROOT):
        self.root = root
        self.files = {}                  # dotted module name -> repo-relative path
        for p in sorted((root / PACKAGE).rglob("*.py")):
            if IGNORED_PARTS.isdisjoint(p.parts):
                parts = list(p.relative_to(root).with_suffix("").parts)
                self.files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = p.relative_to(root).as_posix()
        self.data = [f for f in package_files(root) if not f.endswith(".py") and not Path(f).name.startswith("README")]
        self.trees = {m: ast.parse((root / f).read_text(encoding="utf-8"), f) for m, f in self.files.items()}
        self.lazy = {m: lazy_attributes(t, m, self.files) for m, t in self.trees.items() if self.files[m].endswith("__init__.py")}
        self.static = {m: self._imports(m, t) for m, t in self.trees.items()}
        self.backends = self._backend_modules()
        self.edges = {m: self.static[m] | self._by_name(m) for m in self.files}

    def resolve(self, name: str) -> Optional[str]:
        """The module ``name`` loads (itself or, for ``pkg.attr``, the longest module prefix)."""
        while name and name not in self.files:
            name = name.rpartition(".")[0]
        return name or None

    def _imports(self, module: str, tree: ast.AST) -> set[str]:
        """What ``module`` (``"__main__"``: a script) imports: its import statements (not those of a
        package's lazy ``__getattr__``), modules named by a literal, and the lazy submodules of a
        package whose attribute it imports or reads."""
        names = imported_names(tree, module, self.files.get(module, "").endswith("__init__.py"), self.files,
                               skip=lazy_getattr(tree) if module in self.lazy else None)
        out = {self.resolve(t) for t in names | string_imports(tree) if self.resolve(t)}
        used = {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
        used |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
        for pkg in out & set(self.lazy):
            out |= {sub for attr, sub in self.lazy[pkg].items() if attr in used}
        return out - {module}

    def _backend_modules(self) -> dict[str, set[str]]:
        """``{registry module: the registry stages its package registers}`` (in the modules of its
        package that it imports, transitively: ``extract.backends`` -> vad, asr, ...)."""
        declared = [a.value for t in self.trees.values() for n in ast.walk(t)
                    if isinstance(n, ast.Call) and call_name(n) in {"backend_modules", "_backend_modules"}
                    for a in n.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        direct = {m: {s for s, _ in calls_with_first_literal(t, {"register"})} for m, t in self.trees.items()}
        home = {b: b.rpartition(".")[0] + "." for b in declared}
        return {b: set().union(*(direct[m] for m in closure([b], self.static) if m.startswith(home[b])))
                for b in declared if b in self.files}

    def _by_name(self, module: str) -> set[str]:
        """The registry modules a module's backend lookups may import, and the data files it names."""
        tree = self.trees[module]
        known = set().union(*self.backends.values()) if self.backends else set()
        out = set()
        if any(isinstance(n, ast.FunctionDef) and n.name in REGISTRY_LOOKUPS for n in tree.body):
            tree = ast.Module(body=[], type_ignores=[])    # the registry itself: its callers depend
        for stage, _ in calls_with_first_literal(tree, REGISTRY_LOOKUPS, any_arg=True):
            wanted = {stage} if stage in known else (literals(tree) & known or known)
            out |= {b for b, stages in self.backends.items() if stages & wanted}
        out.discard(module)
        return out | {f"@{f}" for f in self.data_named_by(module)}

    def data_named_by(self, module: str) -> list[str]:
        """Package data files a module names: the file, its path under its package, or (in the
        module's own package) a folder holding it."""
        words = {w.strip("/") for w in literals(self.trees[module], fragments=False)}
        paths = {w.strip("/") for w in path_literals(self.trees[module])}
        home = self.files[module].rsplit("/", 1)[0]
        out = []
        for f in self.data:
            pkg = data_package(self.root, f)
            under = f[len(pkg) + 1:]
            folders = {"/".join(under.split("/")[:i]) for i in range(1, under.count("/") + 1)}
            if Path(f).name in words or under in words or (pkg == home and folders & paths):
                out.append(f)
        return out

    def closure(self, modules: Iterable[str]) -> set[str]:
        """The repo-relative files ``modules`` may execute or read, with their packages' ``__init__``."""
        mods = closure(modules, self.edges)
        return {self.files[m] if not m.startswith("@") else m[1:] for m in mods}

    def chain(self, modules: Iterable[str], target: str) -> list[str]:
        """One import chain from ``modules`` to the module (or data file) of file ``target``."""
        want = {f"@{target}"} | {m for m, f in self.files.items() if f == target}
        prev: dict[str, Optional[str]] = {m: None for m in modules}
        todo = list(prev)
        while todo:
            m = todo.pop(0)
            if m in want:
                path = [m]
                while prev[path[-1]]:
                    path.append(prev[path[-1]])
                return path[::-1]
            for t in sorted(self.edges.get(m, set()) | parents(m)):
                if t not in prev:
                    prev[t] = m
                    todo.append(t)
        return []


def closure(start: Iterable[str], edges: dict[str, set[str]]) -> set[str]:
    """Every node reachable from ``start``; a module brings its parent packages."""
    seen: set[str] = set()
    todo = list(start)
    while todo:
        m = todo.pop()
        if m in seen:
            continue
        seen.add(m)
        todo += [t for t in edges.get(m, set()) | parents(m) if t not in seen]
    return seen


def parents(module: str) -> set[str]:
    """The packages whose ``__init__`` runs before ``module`` (``a.b.c`` -> ``a``, ``a.b``)."""
    if module.startswith("@"):
        return set()
    parts = module.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts))}


def lazy_getattr(tree: ast.AST) -> Optional[ast.FunctionDef]:
    """A module's ``def __getattr__(name)`` (PEP 562: loads attributes on first access)."""
    return next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "__getattr__"), None)


def lazy_attributes(tree: ast.AST, module: str, known) -> dict[str, str]:
    """``{attribute: submodule}`` a package's ``__getattr__`` imports for ``if name in (...)`` /
    ``if name == "..."`` branches."""
    fn, out = lazy_getattr(tree), {}
    for node in ast.walk(fn) if fn else ():
        if not isinstance(node, ast.If):
            continue
        c = node.test
        if isinstance(c, ast.Compare) and len(c.comparators) == 1:
            vals = c.comparators[0].elts if isinstance(c.comparators[0], (ast.Tuple, ast.List, ast.Set)) else c.comparators
            attrs = [v.value for v in vals if isinstance(v, ast.Constant) and isinstance(v.value, str)]
            subs = imported_names(ast.Module(body=node.body, type_ignores=[]), module, True, known)
            out.update({a: sub for a in attrs for sub in subs if sub in known and sub != module})
    return out


def imported_names(tree: ast.AST, module: str, is_pkg: bool, known, skip: Optional[ast.AST] = None) -> set[str]:
    """Dotted names every import statement of ``tree`` loads (``from a import b``: ``a.b`` when that
    is a module, else ``a``), relative imports resolved against ``module``; none inside ``skip``."""
    out = set()
    skipped = {id(n) for n in ast.walk(skip)} if skip is not None else set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_pkg else module.split(".")[:-1]
                base = base[:len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            out |= {mod} | {f"{mod}.{a.name}" for a in node.names if f"{mod}.{a.name}" in known}
    return {n for n in out if n == PACKAGE or n.startswith(PACKAGE + ".")}


def string_imports(tree: ast.AST) -> set[str]:
    """``importlib.import_module("harp_lib.x")`` / ``__import__`` with a literal harp_lib name."""
    return {s for s, _ in calls_with_first_literal(tree, {"import_module", "__import__"})
            if s == PACKAGE or s.startswith(PACKAGE + ".")}


def call_name(node: ast.Call) -> str:
    f = node.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""


def calls_with_first_literal(tree: ast.AST, names: set[str], any_arg: bool = False):
    """``(first argument, call)`` of the calls to ``names`` whose first argument is a string
    literal (``any_arg``: every call, ``None`` for a first argument that is not)."""
    for n in ast.walk(tree):
        if isinstance(n, ast.Call) and call_name(n) in names and not _is_foreign(n):
            a = n.args[0] if n.args else None
            lit = a.value if isinstance(a, ast.Constant) and isinstance(a.value, str) else None
            if lit is not None or any_arg:
                yield lit, n


def _is_foreign(call: ast.Call) -> bool:
    """``matplotlib.get_backend()``: a lookup of another library, not harp_lib's registry."""
    f = call.func
    return isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id in {"matplotlib", "plt"}


def literals(tree: ast.AST, fragments: bool = True) -> set[str]:
    """The string constants of ``tree`` outside docstrings (``fragments``: f-string parts too)."""
    docs = {id(b[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            for b in [getattr(n, "body", [])] if b and isinstance(b[0], ast.Expr)}
    parts = {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in n.values}
    return {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
            and id(n) not in docs and (fragments or id(n) not in parts)}


def path_literals(tree: ast.AST) -> set[str]:
    """String constants used as path parts: ``x / "prompts"``, ``.joinpath("data", ...)``,
    ``.with_name("prompts")``, ``Path("...")``, ``resources.files("...")``."""
    out = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Div):
            out |= {v.value for v in (n.left, n.right) if isinstance(v, ast.Constant) and isinstance(v.value, str)}
        elif isinstance(n, ast.Call) and call_name(n) in {"joinpath", "with_name", "Path", "files", "open"}:
            out |= {a.value for a in n.args if isinstance(a, ast.Constant) and isinstance(a.value, str)}
    return out


def package_files(root: Path, under: str = PACKAGE) -> list[str]:
    """Repo-relative files under ``under`` as DVC hashes a folder (no ``__pycache__``, no ``*.pyc``)."""
    return sorted(p.relative_to(root).as_posix() for p in (root / under).rglob("*")
                  if p.is_file() and IGNORED_PARTS.isdisjoint(p.parts) and p.suffix != ".pyc")


def data_package(root: Path, f: str) -> str:
    """The package folder a data file belongs to: its nearest folder with an ``__init__.py``."""
    d = f.rsplit("/", 1)[0]
    while d != PACKAGE and not (root / d / "__init__.py").exists():
        d = d.rsplit("/", 1)[0]
    return d


# ----------------------------------------------------------------------------- what a stage runs
def python_imports(graph: Graph, path: str) -> set[str]:
    """The harp_lib modules a script or notebook (``notebooks/NAME.py``) imports."""
    return graph._imports("__main__", ast.parse((graph.root / path).read_text(encoding="utf-8"), path))


def shell_runs(root: Path, script: str, seen: Optional[set] = None) -> tuple[set[str], set[str], set[str]]:
    """``(files, modules, python scripts)`` a shell script runs: itself and the scripts it sources,
    ``python -m MODULE`` and ``python scripts/X.py`` lines."""
    seen = set() if seen is None else seen
    files, mods, pys = {script}, set(), set()
    seen.add(script)
    for line in (root / script).read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0] if not line.lstrip().startswith("#") else ""
        for src in re.findall(r"(?:^|[;&|]\s*|\s)(?:source|\.)\s+(scripts/[\w./-]+\.sh)", line):
            if src not in seen:
                f, m, p = shell_runs(root, src, seen)
                files, mods, pys = files | f, mods | m, pys | p
        mods |= set(re.findall(r"python3?\s+-m\s+(" + PACKAGE + r"[\w.]*)", line))
        pys |= set(re.findall(r"python3?\s+(scripts/[\w./-]+\.py)", line))
    return files, mods, pys


def cmd_runs(root: Path, cmd: str) -> tuple[set[str], set[str], set[str]]:
    """``(files, modules, python files)`` one ``cmd`` line runs (files: deps as they are listed)."""
    tok = shlex.split(cmd)
    if not tok:
        return set(), set(), set()
    if tok[0] == "bash" or tok[0].endswith(".sh"):
        script = tok[1] if tok[0] == "bash" else tok[0]
        files, mods, pys = shell_runs(root, script)
        if script == NOTEBOOK_RUNNER:
            files.add(f"notebooks/{tok[2 if tok[0] == 'bash' else 1]}.ipynb")
            pys.add(f"notebooks/{tok[2 if tok[0] == 'bash' else 1]}.py")   # the paired percent script
        return files, mods, pys
    if Path(tok[0]).name.startswith("python"):
        if tok[1] == "-m":
            return set(), {tok[2]}, set()
        return {tok[1]}, set(), {tok[1]}
    raise ValueError(f"cmd {cmd!r}: neither `bash script.sh ...` nor `python [-m] ...`; teach scripts/dvc_deps.py")


def stage_runs(graph: Graph, body: dict) -> tuple[set[str], set[str]]:
    """``(files listed as they are, harp_lib modules)`` a stage's ``cmd`` (one line or a list) runs."""
    cmds = body["cmd"] if isinstance(body["cmd"], list) else [body["cmd"]]
    files, mods = set(), set()
    for c in cmds:
        f, m, p = cmd_runs(graph.root, c)
        files |= f
        mods |= {graph.resolve(x) for x in m if graph.resolve(x)}
        for py in p:
            mods |= python_imports(graph, py)
    return files, mods


def stages_of(root: Path, dvc_file: str) -> dict[str, dict]:
    """``{stage name: its body}`` of one dvc.yaml (a ``foreach`` stage's ``do``)."""
    if not (root / dvc_file).exists():
        return {}
    doc = yaml.safe_load((root / dvc_file).read_text(encoding="utf-8")) or {}
    return {n: st.get("do", st) for n, st in (doc.get("stages") or {}).items()}


def stage_files(root: Path = ROOT, graph: Optional[Graph] = None) -> dict[str, set[str]]:
    """``{stage: every repo-relative code file it may run or read}`` over both dvc.yaml files
    (uncollapsed; paths relative to the repository root)."""
    graph = graph or Graph(root)
    out = {}
    for dvc_file in DVC_FILES:
        for name, body in stages_of(root, dvc_file).items():
            files, mods = stage_runs(graph, body)
            out[name] = files | graph.closure(mods)
    return out


def collapse(files: set[str], root: Path) -> list[str]:
    """``files`` with each folder whose every file is among them listed as the folder (the highest
    such folder), sorted: notebooks, scripts, then the rest."""
    dirs = sorted({"/".join(f.split("/")[:i]) for f in files for i in range(1, f.count("/") + 1)},
                  key=lambda d: (d.count("/"), d))
    out, covered = set(files), []
    for d in dirs:
        if any(d.startswith(c + "/") for c in covered) or d == "notebooks":
            continue
        inside = set(package_files(root, d))
        if inside and inside <= files:
            covered.append(d)
            out = {f for f in out if not f.startswith(d + "/")} | {d}
    order = {"notebooks": 0, "scripts": 1}
    return sorted(out, key=lambda p: (order.get(p.split("/", 1)[0], 2), p))


def owned(path: str) -> bool:
    """A deps entry this script writes (code); any other is kept as it is."""
    return (path.startswith(OWNED_PREFIXES) or path + "/" in OWNED_PREFIXES
            or (path.startswith("notebooks/") and path.endswith(".ipynb")))


# ----------------------------------------------------------------------------- dvc.yaml text
STAGE_LINE = re.compile(r"^  ([A-Za-z_][\w-]*):\s*(#.*)?$")
ENTRY = re.compile(r"^(\s+)- (\S+?)(\s+#.*)?$")


def rewrite(text: str, deps: dict[str, list[str]]) -> str:
    """``text`` (a dvc.yaml) with the owned entries of each stage's ``deps:`` replaced by ``deps[stage]``
    (an entry that stays keeps its comment); other entries follow, unchanged and in order."""
    lines = text.splitlines(keepends=True)
    out, stage, i = [], None, 0
    while i < len(lines):
        line = lines[i]
        m = STAGE_LINE.match(line.rstrip("\n"))
        if m:
            stage = m.group(1)
        d = re.match(r"^(\s+)deps:\s*$", line.rstrip("\n"))
        out.append(line)
        i += 1
        if not (d and stage in deps):
            continue
        block = []
        while i < len(lines) and lines[i].strip() and len(lines[i]) - len(lines[i].lstrip()) > len(d.group(1)):
            block.append(lines[i])
            i += 1
        out += _new_block(block, deps[stage], len(d.group(1)) + 2)
    return "".join(out)


def _new_block(block: list[str], code: list[str], indent: int) -> list[str]:
    comments, kept = {}, []
    for line in block:
        e = ENTRY.match(line.rstrip("\n"))
        if e and owned(e.group(2)):
            comments[e.group(2)] = e.group(3) or ""
        else:
            kept.append(line)
    return [f"{' ' * indent}- {p}{comments.get(p, '')}\n" for p in code] + kept


def generated(root: Path = ROOT) -> dict[str, tuple[str, str]]:
    """``{dvc file: (its text now, the text with generated code deps)}``."""
    graph = Graph(root)
    files = stage_files(root, graph)
    out = {}
    for dvc_file in (f for f in DVC_FILES if (root / f).exists()):
        text = (root / dvc_file).read_text(encoding="utf-8")
        base = root / Path(dvc_file).parent
        deps = {}
        for name, body in stages_of(root, dvc_file).items():
            wdir = (base / body.get("wdir", ".")).resolve()
            deps[name] = [os.path.relpath(root / p, wdir) for p in collapse(files[name], root)]
        out[dvc_file] = (text, rewrite(text, deps))
    return out


def why(stage: str, target: str, root: Path = ROOT) -> list[str]:
    """How ``stage`` reaches the file ``target``: the file its cmd runs, then the import chain."""
    graph = Graph(root)
    bodies = {n: b for f in DVC_FILES for n, b in stages_of(root, f).items()}
    files, _ = stage_runs(graph, bodies[stage])
    if target in files:
        return [f"{stage}: its cmd runs {target}"]
    cmds = bodies[stage]["cmd"] if isinstance(bodies[stage]["cmd"], list) else [bodies[stage]["cmd"]]
    for c in cmds:
        _, mods, pys = cmd_runs(root, c)
        starts = {py: python_imports(graph, py) for py in sorted(pys)}
        starts.update({f"python -m {m}": {graph.resolve(m)} for m in sorted(mods)})
        for src, ms in starts.items():
            path = graph.chain(sorted(ms), target)
            if path:
                return [f"{stage}: {c}", f"  {src}", *(f"  -> {p[1:] if p.startswith('@') else p}" for p in path)]
    return [f"{stage} does not depend on {target}"]


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    ap.add_argument("--check", action="store_true", help="exit 1, printing the differences, if a dvc.yaml disagrees")
    ap.add_argument("--why", nargs=2, metavar=("STAGE", "FILE"), help="print how STAGE reaches FILE")
    ap.add_argument("--root", type=Path, default=ROOT, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.why:
        print("\n".join(why(a.why[0], a.why[1], a.root)))
        return 0
    import difflib
    stale = []
    for dvc_file, (old, new) in generated(a.root).items():
        if old == new:
            continue
        stale.append(dvc_file)
        if a.check:
            sys.stdout.writelines(difflib.unified_diff(old.splitlines(True), new.splitlines(True), dvc_file,
                                                       f"{dvc_file} (scripts/dvc_deps.py)"))
        else:
            (a.root / dvc_file).write_text(new, encoding="utf-8")
    if a.check and stale:
        print(f"\n{', '.join(stale)}: the code deps differ from the import graph; run "
              f".venv/bin/python scripts/dvc_deps.py", file=sys.stderr)
        return 1
    print(f"{'checked' if a.check else 'written'}: {', '.join(DVC_FILES)}"
          f"{' (up to date)' if not stale else ' (' + ', '.join(stale) + ' rewritten)'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
