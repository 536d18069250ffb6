"""No function over 80 lines in the question path (issue 32): the agent, the tasks, time phrases,
ingest and `harp ask`.  (The other packages' long functions are split under their own change.)"""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "harp_lib"
AREA = ["agent", "tasks", "understand", "core/timespan.py", "ownaudio"]
MAX_LINES = 80


def long_functions(paths, limit: int = MAX_LINES) -> list[str]:
    out = []
    for p in paths:
        for n in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.end_lineno - n.lineno + 1 > limit:
                out.append(f"{p.name}:{n.lineno} {n.name} ({n.end_lineno - n.lineno + 1} lines)")
    return out


def test_no_function_over_80_lines_in_the_question_path():
    files = [f for a in AREA for f in ((ROOT / a).rglob("*.py") if (ROOT / a).is_dir() else [ROOT / a])]
    assert len(files) > 20
    assert long_functions(files) == []


def test_the_check_sees_a_long_function(tmp_path):
    p = tmp_path / "m.py"
    p.write_text("def f():\n" + "    x = 1\n" * 81)
    assert len(long_functions([p])) == 1 and long_functions([p], limit=82) == []
