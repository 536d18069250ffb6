"""Executed notebooks as byte-stable HTML, readable without running anything.

Every ``dvc repro`` stage runs its notebook with papermill (``scripts/run_notebook.sh``) into
``results/notebooks/<name>.ipynb`` and then writes ``results/notebooks/<name>.html`` with
:func:`export_html`::

    python -m harp_lib.viz.html results/notebooks/01_extract_emotion.ipynb [...]

The HTML depends only on the cells and their outputs: papermill's timestamps and durations,
kernel and language metadata, cell ids, execution timestamps and pandas Styler's random table
ids are removed first, absolute paths under the repository are shown relative to it, widget
outputs (random model ids, unreadable without a kernel; their text form is a frozen bar) are
dropped, progress-bar lines (tqdm: ``desc:  40%|####  | 2/5``; how many are printed depends on
the machine's speed) are removed from every stream, and wall-clock figures in stderr
(``3.2 s``, ``12 seconds``, ``850 ms``) are shown as ``<t> s``.  Converting the same executed
notebook twice gives the same bytes.

>>> import nbformat
>>> nb = nbformat.v4.new_notebook(metadata={"papermill": {"start_time": "2026-01-01T00:00:00"}})
>>> nb.cells = [nbformat.v4.new_markdown_cell("# Title"), nbformat.v4.new_code_cell("1 + 1")]
>>> clean = clean_notebook(nb)
>>> dict(clean.metadata), [c.get("id") for c in clean.cells]
({}, ['c00', 'c01'])
>>> notebook_html(nb) == notebook_html(nbformat.reads(nbformat.writes(nb), as_version=4))
True
"""
from __future__ import annotations

import copy
import os
import re
import sys
from pathlib import Path
from typing import Sequence

from harp_lib.core.atomic import write_text

__all__ = ["clean_notebook", "notebook_html", "export_html", "main"]

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
#: pandas ``Styler`` tables carry a random ``T_<5 hex>`` id (``uuid_len=5``) in every run.
_STYLER_ID = re.compile(r"\bT_[0-9a-f]{5}(?=[_\"\s,{])")
#: a tqdm bar line: ``  7%|#    | 1/15`` or ``100%|██████████| 103/103 [00:00<00:00, 13158.30it/s]``
_PROGRESS_LINE = re.compile(r"^[^\n]*?\d{1,3}%\|[^\n|]*\|[^\n]*$")
#: a duration in stderr (library timings, warnings with a wall-clock figure)
_TIMING = re.compile(r"\b\d+(?:\.\d+)?\s?(?:seconds|secs?|ms|s)\b")


#: The repository root: absolute paths under it (warnings, messages) are shown relative, so the
#: HTML does not depend on where the repository was cloned.
ROOT = Path(__file__).resolve().parents[2]


def _relative(text: str, root: Path = ROOT) -> str:
    """``text`` with ``<root>/`` removed from absolute paths.

    >>> _relative("/x/repo/data/a.json and /x/repo/.venv/lib", Path("/x/repo"))
    'data/a.json and .venv/lib'
    """
    return text.replace(f"{root}/", "")


def _stable_stream(text: str, stderr: bool) -> str:
    """A stream's text without progress-bar lines (each "\\r" state and each line); in stderr,
    durations are replaced by ``<t> s``; repository paths relative.

    >>> _stable_stream("a\\nscan:  40%|####  | 2/5\\rscan: 100%|######| 5/5\\nb\\n", False)
    'a\\nb\\n'
    >>> _stable_stream("loaded in 3.27 s (12 seconds in all)\\n", True)
    'loaded in <t> s (<t> s in all)\\n'
    """
    keep = [ln for ln in text.split("\n")
            if not any(_PROGRESS_LINE.match(part) for part in ln.split("\r") if part.strip())]
    out = "\n".join(keep)
    if stderr:
        out = _TIMING.sub("<t> s", out)
    return _relative(out)


def clean_notebook(nb):
    """A copy of ``nb`` without run-specific metadata: notebook metadata (papermill times,
    kernelspec, language version, widget state), cell metadata and execution timestamps, cell ids
    renumbered ``c00, c01, ...``, and widget outputs dropped."""
    nb = copy.deepcopy(nb)
    nb.metadata = {}
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"c{i:02d}"
        cell.metadata = {}
        if cell.cell_type != "code":
            continue
        outs = []
        for o in cell.get("outputs", []):
            if WIDGET_MIME in (o.get("data") or {}):
                continue        # a widget's text form is its state when drawn (a frozen "0%" bar)
            if "text/html" in (o.get("data") or {}):      # pandas Styler: a random table id per run
                o["data"]["text/html"] = _STYLER_ID.sub("T_0", "".join(o["data"]["text/html"]))
            if "text" in o:                                 # stream: paths relative to the repository
                o["text"] = _stable_stream("".join(o["text"]), o.get("name") == "stderr")
                if not o["text"]:
                    continue
            for mime in ("text/plain", "text/markdown", "text/html"):
                if mime in (o.get("data") or {}):
                    o["data"][mime] = _relative("".join(o["data"][mime]))
            if o.get("output_type") == "error":
                o["traceback"] = [_relative(line) for line in o.get("traceback", [])]
            o.pop("metadata", None) if o.get("output_type") == "stream" else None
            outs.append(o)
        cell.outputs = outs
    from nbconvert.preprocessors import CoalesceStreamsPreprocessor  # heavy: nbconvert (~2.3 s)
    nb, _ = CoalesceStreamsPreprocessor(enabled=True).preprocess(nb, {})   # "\r" bars: last state only
    return nb


def notebook_html(nb) -> str:
    """The HTML of a notebook node (nbconvert's ``lab`` template, outputs embedded)."""
    from nbconvert import HTMLExporter  # heavy: nbconvert (~2.3 s)
    exporter = HTMLExporter(template_name="lab")
    body, _ = exporter.from_notebook_node(clean_notebook(nb), resources={"metadata": {"name": _title(nb)}})
    return body


def _title(nb) -> str:
    """The first markdown heading (the notebook's title), else ``notebook``."""
    for c in nb.cells:
        if c.cell_type == "markdown":
            for line in c.source.splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    return "notebook"


def export_html(path: os.PathLike | str, out: os.PathLike | str | None = None) -> Path:
    """Write ``out`` (default: ``path`` with ``.html``) from the executed notebook ``path``;
    the write is atomic (a reader never sees half a page)."""
    import nbformat  # heavy: nbformat, with nbconvert
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"{p}: no executed notebook to convert (run its stage first, "
                                f"e.g. `bash scripts/run_notebook.sh NAME {p.stem}`)")
    nb = nbformat.read(p, as_version=4)
    target = Path(out) if out else p.with_suffix(".html")
    write_text(target, notebook_html(nb))
    return target


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or any(a.startswith("-") for a in args):
        print("usage: python -m harp_lib.viz.html EXECUTED.ipynb [...]   (writes EXECUTED.html beside each)",
              file=sys.stderr)
        return 2
    for a in args:
        print(f"wrote {export_html(a)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
