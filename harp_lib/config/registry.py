"""The backend registry: (stage, name) -> class, filled by ``@register`` in the modules that
define backends, which are imported on the first lookup by name."""
from __future__ import annotations

import importlib
import inspect
from typing import Any, Callable, Mapping, Optional

from harp_lib.config.errors import ConfigError, _suggest
from harp_lib.core.errors import HarpError


# ---------------------------------------------------------------------------------------
# Backend registry: (stage, name) -> class.  The modules that define backends fill it with
# @register; the package root (harp_lib/__init__.py) lists those modules in BACKEND_MODULES,
# and they are imported on the first lookup only (``import harp_lib`` never pulls in torch).
# This module imports nothing from harp_lib outside harp_lib.config: it is the lowest layer.
# ---------------------------------------------------------------------------------------
class BackendError(HarpError, RuntimeError):
    """A backend is unknown, or cannot run here (missing extra, weights or token)."""
    __module__ = "harp_lib.config"       # its public name (tracebacks print it)


class BackendOptionError(ConfigError, BackendError):
    """A backend was given an option its constructor does not take (a params.yaml typo)."""
    __module__ = "harp_lib.config"       # its public name (tracebacks print it)


_REGISTRY: dict[tuple[str, str], Callable] = {}
#: Modules that register backends when imported, appended to by the package that owns them.
BACKEND_MODULES: list[str] = []
_loaded: set[str] = set()


def register(stage: str, name: str):
    """Class decorator: make ``cls`` the backend ``name`` of ``stage``.

    >>> @register("demo", "echo")
    ... class Echo:
    ...     pass
    >>> get_backend("demo", "echo") is Echo
    True
    """
    def deco(cls):
        _REGISTRY[(stage, name)] = cls
        return cls
    return deco


def backend_modules(*modules: str) -> None:
    """Declare modules whose import registers backends (imported lazily, on first lookup)."""
    for m in modules:
        if m not in BACKEND_MODULES:
            BACKEND_MODULES.append(m)


def _load_all() -> None:
    for mod in list(BACKEND_MODULES):
        if mod in _loaded:
            continue
        _loaded.add(mod)
        try:
            importlib.import_module(mod)
        except ModuleNotFoundError as e:
            if e.name and (e.name == mod or mod.startswith(e.name + ".")):
                continue  # that part of the package is not built (yet)
            raise


def get_backend(stage: str, name: str):
    """The class registered as ``name`` for ``stage``; a clear error when unknown."""
    if (stage, name) not in _REGISTRY:
        _load_all()
    try:
        return _REGISTRY[(stage, name)]
    except KeyError:
        known = sorted(n for s, n in _REGISTRY if s == stage)
        raise BackendError(f"unknown {stage} backend {name!r}{_suggest(str(name), known)}; available: "
                           f"{', '.join(known) or 'none'}") from None


def check_backend_options(stage: str, name: str, cls, options: Mapping) -> None:
    """Raise :class:`BackendOptionError` when ``options`` holds a key ``cls`` does not accept."""
    try:
        sig = inspect.signature(cls)
    except (TypeError, ValueError):  # pragma: no cover - builtins
        return
    ps = sig.parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in ps):
        return
    accepted = [p.name for p in ps if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                                 inspect.Parameter.KEYWORD_ONLY)]
    for k in options:
        if k not in accepted:
            raise BackendOptionError(
                f"{stage} backend {name!r} has no option {k!r}{_suggest(str(k), accepted)}; its options: "
                f"{', '.join(accepted) or 'none'} (fix params.yaml extract.options.{name} or the backend spec)")


def create_backend(stage: str, spec: Any, **kwargs):
    """Instantiate a backend from a name or ``{"name": ..., **options}`` (from params.yaml).

    An option the backend does not take is a :class:`BackendOptionError` naming it.
    """
    if isinstance(spec, Mapping):
        spec = dict(spec)
        name = spec.pop("name")
        kwargs = {**spec, **kwargs}
    else:
        name = spec
    cls = get_backend(stage, name)
    check_backend_options(stage, name, cls, kwargs)
    return cls(**kwargs)


def list_backends(stage: Optional[str] = None) -> list[tuple[str, str]]:
    _load_all()
    return sorted(k for k in _REGISTRY if stage is None or k[0] == stage)
