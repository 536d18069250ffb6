"""No library function in harp_lib/ is over 60 lines (issue 39; 80 since issue 32), read with ``ast``.

``PENDING`` names functions allowed over the limit while a split is in flight (empty since the
one-question-path work of issue 32 landed); a name that is no longer long is reported, so the list
cannot go stale silently."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 60
PENDING: set[str] = set()


def long_functions(root: Path, package: str = "harp_lib", limit: int = MAX_LINES) -> dict[str, int]:
    """``{"<file>:<name>": lines}`` of every function or method (nested ones too) over ``limit`` lines."""
    out = {}
    for p in sorted((root / package).rglob("*.py")):
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"), str(p))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > limit:
                    out[f"{p.relative_to(root).as_posix()}:{node.name}"] = n
    return out


def test_no_library_function_is_over_60_lines():
    found = long_functions(ROOT)
    assert {k: v for k, v in found.items() if k not in PENDING} == {}, "split these by their steps"
    stale = PENDING - set(found)
    assert not stale, f"no longer over {MAX_LINES} lines: remove from PENDING: {sorted(stale)}"


def test_the_checker_counts_decorators_out_and_bodies_in(tmp_path):
    pkg = tmp_path / "harp_lib"
    pkg.mkdir()
    body = "\n".join(f"    x{i} = {i}" for i in range(80))
    (pkg / "m.py").write_text(f"@staticmethod\ndef long():\n{body}\n\ndef short():\n    return 1\n\n"
                              f"class C:\n    def meth(self):\n{chr(10).join('    ' + ln for ln in body.splitlines())}\n")
    assert long_functions(tmp_path) == {"harp_lib/m.py:long": 81, "harp_lib/m.py:meth": 81}
