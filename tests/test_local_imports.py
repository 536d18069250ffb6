"""Imports sit at the top of their module unless a comment says why (issue 39).

The rule, checked with ``ast`` over every module of harp_lib/: an ``import`` or ``from ... import``
statement inside a function or method (at any depth: under ``if``, ``try``, ``with``, loops) needs
a comment saying why it is local, e.g. ``# heavy: torch (~1.2 s)``, ``# optional: xllamacpp (extra
llamacpp)``, ``# lazy: on first use of the name``.  The comment counts when it is

* on one of the statement's own lines, or
* a comment-only line directly above the statement, or
* the comment of the function-level import statement directly above (no line between them): a
  block of consecutive imports shares one comment.

A comment that is only a ``noqa`` directive (``# noqa: F401``) says nothing and does not count.  The
rule is the same for harp_lib modules, the standard library and third-party packages: a harp_lib
module or a light standard-library one rarely has a reason (a real import cycle would be one; the
import graph has none, tests/test_import_graph.py), a heavy or optional package usually has one.
Module-level imports (also under ``if TYPE_CHECKING:``) and class bodies are not checked.

``PENDING`` names modules not yet done (other work edits them now); a module in it that no longer
has an uncommented local import is reported, so the list cannot go stale silently.
"""
from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PENDING: set[str] = set()

_NOQA = re.compile(r"noqa(:\s*[A-Z]+\d+(\s*,\s*[A-Z]+\d+)*)?", re.IGNORECASE)


def _says_why(comment: str) -> bool:
    """A comment with words besides a ``noqa`` directive."""
    return bool(re.search(r"\w", _NOQA.sub("", comment)))


def _comment(line: str) -> str:
    """The ``#`` comment of one source line ('' if none), read with the tokenizer's view of strings."""
    try:
        for tok in tokenize.generate_tokens(io.StringIO(line).readline):
            if tok.type == tokenize.COMMENT:
                return tok.string
    except (tokenize.TokenError, IndentationError):
        pass
    return ""


def _local_imports(tree: ast.AST) -> list[ast.stmt]:
    """Import statements inside a function or method body, in source order."""
    out = []

    def walk(node, in_function: bool):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)) and in_function:
                out.append(child)
            walk(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))
    walk(tree, False)
    return sorted(out, key=lambda n: n.lineno)


def uncommented_local_imports(source: str) -> list[int]:
    """Line numbers of the function-level imports of ``source`` with no comment saying why."""
    lines = source.splitlines()
    bad, passed_end = [], {}                  # end line of an import that passed -> True
    for node in _local_imports(ast.parse(source)):
        own = any(_says_why(_comment(lines[i - 1])) for i in range(node.lineno, node.end_lineno + 1))
        above = lines[node.lineno - 2] if node.lineno > 1 else ""
        above_ok = above.strip().startswith("#") and _says_why(above.strip())
        block_ok = passed_end.get(node.lineno - 1, False)
        if own or above_ok or block_ok:
            passed_end[node.end_lineno] = True
        else:
            bad.append(node.lineno)
    return bad


def offenders(root: Path, package: str = "harp_lib") -> dict[str, list[int]]:
    """``{"<file>": [line, ...]}`` of every module with an uncommented function-level import."""
    out = {}
    for p in sorted((root / package).rglob("*.py")):
        bad = uncommented_local_imports(p.read_text(encoding="utf-8"))
        if bad:
            out[p.relative_to(root).as_posix()] = bad
    return out


def test_local_imports_say_why():
    found = offenders(ROOT)
    assert {k: v for k, v in found.items() if k not in PENDING} == {}, (
        "move these imports to the top of the module, or say on the line (or the line above) why they stay local")
    stale = PENDING - set(found)
    assert not stale, f"no uncommented local import left: remove from PENDING: {sorted(stale)}"


SAMPLE = '''
import os


def top():
    return os.sep


def bad():
    import json
    from harp_lib.core import audio
    return json, audio


def noqa_only():
    import ipywidgets  # noqa: F401
    return True


def good():
    import torch  # heavy: torch (~1.2 s)
    from torch import nn
    # optional: dask (extra scale)
    from distributed import Client
    return torch, nn, Client


def hash_in_a_string():
    x = "# not a comment"; import yaml
    return x, yaml


class K:
    import math                          # a class body is not checked

    def method(self):
        if True:
            import re
        return re
'''


def test_the_check_can_fail(tmp_path):
    assert uncommented_local_imports(SAMPLE) == [10, 11, 16, 29, 38]
    pkg = tmp_path / "harp_lib" / "sub"
    pkg.mkdir(parents=True)
    (pkg / "m.py").write_text(SAMPLE)
    (pkg / "ok.py").write_text("import json\n\n\ndef f():\n    import torch  # heavy: torch\n    return json, torch\n")
    assert offenders(tmp_path) == {"harp_lib/sub/m.py": [10, 11, 16, 29, 38]}
