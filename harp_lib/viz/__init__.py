"""Pictures and an interactive explorer of the HARP pipeline (see docs/explorer.md).

Static figures (matplotlib; render in executed notebooks, the README and on GitHub)::

    from harp_lib.viz import plot_timeline, plot_walkthrough, save_figure

Interactive (ipywidgets; logic in the plain-Python :class:`ExplorerState`)::

    from harp_lib.viz import explore
    explore(domain="emotion")
"""
from harp_lib.viz.timeline import plot_timeline, save_figure, segment_label  # noqa: F401

__all__ = ["plot_timeline", "save_figure", "segment_label", "QueryTrace", "trace_query",
           "plot_walkthrough", "walkthrough_figure", "Explorer", "ExplorerState", "explore"]


def __getattr__(name):  # lazy: the trace, walkthrough and widgets pull in more than a timeline needs
    if name in ("QueryTrace", "trace_query"):        # (and `python -m harp_lib.viz.html` needs none of them)
        from harp_lib.viz import trace  # lazy: on first use of the name
        return getattr(trace, name)
    if name in ("plot_walkthrough", "walkthrough_figure"):
        from harp_lib.viz import walkthrough  # lazy: on first use of the name
        return getattr(walkthrough, name)
    if name == "ExplorerState":
        from harp_lib.viz import explorer_state  # lazy: on first use of the name
        return explorer_state.ExplorerState
    if name in ("Explorer", "explore"):
        from harp_lib.viz import explorer  # lazy: on first use of the name
        return getattr(explorer, name)
    raise AttributeError(f"module 'harp_lib.viz' has no attribute {name!r}")
