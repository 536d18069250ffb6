"""Nothing in harp_lib/ or scripts/ at radon rank E or F (cyclomatic complexity over 30; issue 39).

Read with radon's own visitor (radon 6.0.1, pinned in ``.[test]``), nested functions and classes
counted as blocks of their own (``radon cc --show-closures``), so a branchy closure cannot hide in
a short parent.  A block that gets there is split by the steps it already takes (a table of
per-domain readers, one check per rule, one decoder per type family), not by moving lines."""
from __future__ import annotations

from pathlib import Path

import pytest

radon_complexity = pytest.importorskip("radon.complexity", reason="radon missing: scripts/bootstrap.sh installs .[test]")

ROOT = Path(__file__).resolve().parents[1]
WORST_RANK = "D"          # E: complexity 31-40, F: over 40


def complex_blocks(root: Path, packages=("harp_lib", "scripts"), worst: str = WORST_RANK) -> dict[str, str]:
    """``{"<file>:<line> <name>": "<rank> (<complexity>)"}`` of every block ranked worse than ``worst``."""
    out = {}
    for pkg in packages:
        for p in sorted((root / pkg).rglob("*.py")):
            blocks = radon_complexity.add_inner_blocks(radon_complexity.cc_visit(p.read_text(encoding="utf-8")))
            for b in blocks:
                rank = radon_complexity.cc_rank(b.complexity)
                if rank > worst:
                    out[f"{p.relative_to(root).as_posix()}:{b.lineno} {b.fullname}"] = f"{rank} ({b.complexity})"
    return out


def test_nothing_at_rank_e_or_f():
    found = complex_blocks(ROOT)
    assert found == {}, f"split these by their steps: {found}"


def _branchy(name: str, n: int, indent: str = "") -> str:
    """A function of ``n`` if-branches: cyclomatic complexity n + 1."""
    body = "".join(f"{indent}    if x == {i}:\n{indent}        return {i}\n" for i in range(n))
    return f"{indent}def {name}(x):\n{body}{indent}    return -1\n"


def test_the_check_can_fail(tmp_path):
    pkg = tmp_path / "harp_lib"
    pkg.mkdir()
    (pkg / "m.py").write_text(_branchy("fine", 29) + "\n\n" + _branchy("e_rank", 30) + "\n\n"
                              + "def parent():\n" + _branchy("closure", 45, "    ") + "    return closure\n\n\n"
                              + "class C:\n" + _branchy("method", 41, "    "))
    # fine: 30, the worst D; e_rank: 31, the first E; the closure is its own block (parent stays A);
    # a class counts its methods' branches (42 + 1)
    assert complex_blocks(tmp_path, ("harp_lib",)) == {
        "harp_lib/m.py:63 e_rank": "E (31)", "harp_lib/m.py:128 parent.closure": "F (46)",
        "harp_lib/m.py:223 C": "F (43)", "harp_lib/m.py:224 C.method": "F (42)"}
