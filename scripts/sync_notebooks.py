"""Write notebooks/<name>.ipynb from notebooks/<name>.py (jupytext percent scripts), output-free.

    .venv/bin/python scripts/sync_notebooks.py            # rewrite every .ipynb from its .py
    .venv/bin/python scripts/sync_notebooks.py --check    # exit 1 if any .ipynb is out of date
    .venv/bin/python scripts/sync_notebooks.py --record   # run them on the ci profile and store the
                                                          # outputs of `# NBVAL_CHECK_OUTPUT` cells

The .py is the source of truth (it is what reviews diff).  Committed notebooks carry no outputs
except those of cells marked ``# NBVAL_CHECK_OUTPUT`` (with a stable execution count): nbval (``pytest``, ci profile) compares
their output with the stored one.  Cell ids are stable (``c00``, ``c01``, ...) so re-syncing an
unchanged script changes nothing.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import jupytext
import nbformat

ROOT = Path(__file__).resolve().parents[1]
NB_DIR = ROOT / "notebooks"
CHECK = "# NBVAL_CHECK_OUTPUT"


def notebook_scripts() -> list[Path]:
    """Every notebook script (notebooks/*.py except conftest.py), sorted."""
    return sorted(p for p in NB_DIR.glob("*.py") if p.name != "conftest.py")


def checked(cell) -> bool:
    return cell.cell_type == "code" and CHECK in cell.source


def render(py: Path, stored_outputs: dict[str, list] | None = None) -> nbformat.NotebookNode:
    """The output-free notebook of ``py`` (keeping stored outputs of checked cells, by source)."""
    nb = jupytext.read(py)
    for i, c in enumerate(nb.cells):
        c["id"] = f"c{i:02d}"
        if c.cell_type == "code":
            c["outputs"] = list((stored_outputs or {}).get(c.source, [])) if checked(c) else []
            # nbval refuses stored outputs of a cell that was never run: give them a stable count
            c["execution_count"] = (i if c["outputs"] else None)
    nb.metadata.pop("jupytext", None)
    return nb


def _stored(ipynb: Path) -> dict[str, list]:
    if not ipynb.exists():
        return {}
    nb = nbformat.read(ipynb, as_version=4)
    return {c.source: c.get("outputs", []) for c in nb.cells if checked(c)}


def _clean_outputs(outputs: list) -> list:
    out = []
    for o in outputs:
        o = dict(o)
        if o.get("output_type") == "execute_result":
            o["execution_count"] = None
        o.pop("metadata", None) if o.get("output_type") == "stream" else None
        out.append(nbformat.from_dict(o))
    return out


def dumps(nb) -> str:
    return nbformat.writes(nb, version=4) + "\n"


def record(pys: list[Path]) -> dict[str, dict[str, list]]:
    """Execute every notebook in order on the ci profile; outputs of checked cells by source."""
    env = {**os.environ, "HARP_PROFILE": "ci", "HARP_PROGRESS": "text", "HF_HUB_OFFLINE": "1",
           "PATH": f"{ROOT / '.venv' / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"}
    got: dict[str, dict[str, list]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for py in pys:
            src = Path(tmp) / f"{py.stem}.ipynb"
            src.write_text(dumps(render(py)))
            out = Path(tmp) / f"{py.stem}.out.ipynb"
            print(f"running {py.stem} (ci)", flush=True)
            subprocess.run([sys.executable, "-m", "papermill", str(src), str(out), "-k", "python3",
                            "--no-progress-bar", "--cwd", str(NB_DIR)], check=True, env=env, cwd=ROOT)
            nb = nbformat.read(out, as_version=4)
            got[py.stem] = {c.source: _clean_outputs(c.outputs) for c in nb.cells if checked(c)}
    return got


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="only report notebooks that are out of date")
    ap.add_argument("--record", action="store_true", help="re-record outputs of NBVAL_CHECK_OUTPUT cells (ci)")
    ap.add_argument("names", nargs="*", help="notebook names (default: all)")
    a = ap.parse_args(argv)
    pys = notebook_scripts() if not a.names else [NB_DIR / f"{n}.py" for n in a.names]
    recorded = record(pys) if a.record else {}
    stale = []
    for py in pys:
        ipynb = py.with_suffix(".ipynb")
        text = dumps(render(py, recorded.get(py.stem, None) if a.record else _stored(ipynb)))
        current = ipynb.read_text(encoding="utf-8") if ipynb.exists() else ""
        if text != current:
            stale.append(ipynb.relative_to(ROOT).as_posix())
            if not a.check:
                ipynb.write_text(text, encoding="utf-8")
    verb = "out of date" if a.check else "written"
    print(f"{len(stale)} notebook(s) {verb}" + (": " + ", ".join(stale) if stale else ""))
    return 1 if (a.check and stale) else 0


if __name__ == "__main__":
    sys.exit(main())
