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

Partial runs never write DVC outputs: when a notebook runs on ``limit`` (the first N queries) or
with ``overrides`` that do not redirect any ``paths.*`` themselves, :func:`check_parameters`
rewrites ``overrides`` in the notebook's namespace so that its outputs (:data:`OUTPUT_PATHS`) go to
a scratch folder, ``<paths.data>/scratch/<tag>/`` (``tag``: ``limit-5``, ``ov-<hash>``), printed
when it happens.  The sweep (harp_lib/app/sweep.py) passes its own ``paths`` and is left alone.

>>> ov = partial_run_overrides({"limit": 5, "overrides": {}}, "data")
>>> ov["paths"]["predictions"], ov["paths"]["results"]
('data/scratch/limit-5/predictions', 'data/scratch/limit-5/results')
>>> partial_run_overrides({"limit": None, "overrides": {}}, "data") is None
True
>>> partial_run_overrides({"overrides": {"paths": {"scores": "x"}}}, "data") is None
True
"""
from __future__ import annotations

import ast
import difflib
import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence, Union

from harp_lib.config import DOMAINS, SETUPS, ConfigError, rule, load_config
from harp_lib.config.validate import _check_rule, _check_value

__all__ = ["PARAMETERS", "OUTPUT_PATHS", "check_parameters", "partial_run_args", "partial_run_overrides", "scratch_dir"]

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


#: The ``paths.*`` keys the partial-run notebooks (04_answer, 05_judge) write: a partial run redirects
#: all of them to its scratch folder (05_judge on the same ``limit`` / ``overrides`` reads 04's).
OUTPUT_PATHS = ("predictions", "judgements", "scores", "results")


def scratch_dir(data_root: str, tag: str) -> str:
    """``<paths.data>/scratch/<tag>`` (a plain relative path when ``data_root`` is relative)."""
    return f"{str(data_root).rstrip('/')}/scratch/{tag}"


def partial_run_overrides(ns: Mapping[str, Any], data_root: str) -> Optional[dict]:
    """``overrides`` with every output path under the scratch folder, or None for a full run
    (no ``limit``, no ``overrides``) or when ``overrides`` already sets ``paths``."""
    limit = ns.get("limit")
    ov = ns.get("overrides") or {}
    if not isinstance(ov, Mapping) or "paths" in ov or (limit is None and not ov):
        return None
    parts = [f"limit-{limit}"] if limit is not None else []
    if ov:
        parts.append("ov-" + hashlib.sha256(json.dumps(ov, sort_keys=True, default=str).encode()).hexdigest()[:10])
    root = scratch_dir(data_root, "_".join(parts))
    out = dict(ov)
    out["paths"] = {k: f"{root}/{k}" for k in OUTPUT_PATHS}
    return out


#: papermill options: ``-p NAME VALUE`` style (the next argument is a parameter name), a YAML
#: string, and sources this check cannot read (a file, base64) -- any of those counts as partial
_NAMED_OPTS = ("-p", "-r", "--parameters", "--parameters_raw")
_YAML_OPTS = ("-y", "--parameters_yaml")
_OPAQUE_OPTS = ("-f", "--parameters_file", "-b", "--parameters_base64")


def partial_run_args(argv: Sequence[str]) -> bool:
    """Whether papermill arguments may make a partial run: ``limit``, ``overrides`` or ``profile`` is
    passed (``-p``/``-r``, or named in a ``-y`` YAML string), or parameters come from a file or
    base64.  A ``profile`` run (``-p profile ci``) is another profile's result, never the committed
    pages of ``dvc repro`` (issue 29: a ci run overwrote them).
    scripts/run_notebook.sh asks this (``python -m harp_lib.app.notebook partial-run ARGS...``) to put
    the executed copy under data/scratch/notebooks/ and to refuse such a run inside a DVC stage;
    inside the notebook :func:`partial_run_overrides` redirects the outputs by the values.

    >>> partial_run_args(["-p", "domain", "emotion", "-p", "limit", "2"])
    True
    >>> partial_run_args(["-p", "domain", "limit"])          # 'limit' as a value is no parameter
    False
    >>> partial_run_args(["-p", "profile", "ci"])
    True
    >>> partial_run_args(["-y", "{overrides: {agent: {top_k: 1}}}"]), partial_run_args(["-f", "p.yaml"])
    (True, True)
    """
    prev = ""
    for a in argv:
        if ((prev in _NAMED_OPTS and a in ("limit", "overrides", "profile"))
                or (prev in _YAML_OPTS and any(k in a for k in ("limit", "overrides", "profile")))
                or prev in _OPAQUE_OPTS):
            return True
        prev = a
    return False


def _redirect_partial_run(ns: Any) -> None:
    """Point a partial run's outputs at its scratch folder (in place; see the module docstring)."""
    if not isinstance(ns, dict) or ("limit" not in ns and "overrides" not in ns):
        return
    cfg = load_config(profile=ns.get("profile") or None)
    ov = partial_run_overrides(ns, cfg.get("paths.data"))
    if ov is None:
        return
    given = {k: ns.get(k) for k in ("limit", "overrides") if ns.get(k)}
    ns["overrides"] = ov                # inputs (benchmark, index) stay where the full run put them
    print(f"partial run ({', '.join(f'{k}={v}' for k, v in given.items())}): outputs go to "
          f"{ov['paths']['predictions'].rsplit('/', 1)[0]}/, never the DVC outputs")


def _params_key(name: str) -> Optional[str]:
    """The dotted params.yaml key whose last part is ``name`` (``top_k`` -> ``agent.top_k``), if one."""
    try:
        data = load_config().data
    except Exception:       # noqa: BLE001 - only a hint
        return None
    found = []

    def walk(node, prefix):
        for k, v in node.items():
            if k == name and prefix:
                found.append(f"{prefix}{k}")
            if isinstance(v, Mapping) and prefix.count(".") < 1:
                walk(v, f"{prefix}{k}.")
    walk(data, "")
    return found[0] if len(found) == 1 else None


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
                key = _params_key(name)
                hint = ""
                if key and "overrides" in declared:
                    sec, _, leaf = key.rpartition(".")
                    hint = (f"; {name} is the params.yaml key {key}: pass it through overrides, e.g. "
                            f"-y '{{overrides: {{{sec}: {{{leaf}: {injected[name]!r}}}}}}}'")
                elif key:
                    hint = f"; {name} is the params.yaml key {key}: set it in params.yaml or with dvc exp run -S {key}=..."
                errors.append(f"unknown notebook parameter {name!r}"
                              + (f" (did you mean {close[0]!r}?)" if close else "")
                              + f"; this notebook takes: {', '.join(declared)}" + hint)
    names = list(declared) if declared is not None else [n for n in PARAMETERS if n in ns]
    for name in names:
        if name in ns:
            _check_one(name, ns[name], (declared or {}).get(name), errors)
    if errors:
        raise ConfigError("; ".join(errors))
    _redirect_partial_run(ns)


# ------------------------------------------------------------------------- running papermill
#: errors of the notebook that are the caller's to fix (a bad ``-p``): exit 2, like the CLI
USAGE_ERRORS = ("ConfigError", "UnknownTaskError", "IdError")
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")


def notebook_error(executed: Union[str, Path]) -> Optional[tuple[str, str, int]]:
    """``(ename, evalue, cell number)`` of the first error output in an executed notebook."""
    try:
        nb = json.loads(Path(executed).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    code = [c for c in nb.get("cells", []) if c.get("cell_type") == "code"]
    for i, cell in enumerate(code, 1):
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                value = " ".join(_ANSI.sub("", str(out.get("evalue", ""))).split())
                return str(out.get("ename", "Error")), value, i
    return None


def run_papermill(argv: list[str]) -> int:
    """``python -m harp_lib.app.notebook IN.ipynb OUT.ipynb [papermill args]``: papermill, whose
    failure is reported as one first line, ``IN: ENAME: message (code cell N; the executed copy
    OUT shows it)``, instead of a 50-line traceback (``HARP_DEBUG=1`` prints papermill's
    output too).  Exit 2 for a bad parameter (:data:`USAGE_ERRORS`), 1 for any other failure."""
    if len(argv) < 2:
        print("usage: python -m harp_lib.app.notebook IN.ipynb OUT.ipynb [papermill args]", file=sys.stderr)
        return 2
    r = subprocess.run([sys.executable, "-m", "papermill", *argv], stderr=subprocess.PIPE, text=True)
    if r.returncode == 0:
        sys.stderr.write(r.stderr)
        return 0
    err = notebook_error(argv[1])
    if err is None:           # papermill itself failed (bad arguments, no kernel, unreadable input)
        lines = [ln.strip() for ln in r.stderr.splitlines() if ln.strip()]
        print(f"{argv[0]}: papermill failed: {lines[-1] if lines else f'exit {r.returncode}'}", file=sys.stderr)
    else:
        ename, evalue, cell = err
        print(f"{argv[0]}: {ename}: {evalue} (code cell {cell}; the executed copy {argv[1]} shows it)",
              file=sys.stderr)
    if os.environ.get("HARP_DEBUG"):
        sys.stderr.write(r.stderr)
    else:
        print("(papermill's traceback: rerun with HARP_DEBUG=1)", file=sys.stderr)
    return 2 if err is not None and err[0] in USAGE_ERRORS else 1


def _main(argv: Sequence[str]) -> int:
    """``python -m harp_lib.app.notebook partial-run [papermill args]`` prints ``partial`` or ``full``;
    ``python -m harp_lib.app.notebook IN.ipynb OUT.ipynb [papermill args]`` runs papermill (:func:`run_papermill`)."""
    if argv[:1] == ["partial-run"]:
        print("partial" if partial_run_args(argv[1:]) else "full")
        return 0
    return run_papermill(list(argv))


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
