"""The error every configuration check raises, and the "did you mean" hint its messages carry."""
from __future__ import annotations

import difflib
from harp_lib.core.errors import HarpError


class ConfigError(HarpError, ValueError):
    """params.yaml (or a notebook parameter / CLI override) has a missing, unknown or bad value.

    The message names the dotted key, the bad value and what is allowed.
    """
    __module__ = "harp_lib.config"       # its public name (tracebacks and doctests print it)


def _suggest(key: str, known, prefix: str = "") -> str:
    close = difflib.get_close_matches(key, [str(k) for k in known], n=1, cutoff=0.6)
    return f" (did you mean {prefix}{close[0]}?)" if close else ""
