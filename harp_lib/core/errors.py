"""The one base of the errors harp_lib raises on purpose: :class:`HarpError`.

Every error class of the package derives from it (besides the builtin it has always been: a
``SchemaError`` is still a ``ValueError``), so the ``harp`` CLI tells a problem of the user's
input, files or setup (one line on stderr) from a bug (a traceback) by one ``isinstance``, and its
``fault`` flag says whose it is: ``True`` for a fault of the machine or the data (a full or
read-only disk, a corrupt index input, an LLM that failed: exit 1), ``False`` for something the user
can fix in the command line, params or manifests (exit 2).  No list of module names to keep in step.

>>> class DiskGone(HarpError, RuntimeError):
...     fault = True
>>> isinstance(DiskGone("x"), RuntimeError), DiskGone.fault, HarpError.fault
(True, True, False)
"""
from __future__ import annotations

__all__ = ["HarpError"]


class HarpError(Exception):
    """Base of every harp_lib error; ``fault``: the machine's or the data's (exit 1), else the user's (exit 2)."""
    fault: bool = False
