"""Progress bars that behave in notebooks, papermill runs and terminals.

``tqdm.auto`` draws a widget whenever ipywidgets is importable, which leaves unreadable widget
state in papermill-executed notebooks and CI logs.  :func:`progress` picks the form from
``$HARP_PROGRESS`` (``auto`` | ``widget`` | ``text`` | ``off``):

* ``auto`` (default): a widget in an interactive Jupyter front end, plain text (updated at most
  every few seconds) under papermill/nbval or when output is not a terminal, a live bar in a terminal;
* ``text``: plain text lines; ``off``: nothing;
* ``terminal``: the ``text`` lines on the *process's* standard error (``sys.__stderr__``), which a
  notebook kernel does not capture: ``scripts/run_notebook.sh`` uses it, so ``dvc repro`` shows
  progress in the terminal and the executed pages (``results/notebooks``) carry none: a page
  depends on the results only, not on what was already cached or how the lines were interleaved.

>>> sum(progress(range(3), desc="demo", mode="off"))
3
"""
from __future__ import annotations

import importlib
import os
import sys
from typing import Iterable, Optional

__all__ = ["progress", "progress_mode", "quiet_library_bars"]


def _in_papermill() -> bool:
    return "papermill" in sys.modules or bool(os.environ.get("PAPERMILL_EXECUTION"))


def _in_notebook() -> bool:
    try:
        from IPython import get_ipython  # optional here, and heavy: only to tell a notebook
    except ImportError:
        return False
    ip = get_ipython()
    return ip is not None and type(ip).__name__ == "ZMQInteractiveShell"


def progress_mode() -> str:
    """The progress form in effect here: ``widget``, ``text``, ``tty`` or ``off``."""
    mode = os.environ.get("HARP_PROGRESS", "auto").lower()
    if mode in ("off", "text", "widget", "terminal"):
        return mode
    if _in_notebook():
        # executed by papermill/nbval (no human watching): text; else a widget
        if _in_papermill() or os.environ.get("CI") or os.environ.get("HARP_NOTEBOOK_BATCH"):
            return "text"
        try:
            import ipywidgets  # noqa: F401 - optional: a widget only where ipywidgets imports
            return "widget"
        except ImportError:
            return "text"
    return "tty" if sys.stderr.isatty() else "text"


_TERMINAL: list = []


def _terminal():
    """The process's own standard error.  A notebook kernel (ipykernel >= 6) also captures file
    descriptor 2 into the page; it keeps a copy of the original descriptor, which is the terminal."""
    if not _TERMINAL:
        fd = getattr(sys.stderr, "_original_stdstream_copy", None)
        stream = None
        if isinstance(fd, int):
            try:
                stream = os.fdopen(os.dup(fd), "w", buffering=1)
            except OSError:
                stream = None
        _TERMINAL.append(stream or sys.__stderr__ or sys.stderr)
    return _TERMINAL[0]


def progress(iterable: Optional[Iterable] = None, *, desc: Optional[str] = None, total: Optional[int] = None,
             mode: Optional[str] = None, leave: bool = False, unit: str = "it", **kwargs):
    """Wrap ``iterable`` in a progress bar suited to where the code runs (see module doc)."""
    mode = mode or progress_mode()
    if mode == "widget":
        from tqdm.notebook import tqdm  # heavy (~0.06 s), and the form is chosen per call
        return tqdm(iterable, desc=desc, total=total, leave=leave, unit=unit, **kwargs)
    from tqdm import tqdm  # heavy (~0.06 s), and the form is chosen per call
    if mode == "off":
        return tqdm(iterable, desc=desc, total=total, disable=True, **kwargs)
    if mode in ("text", "terminal"):
        # few, complete lines: readable in executed notebooks and CI logs
        kwargs.setdefault("mininterval", 5.0)
        kwargs.setdefault("ascii", True)
        kwargs.setdefault("file", _terminal() if mode == "terminal" else sys.stderr)
        # no elapsed time or rate: the executed notebooks' HTML (results/notebooks) stays byte-stable
        kwargs.setdefault("bar_format", "{l_bar}{bar}| {n_fmt}/{total_fmt}")
        return tqdm(iterable, desc=desc, total=total, leave=True, unit=unit, dynamic_ncols=False,
                    ncols=80, **kwargs)
    return tqdm(iterable, desc=desc, total=total, leave=leave, unit=unit, **kwargs)


def quiet_library_bars() -> None:
    """Switch off the Hugging Face libraries' own progress bars ("Loading weights", downloads)
    unless a person watches a live widget or terminal: those bars use ``tqdm.auto``, which leaves a
    frozen "0%" widget in papermill-executed notebooks.  Called by :func:`harp_lib.stages.common.config`.
    An explicit ``HF_HUB_DISABLE_PROGRESS_BARS`` in the environment wins."""
    if progress_mode() in ("widget", "tty") or "HF_HUB_DISABLE_PROGRESS_BARS" in os.environ:
        return
    os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"      # read when huggingface_hub is imported
    # already imported: switch off now.  Both packages load their submodules lazily, so
    # ``huggingface_hub.utils`` is not an attribute until someone imports it: import it by name.
    if "huggingface_hub" in sys.modules:
        importlib.import_module("huggingface_hub.utils").disable_progress_bars()
    if "transformers" in sys.modules:
        importlib.import_module("transformers.utils.logging").disable_progress_bar()
