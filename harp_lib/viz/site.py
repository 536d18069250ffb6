"""``results/notebooks/index.html``: one page that lists every notebook with its purpose, its executed
pages and its figures, so a reader finds the results without JupyterLab.

Modelled on the executable-book convention (a table of contents over executed notebooks), built
offline from what is on disk: the notebooks' own titles and first paragraphs, the executed pages
under ``results/notebooks/`` and the figures under ``results/figures/``.  The page carries no date
or timing, so the same files give the same bytes::

    python -m harp_lib.viz.site            # writes results/notebooks/index.html (the `pages` stage)

>>> purpose_of(["# 04 · Answer: run one setup", "", "The **agent** plans. It answers.", "more"])
('04 · Answer: run one setup', 'The agent plans.')
"""
from __future__ import annotations

import html
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

from harp_lib.core.atomic import atomic_write

ROOT = Path(__file__).resolve().parents[2]

#: Figures a notebook draws through a library call (their names are not in its code): name prefixes.
FIGURES_BY_NOTEBOOK = {"fig1_pipeline_walkthrough": ("fig1_walkthrough",), "fig4_human_vs_agent": ("figure4",),
                       "table_hit_rates": ("accuracy_by_type", "hitrate_vs_accuracy")}


@dataclass
class NotebookEntry:
    """One notebook: its name, title, one-line purpose, executed pages and figures (paths relative to the index)."""
    name: str
    title: str
    purpose: str
    pages: list[str] = field(default_factory=list)
    figures: list[str] = field(default_factory=list)


def purpose_of(markdown_lines: Sequence[str]) -> tuple[str, str]:
    """(title, first sentence of the first paragraph) of a notebook's first markdown cell."""
    lines = [ln.strip() for ln in markdown_lines]
    title = next((ln.lstrip("#").strip() for ln in lines if ln.startswith("#")), "")
    body = []
    for ln in lines[next((i for i, ln in enumerate(lines) if ln.startswith("#")), -1) + 1:]:
        if not ln and body:
            break
        if ln and not ln.startswith("#"):
            body.append(ln)
    text = re.sub(r"\s+", " ", " ".join(body))
    text = re.sub(r"\[([^\]]+)\]\([^)]*\)", r"\1", text).replace("**", "").replace("`", "")   # plain text
    m = re.match(r"(.+?[.!?])(\s|$)", text)
    return title, (m.group(1) if m else text)


def _pages_of(name: str, pages_dir: Path) -> list[str]:
    return sorted(p.name for p in pages_dir.glob("*.html")
                  if p.name != "index.html" and (p.stem == name or p.stem.startswith(name + "_")))


def collect(notebooks_dir: Path, pages_dir: Path, figures_dir: Path) -> list[NotebookEntry]:
    """Every ``notebooks/*.ipynb`` with its purpose, pages and the figures whose name its code mentions."""
    figures = sorted(p.name for p in figures_dir.glob("*.png")) if figures_dir.is_dir() else []
    out = []
    for nb_path in sorted(notebooks_dir.glob("*.ipynb")):
        cells = json.loads(nb_path.read_text(encoding="utf-8"))["cells"]
        md = next((c for c in cells if c["cell_type"] == "markdown"), {"source": []})
        src = md["source"] if isinstance(md["source"], str) else "".join(md["source"])
        title, purpose = purpose_of(src.splitlines())
        code = "\n".join(c["source"] if isinstance(c["source"], str) else "".join(c["source"])
                         for c in cells if c["cell_type"] == "code")
        prefixes = FIGURES_BY_NOTEBOOK.get(nb_path.stem, ())
        figs = [f for f in figures if Path(f).stem in code or Path(f).stem.startswith(prefixes or ("\0",))]
        out.append(NotebookEntry(nb_path.stem, title or nb_path.stem, purpose, _pages_of(nb_path.stem, pages_dir),
                                 [f"../figures/{f}" for f in figs]))
    return out


def render(entries: Sequence[NotebookEntry], figures: Sequence[str] = ()) -> str:
    """The index page as HTML (no date, no timing: deterministic)."""
    e = html.escape
    rows = []
    for en in entries:
        pages = " · ".join(f'<a href="{e(p)}">{e(Path(p).stem)}</a>' for p in en.pages) or \
            "<em>no executed page yet: run it in JupyterLab or <code>dvc repro</code></em>"
        figs = "".join(f'<a href="{e(f)}"><img src="{e(f)}" alt="{e(Path(f).name)}"></a>' for f in en.figures)
        rows.append(f"<tr><td><code>{e(en.name)}</code></td><td><strong>{e(en.title)}</strong><br>{e(en.purpose)}"
                    f"</td><td>{pages}</td><td class=figs>{figs}</td></tr>")
    gallery = "".join(f'<figure><a href="{e(f)}"><img src="{e(f)}" alt="{e(Path(f).name)}"></a>'
                      f"<figcaption>{e(Path(f).name)}</figcaption></figure>" for f in figures)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>harp_lib notebooks</title>
<style>body{{font-family:sans-serif;max-width:1200px;margin:2em auto;padding:0 1em}}
table{{border-collapse:collapse;width:100%}}td,th{{border-bottom:1px solid #ddd;padding:.5em;vertical-align:top;text-align:left}}
td.figs img{{height:70px;margin:2px}}figure{{display:inline-block;margin:.5em;width:360px}}figure img{{width:100%}}</style>
</head><body>
<h1>harp_lib: the notebooks and their executed pages</h1>
<p>Every notebook of <code>notebooks/</code>, in pipeline order: what it is for, its executed pages (readable without
Jupyter; written by <code>dvc repro</code> through <code>scripts/run_notebook.sh</code>) and the figures it draws.
Open a notebook itself in JupyterLab to run it step by step (<code>.venv/bin/jupyter lab notebooks/</code>).</p>
<table><tr><th>notebook</th><th>what it shows</th><th>executed pages</th><th>figures</th></tr>
{chr(10).join(rows)}
</table>
<h2>All figures</h2>
{gallery}
</body></html>
"""


def write_index(root: Optional[Path] = None) -> Path:
    """Write ``results/notebooks/index.html`` under ``root`` (the repository) and return its path."""
    root = Path(root) if root else ROOT
    pages, figs = root / "results" / "notebooks", root / "results" / "figures"
    entries = collect(root / "notebooks", pages, figs)
    figures = [f"../figures/{p.name}" for p in sorted(figs.glob("*.png"))] if figs.is_dir() else []
    out = pages / "index.html"
    pages.mkdir(parents=True, exist_ok=True)
    text = render(entries, figures)
    atomic_write(out, lambda tmp: tmp.write_text(text, encoding="utf-8"))
    return out


if __name__ == "__main__":
    print(write_index(Path(sys.argv[1]) if len(sys.argv) > 1 else None))
