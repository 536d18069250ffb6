"""Notebook parameters checked like params.yaml: an unknown or out-of-range papermill ``-p`` is an error.

Each notebook's ``parameters`` cell declares its parameters with their defaults; papermill
injects a cell right after it (``# Parameters`` ...) with the values given by ``-p``.  The
first code cell calls :func:`check_parameters` with ``globals()``: a name papermill injected
that the parameters cell does not declare (``-p domian clinical``) is a
:class:`~harp_lib.config.ConfigError` naming it, and every value is checked against
:data:`PARAMETERS` (types and ranges shared with the params.yaml schema: domains, setups,
counts >= 1) or, for other names, against the type of its default.  ``overrides`` is checked
against the params.yaml schema when the notebook loads its config.

>>> check_parameters({"_ih": ["", 'domain = "emotion"\\nlimit = None', '# Parameters\\ndomian = "clinical"\\n', ""],
...                   "domain": "emotion", "limit": None, "domian": "clinical"})
Traceback (most recent call last):
...
harp_lib.config.ConfigError: unknown notebook parameter 'domian' (did you mean 'domain'?); this notebook takes: domain, limit
>>> check_parameters({"domain": "emotion", "limit": -5})
Traceback (most recent call last):
...
harp_lib.config.ConfigError: notebook parameter limit = -5 is out of range; allowed: >= 1
"""
from __future__ import annotations

import ast
import difflib
from typing import Any, Mapping, Optional, Union

from .config import DOMAINS, SETUPS, ConfigError, _check_rule, _check_value, rule

__all__ = ["PARAMETERS", "check_parameters"]

#: Every parameter the notebooks declare: (type, rule).  The rules are the params.yaml schema's
#: (``domains`` entries, ``setups`` entries) and the CLI's (counts >= 1).
PARAMETERS: dict[str, tuple[Any, Any]] = {
    "profile": (Optional[str], rule()),
    "domain": (Optional[str], rule(choices=(None, *DOMAINS))),
    "setup": (str, rule(choices=(*SETUPS, "all"))),
    "limit": (Optional[int], rule(ge=1)),
    "n_queries": (int, rule(ge=1)),
    "overrides": (dict, rule()),
    "force": (bool, rule()),
    "build": (bool, rule()),
    "query_id": (Optional[str], rule()),
}


def _assigned(source: str) -> dict[str, Any]:
    """Names assigned at the top level of a cell, with their literal values (``...`` if not literal)."""
    out: dict[str, Any] = {}
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return out
    for node in tree.body:
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    try:
                        out[t.id] = ast.literal_eval(node.value)
                    except ValueError:
                        out[t.id] = ...
    return out


def _cells(ns: Mapping[str, Any]) -> tuple[Optional[dict], Optional[dict]]:
    """(declared, injected) from the kernel's input history: the papermill ``# Parameters`` cell
    and the cell just before it (the ``parameters`` cell).  ``(None, None)`` without injection."""
    hist = [h for h in (ns.get("_ih") or ns.get("In") or []) if isinstance(h, str) and h.strip()]
    for i in range(len(hist) - 1, 0, -1):
        if hist[i].lstrip().startswith("# Parameters"):
            return _assigned(hist[i - 1]), _assigned(hist[i])
    return None, None


def _check_one(name: str, value: Any, default: Any, errors: list[str]) -> None:
    key = f"notebook parameter {name}"
    if name in PARAMETERS:
        tp, meta = PARAMETERS[name]
        n = len(errors)
        _check_value(value, tp, key, errors)
        if len(errors) == n:
            _check_rule(value, meta.metadata, key, errors)
    elif default not in (None, ...) and value is not None:
        tp = type(default)
        if tp in (int, float, str, bool):
            _check_value(value, Union[int, float] if tp is float else tp, key, errors)


def check_parameters(ns: Mapping[str, Any]) -> None:
    """Raise :class:`ConfigError` for an unknown injected parameter or a bad value.

    Call it from the first code cell with ``globals()``.
    """
    declared, injected = _cells(ns)
    errors: list[str] = []
    if injected is not None:
        for name in injected:
            if name not in declared:
                close = difflib.get_close_matches(name, list(declared), n=1)
                errors.append(f"unknown notebook parameter {name!r}"
                              + (f" (did you mean {close[0]!r}?)" if close else "")
                              + f"; this notebook takes: {', '.join(declared)}")
    names = list(declared) if declared is not None else [n for n in PARAMETERS if n in ns]
    for name in names:
        if name in ns:
            _check_one(name, ns[name], (declared or {}).get(name), errors)
    if errors:
        raise ConfigError("; ".join(errors))
